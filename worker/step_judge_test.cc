// Step judging: each SLO limit alone, boundaries, verdict text, health state mapping.
#include "worker/step_judge.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/health_scorer.h"

namespace vanguard::worker {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using vanguard::v1::HealthState;

vanguard::v1::Slo Slo() {
  vanguard::v1::Slo slo;
  slo.mutable_p99_latency()->set_nanos(100'000'000);  // 100 ms
  slo.mutable_p50_latency()->set_nanos(50'000'000);   // 50 ms
  slo.set_max_error_rate(0.01);
  return slo;
}

// 400 qps for 10 s, all good: p50 20 ms, p99 40 ms, no errors, full throughput.
vanguard::v1::StepResult Good() {
  vanguard::v1::StepResult r;
  r.set_target_qps(400);
  r.set_achieved_qps(400);
  r.mutable_latency()->set_p50_ms(20);
  r.mutable_latency()->set_p99_ms(40);
  r.set_scheduled(4000);
  r.set_sent(4000);
  r.set_completed(4000);
  r.set_client_valid(true);
  return r;
}

StepJudge MustCreate(const vanguard::v1::Slo& slo) {
  auto judge = StepJudge::Create(slo);
  EXPECT_TRUE(judge.ok()) << judge.status();
  return std::move(*judge);
}

TEST(StepJudgeTest, PassesWithinEveryLimit) {
  StepJudge judge = MustCreate(Slo());
  StepJudgement j = judge.Judge(Good(), 400);
  EXPECT_TRUE(j.passed);
  EXPECT_THAT(j.verdict, StartsWith("pass"));
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_HEALTHY);
  EXPECT_EQ(j.error_rate, 0);
}

TEST(StepJudgeTest, P99BreachAloneFailsAndIsNamed) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p99_ms(182.3);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, "p99 182.3 ms > 100 ms");
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_OVERLOADED);
  EXPECT_EQ(j.health.worst_metric, "p99");
}

TEST(StepJudgeTest, StreamsScoreTheirTimeToFirstAndBetweenTokens) {
  vanguard::v1::Slo slo = Slo();
  slo.mutable_ttft_p99()->set_nanos(300'000'000);
  slo.mutable_inter_token_p99()->set_nanos(50'000'000);
  StepJudge judge = MustCreate(slo);
  vanguard::v1::StepResult r = Good();
  StepJudgement j = judge.Judge(r, 400);  // no stream figures: nothing to score
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_HEALTHY);
  r.mutable_ttft()->set_p99_ms(270);  // 90% of its limit, total latency at 40%
  r.mutable_inter_chunk()->set_p99_ms(10);
  j = judge.Judge(r, 400);
  EXPECT_TRUE(j.passed);  // the runner judges the stream limits themselves
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_UNHEALTHY);
  EXPECT_EQ(j.health.worst_metric, "ttft");
  r.mutable_inter_chunk()->set_p99_ms(49);
  j = judge.Judge(r, 400);
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_CRITICAL);
  EXPECT_EQ(j.health.worst_metric, "inter_token");
}

TEST(StepJudgeTest, P50BreachAloneFailsAndIsNamed) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p50_ms(61);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, "p50 61.0 ms > 50 ms");
  // A share of requests over a latency limit, as a p99 breach is: the strategies pool it.
  EXPECT_TRUE(j.passed_apart_from_latency_tails);
  EXPECT_TRUE(j.passed_apart_from_tails);
}

TEST(StepJudgeTest, P50IsNotCheckedWhenUnset) {
  vanguard::v1::Slo slo = Slo();
  slo.clear_p50_latency();
  StepJudge judge = MustCreate(slo);
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p50_ms(90);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_TRUE(j.passed) << j.verdict;
  EXPECT_THAT(j.verdict, Not(HasSubstr("p50")));
}

TEST(StepJudgeTest, ErrorRateCountsErrorsAndTimeoutsOverScheduled) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_completed(3950);
  r.set_errors(30);
  r.set_timeouts(20);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_DOUBLE_EQ(j.error_rate, 50.0 / 4000.0);
  EXPECT_EQ(j.verdict, "error rate 1.25% > 1%");
}

