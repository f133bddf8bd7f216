#include "replayer/endpoint_accounting.h"

#include <vector>

#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

TEST(EndpointAccountingTest, CountsMeasuredRequestsPerEndpointAndTracksInFlight) {
  EndpointAccounting a(2, /*warmup=*/absl::Seconds(1));
  a.OnDispatched(0, absl::Milliseconds(500));  // warmup: in flight, not counted
  a.OnDispatched(0, absl::Seconds(2));
  a.OnDispatched(1, absl::Seconds(2));
  a.OnSent(0, absl::Seconds(2));
  a.OnSent(1, absl::Seconds(2));
  EXPECT_EQ(a.in_flight()[0], 2);
  EXPECT_EQ(a.in_flight()[1], 1);
  EXPECT_EQ(a.tallies()[0].peak_in_flight, 2);

  a.OnSuccess(0, absl::Milliseconds(500), absl::Milliseconds(3));
  a.OnSuccess(0, absl::Seconds(2), absl::Milliseconds(7));
  a.OnTimeout(1, absl::Seconds(2));
  EXPECT_EQ(a.in_flight()[0], 0);
  EXPECT_EQ(a.in_flight()[1], 0);

  const EndpointTally& zero = a.tallies()[0];
  EXPECT_EQ(zero.dispatched, 1);
  EXPECT_EQ(zero.sent, 1);
  EXPECT_EQ(zero.completed, 1);
  EXPECT_EQ(zero.latency.count(), 1);
  EXPECT_NEAR(zero.latency.Percentile(50), 7000, 50);
  const EndpointTally& one = a.tallies()[1];
  EXPECT_EQ(one.dispatched, 1);
  EXPECT_EQ(one.completed, 0);
  EXPECT_EQ(one.timeouts, 1);
  EXPECT_EQ(one.errors, 0);
}

TEST(EndpointAccountingTest, LoadImbalanceIsTheLargestShareOverTheMean) {
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{100, 100, 100}), 1.0);
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{200, 100, 0}), 2.0);
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{50}), 0.0);
  EXPECT_DOUBLE_EQ(LoadImbalance(std::vector<int64_t>{0, 0}), 0.0);
}

TEST(EndpointAccountingTest, TelemetryHasOneEntryPerTargetWithShareRateAndLatency) {
  std::vector<EndpointTally> tallies(2);
  tallies[0].dispatched = 30;
  tallies[0].completed = 30;
  tallies[0].latency.RecordN(2000, 30);
  tallies[1].dispatched = 10;
  tallies[1].completed = 8;
  tallies[1].errors = 2;
  tallies[1].peak_in_flight = 4;
  v1::StepResult result;
  AddEndpointTelemetry(tallies, {"http://a:1", "http://b:2"}, absl::Seconds(2), &result);
  ASSERT_EQ(result.endpoints_size(), 2);
  EXPECT_EQ(result.endpoints(0).target(), "http://a:1");
  EXPECT_DOUBLE_EQ(result.endpoints(0).share(), 0.75);
  EXPECT_DOUBLE_EQ(result.endpoints(0).achieved_qps(), 15.0);
  EXPECT_NEAR(result.endpoints(0).latency().p50_ms(), 2.0, 0.02);
  EXPECT_EQ(result.endpoints(1).errors(), 2);
  EXPECT_EQ(result.endpoints(1).peak_in_flight(), 4);
  EXPECT_DOUBLE_EQ(result.endpoint_imbalance(), 1.5);
  absl::StatusOr<LatencyHistogram> back =
      LatencyHistogram::Deserialize(result.endpoints(0).latency_histogram());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, tallies[0].latency);
}

TEST(EndpointAccountingTest, TalliesMergeBySumming) {
  EndpointTally a;
  a.dispatched = 3;
  a.completed = 2;
  a.errors = 1;
  a.peak_in_flight = 2;
  a.latency.Record(100);
  EndpointTally b = a;
  b.timeouts = 4;
  a.Merge(b);
  EXPECT_EQ(a.dispatched, 6);
  EXPECT_EQ(a.completed, 4);
  EXPECT_EQ(a.errors, 2);
  EXPECT_EQ(a.timeouts, 4);
  EXPECT_EQ(a.peak_in_flight, 4);
  EXPECT_EQ(a.latency.count(), 2);
}

}  // namespace
}  // namespace vanguard::replayer
