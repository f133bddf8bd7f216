// The adaptive capacity search: geometric growth while far below the limit, then a bracket
// refined by the steps' own feedback, pooled verdicts, and a final hold of the estimate.
//
//   vanguard::v1::AdaptiveStrategy config;
//   config.set_min_qps(10); config.set_max_qps(1000);
//   ASSIGN_OR_RETURN(auto search, AdaptiveStrategy::Create(config, /*horizon_s=*/300));
//
// The phases, each a function below (docs/strategies.md has the reasons and the figures):
//  - Grow: from min_qps, each pass multiplies the rate by its headroom (1 / limit ratio, read
//    above the unloaded latency once a rate kFloorSpan below has read it; between kMinGrowth
//    and kMaxGrowth, and kFloorSpan at least before that: a latency near the limit with
//    nothing measured below may be the model's unloaded latency), never above max_qps: the
//    range bounds the cost,
//    not the answer. A max_qps that passes is held like an estimate (below); held, it ends
//    the test with Done.at_least; a failed hold there brackets the search below it.
//  - Refine: once a failure lies above the best pass, the next rate is interpolated on
//    log(limit ratio) between them (Illinois-weighted regula falsi), else bisected, and kept
//    inside the bracket (a wide one shrinks by at least a quarter of its log width per step).
//  - Verdicts: every step is re-judged after each step from the pooled tail fit of all the
//    readings still in force (tail_pooling.h); a failure through at most tau isolated spike
//    windows is noise.
//  - Expiry: a later reading within kSameRate of an earlier one that contradicts it against
//    the order a stationary model keeps (better at a rate at least as high, or worse at one at
//    most as high: opposite own verdicts, or tail ratios apart by more than kContradictionZ
//    combined standard errors when both are known) expires the earlier one (drift_flags). So
//    does a pass at the same rate, not shorter, whose median latency is below kWarmedP50 of a
//    failure's there and of a reading at a lower rate up to the failure: the model got
//    faster (a warmup outlasting the warmup phase), which the batch-means errors of a few
//    windows cannot show but a median of thousands of requests does.
//  - Re-measuring: the lowest failure is measured again (once per rate) when passes lie above
//    it, and before the search ends on it when it looks like a disturbance, was measured in
//    the first kWarmingSteps steps, or before a later reading showed the model got faster.
//    Before the search ends, and after its hold passed, the failure bounding the bracket is
//    measured again once when a reading after its last one showed the model got faster
//    (a limit ratio below kFasterRatio of an earlier one's at a rate at least as high, or a
//    median below kWarmedP50 of one at half the rate or less), however many readings it has
//    (StaleFailure).
//  - Extending: an undecided rate (its readings pooled: |tail ratio - 1| < 2 standard errors
//    over >= 2 units each, or a pass whose backlog rose) is run again with a longer hold, up
//    to kMaxExtensions times; then the pooled readings decide.
//  - Batching: a min_qps that fails on its latency tail alone (nothing else breached, no
//    backlog rising) after its re-measures is probed once at kMaxGrowth times it before the
//    test is given up: a batcher waiting to fill its batches makes latency fall as the rate
//    grows. A pass there expires the failures below it (drift_flags) and the search grows on.
//  - Probing: a lowest failure still undecided after its extensions, with nothing measured
//    above it, is probed once above (by its readings' headroom, kMinGrowth to
//    kMaxProbeGrowth): a rate above reads more requests per second, and a pass there pools
//    with the failure below (the tail fit is monotone), so a failure made by a rare episode
//    in few requests does not end the growth.
//  - Holding: a converged search holds its estimate (the best pass) in chunks until the
//    reading is confident (never on a hold with no request over the limit, nor while its
//    backlog rises, nor before the horizon near a short step that failed on an episode:
//    EpisodeNear) or the sustained horizon is covered, where its tail ratio alone decides
//    (under the limit by kHorizonPassZ standard errors); a failed hold makes its rate and
//    everything above it a failure and the search goes on (at most kMaxHolds holds, unless a hold
//    search follows); a hold that held below the lowest failed one makes its rate and everything
//    below it a pass. A hold clearly under the limit just below a failure made by episodes alone is
//    followed by a hold at the failure's rate (a check; at most kMaxEpisodeChecks per test, each
//    not counted among kMaxHolds); if it holds, the failure expires and the search goes on above
//    it, and an episodic failure it then meets just above the check is checked the same way.
//  - Hold search: a hold that fails at kBlindHoldRatio times the allowed share or more saw
//    what the short steps at its rate could not (episodes rarer than a step: stalls, a slow
//    queue), so the short steps below it are no evidence either; so did kMaxHolds failed holds,
//    each at the short steps' best. From then on only holds
//    decide: the next one retreats below the lowest failed hold, further after each failure
//    (and, from kFittedHoldsToRetreat failed holds, at least down to where their tail ratios
//    on a line in log-log cross the limit: a flat tail's crossing lies far below), until one
//    holds, then interpolates log(tail ratio) between the highest held and the
//    lowest failed hold (NextSearchHold), until they lie within kHoldSearchBracket (converged)
//    or kMaxSearchHolds holds or max_steps ran. A hold search's hold passes only at the
//    horizon (a failure may still end it early): the bracket it closes is narrower than what
//    a queue building for minutes moves, which a part of the horizon cannot see.
//  - Finishing: converged when the bracket is within the resolution (or the CV / pooled curve
//    rules) and the hold held, and the estimate is the held rate (in a hold search: the
//    highest held rate, or unconverged the retreat below the lowest failed hold if none
//    held). A tail already near the limit at half the estimate is named in the summary (a
//    flat tail: ill-conditioned). Otherwise (max_steps, or no hold held) the result is
//    converged=false with the interval, Done.more_time_needed_s and, as the estimate, the
//    conservative end: the best pass less its resolution; when the hold search ran out of
//    holds or steps with two failed holds or more, the estimate goes no higher than where
//    their tail ratios, on a line in log-log, cross the limit (FailedHoldsCrossing): a
//    retreat of kFirstHoldRetreat below the lowest is no evidence when its ratio was far over.
//  - The step budget (max_steps) counts a hold once, whatever its chunks: a hold starts only
//    with a step of the budget left and runs to its decision (a hold cut short would leave an
//    estimate no hold verified; its chunks are one measurement, split only to stop early).
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_
#define VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"
#include "worker/tail_pooling.h"

