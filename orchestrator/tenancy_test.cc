// Unit tests for the tenancy rules that need no database: who may act on which team, the
// planned rate and length of a spec, and each quota limit named in its refusal. The stored
// side (ownership, quotas, the count of concurrent tests) is tested against Postgres in
// tests/integration/tenancy_test.cc.
#include "orchestrator/tenancy.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

v1::TestSpec SweepSpec(double top_qps, int64_t step_seconds, int64_t warmup_seconds) {
  v1::TestSpec spec;
  spec.set_model("m");
  spec.mutable_sweep()->add_rates_qps(10);
  spec.mutable_sweep()->add_rates_qps(top_qps);
  spec.mutable_step_duration()->set_seconds(step_seconds);
  spec.mutable_step_warmup()->set_seconds(warmup_seconds);
  return spec;
}

void ExpectRefused(const absl::Status& status, absl::StatusCode code, const std::string& limit) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(limit)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("team vision")) << status;
}

TEST(MayActOnTest, OwnTeamOrAdminOnly) {
  EXPECT_TRUE(MayActOn("vision", v1::ROLE_SUBMITTER, "vision", "test 1").ok());
  EXPECT_TRUE(MayActOn("default", v1::ROLE_ADMIN, "vision", "test 1").ok());
  const absl::Status denied = MayActOn("speech", v1::ROLE_SUBMITTER, "vision", "test 1");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()),
              HasSubstr("test 1 belongs to team vision; this token acts for team speech"));
}

TEST(LongestTestDurationTest, StepsTimesStepLengthPlusTheHoldOfSearches) {
  EXPECT_EQ(LongestTestDuration(SweepSpec(20, 60, 10)), absl::Seconds(2 * 70));
  v1::TestSpec binary = SweepSpec(20, 60, 10);
  binary.mutable_binary_search()->set_max_qps(100);  // max_steps 0: 30
  EXPECT_EQ(LongestTestDuration(binary), absl::Seconds(30 * 70) + absl::Minutes(5));
  binary.mutable_sustain_horizon()->set_seconds(60);
  binary.mutable_binary_search()->set_max_steps(4);
  EXPECT_EQ(LongestTestDuration(binary), absl::Seconds(4 * 70 + 60));
  v1::TestSpec adaptive = SweepSpec(20, 60, 10);
  adaptive.mutable_adaptive()->set_max_qps(100);  // max_steps 0: the worker's default, 50
  EXPECT_EQ(MostSteps(adaptive), 50);
  v1::TestSpec stability = SweepSpec(20, 600, 0);
  stability.mutable_stability()->set_rate_qps(50);  // segments 0: 10
  EXPECT_EQ(LongestTestDuration(stability), absl::Seconds(10 * 600));
  v1::TestSpec ladder = SweepSpec(20, 30, 0);
  ladder.mutable_ladder()->set_start_qps(2);
  ladder.mutable_ladder()->set_max_qps(1024);  // 9 doublings + 1, 8 fine steps + 1, 3 ramps
  EXPECT_EQ(MostSteps(ladder), 3 * (10 + 9));
}

TEST(HighestRateQpsTest, TheTopOfEachStrategy) {
  EXPECT_EQ(HighestRateQps(SweepSpec(700, 1, 0)), 700);
  v1::TestSpec ladder = SweepSpec(1, 1, 0);
  ladder.mutable_ladder();  // no max_qps: climbs to 1,000,000
  EXPECT_EQ(HighestRateQps(ladder), 1'000'000);
  v1::TestSpec controller = SweepSpec(1, 1, 0);
  controller.mutable_direct_controller()->set_target_qps(100);
  controller.mutable_direct_controller()->set_headroom_fraction(0.5);
  EXPECT_EQ(HighestRateQps(controller), 150);
  v1::TestSpec autoscale = SweepSpec(1, 1, 0);
  autoscale.mutable_autoscale()->set_base_qps(30);
  autoscale.mutable_autoscale()->set_peak_qps(120);
  EXPECT_EQ(HighestRateQps(autoscale), 120);
  v1::TestSpec loss = SweepSpec(1, 1, 0);
  loss.mutable_replica_loss()->set_min_qps(50);
  loss.mutable_replica_loss()->set_max_qps(400);
  EXPECT_EQ(HighestRateQps(loss), 400);
}

TEST(LongestTestDurationTest, AReplicaLossTestLastsItsTrialsStepsAndLosses) {
  v1::TestSpec loss = SweepSpec(1, 10, 2);  // steps of 2 s warmup + 10 s
  loss.mutable_replica_loss()->set_max_qps(400);
  EXPECT_EQ(MostSteps(loss), 2 * 12);
  EXPECT_EQ(LongestTestDuration(loss), 12 * absl::Seconds(2 + 10 + 20));
  loss.mutable_replica_loss()->set_max_trials(3);
  loss.mutable_replica_loss()->mutable_after_loss()->set_seconds(5);
  EXPECT_EQ(MostSteps(loss), 6);
  EXPECT_EQ(LongestTestDuration(loss), 3 * absl::Seconds(2 + 10 + 5));
}

