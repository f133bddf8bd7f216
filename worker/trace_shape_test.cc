// A recorded trace's rate buckets as an autoscale test's phases: compression into the period,
// scaling to the peak, the base rate as a floor, and bad buckets named (no I/O, no clock).
#include "worker/trace_shape.h"

#include <cmath>
#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;

// A tiny trace's rates, as `vanguard-replayer rates --bucket=1m --output=json` prints them:
// one minute each at these rates, from 0.
vanguard::v1::AutoscaleStrategy TraceOf(std::vector<double> qps) {
  vanguard::v1::AutoscaleStrategy c;
  c.set_shape(vanguard::v1::LOAD_SHAPE_TRACE);
  c.set_base_qps(30);
  c.set_peak_qps(120);
  c.set_replica_capacity_qps(50);
  *c.mutable_period() = ToProtoDuration(absl::Seconds(2 * static_cast<double>(qps.size())));
  for (size_t i = 0; i < qps.size(); ++i) {
    vanguard::v1::TraceRate* r = c.add_trace_rates();
    *r->mutable_start() = ToProtoDuration(absl::Minutes(static_cast<double>(i)));
    *r->mutable_duration() = ToProtoDuration(absl::Minutes(1));
    r->set_qps(qps[i]);
  }
  return c;
}

StepOutcome Windows(double rate, std::vector<double> replicas) {
  StepOutcome o;
  o.rate_qps = rate;
  o.passed = true;
  for (double r : replicas) {
    ShapeWindow w;
    w.seconds = 1;
    w.scheduled = static_cast<int64_t>(rate);
    w.completed = w.scheduled;
    w.p99_ms = 20;
    w.replicas = r;
    o.windows.push_back(w);
  }
  return o;
}

RunStep ExpectStep(const Decision& d) {
  EXPECT_TRUE(std::holds_alternative<RunStep>(d));
  return std::holds_alternative<RunStep>(d) ? std::get<RunStep>(d) : RunStep{};
}

TEST(TraceShapeTest, EachBucketIsAPhaseCompressedIntoThePeriodAndScaledToThePeak) {
  // 4 minutes into 8 s: 2 s a bucket. The busiest bucket (40 qps) runs at peak 120: x3.
  auto phases = TracePhases(TraceOf({10, 40, 20, 0}));
  ASSERT_TRUE(phases.ok()) << phases.status();
  ASSERT_EQ(phases->size(), 4u);
  const double want[] = {30, 120, 60, 30};  // 0 qps, a gap in the trace, runs at base 30
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ((*phases)[i].start_qps, want[i]) << i;
    EXPECT_DOUBLE_EQ((*phases)[i].end_qps, want[i]) << i;
    EXPECT_DOUBLE_EQ((*phases)[i].duration_s, 2) << i;
  }
}

TEST(TraceShapeTest, NeighboursAtTheSameRateAreOnePhaseAndBelowBaseRunAtBase) {
  // 5 and 8 qps scale to 15 and 24, both under base 30: one 4 s phase.
  auto phases = TracePhases(TraceOf({5, 8, 40, 40, 20}));
  ASSERT_TRUE(phases.ok()) << phases.status();
  ASSERT_EQ(phases->size(), 3u);
  EXPECT_DOUBLE_EQ((*phases)[0].start_qps, 30);
  EXPECT_DOUBLE_EQ((*phases)[0].duration_s, 4);
  EXPECT_DOUBLE_EQ((*phases)[1].start_qps, 120);
  EXPECT_DOUBLE_EQ((*phases)[1].duration_s, 4);
  EXPECT_DOUBLE_EQ((*phases)[2].start_qps, 60);
}

