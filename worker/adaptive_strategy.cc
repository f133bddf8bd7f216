// The adaptive capacity search's phases. See adaptive_strategy.h; docs/strategies.md has the
// reasons and the figures.
#include "worker/adaptive_strategy.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/line_fit.h"

namespace vanguard::worker {
namespace {

// The rate a step actually offered (its arrivals), else the rate it was asked for.
double OfferedRate(const StepOutcome& o) { return o.offered_qps > 0 ? o.offered_qps : o.rate_qps; }

// |tail ratio - 1| within two standard errors over at least two units, or a pass whose
// backlog still rose: a verdict the reading cannot make.
bool Undecided(const StepOutcome& o) {
  if (o.tail_units >= 2 && o.tail_samples > 0 && std::abs(o.tail_ratio - 1) < 2 * o.tail_ratio_se) {
    return true;
  }
  return o.passed && o.backlog_rising;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AdaptiveStrategy>> AdaptiveStrategy::Create(
    const vanguard::v1::AdaptiveStrategy& config, double horizon_s) {
  if (!std::isfinite(config.min_qps()) || config.min_qps() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.min_qps must be > 0, got ", config.min_qps()));
  }
  if (!std::isfinite(config.max_qps()) || config.max_qps() <= config.min_qps()) {
    return absl::InvalidArgumentError(absl::StrCat("adaptive.max_qps must be > min_qps (",
                                                   config.min_qps(), "), got ", config.max_qps()));
  }
  if (config.damping() != 0 &&
      (!std::isfinite(config.damping()) || config.damping() <= 0 || config.damping() >= 1)) {
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
  if (!std::isfinite(horizon_s) || horizon_s <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sustain_horizon must be > 0 s, got ", horizon_s));
  }
  const int max_steps = config.max_steps() == 0 ? kDefaultMaxSteps : config.max_steps();
  return std::unique_ptr<AdaptiveStrategy>(
      new AdaptiveStrategy(config.min_qps(), config.max_qps(), tau, epsilon, max_steps, horizon_s));
}

// ------------------------------------------------------------------------- the loop

Decision AdaptiveStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (!started_ || !last) {
    started_ = true;
    return RunStep{q_};
  }
  if (!last->client_valid && !retried_invalid_client_) {
    retried_invalid_client_ = true;
    return RunStep{q_, hold_, purpose_ == Purpose::kHold};  // again, for the same purpose
  }
  const Purpose purpose = purpose_;
  const bool passed = Record(*last, purpose);
  purpose_ = Purpose::kMove;
  hold_ = 1;
  if (purpose == Purpose::kHold) {
    if (std::optional<Decision> d = AfterHoldChunk(converged_why_)) return *d;
  } else if (std::optional<RunStep> longer = Extension(judged_.back().outcome)) {
    return *longer;
  }
  return Decide(passed, purpose);
}

Decision AdaptiveStrategy::Decide(bool passed, Purpose purpose) {
  const Judged& last = judged_.back();
  if (batching_probe_ && !batching_probe_judged_ && SameRate(q_, *batching_probe_)) {
    // The probe above a min_qps that failed on latency alone (BatchingProbe), judged on its
    // own reading (pooled with the failures below, it could pass or fail with them).
    batching_probe_judged_ = true;
    if (!last.outcome.passed || last.noise) {
      return Finish(false, absl::StrFormat("min_qps already fails, and so does %.4g req/s", q_));
    }
    ExpireBatchingWaits(last);
    passed = PoolVerdicts();
  }
  if (!best_ && lowest_failure_ && q_ <= min_qps_ && last.outcome.passed && !last.noise &&
      BetterThanBefore(last)) {
    // At min_qps, passing on its own and better than the reading before: the model got faster
    // (still warming); the older readings there expire instead of outvoting it.
    ExpireWarmingReadings(last);
    passed = PoolVerdicts();
  }
  if (!best_ && lowest_failure_ && q_ <= min_qps_ && !last.empty) {
    // Nothing below to lend the step its requests: a failure on the tail alone is measured
    // again at min_qps (the steps there judged together) before the test is given up, and so
    // is any failure while the model may still be warming (the first kWarmingSteps steps, or
    // a reading better than the one before it at min_qps): a cold model fails rates it
    // carries once warm, and a later pass expires the cold reading.
    int at_min = 0;
    for (const Judged& j : judged_) at_min += !j.expired && j.outcome.rate_qps == q_ ? 1 : 0;
    // A reading better than the one before is still warming however many came before it.
    const bool tail_only = last.outcome.passed_apart_from_tail && last.outcome.tail_samples > 0;
    const bool improving = BetterThanBefore(last);
    const bool warming = steps_ <= kWarmingSteps || improving;
    if (budget_steps_ < max_steps_ &&
        (improving || ((tail_only || warming) && at_min < kTailJudgingSteps))) {
      return RunStep{q_};
    }
    if (std::optional<double> probe = BatchingProbe(last)) {
      batching_probe_ = q_ = *probe;
      return RunStep{q_};
    }
    return Finish(false, "min_qps already fails");
  }
  if (passed && q_ >= max_qps_ && !lowest_failure_) {
    // "At least max_qps" is a claim too: held like an estimate before it is made.
    if (holds_ - checked_holds_ < kMaxHolds && budget_steps_ < max_steps_) {
      return StartHold(max_qps_);
    }
    return FinishAtLeast();
  }
  if (budget_steps_ < max_steps_) {
    if (std::optional<double> again = FailureToRemeasure(/*finishing=*/false)) {
      return Remeasure(*again);
    }
  }
  if (std::optional<std::string> why = Converged()) return BeforeFinish(*why);
  if (budget_steps_ >= max_steps_) return Finish(false, "step limit reached");
  const bool noise = last.noise;
  double next;
  if (std::optional<double> probe = ProbeAboveUndecidedFailure()) {
    probed_.push_back(*lowest_failure_);
    q_ = *probe;  // above the failure on purpose: not through Place
    return RunStep{q_};
  }
  if (last.empty) {
    next = q_ * kMaxGrowth;  // too few requests to read anything: far below any limit
  } else if (!lowest_failure_) {
    next = Grow(noise);
  } else {
    next = Refine(passed, noise, purpose == Purpose::kMove);
  }
  q_ = Place(next);
  return RunStep{q_};
}

// ------------------------------------------------------------------- recording a step

bool AdaptiveStrategy::Record(StepOutcome outcome, Purpose purpose) {
  retried_invalid_client_ = false;
  if (!outcome.client_valid) {
    // The load could not even be generated as scheduled twice: not a rate to claim.
    ++invalid_steps_;
    outcome.passed = outcome.passed_apart_from_tail = false;
    outcome.spikes = 0;
    outcome.window_state = vanguard::v1::HEALTH_STATE_OVERLOADED;
  }
  ++steps_;
  // A hold's later chunks continue one measurement: not charged to the step budget.
  if (purpose != Purpose::kHold || hold_parts_ == 0) ++budget_steps_;
  outcome.rate_qps = q_;
  Judged j;
  j.outcome = outcome;
  j.step = steps_;
  j.hold = hold_;
  j.is_hold = purpose == Purpose::kHold;
  // A failure through at most tau isolated spike windows only (spike tolerance); never for a
  // longer look (an extension or a hold).
  j.noise = hold_ <= 1 && !outcome.passed && outcome.spikes > 0 && outcome.spikes <= tau_ &&
            outcome.window_state < vanguard::v1::HEALTH_STATE_UNHEALTHY;
  // A step that measured no request at all (a rate far below one request per part) is no
  // evidence either way.
  j.empty = outcome.client_valid && !outcome.passed && outcome.tail_samples == 0 &&
            outcome.achieved_qps == 0 && outcome.offered_qps == 0 && outcome.spikes == 0 &&
            outcome.window_state <= vanguard::v1::HEALTH_STATE_HEALTHY;
  j.expired = j.empty;
  ExpireContradicted(j);
  judged_.push_back(j);
  const bool passed = PoolVerdicts();
  if (!passed && !j.noise) last_failure_at_ = steps_;
  return passed;
}

bool AdaptiveStrategy::BetterThanBefore(const Judged& last) const {
  const StepOutcome* before = nullptr;
  for (const Judged& j : judged_) {
    if (!j.expired && &j != &last && j.outcome.rate_qps == last.outcome.rate_qps) {
      before = &j.outcome;
    }
  }
  return before != nullptr && last.outcome.limit_ratio < before->limit_ratio;
}

void AdaptiveStrategy::ExpireOlder(const Judged& newer,
                                   const std::function<bool(const Judged&)>& applies,
                                   const std::string& why) {
  for (Judged& older : judged_) {
    if (older.expired || older.step >= newer.step || !applies(older)) continue;
    older.expired = true;
    drift_flags_.push_back(absl::StrFormat("reading at %.4g req/s (step %d) expired: %s",
                                           older.outcome.rate_qps, older.step, why));
  }
}

void AdaptiveStrategy::ExpireWarmingReadings(const Judged& newer) {
  const double rate = newer.outcome.rate_qps;
  ExpireOlder(
      newer,
      [this, rate, &newer](const Judged& older) {
        if (older.outcome.rate_qps != rate) return false;
        NoteFasterSince(older, newer);
        return true;
      },
      absl::StrFormat("the model read faster since (step %d passed)", newer.step));
}

void AdaptiveStrategy::NoteFasterSince(const Judged& older, const Judged& newer) {
  const double before = older.outcome.p50_ms, after = newer.outcome.p50_ms;
  if (older.step <= kWarmingSteps && before > 0 && after > 0 && after < kWarmedP50 * before) {
    warming_through_step_ = std::max(warming_through_step_, older.step);
  }
}

std::optional<double> AdaptiveStrategy::BatchingProbe(const Judged& last) const {
  const StepOutcome& o = last.outcome;
  if (batching_probe_ || budget_steps_ >= max_steps_ || min_qps_ >= max_qps_ || o.passed ||
      !o.passed_apart_from_tail || o.tail_samples <= 0 || o.backlog_rising) {
    return std::nullopt;
  }
  return std::min(max_qps_, min_qps_ * kMaxGrowth);
}

void AdaptiveStrategy::ExpireBatchingWaits(const Judged& newer) {
  const double rate = newer.outcome.rate_qps;
  ExpireOlder(
      newer,
      [rate](const Judged& older) {
        return older.outcome.rate_qps < rate && !older.outcome.passed;
      },
      absl::StrFormat("latency fell with the rate (step %d passed at %.4g req/s): a batcher "
                      "waiting to fill its batches, not load",
                      newer.step, rate));
}

bool AdaptiveStrategy::Contradicts(const Judged& older, const Judged& newer) {
  const StepOutcome &a = older.outcome, &b = newer.outcome;
  if (older.expired || older.noise || newer.noise || !a.client_valid || !b.client_valid) {
    return false;
  }
  if (Undecided(a) || Undecided(b)) return false;
  // A shorter reading does not overrule a longer one.
  if (a.tail_samples > 0 && b.tail_samples > 0 && 2 * b.tail_samples < a.tail_samples) {
    return false;
  }
  // Only against the order a stationary model keeps (worse at a higher rate): the newer reading
  // better at a rate at least as high (the model got faster), or worse at a rate at most as
  // high (it got slower). A pass just below a failure is a cliff, not a contradiction.
  const bool at_or_above = b.rate_qps >= a.rate_qps, at_or_below = b.rate_qps <= a.rate_qps;
  const bool se_known =
      a.tail_units >= 2 && b.tail_units >= 2 && a.tail_samples > 0 && b.tail_samples > 0;
  const double allowed = kContradictionZ * std::hypot(a.tail_ratio_se, b.tail_ratio_se);
  if (se_known && allowed > 0 && a.passed_apart_from_tail && b.passed_apart_from_tail) {
    return (at_or_above && a.tail_ratio - b.tail_ratio > allowed) ||
           (at_or_below && b.tail_ratio - a.tail_ratio > allowed);
  }
  return (at_or_above && !a.passed && b.passed) || (at_or_below && a.passed && !b.passed);
}

bool AdaptiveStrategy::Warmed(const Judged& older, const Judged& newer) const {
  const StepOutcome &a = older.outcome, &b = newer.outcome;
  if (older.expired || older.noise || newer.noise || !a.client_valid || !b.client_valid ||
      !SameRate(a.rate_qps, b.rate_qps) || a.passed || !b.passed || a.p50_ms <= 0 ||
      b.p50_ms <= 0 || b.p50_ms >= kWarmedP50 * a.p50_ms || b.limit_ratio >= a.limit_ratio ||
      2 * b.tail_samples < a.tail_samples) {
    return false;
  }
  // The median fell at lower rates too: a reading up to the failure at a lower rate read a
  // median above the newer one's (a model that got faster, not an episode that raised the
  // failure's median alone: calm readings below it read as fast as the newer one).
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (!j.expired && j.step <= older.step && o.rate_qps < a.rate_qps &&
        kWarmedP50 * o.p50_ms > b.p50_ms) {
      return true;
    }
  }
  return false;
}

void AdaptiveStrategy::ExpireContradicted(const Judged& newer) {
  for (Judged& older : judged_) {
    if (!SameRate(older.outcome.rate_qps, newer.outcome.rate_qps)) continue;
    const bool contradicted = Contradicts(older, newer);
    if (!contradicted && !Warmed(older, newer)) continue;
    NoteFasterSince(older, newer);
    older.expired = true;
    drift_flags_.push_back(absl::StrFormat(
        "reading at %.4g req/s (step %d) expired: %s", older.outcome.rate_qps, older.step,
        contradicted ? absl::StrFormat("contradicted by step %d", newer.step)
                     : absl::StrFormat("the model read faster since (step %d passed with a "
                                       "lower median)",
                                       newer.step)));
  }
}

AdaptiveStrategy::PooledFit AdaptiveStrategy::FitReadings() const {
  PooledFit f;
  for (size_t i = 0; i < judged_.size(); ++i) {
    const StepOutcome& o = judged_[i].outcome;
    if (!judged_[i].expired && !judged_[i].is_hold && o.client_valid && o.tail_samples > 0) {
      f.points.push_back(
          {o.rate_qps, o.tail_ratio, static_cast<double>(o.tail_samples), o.tail_allowed});
      f.pooled.push_back(i);
    }
  }
  const std::vector<double> fit = IsotonicTailFit(f.points);
  const std::vector<bool> few = TooFewOverLimit(f.points, fit);
  f.fitted.assign(judged_.size(), -1);
  f.too_few.assign(judged_.size(), false);
  for (size_t k = 0; k < f.pooled.size(); ++k) {
    f.fitted[f.pooled[k]] = fit[k];
    f.too_few[f.pooled[k]] = few[k];
  }
  return f;
}

AdaptiveStrategy::Verdicts AdaptiveStrategy::JudgeReadings(const PooledFit& f,
                                                           std::optional<double> veto,
                                                           std::optional<double> floor) const {
  Verdicts v;
  v.pass.resize(judged_.size());
  const auto rate = [&](size_t i) { return judged_[i].outcome.rate_qps; };
  for (size_t i = 0; i < judged_.size(); ++i) {
    const StepOutcome& o = judged_[i].outcome;
    v.pass[i] = !(veto && rate(i) >= *veto) &&
                ((floor && rate(i) <= *floor) ||
                 (f.fitted[i] >= 0 ? o.passed_apart_from_tail && (f.fitted[i] <= 1 || f.too_few[i])
                                   : o.passed));
    // A hold is judged on its own (AfterHoldChunk); a failed one vetoes above.
    if (judged_[i].expired || judged_[i].is_hold) continue;
    if (!v.pass[i] && !judged_[i].noise && (v.failure == kNone || rate(i) < rate(v.failure))) {
      v.failure = i;
    }
  }
  for (size_t i = 0; i < judged_.size(); ++i) {
    if (!judged_[i].expired && !judged_[i].is_hold && v.pass[i] &&
        (v.failure == kNone || rate(i) < rate(v.failure)) &&
        (v.best == kNone || rate(i) > rate(v.best))) {
      v.best = i;
    }
  }
  return v;
}

bool AdaptiveStrategy::PoolVerdicts() {
  PooledFit f = FitReadings();
  // A failed hold is the longest look: its rate and every rate above fail. A hold that held
  // below it is the longest look the other way: its rate and every rate below pass.
  std::optional<double> veto, floor;
  if (const HoldResult* failed = LowestFailedHold()) veto = failed->rate;
  if (const HoldResult* held = HighestHeldBelow(veto.value_or(HUGE_VAL))) floor = held->rate;
  Verdicts v = JudgeReadings(f, veto, floor);
  const auto rate = [&](size_t i) { return judged_[i].outcome.rate_qps; };
  // Once the isotonic verdicts bracket the limit, the steps around the bracket are fitted
  // with one logistic curve (FitTailCurve), and their verdicts follow it.
  curve_.reset();
  if (v.best != kNone && v.failure != kNone) {
    const double low = kCurveBelow * rate(v.best), high = rate(v.failure);
    curve_ = FitTailCurve(f.points, low, high);
    if (curve_) {
      for (size_t k = 0; k < f.pooled.size(); ++k) {
        const double r = f.points[k].rate_qps;
        if (r >= low && r <= high) f.fitted[f.pooled[k]] = curve_->At(r);
      }
      v = JudgeReadings(f, veto, floor);
    }
  }
  lowest_failure_.reset();
  if (v.failure != kNone) lowest_failure_ = rate(v.failure);
  const std::optional<double> previous_best = best_;
  best_.reset();
  if (v.best != kNone) best_ = rate(v.best);
  if (best_ && best_ != previous_best) {
    best_history_.push_back(*best_);
    best_recorded_at_.push_back(steps_);
  }
  SetPlacementRatios(v.best, v.failure, f.fitted);
  if (veto && (!lowest_failure_ || *veto < *lowest_failure_)) {
    lowest_failure_ = *veto;
    failure_ratio_ = 0;  // a hold's reading places nothing: bisect below it
  }
  return v.pass.back();
}

void AdaptiveStrategy::SetPlacementRatios(size_t best, size_t failure,
                                          const std::vector<double>& fitted) {
  // The pooled tail ratios when both ends have one (below 1 at the best, above 1 at the
  // failure) and the best's step could have read its own (its fit puts at least one of its
  // requests over the limit), else the limit ratios when those are usable.
  const bool tails_usable = best != kNone && failure != kNone && fitted[best] > 0 &&
                            fitted[best] < 1 && fitted[failure] > 1;
  const bool readable =
      tails_usable && fitted[best] * static_cast<double>(judged_[best].outcome.tail_samples) *
                              judged_[best].outcome.tail_allowed >=
                          1;
  best_ratio_ = best != kNone ? judged_[best].outcome.limit_ratio : 0;
  failure_ratio_ = failure != kNone ? judged_[failure].outcome.limit_ratio : 0;
  const bool limits_usable = best_ratio_ > 0 && best_ratio_ < 1 && failure_ratio_ > 1;
  if (tails_usable && (readable || !limits_usable)) {
    best_ratio_ = fitted[best];
    failure_ratio_ = fitted[failure];
  }
}

// --------------------------------------------------------------- deciding the next step

double AdaptiveStrategy::Grow(bool noise) const {
  // The highest pass's own reading says how far below its limits it ran.
  const Judged* base = nullptr;
  for (const Judged& j : judged_) {
    if (!j.expired && best_ && j.outcome.rate_qps == *best_) base = &j;
  }
  if (noise || base == nullptr) return std::max(q_, best_.value_or(0)) * kMinGrowth;
  const double ratio = base->outcome.limit_ratio;
  if (ratio <= 0) {  // no ratio reported: the health state's band
    const vanguard::v1::HealthState h =
        std::max(base->outcome.health_state, base->outcome.window_state);
    const double band = h <= vanguard::v1::HEALTH_STATE_HEALTHY     ? 0.5
                        : h == vanguard::v1::HEALTH_STATE_WARN      ? 0.7
                        : h == vanguard::v1::HEALTH_STATE_UNHEALTHY ? 0.87
                                                                    : 1;
    return *best_ * std::clamp(1 / band, kMinGrowth, kMaxGrowth);
  }
  const std::optional<double> floor = UnloadedRatio();
  if (!floor) {
    // Nothing measured kFloorSpan below: the ratio cannot tell the model's unloaded latency
    // from the load's, so the pass grows by kFloorSpan at least (a failure there brackets).
    return *best_ * std::clamp(1 / ratio, kFloorSpan, kMaxGrowth);
  }
  return *best_ * std::clamp(1 / HeadroomAboveFloor(ratio, *floor), kMinGrowth, kMaxGrowth);
}

std::optional<double> AdaptiveStrategy::UnloadedRatio() const {
  std::optional<double> floor;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || j.noise || j.empty || o.limit_ratio <= 0 || o.rate_qps * kFloorSpan > *best_) {
      continue;
    }
    floor = std::min(floor.value_or(o.limit_ratio), o.limit_ratio);
  }
  return floor;
}