TEST(StepJudgeTest, ErrorRateIsNotCheckedWhenTheSloLeavesItZero) {
  vanguard::v1::Slo slo = Slo();
  slo.set_max_error_rate(0);
  StepJudge judge = MustCreate(slo);
  vanguard::v1::StepResult r = Good();
  r.set_completed(3990);
  r.set_errors(10);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_TRUE(j.passed) << j.verdict;
}

TEST(StepJudgeTest, ErrorsFailTheErrorCheckAloneNotTheThroughputToo) {
  // 3 errors in 200 (1.5%) at a 1% limit: the completed requests' rate is 1.5% short of the
  // offered one. Only the error check fails, so the strategy can pool it with other steps.
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_scheduled(200);
  r.set_sent(200);
  r.set_completed(197);
  r.set_errors(3);
  r.set_achieved_qps(400 * 197.0 / 200);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, "error rate 1.50% > 1%");
  EXPECT_TRUE(j.passed_apart_from_tails);
  // Without an error check the errors are a throughput shortfall.
  vanguard::v1::Slo slo = Slo();
  slo.set_max_error_rate(0);
  EXPECT_EQ(MustCreate(slo).Judge(r, 400).verdict, "achieved 394.0 < 99% of 400");
}

TEST(StepJudgeTest, AchievedShortfallAloneFailsAndIsNamed) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_achieved_qps(371.2);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, "achieved 371.2 < 99% of 400");
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_OVERLOADED);
}

TEST(StepJudgeTest, CustomAchievedRatio) {
  vanguard::v1::Slo slo = Slo();
  slo.set_min_achieved_ratio(0.9);
  StepJudge judge = MustCreate(slo);
  vanguard::v1::StepResult r = Good();
  r.set_achieved_qps(371.2);  // 92.8%: passes a 90% floor
  EXPECT_TRUE(judge.Judge(r, 400).passed);
  r.set_achieved_qps(350);
  EXPECT_EQ(judge.Judge(r, 400).verdict, "achieved 350.0 < 90% of 400");
}

TEST(StepJudgeTest, NamesEveryBreachedLimit) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p99_ms(182.3);
  r.set_achieved_qps(371.2);
  EXPECT_EQ(judge.Judge(r, 400).verdict, "p99 182.3 ms > 100 ms; achieved 371.2 < 99% of 400");
}

TEST(StepJudgeTest, ValuesExactlyAtTheLimitsPass) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p99_ms(100);
  r.mutable_latency()->set_p50_ms(50);
  r.set_completed(3960);
  r.set_errors(40);  // exactly 1%
  r.set_achieved_qps(0.99 * 400);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_TRUE(j.passed) << j.verdict;
  EXPECT_EQ(j.health.state, vanguard::v1::HEALTH_STATE_CRITICAL);
}

TEST(StepJudgeTest, InvalidClientIsNotJudged) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_client_valid(false);
  r.set_client_invalid_reason("send skew p99 12 ms");
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_FALSE(j.client_valid);
  EXPECT_THAT(j.verdict, AllOf(HasSubstr("not judged"), HasSubstr("send skew p99 12 ms")));
}

TEST(StepJudgeTest, AStepThatPassesDespiteLateSendsIsJudgedAPass) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();  // p99 40 ms from intended send times
  r.set_client_valid(false);
  r.set_client_invalid_reason("send skew p99 7.8 ms exceeds 5.000 ms");
  r.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  r.set_client_invalid_outside(true);
  r.set_client_invalid_late_only(true);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_TRUE(j.passed) << j.verdict;
  EXPECT_TRUE(j.client_valid);
  EXPECT_TRUE(j.client_late);
  EXPECT_THAT(j.verdict, AllOf(HasSubstr("pass: "), HasSubstr("despite a late client"),
                               HasSubstr("send skew p99 7.8 ms")));

  // The same step with a drop (not late only) is not judged.
  r.set_client_invalid_late_only(false);
  j = judge.Judge(r, 400);
  EXPECT_FALSE(j.client_valid);
  EXPECT_FALSE(j.passed);
}