TEST(TraceShapeTest, TheStrategyDrivesTheTraceAndJudgesTheFleetAgainstIt) {
  auto s = AutoscaleStrategy::Create(TraceOf({10, 40, 20, 0}), {.slo_p99_ms = 100});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->StepsLeft(), 4);
  RunStep first = ExpectStep((*s)->Next(std::nullopt));
  EXPECT_EQ(first.rate_qps, 30);
  EXPECT_TRUE(first.as_is);
  EXPECT_EQ(first.duration_s, 2);
  EXPECT_EQ(first.ramp_end_qps, 0);
  EXPECT_EQ(ExpectStep((*s)->Next(Windows(30, {1, 1}))).rate_qps, 120);
  EXPECT_EQ(ExpectStep((*s)->Next(Windows(120, {1, 2}))).rate_qps, 60);
  EXPECT_EQ(ExpectStep((*s)->Next(Windows(60, {3, 3}))).rate_qps, 30);
  const Decision d = (*s)->Next(Windows(30, {3, 2}));
  ASSERT_TRUE(std::holds_alternative<Done>(d));
  const Done& done = std::get<Done>(d);
  // Needed 1, 3, 2, 1 replicas. The rise to 3 at t = 2 s is met at the end of the window
  // starting at 4 s: lag 3 s. Under: 2 + 1 replica-s; over: 1 + 1 (at 60) + 2 + 1 (at 30).
  EXPECT_DOUBLE_EQ(done.autoscale->scale_up_lag_s, 3);
  EXPECT_TRUE(done.autoscale->reached);
  EXPECT_DOUBLE_EQ(done.autoscale->underprovisioned_replica_seconds, 3);
  EXPECT_DOUBLE_EQ(done.autoscale->overprovisioned_replica_seconds, 5);
  EXPECT_DOUBLE_EQ(done.autoscale->measured_seconds, 8);
  EXPECT_THAT(done.summary, HasSubstr("trace 30 -> 120 qps"));
}

TEST(TraceShapeTest, BadBucketsAreRefusedNamingTheBucket) {
  auto message = [](const vanguard::v1::AutoscaleStrategy& c) {
    auto s = AutoscaleStrategy::Create(c, {});
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
    return std::string(s.status().message());
  };
  EXPECT_THAT(message(TraceOf({})), HasSubstr("autoscale.trace_rates must list"));
  vanguard::v1::AutoscaleStrategy gap = TraceOf({10, 20, 30});
  *gap.mutable_trace_rates(2)->mutable_start() = ToProtoDuration(absl::Minutes(3));
  EXPECT_THAT(message(gap), HasSubstr("autoscale.trace_rates[2].start must be 2m"));
  vanguard::v1::AutoscaleStrategy empty = TraceOf({10, 20});
  empty.mutable_trace_rates(1)->clear_duration();
  EXPECT_THAT(message(empty), HasSubstr("autoscale.trace_rates[1].duration must be > 0"));
  EXPECT_THAT(message(TraceOf({10, std::nan("")})), HasSubstr("trace_rates[1].qps"));
  EXPECT_THAT(message(TraceOf({10, -1})), HasSubstr("trace_rates[1].qps"));
  EXPECT_THAT(message(TraceOf({0, 0})), HasSubstr("all 0 qps"));
  vanguard::v1::AutoscaleStrategy tight = TraceOf({10, 20, 30, 40});
  *tight.mutable_period() = ToProtoDuration(absl::Seconds(1));  // 0.25 s a bucket
  EXPECT_THAT(message(tight), HasSubstr("autoscale.period 1 s over the trace's 4m leaves"));
  EXPECT_THAT(message(TraceOf(std::vector<double>(AutoscaleStrategy::kMaxSegments + 1, 1))),
              HasSubstr("at most 1000 buckets"));
  vanguard::v1::AutoscaleStrategy spike = TraceOf({10});
  spike.set_shape(vanguard::v1::LOAD_SHAPE_SPIKE);
  EXPECT_THAT(message(spike), HasSubstr("autoscale.trace_rates is for LOAD_SHAPE_TRACE only"));
  // The rates the trace shape scales are Create's to check as for any shape.
  vanguard::v1::AutoscaleStrategy no_base = TraceOf({10});
  no_base.set_base_qps(0);
  EXPECT_THAT(message(no_base), HasSubstr("autoscale.base_qps"));
}

}  // namespace
}  // namespace vanguard::worker