double AdaptiveStrategy::HeadroomAboveFloor(double ratio, double floor) {
  if (!(floor > 0 && floor < 1)) return ratio;
  if (ratio <= floor) return 0;  // no rise at all: far below the knee
  return std::min(ratio, (ratio - floor) / (1 - floor));
}

double AdaptiveStrategy::Refine(bool after_pass, bool noise, bool is_move) {
  const double high = *lowest_failure_;
  if (!best_) {
    // Nothing passed below the failure: down by its excess over the limit (2x to 4x).
    const Judged* f = nullptr;
    for (const Judged& j : judged_) {
      if (!j.expired && j.outcome.rate_qps == high) f = &j;
    }
    const double ratio = f != nullptr ? f->outcome.limit_ratio : 0;
    return high / std::clamp(ratio, 2.0, kMaxGrowth);
  }
  const double low = *best_;
  if (noise) return q_ < high ? (std::max(q_, low) + high) / 2 : (low + high) / 2;
  if (is_move) {
    // The same end of the bracket moved on the step before too: the end that stayed counts
    // half as much again (Illinois); either end moving in turn resets the weights.
    if (last_placement_after_pass_ == after_pass) {
      (after_pass ? high_scale_ : low_scale_) *= 0.5;
    } else {
      low_scale_ = high_scale_ = 1;
    }
  }
  std::optional<double> next = FeedbackPlacement(after_pass);
  if (next) {
    if (is_move) last_placement_after_pass_ = after_pass;
  } else {
    next = high / low > 1.5 ? std::sqrt(low * high) : (low + high) / 2;
  }
  if (high / low > 1.5) {
    // A wide bracket shrinks by at least a quarter of its log width per step.
    const double width = std::log(high / low);
    *next = std::clamp(*next, low * std::exp(0.25 * width), low * std::exp(0.75 * width));
  }
  return *next;
}

