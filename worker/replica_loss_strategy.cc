// Survivor capacity by replica loss; see replica_loss_strategy.h.
#include "worker/replica_loss_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("replica_loss.", field, " ", rule));
}

bool Finite(double v) { return std::isfinite(v); }

bool BreaksSlo(const ShapeWindow& w, double p99_limit_ms, double max_error_rate) {
  if (w.scheduled > 0 && w.completed == 0) return true;
  if (p99_limit_ms > 0 && w.p99_ms > p99_limit_ms) return true;
  return max_error_rate > 0 && w.error_rate > max_error_rate;
}

// The rate bounds, tolerance and budget.
absl::Status ValidateRates(const vanguard::v1::ReplicaLossStrategy& c) {
  if (!(c.min_qps() > 0) || !Finite(c.min_qps())) return Invalid("min_qps", "must be > 0");
  if (!(c.max_qps() > c.min_qps()) || !Finite(c.max_qps())) {
    return Invalid("max_qps", "must be > min_qps");
  }
  if (!(c.tolerance_qps() >= 0) || !Finite(c.tolerance_qps())) {
    return Invalid("tolerance_qps", "must be >= 0 (0: 5% of max_qps)");
  }
  if (c.max_trials() < 0 || c.max_trials() > ReplicaLossStrategy::kMaxTrials) {
    return Invalid("max_trials",
                   absl::StrCat("must be from 0 to ", ReplicaLossStrategy::kMaxTrials));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaLossStrategy>> ReplicaLossStrategy::Create(
    const vanguard::v1::ReplicaLossStrategy& config, const StrategyContext& context) {
  if (absl::Status rates = ValidateRates(config); !rates.ok()) return rates;
  if (config.remove_url().empty()) {
    return Invalid("remove_url",
                   "is required: the URL the worker POSTs to take a replica away (e.g. the "
                   "simulator's http://host:port/admin/down?seconds=30)");
  }
  const std::vector<std::string>& endpoints = context.endpoints;
  if (endpoints.size() < 2) {
    return Invalid("model", absl::StrCat("has ", endpoints.size(),
                                         " endpoint(s): replica loss needs at least 2 (one "
                                         "lost, the others surviving)"));
  }
  std::string removed =
      config.removed_endpoint().empty() ? endpoints.back() : config.removed_endpoint();
  if (std::find(endpoints.begin(), endpoints.end(), removed) == endpoints.end()) {
    return Invalid("removed_endpoint", "is not one of the model's endpoints");
  }
  const double after = config.has_after_loss()
                           ? absl::ToDoubleSeconds(FromProtoDuration(config.after_loss()))
                           : kDefaultAfterLossS;
  if (!(after > 0)) return Invalid("after_loss", "must be > 0 (empty: 20 s)");
  const double recovery = config.has_max_recovery()
                              ? absl::ToDoubleSeconds(FromProtoDuration(config.max_recovery()))
                              : after / 4;
  if (!(recovery >= 0) || !(recovery < after)) {
    return Invalid("max_recovery", "must be >= 0 and shorter than after_loss");
  }
  int max_trials = config.max_trials();
  if (max_trials == 0) {
    const double tol = config.tolerance_qps() > 0 ? config.tolerance_qps()
                                                  : kDefaultRelativeTolerance * config.max_qps();
    const double range = config.max_qps() - config.min_qps();
    max_trials = std::min(
        kMaxTrials,
        1 + static_cast<int>(std::ceil(std::log2(std::max(1.0, range / std::max(tol, 1e-9))))));
  }
  return std::unique_ptr<ReplicaLossStrategy>(
      new ReplicaLossStrategy(config, context, max_trials, after, recovery, std::move(removed)));
}

ReplicaLossStrategy::ReplicaLossStrategy(const vanguard::v1::ReplicaLossStrategy& config,
                                         const StrategyContext& context, int max_trials,
                                         double after_loss_s, double max_recovery_s,
                                         std::string removed_endpoint)
    : config_(config),
      context_(context),
      max_trials_(max_trials),
      after_loss_s_(after_loss_s),
      max_recovery_s_(max_recovery_s),
      removed_endpoint_(std::move(removed_endpoint)),
      low_(config.min_qps()),
      high_(config.max_qps()) {}

double ReplicaLossStrategy::Tolerance() const {
  return config_.tolerance_qps() > 0 ? config_.tolerance_qps()
                                     : kDefaultRelativeTolerance * config_.max_qps();
}

ReplicaLossStrategy::LossReading ReplicaLossStrategy::ReadLoss(
    const std::vector<ShapeWindow>& windows, double p99_limit_ms, double max_error_rate) {
  LossReading r;
  double seconds = 0, failed = 0, completed = 0, scheduled = 0;
  int last_bad = -1;
  for (size_t i = 0; i < windows.size(); ++i) {
    const ShapeWindow& w = windows[i];
    if (BreaksSlo(w, p99_limit_ms, max_error_rate)) {
      last_bad = static_cast<int>(i);
      r.recovery_s = seconds + w.seconds;  // good windows start after this one
    }
    seconds += w.seconds;
    failed += w.error_rate * static_cast<double>(w.scheduled);
    scheduled += static_cast<double>(w.scheduled);
    completed += static_cast<double>(w.completed);
    r.peak_p99_ms = std::max(r.peak_p99_ms, w.p99_ms);
  }
  r.recovered = !windows.empty() && last_bad + 1 < static_cast<int>(windows.size());
  if (!r.recovered) r.recovery_s = seconds;
  for (size_t i = r.recovered ? last_bad + 1 : 0; i < windows.size(); ++i) {
    r.p99_ms = std::max(r.p99_ms, windows[i].p99_ms);
  }
  r.error_rate = scheduled > 0 ? failed / scheduled : 0;
  r.achieved_qps = seconds > 0 ? completed / seconds : 0;
  return r;
}

RunStep ReplicaLossStrategy::BeforeStep(double rate) const {
  RunStep step;
  step.rate_qps = rate;
  return step;
}

RunStep ReplicaLossStrategy::LossStep(double rate) const {
  RunStep step;
  step.rate_qps = rate;
  step.as_is = true;
  step.duration_s = after_loss_s_;
  step.removal =
      RunStep::ReplicaRemoval{config_.remove_url(), config_.restore_url(), removed_endpoint_};
  return step;
}

bool ReplicaLossStrategy::TakeBefore(const StepOutcome& o) {
  if (!o.client_valid && !rerun_) {
    rerun_ = true;
    return false;
  }
  rerun_ = false;
  trial_.set_before_passed(o.client_valid && o.passed);
  trial_.set_before_p99_ms(o.p99_ms);
  trial_.set_before_error_rate(o.error_rate);
  trial_.set_before_achieved_qps(o.achieved_qps);
  trial_.set_client_valid(o.client_valid);
  if (!trial_.before_passed()) return true;  // the whole fleet did not hold it: no loss
  full_fleet_held_ = std::max(full_fleet_held_, trial_.rate_qps());
  in_loss_ = true;
  return false;
}

bool ReplicaLossStrategy::TakeLoss(const StepOutcome& o) {
  if (!o.client_valid && !rerun_) {
    rerun_ = true;
    return false;
  }
  rerun_ = false;
  in_loss_ = false;
  const LossReading r = ReadLoss(o.windows, context_.slo_p99_ms, context_.slo_max_error_rate);
  trial_.set_lost(true);
  trial_.set_client_valid(o.client_valid);
  trial_.set_after_p99_ms(r.p99_ms);
  trial_.set_after_peak_p99_ms(r.peak_p99_ms);
  trial_.set_after_error_rate(r.error_rate);
  trial_.set_after_achieved_qps(r.achieved_qps);
  trial_.set_recovered(r.recovered);
  trial_.set_recovery_seconds(r.recovery_s);
  trial_.set_held(o.client_valid && r.recovered && r.recovery_s <= max_recovery_s_ + 1e-9);
  return true;
}

Decision ReplicaLossStrategy::AfterTrial() {
  const double rate = trial_.rate_qps();
  trials_.push_back(trial_);
  if (trial_.held()) {
    highest_held_ = std::max(highest_held_.value_or(0), rate);
    low_ = std::max(low_, rate);
  } else {
    lowest_failed_ = std::min(lowest_failed_.value_or(rate), rate);
    high_ = std::min(high_, rate);
  }
  if (!highest_held_) {
    return Finish(false,
                  absl::StrFormat("the survivors did not hold even min_qps %g", config_.min_qps()));
  }
  if (high_ - low_ <= Tolerance()) {
    const bool bracketed = lowest_failed_.has_value();
    return Finish(bracketed,
                  bracketed ? "converged" : "no trial failed (the upper end max_qps is assumed)");
  }
  if (static_cast<int>(trials_.size()) >= max_trials_) {
    return Finish(false, absl::StrCat("budget of ", max_trials_, " trials spent"));
  }
  trial_ = {};
  trial_.set_rate_qps((low_ + high_) / 2);
  return BeforeStep(trial_.rate_qps());
}

Decision ReplicaLossStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (!started_) {
    started_ = true;
    trial_.set_rate_qps(config_.min_qps());
    return BeforeStep(config_.min_qps());
  }
  if (!last) return in_loss_ ? LossStep(trial_.rate_qps()) : BeforeStep(trial_.rate_qps());
  const bool was_loss = in_loss_;
  const bool trial_over = was_loss ? TakeLoss(*last) : TakeBefore(*last);
  if (!trial_over) return in_loss_ ? LossStep(trial_.rate_qps()) : BeforeStep(trial_.rate_qps());
  return AfterTrial();
}

std::optional<int> ReplicaLossStrategy::StepsLeft() const {
  if (done_) return 0;
  const double tol = Tolerance();
  const int halvings =
      high_ - low_ > tol ? static_cast<int>(std::ceil(std::log2((high_ - low_) / tol))) : 0;
  const int trials_left =
      std::min(max_trials_ - static_cast<int>(trials_.size()) - 1, std::max(halvings - 1, 0));
  return (in_loss_ ? 0 : 1) + 2 * std::max(trials_left, 0);
}

Decision ReplicaLossStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  done.converged = converged;
  done.confidence_low_qps = highest_held_.value_or(0);
  done.confidence_high_qps = lowest_failed_.value_or(high_);
  vanguard::v1::ReplicaLossResult result;
  result.set_survivor_capacity_qps(highest_held_.value_or(0));
  result.set_full_fleet_held_qps(full_fleet_held_);
  result.set_endpoints(static_cast<int>(context_.endpoints.size()));
  result.set_removed_endpoint(removed_endpoint_);
  for (const auto& t : trials_) *result.add_trials() = t;
  done.replica_loss = result;
  done.summary = absl::StrFormat(
      "replica loss (%d -> %d replicas): survivor capacity %g qps (%s after %d trials; bracket "
      "[%g, %g] qps); the whole fleet held up to %g qps",
      result.endpoints(), result.endpoints() - 1, result.survivor_capacity_qps(), why,
      static_cast<int>(trials_.size()), done.confidence_low_qps, done.confidence_high_qps,
      full_fleet_held_);
  if (!trials_.empty() && trials_.back().lost()) {
    const auto& t = trials_.back();
    absl::StrAppend(&done.summary,
                    t.recovered() ? absl::StrFormat("; last loss at %g qps: recovered in %.1f s",
                                                    t.rate_qps(), t.recovery_seconds())
                                  : absl::StrFormat("; last loss at %g qps: never recovered "
                                                    "within %.1f s",
                                                    t.rate_qps(), t.recovery_seconds()));
  }
  done_ = done;
  return *done_;
}

}  // namespace vanguard::worker
