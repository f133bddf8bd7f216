// One leased test, start to finish. See test_runner.h.
#include "worker/test_runner.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/target_policy.h"
#include "worker/lease_keeper.h"
#include "worker/proto_time.h"
#include "worker/strategy.h"

namespace vanguard::worker {
namespace {

constexpr absl::Duration kBackoffSlice = absl::Milliseconds(100);
constexpr absl::Duration kMaxReportBackoff = absl::Seconds(10);

bool IsLeaseLost(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsNotFound(s);
}

bool IsTransient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

}  // namespace

const char* TestRunOutcomeName(TestRunOutcome outcome) {
  switch (outcome) {
    case TestRunOutcome::kSucceeded:
      return "succeeded";
    case TestRunOutcome::kFailed:
      return "failed";
    case TestRunOutcome::kCancelled:
      return "cancelled";
    case TestRunOutcome::kAbandoned:
      return "abandoned";
    case TestRunOutcome::kReleased:
      return "released";
    case TestRunOutcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

vanguard::v1::Step BuildStepReport(int index, int attempt, const ExecutedStep& executed,
                                   const StepJudgement& judgement) {
  const vanguard::v1::StepResult& r = executed.result;
  vanguard::v1::Step step;
  step.set_index(index);
  step.set_attempt(attempt);
  step.set_target_qps(executed.request.rate_qps());
  step.set_achieved_qps(r.achieved_qps());
  *step.mutable_latency() = r.latency();
  *step.mutable_service_latency() = r.service_latency();
  step.set_error_rate(judgement.error_rate);
  step.set_scheduled(r.scheduled());
  step.set_sent(r.sent());
  step.set_completed(r.completed());
  step.set_output_chunks(r.output_chunks());
  step.set_errors(r.errors());
  step.set_timeouts(r.timeouts());
  step.set_dropped(r.dropped());
  step.set_health_state(judgement.health.state);
  step.set_passed(judgement.passed);
  step.set_verdict(judgement.verdict);
  step.set_client_valid(judgement.client_valid);
  *step.mutable_start_time() = ToProtoTimestamp(executed.start_time);
  *step.mutable_end_time() = ToProtoTimestamp(executed.end_time);
  *step.mutable_warmup() = executed.request.warmup();
  // What the replayer actually measured, when it says.
  *step.mutable_duration() = FromProtoDuration(r.measured()) > absl::ZeroDuration()
                                 ? r.measured()
                                 : executed.request.duration();
  step.set_latency_histogram(r.latency_histogram());
  for (const vanguard::v1::EndpointTelemetry& endpoint : r.endpoints()) {
    vanguard::v1::EndpointTelemetry* e = step.add_endpoints();
    *e = endpoint;
    e->clear_latency_histogram();  // the step keeps the merged one; percentiles stay
  }
  step.set_endpoint_imbalance(r.endpoint_imbalance());
  const FleetUtilization utilization = FleetUtilizationOf(step.endpoints());
  step.set_tail_utilization(utilization.tail);
  step.set_mean_utilization(utilization.mean);
  *step.mutable_shards() = r.shards();
  return step;
}

namespace {

// Appends `windows` to the step, numbered from 0 within it.
void AddWindows(const std::vector<vanguard::v1::StepWindow>& windows, vanguard::v1::Step* step) {
  for (int i = 0; i < static_cast<int>(windows.size()); ++i) {
    vanguard::v1::StepWindow* w = step->add_windows();
    *w = windows[i];
    w->set_index(i);
  }
}

}  // namespace

vanguard::v1::Step BuildStepReport(int index, int attempt, const MeasuredStep& measured) {
  vanguard::v1::Step step = BuildStepReport(index, attempt, measured.executed, measured.judgement);
  AddWindows(measured.windows, &step);
  *step.mutable_outcome() = StepOutcomeToProto(measured.outcome);
  return step;
}

vanguard::v1::StrategyOutcome StepOutcomeToProto(const StepOutcome& o) {
  vanguard::v1::StrategyOutcome p;
  p.set_rate_qps(o.rate_qps);
  p.set_passed(o.passed);
  p.set_client_valid(o.client_valid);
  p.set_achieved_qps(o.achieved_qps);
  p.set_offered_qps(o.offered_qps);
  p.set_p50_ms(o.p50_ms);
  p.set_p99_ms(o.p99_ms);
  p.set_error_rate(o.error_rate);
  p.set_health_score(o.health_score);
  p.set_limit_ratio(o.limit_ratio);
  p.set_tail_ratio(o.tail_ratio);
  p.set_tail_samples(o.tail_samples);
  p.set_tail_allowed(o.tail_allowed);
  p.set_passed_apart_from_tail(o.passed_apart_from_tail);
  p.set_tail_ratio_se(o.tail_ratio_se);
  p.set_tail_units(o.tail_units);
  p.set_backlog_rising(o.backlog_rising);
  p.set_health_state(o.health_state);
  p.set_spikes(o.spikes);
  p.set_window_state(o.window_state);
  p.set_goodput(o.goodput);
  p.set_queue_mean(o.queue_mean);
  p.set_queue_samples_fraction(o.queue_samples_fraction);
  p.set_memory_bytes(o.memory_bytes);
  return p;
}

StepOutcome StepOutcomeFromStep(const vanguard::v1::Step& step) {
  StepOutcome o;
  o.windows = ShapeWindowsOf(step.windows(), FromProtoTimestamp(step.start_time()));
  if (!step.has_outcome()) {
    o.rate_qps = step.target_qps();
    o.passed = step.passed();
    o.client_valid = step.client_valid();
    o.achieved_qps = step.achieved_qps();
    o.p50_ms = step.latency().p50_ms();
    o.p99_ms = step.latency().p99_ms();
    o.error_rate = step.error_rate();
    o.health_state = step.health_state();
    return o;
  }
  const vanguard::v1::StrategyOutcome& p = step.outcome();
  o.rate_qps = p.rate_qps();
  o.passed = p.passed();
  o.client_valid = p.client_valid();
  o.achieved_qps = p.achieved_qps();
  o.offered_qps = p.offered_qps();
  o.p50_ms = p.p50_ms();
  o.p99_ms = p.p99_ms();
  o.error_rate = p.error_rate();
  o.health_score = p.health_score();
  o.limit_ratio = p.limit_ratio();
  o.tail_ratio = p.tail_ratio();
  o.tail_samples = p.tail_samples();
  if (p.tail_allowed() > 0) o.tail_allowed = p.tail_allowed();
  o.passed_apart_from_tail = p.passed_apart_from_tail();
  o.tail_ratio_se = p.tail_ratio_se();
  o.tail_units = p.tail_units();
  o.backlog_rising = p.backlog_rising();
  o.health_state = p.health_state();
  o.spikes = p.spikes();
  o.window_state = p.window_state();
  o.goodput = p.goodput();
  o.queue_mean = p.queue_mean();
  o.queue_samples_fraction = p.queue_samples_fraction();
  o.memory_bytes = p.memory_bytes();
  return o;
}

vanguard::v1::Step BuildInterruptedStepReport(int index, int attempt, double target_qps,
                                              absl::Time start_time, absl::Time end_time,
                                              const std::vector<vanguard::v1::StepWindow>& windows,
                                              const std::string& why) {
  const int windows_seen = static_cast<int>(windows.size());
  vanguard::v1::Step step;
  step.set_index(index);
  step.set_attempt(attempt);
  step.set_target_qps(target_qps);
  step.set_interrupted(true);
  step.set_passed(false);
  *step.mutable_start_time() = ToProtoTimestamp(start_time);
  *step.mutable_end_time() = ToProtoTimestamp(end_time);
  const absl::Duration ran = std::max(end_time - start_time, absl::ZeroDuration());
  *step.mutable_duration() = ToProtoDuration(ran);
  step.set_verdict(absl::StrFormat("interrupted after %s (%d window%s received): %s; not judged",
                                   absl::FormatDuration(absl::Trunc(ran, absl::Milliseconds(100))),
                                   windows_seen, windows_seen == 1 ? "" : "s", why));
  AddWindows(windows, &step);  // what was measured before the stop, never judged
  return step;
}

vanguard::v1::AutoscaleResult AutoscaleResultOf(const AutoscaleFindings& f) {
  vanguard::v1::AutoscaleResult r;
  r.set_violation_seconds(f.violation_seconds);
  *r.mutable_scale_up_lag() = ToProtoDuration(absl::Seconds(f.scale_up_lag_s));
  r.set_reached(f.reached);
  r.set_overprovisioned_replica_seconds(f.overprovisioned_replica_seconds);
  r.set_underprovisioned_replica_seconds(f.underprovisioned_replica_seconds);
  r.set_replica_seconds(f.replica_seconds);
  r.set_peak_replicas(f.peak_replicas);
  r.set_measured_seconds(f.measured_seconds);
  r.set_replica_samples(f.replica_samples);
  return r;
}

vanguard::v1::TestResult BuildTestResult(const Done& done, int steps_taken,
                                         absl::Duration test_duration,
                                         const MeasuredStep* first_step,
                                         const std::vector<absl::Duration>& step_ends) {
  vanguard::v1::TestResult result;
  result.set_max_sustainable_qps(done.max_sustainable_qps);
  result.set_converged(done.converged);
  result.set_confidence_low_qps(done.confidence_low_qps);
  result.set_confidence_high_qps(done.confidence_high_qps);
  result.set_steps_taken(steps_taken);
  *result.mutable_test_duration() = ToProtoDuration(test_duration);
  result.set_summary(done.summary);
  result.set_reserve_qps(done.reserve_qps);
  result.set_survivor_qps(done.survivor_qps);
  for (double r : done.ramp_max_qps) result.add_ramp_max_qps(r);
  for (const std::string& f : done.drift_flags) result.add_drift_flags(f);
  result.set_at_least(done.at_least);
  result.set_verification(done.verification);
  if (done.more_time_needed_s > 0) {
    *result.mutable_more_time_needed() = ToProtoDuration(absl::Seconds(done.more_time_needed_s));
  }
  if (done.autoscale) *result.mutable_autoscale() = AutoscaleResultOf(*done.autoscale);
  if (done.replica_loss) *result.mutable_replica_loss() = *done.replica_loss;
  if (done.version_transition) *result.mutable_version_transition() = *done.version_transition;
  if (first_step != nullptr) {
    absl::Duration warmup = first_step->model_warmup;
    if (first_step->model_warming) {
      result.add_drift_flags(
          absl::StrCat("model still warming after ", absl::FormatDuration(warmup),
                       " (its latency was still falling when the first step was measured)"));
    }
    const size_t through = static_cast<size_t>(std::max(0, done.warming_through_step));
    if (through > 0 && through <= step_ends.size() && step_ends[through - 1] > warmup &&
        step_ends[through - 1] != absl::InfiniteDuration()) {
      warmup = step_ends[through - 1];
      result.add_drift_flags(absl::StrCat(
          "model still warming through step ", through, ", at least ", absl::FormatDuration(warmup),
          " into the test (a later reading at its rate read the model faster; its latency had "
          "looked steady to the warmup phase)"));
    }
    *result.mutable_model_warmup() = ToProtoDuration(warmup);
  }
  return result;
}

std::string FormatStepLine(int64_t test_id, const vanguard::v1::Step& step) {
  if (step.interrupted()) {
    return absl::StrFormat("test %d step %d: target %g qps: %s", test_id, step.index(),
                           step.target_qps(), step.verdict());
  }
  absl::string_view health = vanguard::v1::HealthState_Name(step.health_state());
  absl::ConsumePrefix(&health, "HEALTH_STATE_");
  const absl::Duration warmup = FromProtoDuration(step.warmup());
  return absl::StrFormat("test %d step %d: target %g qps, achieved %.1f qps, p99 %.1f ms, %s: %s%s",
                         test_id, step.index(), step.target_qps(), step.achieved_qps(),
                         step.latency().p99_ms(), health, step.verdict(),
                         warmup > absl::ZeroDuration()
                             ? absl::StrCat(" (after ", absl::FormatDuration(warmup), " warmup)")
                             : std::string());
}

TestRunner::TestRunner(OrchestratorClient* orchestrator, ReplayerClient* executor, Clock* clock,
                       TestRunnerOptions options)
    : orchestrator_(orchestrator),
      executor_(executor),
      clock_(clock),
      options_(std::move(options)) {}

void TestRunner::Stop() {
  absl::MutexLock lock(&mu_);
  stop_requested_ = true;
  if (current_step_cancel_ != nullptr) current_step_cancel_->Cancel();
}

bool TestRunner::stopped() const {
  absl::MutexLock lock(&mu_);
  return stop_requested_;
}

void TestRunner::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void TestRunner::Backoff(absl::Duration d, CancellationToken* cancel) {
  SleepUnless(clock_, d, kBackoffSlice,
              [&] { return stopped() || (cancel != nullptr && cancel->IsCancelled()); });
}

absl::Status TestRunner::CallWithRetries(const std::function<absl::Status()>& call) {
  absl::Duration backoff = options_.retry_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::Status s = call();
    if (s.ok() || !IsTransient(s) || attempt >= options_.max_report_attempts || stopped()) {
      return s;
    }
    Log(absl::StrCat("orchestrator call failed (", s.ToString(), "); retrying"));
    Backoff(backoff, nullptr);
    backoff = std::min(backoff * 2, kMaxReportBackoff);
  }
}

TestRunOutcome TestRunner::Complete(const vanguard::v1::CompleteTestRequest& request,
                                    TestRunOutcome on_success) {
  absl::Status s = CallWithRetries([&] { return orchestrator_->CompleteTest(request).status(); });
  if (s.ok()) {
    Log(absl::StrCat("test ", request.test_id(), ": completed (", TestRunOutcomeName(on_success),
                     ")"));
    return on_success;
  }
  if (stopped() && !IsLeaseLost(s)) {
    return ShutDown(request.test_id(), request.attempt(), nullptr, nullptr);
  }
  Log(absl::StrCat("test ", request.test_id(), ": could not complete, abandoning: ", s.ToString()));
  return TestRunOutcome::kAbandoned;
}

TestRunOutcome TestRunner::ShutDown(int64_t test_id, int32_t attempt,
                                    const vanguard::v1::ReportStepRequest* pending,
                                    LeaseKeeper* keeper) {
  const absl::Duration deadline = clock_->Monotonic() + options_.shutdown_timeout;
  // Runs `call` with what is left of the budget as its timeout, again while the
  // orchestrator is unreachable and time remains.
  auto within_budget = [&](const std::function<absl::Status(absl::Duration)>& call) {
    absl::Status s = absl::DeadlineExceededError("shutdown timeout spent");
    while (true) {
      const absl::Duration left = deadline - clock_->Monotonic();
      if (left <= absl::ZeroDuration()) return s;
      s = call(left);
      if (s.ok() || !IsTransient(s)) return s;
      const absl::Duration pause =
          std::min(options_.shutdown_retry, deadline - clock_->Monotonic());
      if (pause <= absl::ZeroDuration()) return s;
      clock_->SleepFor(pause);
    }
  };

  if (pending != nullptr) {
    absl::Status reported = within_budget(
        [&](absl::Duration left) { return orchestrator_->ReportStep(*pending, left); });
    if (IsLeaseLost(reported)) {
      Log(absl::StrCat("test ", test_id, ": lease lost (", reported.ToString(),
                       "); nothing to give back"));
      return TestRunOutcome::kAbandoned;
    }
    if (IsTransient(reported)) {
      Log(absl::StrCat("test ", test_id, ": cannot report step ", pending->step().index(),
                       " while shutting down (", reported.ToString(), "); its lease will expire"));
      return TestRunOutcome::kStopped;
    }
    if (!reported.ok()) {
      // Refused (INVALID_ARGUMENT...): the lease is still worth giving back.
      Log(absl::StrCat("test ", test_id, ": step ", pending->step().index(),
                       " report rejected: ", reported.ToString()));
    }
  }

  // A heartbeat after the release would only be refused.
  if (keeper != nullptr) keeper->StopBackgroundBeats();
  vanguard::v1::ReleaseTestRequest release;
  release.set_test_id(test_id);
  release.set_attempt(attempt);
  release.set_worker_id(options_.worker_id);
  release.set_reason(
      pending != nullptr && pending->step().interrupted()
          ? absl::StrCat("shutting down (step ", pending->step().index(), " interrupted)")
          : "shutting down");
  absl::StatusOr<vanguard::v1::ReleaseTestResponse> released;
  absl::Status s = within_budget([&](absl::Duration left) {
    released = orchestrator_->ReleaseTest(release, left);
    return released.status();
  });
  if (s.ok()) {
    absl::string_view state = vanguard::v1::TestState_Name(released->test().state());
    absl::ConsumePrefix(&state, "TEST_STATE_");
    Log(absl::StrCat("test ", test_id, ": lease given back (test ", absl::AsciiStrToLower(state),
                     ")"));
    return TestRunOutcome::kReleased;
  }
  if (IsLeaseLost(s)) {
    Log(absl::StrCat("test ", test_id, ": lease lost (", s.ToString(), "); nothing to give back"));
    return TestRunOutcome::kAbandoned;
  }
  Log(absl::StrCat("test ", test_id, ": cannot give the lease back (", s.ToString(),
                   "); it will expire"));
  return TestRunOutcome::kStopped;
}

// One leased test's state while Run works on it (see test_runner.h).
struct TestRunner::TestRun {
  TestRun(const vanguard::v1::LeaseTestResponse& lease, absl::Duration start)
      : test(lease.test()), test_id(test.id()), attempt(lease.attempt()), started(start) {}

  const vanguard::v1::Test& test;
  const int64_t test_id;
  const int32_t attempt;
  const absl::Duration started;
  CancellationToken step_cancel;

  std::unique_ptr<Strategy> strategy;
  std::optional<StepJudge> judge;
  std::optional<HealthAssessor> assessor;
  std::optional<MetricsCollector> collector;
  std::optional<ReplicaGaugeCollector> replica_gauges;  // models with several endpoints
  std::optional<MeasuredStepRunner> step_runner;
  std::optional<LeaseKeeper> keeper;
  std::optional<ProgressReporter> progress;  // unset: progress not reported

  StrategyContext context;  // what the strategy was created with (Resume may recreate it)
  std::optional<StepOutcome> last;
  // The test's first step: its model warmup goes into the result (not its windows).
  std::optional<MeasuredStep> first_step;
  // When each step ended (by index - 1), from `started`; InfiniteDuration for a step an
  // earlier attempt measured.
  std::vector<absl::Duration> step_ends;
  // Set when the test runs on fewer replayers than it wants (ReplayerClient::BeginTest).
  std::string replayer_shortfall;
  int index = 1;
  int steps_taken = 0;
};

TestRunOutcome TestRunner::CompleteWithError(TestRun& run, const std::string& error,
                                             TestRunOutcome outcome) {
  vanguard::v1::CompleteTestRequest request;
  request.set_test_id(run.test_id);
  request.set_attempt(run.attempt);
  request.set_error(error);
  Log(absl::StrCat("test ", run.test_id, ": ", error));
  return Complete(request, outcome);
}

std::optional<std::string> TestRunner::SetUp(TestRun& run) {
  const vanguard::v1::Test& test = run.test;
  StrategyContext& context = run.context;
  if (test.spec().has_direct_controller() &&
      test.spec().direct_controller().source_case() !=
          vanguard::v1::DirectControllerStrategy::kTargetQps) {
    absl::StatusOr<double> target = FetchControllerTarget(
        test.spec().direct_controller(),
        options_.controller_fetcher ? options_.controller_fetcher : UrlFetcher(HttpFetch));
    if (!target.ok()) {
      return absl::StrCat("direct_controller: cannot get the autoscaler's target rate: ",
                          target.status().message());
    }
    context.controller_target_qps = *target;
  }
  context.slo_p99_ms =
      absl::ToDoubleMilliseconds(FromProtoDuration(test.model().slo().p99_latency()));
  context.slo_max_error_rate = test.model().slo().max_error_rate();
  context.endpoints.assign(test.model().endpoints().begin(), test.model().endpoints().end());
  absl::StatusOr<std::unique_ptr<Strategy>> strategy = CreateStrategy(test.spec(), context);
  if (!strategy.ok()) return std::string(strategy.status().message());
  run.strategy = std::move(*strategy);
  absl::StatusOr<StepJudge> judge = StepJudge::Create(
      test.model().slo(), std::make_unique<WeightedHealthScorer>(test.model().slo().weights()));
  if (!judge.ok()) return std::string(judge.status().message());
  run.judge.emplace(std::move(*judge));
  absl::StatusOr<HealthAssessor> assessor =
      HealthAssessor::Create(test.model().slo(), options_.health);
  if (!assessor.ok()) return std::string(assessor.status().message());
  run.assessor.emplace(std::move(*assessor));
  if (options_.metrics_fetcher) {
    run.collector.emplace(options_.metrics_fetcher(test.model()), GaugeMappingFor(test.model()));
  }
  if (options_.replica_metrics_fetcher && test.model().endpoints_size() >= 2) {
    run.replica_gauges.emplace(
        std::vector<std::string>(test.model().endpoints().begin(), test.model().endpoints().end()),
        options_.replica_metrics_fetcher, GaugeMappingFor(test.model()));
  }
  run.step_runner.emplace(executor_, &*run.judge, &*run.assessor,
                          run.collector ? &*run.collector : nullptr, test.model().slo(),
                          options_.measured, run.replica_gauges ? &*run.replica_gauges : nullptr);
  if (absl::StatusOr<vanguard::v1::RunStepRequest> probe =
          StepExecutor::BuildRequest(test, /*rate_qps=*/1.0, /*step_index=*/1);
      !probe.ok()) {
    return std::string(probe.status().message());
  }
  return std::nullopt;
}

std::optional<TestRunOutcome> TestRunner::ReadyReplayers(TestRun& run) {
  absl::StatusOr<TestReplayers> replayers =
      executor_->BeginTest(run.test.spec().replayers(), &run.step_cancel);
  if (replayers.ok()) {
    run.replayer_shortfall = replayers->shortfall;
    return std::nullopt;
  }
  if (std::optional<TestRunOutcome> o = Interruption(run)) return o;
  return CompleteWithError(run,
                           absl::StrCat(absl::StatusCodeToString(replayers.status().code()), ": ",
                                        replayers.status().message()),
                           TestRunOutcome::kFailed);
}

std::optional<TestRunOutcome> TestRunner::Interruption(TestRun& run) {
  if (stopped()) return ShutDown(run.test_id, run.attempt, nullptr, &*run.keeper);
  if (run.keeper->lease_lost()) return TestRunOutcome::kAbandoned;
  if (run.keeper->cancel_requested()) {
    return CompleteWithError(run, "cancelled by user", TestRunOutcome::kCancelled);
  }
  return std::nullopt;
}

TestRunOutcome TestRunner::CompleteWithResult(TestRun& run, const Done& done) {
  vanguard::v1::CompleteTestRequest request;
  request.set_test_id(run.test_id);
  request.set_attempt(run.attempt);
  *request.mutable_result() =
      BuildTestResult(done, run.steps_taken, clock_->Monotonic() - run.started,
                      run.first_step ? &*run.first_step : nullptr, run.step_ends);
  if (!run.replayer_shortfall.empty()) {
    request.mutable_result()->add_drift_flags(run.replayer_shortfall);
  }
  last_result_ = request.result();
  last_done_ = done;
  Log(absl::StrFormat("test %d: max sustainable %g qps (%s): %s", run.test_id,
                      done.max_sustainable_qps, done.converged ? "converged" : "not converged",
                      done.summary));
  return Complete(request, TestRunOutcome::kSucceeded);
}

absl::StatusOr<MeasuredStep> TestRunner::MeasureWithRetries(
    TestRun& run, const vanguard::v1::RunStepRequest& request, const RunStep& step,
    absl::Time* step_start, std::vector<vanguard::v1::StepWindow>* windows_so_far) {
  absl::StatusOr<MeasuredStep> executed;
  absl::Duration backoff = options_.retry_backoff;
  int outside_pauses = 0;
  for (int retry = 0;; ++retry) {
    *step_start = clock_->Now();
    windows_so_far->clear();
    auto on_window = [&](const vanguard::v1::StepWindow& w) {
      windows_so_far->push_back(w);
      run.keeper->MaybeBeat();
      if (run.progress) run.progress->OnWindow(w);
    };
    executed = step.as_is ? run.step_runner->RunAsIs(request, &run.step_cancel, on_window)
                          : run.step_runner->Run(request, /*first_step=*/run.steps_taken == 0,
                                                 &run.step_cancel, on_window, step.hold);
    // A phase of a load shape is not measured again: the deployment it drove has moved on
    // (scaled), so a second run would measure something else; the strategy sees the
    // disturbed client instead.
    if (executed.ok() && !step.as_is && DisturbedFromOutside(*executed) &&
        outside_pauses < options_.max_outside_pauses && !run.step_cancel.IsCancelled() &&
        !stopped()) {
      ++outside_pauses;
      --retry;  // not a replayer failure
      Log(absl::StrFormat("test %d step %d: %s; pausing %s and measuring again (%d of %d)",
                          run.test_id, run.index, executed->judgement.verdict,
                          absl::FormatDuration(options_.outside_pause), outside_pauses,
                          options_.max_outside_pauses));
      Backoff(options_.outside_pause, &run.step_cancel);
      run.keeper->MaybeBeat();
      continue;
    }
    if (!executed.ok() && !run.step_cancel.IsCancelled() && options_.metrics != nullptr) {
      options_.metrics->RecordReplayerError(executed.status());
    }
    if (executed.ok() || run.step_cancel.IsCancelled() || !IsTransient(executed.status()) ||
        retry >= options_.max_step_retries) {
      return executed;
    }
    Log(absl::StrFormat("test %d step %d: %s; retry %d of %d in %s", run.test_id, run.index,
                        executed.status().ToString(), retry + 1, options_.max_step_retries,
                        absl::FormatDuration(backoff)));
    Backoff(backoff, &run.step_cancel);
    backoff *= 2;
    run.keeper->MaybeBeat();
  }
}

void TestRunner::CountStep(const TestRun& run, absl::Duration began,
                           const absl::StatusOr<MeasuredStep>& executed) {
  WorkerMetrics* metrics = options_.metrics;
  if (metrics == nullptr) return;
  const absl::Duration took = clock_->Monotonic() - began;
  if (!executed.ok()) {
    const bool interrupted = run.step_cancel.IsCancelled() || stopped();
    metrics->RecordStepFinished(interrupted ? StepVerdict::kInterrupted : StepVerdict::kError,
                                took);
    return;
  }
  const vanguard::v1::StepResult& result = executed->executed.result;
  metrics->RecordStepMeasured(executed->executed.request.rate_qps(), result.achieved_qps(),
                              absl::Microseconds(result.latency().p99_ms() * 1000),
                              FromProtoDuration(run.test.model().slo().p99_latency()));
  metrics->RecordStepFinished(
      executed->judgement.passed ? StepVerdict::kPassed : StepVerdict::kFailed, took);
}

bool TestRunner::DisturbedFromOutside(const MeasuredStep& step) {
  return !step.judgement.client_valid && step.judgement.client_disturbed_from_outside;
}

TestRunOutcome TestRunner::StepFailed(TestRun& run, const absl::Status& status, double rate,
                                      absl::Time step_start,
                                      const std::vector<vanguard::v1::StepWindow>& windows) {
  if (stopped()) {
    vanguard::v1::ReportStepRequest report;
    report.set_test_id(run.test_id);
    report.set_attempt(run.attempt);
    *report.mutable_step() =
        BuildInterruptedStepReport(run.index, run.attempt, rate, step_start, clock_->Now(), windows,
                                   absl::StrCat("worker ", options_.worker_id, " shutting down"));
    Log(FormatStepLine(run.test_id, report.step()));
    return ShutDown(run.test_id, run.attempt, &report, &*run.keeper);
  }
  if (std::optional<TestRunOutcome> o = Interruption(run)) return *o;
  return CompleteWithError(
      run, absl::StrFormat("step %d at %g qps: %s", run.index, rate, status.message()),
      TestRunOutcome::kFailed);
}

std::optional<TestRunOutcome> TestRunner::ReportMeasuredStep(TestRun& run,
                                                             const MeasuredStep& executed) {
  vanguard::v1::ReportStepRequest report;
  report.set_test_id(run.test_id);
  report.set_attempt(run.attempt);
  *report.mutable_step() = BuildStepReport(run.index, run.attempt, executed);
  if (executed.scrape_failures > 0) {
    Log(absl::StrFormat("test %d step %d: %d metrics scrape(s) failed (%s)", run.test_id, run.index,
                        executed.scrape_failures,
                        run.collector ? run.collector->last_error() : std::string()));
  }
  Log(FormatStepLine(run.test_id, report.step()));

  absl::Status reported = CallWithRetries([&] { return orchestrator_->ReportStep(report); });
  if (!reported.ok()) {
    if (stopped() && !IsLeaseLost(reported)) {
      return ShutDown(run.test_id, run.attempt, &report, &*run.keeper);
    }
    if (!IsLeaseLost(reported) && !IsTransient(reported)) {
      // The orchestrator refuses this step (e.g. INVALID_ARGUMENT): retrying the test
      // elsewhere would only repeat it, so fail it with the reason.
      return CompleteWithError(
          run, absl::StrCat("step ", run.index, " report rejected: ", reported.message()),
          TestRunOutcome::kFailed);
    }
    Log(absl::StrCat("test ", run.test_id, ": ",
                     IsLeaseLost(reported) ? "lease lost" : "cannot report", " (",
                     reported.ToString(), "); abandoning"));
    return TestRunOutcome::kAbandoned;
  }
  ++run.steps_taken;
  ++run.index;
  run.step_ends.push_back(clock_->Monotonic() - run.started);
  last_steps_.push_back({report.step(), executed.outcome});
  run.last = executed.outcome;
  if (!run.first_step) {
    run.first_step.emplace();
    run.first_step->model_warmup = executed.model_warmup;
    run.first_step->model_warming = executed.model_warming;
  }
  return std::nullopt;
}

void TestRunner::Resume(TestRun& run) {
  // The stored steps are ordered by index; an interrupted one (and anything after it) is
  // measured again.
  for (const vanguard::v1::Step& stored : run.test.steps()) {
    if (stored.interrupted() || stored.index() != run.index) break;
    const Decision decision = run.strategy->Next(run.last);
    const RunStep* step = std::get_if<RunStep>(&decision);
    if (step == nullptr || std::abs(step->rate_qps - stored.target_qps()) >
                               1e-9 * std::max(1.0, std::abs(stored.target_qps()))) {
      Log(absl::StrFormat(
          "test %d: step %d of attempt %d (%g qps) is not what this strategy asks for next (%s); "
          "measuring from step %d again",
          run.test_id, stored.index(), stored.attempt(), stored.target_qps(),
          step == nullptr ? "done" : absl::StrFormat("%g qps", step->rate_qps), run.index));
      // The strategy has consumed a decision: start it afresh and replay what matched.
      const int matched = run.steps_taken;
      run.strategy = std::move(*CreateStrategy(run.test.spec(), run.context));
      run.last.reset();
      for (int i = 0; i < matched; ++i) {
        run.strategy->Next(run.last);
        run.last = StepOutcomeFromStep(run.test.steps(i));
      }
      return;
    }
    run.last = StepOutcomeFromStep(stored);
    last_steps_.push_back({stored, *run.last});
    run.step_ends.push_back(absl::InfiniteDuration());
    ++run.steps_taken;
    ++run.index;
  }
  if (run.steps_taken > 0) {
    Log(absl::StrCat("test ", run.test_id, ": resuming after step ", run.index - 1,
                     " (measured by earlier attempts)"));
  }
}

std::optional<TestRunOutcome> TestRunner::TakeStep(TestRun& run, const RunStep& step) {
  absl::StatusOr<vanguard::v1::RunStepRequest> request =
      StepExecutor::BuildRequest(run.test, step.rate_qps, run.index);
  if (request.ok() && step.as_is) ShapePhase(step, &*request);
  if (request.ok() && step.removal) {
    if (absl::Status excluded = ExcludeRemoved(*step.removal, &*request); !excluded.ok()) {
      request = excluded;
    }
  }
  if (!request.ok()) {
    return CompleteWithError(run,
                             absl::StrCat("step ", run.index, ": ", request.status().message()),
                             TestRunOutcome::kFailed);
  }
  if (step.removal) {
    if (std::optional<std::string> error =
            PostHook(run, run.index, "replica_loss.remove_url", step.removal->remove_url)) {
      return CompleteWithError(run, *error, TestRunOutcome::kFailed);
    }
  }
  if (step.restart) {
    if (std::optional<std::string> error =
            PostHook(run, run.index, step.restart->field, step.restart->restart_url)) {
      return CompleteWithError(run, *error, TestRunOutcome::kFailed);
    }
  }
  if (run.progress) {
    const absl::Duration planned =
        FromProtoDuration(request->warmup()) +
        FromProtoDuration(request->duration()) * std::max(step.hold, 1.0);
    run.progress->StartStep(run.index, step.rate_qps, planned, run.strategy->StepsLeft(),
                            run.steps_taken);
  }
  if (options_.metrics != nullptr) options_.metrics->RecordStepStarted(run.index);
  const absl::Duration began = clock_->Monotonic();
  absl::Time step_start;
  std::vector<vanguard::v1::StepWindow> windows_so_far;
  absl::StatusOr<MeasuredStep> executed =
      MeasureWithRetries(run, *request, step, &step_start, &windows_so_far);
  if (run.progress) run.progress->EndStep();
  CountStep(run, began, executed);
  if (!executed.ok()) {
    return StepFailed(run, executed.status(), step.rate_qps, step_start, windows_so_far);
  }
  const int index = run.index;
  if (std::optional<TestRunOutcome> o = ReportMeasuredStep(run, *executed)) return o;
  if (step.removal && !step.removal->restore_url.empty()) {
    if (std::optional<std::string> error =
            PostHook(run, index, "replica_loss.restore_url", step.removal->restore_url)) {
      return CompleteWithError(run, *error, TestRunOutcome::kFailed);
    }
  }
  return std::nullopt;
}

absl::Status TestRunner::ExcludeRemoved(const RunStep::ReplicaRemoval& removal,
                                        vanguard::v1::RunStepRequest* request) {
  google::protobuf::RepeatedPtrField<std::string>* targets = request->mutable_targets();
  auto removed = std::find(targets->begin(), targets->end(), removal.removed_endpoint);
  if (removed == targets->end() || targets->size() < 2) {
    return absl::InvalidArgumentError(
        "replica_loss: the step's targets do not list the removed endpoint (a KServe v2 gRPC "
        "model's steps go to its first endpoint only)");
  }
  targets->erase(removed);
  request->set_target(targets->Get(0));
  return absl::OkStatus();
}

std::optional<std::string> TestRunner::PostHook(const TestRun& run, int step_index,
                                                const std::string& field, const std::string& url) {
  static const UrlPoster* const kDefault = new UrlPoster(PolicyHttpPoster(TargetPolicy::Default()));
  const UrlPoster& post = options_.fault_poster ? options_.fault_poster : *kDefault;
  const absl::Status posted = post(url);
  if (posted.ok()) {
    Log(absl::StrFormat("test %d step %d: %s posted", run.test_id, step_index, field));
    return std::nullopt;
  }
  return absl::StrCat("step ", step_index, ": ", field, ": ",
                      absl::StatusCodeToString(posted.code()), ": ", posted.message());
}

void TestRunner::ShapePhase(const RunStep& step, vanguard::v1::RunStepRequest* request) {
  *request->mutable_warmup() = ToProtoDuration(absl::ZeroDuration());
  if (step.duration_s > 0) {
    *request->mutable_duration() = ToProtoDuration(absl::Seconds(step.duration_s));
  }
  if (step.ramp_end_qps > 0) {
    request->set_schedule(vanguard::v1::SCHEDULE_RAMP);
    request->set_ramp_end_qps(step.ramp_end_qps);
  }
}

TestRunOutcome TestRunner::Run(const vanguard::v1::LeaseTestResponse& lease) {
  TestRun run(lease, clock_->Monotonic());
  bool stopped_already;
  {
    absl::MutexLock lock(&mu_);
    stopped_already = stop_requested_;
    if (!stopped_already) current_step_cancel_ = &run.step_cancel;
  }
  // Leased just as the worker was told to stop: give it straight back.
  if (stopped_already) return ShutDown(run.test_id, run.attempt, nullptr, nullptr);
  absl::Cleanup detach_cancel = [this] {
    absl::MutexLock lock(&mu_);
    current_step_cancel_ = nullptr;
  };

  last_steps_.clear();
  last_result_.reset();
  last_done_.reset();
  // A test this worker cannot run fails at once rather than after its lease expires.
  if (std::optional<std::string> error = SetUp(run)) {
    return CompleteWithError(run, *error, TestRunOutcome::kFailed);
  }

  LeaseKeeperOptions keeper_options;
  keeper_options.worker_id = options_.worker_id;
  keeper_options.lease_duration = options_.lease_duration;
  keeper_options.log = options_.log;
  run.keeper.emplace(orchestrator_, clock_, run.test_id, run.attempt, keeper_options,
                     &run.step_cancel);
  if (options_.heartbeat_thread) run.keeper->StartBackgroundBeats();
  if (options_.report_progress) {
    ProgressReporterOptions progress_options;
    progress_options.worker_id = options_.worker_id;
    progress_options.min_interval = options_.progress_interval;
    progress_options.log = options_.log;
    run.progress.emplace(
        [this](const vanguard::v1::ReportProgressRequest& request, absl::Duration timeout) {
          return orchestrator_->ReportProgress(request, timeout);
        },
        clock_, run.test_id, run.attempt, run.started, std::move(progress_options));
  }

  Log(absl::StrCat("test ", run.test_id, ": leased (attempt ", run.attempt, "), model ",
                   run.test.model().name(), ":", run.test.model().version(), ", strategy ",
                   run.strategy->name()));
  // Under the lease keeper: waiting for a DNS pool to grow may outlast the lease.
  if (std::optional<TestRunOutcome> o = ReadyReplayers(run)) return *o;
  Resume(run);
  while (true) {
    run.keeper->MaybeBeat();
    if (std::optional<TestRunOutcome> o = Interruption(run)) return *o;
    const Decision decision = run.strategy->Next(run.last);
    if (const Done* done = std::get_if<Done>(&decision)) return CompleteWithResult(run, *done);
    if (std::optional<TestRunOutcome> o = TakeStep(run, std::get<RunStep>(decision))) return *o;
  }
}

}  // namespace vanguard::worker