std::optional<double> AdaptiveStrategy::FeedbackPlacement(bool after_pass) const {
  if (!best_ || !lowest_failure_ || *lowest_failure_ <= *best_) return std::nullopt;
  if (!(best_ratio_ > 0 && best_ratio_ < 1) || !(failure_ratio_ > 1)) return std::nullopt;
  const double low = *best_, high = *lowest_failure_, gap = high - low;
  const double at_low = std::log(best_ratio_) * low_scale_;
  const double at_high = std::log(failure_ratio_) * high_scale_;
  const double predicted = low + -at_low / (at_high - at_low) * gap;
  const double margin = 0.4 * epsilon_ * low;
  const double aim = after_pass ? predicted + margin : predicted - margin;
  const double inside = std::min(0.1 * gap, margin);
  return std::clamp(aim, low + inside, high - inside);
}

double AdaptiveStrategy::Place(double target) const {
  double q = std::clamp(target, min_qps_, max_qps_);
  if (lowest_failure_ && q >= *lowest_failure_) {
    // Never repeat a known failure: go halfway between what is known to hold and it.
    q = (best_.value_or(min_qps_) + *lowest_failure_) / 2;
  }
  return q;
}

std::optional<RunStep> AdaptiveStrategy::Extension(const StepOutcome& last) {
  if (!last.client_valid || !UndecidedAt(q_, last)) return std::nullopt;
  if (!extended_rate_ || !SameRate(*extended_rate_, q_)) {
    extended_rate_ = q_;
    extensions_ = 0;
  }
  if (extensions_ >= kMaxExtensions || budget_steps_ >= max_steps_) return std::nullopt;
  ++extensions_;
  purpose_ = Purpose::kExtension;
  hold_ = extensions_ == 1 ? 2 : 4;
  return RunStep{q_, hold_};
}

