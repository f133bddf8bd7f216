// Algorithm 1: dampening, spike tolerance, convergence detection. See adaptive_strategy.h.
#include "worker/adaptive_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vanguard::worker {

absl::StatusOr<std::unique_ptr<AdaptiveStrategy>> AdaptiveStrategy::Create(
    const vanguard::v1::AdaptiveStrategy& config) {
  if (!std::isfinite(config.min_qps()) || config.min_qps() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.min_qps must be > 0, got ", config.min_qps()));
  }
  if (!std::isfinite(config.max_qps()) || config.max_qps() <= config.min_qps()) {
    return absl::InvalidArgumentError(absl::StrCat("adaptive.max_qps must be > min_qps (",
                                                   config.min_qps(), "), got ", config.max_qps()));
  }
  const double alpha = config.damping() == 0 ? kDefaultDamping : config.damping();
  if (!std::isfinite(alpha) || alpha <= 0 || alpha >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.damping must be in (0, 1), got ", config.damping()));
  }
  if (config.spike_tolerance() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.spike_tolerance must be >= 0, got ", config.spike_tolerance()));
  }
  const int tau = config.spike_tolerance() == 0 ? kDefaultSpikeTolerance : config.spike_tolerance();
  const double epsilon =
      config.convergence_cv() == 0 ? kDefaultConvergenceCv : config.convergence_cv();
  if (!std::isfinite(epsilon) || epsilon <= 0 || epsilon >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.convergence_cv must be in (0, 1), got ", config.convergence_cv()));
  }
  if (config.max_steps() < 0 || config.max_steps() > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.max_steps must be in [0, 1000], got ", config.max_steps()));
  }
  const int max_steps = config.max_steps() == 0 ? kDefaultMaxSteps : config.max_steps();
  return std::unique_ptr<AdaptiveStrategy>(new AdaptiveStrategy(
      config.min_qps(), config.max_qps(), alpha, tau, epsilon, max_steps, config.confirm_best()));
}

double AdaptiveStrategy::Place(double target) const {
  double q = std::clamp(target, min_qps_, max_qps_);
  if (lowest_failure_ && q >= *lowest_failure_) {
    // Never repeat a known failure: go halfway between what is known to hold and it.
    q = (best_.value_or(min_qps_) + *lowest_failure_) / 2;
  }
  return q;
}

std::optional<double> AdaptiveStrategy::FeedbackPlacement(bool after_pass) const {
  if (!best_ || !lowest_failure_ || *lowest_failure_ <= *best_) return std::nullopt;
  if (!(best_ratio_ > 0 && best_ratio_ < 1) || !(failure_ratio_ > 1)) return std::nullopt;
  const double low = *best_, high = *lowest_failure_, gap = high - low;
  // Scaled as the Illinois variant of regula falsi does (see the header).
  const double at_low = std::log(best_ratio_) * low_scale_;
  const double at_high = std::log(failure_ratio_) * high_scale_;
  const double fraction = -at_low / (at_high - at_low);
  const double predicted = low + fraction * gap;
  const double margin = 0.4 * epsilon_ * low;
  const double aim = after_pass ? predicted + margin : predicted - margin;
  double inside = std::min(0.1 * gap, margin);
  return std::clamp(aim, low + inside, high - inside);
}

