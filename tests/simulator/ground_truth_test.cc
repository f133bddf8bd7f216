// Unit tests of the discrete-event ground truth (virtual time; a few seconds of CPU at most).
#include "tests/simulator/ground_truth.h"

#include <algorithm>
#include <iostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

using ::testing::HasSubstr;

Profile DeterministicProfile() {
  Profile profile;
  profile.batch.slots = 2;
  profile.batch.service_time = absl::Milliseconds(10);  // saturation 200 rps
  profile.slo.latency_limit = absl::Milliseconds(15);
  return profile;
}

GroundTruthOptions Short() {
  GroundTruthOptions options;
  options.settle = absl::Seconds(2);
  options.measure = absl::Seconds(20);
  options.replications = 1;
  return options;
}

TEST(GroundTruthTest, ConstantArrivalsBelowSaturationMeetAnSloAboveTheServiceTime) {
  // Constant arrivals into deterministic service never queue below saturation: latency is
  // the service time, so the whole range up to saturation is sustainable.
  Profile profile = DeterministicProfile();
  GroundTruthOptions options = Short();
  options.arrival = ArrivalProcess::kConstant;
  absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(profile, profile.slo, options);
  ASSERT_TRUE(truth.ok()) << truth.status();
  EXPECT_DOUBLE_EQ(truth->saturation_rps, 200.0);
  EXPECT_NEAR(truth->max_sustainable_rps, 200.0, 0.01 * 200.0);
  EXPECT_TRUE(truth->at_max.meets_slo);
  EXPECT_GT(truth->evaluations, 3);
}

TEST(GroundTruthTest, PoissonArrivalsNeedHeadroomForTheTail) {
  Profile profile = DeterministicProfile();
  absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(profile, profile.slo, Short());
  ASSERT_TRUE(truth.ok()) << truth.status();
  // An M/D/2 queue whose p99 must stay within 1.5 service times: well below saturation.
  EXPECT_LT(truth->max_sustainable_rps, 0.8 * truth->saturation_rps);
  EXPECT_GT(truth->max_sustainable_rps, 0.2 * truth->saturation_rps);
  // Just below passes, clearly above fails.
  auto below = EvaluateRate(profile, profile.slo, 0.95 * truth->max_sustainable_rps, Short());
  auto above = EvaluateRate(profile, profile.slo, 1.1 * truth->max_sustainable_rps, Short());
  ASSERT_TRUE(below.ok() && above.ok());
  EXPECT_TRUE(below->meets_slo);
  EXPECT_FALSE(above->meets_slo);
  EXPECT_GT(above->latency_at_percentile, profile.slo.latency_limit);
}

TEST(GroundTruthTest, IsDeterministicGivenTheSeeds) {
  absl::StatusOr<Profile> profile = LoadProfile("nlp_encoder");
  ASSERT_TRUE(profile.ok());
  auto first = ComputeGroundTruth(*profile, profile->slo, Short());
  auto second = ComputeGroundTruth(*profile, profile->slo, Short());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->max_sustainable_rps, second->max_sustainable_rps);
  EXPECT_LT(first->max_sustainable_rps, first->saturation_rps);
}

TEST(GroundTruthTest, ErrorBudgetBindsWhenTheQueueSheds) {
  Profile profile = DeterministicProfile();
  profile.batch.max_queue = 4;
  profile.slo.latency_limit = absl::Seconds(10);  // latency never binds
  profile.slo.max_error_rate = 0.05;
  auto at_150 = EvaluateRate(profile, profile.slo, 150, Short());
  auto at_300 = EvaluateRate(profile, profile.slo, 300, Short());
  ASSERT_TRUE(at_150.ok() && at_300.ok());
  EXPECT_LT(at_150->error_rate, 0.05);
  EXPECT_TRUE(at_150->meets_slo);
  // Offered 1.5x saturation: about a third is shed.
  EXPECT_NEAR(at_300->error_rate, 1.0 / 3, 0.05);
  EXPECT_FALSE(at_300->meets_slo);
  EXPECT_NEAR(at_300->achieved_rps, 200, 10);
}

