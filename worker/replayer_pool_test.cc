// ReplayerPool over fake replayer clients: how a step is split, how the shards' windows and
// results come back as one step, and how a failing shard or a cancel ends the step whole.
#include "worker/replayer_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;

// A replayer that answers from a script: windows, then a result or an error. With
// `wait_for_cancel`, it streams its windows and then waits (spinning, no sleep) until its
// token is cancelled, and ends CANCELLED as a real call would. Thread-safe.
class FakeReplayer : public ReplayerClient {
 public:
  explicit FakeReplayer(int windows, int64_t per_window = 10, int64_t latency_us = 1000)
      : windows_(windows), per_window_(per_window), latency_us_(latency_us) {}

  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override {
    {
      absl::MutexLock lock(&mu_);
      requests_.push_back(request);
    }
    if (before_) before_();
    ExecutedStep out;
    out.request = request;
    LatencyHistogram step;
    for (int i = 0; i < windows_; ++i) {
      LatencyHistogram h;
      h.RecordN(latency_us_, per_window_);
      step.Merge(h);
      vanguard::v1::WindowMetrics w;
      w.set_index(i);
      w.set_scheduled(per_window_);
      w.set_completed(per_window_);
      w.set_latency_histogram(h.Serialize());
      if (on_window) on_window(w);
    }
    if (wait_for_cancel_) {
      while (cancel == nullptr || !cancel->IsCancelled()) std::this_thread::yield();
      return absl::CancelledError("replayer RunStep: cancelled");
    }
    if (!fail_.ok()) return fail_;
    out.result.set_target_qps(request.rate_qps());
    *out.result.mutable_measured() = ToProtoDuration(absl::Seconds(windows_));
    out.result.set_scheduled(step.count());
    out.result.set_completed(step.count());
    out.result.set_latency_histogram(step.Serialize());
    out.result.set_client_valid(valid_);
    out.result.set_max_client_cpu_share(loop_share_);
    if (!valid_) out.result.set_client_invalid_reason("3 requests dropped");
    return out;
  }

  std::vector<vanguard::v1::RunStepRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  int windows_;
  int64_t per_window_;
  int64_t latency_us_;
  bool valid_ = true;
  bool wait_for_cancel_ = false;
  double loop_share_ = 0;  // the busiest loop's share of a core it reports (0: unknown)
  absl::Status fail_;
  std::function<void()> before_;

 private:
  mutable absl::Mutex mu_;
  std::vector<vanguard::v1::RunStepRequest> requests_ ABSL_GUARDED_BY(mu_);
};

vanguard::v1::RunStepRequest Step() {
  vanguard::v1::RunStepRequest r;
  r.set_target("http://127.0.0.1:8000");
  r.set_rate_qps(900);
  r.set_seed(77);
  r.set_schedule(vanguard::v1::SCHEDULE_POISSON);
  return r;
}

TEST(ReplayerPoolTest, EachReplayerRunsOneShardOfTheSameStep) {
  FakeReplayer a(2), b(2), c(2);
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}, {"c:3", &c}});
  ASSERT_TRUE(pool.Execute(Step(), nullptr, nullptr).ok());
  FakeReplayer* fakes[] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(fakes[i]->requests().size(), 1u);
    const vanguard::v1::RunStepRequest& r = fakes[i]->requests()[0];
    EXPECT_EQ(r.shard(), i);
    EXPECT_EQ(r.shard_count(), 3);
    // The whole step's rate and seed: the replayer takes its 1/k share of the schedule.
    EXPECT_EQ(r.rate_qps(), 900);
    EXPECT_EQ(r.seed(), 77u);
  }
}

TEST(ReplayerPoolTest, APoolOfOneOrAClosedLoopRunsTheRequestAsItIs) {
  FakeReplayer only(1);
  ReplayerPool one({{"a:1", &only}});
  ASSERT_TRUE(one.Execute(Step(), nullptr, nullptr).ok());
  EXPECT_EQ(only.requests()[0].shard_count(), 0);

  FakeReplayer a(1), b(1);
  ReplayerPool two({{"a:1", &a}, {"b:2", &b}});
  vanguard::v1::RunStepRequest closed = Step();
  closed.set_concurrency(8);
  ASSERT_TRUE(two.Execute(closed, nullptr, nullptr).ok());
  EXPECT_EQ(a.requests().size(), 1u);
  EXPECT_EQ(a.requests()[0].concurrency(), 8);
  EXPECT_TRUE(b.requests().empty());
}

// How many shards each fake ran, and with how many shards in all.
std::vector<int> ShardCounts(const std::vector<FakeReplayer*>& fakes, size_t call) {
  std::vector<int> out;
  for (FakeReplayer* f : fakes) {
    out.push_back(f->requests().size() > call ? std::max(1, f->requests()[call].shard_count()) : 0);
  }
  return out;
}