namespace vanguard::worker {

class AdaptiveStrategy : public Strategy {
 public:
  static constexpr int kDefaultSpikeTolerance = 2;
  static constexpr double kDefaultConvergenceCv = 0.02;
  static constexpr int kDefaultMaxSteps = 50;
  static constexpr double kDefaultHorizonS = 300;
  // Growth per pass before any failure: 1 / limit ratio, within these bounds.
  static constexpr double kMaxGrowth = 4;
  static constexpr double kMinGrowth = 1.15;
  // Growth reads headroom above the latency a rate this many times below the best pass read
  // (the unloaded latency): an SLO a few times the service time reads 0.3-0.6 of its limit at
  // any light load, which 1 / limit ratio would take for a rate near the knee.
  static constexpr double kFloorSpan = 2;
  // Readings this close (relative) are at the same rate for expiry.
  static constexpr double kSameRate = 0.02;
  static constexpr double kContradictionZ = 2;
  // Failures among the first steps may have been measured on a model still warming.
  static constexpr int kWarmingSteps = 3;
  // A later reading at a rate at least as high whose limit ratio is below this share of an
  // earlier one's: the model got faster since (warming, drift).
  static constexpr double kFasterRatio = 0.7;
  // A pass whose median latency is below this share of a failure's at the same rate: the
  // model got faster since (see Expiring above).
  static constexpr double kWarmedP50 = 0.8;
  // Longer holds of an undecided step, at most this many per rate.
  static constexpr int kMaxExtensions = 2;
  // The probe above an undecided failure goes at most this far above it.
  static constexpr double kMaxProbeGrowth = 2;
  // The neighbourhood fitted with one tail curve starts at this share of the best pass.
  static constexpr double kCurveBelow = 0.8;
  // Convergence by the bests' CV or by the pooled curve needs the lowest failure within this
  // many epsilons of the best.
  static constexpr double kConvergedBracketEpsilons = 5;
  // The final hold: chunks of at least kMinHold parts, long enough for kHoldTailEvents
  // requests over a p99 limit at the limit, at most kMaxHoldChunk parts; the horizon caps
  // the total. At most kMaxHolds holds per test before a hold search (kMaxSearchHolds in all).
  static constexpr double kMinHold = 2;
  // A hold (outside a hold search) passes before the horizon only after covering this share
  // of it: the batch-means error of a short hold cannot see episodes (stalls, a queue
  // building) rarer than the hold, so a confident-looking pass over a few seconds is no
  // evidence over minutes.
  static constexpr double kMinHoldHorizonShare = 0.25;
  // A hold that reaches the horizon undecided passes when its tail ratio plus this many of
  // its standard errors is at most 1 (when its windows give one): a ratio just under the
  // limit is as likely just over it, and the estimate leans to the side of the SLO.
  static constexpr double kHorizonPassZ = 0.5;
  // ...unless a short step within this span of the hold's rate (either side) failed on an
  // episode: over the limit with a standard error of at least kEpisodeSeShare of its ratio
  // (one or two of its units carry the share). Episodes that rare are what a quarter of the
  // horizon can miss, so the hold then covers all of it. Conversely a short failure on an
  // episode is no better evidence than a short pass: a hold clearly under the limit below
  // such a failure (within kEpisodeSpan) holds the failure's rate too (EpisodicFailureAbove).
  // If that holds, the episodes' failures expire and the search goes on above. Each such
  // check costs a horizon: at most kMaxEpisodeChecks per test.
  static constexpr double kEpisodeSpan = 0.25;
  static constexpr int kMaxEpisodeChecks = 3;
  static constexpr double kEpisodeSeShare = 0.5;
  static constexpr double kHoldTailEvents = 20;
  static constexpr double kMaxHoldChunk = 10;
  static constexpr int kMaxHolds = 2;
  // Hold search (see the header): entered by a hold failing at this tail ratio or more; until
  // a hold holds, each retreats below the lowest failed one by kFirstHoldRetreat, doubled for
  // each hold failed far over (kBlindHoldRatio) after the first when the lowest failed far
  // over too (at most kMaxHoldRetreat, at least one resolution);
  // converged when the highest held rate is within kHoldSearchBracket below the lowest failed
  // hold; at most kMaxSearchHolds holds in all.
  static constexpr double kBlindHoldRatio = 2;
  static constexpr double kFirstHoldRetreat = 0.05;
  static constexpr double kMaxHoldRetreat = 0.75;
  static constexpr double kHoldSearchBracket = 0.05;
  static constexpr int kMaxSearchHolds = 10;
  // A hold search that ends undecided caps its estimate at the failed holds' own
  // crossing (FailedHoldsCrossing): holds read further over than this are left out of the fit
  // (an episode, not the curve), and the cap goes no lower than this share of the lowest
  // failed hold.
  static constexpr double kMaxFittedHoldRatio = 20;
  // A hold search with this many failed holds on that line retreats at least to its crossing.
  static constexpr int kFittedHoldsToRetreat = 3;
  static constexpr double kMinFittedCrossingShare = 0.5;
  // Measured seconds of a step when no step reported its requests.
  static constexpr double kAssumedStepS = 3;
  // A failure is a disturbance when its log limit ratio exceeds the pass's below it by more
  // than kReadingNoise plus kSteepening times the rise between the two passes below it.
  static constexpr double kReadingNoise = 0.3;
  static constexpr double kSteepening = 10;
  // FlatTailNote's thresholds.
  static constexpr double kFlatTailRatio = 0.5;
  static constexpr double kFlatTailRequests = 500;

