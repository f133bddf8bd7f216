#include "replayer/endpoint_chooser.h"

#include <vector>

#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

std::vector<int> Choices(EndpointChooser& chooser, int n, std::vector<int> in_flight = {}) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(chooser.Choose(in_flight));
  return out;
}

TEST(EndpointChooserTest, UnspecifiedIsSingleForOneEndpointAndRoundRobinForSeveral) {
  EXPECT_EQ(ResolveEndpointPolicy(v1::ENDPOINT_POLICY_UNSPECIFIED, 1), v1::ENDPOINT_POLICY_SINGLE);
  EXPECT_EQ(ResolveEndpointPolicy(v1::ENDPOINT_POLICY_UNSPECIFIED, 3),
            v1::ENDPOINT_POLICY_ROUND_ROBIN);
  EXPECT_EQ(ResolveEndpointPolicy(v1::ENDPOINT_POLICY_P2C, 3), v1::ENDPOINT_POLICY_P2C);
  EndpointChooser chooser(v1::ENDPOINT_POLICY_UNSPECIFIED, 3, 1, 0);
  EXPECT_EQ(chooser.policy(), v1::ENDPOINT_POLICY_ROUND_ROBIN);
}

TEST(EndpointChooserTest, SingleSendsEverythingToTheFirstEndpoint) {
  EndpointChooser chooser(v1::ENDPOINT_POLICY_SINGLE, 3, 7, 0);
  EXPECT_EQ(Choices(chooser, 5), std::vector<int>(5, 0));
}

TEST(EndpointChooserTest, RoundRobinVisitsEndpointsInTurnFromItsStream) {
  EndpointChooser first(v1::ENDPOINT_POLICY_ROUND_ROBIN, 3, 7, /*stream=*/0);
  EXPECT_EQ(Choices(first, 7), (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EndpointChooser second(v1::ENDPOINT_POLICY_ROUND_ROBIN, 3, 7, /*stream=*/1);
  EXPECT_EQ(Choices(second, 4), (std::vector<int>{1, 2, 0, 1}));
}

TEST(EndpointChooserTest, RandomIsReproducibleBySeedAndStream) {
  EndpointChooser a(v1::ENDPOINT_POLICY_RANDOM, 5, 42, 0);
  EndpointChooser b(v1::ENDPOINT_POLICY_RANDOM, 5, 42, 0);
  EndpointChooser other_seed(v1::ENDPOINT_POLICY_RANDOM, 5, 43, 0);
  EndpointChooser other_stream(v1::ENDPOINT_POLICY_RANDOM, 5, 42, 1);
  const std::vector<int> sequence = Choices(a, 200);
  EXPECT_EQ(sequence, Choices(b, 200));
  EXPECT_NE(sequence, Choices(other_seed, 200));
  EXPECT_NE(sequence, Choices(other_stream, 200));
}

TEST(EndpointChooserTest, RandomIsRoughlyUniform) {
  constexpr int kEndpoints = 4;
  constexpr int kDraws = 40'000;
  EndpointChooser chooser(v1::ENDPOINT_POLICY_RANDOM, kEndpoints, 2026, 0);
  std::vector<int> counts(kEndpoints, 0);
  for (int i = 0; i < kDraws; ++i) {
    const int e = chooser.Choose({});
    ASSERT_GE(e, 0);
    ASSERT_LT(e, kEndpoints);
    ++counts[e];
  }
  // Expected 10,000 each, standard deviation ~87: 5 sigma is ~430.
  for (int c : counts) EXPECT_NEAR(c, kDraws / kEndpoints, 450);
}

TEST(EndpointChooserTest, P2cWithTwoEndpointsAlwaysPicksTheLessLoaded) {
  EndpointChooser chooser(v1::ENDPOINT_POLICY_P2C, 2, 9, 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(chooser.Choose(std::vector<int>{5, 2}), 1);
    EXPECT_EQ(chooser.Choose(std::vector<int>{0, 1}), 0);
  }
}

TEST(EndpointChooserTest, P2cNeverPicksTheMostLoadedOfThree) {
  // Whatever two are drawn, the busiest one loses to the other: it is never chosen, and
  // the idle one wins whenever it is drawn (two of three pairs).
  EndpointChooser chooser(v1::ENDPOINT_POLICY_P2C, 3, 11, 0);
  const std::vector<int> in_flight = {4, 9, 0};
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 3'000; ++i) ++counts[chooser.Choose(in_flight)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[2], 2'000, 200);
  EXPECT_NEAR(counts[0], 1'000, 200);
}

TEST(EndpointChooserTest, P2cFollowsTheCountsItIsGivenAsTheyChange) {
  EndpointChooser chooser(v1::ENDPOINT_POLICY_P2C, 2, 3, 0);
  std::vector<int> in_flight = {0, 0};
  // Feeding back each choice as one more request in flight keeps the two within one.
  for (int i = 0; i < 1'000; ++i) {
    ++in_flight[chooser.Choose(in_flight)];
    ASSERT_LE(std::abs(in_flight[0] - in_flight[1]), 1);
  }
}

TEST(EndpointChooserTest, OneEndpointIsAlwaysZero) {
  for (v1::EndpointPolicy policy :
       {v1::ENDPOINT_POLICY_ROUND_ROBIN, v1::ENDPOINT_POLICY_RANDOM, v1::ENDPOINT_POLICY_P2C}) {
    EndpointChooser chooser(policy, 1, 5, 3);
    EXPECT_EQ(Choices(chooser, 10, {3}), std::vector<int>(10, 0));
  }
}

}  // namespace
}  // namespace vanguard::replayer