std::optional<double> AdaptiveStrategy::DisturbedFailure() const {
  // On the steps' own readings: the lowest failure, the highest pass below it (top) and the
  // highest pass below that.
  const StepOutcome* failure = nullptr;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (!o.passed && !j.noise && (failure == nullptr || o.rate_qps < failure->rate_qps)) {
      failure = &o;
    }
  }
  if (failure == nullptr) return std::nullopt;
  const StepOutcome* top = nullptr;
  const StepOutcome* below = nullptr;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (o.rate_qps == failure->rate_qps && &o != failure) return std::nullopt;  // measured twice
    if (!o.passed || o.rate_qps >= failure->rate_qps) continue;
    if (top == nullptr || o.rate_qps > top->rate_qps) {
      if (top != nullptr) below = top;
      top = &o;
    } else if (o.rate_qps < top->rate_qps && (below == nullptr || o.rate_qps > below->rate_qps)) {
      below = &o;
    }
  }
  if (top == nullptr || below == nullptr) return std::nullopt;
  if (!(failure->limit_ratio > 0 && top->limit_ratio > 0 && below->limit_ratio > 0)) {
    return std::nullopt;
  }
  const double rise_below =
      std::log(top->limit_ratio / below->limit_ratio) / (top->rate_qps / below->rate_qps - 1);
  const double jump = std::log(failure->limit_ratio / top->limit_ratio);
  if (jump > kReadingNoise + kSteepening * std::max(rise_below, 1.0) *
                                 (failure->rate_qps / top->rate_qps - 1)) {
    return failure->rate_qps;
  }
  return std::nullopt;
}

Decision AdaptiveStrategy::FinishOrConfirm(const std::string& why) {
  std::optional<double> disturbed;
  if (!failure_checked_ && steps_ < max_steps_) disturbed = DisturbedFailure();
  if (disturbed) {
    failure_checked_ = *disturbed;
    checking_failure_ = true;
    q_ = *disturbed;
    return RunStep{q_};
  }
  if (confirm_best_ && best_ && confirmed_ != best_ && confirmations_ < kMaxConfirmations &&
      steps_ < max_steps_) {
    ++confirmations_;
    confirmed_ = best_;
    q_ = *best_;
    const int64_t per_step = RequestsPerStepAt(q_);
    hold_ = kConfirmationHold;
    if (per_step > 0) {
      const double wanted = kHoldTailEvents / kTailAllowedFraction / static_cast<double>(per_step);
      hold_ = std::clamp(wanted, kConfirmationHold, kMaxHold);
    }
    confirmation_hold_ = hold_;
    return RunStep{q_, hold_};
  }
  return Finish(true, why);
}

int64_t AdaptiveStrategy::RequestsPerStepAt(double rate) const {
  int64_t fewest = 0;
  for (const Judged& j : judged_) {
    const int64_t n = j.outcome.tail_samples;
    if (j.outcome.rate_qps == rate && n > 0) fewest = fewest > 0 ? std::min(fewest, n) : n;
  }
  return fewest;
}

double AdaptiveStrategy::Resolution() const {
  const int64_t n = best_ ? RequestsPerStepAt(*best_) : 0;
  return n > 0 ? std::max(epsilon_, 1 / std::sqrt(static_cast<double>(n))) : epsilon_;
}

Decision AdaptiveStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  double best = best_.value_or(0);
  // The best moved above a hold that held by less than a step can resolve: not a difference
  // the steps can show, and only the held rate was run long enough to claim.
  const bool held_is_best = best_ && confirmed_ && last_hold_passed_ && *confirmed_ < *best_ &&
                            *best_ - *confirmed_ <= Resolution() * *confirmed_;
  if (held_is_best) best = *confirmed_;
  done.best_pass_qps = best;
  // The winner's curse (see the header): the resolution comes off a bracketed best.
  const double correction = best_ && lowest_failure_ ? Resolution() : 0;
  done.max_sustainable_qps = best * (1 - correction);
  done.converged = converged;
  done.confidence_low_qps = done.max_sustainable_qps;
  done.confidence_high_qps = lowest_failure_.value_or(max_qps_);
  std::string confirmation;
  if (confirmations_ > 0) {
    confirmation = absl::StrFormat(
        "; %d confirmation hold(s) of %.3gx a step, the last at %g qps %s%s", confirmations_,
        confirmation_hold_, confirmed_.value_or(0), last_hold_passed_ ? "held" : "did not hold",
        held_is_best ? " and stands for the best (the best above it is within resolution)" : "");
  }
  if (failure_checked_) {
    confirmation += absl::StrFormat(
        "; the failure at %g qps measured again (its limit ratio jumped far above the passes "
        "below it)",
        *failure_checked_);
  }
  std::string estimate;
  if (correction > 0) {
    estimate =
        absl::StrFormat("; estimate %.6g qps: the best pass %g qps less its resolution %.3g%%",
                        done.max_sustainable_qps, best, 100 * correction);
  }
  done.summary = absl::StrFormat(
      "adaptive: %s after %d steps; best %g qps, lowest failure %s%s%s%s%s", why, steps_,
      best_.value_or(0),
      lowest_failure_ ? absl::StrFormat("%g qps", *lowest_failure_) : std::string("none"),
      curve_
          ? absl::StrFormat("; pooled tail curve reaches the limit at %.4g qps", curve_->Crossing())
          : std::string(),
      invalid_steps_ > 0
          ? absl::StrFormat("; %d rate(s) failed because the load generator was invalid twice",
                            invalid_steps_)
          : std::string(),
      confirmation, estimate);
  done_ = done;
  return done;
}

