// The adaptive feedback-driven search (the paper's Algorithm 1).
//
//   vanguard::v1::AdaptiveStrategy config;
//   config.set_min_qps(10); config.set_max_qps(1000);
//   ASSIGN_OR_RETURN(auto search, AdaptiveStrategy::Create(config));
//
// Starting at q = min_qps with step = (max_qps - min_qps) / 4, after each step:
//  - passed and HEALTHY: best = max(best, q); q += step;
//  - passed and WARN or worse: best = max(best, q); step *= alpha per health level above the
//    highest level seen so far; q += step  (dampening). The paper dampens on every WARN step,
//    which bounds the rest of the climb by one step; dampening per newly reached level keeps
//    the nearer-the-limit-the-smaller-the-move behaviour without that cap. Three HEALTHY
//    passes in a row before any failure undo one dampening (a noisy early step must not
//    leave the search crawling);
//  - failed, but only through at most tau isolated spike windows (the per-window hysteresis
//    state never reached UNHEALTHY): noise, q += step * alpha, best unchanged  (spike
//    tolerance);
//  - otherwise: q -= step, step *= alpha  (backtracking; never back to or below the best,
//    which is known to hold: best + the damped step instead);
// Every change of the best is recorded. The search stops when the coefficient of
// variation of the last three recorded bests is below epsilon and a step has failed since
// the first of them was recorded (convergence detection: the bests stay put while the
// search keeps testing above them; bests that only climb by damped steps, every step a
// pass, are not converged however close together they are) and the lowest failure lies
// within kConvergedBracketEpsilons * epsilon of the best (bests that stay put say nothing
// while the search tests far above them: a stall failed a low step, the pooled verdicts let
// it pass later, and the limit may be anywhere up to the lowest failure); when the gap
// between the best and the lowest failure is within the resolution of the best (epsilon,
// or 1 / sqrt(requests)
// of a step there when that is wider: a step of 300 requests offers its rate to within about
// 6%, and bracketing an LLM's limit to 2% with such steps only spends steps on noise); when
// the pooled tail curve (below) crosses the limit within epsilon / 2 above the best (with the
// same bound on the lowest failure); or after max_steps steps.
//
// Feedback placement once the limit is bracketed (an extension of the paper's fixed moves):
// every step reports limit_ratio, the binding SLO metric over its limit (1.0 at the limit).
// Near a capacity cliff latency climbs roughly exponentially with the rate, so log(ratio)
// is close to linear in it: interpolating log(ratio) between the best pass and the lowest
// failure predicts the rate where the ratio reaches 1. After a pass the next step aims
// margin = 0.4 * epsilon * best above that prediction, after a failure the same margin
// below it, so that a good prediction closes the bracket to within epsilon in two steps;
// the aim is kept min(10% of the bracket, margin) inside both ends, so a poor prediction
// (noise) still shrinks the bracket by at least that much per step. When the same end moved on
// the step before too, the prediction keeps landing next to it (regula falsi stagnating on a
// curve bent away from the interpolation): as in the Illinois variant, the log ratio of the
// end that stayed is halved for each such step, which pulls the prediction towards it. Without
// usable ratios (no pass below 1, failure not above 1) the paper's moves apply unchanged.
//
// Pooled tail verdicts (also beyond the paper): near the limit a 3 s step's p99 is a noisy
// reading, and a rare disturbance (a stall) decides whichever step it lands in. Every step
// reports the fraction of its requests over each p99 limit; after each step the fractions of
// all steps are fitted non-decreasing in the rate (tail_pooling.h) and a step passes when it
// held every other check and its fitted tail ratio is at most 1. best_ and lowest_failure_
// come from these pooled verdicts (so a lucky pass whose neighbours show it cannot hold is
// no longer the best), and so does the move after the step. Steps without tail samples keep
// their own verdict, which is the paper's behaviour.
//
// Confirmation hold (beyond the paper; opt-in: AdaptiveStrategy.confirm_best). The estimate's
// correction (below) answers the winner's curse at no cost in time; a hold answers it by
// measuring, for one long step more (on the simulator's profiles 1.5x the search's time in
// virtual time, a lower mean error, estimates further below the capacity: docs/strategies.md).
// The best is the highest of several short passes near
// the limit, and near the limit the share of requests over a p99 limit is often set by rare
// events (a stall, a burst of arrivals, a queue that takes tens of seconds to build): most
// short steps just above the limit see none of them and pass, so the best of a few such
// passes leans above the long-run capacity. Before a converged search finishes, its best is
// run once more for kConfirmationHold times a step's measured part or longer, and must pass on
// its own: pooled with the short step(s) there, a hold reading over the limit could still be
// carried by an earlier lucky reading, which is what the hold is there to check. Its length is
// counted in requests too: a p99 verdict over a few hundred requests rests on a handful of
// them over the limit, and a slow model (an LLM at 30 req/s) shows the episodes that set its
// long-run tail (its sequence slots filling up for a while) only over a minute or more, so the
// hold lasts until kHoldTailEvents requests would be over the limit at exactly the limit
// (2000 requests for p99), at most kMaxHold steps. A hold that fails
// makes its rate a failure (whatever the pooled fit says) and the search goes on from the new
// bracket (finishing at once when that is within resolution); at most kMaxConfirmations
// holds per test, never beyond max_steps. When a hold held and the pooled verdicts then move
// the best above the held rate by no more than the resolution (above), the held rate stands
// for the best (the estimate is taken from it): the difference is not one the steps can show,
// and only the held rate was run long enough to claim. Estimates lean conservative for it, at
// the cost of one longer step.
//
// Two guards the paper leaves implicit: q never goes above max_qps nor below min_qps, and
// never at or above a rate that already failed (it goes halfway to it instead), so the
// search does not repeat a known failure.
//
// Estimate (beyond the paper): the best less its resolution (above), once a failure brackets
// it; CI [estimate, lowest failure]. The best is the highest of several passes near the limit,
// each a noisy reading that places its rate only to within the resolution, so the highest of
// them leans above the capacity (the winner's curse): by up to a resolution when a step there
// passed on a lucky sample. Taking the resolution off reports the rate the steps show to hold
// with their noise allowed for, which leans conservative, as a capacity plan needs; the summary
// names the best pass too. Without a failure above (max_qps holds, the step limit before any
// failure) the best is the estimate.
//
// A failure that reads like a disturbance is measured again (beyond the paper). Before a
// converged search finishes, the lowest step that failed on its own reading is compared with
// the two highest passes below it: near a capacity cliff log(limit ratio) rises steeply but
// smoothly with the rate, while a rare stall lifts one step's p99 far above its neighbours'
// (ranking in virtual time: 1.17 of the limit at 1495.5 req/s against 0.58 at 1492.1, the
// capacity ~3000). When that failure's log ratio exceeds the pass's just below it by more
// than a reading's noise (kReadingNoise) plus kSteepening times the rise of log(ratio) per
// relative rate between the two passes (at least 1) over the gap, the failure's rate is run
// once more as an ordinary step, judged with the first reading (pooled), and the search goes
// on from what they show; once per test. The second reading is not a move: it leaves the step
// size, the dampening and the healthy run alone.
//
// A step whose client was not valid is rerun once; invalid again, it counts as a failure
// (a rate whose load cannot even be generated on schedule is not claimed).
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_
#define VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_

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
  static constexpr double kDefaultDamping = 0.5;
  static constexpr int kDefaultSpikeTolerance = 2;
  static constexpr double kDefaultConvergenceCv = 0.02;
  static constexpr int kDefaultMaxSteps = 20;
  // Passing HEALTHY steps in a row (before any failure) that undo one dampening.
  static constexpr int kRecoverAfter = 3;
  // The neighbourhood fitted with one tail curve: from kCurveBelow times the best pass to
  // the lowest failure (isotonic verdicts). Rates beyond the lowest failure say nothing
  // about where the limit is crossed, and an overloaded model's readings (most requests
  // over the limit) would bend a curve fitted through the crossing.
  static constexpr double kCurveBelow = 0.8;
  // Convergence by the bests' CV or by the pooled curve needs the lowest failure within this
  // many epsilons of the best (10% at the default epsilon).
  static constexpr double kConvergedBracketEpsilons = 5;
  // Confirmation holds before a converged search finishes, and their length in steps: at
  // least kConfirmationHold, and long enough that kHoldTailEvents requests are expected over
  // a p99 limit when the model sits exactly at it (2000 requests for p99, counted from the
  // requests of a step at the best), at most kMaxHold.
  static constexpr int kMaxConfirmations = 1;
  static constexpr double kConfirmationHold = 2;
  static constexpr double kHoldTailEvents = 20;
  static constexpr double kMaxHold = 10;
  // A failure is measured again before a search ends when its log limit ratio exceeds the
  // pass's below it by more than kReadingNoise plus kSteepening times the rise between the two
  // passes below it (per relative rate, at least 1) over the gap (see the header).
  static constexpr double kReadingNoise = 0.3;
  static constexpr double kSteepening = 10;

  // INVALID_ARGUMENT naming the field ("adaptive.damping ...") for bad parameters.
  static absl::StatusOr<std::unique_ptr<AdaptiveStrategy>> Create(
      const vanguard::v1::AdaptiveStrategy& config);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::string name() const override { return "adaptive"; }

 private:
  AdaptiveStrategy(double min_qps, double max_qps, double alpha, int tau, double epsilon,
                   int max_steps, bool confirm_best)
      : min_qps_(min_qps),
        max_qps_(max_qps),
        alpha_(alpha),
        tau_(tau),
        epsilon_(epsilon),
        max_steps_(max_steps),
        confirm_best_(confirm_best),
        q_(min_qps),
        step_((max_qps - min_qps) / 4),
        initial_step_(step_) {}

  // One judged step as the pooled verdicts see it.
  struct Judged {
    StepOutcome outcome;
    bool noise = false;  // failed through spikes alone: never counted as a failure
    // A confirmation hold that failed on its own: its rate fails whatever the pooled fit.
    bool failed_hold = false;
  };
  // Recomputes every judged step's verdict from the pooled tail fit (steps without tail
  // samples keep their own verdict), then best_, lowest_failure_ and their ratios. Returns
  // the pooled verdict of the last step.
  bool PoolVerdicts();
  // The next rate after moving to `target`: clamped to the range and kept below failures.
  double Place(double target) const;
  // The feedback placement above, or nullopt when the ratios cannot predict the limit.
  std::optional<double> FeedbackPlacement(bool after_pass) const;
  Decision Finish(bool converged, const std::string& why);
  // Requests measured by the steps run at `rate` (the fewest of them; 0: none).
  int64_t RequestsPerStepAt(double rate) const;
  // The relative bracket a short step at the best can resolve: epsilon, or the scatter of its
  // Poisson arrivals (1 / sqrt(requests)) when that is wider.
  double Resolution() const;
  // The rate of the lowest step that failed on its own reading when its limit ratio jumps
  // from the passes below by more than a reading's noise and a steepening curve allow (see
  // the header); nullopt otherwise.
  std::optional<double> DisturbedFailure() const;
  // A converged search's finish, unless a failure that looks like a disturbance has not been
  // measured again yet or (confirm_best) the best has not been held yet (see the header).
  Decision FinishOrConfirm(const std::string& why);

  const double min_qps_, max_qps_, alpha_;
  const int tau_;
  const double epsilon_;
  const int max_steps_;
  const bool confirm_best_;  // confirmation holds are run (see the header)

  double q_;
  double step_;
  double initial_step_;
  std::optional<double> best_;
  std::optional<double> lowest_failure_;
  // The ratios feedback placement interpolates: the pooled tail ratios at best_ and
  // lowest_failure_ when both are usable and the best's step could read its own (see
  // PoolVerdicts), else the steps' limit ratios.
  double best_ratio_ = 0;
  double failure_ratio_ = 0;
  std::vector<Judged> judged_;
  std::optional<TailCurve> curve_;  // the neighbourhood's fitted tail curve, when it has one
  // Whether the last feedback placement followed a pass (the lower end moved) or a failure,
  // and the Illinois weights of the two ends' log ratios.
  std::optional<bool> last_placement_after_pass_;
  double low_scale_ = 1;
  double high_scale_ = 1;
  std::vector<double> best_history_;
  std::vector<int> best_recorded_at_;  // steps_ when each best_history_ entry was recorded
  int last_failure_at_ = 0;            // steps_ of the latest step judged a failure
  int steps_ = 0;
  int noise_steps_ = 0;
  int invalid_steps_ = 0;
  int highest_level_ = vanguard::v1::HEALTH_STATE_HEALTHY;
  int healthy_run_ = 0;
  bool started_ = false;
  bool retried_invalid_client_ = false;
  double hold_ = 1;               // the hold of the step in flight (for its rerun)
  double confirmation_hold_ = 0;  // the length of the last confirmation hold, in steps
  int confirmations_ = 0;
  std::optional<double> confirmed_;        // the best the last confirmation hold was run at
  std::optional<double> failure_checked_;  // the lowest failure measured again (see the header)
  bool checking_failure_ = false;          // the step in flight measures it again
  bool last_hold_passed_ = false;          // that hold's own verdict
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_ADAPTIVE_STRATEGY_H_
