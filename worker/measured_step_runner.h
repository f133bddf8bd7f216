// Runs one strategy step the way the paper says it must be measured: a fixed warmup from the
// registry, then steady-state detection (more settle time while latency or throughput still
// drift, up to a cap), then the measured part; the predictor's gauges are scraped every
// window, every measured window is scored by the HealthAssessor, and the step is judged.
//
//   MeasuredStepRunner runner(&executor, &judge, &assessor, &collector, slo, options);
//   ASSIGN_OR_RETURN(MeasuredStep step, runner.Run(request, /*first_step=*/true, &cancel, beat));
//   strategy->Next(step.outcome);
//
// Settling and continuity. Between two replayer calls the arrivals pause while the last
// responses come back, so the predictor's queue drains: a part measured in a call of its own
// starts from an empty queue however long the settling before it. Every measured call
// therefore carries its settle span as warmup. With steady-state detection on and a warmup
// W > 0 in the request, the step's first call runs max(W, the detector's span) at the step's
// rate as warmup (settle windows, fed to the SteadyStateDetector) and then the measured part.
// If the detector was steady when the measured part began, that part is judged: one call.
// Otherwise the part counts as settling, further chunks (calls of their own) run while the
// windows still drift, until max_settle (max_initial_settle on the test's first step), and
// the step is measured in one more call behind a continuous detector span; after a rate
// change, only when the first call's lead and measured part leave settle time under
// max_settle (else the second call, starting from a
// drained queue behind a shorter lead, could only be less settled than the first: the first
// call's part is judged, the step not steady). Settling stops early when the windows are
// OVERLOADED (hysteresis) and latency is still rising as the measured part begins: the rate
// cannot be carried, and waiting would only reach the cap (not on the test's first step: a
// cold model is overloaded at rates it carries once warm, and a direct-controller or
// stability test starts at its target rate). A backlog left by an earlier overloaded step
// drains with falling latency, and is waited for. Settle windows are kept
// (StepWindow.warmup = true) but not judged.
//
// A backlog left behind. Requests the replayer gave up on (timeouts) may still wait in the
// model's queue: a server need not drop a request whose client left, and at a rate far over
// the capacity thousands can be queued when the call ends. A step after such a call would be
// measured on that backlog (every request timing out behind it, then latency falling as it
// drains), not on its own rate. So when the last call of the previous Run timed requests
// out, and a step has passed before (its median is what drained looks like; a model that has
// answered nothing in time yet may never), Run first drains: calls of a trickle of load
// (kDrainShare of the step's rate, at least kDrainMinQps and at most the rate) until one
// returns every request, none late, with a median latency at most kDrainedP50 times the
// lowest of a passing step so far, or options.max_drain. The probes are not
// part of the step (no windows recorded); MeasuredStep.drain_time says how long it took, and
// the step's verdict ends with it.
//
// The model's own warmup. On the test's first step, whatever its rate, the model may still
// be warming (JIT, autotuning, cache fill) for minutes, its latency falling slowly: too
// slowly for the steady-state test's few windows to see. Its settle windows also feed a
// WarmupDetector (spans of 10 s; see warmup_detector.h), the first call's lead lasts at
// least the detector's evidence (40 s), and the step is steady only when the detector says
// warm as well. While the latency still falls (or no verdict yet) the step may settle up to
// options.model_warmup.max_warmup (300 s) instead of max_initial_settle. A rising latency is
// not a warmup: that step settles as before. MeasuredStep.model_warmup says how long the
// latency kept falling.
//
// Re-measuring. A pass at UNHEALTHY or worse whose windows' mean latency still rises by more
// than kRisingLatencyDrift (beyond its noise) through the measured part is a queue still building
// (near capacity that takes far longer than any settle cap): it is measured once more behind a
// continuous lead as long as everything before it, and judged on that part. Not a hold
// (hold > 1, a confirmation's long part): that already watched the queue for several parts,
// and a second call would restart it from a drained queue.
//
// Tail evidence. The outcome's tail_ratio (the share of requests over a percentile limit
// over the share it allows: the worst of the latency, TTFT and inter-token p99 and the
// latency p50, which allows half; tail_allowed says which share) is what the pooled verdicts
// work from. It counts the measured part only, never the settle span before it
// (docs/strategies.md, "Pooled tail verdicts", says why). Its uncertainty (tail_ratio_se,
// tail_units) is by batch means over the measured windows of the judged call
// (tail_confidence.h), from each window's histogram of the quantity that set tail_ratio
// against the same limit: stalls make requests' latencies correlated, windows are the units.
// Windows without histograms (older replayers) give tail_units 0.
//
// Request lifetime. A step shorter than a few request lifetimes cannot show whether a queue
// builds: a generative model whose requests take 2 s looks healthy for 3 s just above its
// capacity. The runner keeps the typical lifetime (p50 latency of the last steady settle or
// passing step) and stretches, up to caps, every window to at least one lifetime (so the
// drift test spans several), the first settle span to settle_lifetimes of them (a queue near
// capacity builds over many lifetimes while the median does not move) and the measured
// part to at least measured_lifetimes of them.
// For models whose requests take milliseconds nothing changes. With detection off the
// replayer runs the fixed warmup inside the measured call; with fixed_warmup off too (the
// ablation) the step is measured from its first request.
//
// Judging. The StepJudge verdict over the measured part, plus the scraped gauges against the
// SLO's max_queue_depth / max_gpu_utilization (means over the measured windows) and, for
// streams, the step's TTFT and inter-token p99 against ttft_p99 / inter_token_p99. Each
// replica's own gauges (replica_gauges) are reported, not judged. The
// outcome's health_state is the judge's step-level state, window_state the worst state the
// per-window hysteresis reached, spikes the isolated breaching windows. backlog_rising: over
// the judged call's measured windows, the scraped queue gauge (when at least 4 windows have
// it) rises by more than kRisingLatencyDrift of its mean beyond noise and by at least
// kRisingQueueDepth requests; without the gauge, LatencyRising on the windows' mean latency.
//
// Closed loop (ablation only): options.closed_loop runs each step with a fixed concurrency
// instead of a rate, N = ceil(rate * p99 limit) (Little's law at the latency budget); the
// step is then judged against what it achieved, since it offers no rate.
//
// Called from the test runner's thread; `cancel` may fire from any thread.
#ifndef VANGUARD_WORKER_MEASURED_STEP_RUNNER_H_
#define VANGUARD_WORKER_MEASURED_STEP_RUNNER_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/replayer.pb.h"
#include "vanguard/v1/test.pb.h"
#include "worker/cancellation.h"
#include "worker/health_assessor.h"
#include "worker/metrics_collector.h"
#include "worker/replica_gauges.h"
#include "worker/steady_state.h"
#include "worker/step_executor.h"
#include "worker/step_judge.h"
#include "worker/strategy.h"
#include "worker/warmup_detector.h"

