// Runs one leased test to its end: asks the strategy for a rate, runs the step on the
// replayer, judges it against the model's SLO, reports it, and finally completes the test
// with the strategy's estimate.
//
//   TestRunner runner(&orchestrator, &executor, Clock::Real(), {.worker_id = "w1"});
//   TestRunOutcome outcome = runner.Run(lease_response);
//
// Outcomes the user notices:
//  - a test leased again after an earlier attempt of it ended (its worker died and the lease
//    expired, or the lease was given back) resumes: the steps the earlier attempts completed
//    (lease.test.steps; an interrupted step is measured again) are fed to the strategy in
//    order, without running them, and the test goes on from the next step index. While the
//    strategy asks for the stored steps' rates, each is taken as measured; from the first
//    step it would not have asked for (a worker of another version), the rest is measured
//    again under the same indices;
//  - every step is reported (ReportStep) with increasing index and the lease's attempt;
//  - the test is completed with a TestResult (estimate, confidence, steps, duration, and how
//    long the model took to warm up at the start: MeasuredStep.model_warmup of the first step);
//  - while a step is measured, its windows reach the orchestrator within about a second
//    (ReportProgress, at most one call per progress_interval, best effort: see
//    progress_reporter.h), so watchers see the step in flight;
//  - a heartbeat reply with cancel_requested stops the step in flight and completes the
//    test with the error "cancelled by user";
//  - FAILED_PRECONDITION (lease lost, stale fencing token) from any call abandons the
//    test at once, without completing it (the new lease holder owns it);
//  - a replayer that is UNAVAILABLE is retried twice with backoff, then the test is
//    completed with the error;
//  - a replica-loss step (RunStep::removal): the removal URL is POSTed just before the step,
//    which goes to every endpoint but the removed one; after the step is reported, the
//    restore URL when there is one. A hook that fails (refused by the target policy,
//    unreachable, not 2xx) completes the test with the error ("step 4: replica_loss.remove_url:
//    POST host:port: answered HTTP 500");
//  - a version-transition step (RunStep::restart): the restart URL is POSTed just before the
//    step, which goes to every endpoint; a failed POST completes the test the same way
//    ("step 5: version_transition.restart_urls[1]: ...");
//  - before its first step the replayers are made ready for the test
//    (ReplayerClient::BeginTest with TestSpec.replayers: a DNS pool is resolved again, and
//    waited for until it has that many replayers), while the lease is kept; when that fails
//    the test is completed with the error ("FAILED_PRECONDITION: replayer pool ...") and no
//    step runs; a cancel or Stop() during the wait ends the test as for a step; when the test
//    runs on fewer replayers than it wants, its result says so (a drift flag "ran on 2 of
//    the 4 replayers the test wants: ...");
//  - Stop() (SIGTERM) stops the step in flight, reports it with Step.interrupted (what was
//    measured until then, never judged), gives the lease back (ReleaseTest) so another
//    worker can retry the test at once, and returns kReleased; all within
//    shutdown_timeout. When the orchestrator cannot be reached in that time the runner
//    returns kStopped and the lease expires as before. A lease handed to a stopped runner
//    is given back at once.
//
// Run() is called from one thread (the lease loop's); Stop() from any thread.
#ifndef VANGUARD_WORKER_TEST_RUNNER_H_
#define VANGUARD_WORKER_TEST_RUNNER_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"
#include "worker/cancellation.h"
#include "worker/controller_rate_source.h"
#include "worker/health_assessor.h"
#include "worker/http_get.h"
#include "worker/measured_step_runner.h"
#include "worker/metrics_collector.h"
#include "worker/orchestrator_client.h"
#include "worker/progress_reporter.h"
#include "worker/replica_gauges.h"
#include "worker/step_executor.h"
#include "worker/step_judge.h"
#include "worker/worker_metrics.h"