TEST(StepJudgeTest, AFailureWithLateSendsIsJudgedOnlyWhenTheServerAloneFailsIt) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.mutable_latency()->set_p99_ms(130);  // from intended send times
  r.set_client_valid(false);
  r.set_client_invalid_reason("send skew p99 7.8 ms exceeds 5.000 ms");
  r.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_TIMER_WAKEUP);
  r.set_client_invalid_late_only(true);

  r.mutable_service_latency()->set_p99_ms(121);  // from actual send times: still over 100
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_TRUE(j.client_valid);
  EXPECT_FALSE(j.passed);
  EXPECT_THAT(j.verdict, AllOf(HasSubstr("p99 130.0 ms > 100 ms"),
                               HasSubstr("also without the client's lateness: service p99 121.0")));

  r.mutable_service_latency()->set_p99_ms(96);  // the lateness could have made the failure
  j = judge.Judge(r, 400);
  EXPECT_FALSE(j.client_valid);
  EXPECT_THAT(j.verdict, HasSubstr("not judged"));

  // A CPU too busy to read responses inflates the service latency too: not judged.
  r.mutable_service_latency()->set_p99_ms(121);
  r.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  j = judge.Judge(r, 400);
  EXPECT_FALSE(j.client_valid);
}

TEST(StepJudgeTest, InvalidClientCarriesTheNamedCauseAndWhetherItIsOutside) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_client_valid(false);
  r.set_client_invalid_reason(
      "send skew p99 6.1 ms exceeds 5 ms; cause: CPU contention from other processes: the "
      "event loops waited 410.0 ms on the run queue");
  r.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  r.set_client_invalid_outside(true);
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_FALSE(j.client_valid);
  EXPECT_TRUE(j.client_disturbed_from_outside);
  EXPECT_EQ(j.client_invalid_cause, vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  EXPECT_THAT(j.verdict, AllOf(HasSubstr("disturbed from outside, pause and retry"),
                               HasSubstr("waited 410.0 ms on the run queue")));

  r.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_CLIENT_OVERLOADED);
  r.set_client_invalid_outside(false);
  j = judge.Judge(r, 400);
  EXPECT_FALSE(j.client_disturbed_from_outside);
  EXPECT_THAT(j.verdict, HasSubstr("not judged: load generator invalid"));
}

TEST(StepJudgeTest, InconsistentCountsFail) {
  StepJudge judge = MustCreate(Slo());
  vanguard::v1::StepResult r = Good();
  r.set_errors(100);  // completed + errors > scheduled
  StepJudgement j = judge.Judge(r, 400);
  EXPECT_FALSE(j.passed);
  EXPECT_THAT(j.verdict, HasSubstr("inconsistent counts"));

  vanguard::v1::StepResult empty = Good();
  empty.set_scheduled(0);
  empty.set_sent(0);
  empty.set_completed(0);
  EXPECT_FALSE(judge.Judge(empty, 400).passed);
}

TEST(StepJudgeTest, HealthFollowsTheWorstMetric) {
  StepJudge judge = MustCreate(Slo());
  struct Case {
    double p99_ms;
    HealthState state;
  };
  for (const Case& c :
       {Case{59, vanguard::v1::HEALTH_STATE_HEALTHY}, Case{60, vanguard::v1::HEALTH_STATE_WARN},
        Case{80, vanguard::v1::HEALTH_STATE_UNHEALTHY},
        Case{95, vanguard::v1::HEALTH_STATE_CRITICAL},
        Case{100, vanguard::v1::HEALTH_STATE_CRITICAL},
        Case{100.5, vanguard::v1::HEALTH_STATE_OVERLOADED}}) {
    vanguard::v1::StepResult r = Good();
    r.mutable_latency()->set_p99_ms(c.p99_ms);
    StepJudgement j = judge.Judge(r, 400);
    EXPECT_EQ(j.health.state, c.state) << "p99 " << c.p99_ms;
    EXPECT_EQ(j.health.worst_metric, "p99");
  }
  // A step at full throughput scores 0 on the achieved signal; 2% short of 400 against
  // an allowed 1% scores 2.0.
  vanguard::v1::StepResult short_step = Good();
  short_step.set_achieved_qps(392);
  StepJudgement j = judge.Judge(short_step, 400);
  EXPECT_EQ(j.health.worst_metric, "achieved");
  EXPECT_NEAR(j.health.score, 2.0, 1e-9);
}

