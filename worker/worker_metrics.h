// The worker's Prometheus metrics, registered in one place:
//   vanguard_worker_leases_total{event}                  leases taken, and how each ended:
//                                                        completed, released (given back on
//                                                        shutdown), lost (let go without
//                                                        completing or releasing it: refused
//                                                        by the orchestrator or unreachable;
//                                                        it expires or was taken over)
//   vanguard_worker_tests_total{outcome}                 tests run to an outcome (succeeded,
//                                                        failed, cancelled, abandoned,
//                                                        released, stopped: TestRunOutcomeName)
//   vanguard_worker_steps_total{verdict}                 steps run: passed, failed (judged),
//                                                        interrupted (stopped), error (the
//                                                        replayer could not run it)
//   vanguard_worker_step_duration_seconds                one step's time on the worker, settle
//                                                        and retries included (histogram)
//   vanguard_worker_test_in_flight                       1 while a test runs, else 0
//   vanguard_worker_current_test_id                      the test in flight (0: none)
//   vanguard_worker_current_step                         its step being measured (0: none)
//   vanguard_worker_last_step_offered_qps                the last measured step: the rate
//   vanguard_worker_last_step_achieved_qps               offered, the rate achieved, its p99
//   vanguard_worker_last_step_p99_seconds                and the SLO's p99 limit
//   vanguard_worker_last_step_slo_p99_seconds
//   vanguard_worker_replayer_errors_total{code}          replayer calls that failed (each
//                                                        retry counts), by status code
//
//   WorkerMetrics metrics;
//   TestRunnerOptions runner_options{.metrics = &metrics};   // nullptr: no metrics
//   exposer.RegisterCollectable(metrics.registry());
//
// Thread-safe: the lease loop's thread records (the runner runs on it); Prometheus scrapes
// from its own thread. Tests read registry() directly.
#ifndef VANGUARD_WORKER_WORKER_METRICS_H_
#define VANGUARD_WORKER_WORKER_METRICS_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace vanguard::worker {

enum class TestRunOutcome;

// How a step that was run ended, as counted by vanguard_worker_steps_total.
enum class StepVerdict { kPassed, kFailed, kInterrupted, kError };

class WorkerMetrics {
 public:
  WorkerMetrics();

  // LeaseTest handed this worker a test.
  void RecordLeaseTaken();
  // A test's run ended with `outcome`: counts the test and how its lease ended, and clears
  // the test in flight.
  void RecordTestFinished(TestRunOutcome outcome);
  // The runner started working on test `test_id` (its step 0 until the first step starts).
  void RecordTestStarted(int64_t test_id);
  // Step `index` of the test in flight started.
  void RecordStepStarted(int index);
  // A step ended after `took` on the worker's clock.
  void RecordStepFinished(StepVerdict verdict, absl::Duration took);
  // The last measured step's rates, p99 and the SLO's p99 limit.
  void RecordStepMeasured(double offered_qps, double achieved_qps, absl::Duration p99,
                          absl::Duration slo_p99);
  // A replayer call failed with `error` (not OK).
  void RecordReplayerError(const absl::Status& error);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& leases_;
  prometheus::Family<prometheus::Counter>& tests_;
  prometheus::Family<prometheus::Counter>& steps_;
  prometheus::Histogram& step_duration_;
  prometheus::Gauge& test_in_flight_;
  prometheus::Gauge& current_test_id_;
  prometheus::Gauge& current_step_;
  prometheus::Gauge& last_offered_;
  prometheus::Gauge& last_achieved_;
  prometheus::Gauge& last_p99_;
  prometheus::Gauge& last_slo_p99_;
  prometheus::Family<prometheus::Counter>& replayer_errors_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_WORKER_METRICS_H_