bool AdaptiveStrategy::UndecidedAt(double rate, const StepOutcome& last) const {
  if (last.passed && last.backlog_rising) return true;
  // The readings at the rate pooled: their tail ratio by requests and its standard error.
  double over = 0, requests = 0, se_sq = 0;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || j.is_hold || o.rate_qps != rate || o.tail_samples <= 0) continue;
    if (o.tail_units < 2) return Undecided(last);  // no window evidence: the step's own
    const double n = static_cast<double>(o.tail_samples);
    over += o.tail_ratio * n;
    requests += n;
    se_sq += n * n * o.tail_ratio_se * o.tail_ratio_se;
  }
  if (requests <= 0) return false;
  return std::abs(over / requests - 1) < 2 * std::sqrt(se_sq) / requests;
}

std::optional<double> AdaptiveStrategy::ProbeAboveUndecidedFailure() const {
  if (!lowest_failure_ || *lowest_failure_ >= max_qps_ || LowestFailedHold() != nullptr) {
    return std::nullopt;
  }
  const double rate = *lowest_failure_;
  const Judged& last = judged_.back();
  if (last.is_hold || last.outcome.rate_qps != rate || !UndecidedAt(rate, last.outcome)) {
    return std::nullopt;
  }
  for (double r : probed_) {
    if (SameRate(r, rate)) return std::nullopt;
  }
  // The lowest limit ratio read at the rate: its headroom when no episode landed in it.
  double ratio = 1;
  for (const Judged& j : judged_) {
    if (j.expired) continue;
    const double r = j.outcome.rate_qps;
    if (r > rate * (1 + kSameRate)) return std::nullopt;  // measured above it already
    if (r == rate && j.outcome.limit_ratio > 0) ratio = std::min(ratio, j.outcome.limit_ratio);
  }
  return std::min(max_qps_, rate * std::clamp(1 / ratio, kMinGrowth, kMaxProbeGrowth));
}

Decision AdaptiveStrategy::Remeasure(double rate) {
  remeasured_.push_back(rate);
  purpose_ = Purpose::kRemeasure;
  q_ = rate;
  return RunStep{q_};
}

const AdaptiveStrategy::Judged* AdaptiveStrategy::LowestOwnFailure() const {
  const Judged* failure = nullptr;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || j.noise || j.is_hold || o.passed || !o.client_valid) continue;
    if (failure == nullptr || o.rate_qps < failure->outcome.rate_qps) failure = &j;
  }
  return failure;
}

std::optional<double> AdaptiveStrategy::FailureToRemeasure(bool finishing) const {
  const Judged* f = LowestOwnFailure();
  if (f == nullptr) return std::nullopt;
  const double rate = f->outcome.rate_qps;
  for (double r : remeasured_) {
    if (SameRate(r, rate)) return std::nullopt;
  }
  int readings = 0;
  bool pass_above_later = false;
  for (const Judged& j : judged_) {
    if (j.expired) continue;
    readings += j.outcome.rate_qps == rate ? 1 : 0;
    pass_above_later |= j.outcome.passed && !j.noise && j.step > f->step &&
                        j.outcome.rate_qps > rate * (1 + kSameRate);
  }
  if (readings > 1) return std::nullopt;  // measured more than once already
  if (pass_above_later) return rate;      // non-monotone evidence
  if (!finishing) return std::nullopt;
  if (f->step <= kWarmingSteps || FasterSince(f->step) || Disturbed(*f)) return rate;
  return std::nullopt;
}

std::optional<double> AdaptiveStrategy::StaleFailure() const {
  if (!lowest_failure_) return std::nullopt;
  const Judged* bound = nullptr;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || j.noise || j.is_hold || o.passed || !o.client_valid ||
        o.rate_qps < *lowest_failure_ * (1 - kSameRate)) {
      continue;
    }
    if (bound == nullptr || o.rate_qps < bound->outcome.rate_qps) bound = &j;
  }
  if (bound == nullptr) return std::nullopt;
  const double rate = bound->outcome.rate_qps;
  // Each failing rate once: a rate near one measured again (its failure expired since) is
  // another failure, measured while the model was slower still.
  if (std::find(remeasured_.begin(), remeasured_.end(), rate) != remeasured_.end()) {
    return std::nullopt;
  }
  int last_step = 0;
  for (const Judged& j : judged_) {
    if (!j.expired && j.outcome.rate_qps == rate) last_step = std::max(last_step, j.step);
  }
  return FasterSince(last_step) ? std::optional<double>(rate) : std::nullopt;
}

