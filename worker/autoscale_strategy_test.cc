// The autoscale strategy as a sequence of Next() calls, and its findings on hand-computed
// series (no I/O, no clock).
#include "worker/autoscale_strategy.h"

#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;

vanguard::v1::AutoscaleStrategy Spike() {
  vanguard::v1::AutoscaleStrategy c;
  c.set_shape(vanguard::v1::LOAD_SHAPE_SPIKE);
  c.set_base_qps(30);
  c.set_peak_qps(120);
  c.set_replica_capacity_qps(50);
  *c.mutable_base_duration() = ToProtoDuration(absl::Seconds(2));
  *c.mutable_peak_duration() = ToProtoDuration(absl::Seconds(4));
  *c.mutable_after_duration() = ToProtoDuration(absl::Seconds(2));
  return c;
}

StrategyContext Slo() { return {.slo_p99_ms = 100, .slo_max_error_rate = 0.01}; }

// One-second windows with these replica readings; p99 500 ms (over the limit) in the first
// `violated` of them, 20 ms after.
StepOutcome Phase(double rate, std::vector<double> replicas, int violated = 0) {
  StepOutcome o;
  o.rate_qps = rate;
  o.passed = violated == 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    ShapeWindow w;
    w.seconds = 1;
    w.scheduled = static_cast<int64_t>(rate);
    w.completed = w.scheduled;
    w.p99_ms = static_cast<int>(i) < violated ? 500 : 20;
    w.replicas = replicas[i];
    o.windows.push_back(w);
  }
  return o;
}

RunStep ExpectStep(const Decision& d) {
  EXPECT_TRUE(std::holds_alternative<RunStep>(d));
  return std::holds_alternative<RunStep>(d) ? std::get<RunStep>(d) : RunStep{};
}

TEST(AutoscaleStrategyTest, ASpikeRunsItsThreePhasesAsIsAndReportsLagViolationsAndWaste) {
  auto s = AutoscaleStrategy::Create(Spike(), Slo());
  ASSERT_TRUE(s.ok()) << s.status();
  RunStep base = ExpectStep((*s)->Next(std::nullopt));
  EXPECT_EQ(base.rate_qps, 30);
  EXPECT_TRUE(base.as_is);
  EXPECT_EQ(base.duration_s, 2);
  EXPECT_EQ(base.ramp_end_qps, 0);
  EXPECT_EQ((*s)->StepsLeft(), 2);
  RunStep peak = ExpectStep((*s)->Next(Phase(30, {1, 1})));
  EXPECT_EQ(peak.rate_qps, 120);
  EXPECT_EQ(peak.duration_s, 4);
  RunStep after = ExpectStep((*s)->Next(Phase(120, {1, 1, 2, 3}, /*violated=*/3)));
  EXPECT_EQ(after.rate_qps, 30);
  Decision d = (*s)->Next(Phase(30, {3, 3}));
  ASSERT_TRUE(std::holds_alternative<Done>(d));
  const Done& done = std::get<Done>(d);
  ASSERT_TRUE(done.autoscale.has_value());
  const AutoscaleFindings& f = *done.autoscale;
  // 120 qps needs ceil(120 / 50) = 3 replicas from t = 2 s; the gauge reads 3 at the end of
  // the window starting at 5 s: lag 6 - 2 = 4 s.
  EXPECT_DOUBLE_EQ(f.scale_up_lag_s, 4);
  EXPECT_TRUE(f.reached);
  EXPECT_DOUBLE_EQ(f.violation_seconds, 3);
  // After the spike 1 replica is needed and 3 serve for 2 s; during it 2, 2 and 1 missing.
  EXPECT_DOUBLE_EQ(f.overprovisioned_replica_seconds, 4);
  EXPECT_DOUBLE_EQ(f.underprovisioned_replica_seconds, 5);
  EXPECT_DOUBLE_EQ(f.replica_seconds, 15);
  EXPECT_DOUBLE_EQ(f.peak_replicas, 3);
  EXPECT_DOUBLE_EQ(f.measured_seconds, 8);
  EXPECT_EQ(f.replica_samples, 8);
  EXPECT_EQ(done.max_sustainable_qps, 0);
  EXPECT_TRUE(done.converged);
  EXPECT_THAT(done.summary, HasSubstr("scale-up lag 4.0 s"));
  EXPECT_EQ((*s)->StepsLeft(), 0);
  // Done stays done.
  EXPECT_TRUE(std::holds_alternative<Done>((*s)->Next(std::nullopt)));
}

