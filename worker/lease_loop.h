// The worker's main loop: lease a test, run it, repeat.
//
//   LeaseLoop loop(&orchestrator, &runner, Clock::Real(), {.worker_id = "w1"});
//   std::thread signals([&] { WaitForSignal(); loop.Stop(); });
//   loop.Run();  // returns after max_tests tests, or promptly after Stop()
//
// - no test ready: waits poll_interval and asks again;
// - orchestrator unreachable (or any LeaseTest error): backs off exponentially up to
//   max_backoff and asks again; it never gives up;
// - tests run one at a time;
// - Stop(): the runner stops the step in flight, reports it as interrupted and gives the
//   lease back (the test is queued again at once), bounded by the runner's
//   shutdown_timeout; then Run() returns. A test leased as Stop() came is given back too.
//
// Run() on one thread; Stop() from any thread.
#ifndef VANGUARD_WORKER_LEASE_LOOP_H_
#define VANGUARD_WORKER_LEASE_LOOP_H_

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "worker/cancellation.h"
#include "worker/orchestrator_client.h"
#include "worker/test_runner.h"
#include "worker/worker_metrics.h"

namespace vanguard::worker {

struct LeaseLoopOptions {
  std::string worker_id;
  absl::Duration lease_duration = absl::Seconds(10);
  absl::Duration poll_interval = absl::Seconds(1);
  // How long each LeaseTest long-polls (LeaseTestRequest.wait). It stays well under the
  // call's deadline (the client's rpc_timeout, 10 s): a test leased at the end of the wait
  // must reach the worker before the deadline, or the lease is committed while the worker
  // sees DEADLINE_EXCEEDED, and the test waits a whole lease for the reaper.
  absl::Duration lease_wait = absl::Seconds(8);
  // Tests to run before Run() returns; 0: no limit.
  int max_tests = 0;
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  std::function<void(const std::string&)> log;  // nullable
  // Leases taken, tests run (by outcome) and the test in flight are recorded here; nullptr:
  // no metrics. Must outlive the loop.
  WorkerMetrics* metrics = nullptr;
};

class LeaseLoop {
 public:
  // Pointers must outlive the loop.
  LeaseLoop(OrchestratorClient* orchestrator, TestRunner* runner, Clock* clock,
            LeaseLoopOptions options);

  void Run();
  void Stop();

  int tests_run() const;

 private:
  bool stopped() const;
  // Sleeps on the clock in small slices so Stop() is honoured promptly.
  void Wait(absl::Duration d);
  // Runs a leased test (lease.test set) on the runner, counting it in the metrics, if any.
  TestRunOutcome RunLeased(const vanguard::v1::LeaseTestResponse& lease);

  OrchestratorClient* const orchestrator_;
  TestRunner* const runner_;
  Clock* const clock_;
  const LeaseLoopOptions options_;
  CancellationToken lease_cancel_;

  mutable absl::Mutex mu_;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  int tests_run_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_LEASE_LOOP_H_
