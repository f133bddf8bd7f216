// The worker's Prometheus metrics; see worker_metrics.h. Any thread may record.
#include "worker/worker_metrics.h"

#include <string>

#include "worker/test_runner.h"

namespace vanguard::worker {
namespace {

const prometheus::Histogram::BucketBoundaries& StepBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600};
  return *buckets;
}

constexpr TestRunOutcome kOutcomes[] = {TestRunOutcome::kSucceeded, TestRunOutcome::kFailed,
                                        TestRunOutcome::kCancelled, TestRunOutcome::kAbandoned,
                                        TestRunOutcome::kReleased,  TestRunOutcome::kStopped};

// How the lease of a test that ended with `outcome` ended.
const char* LeaseEnd(TestRunOutcome outcome) {
  switch (outcome) {
    case TestRunOutcome::kSucceeded:
    case TestRunOutcome::kFailed:
    case TestRunOutcome::kCancelled:
      return "completed";
    case TestRunOutcome::kReleased:
      return "released";
    case TestRunOutcome::kAbandoned:
    case TestRunOutcome::kStopped:
      return "lost";
  }
  return "lost";
}

const char* VerdictName(StepVerdict verdict) {
  switch (verdict) {
    case StepVerdict::kPassed:
      return "passed";
    case StepVerdict::kFailed:
      return "failed";
    case StepVerdict::kInterrupted:
      return "interrupted";
    case StepVerdict::kError:
      return "error";
  }
  return "error";
}

prometheus::Gauge& PlainGauge(prometheus::Registry& registry, const std::string& name,
                              const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

WorkerMetrics::WorkerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      leases_(prometheus::BuildCounter()
                  .Name("vanguard_worker_leases_total")
                  .Help("Leases taken by this worker, and how they ended: completed, released "
                        "(given back on shutdown), lost (let go without completing or "
                        "releasing: refused by the orchestrator or unreachable)")
                  .Register(*registry_)),
      tests_(prometheus::BuildCounter()
                 .Name("vanguard_worker_tests_total")
                 .Help("Tests this worker ran, by outcome")
                 .Register(*registry_)),
      steps_(prometheus::BuildCounter()
                 .Name("vanguard_worker_steps_total")
                 .Help("Steps this worker ran, by verdict: passed, failed, interrupted, error "
                       "(the replayer could not run it)")
                 .Register(*registry_)),
      step_duration_(prometheus::BuildHistogram()
                         .Name("vanguard_worker_step_duration_seconds")
                         .Help("One step's time on the worker, settling and retries included")
                         .Register(*registry_)
                         .Add({}, StepBuckets())),
      test_in_flight_(PlainGauge(*registry_, "vanguard_worker_test_in_flight",
                                 "1 while this worker runs a test, else 0")),
      current_test_id_(PlainGauge(*registry_, "vanguard_worker_current_test_id",
                                  "The id of the test this worker runs (0: none)")),
      current_step_(PlainGauge(*registry_, "vanguard_worker_current_step",
                               "The index of the step being measured (0: none)")),
      last_offered_(PlainGauge(*registry_, "vanguard_worker_last_step_offered_qps",
                               "The rate the last measured step offered")),
      last_achieved_(PlainGauge(*registry_, "vanguard_worker_last_step_achieved_qps",
                                "The rate the last measured step achieved")),
      last_p99_(PlainGauge(*registry_, "vanguard_worker_last_step_p99_seconds",
                           "The last measured step's p99 latency")),
      last_slo_p99_(PlainGauge(*registry_, "vanguard_worker_last_step_slo_p99_seconds",
                               "The p99 latency limit of the last measured step's SLO")),
      replayer_errors_(prometheus::BuildCounter()
                           .Name("vanguard_worker_replayer_errors_total")
                           .Help("Replayer calls that failed (each retry counts), by status code")
                           .Register(*registry_)) {
  // Every series exists from the start (reads 0), so rates and panels have a baseline.
  for (const char* event : {"taken", "completed", "released", "lost"}) {
    leases_.Add({{"event", event}});
  }
  for (TestRunOutcome outcome : kOutcomes) tests_.Add({{"outcome", TestRunOutcomeName(outcome)}});
  for (StepVerdict verdict : {StepVerdict::kPassed, StepVerdict::kFailed, StepVerdict::kInterrupted,
                              StepVerdict::kError}) {
    steps_.Add({{"verdict", VerdictName(verdict)}});
  }
  // The codes the runner retries; others appear when they first happen.
  for (absl::StatusCode code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded}) {
    replayer_errors_.Add({{"code", absl::StatusCodeToString(code)}});
  }
}

void WorkerMetrics::RecordLeaseTaken() { leases_.Add({{"event", "taken"}}).Increment(); }

void WorkerMetrics::RecordTestFinished(TestRunOutcome outcome) {
  tests_.Add({{"outcome", TestRunOutcomeName(outcome)}}).Increment();
  leases_.Add({{"event", LeaseEnd(outcome)}}).Increment();
  test_in_flight_.Set(0);
  current_test_id_.Set(0);
  current_step_.Set(0);
}

void WorkerMetrics::RecordTestStarted(int64_t test_id) {
  test_in_flight_.Set(1);
  current_test_id_.Set(static_cast<double>(test_id));
  current_step_.Set(0);
}

void WorkerMetrics::RecordStepStarted(int index) { current_step_.Set(index); }

void WorkerMetrics::RecordStepFinished(StepVerdict verdict, absl::Duration took) {
  steps_.Add({{"verdict", VerdictName(verdict)}}).Increment();
  step_duration_.Observe(absl::ToDoubleSeconds(took));
}

void WorkerMetrics::RecordStepMeasured(double offered_qps, double achieved_qps, absl::Duration p99,
                                       absl::Duration slo_p99) {
  last_offered_.Set(offered_qps);
  last_achieved_.Set(achieved_qps);
  last_p99_.Set(absl::ToDoubleSeconds(p99));
  last_slo_p99_.Set(absl::ToDoubleSeconds(slo_p99));
}

void WorkerMetrics::RecordReplayerError(const absl::Status& error) {
  replayer_errors_.Add({{"code", absl::StatusCodeToString(error.code())}}).Increment();
}

}  // namespace vanguard::worker
