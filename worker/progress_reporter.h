// Sends the live progress of the step in flight to the orchestrator (ReportProgress) while
// the step is measured, so `vanguard watch` and dashboards see each window within about a
// second instead of when the step ends.
//
//   ProgressReporter progress(send, clock, test_id, attempt, clock->Monotonic(), options);
//   progress.StartStep(/*step_index=*/3, /*offered_qps=*/400, planned, /*steps_left=*/2);
//   ... for each window the step runner measures: progress.OnWindow(window);
//   progress.EndStep();  // the step is reported (ReportStep) or given up
//
// Rate limit: at most one ReportProgress per min_interval (1 s) on the injected clock; the
// windows measured in between are batched into the next call. A step's start is sent at
// once when the interval allows (so watchers see the new rate before its first window),
// else with the next window. Windows are numbered within the step in the order measured
// (a retried step goes on counting).
//
// Best effort: progress never stops or slows a test for long. Each call has rpc_timeout
// (2 s). A transient failure (UNAVAILABLE, DEADLINE_EXCEEDED...) keeps the batch (the
// newest max_batch_windows) and waits retry_after_failure before trying again. A lost lease
// (FAILED_PRECONDITION, NOT_FOUND) or another token (PERMISSION_DENIED) stops the reporter
// for the rest of the test (the heartbeat tells the runner); an orchestrator without the
// RPC (UNIMPLEMENTED) stops it too; INVALID_ARGUMENT drops that batch. Each is logged once.
//
// Not thread-safe: the test runner's thread calls it (the step runner's window callback).
#ifndef VANGUARD_WORKER_PROGRESS_REPORTER_H_
#define VANGUARD_WORKER_PROGRESS_REPORTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::worker {

struct ProgressReporterOptions {
  std::string worker_id;
  absl::Duration min_interval = absl::Seconds(1);
  absl::Duration rpc_timeout = absl::Seconds(2);
  absl::Duration retry_after_failure = absl::Seconds(5);
  // Windows kept for the next call while the orchestrator cannot be reached (oldest
  // dropped); the orchestrator takes at most 600 a call.
  int max_batch_windows = 300;
  std::function<void(const std::string&)> log;  // nullable
};

class ProgressReporter {
 public:
  // Sends one ReportProgress within `timeout`; in the worker OrchestratorClient's.
  using Sender = std::function<absl::Status(const vanguard::v1::ReportProgressRequest&,
                                            absl::Duration timeout)>;

  // `clock` must outlive the reporter. `test_started`: clock->Monotonic() when the lease
  // was taken (progress.elapsed counts from it).
  ProgressReporter(Sender send, Clock* clock, int64_t test_id, int32_t attempt,
                   absl::Duration test_started, ProgressReporterOptions options);

  // A step begins: its index (as ReportStep will carry it), target rate, planned time
  // (warmup + measured part; settling may make it longer) and how many more steps may
  // follow it (nullopt: unknown). `steps_done`: steps finished before it (for the mean step
  // time of the test's estimate).
  void StartStep(int step_index, double offered_qps, absl::Duration planned,
                 std::optional<int> steps_left, int steps_done);

  // A window of the step in flight, as measured (settle windows flagged warmup).
  void OnWindow(const vanguard::v1::StepWindow& window);

  // The step ended (reported, or abandoned): windows not yet sent are dropped, since
  // ReportStep carries them all.
  void EndStep();

  // ReportProgress calls made (answered or not), for tests and logs.
  int64_t calls() const { return calls_; }
  // Lease lost, another token, or an orchestrator without the RPC: nothing more is sent.
  bool stopped() const { return stopped_; }

 private:
  // Sends when a step is in flight, something is pending and the interval allows.
  void MaybeSend();
  vanguard::v1::ReportProgressRequest BuildRequest(absl::Duration now) const;
  void Log(const std::string& line) const;

  const Sender send_;
  Clock* const clock_;
  const int64_t test_id_;
  const int32_t attempt_;
  const absl::Duration test_started_;
  const ProgressReporterOptions options_;

  bool in_step_ = false;
  int step_index_ = 0;
  double offered_qps_ = 0;
  absl::Duration planned_;
  std::optional<int> steps_left_;
  int steps_done_ = 0;
  absl::Duration step_started_;
  int next_window_index_ = 0;
  int64_t step_scheduled_ = 0;
  int64_t step_errors_ = 0;
  vanguard::v1::HealthState health_ = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  std::vector<vanguard::v1::StepWindow> batch_;
  bool dirty_ = false;  // something to send (a new step or windows)
  absl::Duration next_send_ = -absl::InfiniteDuration();
  int64_t calls_ = 0;
  bool stopped_ = false;
  bool failing_ = false;  // the last call failed transiently (logged once until one succeeds)
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_PROGRESS_REPORTER_H_
