// HealthAssessor: the weighted score, the five states, hysteresis in both directions, spikes.
#include "worker/health_assessor.h"

#include <vector>

#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using vanguard::v1::HealthState;
constexpr HealthState kHealthy = vanguard::v1::HEALTH_STATE_HEALTHY;
constexpr HealthState kWarn = vanguard::v1::HEALTH_STATE_WARN;
constexpr HealthState kUnhealthy = vanguard::v1::HEALTH_STATE_UNHEALTHY;
constexpr HealthState kCritical = vanguard::v1::HEALTH_STATE_CRITICAL;
constexpr HealthState kOverloaded = vanguard::v1::HEALTH_STATE_OVERLOADED;

vanguard::v1::Slo Slo() {
  vanguard::v1::Slo slo;
  slo.mutable_p99_latency()->set_nanos(100'000'000);  // 100 ms
  slo.set_max_error_rate(0.01);
  slo.set_max_queue_depth(10);
  return slo;
}

// A window whose only non-zero metric is p99 = ratio * 100 ms.
WindowSignals P99At(double ratio) {
  WindowSignals w;
  w.p99_ms = ratio * 100;
  w.offered_qps = w.achieved_qps = 100;
  return w;
}

HealthAssessor MustCreate(const vanguard::v1::Slo& slo, HealthAssessorOptions o = {}) {
  auto a = HealthAssessor::Create(slo, o);
  EXPECT_TRUE(a.ok()) << a.status();
  return std::move(*a);
}

TEST(HealthAssessorTest, ScoreIsTheNormalisedWeightedSum) {
  HealthAssessor a = MustCreate(Slo());
  WindowSignals w = P99At(0.5);
  w.error_rate = 0.005;  // ratio 0.5
  w.queue_depth = 5;     // ratio 0.5
  // p99 0.35, error 0.2, achieved 0.15 (ratio 0), queue 0.1: (0.35+0.2+0.1)*0.5 / 0.8.
  const WindowAssessment r = a.Observe(w);
  EXPECT_NEAR(r.score, 0.65 * 0.5 / 0.8, 1e-12);
  EXPECT_EQ(r.raw_state, kHealthy);
}

TEST(HealthAssessorTest, RegistryWeightsOverrideDefaults) {
  vanguard::v1::Slo slo = Slo();
  slo.mutable_weights()->set_p99_latency(1);
  slo.mutable_weights()->set_error_rate(1);
  slo.mutable_weights()->set_achieved_shortfall(1);
  slo.mutable_weights()->set_queue_depth(1);
  HealthAssessor a = MustCreate(slo);
  WindowSignals w = P99At(0.4);
  EXPECT_NEAR(a.Observe(w).score, 0.4 / 3, 1e-12);  // (0.4 + 0 + 0) / 3; queue not scraped
}

TEST(HealthAssessorTest, EachThresholdMapsToItsState) {
  const std::vector<std::pair<double, HealthState>> cases = {
      {0.59, kHealthy},   {0.6, kWarn},      {0.79, kWarn},    {0.8, kUnhealthy},
      {0.94, kUnhealthy}, {0.95, kCritical}, {1.0, kCritical}, {1.01, kOverloaded}};
  for (auto [ratio, state] : cases) {
    HealthAssessor a = MustCreate(Slo());
    EXPECT_EQ(a.Observe(P99At(ratio)).raw_state, state) << ratio;
  }
}

TEST(HealthAssessorTest, SingleBreachIsNotAveragedAway) {
  HealthAssessor a = MustCreate(Slo());
  WindowSignals w = P99At(0.1);
  w.error_rate = 0.015;  // 1.5x the limit; the weighted sum alone is ~0.48
  const WindowAssessment r = a.Observe(w);
  EXPECT_LT(r.score, 0.6);
  EXPECT_EQ(r.raw_state, kOverloaded);
  EXPECT_EQ(r.worst_metric, "error_rate");
  EXPECT_TRUE(r.breached);
}

TEST(HealthAssessorTest, EscalatesAfterTwoBadWindows) {
  HealthAssessor a = MustCreate(Slo());
  EXPECT_EQ(a.Observe(P99At(0.7)).state, kHealthy);  // one Warn window: not yet
  EXPECT_EQ(a.Observe(P99At(0.7)).state, kWarn);     // two: Warn
  EXPECT_EQ(a.Observe(P99At(0.9)).state, kWarn);
  EXPECT_EQ(a.Observe(P99At(0.9)).state, kUnhealthy);
  EXPECT_EQ(a.Observe(P99At(0.97)).state, kUnhealthy);
  EXPECT_EQ(a.Observe(P99At(0.97)).state, kCritical);
  EXPECT_EQ(a.Observe(P99At(1.5)).state, kCritical);
  EXPECT_EQ(a.Observe(P99At(1.5)).state, kOverloaded);
  EXPECT_EQ(a.worst_state(), kOverloaded);
}

