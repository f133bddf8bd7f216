// The strategy interface: decides which rate the next step runs at, and when the test is
// done, from the outcome of the previous step alone. Strategies are pure and deterministic
// (no I/O, no clock), so each one is unit-tested as a sequence of Next() calls.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy, CreateStrategy(test.spec()));
//   std::optional<StepOutcome> last;
//   while (true) {
//     Decision d = strategy->Next(last);
//     if (const auto* done = std::get_if<Done>(&d)) { Report(*done); break; }
//     last = RunAndJudge(std::get<RunStep>(d).rate_qps);
//   }
//
// Each strategy lives in its own file (sweep_strategy.h, ...) and is registered in
// CreateStrategy (strategy.cc). Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_STRATEGY_H_
#define VANGUARD_WORKER_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vanguard/v1/test.pb.h"
#include "worker/tail_pooling.h"

namespace vanguard::worker {

// One window of a step measured as is (RunStep::as_is), for the autoscale strategy: how long
// it lasted, what it measured and the replicas scraped when it was reported (a window is
// reported once its requests ended: behind a backlog, well after its end).
struct ShapeWindow {
  double seconds = 0;
  double p99_ms = 0;
  double error_rate = 0;  // (errors + timeouts) / scheduled
  int64_t scheduled = 0;
  int64_t completed = 0;
  double replicas = -1;  // < 0: the replica gauge was not scraped
  // When the gauge was read, in seconds since the step began; < 0: not known (taken as the
  // window's end).
  double scraped_at_s = -1;
};

// What the runner learned from one step, as the strategy sees it. Stored with the step
// (Step.outcome, see StepOutcomeToProto in test_runner.h) so that a later attempt of the test
// resumes from it: a field added here is added there too, or a resumed test loses it.
struct StepOutcome {
  double rate_qps = 0;  // the rate the strategy asked for
  bool passed = false;  // met the SLO (meaningless when !client_valid)
  // False when the load generator itself could not hold the schedule: the step says
  // nothing about the model and must not be judged.
  bool client_valid = true;
  double achieved_qps = 0;
  // What the step's schedule actually offered (scheduled / measured seconds, else the
  // target); 0: not known.
  double offered_qps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double error_rate = 0;
  double health_score = 0;  // H; > 1.0 means overloaded
  // The largest measured / limit over every SLO limit the step was judged on (latency,
  // errors, throughput shortfall, gauges, TTFT, inter-token): > 1 breached, 1 at the limit;
  // 0 when not known.
  double limit_ratio = 0;
  // Tail exceedance over the step's percentile limits (p99 and p50 latency; TTFT and
  // inter-token p99 for streams): the largest fraction of samples over a limit divided by the
  // fraction the percentile allows (1% for a p99, half for a p50), so > 1 breached. tail_samples:
  // requests measured; 0 when not known. The adaptive search pools these across steps
  // (tail_pooling.h).
  double tail_ratio = 0;
  int64_t tail_samples = 0;
  // The fraction of requests the limit behind tail_ratio allows: 1% for the p99 limits, half
  // for a p50 limit, the SLO's max_error_rate when errors make the ratio.
  double tail_allowed = kTailAllowedFraction;
  // Every check other than those tail limits held.
  bool passed_apart_from_tail = false;
  // Uncertainty of tail_ratio by batch means: its standard error over the step's
  // independent units (its judged windows, not its requests: a stall that holds many
  // requests at once makes their latencies correlated). tail_units: the units counted;
  // tail_ratio_se is 0 and meaningless when tail_units < 2.
  double tail_ratio_se = 0;
  int tail_units = 0;
  // The backlog grew through the measured part beyond its noise (queue gauge, else mean
  // latency): near saturation a queue builds for minutes, so a pass with a growing backlog
  // is not evidence the rate holds over the sustained horizon.
  bool backlog_rising = false;
  vanguard::v1::HealthState health_state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  // Windows of the judged part that breached (H >= 0.8) while both neighbours did not:
  // isolated spikes, which the adaptive search may treat as noise.
  int spikes = 0;
  // The highest state the per-window hysteresis machine reached over the judged windows
  // (a sustained state: one bad window alone never escalates it); UNSPECIFIED when the step
  // had no per-window assessment.
  vanguard::v1::HealthState window_state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  // Fraction of scheduled requests that met the SLO (seed 003 goodput); < 0: not measured.
  double goodput = -1;
  // Predictor queue gauge over the judged windows: mean, and the fraction of the expected
  // samples (one per window) that landed. queue_samples_fraction 0: no gauge scraped.
  double queue_mean = 0;
  double queue_samples_fraction = 0;
  // Predictor memory gauge (bytes) mean over the judged windows; < 0: not scraped.
  double memory_bytes = -1;
  // A step run as is: its windows in order. Not in StrategyOutcome: a resumed test rebuilds
  // them from the stored Step.windows (ShapeWindowsOf).
  std::vector<ShapeWindow> windows;
};

// The measured windows of a step that began at `began` as the autoscale strategy reads them
// (StepWindow.start_time is when the window was recorded and its gauges scraped).
std::vector<ShapeWindow> ShapeWindowsOf(
    const google::protobuf::RepeatedPtrField<vanguard::v1::StepWindow>& windows, absl::Time began);

// Inputs a strategy needs that the runner resolves before the test starts (I/O happens in
// the runner, never in a strategy).
struct StrategyContext {
  // Direct controller: the rate the production autoscaler targets, fetched by the runner.
  std::optional<double> controller_target_qps;
  // The model's SLO limits a strategy judges windows by itself (autoscale); 0: no limit.
  double slo_p99_ms = 0;
  double slo_max_error_rate = 0;
  // The model's endpoints (Model.endpoints), for the strategies that act on one replica
  // (replica loss, version transition).
  std::vector<std::string> endpoints;
};

// Run the next step at this offered rate.
struct RunStep {
  double rate_qps = 0;
  // The measured part as a multiple of the usual one: a longer hold where a verdict needs
  // more evidence than a step gives (the adaptive search's confirmation of its estimate).
  double hold = 1;
  // A chunk of the final hold that verifies the estimate (or "at least max_qps") rather than
  // a step of the search: measured and judged like any step.
  bool verification = false;
  // A phase of a load shape (autoscale): measured from its first request, with no warmup,
  // settling or stretching, for duration_s (0: the spec's step_duration), the rate moving
  // linearly to ramp_end_qps over it when that is > 0.
  bool as_is = false;
  double duration_s = 0;
  double ramp_end_qps = 0;
  // A replica loss (replica_loss_strategy.h), with as_is: before the step the runner POSTs
  // remove_url and sends the step to every endpoint of the model but removed_endpoint; after
  // it, it POSTs restore_url when that is set.
  struct ReplicaRemoval {
    std::string remove_url;
    std::string restore_url;
    std::string removed_endpoint;
  };
  std::optional<ReplicaRemoval> removal;
  // A replica switching to a new version (version_transition_strategy.h), with as_is: before
  // the step the runner POSTs restart_url; the step goes to every endpoint of the model. A
  // failed POST names `field` (e.g. "version_transition.restart_urls[1]").
  struct ReplicaRestart {
    std::string restart_url;
    std::string field;
  };
  std::optional<ReplicaRestart> restart;
};

// What an autoscale test found (see autoscale_strategy.h for the definitions).
struct AutoscaleFindings {
  double violation_seconds = 0;
  double scale_up_lag_s = 0;
  bool reached = true;  // every rise of the replicas needed was met
  double overprovisioned_replica_seconds = 0;
  double underprovisioned_replica_seconds = 0;
  double replica_seconds = 0;
  double peak_replicas = 0;
  double measured_seconds = 0;
  int replica_samples = 0;
};

// The test is finished.
struct Done {
  double max_sustainable_qps = 0;
  // The adaptive search: the highest rate judged to pass (the estimate takes the search's
  // resolution off it once a failure brackets it). 0 from the other strategies.
  double best_pass_qps = 0;
  // True when the estimate is bracketed by a pass and a failure as the strategy intends.
  bool converged = false;
  double confidence_low_qps = 0;
  double confidence_high_qps = 0;
  std::string summary;  // one line for humans: how the estimate was reached
  // Ladder calibration: lambda_r and the survivor rate 2 * lambda_r, and each ramp's result.
  double reserve_qps = 0;
  double survivor_qps = 0;
  std::vector<double> ramp_max_qps;
  // Stability: the drift checks that fired. Adaptive: evidence that expired because a later
  // reading contradicted it (the model changed during the test).
  std::vector<std::string> drift_flags;
  // Adaptive: the last of the test's first steps whose reading expired because a later one
  // read the model faster (a cold start the warmup phase took for warm: its latency was flat,
  // then dropped); 0: none. The test runner reports the model warm only after that step
  // (TestResult.model_warmup).
  int warming_through_step = 0;
  // The range's top held: the capacity is at least max_sustainable_qps, not equal to it.
  bool at_least = false;
  // How the estimate was verified, in words (e.g. the hold at the estimate and its reading).
  std::string verification;
  // When !converged: about how much more measuring a run would need to decide, in seconds;
  // 0: not known or not needed.
  double more_time_needed_s = 0;
  // Autoscale tests only.
  std::optional<AutoscaleFindings> autoscale;
  // Replica-loss tests only.
  std::optional<vanguard::v1::ReplicaLossResult> replica_loss;
  // Version-transition tests only.
  std::optional<vanguard::v1::VersionTransitionResult> version_transition;
};

using Decision = std::variant<RunStep, Done>;

class Strategy {
 public:
  virtual ~Strategy() = default;