  // INVALID_ARGUMENT naming the field ("adaptive.damping ...") for bad parameters, or
  // "sustain_horizon" when horizon_s is not positive (CreateStrategy passes
  // spec.sustain_horizon). `damping` and `confirm_best` are accepted and
  // ignored (the growth and the hold replaced them).
  static absl::StatusOr<std::unique_ptr<AdaptiveStrategy>> Create(
      const vanguard::v1::AdaptiveStrategy& config, double horizon_s = kDefaultHorizonS);

  Decision Next(const std::optional<StepOutcome>& last) override;
  // Growing: the passes to the range's top at kMaxGrowth and a few to bracket; bracketed:
  // one step per halving down to the resolution; then the hold's chunks (what is left of the
  // one in progress); the steps before a hold's second chunk never more than the step budget
  // left (a hold's later chunks are not charged to it).
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "adaptive"; }

 private:
  // Why the step in flight runs.
  enum class Purpose { kMove, kInvalidRerun, kRemeasure, kExtension, kHold };

  // One reading as the pooled verdicts see it.
  struct Judged {
    StepOutcome outcome;
    int step = 0;          // 1-based index of the step
    double hold = 1;       // its measured part in usual parts
    bool noise = false;    // failed through spikes alone: not a failure by its own verdict
                           // (its tail is pooled like any other reading's)
    bool is_hold = false;  // a final hold's chunk
    bool expired = false;  // a later reading at its rate contradicted it
    bool empty = false;    // measured no request: no evidence (kept out like an expired one)
  };