namespace vanguard::worker {

class LeaseKeeper;

struct TestRunnerOptions {
  std::string worker_id;
  absl::Duration lease_duration = absl::Seconds(10);
  // Replayer UNAVAILABLE / DEADLINE_EXCEEDED: retries per step, backoff doubling from
  // retry_backoff.
  int max_step_retries = 2;
  absl::Duration retry_backoff = absl::Seconds(1);
  // A step whose load generator was disturbed from outside (other processes held the CPUs:
  // the replayer's verdict says so) says nothing about the model: the runner pauses
  // outside_pause and measures it again, at most max_outside_pauses times a step, without
  // the strategy seeing it (a rate the client could not hold for its own reasons still counts).
  // Not a load shape's phase (RunStep::as_is): the deployment it drove has scaled since.
  int max_outside_pauses = 3;
  absl::Duration outside_pause = absl::Seconds(10);
  // Orchestrator UNAVAILABLE on ReportStep/CompleteTest: attempts before giving up (the
  // lease then expires and the test is retried).
  int max_report_attempts = 5;
  // After Stop(): how long reporting the interrupted step and releasing the lease may take
  // together (each call's deadline is what is left of it).
  absl::Duration shutdown_timeout = absl::Seconds(10);
  // Pause between attempts of those calls while the orchestrator is UNAVAILABLE.
  absl::Duration shutdown_retry = absl::Milliseconds(500);
  // Heartbeat from a background thread too, not only between steps and per window.
  bool heartbeat_thread = true;
  // Live progress of the step in flight (ReportProgress), at most one call this often.
  bool report_progress = true;
  absl::Duration progress_interval = absl::Seconds(1);
  // One line per step and per test event; nullable.
  std::function<void(const std::string&)> log;
  // How each step is measured (warmup, steady state, closed-loop ablation).
  MeasuredStepOptions measured;
  // Health engine options (hysteresis, p99-only ablation).
  HealthAssessorOptions health;
  // Fetches the predictor's metrics page for a model; null: gauges are not scraped.
  std::function<MetricsCollector::Fetcher(const vanguard::v1::Model&)> metrics_fetcher;
  // Fetches one replica's metrics page by URL; for a model with several endpoints each
  // endpoint's page is scraped with every measured window (replica_gauges.h). Null: not.
  ReplicaGaugeCollector::FetcherFor replica_metrics_fetcher;
  // Fetches an autoscaler's target rate (direct controller); null: HttpFetch.
  UrlFetcher controller_fetcher;
  // POSTs the fault hooks a replica-loss or version-transition test names (remove_url,
  // restore_url, restart_urls); null:
  // PolicyHttpPoster(TargetPolicy::Default()), loopback only.
  UrlPoster fault_poster;
  // Steps run and replayer errors are counted here; nullptr: no metrics. Must outlive the
  // runner.
  WorkerMetrics* metrics = nullptr;
};

// Every step wants one of these in addition to the report: what the strategy saw.
struct StepRecord {
  vanguard::v1::Step step;
  StepOutcome outcome;
};

enum class TestRunOutcome {
  kSucceeded,  // completed with a result
  kFailed,     // completed with an error
  kCancelled,  // completed with "cancelled by user"
  kAbandoned,  // lease lost or orchestrator unreachable: not completed
  kReleased,   // Stop() called: step in flight reported as interrupted, lease given back
  kStopped,    // Stop() called, but the lease could not be given back: it expires
};

const char* TestRunOutcomeName(TestRunOutcome outcome);

// The Step reported for step `index` of lease `attempt`.
vanguard::v1::Step BuildStepReport(int index, int attempt, const ExecutedStep& executed,
                                   const StepJudgement& judgement);
// The same, with the step's windows (settle windows flagged warmup).
vanguard::v1::Step BuildStepReport(int index, int attempt, const MeasuredStep& measured);

// A step's outcome as stored with its report (Step.outcome), and back: what a later attempt
// of the test feeds its strategy instead of measuring the step again. A step stored without
// Step.outcome gives what its own fields say (the rate, pass, client validity, achieved
// rate, latency, errors, health); what they cannot say keeps StepOutcome's defaults.
vanguard::v1::StrategyOutcome StepOutcomeToProto(const StepOutcome& outcome);
StepOutcome StepOutcomeFromStep(const vanguard::v1::Step& step);

// The Step reported for step `index` when Stop() cut it short: the rate, when it ran, for
// how long, and the windows that had arrived (settle ones flagged warmup); interrupted, not
// passed, never judged.
vanguard::v1::Step BuildInterruptedStepReport(int index, int attempt, double target_qps,
                                              absl::Time start_time, absl::Time end_time,
                                              const std::vector<vanguard::v1::StepWindow>& windows,
                                              const std::string& why);

// The TestResult for a strategy's Done. `first_step` (nullable): the test's first step,
// whose model warmup the result reports (model_warmup; a drift flag when the model was still
// warming when it was measured). `step_ends`: when each step ended, from the test's start
// (InfiniteDuration: unknown); with Done.warming_through_step, the model warmup is at least
// the end of that step, and a drift flag says so.
// An autoscale test's findings as stored in TestResult.autoscale.
vanguard::v1::AutoscaleResult AutoscaleResultOf(const AutoscaleFindings& findings);

vanguard::v1::TestResult BuildTestResult(const Done& done, int steps_taken,
                                         absl::Duration test_duration,
                                         const MeasuredStep* first_step = nullptr,
                                         const std::vector<absl::Duration>& step_ends = {});

// "test 7 step 2: target 400 qps, achieved 399.8 qps, p99 45.1 ms, HEALTHY: pass: ..."
std::string FormatStepLine(int64_t test_id, const vanguard::v1::Step& step);

class TestRunner {
 public:
  // Pointers must outlive the runner.
  TestRunner(OrchestratorClient* orchestrator, ReplayerClient* executor, Clock* clock,
             TestRunnerOptions options);