  // `last` is empty on the first call, then the outcome of the step the previous call
  // asked for. Once Done is returned, every later call returns the same Done.
  virtual Decision Next(const std::optional<StepOutcome>& last) = 0;

  // Short name for logs, e.g. "sweep".
  virtual std::string name() const = 0;

  // About how many more steps the strategy will ask for after the one it asked for last (the
  // step in flight), for the live progress line's time left: what is left of the plan for
  // the strategies that plan their steps (sweep, binary search, stability, direct controller;
  // a rerun of an invalid or tail-only step comes on top), an estimate from the evidence so
  // far for the searches that adapt (adaptive, ladder); 0 once done; nullopt when it cannot
  // say yet. Called between Next calls, on the same thread.
  virtual std::optional<int> StepsLeft() const = 0;
};

// Builds the strategy a test spec asks for. INVALID_ARGUMENT (naming the field) when the
// spec has no strategy, one this worker does not know, or bad parameters.
// FAILED_PRECONDITION when a direct_controller spec names a URL the runner has not resolved
// into context.controller_target_qps.
absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(const vanguard::v1::TestSpec& spec,
                                                         const StrategyContext& context = {});

// Coefficient of variation (stddev / mean) of `values`; 0 for fewer than two or mean 0.
double CoefficientOfVariation(const std::vector<double>& values);

// Steps at one rate judged together: a p99 limit of the long run is over all of their
// requests, and a stall landing in one short step fails that step alone though the long run
// absorbs it. `ratio` pools the steps' tail ratios by their requests (0 without samples);
// `tail_only` counts steps that failed on their tail alone (those are judged by the pooled
// ratio), `other_failures` steps that failed anything else.
struct PooledSteps {
  double ratio = 0;
  int64_t samples = 0;
  int tail_only = 0;
  int other_failures = 0;
  bool held() const { return other_failures == 0 && ratio <= 1; }
};
PooledSteps PoolSteps(const std::vector<StepOutcome>& steps);

// How many steps at one rate a strategy runs before a failure on the tail alone stands
// where no neighbouring rate can lend its requests (the direct controller's target, the
// adaptive search's min_qps): the failing step and three more.
inline constexpr int kTailJudgingSteps = 4;

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STRATEGY_H_