bool AdaptiveStrategy::FasterSince(int step) const {
  for (const Judged& before : judged_) {
    if (before.expired || before.step > step || before.outcome.limit_ratio <= 0) continue;
    for (const Judged& after : judged_) {
      if (after.expired || after.step <= step || after.outcome.limit_ratio <= 0) continue;
      // At a rate at least as high, never a little lower: near a cliff a rate 1% lower reads
      // several times lower on a model that did not change.
      if (after.outcome.rate_qps < before.outcome.rate_qps) continue;
      if (after.outcome.limit_ratio < kFasterRatio * before.outcome.limit_ratio) return true;
      // A median below an earlier one's at half the rate or less (queueing only adds to a
      // median as the rate grows; neighbouring rates' medians differ by noise near a limit):
      // a tail made by rare episodes (stalls) hides a speed-up its median shows.
      if (after.outcome.rate_qps >= 2 * before.outcome.rate_qps && after.outcome.p50_ms > 0 &&
          after.outcome.p50_ms < kWarmedP50 * before.outcome.p50_ms) {
        return true;
      }
    }
  }
  return false;
}

bool AdaptiveStrategy::Disturbed(const Judged& failure) const {
  // The two highest passes below the failure on their own readings.
  const StepOutcome* top = nullptr;
  const StepOutcome* below = nullptr;
  const StepOutcome& f = failure.outcome;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || !o.passed || o.rate_qps >= f.rate_qps) continue;
    if (top == nullptr || o.rate_qps > top->rate_qps) {
      if (top != nullptr) below = top;
      top = &o;
    } else if (o.rate_qps < top->rate_qps && (below == nullptr || o.rate_qps > below->rate_qps)) {
      below = &o;
    }
  }
  if (top == nullptr || below == nullptr) return false;
  if (!(f.limit_ratio > 0 && top->limit_ratio > 0 && below->limit_ratio > 0)) return false;
  const double rise_below =
      std::log(top->limit_ratio / below->limit_ratio) / (top->rate_qps / below->rate_qps - 1);
  const double jump = std::log(f.limit_ratio / top->limit_ratio);
  return jump >
         kReadingNoise + kSteepening * std::max(rise_below, 1.0) * (f.rate_qps / top->rate_qps - 1);
}

// -------------------------------------------------------- converging, holding, finishing

std::optional<std::string> AdaptiveStrategy::Converged() const {
  if (!best_ || !lowest_failure_) return std::nullopt;
  // The bests staying put, or the pooled curve, say the search has stopped learning only
  // while it tests near them.
  const bool bracket_near =
      *lowest_failure_ - *best_ <= kConvergedBracketEpsilons * epsilon_ * *best_;
  if (best_history_.size() >= 3 && bracket_near &&
      last_failure_at_ > best_recorded_at_[best_recorded_at_.size() - 3]) {
    const std::vector<double> last_three(best_history_.end() - 3, best_history_.end());
    if (CoefficientOfVariation(last_three) < epsilon_) {
      return "converged (CV of the last three best rates below epsilon)";
    }
  }
  if (*lowest_failure_ - *best_ <= Resolution() * *best_) {
    return "converged (bracket below resolution)";
  }
  if (bracket_near && curve_ && curve_->Crossing() >= *best_ &&
      curve_->Crossing() - *best_ <= 0.5 * epsilon_ * *best_) {
    return "converged (pooled tail curve crosses the limit just above the best)";
  }
  return std::nullopt;
}

Decision AdaptiveStrategy::BeforeFinish(const std::string& why) {
  converged_why_ = why;
  if (budget_steps_ < max_steps_) {
    std::optional<double> again = FailureToRemeasure(/*finishing=*/true);
    if (!again) again = StaleFailure();
    if (again) return Remeasure(*again);
  }
  const double estimate = std::max(min_qps_, Estimate());
  if (hold_held_.value_or(false) && hold_rate_ && SameRate(*hold_rate_, estimate)) {
    // Held already: an episodic failure just above may still be checked.
    if (std::optional<RunStep> check = CheckEpisodicFailure(PooledHold())) return *check;
    return Finish(true, why);
  }
  if (holds_ - checked_holds_ < kMaxHolds && budget_steps_ < max_steps_) return StartHold(estimate);
  if (hold_held_.value_or(false)) return Finish(true, why);
  return Finish(false, holds_ > 0 ? "the estimate's hold did not hold"
                                  : "no steps left to hold the estimate");
}

RunStep AdaptiveStrategy::StartHold(double rate) {
  ++holds_;
  hold_rate_ = rate;
  hold_parts_ = 0;
  hold_held_.reset();
  q_ = rate;
  purpose_ = Purpose::kHold;
  hold_ = HoldChunk(rate);
  return RunStep{q_, hold_, /*verification=*/true};
}

AdaptiveStrategy::HoldReading AdaptiveStrategy::PooledHold() const {
  // The hold is judged on its own chunks pooled (never with the short steps at its rate).
  HoldReading h;
  double over = 0, se_sq = 0;
  for (const Judged& j : judged_) {
    if (!j.is_hold || j.expired || j.outcome.rate_qps != *hold_rate_) continue;
    const StepOutcome& o = j.outcome;
    const double n = static_cast<double>(o.tail_samples);
    const double offered = OfferedRate(o);
    h.seconds += n > 0 && offered > 0 ? n / offered : j.hold * PartSecondsAt(*hold_rate_);
    over += o.tail_ratio * n;
    h.requests += n;
    h.expected_over += n * o.tail_allowed;
    se_sq += n * n * o.tail_ratio_se * o.tail_ratio_se;
    h.others_held &= o.tail_samples > 0 ? o.passed_apart_from_tail : o.passed;
    h.se_known &= o.tail_units >= 2 && o.tail_samples > 0;
  }
  h.ratio = h.requests > 0 ? over / h.requests : (h.others_held ? 0 : 2);
  h.se = h.requests > 0 ? std::sqrt(se_sq) / h.requests : 0;
  return h;
}