  // The chunks of the hold in progress pooled: tail ratio by requests, its standard error
  // (known when every chunk had >= 2 units and requests), and whether every chunk passed its
  // other checks.
  struct HoldReading {
    double ratio = 0;
    double se = 0;
    double requests = 0;
    double expected_over = 0;  // requests over the limit at the allowed share
    // What its chunks lasted: each chunk's requests at its offered rate (its parts at the
    // rate's part length when it counted none). The verification states these seconds.
    double seconds = 0;
    bool others_held = true;
    bool se_known = true;
  };

  // A decided hold's reading: its rate, its chunks' pooled tail ratio, whether it held, and
  // the weight of its log(ratio) in FailedHoldsCrossing (1 / its variance).
  struct HoldResult {
    double rate = 0;
    double ratio = 0;
    bool held = false;
    double weight = 0;
  };

  AdaptiveStrategy(double min_qps, double max_qps, int tau, double epsilon, int max_steps,
                   double horizon_s)
      : min_qps_(min_qps),
        max_qps_(max_qps),
        tau_(tau),
        epsilon_(epsilon),
        max_steps_(max_steps),
        horizon_s_(horizon_s),
        q_(min_qps) {}

  // The next step after a move, a re-measure or a decided extension: the range's ends, a
  // failure to measure again, convergence, the budget, else Grow or Refine.
  Decision Decide(bool passed, Purpose purpose);