TEST(HealthAssessorTest, EscalatesToTheBetterOfTheTwoWindows) {
  HealthAssessor a = MustCreate(Slo());
  a.Observe(P99At(2.0));                                // Overloaded
  EXPECT_EQ(a.Observe(P99At(0.85)).state, kUnhealthy);  // Unhealthy: the milder one wins
}

TEST(HealthAssessorTest, RecoversAfterThreeGoodWindows) {
  HealthAssessor a = MustCreate(Slo());
  a.Observe(P99At(1.5));
  a.Observe(P99At(1.5));
  ASSERT_EQ(a.state(), kOverloaded);
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kOverloaded);
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kOverloaded);
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kHealthy);
  // Recovery to the worst of the three windows.
  a.Observe(P99At(1.5));
  a.Observe(P99At(1.5));
  a.Observe(P99At(0.1));
  a.Observe(P99At(0.9));
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kUnhealthy);
  // Each step down in turn: Unhealthy -> Warn -> Critical? No: Critical is worse; Warn.
  a.Observe(P99At(0.7));
  a.Observe(P99At(0.7));
  EXPECT_EQ(a.Observe(P99At(0.7)).state, kWarn);
}

TEST(HealthAssessorTest, InterruptedRunsDoNotCount) {
  HealthAssessor a = MustCreate(Slo());
  a.Observe(P99At(0.9));
  a.Observe(P99At(0.1));  // back to Healthy: the escalation run restarts
  EXPECT_EQ(a.Observe(P99At(0.9)).state, kHealthy);
  a.Observe(P99At(0.9));
  ASSERT_EQ(a.state(), kUnhealthy);
  a.Observe(P99At(0.1));
  a.Observe(P99At(0.1));
  a.Observe(P99At(0.9));  // same as the state: the recovery run restarts
  a.Observe(P99At(0.1));
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kUnhealthy);
  EXPECT_EQ(a.Observe(P99At(0.1)).state, kHealthy);
}

TEST(HealthAssessorTest, CountsSpikesAsLoneBreaches) {
  HealthAssessor a = MustCreate(Slo());
  for (double r : {0.2, 1.5, 0.2, 0.2, 1.5, 1.5, 0.2, 1.2}) a.Observe(P99At(r));
  // 1.5 alone (spike), 1.5 1.5 (sustained, not spikes), trailing 1.2 alone (spike).
  EXPECT_EQ(a.spikes(), 2);
  // A lone spike never moves the hysteresis state.
  HealthAssessor b = MustCreate(Slo());
  for (double r : {0.2, 3.0, 0.2, 3.0, 0.2}) EXPECT_EQ(b.Observe(P99At(r)).state, kHealthy);
  EXPECT_EQ(b.spikes(), 2);
  b.Reset();
  EXPECT_EQ(b.spikes(), 0);
  EXPECT_EQ(b.windows(), 0);
}

TEST(HealthAssessorTest, P99OnlyIgnoresOtherMetrics) {
  HealthAssessor a = MustCreate(Slo(), {.p99_only = true});
  WindowSignals w = P99At(0.3);
  w.error_rate = 0.5;
  w.achieved_qps = 10;
  EXPECT_EQ(a.Observe(w).raw_state, kHealthy);
  HealthAssessor full = MustCreate(Slo());
  EXPECT_EQ(full.Observe(w).raw_state, kOverloaded);
}

TEST(HealthAssessorTest, ShortfallAndGaugesCount) {
  vanguard::v1::Slo slo = Slo();
  slo.set_max_gpu_utilization(0.9);
  HealthAssessor a = MustCreate(slo);
  WindowSignals w = P99At(0.1);
  w.achieved_qps = 97;  // 3% short of 100 against an allowed 1%
  EXPECT_EQ(a.Observe(w).worst_metric, "achieved");
  w.achieved_qps = 100;
  w.gpu_utilization = 0.99;
  EXPECT_EQ(a.Observe(w).worst_metric, "gpu");
  w.gpu_utilization.reset();
  w.queue_depth = 25;
  EXPECT_EQ(a.Observe(w).worst_metric, "queue");
}

TEST(HealthAssessorTest, RejectsBadRegistryValues) {
  vanguard::v1::Slo slo = Slo();
  slo.mutable_weights()->set_ttft(-1);
  auto a = HealthAssessor::Create(slo);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("weights.ttft"), std::string::npos);
  EXPECT_FALSE(HealthAssessor::Create(vanguard::v1::Slo()).ok());
}

}  // namespace
}  // namespace vanguard::worker
