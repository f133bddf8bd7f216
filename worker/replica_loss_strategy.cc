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

bool BreaksSlo(const ShapeWindow& w, double p99_limit_ms, double max_error_rate) {
  if (w.scheduled > 0 && w.completed == 0) return true;
  if (p99_limit_ms > 0 && w.p99_ms > p99_limit_ms) return true;
  return max_error_rate > 0 && w.error_rate > max_error_rate;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaLossStrategy>> ReplicaLossStrategy::Create(
    const vanguard::v1::ReplicaLossStrategy& config, const StrategyContext& context) {
  if (absl::Status rates =
          RateBisection::ValidateRates("replica_loss", config.min_qps(), config.max_qps(),
                                       config.tolerance_qps(), config.max_trials());
      !rates.ok()) {
    return rates;
  }
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
  return std::unique_ptr<ReplicaLossStrategy>(
      new ReplicaLossStrategy(config, context, after, recovery, std::move(removed)));
}

ReplicaLossStrategy::ReplicaLossStrategy(const vanguard::v1::ReplicaLossStrategy& config,
                                         const StrategyContext& context, double after_loss_s,
                                         double max_recovery_s, std::string removed_endpoint)
    : config_(config),
      context_(context),
      after_loss_s_(after_loss_s),
      max_recovery_s_(max_recovery_s),
      removed_endpoint_(std::move(removed_endpoint)),
      search_(config.min_qps(), config.max_qps(), config.tolerance_qps(), config.max_trials()) {}

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
  trials_.push_back(trial_);
  const RateBisection::Verdict v = search_.Record(trial_.rate_qps(), trial_.held());
  switch (v.ending) {
    case RateBisection::Ending::kNone:
      break;
    case RateBisection::Ending::kNothingHeld:
      return Finish(
          false, absl::StrFormat("the survivors did not hold even min_qps %g", config_.min_qps()));
    default:
      return Finish(v.ending == RateBisection::Ending::kConverged, search_.Describe(v.ending));
  }
  trial_ = {};
  trial_.set_rate_qps(v.next_rate);
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
  return (in_loss_ ? 0 : 1) + 2 * search_.TrialsLeftAfterCurrent();
}

Decision ReplicaLossStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  done.converged = converged;
  done.confidence_low_qps = search_.highest_held().value_or(0);
  done.confidence_high_qps = search_.lowest_failed().value_or(search_.high());
  vanguard::v1::ReplicaLossResult result;
  result.set_survivor_capacity_qps(search_.highest_held().value_or(0));
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
