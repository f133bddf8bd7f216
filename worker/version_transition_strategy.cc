// The rate at which a rolling update is safe; see version_transition_strategy.h.
#include "worker/version_transition_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "worker/proto_time.h"
#include "worker/replica_loss_strategy.h"

namespace vanguard::worker {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("version_transition.", field, " ", rule));
}

bool Finite(double v) { return std::isfinite(v); }

// The rate bounds, tolerance and budget.
absl::Status ValidateRates(const vanguard::v1::VersionTransitionStrategy& c) {
  if (!(c.min_qps() > 0) || !Finite(c.min_qps())) return Invalid("min_qps", "must be > 0");
  if (!(c.max_qps() > c.min_qps()) || !Finite(c.max_qps())) {
    return Invalid("max_qps", "must be > min_qps");
  }
  if (!(c.tolerance_qps() >= 0) || !Finite(c.tolerance_qps())) {
    return Invalid("tolerance_qps", "must be >= 0 (0: 5% of max_qps)");
  }
  if (c.max_trials() < 0 || c.max_trials() > VersionTransitionStrategy::kMaxTrials) {
    return Invalid("max_trials",
                   absl::StrCat("must be from 0 to ", VersionTransitionStrategy::kMaxTrials));
  }
  return absl::OkStatus();
}

// One restart URL per endpoint, in the model's order, none empty.
absl::Status ValidateRestartUrls(const vanguard::v1::VersionTransitionStrategy& c,
                                 const std::vector<std::string>& endpoints) {
  if (c.restart_urls().empty()) {
    return Invalid("restart_urls",
                   "is required: one URL per endpoint that the worker POSTs to switch that "
                   "replica to the new version (e.g. the simulator's "
                   "http://host:port/admin/restart?warmup_s=5&factor=4)");
  }
  if (endpoints.size() < 2) {
    return Invalid("model", absl::StrCat("has ", endpoints.size(),
                                         " endpoint(s): a rolling update needs at least 2 (one "
                                         "restarting, the others serving)"));
  }
  if (static_cast<size_t>(c.restart_urls_size()) != endpoints.size()) {
    return Invalid(
        "restart_urls",
        absl::StrCat("has ", c.restart_urls_size(), " URL(s) but the model has ", endpoints.size(),
                     " endpoints: one per endpoint, in the model's endpoint order"));
  }
  for (int i = 0; i < c.restart_urls_size(); ++i) {
    if (c.restart_urls(i).empty()) {
      return Invalid(absl::StrCat("restart_urls[", i, "]"), "is empty");
    }
  }
  return absl::OkStatus();
}

int TrialsFor(const vanguard::v1::VersionTransitionStrategy& c) {
  if (c.max_trials() > 0) return c.max_trials();
  const double tol = c.tolerance_qps() > 0
                         ? c.tolerance_qps()
                         : VersionTransitionStrategy::kDefaultRelativeTolerance * c.max_qps();
  const double range = c.max_qps() - c.min_qps();
  return std::min(
      VersionTransitionStrategy::kMaxTrials,
      1 + static_cast<int>(std::ceil(std::log2(std::max(1.0, range / std::max(tol, 1e-9))))));
}

}  // namespace

absl::StatusOr<std::unique_ptr<VersionTransitionStrategy>> VersionTransitionStrategy::Create(
    const vanguard::v1::VersionTransitionStrategy& config, const StrategyContext& context) {
  if (absl::Status rates = ValidateRates(config); !rates.ok()) return rates;
  if (absl::Status urls = ValidateRestartUrls(config, context.endpoints); !urls.ok()) return urls;
  const double per_replica = config.has_per_replica()
                                 ? absl::ToDoubleSeconds(FromProtoDuration(config.per_replica()))
                                 : kDefaultPerReplicaS;
  if (!(per_replica > 0)) return Invalid("per_replica", "must be > 0 (empty: 10 s)");
  const double recovery = config.has_max_recovery()
                              ? absl::ToDoubleSeconds(FromProtoDuration(config.max_recovery()))
                              : per_replica / 2;
  if (!(recovery >= 0) || !(recovery < per_replica)) {
    return Invalid("max_recovery", "must be >= 0 and shorter than per_replica");
  }
  return std::unique_ptr<VersionTransitionStrategy>(
      new VersionTransitionStrategy(config, context, TrialsFor(config), per_replica, recovery));
}

VersionTransitionStrategy::VersionTransitionStrategy(
    const vanguard::v1::VersionTransitionStrategy& config, const StrategyContext& context,
    int max_trials, double per_replica_s, double max_recovery_s)
    : config_(config),
      context_(context),
      max_trials_(max_trials),
      per_replica_s_(per_replica_s),
      max_recovery_s_(max_recovery_s),
      low_(config.min_qps()),
      high_(config.max_qps()) {}

double VersionTransitionStrategy::Tolerance() const {
  return config_.tolerance_qps() > 0 ? config_.tolerance_qps()
                                     : kDefaultRelativeTolerance * config_.max_qps();
}

RunStep VersionTransitionStrategy::BeforeStep(double rate) const {
  RunStep step;
  step.rate_qps = rate;
  return step;
}

RunStep VersionTransitionStrategy::RestartStep(double rate, int index) const {
  RunStep step;
  step.rate_qps = rate;
  step.as_is = true;
  step.duration_s = per_replica_s_;
  step.restart = RunStep::ReplicaRestart{
      config_.restart_urls(index), absl::StrCat("version_transition.restart_urls[", index, "]")};
  return step;
}

