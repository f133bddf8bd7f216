#include "replayer/step_accounting.h"

#include "absl/strings/match.h"
#include "google/protobuf/util/message_differencer.h"
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

TEST(ClientValidityTest, InvalidWhenSendSkewP99ExceedsFiveMilliseconds) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  for (int i = 0; i < 1000; ++i) {
    absl::Duration t = Milliseconds(1) * i;
    a.OnScheduled(t);
    a.OnDispatched(t, t + (i % 50 == 0 ? Milliseconds(6) : absl::Microseconds(50)));  // 2% late
  }
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "send skew")) << v.reason;
  EXPECT_TRUE(v.late_only);
  v1::StepResult r = BuildStepResult(a.measured(), 1000, Seconds(1));
  EXPECT_FALSE(r.client_valid());
  EXPECT_TRUE(r.client_invalid_late_only());
  EXPECT_EQ(r.client_invalid_reason(), v.reason);

  // One send past the skew max: not "late only" any more.
  a.OnScheduled(Milliseconds(999));
  a.OnDispatched(Milliseconds(999), Milliseconds(999) + Milliseconds(60));
  v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_FALSE(v.late_only);
}

TEST(ClientValidityTest, InvalidWhenAnyMeasuredRequestWasDropped) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(1));
  a.OnDropped(Milliseconds(1));
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "1 requests dropped")) << v.reason;
  EXPECT_FALSE(v.late_only);
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

TEST(ClientValidityTest, InvalidWhenOneSendWasLaterThanTheMaxSkew) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  for (int i = 0; i < 1000; ++i) {
    absl::Duration t = Milliseconds(1) * i;
    a.OnScheduled(t);
    a.OnDispatched(t, t + (i == 500 ? Milliseconds(60) : absl::Microseconds(20)));
  }
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "send skew max")) << v.reason;
}

TEST(ClientValidityTest, InvalidWhenRequestsWereNeverDispatched) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(5));
  a.OnNeverDispatched(Milliseconds(5));
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "1 requests scheduled but never dispatched")) << v.reason;
  // A never-dispatched request resolves its window, so the window can close.
  EXPECT_EQ(a.TakeClosedWindows(absl::InfiniteDuration())[0].never_dispatched, 1);
}

TEST(ClientValidityTest, InvalidWhenTheClientWasBusierThanSeventyPercentOfACore) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(10), Seconds(1)));
  a.OnCpuShare(0.40);
  EXPECT_TRUE(JudgeClientValidity(a.measured()).valid);
  a.OnCpuShare(0.85);
  a.OnCpuShare(0.30);  // the max counts, not the last
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(absl::StrContains(v.reason, "client CPU 85%")) << v.reason;
  EXPECT_DOUBLE_EQ(BuildStepResult(a.measured(), 1, Seconds(10)).max_client_cpu_share(), 0.85);
}

TEST(GoodputTest, OnlyCompletionsWithinTheSloAreGoodAndEveryScheduledRequestCounts) {
  RequestSlo slo{Milliseconds(100), Milliseconds(20)};
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)), slo);
  absl::Duration t = Milliseconds(1);
  for (int i = 0; i < 10; ++i) a.OnScheduled(t);
  a.OnSuccess(t, t, t + Milliseconds(50), 3, t + Milliseconds(10));   // good
  a.OnSuccess(t, t, t + Milliseconds(150), 3, t + Milliseconds(10));  // too slow
  a.OnSuccess(t, t, t + Milliseconds(50), 3, t + Milliseconds(30));   // first token late
  a.OnSuccess(t, t, t + Milliseconds(50));                            // no token at all
  a.OnError(t, "http_503");
  a.OnTimeout(t);  // censored
  a.OnDropped(t);
  a.OnNeverDispatched(t);
  a.OnSuccess(t, t, t + Milliseconds(90), 1, t + Milliseconds(19));  // good
  a.OnSuccess(t, t, t + Milliseconds(99), 1, t + Milliseconds(1));   // good
  v1::StepResult r = BuildStepResult(a.measured(), 10, Seconds(1));
  EXPECT_EQ(r.good(), 3);
  EXPECT_DOUBLE_EQ(r.goodput(), 0.3);  // over all 10 scheduled, not the 6 completed
  EXPECT_EQ(r.censored(), 1);
  EXPECT_EQ(r.output_chunks(), 11);
  std::vector<WindowTally> windows = a.TakeClosedWindows(absl::InfiniteDuration());
  ASSERT_EQ(windows.size(), 1u);
  v1::WindowMetrics w = ToWindowMetrics(windows[0]);
  EXPECT_EQ(w.good(), 3);
  EXPECT_EQ(w.censored(), 1);
  EXPECT_EQ(w.never_dispatched(), 1);
  EXPECT_EQ(w.errors_by_class().at("http_503"), 1);
  EXPECT_EQ(w.errors_by_class().at("timeout"), 1);
}