TEST(GroundTruthTest, GenerativeProfileIsJudgedOnTimeToFirstToken) {
  absl::StatusOr<Profile> profile = LoadProfile("llm");
  ASSERT_TRUE(profile.ok());
  auto truth = ComputeGroundTruth(*profile, profile->slo, Short());
  ASSERT_TRUE(truth.ok()) << truth.status();
  EXPECT_GT(truth->max_sustainable_rps, 0.5 * truth->saturation_rps);
  EXPECT_LT(truth->max_sustainable_rps, 1.05 * truth->saturation_rps);
  EXPECT_LE(truth->at_max.ttft_at_percentile, profile->slo.ttft_limit);
  // A looser TTFT limit admits a higher rate.
  Slo loose = profile->slo;
  loose.ttft_limit = 3 * profile->slo.ttft_limit;
  auto looser = ComputeGroundTruth(*profile, loose, Short());
  ASSERT_TRUE(looser.ok());
  EXPECT_GT(looser->max_sustainable_rps, truth->max_sustainable_rps);
}

TEST(GroundTruthTest, ReplicationsPoolIndependentRunsAndNarrowTheSpread) {
  absl::StatusOr<Profile> profile = LoadProfile("llm");
  ASSERT_TRUE(profile.ok());
  auto spread = [&](int replications) {
    double low = 1e18, high = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GroundTruthOptions options = Short();
      options.seed = seed * 100;
      options.replications = replications;
      auto truth = ComputeGroundTruth(*profile, profile->slo, options);
      EXPECT_TRUE(truth.ok()) << truth.status();
      if (!truth.ok()) return 0.0;
      low = std::min(low, truth->max_sustainable_rps);
      high = std::max(high, truth->max_sustainable_rps);
    }
    return (high - low) / high;
  };
  const double single = spread(1);
  const double pooled = spread(4);
  std::cout << "relative spread over 4 seeds: " << single << " single, " << pooled
            << " with 4 replications\n";
  EXPECT_LT(pooled, single);
}

TEST(GroundTruthTest, ALowRateIsJudgedOnAtLeastTheMinimumRequests) {
  Profile profile = DeterministicProfile();
  GroundTruthOptions options = Short();  // 20 s horizons, one replication
  options.min_judged_requests = 5000;
  // 10 req/s judges ~200 arrivals a horizon: 25 horizons are pooled for 5000.
  auto low = EvaluateRate(profile, profile.slo, 10, options);
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_GE(low->scheduled, 4500u);
  EXPECT_NEAR(low->achieved_rps, 10, 1);  // per horizon, not summed over them
  // 100 req/s judges ~2000 a horizon: 3 horizons.
  auto higher = EvaluateRate(profile, profile.slo, 100, options);
  ASSERT_TRUE(higher.ok()) << higher.status();
  EXPECT_GE(higher->scheduled, 4500u);
  EXPECT_LT(higher->scheduled, 8000u);
  // Without the minimum, one horizon each.
  options.min_judged_requests = 0;
  auto one = EvaluateRate(profile, profile.slo, 10, options);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_LT(one->scheduled, 300u);
}

TEST(GroundTruthTest, LatencyOutsideTheModelLowersTheAnswer) {
  Profile profile = DeterministicProfile();
  GroundTruthOptions options = Short();
  auto plain = ComputeGroundTruth(profile, profile.slo, options);
  options.added_latency = absl::Milliseconds(3);
  auto with_network = ComputeGroundTruth(profile, profile.slo, options);
  ASSERT_TRUE(plain.ok() && with_network.ok());
  EXPECT_LT(with_network->max_sustainable_rps, plain->max_sustainable_rps);
}

TEST(GroundTruthTest, RejectsBadArguments) {
  Profile profile = DeterministicProfile();
  EXPECT_THAT(EvaluateRate(profile, profile.slo, 0).status().message(), HasSubstr("rate"));
  Slo slo = profile.slo;
  slo.latency_percentile = 120;
  EXPECT_THAT(EvaluateRate(profile, slo, 10).status().message(), HasSubstr("percentile"));
  GroundTruthOptions options;
  options.measure = absl::ZeroDuration();
  EXPECT_THAT(EvaluateRate(profile, profile.slo, 10, options).status().message(),
              HasSubstr("measure"));
  options = GroundTruthOptions();
  options.replications = 0;
  EXPECT_THAT(EvaluateRate(profile, profile.slo, 10, options).status().message(),
              HasSubstr("replications"));
  profile.batch.slots = 0;
  EXPECT_EQ(ComputeGroundTruth(profile, profile.slo).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::sim