TEST(AutoscaleStrategyTest, ARampIsARampPhaseAndNeedsFollowTheRateAtEachWindowsMiddle) {
  vanguard::v1::AutoscaleStrategy c = Spike();
  c.set_shape(vanguard::v1::LOAD_SHAPE_RAMP);
  c.set_base_qps(50);
  c.set_peak_qps(150);
  *c.mutable_ramp_duration() = ToProtoDuration(absl::Seconds(4));
  auto s = AutoscaleStrategy::Create(c, Slo());
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->phases().size(), 4u);
  EXPECT_EQ((*s)->phases()[1].start_qps, 50);
  EXPECT_EQ((*s)->phases()[1].end_qps, 150);
  ExpectStep((*s)->Next(std::nullopt));
  RunStep ramp = ExpectStep((*s)->Next(Phase(50, {1, 1})));
  EXPECT_EQ(ramp.rate_qps, 50);
  EXPECT_EQ(ramp.ramp_end_qps, 150);
  // Middles at 62.5, 87.5, 112.5, 137.5 qps need 2, 2, 3, 3 replicas; the fleet follows one
  // window late: the rise to 2 (at 2 s) is met at the end of the window starting at 3 s.
  ExpectStep((*s)->Next(Phase(50, {1, 2, 2, 3})));
  ExpectStep((*s)->Next(Phase(150, {3, 3})));
  const Done done = std::get<Done>((*s)->Next(Phase(50, {3, 3})));
  EXPECT_DOUBLE_EQ(done.autoscale->scale_up_lag_s, 2);
  EXPECT_DOUBLE_EQ(done.autoscale->underprovisioned_replica_seconds, 1 + 1);
}

TEST(AutoscaleStrategyTest, ADiurnalDayIsARaisedCosineInSegments) {
  vanguard::v1::AutoscaleStrategy c = Spike();
  c.set_shape(vanguard::v1::LOAD_SHAPE_DIURNAL);
  c.set_base_qps(20);
  c.set_peak_qps(100);
  c.set_segments(4);
  *c.mutable_period() = ToProtoDuration(absl::Seconds(8));
  auto s = AutoscaleStrategy::Create(c, Slo());
  ASSERT_TRUE(s.ok());
  const auto& p = (*s)->phases();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NEAR(p[0].start_qps, 20, 1e-9);
  EXPECT_NEAR(p[0].end_qps, 60, 1e-9);
  EXPECT_NEAR(p[1].end_qps, 100, 1e-9);
  EXPECT_NEAR(p[2].end_qps, 60, 1e-9);
  EXPECT_NEAR(p[3].end_qps, 20, 1e-9);
  EXPECT_DOUBLE_EQ(p[0].duration_s, 2);
}

TEST(AutoscaleStrategyTest, ARiseNeverMetIsALowerBoundAndNotConverged) {
  auto s = AutoscaleStrategy::Create(Spike(), Slo());
  ASSERT_TRUE(s.ok());
  (*s)->Next(std::nullopt);
  (*s)->Next(Phase(30, {1, 1}));
  (*s)->Next(Phase(120, {1, 1, 2, 2}, 4));
  const Done done = std::get<Done>((*s)->Next(Phase(30, {2, 2})));
  EXPECT_FALSE(done.autoscale->reached);
  EXPECT_DOUBLE_EQ(done.autoscale->scale_up_lag_s, 8 - 2);  // from the rise to the end
  EXPECT_FALSE(done.converged);
  EXPECT_THAT(done.summary, HasSubstr("at least 6.0 s"));
}

TEST(AutoscaleStrategyTest, WithoutAReplicaGaugeItSaysSo) {
  auto s = AutoscaleStrategy::Create(Spike(), Slo());
  ASSERT_TRUE(s.ok());
  (*s)->Next(std::nullopt);
  (*s)->Next(Phase(30, {-1, -1}));
  (*s)->Next(Phase(120, {-1, -1, -1, -1}, 2));
  const Done done = std::get<Done>((*s)->Next(Phase(30, {-1, -1})));
  EXPECT_EQ(done.autoscale->replica_samples, 0);
  EXPECT_DOUBLE_EQ(done.autoscale->violation_seconds, 2);
  EXPECT_FALSE(done.converged);
  EXPECT_THAT(done.summary, HasSubstr("no replica gauge"));
}