std::optional<Decision> AdaptiveStrategy::AfterHoldChunk(const std::string& why) {
  const Judged& last = judged_.back();
  hold_parts_ += last.hold;
  const HoldReading h = PooledHold();
  const double ratio = h.ratio;
  const bool rising = last.outcome.backlog_rising;
  const double part_s = PartSecondsAt(*hold_rate_);
  const double horizon_parts = horizon_s_ / part_s;
  const bool at_horizon = hold_parts_ >= horizon_parts - 1e-9;
  const bool enough_requests = h.expected_over >= kHoldTailEvents;
  // Without tail samples the chunks' own verdicts are all there is. A confident reading
  // passes once the hold covers kMinHoldHorizonShare of the horizon (see the header); a hold
  // with no request over the limit at all is never confident (its standard error is 0 because
  // no episode landed in it, which says nothing about episodes rarer than the hold so far),
  // nor is one with fewer requests than kHoldTailEvents at the limit would need (its batch
  // means count a handful of requests over the limit; episodes cluster them).
  const double min_cover = HoldCoverParts(horizon_parts);
  const bool confident_pass = h.others_held && !rising && ratio <= 1 &&
                              (h.se_known ? ratio > 0 && ratio + 2 * h.se < 1 && enough_requests
                                          : enough_requests || h.requests == 0);
  const bool sure_pass = confident_pass && hold_parts_ >= min_cover - 1e-9;
  const bool sure_fail =
      !h.others_held || (h.se_known ? ratio - 2 * h.se > 1 : ratio > 1 && enough_requests);
  // At the horizon the hold has measured what the claim is about (the share over the limit
  // across the sustained horizon): a backlog still rising in its last chunk only keeps a hold
  // from passing early. It passes kHorizonPassZ standard errors under the limit.
  const bool passes_at_horizon =
      h.others_held && ratio + kHorizonPassZ * (h.se_known ? h.se : 0) <= 1;
  verification_ = absl::StrFormat(
      "held %.4g req/s for %.3g parts (%.0f s, horizon %.0f s): tail ratio %.3g%s over %.0f "
      "requests%s",
      *hold_rate_, hold_parts_, h.seconds, horizon_s_, ratio,
      h.se_known ? absl::StrFormat(" +- %.2g", h.se) : std::string(), h.requests,
      rising ? ", backlog rising" : "");
  if (sure_pass || (at_horizon && passes_at_horizon)) {
    hold_held_ = true;
    absl::StrAppend(&verification_, ": held");
    hold_results_.push_back(ResultOf(h, true));
    return AfterHeldHold(h, why);
  }
  if (sure_fail || at_horizon) {
    hold_held_ = false;
    episode_check_.reset();  // a failed check leaves its failure standing
    absl::StrAppend(&verification_, ": did not hold");
    hold_results_.push_back(ResultOf(h, false));
    PoolVerdicts();
    // Far over, or kMaxHolds holds failed, each at the short steps' best: the short steps that
    // passed here did not see what the holds saw.
    hold_search_ |= ratio >= kBlindHoldRatio || holds_ >= kMaxHolds;
    if (hold_search_) return NextSearchHold();
    return std::nullopt;  // the search goes on from the new bracket
  }
  // Each chunk twice the last, up to the horizon: few steps (and leads) per hold; a confident
  // reading short of the cover runs the rest of the cover in one chunk.
  purpose_ = Purpose::kHold;
  const double next = confident_pass ? min_cover - hold_parts_ : 2 * last.hold;
  hold_ = std::max(1.0, std::min(next, horizon_parts - hold_parts_));
  return RunStep{q_, hold_, /*verification=*/true};
}

std::optional<Decision> AdaptiveStrategy::AfterHeldHold(const HoldReading& h,
                                                        const std::string& why) {
  if (hold_search_) return NextSearchHold();
  if (!lowest_failure_ && *hold_rate_ >= max_qps_) return FinishAtLeast();
  if (!lowest_failure_ && budget_steps_ < max_steps_) {
    // Every failure above the hold expired (the model got faster while it was searched): the
    // hold bounds nothing, and the search goes on above it. Not one of kMaxHolds.
    ++checked_holds_;
    return std::nullopt;
  }
  if (episode_check_ && *hold_rate_ == *episode_check_) {
    // The failure's rate held over a hold: its short failures were episodes the hold
    // averages over. They expire and the search goes on above.
    const double rate = *hold_rate_;
    ExpireOlder(
        judged_.back(),
        [this, rate](const Judged& o) {
          return !o.is_hold && !o.outcome.passed && SameRate(o.outcome.rate_qps, rate);
        },
        absl::StrFormat("a hold at %.4g req/s held (step %d)", rate, steps_));
    episode_check_.reset();
    ++checked_holds_;  // not one of kMaxHolds: the estimate above is held again
    PoolVerdicts();
    return std::nullopt;
  }
  if (std::optional<RunStep> check = CheckEpisodicFailure(h)) return *check;
  if (std::optional<double> stale = StaleFailure(); stale && budget_steps_ < max_steps_) {
    return Remeasure(*stale);  // the hold read faster than the failure above it was
  }
  return Finish(true, why);
}

std::optional<RunStep> AdaptiveStrategy::CheckEpisodicFailure(const HoldReading& h) {
  std::optional<double> failure = EpisodicFailureAbove(h);
  if (!failure || holds_ - checked_holds_ >= kMaxHolds || budget_steps_ >= max_steps_) {
    return std::nullopt;
  }
  ++episode_checks_;
  episode_check_ = failure;
  return StartHold(*failure);  // the failure above is held too (see the header)
}

AdaptiveStrategy::HoldResult AdaptiveStrategy::ResultOf(const HoldReading& h, bool held) const {
  // The variance of log(ratio) is (se / ratio)^2 from the chunks' window evidence, else about
  // 1 / the count over the limit (Poisson).
  const double weight =
      h.se_known && h.se > 0 ? (h.ratio / h.se) * (h.ratio / h.se) : h.expected_over * h.ratio;
  return {*hold_rate_, h.ratio, held, weight};
}

std::optional<double> AdaptiveStrategy::FailedHoldsCrossing() const {
  // Weighted least squares of log(tail ratio) on log(rate) over the failed holds a line can
  // use: a hold that failed early read its ratio on fewer requests, and counts less.
  std::vector<double> log_rate, log_ratio, weight;
  for (const HoldResult& h : hold_results_) {
    if (FittedFailedHold(h)) {
      log_rate.push_back(std::log(h.rate));
      log_ratio.push_back(std::log(h.ratio));
      weight.push_back(h.weight);
    }
  }
  const std::optional<LineFit> line = FitLine(log_rate, log_ratio, weight);
  if (!line) return std::nullopt;  // fewer than two rates
  const double lowest = LowestFailedHold()->rate;
  // A ratio not rising with the rate over three holds or more crosses the limit further below
  // than any line can say, unless a hold held below them; through two (a line fits any two)
  // it says nothing.
  if (line->slope <= 0 && (log_rate.size() < 3 || HighestHeldBelow(lowest) != nullptr)) {
    return std::nullopt;
  }
  const double crossing = line->slope > 0 ? std::exp(line->mean_x - line->mean_y / line->slope) : 0;
  const double clamped =
      std::clamp(crossing, kMinFittedCrossingShare * lowest, (1 - kFirstHoldRetreat) * lowest);
  // Never below a hold that held under the lowest failed one: it measured what the line guesses.
  const HoldResult* held = HighestHeldBelow(lowest);
  return held != nullptr ? std::max(clamped, held->rate) : clamped;
}

bool AdaptiveStrategy::FittedFailedHold(const HoldResult& h) {
  return !h.held && h.ratio > 1 && h.ratio < kMaxFittedHoldRatio && h.weight > 0;
}

const AdaptiveStrategy::HoldResult* AdaptiveStrategy::LowestFailedHold() const {
  const HoldResult* failed = nullptr;
  for (const HoldResult& h : hold_results_) {
    if (!h.held && (failed == nullptr || h.rate < failed->rate)) failed = &h;
  }
  return failed;
}

const AdaptiveStrategy::HoldResult* AdaptiveStrategy::HighestHeldBelow(double rate) const {
  const HoldResult* held = nullptr;
  for (const HoldResult& h : hold_results_) {
    if (h.held && h.rate < rate && (held == nullptr || h.rate > held->rate)) held = &h;
  }
  return held;
}