TEST(StreamAccountingTest, TtftAndInterChunkGapsAreRecordedFromTheIntendedTime) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  absl::Duration t = Milliseconds(100);
  a.OnScheduled(t);
  a.OnFirstChunk(t, t + Milliseconds(40));
  a.OnChunkGap(t, Milliseconds(25));
  a.OnChunkGap(t, absl::ZeroDuration(), 2);  // two more in the same read
  a.OnSuccess(t, t + Milliseconds(5), t + Milliseconds(70), 4, t + Milliseconds(40));
  v1::StepResult r = BuildStepResult(a.measured(), 1, Seconds(1));
  EXPECT_NEAR(r.ttft().p50_ms(), 40, 0.4);
  EXPECT_EQ(a.measured().inter_chunk.count(), 3);
  EXPECT_NEAR(r.inter_chunk().max_ms(), 25, 0.25);
  EXPECT_EQ(r.output_chunks(), 4);
  auto ttft = LatencyHistogram::Deserialize(r.ttft_histogram());
  ASSERT_TRUE(ttft.ok());
  EXPECT_EQ(ttft->count(), 1);
}

TEST(TallyMergeTest, MergeEqualsRecordAllAcrossThreeLoopsForEveryField) {
  WindowLayout layout(Milliseconds(200), Seconds(1), Milliseconds(250));
  StepAccounting one(layout),
      loops[3] = {StepAccounting(layout), StepAccounting(layout), StepAccounting(layout)};
  uint64_t x = 12345;
  auto next = [&x] {  // a tiny deterministic LCG: varied but reproducible outcomes
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  for (int i = 0; i < 3000; ++i) {
    absl::Duration t = absl::Microseconds(400) * i;
    StepAccounting& loop = loops[i % 3];
    uint64_t r = next();
    for (StepAccounting* a : {&one, &loop}) {
      a->OnScheduled(t);
      if (r % 17 == 0) {
        a->OnDropped(t);
        continue;
      }
      a->OnDispatched(t, t + absl::Microseconds(r % 900));
      a->OnSent(t, t + absl::Microseconds(r % 900));
      if (r % 13 == 0) {
        a->OnError(t, r % 2 ? "http_500" : "connect");
      } else if (r % 11 == 0) {
        a->OnTimeout(t);
      } else {
        a->OnFirstChunk(t, t + absl::Microseconds(r % 5000));
        a->OnChunkGap(t, absl::Microseconds(r % 777), 1 + r % 3);
        a->OnSuccess(t, t + absl::Microseconds(r % 900), t + absl::Microseconds(r % 100000),
                     1 + r % 3, t + absl::Microseconds(r % 5000));
      }
    }
  }
  StepTally merged;
  for (const StepAccounting& loop : loops) merged.Merge(loop.measured());
  const StepTally& all = one.measured();
  EXPECT_EQ(merged.scheduled, all.scheduled);
  EXPECT_EQ(merged.sent, all.sent);
  EXPECT_EQ(merged.completed, all.completed);
  EXPECT_EQ(merged.errors, all.errors);
  EXPECT_EQ(merged.timeouts, all.timeouts);
  EXPECT_EQ(merged.dropped, all.dropped);
  EXPECT_EQ(merged.output_chunks, all.output_chunks);
  EXPECT_EQ(merged.errors_by_class, all.errors_by_class);
  EXPECT_TRUE(merged.latency == all.latency);
  EXPECT_TRUE(merged.service_latency == all.service_latency);
  EXPECT_TRUE(merged.send_skew == all.send_skew);
  EXPECT_TRUE(merged.ttft == all.ttft);
  EXPECT_TRUE(merged.inter_chunk == all.inter_chunk);
  // Percentiles read after the merge equal those of recording everything in one place.
  EXPECT_EQ(merged.latency.Percentile(99.9), all.latency.Percentile(99.9));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      BuildStepResult(merged, 1, Seconds(1)), BuildStepResult(all, 1, Seconds(1))));

  std::vector<WindowTally> expected = one.TakeClosedWindows(absl::InfiniteDuration());
  std::vector<std::vector<WindowTally>> per_loop;
  for (StepAccounting& loop : loops) {
    per_loop.push_back(loop.TakeClosedWindows(absl::InfiniteDuration()));
  }
  ASSERT_EQ(expected.size(), 5u);
  for (size_t w = 0; w < expected.size(); ++w) {
    WindowTally window = per_loop[0][w];
    window.Merge(per_loop[1][w]);
    window.Merge(per_loop[2][w]);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(ToWindowMetrics(window),
                                                                   ToWindowMetrics(expected[w])))
        << "window " << w;
  }
}

}  // namespace
}  // namespace vanguard::replayer