bool AdaptiveStrategy::PoolVerdicts() {
  std::vector<TailPoint> points;
  std::vector<size_t> pooled;  // judged_ index of each point
  for (size_t i = 0; i < judged_.size(); ++i) {
    const StepOutcome& o = judged_[i].outcome;
    if (o.client_valid && o.tail_samples > 0) {
      points.push_back({o.rate_qps, o.tail_ratio, static_cast<double>(o.tail_samples)});
      pooled.push_back(i);
    }
  }
  const std::vector<double> fit = IsotonicTailFit(points);
  std::vector<double> fitted(judged_.size(), -1);  // -1: no tail samples
  for (size_t k = 0; k < pooled.size(); ++k) fitted[pooled[k]] = fit[k];

  std::vector<bool> pass(judged_.size());
  // judged_ indices of the lowest failure and of the best pass below it; kNone: none.
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t failure = kNone, best = kNone;
  const auto rate = [&](size_t i) { return judged_[i].outcome.rate_qps; };
  // Rates where a confirmation hold failed on its own fail whatever the fit says.
  std::vector<bool> vetoed(judged_.size(), false);
  for (const Judged& j : judged_) {
    if (!j.failed_hold) continue;
    for (size_t i = 0; i < judged_.size(); ++i) {
      if (rate(i) == j.outcome.rate_qps) vetoed[i] = true;
    }
  }
  const auto bracket = [&] {
    failure = best = kNone;
    for (size_t i = 0; i < judged_.size(); ++i) {
      const StepOutcome& o = judged_[i].outcome;
      pass[i] =
          !vetoed[i] && (fitted[i] >= 0 ? o.passed_apart_from_tail && fitted[i] <= 1 : o.passed);
      if (!pass[i] && !judged_[i].noise && (failure == kNone || rate(i) < rate(failure))) {
        failure = i;
      }
    }
    for (size_t i = 0; i < judged_.size(); ++i) {
      if (pass[i] && (failure == kNone || rate(i) < rate(failure)) &&
          (best == kNone || rate(i) > rate(best))) {
        best = i;
      }
    }
  };
  bracket();
  // Once the isotonic verdicts bracket the limit, the steps around the bracket are fitted
  // with one exponential curve (see FitTailCurve), and their verdicts follow it.
  curve_.reset();
  if (best != kNone && failure != kNone) {
    const double low = kCurveBelow * rate(best);
    const double high = rate(failure);
    curve_ = FitTailCurve(points, low, high);
    if (curve_) {
      for (size_t k = 0; k < pooled.size(); ++k) {
        const double r = points[k].rate_qps;
        if (r >= low && r <= high) fitted[pooled[k]] = curve_->At(r);
      }
      bracket();
    }
  }
  lowest_failure_.reset();
  if (failure != kNone) lowest_failure_ = rate(failure);
  const std::optional<double> previous_best = best_;
  best_.reset();
  if (best != kNone) best_ = rate(best);
  if (best_ && best_ != previous_best) {
    best_history_.push_back(*best_);
    best_recorded_at_.push_back(steps_);
  }
  // Which ratios feedback placement interpolates: the pooled tail ratios when both ends have
  // one (below 1 at the best, above 1 at the failure) and the best's step could have read its
  // own, else the steps' limit ratios when those are usable. A fit that puts less than one of
  // the best's requests over the limit is an extrapolation (a pass that read none fits to a
  // tiny share), and its log, far below the failure's, would keep every prediction next to
  // the failure; the limit ratios (the binding metric over its limit, measured at every rate)
  // place it then. Unreadable tail ratios are still better than none.
  const bool tails_usable = best != kNone && failure != kNone && fitted[best] > 0 &&
                            fitted[best] < 1 && fitted[failure] > 1;
  const bool readable =
      tails_usable && fitted[best] * static_cast<double>(judged_[best].outcome.tail_samples) *
                              kTailAllowedFraction >=
                          1;
  best_ratio_ = best != kNone ? judged_[best].outcome.limit_ratio : 0;
  failure_ratio_ = failure != kNone ? judged_[failure].outcome.limit_ratio : 0;
  const bool limits_usable = best_ratio_ > 0 && best_ratio_ < 1 && failure_ratio_ > 1;
  if (tails_usable && (readable || !limits_usable)) {
    best_ratio_ = fitted[best];
    failure_ratio_ = fitted[failure];
  }
  return pass.back();
}