  // --- Recording a step ---
  // Appends the step's reading (invalid twice: a failure), expires what it contradicts and
  // re-pools; returns the pooled verdict of its rate.
  bool Record(StepOutcome outcome, Purpose purpose);
  // `older` expires because `newer` contradicts it: when `newer`'s median latency is below
  // kWarmedP50 of `older`'s (the model got faster in its body, not only in its tail as after
  // a stall) and `older` is one of the first kWarmingSteps steps, warming_through_step_ moves
  // to it (a cold start the warmup phase took for warm).
  void NoteFasterSince(const Judged& older, const Judged& newer);
  // Marks older readings near `newer`'s rate that it contradicts as expired (drift_flags_).
  void ExpireContradicted(const Judged& newer);
  // Whether `last` reads a lower limit ratio than the reading before it at its rate.
  bool BetterThanBefore(const Judged& last) const;
  // Expires the readings before `newer` at its rate: at min_qps with nothing passed yet, a
  // pass better than the reading before it says the model got faster (still warming).
  void ExpireWarmingReadings(const Judged& newer);
  // Marks the readings before `newer` for which `applies` holds as expired, each with a
  // drift flag "reading at R req/s (step N) expired: <why>".
  void ExpireOlder(const Judged& newer, const std::function<bool(const Judged&)>& applies,
                   const std::string& why);
  // Before giving up on min_qps: the rate to probe once above it (kMaxGrowth times, at most
  // max_qps) when `last` failed there on its latency tail alone, nothing else breached and no
  // backlog rising: a batcher waiting to fill its batches makes latency fall as the rate
  // grows, so a model idle at min_qps can fail it and carry far more. nullopt otherwise.
  std::optional<double> BatchingProbe(const Judged& last) const;
  // The probe passed: the failures below its rate expire (drift_flags_), being the batcher's
  // wait rather than evidence of load.
  void ExpireBatchingWaits(const Judged& newer);
  // Whether `newer` contradicts `older` (see the header).
  static bool Contradicts(const Judged& older, const Judged& newer);
  // Whether `newer` passes at `older`'s failing rate (kSameRate: a hold just below it counts)
  // on a model that got faster (kWarmedP50):
  // its median is below kWarmedP50 of the failure's and of a reading at a lower rate up to it.
  bool Warmed(const Judged& older, const Judged& newer) const;
  // Re-judges every reading in force from the pooled tail fit (steps without tail samples
  // keep their own verdict), vetoes rates at or above a failed hold, passes rates at or
  // below the highest hold that held under it (HighestHeldBelow), and sets best_,
  // lowest_failure_ and the ratios feedback placement reads. Returns the last step's verdict.
  bool PoolVerdicts();
  // No reading (a judged_ index).
  static constexpr size_t kNone = static_cast<size_t>(-1);
  // The readings in force with tail samples (not expired, not a hold's chunk, client valid),
  // as points of the pooled fit, and per judged_ reading its fitted tail ratio (-1: not
  // pooled) and whether it is over the limit by too few requests to tell (TooFewOverLimit).
  struct PooledFit {
    std::vector<TailPoint> points;
    std::vector<size_t> pooled;  // judged_ index of each point
    std::vector<double> fitted;
    std::vector<bool> too_few;
  };
  PooledFit FitReadings() const;
  // Each reading's verdict from `f` (a reading without tail samples keeps its own), failed at
  // or above `veto` and passed at or below `floor`; the lowest failure in force (not noise)
  // and the best pass below it, kNone when none.
  struct Verdicts {
    std::vector<bool> pass;
    size_t best = kNone;
    size_t failure = kNone;
  };
  Verdicts JudgeReadings(const PooledFit& f, std::optional<double> veto,
                         std::optional<double> floor) const;
  // The ratios feedback placement interpolates at the best and lowest failure (judged_
  // indices, -1: none): the pooled tail ratios when the best's step could read its own, else
  // the steps' limit ratios.
  void SetPlacementRatios(size_t best, size_t failure, const std::vector<double>& fitted);

  // --- Deciding the next step ---
  // Grow phase: the next rate before any failure (after noise: by kMinGrowth only).
  double Grow(bool noise) const;
  // The share of the room between the model's unloaded latency `floor` (UnloadedRatio) and
  // the limit that the load has used at the best pass, for a limit ratio `ratio` read there:
  // ratio itself when `floor` is not in (0, 1); 0 when the latency has not risen above it.
  // Never above `ratio`.
  static double HeadroomAboveFloor(double ratio, double floor);
  // The model's unloaded latency as a limit ratio: the lowest read at a rate kFloorSpan or
  // more below the best pass (a latency the load has not yet raised); nullopt when no such
  // reading exists.
  std::optional<double> UnloadedRatio() const;
  // Refine phase: the next rate inside the bracket after a pass, failure or noise; only a
  // move (`is_move`) updates the Illinois weights.
  double Refine(bool after_pass, bool noise, bool is_move);
  // The feedback placement, or nullopt when the ratios cannot predict the limit.
  std::optional<double> FeedbackPlacement(bool after_pass) const;
  // Clamped to the range and kept below known failures.
  double Place(double target) const;
  // A longer hold of an undecided last step, or nullopt.
  std::optional<RunStep> Extension(const StepOutcome& last);
  // Whether the readings at `rate` pooled (the last one `last`) cannot decide: see the header.
  bool UndecidedAt(double rate, const StepOutcome& last) const;
  // The rate to probe above the lowest failure, or nullopt: see "Probing" above.
  std::optional<double> ProbeAboveUndecidedFailure() const;
  // Runs `rate` again as an ordinary step (a second reading, not a move).
  Decision Remeasure(double rate);
  // The rate of a failure to measure again now (non-monotone evidence), or before finishing
  // too (`finishing`: disturbed, early, or older than evidence that the model got faster).
  std::optional<double> FailureToRemeasure(bool finishing) const;
  // The lowest failure on its own reading still in force, or nullptr.
  const Judged* LowestOwnFailure() const;
  // Whether the model read faster after step `step` (see kFasterRatio).
  bool FasterSince(int step) const;
  // Before finishing: the lowest failure bounding the bracket (an own failure at or above
  // lowest_failure_) whose last reading at its rate is older than evidence that the model got
  // faster (FasterSince), not yet re-measured; nullopt otherwise. However often a rate failed
  // while the model was cold, a model that warmed since has not been measured there.
  std::optional<double> StaleFailure() const;
  // DisturbedFailure: `failure` jumps far above the curve of the passes below it.
  bool Disturbed(const Judged& failure) const;