  // Runs the leased test (lease.test must be set) to one of the outcomes above.
  TestRunOutcome Run(const vanguard::v1::LeaseTestResponse& lease);

  // Sticky: the current Run (if any) stops its step, reports it, releases the lease and
  // returns promptly (kReleased, or kStopped if the orchestrator cannot be reached); later
  // Runs release their lease at once.
  void Stop();

  // Every step the last Run took, as reported and as the strategy saw it (benchmarks).
  const std::vector<StepRecord>& last_steps() const { return last_steps_; }
  // The result the last Run completed its test with (unset if it completed none).
  const std::optional<vanguard::v1::TestResult>& last_result() const { return last_result_; }
  // What the strategy finished the last Run's test with (unset if it completed none).
  const std::optional<Done>& last_done() const { return last_done_; }

 private:
  bool stopped() const;
  void Log(const std::string& line) const;
  // Sleeps on the clock in small slices, giving up early when `cancel` fires or Stop().
  void Backoff(absl::Duration d, CancellationToken* cancel);
  // Retries `call` while it returns a transient error; FAILED_PRECONDITION and NOT_FOUND
  // are returned at once.
  absl::Status CallWithRetries(const std::function<absl::Status()>& call);
  // CompleteTest with an error or a result; kAbandoned when it cannot be delivered.
  TestRunOutcome Complete(const vanguard::v1::CompleteTestRequest& request,
                          TestRunOutcome on_success);
  // After Stop(): reports `pending` (nullable: no step to report) and releases the lease
  // of test_id at attempt, within options_.shutdown_timeout. kReleased, kAbandoned when
  // the lease turns out to be lost, kStopped when the orchestrator cannot be reached.
  // `keeper` (nullable) stops heartbeating before the lease is given back.
  TestRunOutcome ShutDown(int64_t test_id, int32_t attempt,
                          const vanguard::v1::ReportStepRequest* pending, LeaseKeeper* keeper);

  struct TestRun;  // one leased test's state (test_runner.cc)