TEST(LongestTestDurationTest, AVersionTransitionLastsItsTrialsStepsAndRestarts) {
  v1::TestSpec transition = SweepSpec(1, 10, 2);  // steps of 2 s warmup + 10 s
  v1::VersionTransitionStrategy* v = transition.mutable_version_transition();
  v->set_max_qps(300);
  for (int i = 0; i < 3; ++i)
    v->add_restart_urls(absl::StrCat("http://r", i, ":8000/admin/restart"));
  EXPECT_EQ(HighestRateQps(transition), 300);
  EXPECT_EQ(MostSteps(transition), (1 + 3) * 12);
  EXPECT_EQ(LongestTestDuration(transition), 12 * absl::Seconds(2 + 10 + 3 * 10));
  v->set_max_trials(2);
  v->mutable_per_replica()->set_seconds(4);
  EXPECT_EQ(MostSteps(transition), 8);
  EXPECT_EQ(LongestTestDuration(transition), 2 * absl::Seconds(2 + 10 + 3 * 4));
}

TEST(LongestTestDurationTest, AnAutoscaleTestLastsItsShape) {
  v1::TestSpec spike = SweepSpec(1, 600, 60);  // the step length does not count
  spike.mutable_autoscale()->set_peak_qps(120);
  spike.mutable_autoscale()->mutable_peak_duration()->set_seconds(12);
  EXPECT_EQ(MostSteps(spike), 3);
  EXPECT_EQ(LongestTestDuration(spike), absl::Seconds(10 + 12 + 10));  // defaults 10 s around
  spike.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_RAMP);
  EXPECT_EQ(MostSteps(spike), 4);
  EXPECT_EQ(LongestTestDuration(spike), absl::Seconds(10 + 30 + 12 + 10));
  spike.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_DIURNAL);
  EXPECT_EQ(MostSteps(spike), 12);
  EXPECT_EQ(LongestTestDuration(spike), absl::Seconds(120));
  // A trace: its buckets compressed into the period, a step each at most.
  spike.mutable_autoscale()->set_shape(v1::LOAD_SHAPE_TRACE);
  for (int i = 0; i < 5; ++i) spike.mutable_autoscale()->add_trace_rates()->set_qps(10);
  spike.mutable_autoscale()->mutable_period()->set_seconds(40);
  EXPECT_EQ(MostSteps(spike), 5);
  EXPECT_EQ(LongestTestDuration(spike), absl::Seconds(40));
}

TEST(CheckTestQuotaTest, EachLimitIsNamedInItsRefusal) {
  TeamLimits limits;
  limits.max_rate_qps = 500;
  limits.max_step_duration = absl::Minutes(2);
  limits.max_test_duration = absl::Minutes(10);
  limits.max_submitter_priority = 10;
  limits.max_admin_priority = 50;
  EXPECT_TRUE(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, SweepSpec(500, 60, 10)).ok());

  ExpectRefused(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, SweepSpec(501, 60, 10)),
                absl::StatusCode::kResourceExhausted, "max_rate_qps");
  ExpectRefused(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, SweepSpec(20, 110, 11)),
                absl::StatusCode::kResourceExhausted, "max_step_duration");
  v1::TestSpec many = SweepSpec(20, 60, 10);
  for (int i = 0; i < 8; ++i) many.mutable_sweep()->add_rates_qps(30 + i);  // 10 x 70 s
  ExpectRefused(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, many),
                absl::StatusCode::kResourceExhausted, "max_test_duration");

  v1::TestSpec urgent = SweepSpec(20, 60, 10);
  urgent.set_priority(11);
  ExpectRefused(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, urgent),
                absl::StatusCode::kPermissionDenied, "max_submitter_priority");
  EXPECT_TRUE(CheckTestQuota(limits, "vision", v1::ROLE_ADMIN, urgent).ok());
  urgent.set_priority(51);
  ExpectRefused(CheckTestQuota(limits, "vision", v1::ROLE_ADMIN, urgent),
                absl::StatusCode::kPermissionDenied, "max_admin_priority");
}

TEST(TeamLimitsTest, UnsetFieldsAreTheDefaultsAndEveryFieldIsAnswered) {
  v1::TeamQuota stored;
  stored.set_max_concurrent_tests(3);
  const TeamLimits limits = TeamLimits::From(stored);
  EXPECT_EQ(limits.max_concurrent_tests, 3);
  EXPECT_EQ(limits.max_rate_qps, TeamLimits().max_rate_qps);
  const v1::TeamQuota answered = limits.ToProto();
  EXPECT_TRUE(answered.has_max_rate_qps() && answered.has_max_step_duration() &&
              answered.has_max_test_duration() && answered.has_max_concurrent_tests() &&
              answered.has_max_submitter_priority() && answered.has_max_admin_priority());
  EXPECT_EQ(answered.max_step_duration().seconds(), 3600);
}

TEST(ValidateTeamQuotaTest, NamesTheField) {
  v1::TeamQuota quota;
  quota.set_max_rate_qps(-1);
  EXPECT_THAT(std::string(ValidateTeamQuota(quota).message()), HasSubstr("quota.max_rate_qps"));
  quota.Clear();
  quota.set_max_concurrent_tests(0);
  EXPECT_THAT(std::string(ValidateTeamQuota(quota).message()),
              HasSubstr("quota.max_concurrent_tests"));
  quota.Clear();
  quota.mutable_max_test_duration()->set_seconds(-5);
  EXPECT_THAT(std::string(ValidateTeamQuota(quota).message()),
              HasSubstr("quota.max_test_duration"));
  quota.Clear();
  quota.set_max_submitter_priority(5000);
  EXPECT_THAT(std::string(ValidateTeamQuota(quota).message()),
              HasSubstr("quota.max_submitter_priority"));
}

}  // namespace
}  // namespace vanguard
