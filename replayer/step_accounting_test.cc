#include "replayer/step_accounting.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using absl::Milliseconds;
using absl::Seconds;

TEST(WindowLayoutTest, WarmupWindowsEndAtWarmupAndMeasuredWindowsStartThere) {
  WindowLayout layout(Milliseconds(1500), Seconds(2), Seconds(1));
  ASSERT_EQ(layout.count(), 4);
  EXPECT_TRUE(layout.Span(0).warmup);
  EXPECT_EQ(layout.Span(0).end, Seconds(1));
  EXPECT_TRUE(layout.Span(1).warmup);
  EXPECT_EQ(layout.Span(1).start, Seconds(1));
  EXPECT_EQ(layout.Span(1).end, Milliseconds(1500));
  EXPECT_FALSE(layout.Span(2).warmup);
  EXPECT_EQ(layout.Span(2).start, Milliseconds(1500));
  EXPECT_EQ(layout.Span(3).end, Milliseconds(3500));

  EXPECT_EQ(layout.IndexOf(Milliseconds(0)), 0);
  EXPECT_EQ(layout.IndexOf(Milliseconds(1499)), 1);
  EXPECT_EQ(layout.IndexOf(Milliseconds(1500)), 2);
  EXPECT_EQ(layout.IndexOf(Milliseconds(2499)), 2);
  EXPECT_EQ(layout.IndexOf(Milliseconds(2500)), 3);
  EXPECT_EQ(layout.IndexOf(Milliseconds(9999)), 3);  // clamps
}

TEST(WindowLayoutTest, NoWarmupMeansNoWarmupWindowsAndAPartialLastWindow) {
  WindowLayout layout(absl::ZeroDuration(), Milliseconds(2500), Seconds(1));
  ASSERT_EQ(layout.count(), 3);
  EXPECT_FALSE(layout.Span(0).warmup);
  EXPECT_EQ(layout.Span(2).start, Seconds(2));
  EXPECT_EQ(layout.Span(2).end, Milliseconds(2500));
}

// Schedules `n` requests evenly over [from, from + span) and completes each `latency` after
// its intended time (sent on time).
void RunEvenly(StepAccounting& a, absl::Duration from, absl::Duration span, int n,
               absl::Duration latency) {
  for (int i = 0; i < n; ++i) {
    absl::Duration at = from + span * i / n;
    a.OnScheduled(at);
    a.OnDispatched(at, at);
    a.OnSent(at, at);
    a.OnSuccess(at, at, at + latency);
  }
}

TEST(StepAccountingTest, WarmupRequestsAreStreamedButExcludedFromTheStep) {
  StepAccounting a(WindowLayout(Seconds(1), Seconds(2), Seconds(1)));
  RunEvenly(a, absl::ZeroDuration(), Seconds(1), 100, Milliseconds(500));  // slow warmup
  RunEvenly(a, Seconds(1), Seconds(2), 200, Milliseconds(5));
  const StepTally& m = a.measured();
  EXPECT_EQ(m.scheduled, 200);
  EXPECT_EQ(m.completed, 200);
  EXPECT_NEAR(m.latency.max(), 5000, 50);  // the 500 ms warmup latencies are not in it

  std::vector<WindowTally> windows = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_TRUE(windows[0].span.warmup);
  EXPECT_EQ(windows[0].completed, 100);
  EXPECT_NEAR(windows[0].latency.Percentile(50), 500'000, 2'500);
  EXPECT_FALSE(windows[1].span.warmup);
  EXPECT_EQ(windows[1].completed, 100);

  v1::StepResult result = BuildStepResult(m, 100.0, Seconds(2));
  EXPECT_EQ(result.scheduled(), 200);
  EXPECT_DOUBLE_EQ(result.achieved_qps(), 100.0);
  EXPECT_LT(result.latency().p99_ms(), 10.0);
  auto histogram = LatencyHistogram::Deserialize(result.latency_histogram());
  ASSERT_TRUE(histogram.ok());
  EXPECT_EQ(histogram->count(), 200);
}