double AdaptiveStrategy::SearchHoldRate(const HoldResult* held, const HoldResult& failed) const {
  if (held == nullptr) {
    // Below the lowest failed hold: after a narrow failure by kFirstHoldRetreat, after one far
    // over twice as far for each hold failed far over so far (a cliff just below costs one
    // hold, episodes far below a few: the ratio cannot tell the two apart).
    double retreat = kFirstHoldRetreat;
    if (failed.ratio >= kBlindHoldRatio) {
      double far = 0;
      for (const HoldResult& h : hold_results_) far += !h.held && h.ratio >= kBlindHoldRatio;
      retreat = std::min(kMaxHoldRetreat, kFirstHoldRetreat * std::exp2(far - 1));
    }
    const double next = failed.rate * (1 - std::max(retreat, Resolution()));
    int fitted = 0;
    for (const HoldResult& h : hold_results_) fitted += FittedFailedHold(h);
    if (fitted < kFittedHoldsToRetreat) return next;
    return std::min(next, FailedHoldsCrossing().value_or(next));
  }
  // Where log(tail ratio) crosses 0 on the line through the two holds (log rate), else their
  // geometric middle; each hold cuts at least a quarter of the bracket's log width.
  double t = 0.5;
  if (held->ratio > 0 && failed.ratio > 1) {
    t = std::log(1 / held->ratio) / std::log(failed.ratio / held->ratio);
  }
  return held->rate * std::pow(failed.rate / held->rate, std::clamp(t, 0.25, 0.75));
}

Decision AdaptiveStrategy::NextSearchHold() {
  const HoldResult* failed = LowestFailedHold();
  const HoldResult* held = HighestHeldBelow(failed->rate);
  if (held != nullptr && failed->rate <= held->rate * (1 + kHoldSearchBracket)) {
    return Finish(true, absl::StrFormat("converged (holds at %.4g and %.4g req/s bracket the "
                                        "limit within %.0f%%)",
                                        held->rate, failed->rate, 100 * kHoldSearchBracket));
  }
  if (holds_ >= kMaxSearchHolds || budget_steps_ >= max_steps_) {
    failed_holds_cap_ = FailedHoldsCrossing();
    return Finish(false, "holds left the limit undecided");
  }
  const double next = std::max(min_qps_, SearchHoldRate(held, *failed));
  if (failed->rate <= min_qps_) return Finish(false, "min_qps fails its hold");
  return StartHold(next);
}

Decision AdaptiveStrategy::FinishAtLeast() {
  Done done;
  done.max_sustainable_qps = done.best_pass_qps = max_qps_;
  done.at_least = true;
  done.converged = false;
  done.confidence_low_qps = max_qps_;
  done.confidence_high_qps = 0;  // not known: the range ended first
  done.drift_flags = drift_flags_;
  done.warming_through_step = warming_through_step_;
  done.verification = hold_held_.value_or(false) && hold_rate_ && *hold_rate_ >= max_qps_
                          ? verification_
                          : "not held: the range's top passed";
  done.summary = absl::StrFormat(
      "adaptive: max_qps holds the SLO after %d steps: capacity at least %g req/s (the range's "
      "top, not the capacity; raise max_qps to measure it)",
      steps_, max_qps_);
  done_ = done;
  return done;
}

Decision AdaptiveStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  const bool held = hold_held_.value_or(false) && hold_rate_;
  done.best_pass_qps = best_.value_or(0);
  done.max_sustainable_qps = held && !hold_search_ ? *hold_rate_ : Estimate();
  if (failed_holds_cap_) {
    done.max_sustainable_qps = std::min(done.max_sustainable_qps, *failed_holds_cap_);
  }
  if (!converged && !held && !hold_search_ && best_ && lowest_failure_) {
    // Not verified: the conservative end of the bracket.
    done.max_sustainable_qps = std::min(done.max_sustainable_qps, *best_ * (1 - Resolution()));
  }
  done.converged = converged;
  done.confidence_low_qps = done.max_sustainable_qps;
  done.confidence_high_qps = lowest_failure_.value_or(max_qps_);
  done.drift_flags = drift_flags_;
  done.warming_through_step = warming_through_step_;
  done.verification = verification_.empty() ? "not held" : verification_;
  if (!converged) done.more_time_needed_s = MoreTimeNeeded();
  std::string notes;
  if (curve_)
    absl::StrAppendFormat(&notes, "; pooled tail curve reaches the limit at %.4g qps",
                          curve_->Crossing());
  if (invalid_steps_ > 0) {
    absl::StrAppendFormat(
        &notes, "; %d rate(s) failed because the load generator was invalid twice", invalid_steps_);
  }
  for (double r : remeasured_)
    absl::StrAppendFormat(&notes, "; the failure at %g qps measured again", r);
  if (!drift_flags_.empty()) {
    absl::StrAppendFormat(&notes, "; %d reading(s) expired", drift_flags_.size());
  }
  if (best_ && lowest_failure_) {
    absl::StrAppendFormat(&notes, "; bracket [%g, %g] qps, resolution %.3g%%", *best_,
                          *lowest_failure_, 100 * Resolution());
  }
  absl::StrAppendFormat(&notes, "; verification: %s", done.verification);
  absl::StrAppend(&notes, FlatTailNote(done.max_sustainable_qps));
  if (!converged && done.more_time_needed_s > 0) {
    absl::StrAppendFormat(&notes, "; undecided: about %.0f s more would decide",
                          done.more_time_needed_s);
  }
  done.summary = absl::StrFormat(
      "adaptive: %s after %d steps; best %g qps, lowest failure %s%s", why, steps_,
      best_.value_or(0),
      lowest_failure_ ? absl::StrFormat("%g qps", *lowest_failure_) : std::string("none"), notes);
  done_ = done;
  return done;
}

// ------------------------------------------------------------------------- figures

double AdaptiveStrategy::Estimate() const {
  if (hold_search_) {
    const HoldResult* failed = LowestFailedHold();
    const HoldResult* held = HighestHeldBelow(failed->rate);
    if (held != nullptr) return held->rate;
    return failed->rate <= min_qps_ ? 0 : std::max(min_qps_, SearchHoldRate(nullptr, *failed));
  }
  // Never below a hold that held under the lowest failed one (PoolVerdicts passes its rate).
  const HoldResult* failed = LowestFailedHold();
  const HoldResult* held = HighestHeldBelow(failed != nullptr ? failed->rate : HUGE_VAL);
  return std::max(best_.value_or(0), held != nullptr ? held->rate : 0);
}

std::optional<int> AdaptiveStrategy::StepsLeft() const {
  if (done_) return 0;
  if (!started_) return std::nullopt;
  const int budget = std::max(0, max_steps_ - budget_steps_ - 1);
  // A hold in progress counts its horizon in parts at its own rate, as AfterHoldChunk does.
  const double horizon_parts =
      horizon_s_ /
      (purpose_ == Purpose::kHold && hold_rate_ ? PartSecondsAt(*hold_rate_) : StepSeconds());
  // Chunks doubling from kMinHold until the hold covers its share of the horizon (a
  // confident hold stops there; an undecided one, or one of a hold search, runs on to the
  // horizon).
  const double cover = HoldCoverParts(horizon_parts);
  const auto chunks = [&](double from_parts, double done_parts) {
    int n = 0;
    for (double chunk = from_parts, held = done_parts; held < cover - 1e-9 && n < 10;
         chunk *= 2, ++n) {
      held += chunk;
    }
    return n;
  };
  // A hold's chunks after its first are not charged to the budget.
  if (purpose_ == Purpose::kHold) return chunks(2 * hold_, hold_parts_ + hold_);
  int search = 0;
  if (best_ && lowest_failure_) {
    const double relative = (*lowest_failure_ - *best_) / *best_;
    search = std::max(0, static_cast<int>(std::ceil(std::log2(relative / Resolution()))));
  } else {
    const double from = std::max(q_, min_qps_);
    search = static_cast<int>(std::ceil(std::log(max_qps_ / from) / std::log(kMaxGrowth))) + 3;
  }
  const int hold_chunks = chunks(kMinHold, 0);
  return std::min(budget, search + std::min(hold_chunks, 1)) + std::max(0, hold_chunks - 1);
}

