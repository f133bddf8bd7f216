// MergeShardResults / MergeShardWindows: several replayers' parts of one step read as one
// replayer's whole step (exact histograms, summed counts, per-shard validity, endpoints).
#include "worker/shard_merge.h"

#include <vector>

#include "common/histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LatencyHistogram Values(int64_t from_us, int64_t to_us, int64_t step_us) {
  LatencyHistogram h;
  for (int64_t v = from_us; v <= to_us; v += step_us) h.Record(v);
  return h;
}

// A shard's result at 100 qps over 10 s with these latencies (every request completed).
vanguard::v1::StepResult ShardStep(const LatencyHistogram& latency) {
  vanguard::v1::StepResult r;
  r.set_target_qps(300);
  *r.mutable_measured() = ToProtoDuration(absl::Seconds(10));
  r.set_scheduled(latency.count());
  r.set_sent(latency.count());
  r.set_completed(latency.count());
  r.set_good(latency.count());
  r.set_latency_histogram(latency.Serialize());
  r.set_service_latency_histogram(latency.Serialize());
  r.set_send_skew_histogram(Values(10, 50, 10).Serialize());
  r.set_client_valid(true);
  r.set_threads(1);
  r.set_connection_cap(500);
  return r;
}

TEST(ShardMergeTest, TheMergedStepIsTheUnionOfTheShards) {
  // A fast shard and a slow one: an average of their p99s would be far from the union's.
  const LatencyHistogram fast = Values(1000, 2000, 1);     // 1001 requests, 1-2 ms
  const LatencyHistogram slow = Values(40000, 80000, 40);  // 1001 requests, 40-80 ms
  LatencyHistogram all = fast;
  all.Merge(slow);

  vanguard::v1::StepResult fast_step = ShardStep(fast);
  vanguard::v1::StepResult slow_step = ShardStep(slow);
  fast_step.set_stale_connection_retries(2);
  slow_step.set_stale_connection_retries(3);
  absl::StatusOr<vanguard::v1::StepResult> merged =
      MergeShardResults({{"a:1", fast_step}, {"b:2", slow_step}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->scheduled(), fast.count() + slow.count());
  EXPECT_EQ(merged->stale_connection_retries(), 5);
  EXPECT_EQ(merged->completed(), fast.count() + slow.count());
  EXPECT_DOUBLE_EQ(merged->achieved_qps(), static_cast<double>(all.count()) / 10);
  EXPECT_DOUBLE_EQ(merged->latency().p50_ms(), all.Percentile(50) / 1000);
  EXPECT_DOUBLE_EQ(merged->latency().p99_ms(), all.Percentile(99) / 1000);
  EXPECT_DOUBLE_EQ(merged->service_latency().p99_ms(), all.Percentile(99) / 1000);
  EXPECT_DOUBLE_EQ(merged->latency().max_ms(), 80.0);
  absl::StatusOr<LatencyHistogram> back =
      LatencyHistogram::Deserialize(merged->latency_histogram());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, all);
  EXPECT_DOUBLE_EQ(merged->goodput(), 1.0);
  EXPECT_EQ(merged->threads(), 2);
  EXPECT_EQ(merged->connection_cap(), 1000);
  EXPECT_EQ(merged->connection_waits(), 0);
  EXPECT_TRUE(merged->client_valid());
  EXPECT_DOUBLE_EQ(merged->target_qps(), 300);
  ASSERT_EQ(merged->shards_size(), 2);
  EXPECT_EQ(merged->shards(1).replayer(), "b:2");
  EXPECT_EQ(merged->shards(1).shard(), 1);
  EXPECT_EQ(merged->shards(0).completed() + merged->shards(1).completed(), merged->completed());
}