RunStep VersionTransitionStrategy::CurrentStep() const {
  return restart_index_ < 0 ? BeforeStep(trial_.rate_qps())
                            : RestartStep(trial_.rate_qps(), restart_index_);
}

bool VersionTransitionStrategy::TakeBefore(const StepOutcome& o) {
  if (!o.client_valid && !rerun_) {
    rerun_ = true;
    return false;
  }
  rerun_ = false;
  trial_.set_before_passed(o.client_valid && o.passed);
  trial_.set_before_p99_ms(o.p99_ms);
  trial_.set_before_error_rate(o.error_rate);
  if (!trial_.before_passed()) return true;  // a fleet that cannot hold r warm: no transition
  full_fleet_held_ = std::max(full_fleet_held_, trial_.rate_qps());
  restart_index_ = 0;
  return false;
}

bool VersionTransitionStrategy::TakeRestart(const StepOutcome& o) {
  if (!o.client_valid && !rerun_) {
    rerun_ = true;
    return false;
  }
  rerun_ = false;
  const ReplicaLossStrategy::LossReading r =
      ReplicaLossStrategy::ReadLoss(o.windows, context_.slo_p99_ms, context_.slo_max_error_rate);
  vanguard::v1::VersionTransitionRestart* restart = trial_.add_restarts();
  restart->set_endpoint(context_.endpoints[restart_index_]);
  restart->set_worst_p99_ms(r.peak_p99_ms);
  restart->set_p99_ms(r.p99_ms);
  restart->set_error_rate(r.error_rate);
  restart->set_achieved_qps(r.achieved_qps);
  restart->set_recovered(r.recovered);
  restart->set_recovery_seconds(r.recovery_s);
  restart->set_client_valid(o.client_valid);
  restart->set_held(o.client_valid && r.recovered && r.recovery_s <= max_recovery_s_ + 1e-9);
  for (const ShapeWindow& w : o.windows) {
    merged_failed_ += w.error_rate * static_cast<double>(w.scheduled);
    merged_scheduled_ += static_cast<double>(w.scheduled);
  }
  trial_.set_worst_window_p99_ms(std::max(trial_.worst_window_p99_ms(), r.peak_p99_ms));
  trial_.set_error_rate(merged_scheduled_ > 0 ? merged_failed_ / merged_scheduled_ : 0);
  trial_.set_max_recovery_seconds(std::max(trial_.max_recovery_seconds(), r.recovery_s));
  ++restart_index_;
  const bool all_restarted = restart_index_ == static_cast<int>(context_.endpoints.size());
  if (!restart->held()) return true;  // the rolling update halts at a restart that failed
  if (!all_restarted) return false;
  trial_.set_held(true);
  return true;
}

Decision VersionTransitionStrategy::AfterTrial() {
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
    return Finish(false, absl::StrFormat("the rolling update is not safe even at min_qps %g",
                                         config_.min_qps()));
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
  restart_index_ = -1;
  merged_failed_ = merged_scheduled_ = 0;
  return BeforeStep(trial_.rate_qps());
}

Decision VersionTransitionStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (!started_) {
    started_ = true;
    trial_.set_rate_qps(config_.min_qps());
    return BeforeStep(config_.min_qps());
  }
  if (!last) return CurrentStep();
  const bool trial_over = restart_index_ < 0 ? TakeBefore(*last) : TakeRestart(*last);
  if (!trial_over) return CurrentStep();
  return AfterTrial();
}

std::optional<int> VersionTransitionStrategy::StepsLeft() const {
  if (done_) return 0;
  const int replicas = static_cast<int>(context_.endpoints.size());
  const double tol = Tolerance();
  const int halvings =
      high_ - low_ > tol ? static_cast<int>(std::ceil(std::log2((high_ - low_) / tol))) : 0;
  const int trials_left =
      std::min(max_trials_ - static_cast<int>(trials_.size()) - 1, std::max(halvings - 1, 0));
  const int left_in_trial = restart_index_ < 0 ? replicas : replicas - restart_index_ - 1;
  return left_in_trial + (1 + replicas) * std::max(trials_left, 0);
}

Decision VersionTransitionStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  done.converged = converged;
  done.confidence_low_qps = highest_held_.value_or(0);
  done.confidence_high_qps = lowest_failed_.value_or(high_);
  vanguard::v1::VersionTransitionResult result;
  result.set_safe_rate_qps(highest_held_.value_or(0));
  result.set_full_fleet_held_qps(full_fleet_held_);
  result.set_endpoints(static_cast<int>(context_.endpoints.size()));
  for (const auto& t : trials_) *result.add_trials() = t;
  done.version_transition = result;
  done.summary = absl::StrFormat(
      "version transition (%d replicas restarted one by one): safe at %g qps (%s after %d "
      "trials; bracket [%g, %g] qps); the warm fleet held up to %g qps",
      result.endpoints(), result.safe_rate_qps(), why, static_cast<int>(trials_.size()),
      done.confidence_low_qps, done.confidence_high_qps, full_fleet_held_);
  if (!trials_.empty() && trials_.back().restarts_size() > 0) {
    const auto& t = trials_.back();
    absl::StrAppend(&done.summary,
                    absl::StrFormat("; last transition at %g qps: worst window p99 %.1f ms, "
                                    "slowest recovery %.1f s%s",
                                    t.rate_qps(), t.worst_window_p99_ms(), t.max_recovery_seconds(),
                                    t.held() ? "" : " (not safe)"));
  }
  done_ = done;
  return *done_;
}

}  // namespace vanguard::worker