double AdaptiveStrategy::MoreTimeNeeded() const {
  double steps = 0;
  if (best_ && lowest_failure_) {
    // Halvings of the bracket down to the resolution.
    const double relative = (*lowest_failure_ - *best_) / *best_;
    steps = std::max(0.0, std::ceil(std::log2(relative / Resolution())));
  } else if (best_) {
    steps = std::ceil(std::log(max_qps_ / *best_) / std::log(kMaxGrowth)) + 3;
  } else {
    return 0;
  }
  const double hold_parts = std::min(horizon_s_ / StepSeconds(), kMaxHoldChunk);
  return (steps + hold_parts) * StepSeconds();
}

std::string AdaptiveStrategy::FlatTailNote(double estimate) const {
  double over = 0, requests = 0, top = 0;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || !o.client_valid || o.tail_samples <= 0 || o.rate_qps > 0.5 * estimate) {
      continue;
    }
    over += o.tail_ratio * static_cast<double>(o.tail_samples);
    requests += static_cast<double>(o.tail_samples);
    top = std::max(top, o.rate_qps);
  }
  if (requests < kFlatTailRequests || over / requests < kFlatTailRatio) return "";
  return absl::StrFormat(
      "; flat tail: at or below %.4g req/s (half the estimate or less) %.2g of the allowed share "
      "is already over the limit, so the capacity is ill-conditioned (the share hardly grows "
      "with the rate, and its noise moves the crossing far)",
      top, over / requests);
}

int64_t AdaptiveStrategy::RequestsPerStepAt(double rate) const {
  int64_t fewest = 0;
  for (const Judged& j : judged_) {
    const auto n = static_cast<int64_t>(static_cast<double>(j.outcome.tail_samples) / j.hold);
    if (j.outcome.rate_qps == rate && n > 0) fewest = fewest > 0 ? std::min(fewest, n) : n;
  }
  return fewest;
}

double AdaptiveStrategy::Resolution() const {
  const int64_t n = best_ ? RequestsPerStepAt(*best_) : 0;
  return n > 0 ? std::max(epsilon_, 1 / std::sqrt(static_cast<double>(n))) : epsilon_;
}

double AdaptiveStrategy::MedianPartSeconds(const std::function<bool(const Judged&)>& counts) const {
  std::vector<double> seconds;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    const double offered = OfferedRate(o);
    if (o.tail_samples > 0 && offered > 0 && counts(j)) {
      seconds.push_back(static_cast<double>(o.tail_samples) / offered / j.hold);
    }
  }
  if (seconds.empty()) return 0;
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

double AdaptiveStrategy::StepSeconds() const {
  const double seconds = MedianPartSeconds([](const Judged&) { return true; });
  return seconds > 0 ? seconds : kAssumedStepS;
}

double AdaptiveStrategy::HoldCoverParts(double horizon_parts) const {
  if (hold_search_ || (hold_rate_ && EpisodeNear(*hold_rate_))) return horizon_parts;
  return std::max(kMinHold, kMinHoldHorizonShare * horizon_parts);
}

bool AdaptiveStrategy::IsEpisode(const Judged& j) {
  const StepOutcome& o = j.outcome;
  return !j.is_hold && !j.empty && o.tail_units >= 2 && o.tail_ratio > 1 &&
         o.tail_ratio_se >= kEpisodeSeShare * o.tail_ratio;
}

bool AdaptiveStrategy::EpisodeNear(double rate) const {
  for (const Judged& j : judged_) {
    if (IsEpisode(j) && std::abs(j.outcome.rate_qps / rate - 1) <= kEpisodeSpan) return true;
  }
  return false;
}

std::optional<double> AdaptiveStrategy::EpisodicFailureAbove(const HoldReading& h) const {
  if (!lowest_failure_ || !hold_rate_ || episode_checks_ >= kMaxEpisodeChecks) {
    return std::nullopt;
  }
  const double failure = *lowest_failure_;
  if (failure <= *hold_rate_ || failure > *hold_rate_ * (1 + kEpisodeSpan)) return std::nullopt;
  if (!h.se_known || h.ratio + 2 * h.se >= 1) return std::nullopt;  // not clearly under
  int episodes = 0;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    if (j.expired || j.is_hold || o.passed || !SameRate(o.rate_qps, failure)) continue;
    if (!o.passed_apart_from_tail || !IsEpisode(j)) return std::nullopt;
    ++episodes;
  }
  return episodes > 0 ? std::optional<double>(failure) : std::nullopt;
}

double AdaptiveStrategy::HoldChunk(double rate) const {
  const int64_t at_best = best_ ? RequestsPerStepAt(*best_) : 0;
  const double per_part = at_best > 0 ? static_cast<double>(at_best) : StepSeconds() * rate;
  double parts = kMinHold;
  if (per_part > 0) {
    parts = std::clamp(kHoldTailEvents / kTailAllowedFraction / per_part, kMinHold, kMaxHoldChunk);
  }
  const double horizon_parts = horizon_s_ / PartSecondsAt(rate);
  return std::max(1.0, std::min(parts, horizon_parts - hold_parts_));
}

double AdaptiveStrategy::PartSecondsAt(double rate) const {
  // The short steps at the rate say what one part lasts there (a hold's chunks never size
  // themselves).
  const double seconds = MedianPartSeconds([&](const Judged& j) {
    return !j.is_hold && j.hold == 1 && SameRate(j.outcome.rate_qps, rate);
  });
  return seconds > 0 ? seconds : NearestPartSecondsAt(rate);
}

double AdaptiveStrategy::NearestPartSecondsAt(double rate) const {
  // A part lasts max(the step's duration, the time its minimum of requests takes), within a
  // cap: at a rate above the nearest short step's it lasts as long or as its requests take
  // at this rate, whichever is shorter; below, at least as long as there. The shorter of the
  // two never overstates a part, so a hold never covers less of the horizon than it counts.
  if (rate <= 0) return StepSeconds();
  const Judged* nearest = nullptr;
  double distance = 0;
  for (const Judged& j : judged_) {
    const StepOutcome& o = j.outcome;
    const double offered = OfferedRate(o);
    if (j.is_hold || j.hold != 1 || o.tail_samples <= 0 || offered <= 0) continue;
    const double d = std::abs(std::log(offered / rate));
    if (nearest == nullptr || d < distance) nearest = &j, distance = d;
  }
  if (nearest == nullptr) return StepSeconds();
  const StepOutcome& o = nearest->outcome;
  const double requests = static_cast<double>(o.tail_samples);
  const double seconds = requests / OfferedRate(o);
  return std::min(seconds, requests / rate);
}

bool AdaptiveStrategy::SameRate(double a, double b) const {
  return std::abs(a - b) <= kSameRate * std::max(a, b);
}

}  // namespace vanguard::worker