  // --- Converging, holding, finishing ---
  // The reason the bracket has converged, or nullopt.
  std::optional<std::string> Converged() const;
  // Before a converged search finishes: a re-measure, a hold, or the finish.
  Decision BeforeFinish(const std::string& why);
  // Starts a hold at `rate` (the estimate), its first chunk.
  RunStep StartHold(double rate);
  // The hold in progress (hold_rate_) read from its chunks so far.
  HoldReading PooledHold() const;
  // The hold in progress decided: held or not, as read by `h`.
  HoldResult ResultOf(const HoldReading& h, bool held) const;
  // After a hold's chunk: another chunk, the finish, the next hold of a hold search, or back
  // to the search (failed hold).
  std::optional<Decision> AfterHoldChunk(const std::string& why);
  // The hold `h` just held: the hold search's next hold, "at least max_qps", nullopt when no
  // failure is left above it (all expired: the search goes on above), a hold at an episodic
  // failure above (EpisodicFailureAbove) or nullopt once that one held, a re-measure of a
  // stale failure, or the finish.
  std::optional<Decision> AfterHeldHold(const HoldReading& h, const std::string& why);
  // Where the weighted line of log(tail ratio) on log(rate) through the failed holds (ratios in
  // (1, kMaxFittedHoldRatio)) crosses the limit, clamped to [kMinFittedCrossingShare,
  // 1 - kFirstHoldRetreat] x the lowest failed hold (a ratio not rising with the rate over
  // three holds or more: the floor) and never below a hold that held under the lowest failed
  // one; nullopt with fewer than two such holds or two whose ratio does not rise.
  std::optional<double> FailedHoldsCrossing() const;
  // Whether FailedHoldsCrossing fits `h`: failed, at a ratio in (1, kMaxFittedHoldRatio).
  static bool FittedFailedHold(const HoldResult& h);
  // The hold search's next hold, or its finish (see the header).
  Decision NextSearchHold();
  // The lowest failed hold and the highest held rate below it (nullptr: none).
  const HoldResult* LowestFailedHold() const;
  const HoldResult* HighestHeldBelow(double rate) const;
  // The rate of the hold search's next hold between `held` (may be null) and `failed`.
  double SearchHoldRate(const HoldResult* held, const HoldResult& failed) const;
  Decision Finish(bool converged, const std::string& why);
  // max_qps passed before any failure (and held, unless no hold was left): "at least
  // max_qps", never the capacity.
  Decision FinishAtLeast();