TEST(StepAccountingTest, ARequestBelongsToTheWindowOfItsIntendedTime) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(3), Seconds(1)));
  // Intended at 0.9 s, sent late at 1.2 s, answered at 2.5 s: window 0, latency 1.6 s.
  a.OnScheduled(Milliseconds(900));
  a.OnDispatched(Milliseconds(900), Milliseconds(1200));
  a.OnSent(Milliseconds(900), Milliseconds(1200));
  a.OnSuccess(Milliseconds(900), Milliseconds(1200), Milliseconds(2500));
  std::vector<WindowTally> windows = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].completed, 1);
  EXPECT_EQ(windows[1].completed, 0);
  EXPECT_EQ(windows[2].completed, 0);
  EXPECT_NEAR(windows[0].latency.max(), 1'600'000, 8'000);
  // Latency counts from the intended time; service latency from the actual send.
  EXPECT_NEAR(a.measured().latency.max(), 1'600'000, 8'000);
  EXPECT_NEAR(a.measured().service_latency.max(), 1'300'000, 8'000);
  EXPECT_NEAR(a.measured().send_skew.max(), 300'000, 1'500);
}

TEST(StepAccountingTest, AWindowClosesOnlyWhenPassedAndEveryRequestIsResolved) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(2), Seconds(1)));
  a.OnScheduled(Milliseconds(100));
  a.OnDispatched(Milliseconds(100), Milliseconds(100));
  a.OnScheduled(Milliseconds(600));
  a.OnDispatched(Milliseconds(600), Milliseconds(600));
  a.OnSuccess(Milliseconds(100), Milliseconds(100), Milliseconds(150));
  // The schedule has not passed the end of window 0 yet.
  EXPECT_TRUE(a.TakeClosedWindows(Milliseconds(900)).empty());
  // It has, but the 600 ms request is still open.
  EXPECT_TRUE(a.TakeClosedWindows(Milliseconds(1100)).empty());
  a.OnTimeout(Milliseconds(600));
  std::vector<WindowTally> closed = a.TakeClosedWindows(Milliseconds(1100));
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].span.index, 0);
  EXPECT_EQ(closed[0].completed, 1);
  EXPECT_EQ(closed[0].timeouts, 1);
  EXPECT_FALSE(a.all_windows_taken());
  // An empty window still closes (with zeros) once the schedule is past it.
  closed = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].span.index, 1);
  EXPECT_EQ(closed[0].scheduled, 0);
  EXPECT_TRUE(a.all_windows_taken());
}

TEST(StepAccountingTest, WindowsCloseInIndexOrder) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(3), Seconds(1)));
  a.OnScheduled(Milliseconds(500));  // window 0 stays open
  a.OnScheduled(Milliseconds(1500));
  a.OnError(Milliseconds(1500), "http_503");  // window 1 is resolved
  EXPECT_TRUE(a.TakeClosedWindows(absl::InfiniteDuration()).empty());
  a.OnError(Milliseconds(500), kErrorConnect);
  std::vector<WindowTally> closed = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(closed.size(), 3u);
  EXPECT_EQ(closed[0].span.index, 0);
  EXPECT_EQ(closed[1].span.index, 1);
  EXPECT_EQ(closed[2].span.index, 2);
}

TEST(StepAccountingTest, EveryOutcomeIsCountedOnceAndErrorsByClass) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  absl::Duration t = Milliseconds(10);
  for (int i = 0; i < 10; ++i) a.OnScheduled(t);
  a.OnDropped(t);
  a.OnDropped(t);
  for (int i = 0; i < 8; ++i) a.OnDispatched(t, t);
  for (int i = 0; i < 7; ++i) a.OnSent(t, t);  // one waited for a connection and timed out
  a.OnSuccess(t, t, t + Milliseconds(3));
  a.OnSuccess(t, t, t + Milliseconds(4));
  a.OnError(t, "http_500");
  a.OnError(t, "http_500");
  a.OnError(t, "http_503");
  a.OnError(t, kErrorRead);
  a.OnTimeout(t);
  a.OnTimeout(t);

  v1::StepResult r = BuildStepResult(a.measured(), 10.0, Seconds(1));
  EXPECT_EQ(r.scheduled(), 10);
  EXPECT_EQ(r.sent(), 7);
  EXPECT_EQ(r.completed(), 2);
  EXPECT_EQ(r.errors(), 4);
  EXPECT_EQ(r.timeouts(), 2);
  EXPECT_EQ(r.dropped(), 2);
  EXPECT_EQ(r.scheduled(), r.dropped() + r.completed() + r.errors() + r.timeouts());
  EXPECT_DOUBLE_EQ(r.achieved_qps(), 2.0);  // errors are not throughput
  EXPECT_EQ(r.errors_by_class().at("http_500"), 2);
  EXPECT_EQ(r.errors_by_class().at("http_503"), 1);
  EXPECT_EQ(r.errors_by_class().at("read"), 1);
  EXPECT_EQ(r.errors_by_class().at("timeout"), 2);
  EXPECT_EQ(r.errors_by_class().size(), 4u);
  // Only successes are timed.
  EXPECT_NEAR(r.latency().max_ms(), 4.0, 0.05);
  auto histogram = LatencyHistogram::Deserialize(r.latency_histogram());
  ASSERT_TRUE(histogram.ok());
  EXPECT_EQ(histogram->count(), 2);

  std::vector<WindowTally> closed = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(closed.size(), 1u);
  v1::WindowMetrics w = ToWindowMetrics(closed[0]);
  EXPECT_EQ(w.scheduled(), 10);
  EXPECT_EQ(w.sent(), 7);
  EXPECT_EQ(w.completed(), 2);
  EXPECT_EQ(w.errors(), 4);
  EXPECT_EQ(w.timeouts(), 2);
  EXPECT_EQ(w.dropped(), 2);
  EXPECT_DOUBLE_EQ(w.offered_qps(), 10.0);
  EXPECT_DOUBLE_EQ(w.achieved_qps(), 2.0);
}