  // The phases of Run.
  // Resolves what the test needs before its first step (the controller's target, strategy,
  // judge, assessor, collector, step runner); the error to complete the test with, if any.
  std::optional<std::string> SetUp(TestRun& run);
  // Makes the replayers ready for the test (ReplayerClient::BeginTest with spec.replayers and
  // the step token, so a cancel or Stop() ends a wait for the pool); how the test ended when
  // that failed (completed with the error, or interrupted). Called under the lease keeper.
  std::optional<TestRunOutcome> ReadyReplayers(TestRun& run);
  // Why the test must stop now, if it must: Stop() (the lease given back), the lease lost,
  // or a cancel requested (completed as cancelled).
  std::optional<TestRunOutcome> Interruption(TestRun& run);
  // Feeds the steps earlier attempts completed (run.test.steps) to the fresh strategy (see
  // the class comment); the decision for the step after them is left to the caller's loop.
  void Resume(TestRun& run);
  // Runs the step the strategy asked for, reports it and keeps its outcome for the next
  // Next(); how the test ended, when it did.
  std::optional<TestRunOutcome> TakeStep(TestRun& run, const RunStep& step);
  // The step on the replayer, again while it is transiently unavailable (max_step_retries,
  // backoff doubling) and, after a pause, while its load generator was disturbed from
  // outside (max_outside_pauses); its windows, as they arrive, in *windows_so_far.
  absl::StatusOr<MeasuredStep> MeasureWithRetries(
      TestRun& run, const vanguard::v1::RunStepRequest& request, const RunStep& step,
      absl::Time* step_start, std::vector<vanguard::v1::StepWindow>* windows_so_far);
  // A replica loss (RunStep::removal): the step's targets without the removed endpoint;
  // INVALID_ARGUMENT when the request does not list it.
  static absl::Status ExcludeRemoved(const RunStep::ReplicaRemoval& removal,
                                     vanguard::v1::RunStepRequest* request);
  // POSTs a fault hook of the spec's `field` (e.g. "replica_loss.remove_url"); the error to
  // complete the test with, if it failed.
  std::optional<std::string> PostHook(const TestRun& run, int step_index, const std::string& field,
                                      const std::string& url);
  // A phase of a load shape (RunStep::as_is): no warmup, the phase's duration and ramp.
  static void ShapePhase(const RunStep& step, vanguard::v1::RunStepRequest* request);
  // Counts a step that ended (its verdict, its time since `began` on the monotonic clock and,
  // when measured, its rates and p99) in options_.metrics, if any.
  void CountStep(const TestRun& run, absl::Duration began,
                 const absl::StatusOr<MeasuredStep>& executed);
  // A step that could not be measured: after Stop() reported interrupted and the lease given
  // back, else the test completed with the error.
  static bool DisturbedFromOutside(const MeasuredStep& step);
  TestRunOutcome StepFailed(TestRun& run, const absl::Status& status, double rate,
                            absl::Time step_start,
                            const std::vector<vanguard::v1::StepWindow>& windows);
  // Reports a measured step; nullopt once reported (its outcome kept), else how the test
  // ended (lease lost, report refused, stopped).
  std::optional<TestRunOutcome> ReportMeasuredStep(TestRun& run, const MeasuredStep& executed);
  // CompleteTest with the strategy's estimate (and the first step's model warmup).
  TestRunOutcome CompleteWithResult(TestRun& run, const Done& done);
  // CompleteTest with an error; `outcome` when delivered.
  TestRunOutcome CompleteWithError(TestRun& run, const std::string& error, TestRunOutcome outcome);

  OrchestratorClient* const orchestrator_;
  ReplayerClient* const executor_;
  Clock* const clock_;
  const TestRunnerOptions options_;

  std::vector<StepRecord> last_steps_;
  std::optional<vanguard::v1::TestResult> last_result_;
  std::optional<Done> last_done_;

  mutable absl::Mutex mu_;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  CancellationToken* current_step_cancel_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_TEST_RUNNER_H_