namespace vanguard::worker {

struct MeasuredStepOptions {
  // The registry's fixed warmup before each step; off only for the ablation.
  bool fixed_warmup = true;
  // Steady-state detection after the fixed warmup (see Settling above); off: the replayer
  // runs the fixed warmup inside the measured call.
  bool steady_state_detection = true;
  // Drift test of every step's settle windows.
  SteadyStateOptions steady = {.windows = 4};
  // The test's first step also waits for the model's own warmup (see above); its cap
  // (max_warmup) applies while the latency still falls. Off: the first step settles like any
  // other, up to max_initial_settle.
  bool detect_model_warmup = true;
  WarmupDetectorOptions model_warmup;
  // Window length of every replayer call (settle and measured): short windows let the
  // drift test and the hysteresis see enough windows in a short step.
  absl::Duration window = absl::Milliseconds(500);
  absl::Duration settle_chunk = absl::Seconds(2);
  absl::Duration max_settle = absl::Seconds(30);
  absl::Duration max_initial_settle = absl::Seconds(90);
  // The longest wait for a backlog left by requests timed out in the previous step to drain
  // (see "A backlog left behind"); zero: no drain.
  absl::Duration max_drain = absl::Seconds(180);
  // Minimum measured part in request lifetimes (see above), and the caps of the stretching.
  double measured_lifetimes = 10;
  double settle_lifetimes = 10;
  // At low rates windows are lengthened to hold this many arrivals (a median of one or two
  // requests cannot tell drift from noise).
  double min_requests_per_window = 10;
  absl::Duration max_window = absl::Seconds(5);
  absl::Duration max_measured = absl::Seconds(60);
  // At low rates the measured part is lengthened (up to max_measured) to hold this many
  // arrivals: a percentile verdict over a handful of requests is noise.
  double min_measured_requests = 200;
  // A passing step at UNHEALTHY or worse whose mean latency still rises through the
  // measured part is measured once more, and judged on that second part (see Run).
  bool remeasure_rising_near_limit = true;
  // Ablation: closed-loop load (fixed concurrency) instead of open loop.
  bool closed_loop = false;
};

struct MeasuredStep {
  ExecutedStep executed;  // the measured replayer call
  // Settle windows (warmup = true) then measured windows, with gauges and health.
  std::vector<vanguard::v1::StepWindow> windows;
  StepJudgement judgement;
  StepOutcome outcome;
  absl::Duration settle_time;
  // How long the probes draining a backlog the previous step left ran before this step
  // began (their planned parts; not in settle_time).
  absl::Duration drain_time = absl::ZeroDuration();
  bool steady = false;  // the settle phase ended because the windows were steady
  // The settle phase ended early: the health state was OVERLOADED and latency still rising
  // (the rate cannot be carried; waiting for steady state would only reach the cap).
  bool overloaded_while_settling = false;
  // The first measured part passed near the limit with latency still rising; the step was
  // measured again and judged on the second part (the first is among the settle windows).
  bool remeasured = false;
  int64_t scrape_failures = 0;
  // The test's first step only (with detection on): how long the model's latency kept
  // falling from the first settle window on (WarmupDetector::warmup(); 0: warm from the
  // start). model_warming: it was still falling when the step was measured (the cap was
  // reached), so model_warmup is a lower bound (the time watched).
  absl::Duration model_warmup = absl::ZeroDuration();
  bool model_warming = false;
};

class MeasuredStepRunner {
 public:
  // Pointers must outlive the runner; `collector` may be null (no gauges), and
  // `replica_gauges` (each replica's page scraped with every measured window, the means set
  // on the result's endpoints: EndpointTelemetry.scraped) may be null too.
  MeasuredStepRunner(ReplayerClient* executor, StepJudge* judge, HealthAssessor* assessor,
                     MetricsCollector* collector, vanguard::v1::Slo slo,
                     MeasuredStepOptions options, ReplicaGaugeCollector* replica_gauges = nullptr);

