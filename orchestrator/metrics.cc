// Orchestrator Prometheus metrics; see metrics.h. Any thread may record.
#include "orchestrator/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vanguard {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30};
  return *buckets;
}

std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  if (i >= 0 && i < static_cast<int>(std::size(kNames))) return kNames[i];
  return absl::StrCat(i);
}

}  // namespace

OrchestratorMetrics::OrchestratorMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      rpcs_(prometheus::BuildCounter()
                .Name("vanguard_orchestrator_rpcs_total")
                .Help("RPCs answered, by method and gRPC status code")
                .Register(*registry_)),
      rpc_duration_(prometheus::BuildHistogram()
                        .Name("vanguard_orchestrator_rpc_duration_seconds")
                        .Help("RPC latency by method (auth check included)")
                        .Register(*registry_)),
      lease_wait_(prometheus::BuildHistogram()
                      .Name("vanguard_orchestrator_lease_wait_seconds")
                      .Help("How long LeaseTest calls that got a test waited for it")
                      .Register(*registry_)
                      .Add({}, LatencyBuckets())),
      queue_tests_(prometheus::BuildGauge()
                       .Name("vanguard_orchestrator_queue_tests")
                       .Help("Queued and running tests by state and priority (sampled)")
                       .Register(*registry_)),
      reaped_(prometheus::BuildCounter()
                  .Name("vanguard_orchestrator_reaped_leases_total")
                  .Help("Expired leases taken back by this replica's reaper, by outcome")
                  .Register(*registry_)),
      released_(prometheus::BuildCounter()
                    .Name("vanguard_orchestrator_released_leases_total")
                    .Help("Leases workers gave back (ReleaseTest) through this replica, by "
                          "outcome: requeued, cancelled, failed (released too often)")
                    .Register(*registry_)),
      scheduled_(prometheus::BuildCounter()
                     .Name("vanguard_orchestrator_scheduled_tests_total")
                     .Help("Tests interval schedules queued through this replica")
                     .Register(*registry_)
                     .Add({})),
      webhook_attempts_(prometheus::BuildCounter()
                            .Name("vanguard_orchestrator_webhook_attempts_total")
                            .Help("Webhook POSTs made by this replica, by outcome: delivered, "
                                  "retrying, failed (given up)")
                            .Register(*registry_)),
      watch_streams_(prometheus::BuildGauge()
                         .Name("vanguard_orchestrator_watch_streams")
                         .Help("WatchTest streams open on this replica (capped by "
                               "--max_watch_streams and --max_watch_streams_per_token)")
                         .Register(*registry_)
                         .Add({})) {}

void OrchestratorMetrics::SetOpenWatchStreams(int open) {
  watch_streams_.Set(static_cast<double>(open));
}

void OrchestratorMetrics::RecordRpc(const std::string& method, grpc::StatusCode code,
                                    absl::Duration latency) {
  prometheus::Histogram* duration;
  prometheus::Counter* count;
  {
    absl::MutexLock lock(&mu_);
    auto& d = durations_[method];
    if (d == nullptr) d = &rpc_duration_.Add({{"method", method}}, LatencyBuckets());
    duration = d;
    auto& c = counts_[{method, static_cast<int>(code)}];
    if (c == nullptr) c = &rpcs_.Add({{"method", method}, {"code", CodeName(code)}});
    count = c;
  }
  duration->Observe(absl::ToDoubleSeconds(latency));
  count->Increment();
}

void OrchestratorMetrics::RecordLeaseWait(absl::Duration waited) {
  lease_wait_.Observe(absl::ToDoubleSeconds(waited));
}

void OrchestratorMetrics::RecordReaped(int requeued, int failed, int cancelled) {
  reaped_.Add({{"outcome", "requeued"}}).Increment(requeued);
  reaped_.Add({{"outcome", "failed"}}).Increment(failed);
  reaped_.Add({{"outcome", "cancelled"}}).Increment(cancelled);
}

void OrchestratorMetrics::RecordReleased(ReleaseOutcome outcome) {
  const char* label = outcome == ReleaseOutcome::kCancelled ? "cancelled"
                      : outcome == ReleaseOutcome::kFailed  ? "failed"
                                                            : "requeued";
  released_.Add({{"outcome", label}}).Increment();
}

void OrchestratorMetrics::RecordScheduled(int queued) { scheduled_.Increment(queued); }

void OrchestratorMetrics::RecordWebhookAttempts(int delivered, int retrying, int failed) {
  webhook_attempts_.Add({{"outcome", "delivered"}}).Increment(delivered);
  webhook_attempts_.Add({{"outcome", "retrying"}}).Increment(retrying);
  webhook_attempts_.Add({{"outcome", "failed"}}).Increment(failed);
}

void OrchestratorMetrics::SetQueueDepth(
    const std::vector<std::tuple<std::string, int, int64_t>>& rows) {
  absl::MutexLock lock(&mu_);
  for (prometheus::Gauge* gauge : depth_gauges_) gauge->Set(0);
  for (const auto& [state, priority, count] : rows) {
    prometheus::Gauge& gauge =
        queue_tests_.Add({{"state", state}, {"priority", absl::StrCat(priority)}});
    gauge.Set(static_cast<double>(count));
    depth_gauges_.push_back(&gauge);
  }
  // Keep each gauge once.
  std::sort(depth_gauges_.begin(), depth_gauges_.end());
  depth_gauges_.erase(std::unique(depth_gauges_.begin(), depth_gauges_.end()), depth_gauges_.end());
}

absl::Status QueueDepthSampler::SampleOnce() {
  absl::StatusOr<std::vector<std::tuple<std::string, int, int64_t>>> rows =
      pool_->Run([](pqxx::connection& conn)
                     -> absl::StatusOr<std::vector<std::tuple<std::string, int, int64_t>>> {
        pqxx::nontransaction txn(conn);
        pqxx::result result = txn.exec(
            "SELECT state, priority, count(*) FROM tests"
            " WHERE state IN ('queued', 'running') GROUP BY state, priority");
        std::vector<std::tuple<std::string, int, int64_t>> out;
        for (const pqxx::row& row : result) {
          out.emplace_back(row[0].c_str(), row[1].as<int>(), row[2].as<int64_t>());
        }
        return out;
      });
  if (!rows.ok()) return rows.status();
  metrics_->SetQueueDepth(*rows);
  return absl::OkStatus();
}

void QueueDepthSampler::Start() {
  thread_ = std::thread([this] {
    do {
      const absl::Status sampled = SampleOnce();  // the database may be down: next interval
      if (on_sample_) on_sample_(sampled.ok());
    } while (!stop_.WaitForNotificationWithTimeout(interval_));
  });
}

void QueueDepthSampler::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vanguard