TEST(ReplayerPoolTest, KIsChosenFromTheRateAndEachReplayersMeasuredHeadroom) {
  FakeClock clock;
  FakeReplayer a(1), b(1), c(1);
  for (FakeReplayer* f : {&a, &b, &c}) f->loop_share_ = 0.25;
  c.loop_share_ = 0.5;  // a busier machine under c
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}, {"c:3", &c}}, {.clock = &clock});
  vanguard::v1::RunStepRequest step = Step();  // 900 req/s

  // Nothing measured yet: every replayer, 300 req/s each.
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(ShardCounts({&a, &b, &c}, 0), (std::vector<int>{3, 3, 3}));
  // 300 req/s at a quarter of a core: 600 at half (kTargetLoopShare); c only 300.
  EXPECT_EQ(pool.headroom().Capacity("a:1"), 600);
  EXPECT_EQ(pool.headroom().Capacity("c:3"), 300);

  // 1000 req/s: a and b carry 500 each; c is left out.
  step.set_rate_qps(1000);
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(ShardCounts({&a, &b, &c}, 1), (std::vector<int>{2, 2, 0}));
  EXPECT_EQ(b.requests()[1].shard(), 1);

  // 200 req/s: one replayer (the request as it is, no shard), the one with most headroom.
  step.set_rate_qps(200);
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  ASSERT_EQ(a.requests().size(), 3u);
  EXPECT_EQ(a.requests()[2].shard_count(), 0);
  EXPECT_EQ(b.requests().size(), 2u);

  // More than all of them carry: every replayer.
  step.set_rate_qps(5000);
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(c.requests().size(), 2u);
  EXPECT_EQ(c.requests()[1].shard_count(), 3);
}

TEST(ReplayerPoolTest, TheSpecsReplayersAndStaleEstimatesOverrideTheHeadroom) {
  FakeClock clock;
  FakeReplayer a(1), b(1), c(1);
  for (FakeReplayer* f : {&a, &b, &c}) f->loop_share_ = 0.1;
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}, {"c:3", &c}}, {.clock = &clock});
  vanguard::v1::RunStepRequest step = Step();
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());  // all three: measured
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());  // 900 fits on one
  EXPECT_EQ(b.requests().size(), 1u);

  step.set_replayers(2);  // the spec asks for two: the first two
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(b.requests().size(), 2u);
  EXPECT_EQ(b.requests()[1].shard_count(), 2);
  EXPECT_EQ(c.requests().size(), 1u);
  step.set_replayers(7);  // more than the pool: all of it
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(c.requests().back().shard_count(), 3);

  // Estimates older than kMaxAge are forgotten: every replayer again.
  step.set_replayers(0);
  clock.Advance(ReplayerHeadroom::kMaxAge + absl::Seconds(1));
  EXPECT_FALSE(pool.headroom().Capacity("a:1").has_value());
  ASSERT_TRUE(pool.Execute(step, nullptr, nullptr).ok());
  EXPECT_EQ(c.requests().back().shard_count(), 3);
}

TEST(ReplayerPoolTest, WindowsArriveMergedInOrderOnTheCallersThread) {
  FakeReplayer a(3, 10, 1000), b(3, 30, 9000);
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}});
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<vanguard::v1::WindowMetrics> seen;
  bool on_caller = true;
  absl::StatusOr<ExecutedStep> step =
      pool.Execute(Step(), nullptr, [&](const vanguard::v1::WindowMetrics& w) {
        on_caller = on_caller && std::this_thread::get_id() == caller;
        seen.push_back(w);
      });
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(on_caller);
  ASSERT_EQ(seen.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(seen[i].index(), i);
    EXPECT_EQ(seen[i].completed(), 40);
    // 30 of 40 at 9 ms: the merged p50 is the slow shard's, not an average.
    EXPECT_NEAR(seen[i].latency().p50_ms(), 9.0, 0.05);
  }
  EXPECT_EQ(step->windows.size(), 3u);
  EXPECT_EQ(step->result.completed(), 120);
  EXPECT_EQ(step->request.shard_count(), 0);  // the step as asked, not a shard of it
}

TEST(ReplayerPoolTest, AnInvalidShardMakesTheStepInvalidNamingItsReplayer) {
  FakeReplayer a(1), b(1);
  b.valid_ = false;
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}});
  absl::StatusOr<ExecutedStep> step = pool.Execute(Step(), nullptr, nullptr);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_FALSE(step->result.client_valid());
  EXPECT_THAT(step->result.client_invalid_reason(),
              HasSubstr("replayer b:2 (shard 2 of 2): 3 requests dropped"));
}

TEST(ReplayerPoolTest, AShardThatFailsFailsTheWholeStepAndStopsTheOthers) {
  FakeReplayer a(2), b(1), c(2);
  a.wait_for_cancel_ = true;
  c.wait_for_cancel_ = true;
  b.fail_ = absl::UnavailableError("replayer RunStep: Socket closed");
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}, {"c:3", &c}});
  int windows = 0;
  absl::StatusOr<ExecutedStep> step =
      pool.Execute(Step(), nullptr, [&](const vanguard::v1::WindowMetrics&) { ++windows; });
  // UNAVAILABLE, as from one replayer: the test runner retries the step whole.
  EXPECT_EQ(step.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(step.status().message(), HasSubstr("replayer b:2 (shard 2 of 3)"));
  EXPECT_THAT(step.status().message(), HasSubstr("Socket closed"));
  EXPECT_LE(windows, 1);  // only window 0, which every shard closed
}

TEST(ReplayerPoolTest, TheCallersCancelStopsEveryShard) {
  CancellationToken cancel;
  FakeReplayer a(1), b(1);
  a.wait_for_cancel_ = true;
  b.wait_for_cancel_ = true;
  a.before_ = [&cancel] { cancel.Cancel(); };
  ReplayerPool pool({{"a:1", &a}, {"b:2", &b}}, {.cancel_poll = absl::Milliseconds(1)});
  absl::StatusOr<ExecutedStep> step = pool.Execute(Step(), &cancel, nullptr);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kCancelled);

  // Cancelled before it starts: no shard runs.
  FakeReplayer c(1), d(1);
  ReplayerPool later({{"c:1", &c}, {"d:2", &d}});
  EXPECT_EQ(later.Execute(Step(), &cancel, nullptr).status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(c.requests().empty());
}

}  // namespace
}  // namespace vanguard::worker