Decision AdaptiveStrategy::Next(const std::optional<StepOutcome>& last_step) {
  const StepOutcome* last = last_step ? &*last_step : nullptr;
  if (done_) return *done_;
  if (!started_ || last == nullptr) {
    started_ = true;
    return RunStep{q_};
  }
  StepOutcome outcome = *last;
  if (!outcome.client_valid) {
    if (!retried_invalid_client_) {
      retried_invalid_client_ = true;
      return RunStep{q_, hold_};
    }
    // The load could not even be generated as scheduled twice: not a rate to claim.
    ++invalid_steps_;
    outcome.passed = false;
    outcome.spikes = 0;
    outcome.window_state = vanguard::v1::HEALTH_STATE_OVERLOADED;
  }
  retried_invalid_client_ = false;
  const double last_hold = hold_;
  hold_ = 1;
  // A failure measured again is a second reading, not a move: it leaves the step size, the
  // dampening and the run of healthy passes alone.
  const bool rechecked = checking_failure_;
  checking_failure_ = false;
  const double step_before = step_;
  const int highest_level_before = highest_level_, healthy_run_before = healthy_run_;
  ++steps_;
  outcome.rate_qps = q_;
  last = &outcome;

  const vanguard::v1::HealthState h = std::max(last->health_state, last->window_state);
  const bool sustained_breach = last->window_state >= vanguard::v1::HEALTH_STATE_UNHEALTHY;
  // A failure through at most tau isolated spike windows only (spike tolerance); never for a
  // confirmation hold, which is the careful look.
  const bool spiky = last_hold <= 1 && !last->passed && last->spikes > 0 && last->spikes <= tau_ &&
                     !sustained_breach;
  judged_.push_back({outcome, spiky, last_hold > 1 && !last->passed});
  if (last_hold > 1) last_hold_passed_ = last->passed;
  const bool passed = PoolVerdicts();
  const bool noise = !passed && spiky;
  if (!passed && !noise) last_failure_at_ = steps_;
  double next;
  if (!passed) healthy_run_ = 0;
  if (passed) {
    // Dampen once per level above the highest seen so far: entering WARN by alpha, going
    // on to UNHEALTHY by alpha again, and so on. The paper dampens on every WARN step, which
    // caps the whole further climb at one step: a model whose p99 sits at 60% of its limit
    // from low load on could never be climbed to its capacity.
    const int level = std::min<int>(h, vanguard::v1::HEALTH_STATE_CRITICAL);
    for (int l = std::max<int>(highest_level_ + 1, vanguard::v1::HEALTH_STATE_WARN); l <= level;
         ++l) {
      step_ *= alpha_;
    }
    highest_level_ = std::max(highest_level_, level);
    // Health that holds for kRecoverAfter passing steps in a row, below any failure, undoes
    // one dampening: a noisy early step (a stall at low load) must not leave the search
    // crawling for the rest of the test. Mirrors the assessor's recover-after-3.
    healthy_run_ = level <= vanguard::v1::HEALTH_STATE_HEALTHY ? healthy_run_ + 1 : 0;
    if (healthy_run_ >= kRecoverAfter && !lowest_failure_ && step_ < initial_step_) {
      step_ = std::min(step_ / alpha_, initial_step_);
      highest_level_ = vanguard::v1::HEALTH_STATE_HEALTHY;
      healthy_run_ = 0;
    }
    next = q_ + step_;
  } else if (noise) {
    // The breach came from isolated windows only: noise. Move on, more carefully.
    ++noise_steps_;
    next = q_ + step_ * alpha_;
  } else {
    next = q_ - step_;
    step_ *= alpha_;
    if (best_ && next <= *best_) next = *best_ + step_;
  }
  if (rechecked) {
    step_ = step_before;
    highest_level_ = highest_level_before;
    healthy_run_ = healthy_run_before;
  }
  if (!noise) {
    // The same end of the bracket moved on the step before too: the end that stayed counts
    // half as much again (Illinois); either end moving in turn resets the weights.
    if (last_placement_after_pass_ == passed) {
      (passed ? high_scale_ : low_scale_) *= 0.5;
    } else {
      low_scale_ = high_scale_ = 1;
    }
    if (std::optional<double> placed = FeedbackPlacement(passed)) {
      next = *placed;
      last_placement_after_pass_ = passed;
    }
  }
  // The bests staying put, or the pooled curve, say the search has stopped learning only
  // while it tests near them: with the lowest failure far above the best (a disturbance
  // failed a low step and the search climbed past it), the limit may be anywhere between.
  const bool bracket_near =
      best_ && lowest_failure_ &&
      *lowest_failure_ - *best_ <= kConvergedBracketEpsilons * epsilon_ * *best_;
  if (best_history_.size() >= 3 && bracket_near &&
      last_failure_at_ > best_recorded_at_[best_recorded_at_.size() - 3]) {
    const std::vector<double> last_three(best_history_.end() - 3, best_history_.end());
    if (CoefficientOfVariation(last_three) < epsilon_) {
      return FinishOrConfirm("converged (CV of the last three best rates below epsilon)");
    }
  }
  if (best_ && lowest_failure_ && *lowest_failure_ - *best_ <= Resolution() * *best_) {
    return FinishOrConfirm("converged (bracket below resolution)");
  }
  // The pooled tail curve of the neighbourhood puts the limit within half the resolution
  // above the best pass: a further step could only move the estimate by less than that.
  if (bracket_near && curve_ && curve_->Crossing() >= *best_ &&
      curve_->Crossing() - *best_ <= 0.5 * epsilon_ * *best_) {
    return FinishOrConfirm("converged (pooled tail curve crosses the limit just above the best)");
  }
  if (!best_ && lowest_failure_ && q_ <= min_qps_) {
    // Nothing below to lend the step its requests: a failure on the tail alone is measured
    // again at min_qps, and the steps there are judged together (they share one pooled
    // value), before the test is given up.
    int at_min = 0;
    for (const Judged& j : judged_) at_min += j.outcome.rate_qps == q_ ? 1 : 0;
    if (last->passed_apart_from_tail && last->tail_samples > 0 && at_min < kTailJudgingSteps) {
      return RunStep{q_};
    }
    return Finish(false, "min_qps already fails");
  }
  if (passed && q_ >= max_qps_) return Finish(false, "max_qps holds the SLO");
  if (steps_ >= max_steps_) return Finish(best_ && lowest_failure_, "step limit reached");
  q_ = Place(next);
  return RunStep{q_};
}

}  // namespace vanguard::worker
