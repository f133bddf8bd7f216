#include "tests/simulator/replica_autoscaler.h"

#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

using absl::Seconds;

ReplicaAutoscaler::Config Fleet() {
  return {.min_replicas = 1,
          .max_replicas = 4,
          .target_in_flight = 2,
          .scale_up_delay = Seconds(2),
          .cold_start = Seconds(3),
          .scale_down_delay = Seconds(10)};
}

TEST(ReplicaAutoscalerTest, StartsAtMinReplicas) {
  auto fleet = ReplicaAutoscaler::Create(Fleet());
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  EXPECT_EQ(fleet->Observe(Seconds(0), 0), 1);
  EXPECT_EQ(fleet->desired(), 1);
  EXPECT_FALSE(fleet->NextEventTime().has_value());
}

TEST(ReplicaAutoscalerTest, AStepOfLoadIsCarriedAfterTheDelayAndTheColdStart) {
  ReplicaAutoscaler fleet = *ReplicaAutoscaler::Create(Fleet());
  fleet.Observe(Seconds(10), 7);  // ceil(7 / 2) = 4 wanted from t = 10
  EXPECT_EQ(fleet.desired(), 4);
  EXPECT_EQ(fleet.NextEventTime(), Seconds(12));
  EXPECT_EQ(fleet.Observe(Seconds(11.9), 7), 1);
  EXPECT_EQ(fleet.starting(), 0);  // still within the scale-up delay
  EXPECT_EQ(fleet.Observe(Seconds(12), 7), 1);
  EXPECT_EQ(fleet.starting(), 3);  // started at 12, ready at 15
  EXPECT_EQ(fleet.NextEventTime(), Seconds(15));
  EXPECT_EQ(fleet.Observe(Seconds(14.9), 7), 1);
  EXPECT_EQ(fleet.Observe(Seconds(15), 7), 4);
  EXPECT_EQ(fleet.starting(), 0);
}

TEST(ReplicaAutoscalerTest, ABurstShorterThanTheDelayStartsNothing) {
  ReplicaAutoscaler fleet = *ReplicaAutoscaler::Create(Fleet());
  fleet.Observe(Seconds(0), 8);
  fleet.Observe(Seconds(1.5), 1);  // back under the target before the delay ended
  EXPECT_EQ(fleet.Observe(Seconds(5), 8), 1);
  EXPECT_EQ(fleet.starting(), 0);  // the delay counts again from t = 5
  EXPECT_EQ(fleet.NextEventTime(), Seconds(7));
}

TEST(ReplicaAutoscalerTest, ClampsToMaxReplicasAndCountsStartingOnes) {
  ReplicaAutoscaler fleet = *ReplicaAutoscaler::Create(Fleet());
  fleet.Observe(Seconds(0), 3);  // 2 wanted
  fleet.Observe(Seconds(2), 3);
  EXPECT_EQ(fleet.starting(), 1);
  fleet.Observe(Seconds(3), 100);  // 50 wanted, clamped to 4; one is already starting
  EXPECT_EQ(fleet.desired(), 4);
  EXPECT_EQ(fleet.Observe(Seconds(5), 100), 2);  // the first one is ready at 5
  EXPECT_EQ(fleet.starting(), 2);                // and two more start then
  EXPECT_EQ(fleet.Observe(Seconds(8), 100), 4);
}

TEST(ReplicaAutoscalerTest, ScalesDownOnlyAfterTheDownDelay) {
  ReplicaAutoscaler fleet = *ReplicaAutoscaler::Create(Fleet());
  fleet.Observe(Seconds(0), 8);
  fleet.Observe(Seconds(2), 8);
  ASSERT_EQ(fleet.Observe(Seconds(5), 8), 4);
  fleet.Observe(Seconds(6), 3);  // 2 wanted from t = 6
  EXPECT_EQ(fleet.Observe(Seconds(15.9), 3), 4);
  EXPECT_EQ(fleet.Observe(Seconds(16), 3), 2);
}

TEST(ReplicaAutoscalerTest, ZeroColdStartServesAtOnce) {
  ReplicaAutoscaler::Config config = Fleet();
  config.scale_up_delay = absl::ZeroDuration();
  config.cold_start = absl::ZeroDuration();
  ReplicaAutoscaler fleet = *ReplicaAutoscaler::Create(config);
  EXPECT_EQ(fleet.Observe(Seconds(1), 5), 3);
}

TEST(ReplicaAutoscalerTest, RejectsBadConfigNamingTheField) {
  ReplicaAutoscaler::Config config = Fleet();
  config.max_replicas = 0;
  absl::StatusOr<ReplicaAutoscaler> bad = ReplicaAutoscaler::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("max_replicas"), std::string::npos);
  config = Fleet();
  config.target_in_flight = 0;
  EXPECT_FALSE(ReplicaAutoscaler::Create(config).ok());
  config = Fleet();
  config.cold_start = -Seconds(1);
  EXPECT_FALSE(ReplicaAutoscaler::Create(config).ok());
}

}  // namespace
}  // namespace vanguard::sim