  // Runs the step `request` describes. `on_window` (nullable) is called after every window
  // with that window as recorded (settle windows marked warmup), e.g. to heartbeat and to
  // keep what was measured if the step is interrupted
  // (heartbeats). `hold` > 1 measures that many times the usual measured part (after the
  // lifetime stretching; see RunStep::hold). Errors: those of StepExecutor::Execute.
  absl::StatusOr<MeasuredStep> Run(
      vanguard::v1::RunStepRequest request, bool first_step, CancellationToken* cancel,
      const std::function<void(const vanguard::v1::StepWindow&)>& on_window, double hold = 1);

  // Runs the step `request` describes as is: one replayer call measured from its first
  // request (no warmup, settling, re-measuring or stretching), windows of options.window
  // (each StepWindow's duration set), every window scored and the call judged as Run judges.
  // For the phases of a load shape (RunStep::as_is). Errors: those of StepExecutor::Execute.
  absl::StatusOr<MeasuredStep> RunAsIs(
      vanguard::v1::RunStepRequest request, CancellationToken* cancel,
      const std::function<void(const vanguard::v1::StepWindow&)>& on_window);

  // The fraction of a step's requests that met the SLO latency: the replayer's goodput when
  // it reports one, else estimated from the latency histogram (completed within the p99
  // limit over scheduled).
  static double Goodput(const vanguard::v1::StepResult& result, double p99_limit_ms);

  // Fraction of a serialized histogram's samples above `limit_ms`, over the fraction
  // `allowed` the limit lets exceed it (1% for a p99, half for a p50); samples 0 when the
  // histogram is missing, empty or unreadable.
  struct TailExceedance {
    double ratio = 0;
    int64_t samples = 0;
  };
  static TailExceedance TailOf(const std::string& histogram, double limit_ms,
                               double allowed = kTailAllowedFraction);

  // Mean latency over the measured windows from `first` on rises by more than
  // kRisingLatencyDrift of its level (least-squares slope times span, beyond its sampling
  // noise: SteadyStateDetector::Trending; at least 4 windows). A falling latency is not
  // rising.
  static constexpr double kRisingLatencyDrift = 0.1;
  static bool LatencyRising(const std::vector<vanguard::v1::StepWindow>& windows, size_t first);
  // The least rise of the fitted queue gauge through the measured part that counts as a
  // backlog building (a fraction of a queued request is noise of the gauge).
  static constexpr double kRisingQueueDepth = 1.0;