TEST(StepAccountingTest, AchievedRateUsesTheMeasuredDurationOnly) {
  StepAccounting a(WindowLayout(Seconds(2), Seconds(4), Seconds(1)));
  RunEvenly(a, absl::ZeroDuration(), Seconds(2), 400, Milliseconds(1));
  RunEvenly(a, Seconds(2), Seconds(4), 600, Milliseconds(1));
  v1::StepResult r = BuildStepResult(a.measured(), 200.0, Seconds(4));
  EXPECT_DOUBLE_EQ(r.achieved_qps(), 150.0);
  EXPECT_DOUBLE_EQ(r.target_qps(), 200.0);
  EXPECT_EQ(r.measured().seconds(), 4);
}

TEST(ClientValidityTest, ValidWhenOnTimeAndNothingDropped) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  for (int i = 0; i < 1000; ++i) {
    absl::Duration t = Milliseconds(1) * i;
    a.OnScheduled(t);
    a.OnDispatched(t, t + absl::Microseconds(i % 100 == 0 ? 9000 : 50));  // 1% at 9 ms
  }
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.reason, "");
  v1::StepResult r = BuildStepResult(a.measured(), 1000, Seconds(1));
  EXPECT_TRUE(r.client_valid());
  EXPECT_NEAR(r.send_skew_p50_us(), 50, 1);
  EXPECT_NEAR(r.send_skew_max_us(), 9000, 40);
}

TEST(ClientValidityTest, InvalidWhenSendSkewP99ExceedsTenMilliseconds) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  for (int i = 0; i < 1000; ++i) {
    absl::Duration t = Milliseconds(1) * i;
    a.OnScheduled(t);
    a.OnDispatched(t, t + (i % 50 == 0 ? Milliseconds(20) : absl::Microseconds(50)));  // 2% late
  }
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "send skew")) << v.reason;
  v1::StepResult r = BuildStepResult(a.measured(), 1000, Seconds(1));
  EXPECT_FALSE(r.client_valid());
  EXPECT_EQ(r.client_invalid_reason(), v.reason);
}

TEST(ClientValidityTest, InvalidWhenAnyMeasuredRequestWasDropped) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(1));
  a.OnDropped(Milliseconds(1));
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "1 requests dropped")) << v.reason;
}

TEST(ClientValidityTest, WarmupSkewDoesNotInvalidateTheStep) {
  StepAccounting a(WindowLayout(Seconds(1), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(1));
  a.OnDispatched(Milliseconds(1), Milliseconds(500));  // connection setup at the start
  a.OnScheduled(Milliseconds(1500));
  a.OnDispatched(Milliseconds(1500), Milliseconds(1500));
  EXPECT_TRUE(JudgeClientValidity(a.measured()).valid);
}

TEST(TallyMergeTest, MergingTwoLoopsEqualsRecordingInOne) {
  WindowLayout layout(absl::ZeroDuration(), Seconds(1), Seconds(1));
  StepAccounting one(layout), left(layout), right(layout);
  for (int i = 0; i < 100; ++i) {
    absl::Duration t = Milliseconds(10) * i;
    StepAccounting& half = i % 2 ? left : right;
    for (StepAccounting* a : {&one, &half}) {
      a->OnScheduled(t);
      a->OnDispatched(t, t + absl::Microseconds(i));
      a->OnSent(t, t);
      if (i % 10 == 0) {
        a->OnError(t, "http_500");
      } else {
        a->OnSuccess(t, t, t + Milliseconds(i));
      }
    }
  }
  StepTally merged = left.measured();
  merged.Merge(right.measured());
  EXPECT_EQ(merged.scheduled, one.measured().scheduled);
  EXPECT_EQ(merged.completed, one.measured().completed);
  EXPECT_EQ(merged.errors_by_class, one.measured().errors_by_class);
  EXPECT_TRUE(merged.latency == one.measured().latency);
  EXPECT_TRUE(merged.send_skew == one.measured().send_skew);

  WindowTally window = left.TakeClosedWindows(absl::InfiniteDuration())[0];
  window.Merge(right.TakeClosedWindows(absl::InfiniteDuration())[0]);
  WindowTally expected = one.TakeClosedWindows(absl::InfiniteDuration())[0];
  EXPECT_EQ(window.completed, expected.completed);
  EXPECT_EQ(window.errors, expected.errors);
  EXPECT_TRUE(window.latency == expected.latency);
}

}  // namespace
}  // namespace vanguard::replayer