TEST(AutoscaleStrategyTest, AWindowWithNothingCompletedOrTooManyErrorsBreaksTheSlo) {
  std::vector<AutoscaleStrategy::PlannedWindow> windows(3);
  for (auto& w : windows) {
    w.window = {.seconds = 0.5, .p99_ms = 10, .scheduled = 10, .completed = 10, .replicas = 1};
    w.planned_qps = 20;
  }
  windows[1].window.completed = 0;
  windows[2].window.error_rate = 0.2;
  const AutoscaleFindings f = AutoscaleStrategy::Analyze(windows, 50, 100, 0.01);
  EXPECT_DOUBLE_EQ(f.violation_seconds, 1.0);
  EXPECT_DOUBLE_EQ(f.scale_up_lag_s, 0);  // one replica was needed and served throughout
}

TEST(AutoscaleStrategyTest, BadParametersAreRejectedNamingTheField) {
  vanguard::v1::AutoscaleStrategy c = Spike();
  c.set_replica_capacity_qps(0);
  auto s = AutoscaleStrategy::Create(c, Slo());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("autoscale.replica_capacity_qps"));
  c = Spike();
  c.set_peak_qps(10);
  EXPECT_THAT(AutoscaleStrategy::Create(c, Slo()).status().message(), HasSubstr("peak_qps"));
  c = Spike();
  *c.mutable_peak_duration() = ToProtoDuration(-absl::Seconds(1));
  EXPECT_THAT(AutoscaleStrategy::Create(c, Slo()).status().message(), HasSubstr("peak_duration"));
}

TEST(AutoscaleStrategyTest, IsRegisteredInTheStrategyTable) {
  vanguard::v1::TestSpec spec;
  *spec.mutable_autoscale() = Spike();
  auto s = CreateStrategy(spec, Slo());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->name(), "autoscale");
}

TEST(AutoscaleStrategyTest, ShapeWindowsComeFromStoredWindowsSkippingWarmup) {
  google::protobuf::RepeatedPtrField<vanguard::v1::StepWindow> stored;
  vanguard::v1::StepWindow* settle = stored.Add();
  settle->set_warmup(true);
  vanguard::v1::StepWindow* w = stored.Add();
  *w->mutable_duration() = ToProtoDuration(absl::Milliseconds(500));
  w->set_scheduled(10);
  w->set_completed(9);
  w->set_errors(1);
  w->set_timeouts(1);
  w->mutable_latency()->set_p99_ms(42);
  w->set_replicas(0);  // a fleet scaled to zero is a reading, not a missing one
  stored.Add();        // no gauge
  const absl::Time began = absl::FromUnixSeconds(1000);
  *w->mutable_start_time() = ToProtoTimestamp(began + absl::Milliseconds(1700));
  const std::vector<ShapeWindow> out = ShapeWindowsOf(stored, began);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].seconds, 0.5);
  EXPECT_DOUBLE_EQ(out[0].error_rate, 0.2);
  EXPECT_DOUBLE_EQ(out[0].p99_ms, 42);
  EXPECT_DOUBLE_EQ(out[0].replicas, 0);
  EXPECT_LT(out[1].replicas, 0);
  EXPECT_DOUBLE_EQ(out[0].scraped_at_s, 1.7);  // recorded 1.7 s after the step began
  EXPECT_LT(out[1].scraped_at_s, 0);           // not known
}

TEST(AutoscaleStrategyTest, ReadingsTakenLateCountAtTheTimeTheyWereTaken) {
  // Behind the spike's backlog each window is reported (and the gauge read) well after its
  // end: at 1.8, 2.6, 3.4 and 4.2 s into the phase. The gauge first reads 3 replicas at
  // 2 + 3.4 = 5.4 s on the run's time line: lag 3.4 s from the rise at 2 s (not 3 s, the end
  // of the window whose report carried it).
  auto s = AutoscaleStrategy::Create(Spike(), Slo());
  ASSERT_TRUE(s.ok());
  (*s)->Next(std::nullopt);
  (*s)->Next(Phase(30, {1, 1}));
  StepOutcome peak = Phase(120, {1, 1, 3, 3}, 4);
  const double scraped[] = {1.8, 2.6, 3.4, 4.2};
  for (int i = 0; i < 4; ++i) peak.windows[i].scraped_at_s = scraped[i];
  (*s)->Next(peak);
  const Done done = std::get<Done>((*s)->Next(Phase(30, {3, 3})));
  EXPECT_NEAR(done.autoscale->scale_up_lag_s, 3.4, 1e-9);
  // The peak's windows end at 3, 4, 5 and 6 s; the readings by then: 1 (the last before 3 s
  // is the base's), 1 (3.8 s), 1 (4.6 s), 3 (5.4 s): 2 + 2 + 2 + 0 replica-seconds missing.
  EXPECT_DOUBLE_EQ(done.autoscale->underprovisioned_replica_seconds, 6);
}

}  // namespace
}  // namespace vanguard::worker