TEST(ShardMergeTest, OneInvalidShardMakesTheStepInvalidAndIsNamed) {
  vanguard::v1::StepResult good = ShardStep(Values(1000, 2000, 10));
  vanguard::v1::StepResult late = good;
  late.set_client_valid(false);
  late.set_client_invalid_reason("send skew p99 7.000 ms exceeds 5.000 ms");
  late.set_client_invalid_cause(vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  late.set_client_invalid_outside(true);

  absl::StatusOr<vanguard::v1::StepResult> merged =
      MergeShardResults({{"a:1", good}, {"b:2", late}, {"c:3", good}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_FALSE(merged->client_valid());
  EXPECT_THAT(merged->client_invalid_reason(),
              HasSubstr("replayer b:2 (shard 2 of 3): send skew p99 7.000 ms"));
  EXPECT_THAT(merged->client_invalid_reason(), Not(HasSubstr("a:1")));
  EXPECT_EQ(merged->client_invalid_cause(), vanguard::v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  EXPECT_TRUE(merged->client_invalid_outside());

  // An inside cause in any invalid shard: the disturbance is not only from outside.
  vanguard::v1::StepResult busy = late;
  busy.set_client_invalid_outside(false);
  merged = MergeShardResults({{"a:1", late}, {"b:2", busy}});
  ASSERT_TRUE(merged.ok());
  EXPECT_FALSE(merged->client_invalid_outside());
  EXPECT_THAT(merged->client_invalid_reason(), HasSubstr("a:1"));
  EXPECT_THAT(merged->client_invalid_reason(), HasSubstr("b:2"));
}

TEST(ShardMergeTest, EndpointsMergeByTarget) {
  auto endpoint = [](const std::string& target, int64_t n, const LatencyHistogram& h) {
    vanguard::v1::EndpointTelemetry e;
    e.set_target(target);
    e.set_dispatched(n);
    e.set_sent(n);
    e.set_completed(n);
    e.set_peak_in_flight(2);
    e.set_latency_histogram(h.Serialize());
    return e;
  };
  const LatencyHistogram fast = Values(1000, 1100, 1), slow = Values(30000, 30100, 1);
  vanguard::v1::StepResult a = ShardStep(Values(1000, 1100, 1));
  *a.add_endpoints() = endpoint("http://r1", 101, fast);
  *a.add_endpoints() = endpoint("http://r2", 101, slow);
  vanguard::v1::StepResult b = a;
  b.mutable_endpoints(0)->set_dispatched(99);  // shard b gave r1 a little less

  absl::StatusOr<vanguard::v1::StepResult> merged = MergeShardResults({{"a:1", a}, {"b:2", b}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->endpoints_size(), 2);
  EXPECT_EQ(merged->endpoints(0).target(), "http://r1");
  EXPECT_EQ(merged->endpoints(0).dispatched(), 200);
  EXPECT_EQ(merged->endpoints(1).dispatched(), 202);
  EXPECT_EQ(merged->endpoints(1).completed(), 202);
  EXPECT_EQ(merged->endpoints(1).peak_in_flight(), 4);
  EXPECT_DOUBLE_EQ(merged->endpoints(1).achieved_qps(), 20.2);
  EXPECT_DOUBLE_EQ(merged->endpoints(0).share(), 200.0 / 402);
  EXPECT_GT(merged->endpoints(1).latency().p50_ms(), 10 * merged->endpoints(0).latency().p50_ms());
  EXPECT_DOUBLE_EQ(merged->endpoint_imbalance(), 202.0 / 201);
}

TEST(ShardMergeTest, AnUnreadableHistogramIsAnErrorNamingTheShard) {
  vanguard::v1::StepResult broken = ShardStep(Values(1000, 2000, 10));
  broken.set_latency_histogram("not a histogram");
  absl::StatusOr<vanguard::v1::StepResult> merged =
      MergeShardResults({{"a:1", ShardStep(Values(1000, 2000, 10))}, {"b:2", broken}});
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(merged.status().message(), HasSubstr("replayer b:2"));
  EXPECT_FALSE(MergeShardResults({}).ok());
}

TEST(ShardMergeTest, WindowsOfOneIndexMergeExactly) {
  const LatencyHistogram h1 = Values(1000, 3000, 2), h2 = Values(5000, 9000, 4);
  vanguard::v1::WindowMetrics w1, w2;
  for (auto [w, h] : {std::pair{&w1, &h1}, std::pair{&w2, &h2}}) {
    w->set_index(4);
    w->set_scheduled(h->count() + 1);
    w->set_completed(h->count());
    w->set_timeouts(1);
    (*w->mutable_errors_by_class())["timeout"] = 1;
    w->set_offered_qps(2.0 * (h->count() + 1));
    w->set_achieved_qps(2.0 * h->count());
    w->set_latency_histogram(h->Serialize());
  }
  LatencyHistogram all = h1;
  all.Merge(h2);
  absl::StatusOr<vanguard::v1::WindowMetrics> merged = MergeShardWindows({w1, w2});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->index(), 4);
  EXPECT_EQ(merged->completed(), all.count());
  EXPECT_EQ(merged->scheduled(), all.count() + 2);
  EXPECT_EQ(merged->errors_by_class().at("timeout"), 2);
  EXPECT_DOUBLE_EQ(merged->achieved_qps(), 2.0 * all.count());
  EXPECT_DOUBLE_EQ(merged->latency().p99_ms(), all.Percentile(99) / 1000);

  w2.set_index(5);
  EXPECT_FALSE(MergeShardWindows({w1, w2}).ok());
}

}  // namespace
}  // namespace vanguard::worker