TEST(StepJudgeTest, RejectsSloItCannotJudge) {
  vanguard::v1::Slo no_p99 = Slo();
  no_p99.clear_p99_latency();
  auto judge = StepJudge::Create(no_p99);
  EXPECT_EQ(judge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(judge.status().message()), HasSubstr("slo.p99_latency"));

  vanguard::v1::Slo bad_ratio = Slo();
  bad_ratio.set_min_achieved_ratio(1.5);
  EXPECT_THAT(std::string(StepJudge::Create(bad_ratio).status().message()),
              HasSubstr("slo.min_achieved_ratio"));

  vanguard::v1::Slo bad_errors = Slo();
  bad_errors.set_max_error_rate(-0.1);
  EXPECT_THAT(std::string(StepJudge::Create(bad_errors).status().message()),
              HasSubstr("slo.max_error_rate"));
}

TEST(HealthStateForScoreTest, MapsEachThreshold) {
  EXPECT_EQ(HealthStateForScore(0.0), vanguard::v1::HEALTH_STATE_HEALTHY);
  EXPECT_EQ(HealthStateForScore(0.599), vanguard::v1::HEALTH_STATE_HEALTHY);
  EXPECT_EQ(HealthStateForScore(0.6), vanguard::v1::HEALTH_STATE_WARN);
  EXPECT_EQ(HealthStateForScore(0.799), vanguard::v1::HEALTH_STATE_WARN);
  EXPECT_EQ(HealthStateForScore(0.8), vanguard::v1::HEALTH_STATE_UNHEALTHY);
  EXPECT_EQ(HealthStateForScore(0.949), vanguard::v1::HEALTH_STATE_UNHEALTHY);
  EXPECT_EQ(HealthStateForScore(0.95), vanguard::v1::HEALTH_STATE_CRITICAL);
  EXPECT_EQ(HealthStateForScore(1.0), vanguard::v1::HEALTH_STATE_CRITICAL);
  EXPECT_EQ(HealthStateForScore(1.001), vanguard::v1::HEALTH_STATE_OVERLOADED);
}

TEST(MaxRatioHealthScorerTest, WorstSignalDecides) {
  MaxRatioHealthScorer scorer;
  HealthScore h = scorer.Score({{"p99", 80, 100}, {"error_rate", 0.002, 0.01}});
  EXPECT_DOUBLE_EQ(h.score, 0.8);
  EXPECT_EQ(h.worst_metric, "p99");
  EXPECT_EQ(h.state, vanguard::v1::HEALTH_STATE_UNHEALTHY);
  EXPECT_EQ(scorer.Score({}).state, vanguard::v1::HEALTH_STATE_UNSPECIFIED);
}

}  // namespace
}  // namespace vanguard::worker

namespace vanguard::worker {
namespace {

TEST(StepJudgeTest, AchievedIsComparedWithWhatWasActuallyOffered) {
  auto judge = StepJudge::Create(Slo());
  ASSERT_TRUE(judge.ok());
  // A Poisson schedule at 650 qps drew 2540 arrivals in 4 s (635/s); all were served.
  vanguard::v1::StepResult r = Good();
  r.set_scheduled(2540);
  r.set_sent(2540);
  r.set_completed(2540);
  r.set_achieved_qps(635);
  r.mutable_measured()->set_seconds(4);
  EXPECT_TRUE(judge->Judge(r, 650).passed) << judge->Judge(r, 650).verdict;
  r.set_achieved_qps(600);  // 94% of what arrived: a real shortfall
  EXPECT_THAT(judge->Judge(r, 650).verdict, HasSubstr("achieved 600.0 < 99% of 635"));
}

}  // namespace
}  // namespace vanguard::worker
