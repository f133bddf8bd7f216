// The orchestrator's Prometheus metrics, registered in one place:
//   vanguard_orchestrator_rpcs_total{method,code}            RPCs answered
//   vanguard_orchestrator_rpc_duration_seconds{method}       RPC latency (histogram)
//   vanguard_orchestrator_lease_wait_seconds                 LeaseTest calls that got a
//                                                            test: time until they got it
//   vanguard_orchestrator_queue_tests{state,priority}        queued/running tests (sampled)
//   vanguard_orchestrator_reaped_leases_total{outcome}       expired leases: requeued,
//                                                            failed, cancelled
//   vanguard_orchestrator_released_leases_total{outcome}     leases workers gave back
//                                                            (ReleaseTest): requeued,
//                                                            cancelled, failed (released
//                                                            too often)
//   vanguard_orchestrator_scheduled_tests_total              tests queued by interval
//                                                            schedules (ScheduleEnqueuer)
//   vanguard_orchestrator_webhook_attempts_total{outcome}    webhook POSTs: delivered,
//                                                            retrying, failed (given up)
//   vanguard_orchestrator_watch_streams                      open WatchTest streams
//
//   OrchestratorMetrics metrics;
//   metrics.RecordRpc("LeaseTest", grpc::StatusCode::OK, absl::Milliseconds(3));
//   exposer.RegisterCollectable(metrics.registry());
//
// Thread-safe: gRPC threads record RPCs and open watch streams, the reaper thread reaped leases,
// the enqueuer and dispatcher threads scheduled tests and webhook attempts, the sampler thread the
// queue depth; Prometheus scrapes from its own thread. Tests read registry() directly.
#ifndef VANGUARD_ORCHESTRATOR_METRICS_H_
#define VANGUARD_ORCHESTRATOR_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/postgres.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace vanguard {

class OrchestratorMetrics {
 public:
  OrchestratorMetrics();

  void RecordRpc(const std::string& method, grpc::StatusCode code, absl::Duration latency);
  void RecordLeaseWait(absl::Duration waited);
  void RecordReaped(int requeued, int failed, int cancelled);
  // What a ReleaseTest that succeeded did to its test (TestRepository::Release).
  enum class ReleaseOutcome { kRequeued, kCancelled, kFailed };
  void RecordReleased(ReleaseOutcome outcome);
  // Tests an interval schedule queued through this replica.
  void RecordScheduled(int queued);
  // A dispatcher pass's webhook attempts by outcome.
  void RecordWebhookAttempts(int delivered, int retrying, int failed);
  // WatchTest streams open on this replica now (WatchStreamLimiter's count).
  void SetOpenWatchStreams(int open);
  // Replaces the queue depth gauges with these (state, priority, count) rows; states or
  // priorities that are gone read 0.
  void SetQueueDepth(const std::vector<std::tuple<std::string, int, int64_t>>& rows);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& rpcs_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Histogram& lease_wait_;
  prometheus::Family<prometheus::Gauge>& queue_tests_;
  prometheus::Family<prometheus::Counter>& reaped_;
  prometheus::Family<prometheus::Counter>& released_;
  prometheus::Counter& scheduled_;
  prometheus::Family<prometheus::Counter>& webhook_attempts_;
  prometheus::Gauge& watch_streams_;

  absl::Mutex mu_;  // guards the label lookups below (Family::Add is thread-safe, but
                    // caching the pointers saves its map lookup on the hot path)
  absl::flat_hash_map<std::string, prometheus::Histogram*> durations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::pair<std::string, int>, prometheus::Counter*> counts_
      ABSL_GUARDED_BY(mu_);
  std::vector<prometheus::Gauge*> depth_gauges_ ABSL_GUARDED_BY(mu_);
};

// Samples queue depth by state and priority into OrchestratorMetrics every interval on a
// background thread (one cheap GROUP BY over the partial indexes). Each sample also tells
// `on_sample` whether the database answered (the binary sets the gRPC health status from it).
// Start/Stop from main; on_sample runs on the sampler thread.
class QueueDepthSampler {
 public:
  QueueDepthSampler(PostgresPool* pool, OrchestratorMetrics* metrics, absl::Duration interval,
                    std::function<void(bool database_ok)> on_sample = nullptr)
      : pool_(pool), metrics_(metrics), interval_(interval), on_sample_(std::move(on_sample)) {}
  ~QueueDepthSampler() { Stop(); }

  absl::Status SampleOnce();
  void Start();
  void Stop();

 private:
  PostgresPool* pool_;
  OrchestratorMetrics* metrics_;
  const absl::Duration interval_;
  const std::function<void(bool)> on_sample_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_METRICS_H_
