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

}  // namespace

absl::StatusOr<std::unique_ptr<VersionTransitionStrategy>> VersionTransitionStrategy::Create(
    const vanguard::v1::VersionTransitionStrategy& config, const StrategyContext& context) {
  if (absl::Status rates =
          RateBisection::ValidateRates("version_transition", config.min_qps(), config.max_qps(),
                                       config.tolerance_qps(), config.max_trials());
      !rates.ok()) {
    return rates;
  }
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
      new VersionTransitionStrategy(config, context, per_replica, recovery));
}

VersionTransitionStrategy::VersionTransitionStrategy(
    const vanguard::v1::VersionTransitionStrategy& config, const StrategyContext& context,
    double per_replica_s, double max_recovery_s)
    : config_(config),
      context_(context),
      per_replica_s_(per_replica_s),
      max_recovery_s_(max_recovery_s),
      search_(config.min_qps(), config.max_qps(), config.tolerance_qps(), config.max_trials()) {}

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
  trials_.push_back(trial_);
  const RateBisection::Verdict v = search_.Record(trial_.rate_qps(), trial_.held());
  switch (v.ending) {
    case RateBisection::Ending::kNone:
      break;
    case RateBisection::Ending::kNothingHeld:
      return Finish(false, absl::StrFormat("the rolling update is not safe even at min_qps %g",
                                           config_.min_qps()));
    default:
      return Finish(v.ending == RateBisection::Ending::kConverged, search_.Describe(v.ending));
  }
  trial_ = {};
  trial_.set_rate_qps(v.next_rate);
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
  const int left_in_trial = restart_index_ < 0 ? replicas : replicas - restart_index_ - 1;
  return left_in_trial + (1 + replicas) * search_.TrialsLeftAfterCurrent();
}

Decision VersionTransitionStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  done.converged = converged;
  done.confidence_low_qps = search_.highest_held().value_or(0);
  done.confidence_high_qps = search_.lowest_failed().value_or(search_.high());
  vanguard::v1::VersionTransitionResult result;
  result.set_safe_rate_qps(search_.highest_held().value_or(0));
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