  // --- Figures ---
  // The estimate the hold verifies: the best pass (0: none); in a hold search, the highest
  // held rate, else the retreat below the lowest failed hold.
  double Estimate() const;
  // About how many seconds of measuring would decide an unconverged search.
  double MoreTimeNeeded() const;
  // When the readings at or below half the estimate pooled (at least kFlatTailRequests of
  // them) already put kFlatTailRatio of the allowed share over the limit: a note for the
  // summary that the capacity is ill-conditioned (the share hardly grows with the rate, so
  // its noise moves the crossing far); else empty.
  std::string FlatTailNote(double estimate) const;
  // Requests measured per usual part at `rate` (the fewest of its steps; 0: none).
  int64_t RequestsPerStepAt(double rate) const;
  // The relative bracket a short step at the best can resolve: epsilon, or 1 / sqrt(requests).
  double Resolution() const;
  // The median measured seconds of a usual part (requests / rate / hold) over the readings
  // `counts` accepts; 0 when none.
  double MedianPartSeconds(const std::function<bool(const Judged&)>& counts) const;
  // Measured seconds of a usual part (requests / rate), else kAssumedStepS.
  double StepSeconds() const;
  // Measured seconds of a usual part at `rate` (the median of the short steps there: a slow
  // model's steps are stretched to a minimum of requests, so a part lasts longer at a lower
  // rate), else NearestPartSecondsAt. The hold's horizon is counted in these.
  double PartSecondsAt(double rate) const;
  // A lower bound of a part's seconds at `rate` from the short step at the nearest rate (its
  // seconds, or its requests at `rate`, whichever is less), else StepSeconds().
  double NearestPartSecondsAt(double rate) const;
  // The parts a hold must cover before a confident reading passes it, of a horizon of
  // `horizon_parts`: all of it in a hold search or after an episode near the hold's rate
  // (EpisodeNear), else kMinHoldHorizonShare (at least kMinHold).
  double HoldCoverParts(double horizon_parts) const;
  // Whether `j` is a short step that failed on an episode: over the limit with a standard
  // error of at least kEpisodeSeShare of its ratio.
  static bool IsEpisode(const Judged& j);
  // Whether a short step within kEpisodeSpan of `rate`, expired or not, failed on an episode.
  bool EpisodeNear(double rate) const;
  // After the hold `h` held: a hold at EpisodicFailureAbove(h) (a check) while holds and
  // steps remain, else nullopt.
  std::optional<RunStep> CheckEpisodicFailure(const HoldReading& h);
  // After a hold `h` passed clearly under the limit (by two standard errors): the lowest
  // failure when it lies within kEpisodeSpan above the hold and every short failure at its
  // rate failed on an episode alone, those flagged as noise included (their tails are pooled
  // like any other, so they can make the failure) (fewer than kMaxEpisodeChecks checks so
  // far); else nullopt.
  std::optional<double> EpisodicFailureAbove(const HoldReading& h) const;
  // The number of usual parts a hold chunk at `rate` lasts.
  double HoldChunk(double rate) const;
  // Readings in force at the same rate as `rate` (kSameRate).
  bool SameRate(double a, double b) const;

  const double min_qps_, max_qps_;
  const int tau_;
  const double epsilon_;
  const int max_steps_;
  const double horizon_s_;

  double q_;
  Purpose purpose_ = Purpose::kMove;  // of the step in flight
  double hold_ = 1;                   // of the step in flight
  std::optional<double> best_;
  std::optional<double> lowest_failure_;
  double best_ratio_ = 0;
  double failure_ratio_ = 0;
  std::vector<Judged> judged_;
  std::optional<TailCurve> curve_;
  std::optional<bool> last_placement_after_pass_;
  double low_scale_ = 1;
  double high_scale_ = 1;
  std::vector<double> best_history_;
  std::vector<int> best_recorded_at_;
  int last_failure_at_ = 0;
  int steps_ = 0;
  int budget_steps_ = 0;  // steps charged to max_steps: all but a hold's later chunks
  int invalid_steps_ = 0;
  bool started_ = false;
  bool retried_invalid_client_ = false;
  std::vector<double> remeasured_;        // failure rates measured again
  std::vector<double> probed_;            // undecided failure rates probed above
  std::optional<double> batching_probe_;  // the rate probed above a failing min_qps
  bool batching_probe_judged_ = false;
  std::vector<std::string> drift_flags_;
  int warming_through_step_ = 0;  // Done.warming_through_step
  // Extensions run at the rate of the last extended step.
  std::optional<double> extended_rate_;
  int extensions_ = 0;
  // The final hold.
  int holds_ = 0;
  std::optional<double> hold_rate_;         // the rate of the hold in progress or last run
  double hold_parts_ = 0;                   // parts held at hold_rate_ so far
  std::optional<bool> hold_held_;           // the last hold's outcome, once decided
  std::vector<HoldResult> hold_results_;    // every decided hold, in order
  bool hold_search_ = false;                // only holds decide (see the header)
  std::optional<double> failed_holds_cap_;  // FailedHoldsCrossing of an undecided finish
  int episode_checks_ = 0;                  // holds started to check an episodic failure
  std::optional<double> episode_check_;     // the rate of that hold while it runs
  int checked_holds_ = 0;  // holds that held and sent the search on above (not among kMaxHolds)
  std::string verification_;
  std::string converged_why_;  // why the search converged, for the finish after a hold
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_