  // The drain's probes (see "A backlog left behind"): their rate as a share of the step's,
  // at least kDrainMinQps; drained at a median latency within kDrainedP50 of the lowest of a
  // passing step; each probe call holds about kDrainProbeRequests arrivals.
  static constexpr double kDrainShare = 0.05;
  static constexpr double kDrainMinQps = 1;
  static constexpr double kDrainedP50 = 2;
  static constexpr double kDrainProbeRequests = 10;

 private:
  struct StepRun;  // one Run's state and plan (measured_step_runner.cc)

  // The phases of Run, in order.
  // Before anything else: a backlog the previous Run left (its last call timed requests out)
  // is drained with probe calls (see "A backlog left behind"); sets run.out.drain_time.
  absl::Status DrainBacklog(StepRun& run);
  // Plan: the window length, the measured part (lifetime stretching, hold), the first call's
  // lead and the settle cap; rewrites run.request (window, duration, closed loop).
  void Plan(StepRun& run) const;
  // One replayer call: `lead` of settle windows at the step's rate, then the measured part
  // (recorded, scored, tail units kept). Sets run.steady_at_start / first_measured and, when
  // watching, run.overloaded_and_rising.
  absl::StatusOr<ExecutedStep> MeasureCall(StepRun& run, absl::Duration lead, bool watch_overload);
  // The first call's part began before steady: it becomes settling, chunks settle on until
  // steady (or the cap, or a growing overload), then the step is measured behind one span.
  absl::Status SettleThenMeasure(StepRun& run);
  // A pass near the limit whose latency still rises: measured again behind a lead as long as
  // everything before it, and judged on that part (see Re-measuring).
  absl::Status RemeasureIfRising(StepRun& run);
  // The judged call's verdict plus the gauges and stream limits, into run.out.judgement;
  // then run.out.outcome (tail evidence and its confidence, backlog, gauges).
  void JudgeOutcome(StepRun& run);

  // Helpers of the phases.
  // One settle window into the detectors (the steady-state one; on the first step also the
  // model-warmup one) and the recent span.
  void Watch(StepRun& run, const vanguard::v1::StepWindow& w) const;
  // A settle window as the replayer sent it: recorded, watched, assessed, reported.
  void SettleWindow(StepRun& run, const vanguard::v1::WindowMetrics& w);
  // The measured windows from `first` on become settle windows (watched).
  void Demote(StepRun& run, size_t first) const;
  // Steady as the step needs: the drift test, and on the first step the model warm.
  bool Steady(const StepRun& run) const;
  // The settle cap now: max_warmup on the first step while the model's latency still falls.
  absl::Duration SettleCap(const StepRun& run) const;
  // OVERLOADED with latency not falling over the recent span (never on the first step).
  bool OverloadedRising(const StepRun& run) const;
  // The judge's verdict on the judged call.
  void JudgeCall(StepRun& run);
  // Whether the backlog grew through the judged call's measured part (see Judging).
  static bool BacklogRising(const StepRun& run);
  // With an SLO error limit, the error rate over it is a tail ratio too (the share of
  // requests that failed over the share allowed): when it exceeds the latency tail's it
  // becomes the outcome's tail_ratio, with its batch-means error over the measured windows.
  void ErrorsAsTail(const StepRun& run, const vanguard::v1::StepResult& result,
                    StepOutcome* o) const;

  WindowSignals SignalsOf(const vanguard::v1::WindowMetrics& w, const GaugeReading& gauges) const;
  // Scrapes the gauges (into *gauges_out) and, for a measured window, scores its health.
  vanguard::v1::StepWindow RecordWindow(const vanguard::v1::WindowMetrics& w, bool settle,
                                        absl::Time start, GaugeReading* gauges_out);

  ReplayerClient* const executor_;
  StepJudge* const judge_;
  HealthAssessor* const assessor_;
  MetricsCollector* const collector_;
  ReplicaGaugeCollector* const replica_gauges_;
  const vanguard::v1::Slo slo_;
  const MeasuredStepOptions options_;
  // Typical request lifetime (p50) at the last steady settle or passing step; 0: unknown.
  absl::Duration request_lifetime_ = absl::ZeroDuration();
  // The last Run's last call timed requests out: the model may hold a backlog of them.
  bool backlog_left_ = false;
  // The lowest median latency of a passing step so far (0: none): the drain's reference.
  double lowest_passing_p50_ms_ = 0;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_MEASURED_STEP_RUNNER_H_
