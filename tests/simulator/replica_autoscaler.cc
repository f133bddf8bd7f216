// The simulated fleet's scaling rule; see replica_autoscaler.h.
#include "tests/simulator/replica_autoscaler.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard::sim {
namespace {

bool ValidDelay(absl::Duration d) {
  return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
}

}  // namespace

absl::StatusOr<ReplicaAutoscaler> ReplicaAutoscaler::Create(const Config& config) {
  if (config.min_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("autoscale min_replicas must be >= 1, got ", config.min_replicas));
  }
  if (config.max_replicas < config.min_replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        "autoscale max_replicas must be >= ", "min_replicas, got ", config.max_replicas));
  }
  if (!(config.target_in_flight > 0) || !std::isfinite(config.target_in_flight)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "autoscale target_in_flight must be a number > 0, got ", config.target_in_flight));
  }
  if (!ValidDelay(config.scale_up_delay) || !ValidDelay(config.cold_start) ||
      !ValidDelay(config.scale_down_delay)) {
    return absl::InvalidArgumentError(
        "autoscale scale_up_delay, cold_start and scale_down_delay must be finite and >= 0");
  }
  return ReplicaAutoscaler(config);
}

ReplicaAutoscaler::ReplicaAutoscaler(const Config& config)
    : config_(config), ready_(config.min_replicas), desired_(config.min_replicas) {}

void ReplicaAutoscaler::PromoteReady(absl::Duration now) {
  auto first_cold = std::upper_bound(ready_at_.begin(), ready_at_.end(), now);
  ready_ += static_cast<int>(first_cold - ready_at_.begin());
  ready_at_.erase(ready_at_.begin(), first_cold);
}

int ReplicaAutoscaler::Observe(absl::Duration now, double in_flight) {
  now_ = std::max(now, now_);
  PromoteReady(now_);
  const double wanted = std::ceil(std::max(0.0, in_flight) / config_.target_in_flight);
  desired_ = static_cast<int>(std::clamp(wanted, static_cast<double>(config_.min_replicas),
                                         static_cast<double>(config_.max_replicas)));
  const int provisioned = ready_ + starting();
  if (desired_ > provisioned) {
    if (!above_since_) above_since_ = now_;
    if (now_ - *above_since_ >= config_.scale_up_delay) {
      for (int i = provisioned; i < desired_; ++i) ready_at_.push_back(now_ + config_.cold_start);
      above_since_.reset();
      PromoteReady(now_);  // a cold start of zero serves at once
    }
  } else {
    above_since_.reset();
  }
  if (desired_ < ready_ && ready_at_.empty()) {
    if (!below_since_) below_since_ = now_;
    if (now_ - *below_since_ >= config_.scale_down_delay) {
      ready_ = desired_;
      below_since_.reset();
    }
  } else {
    below_since_.reset();
  }
  return ready_;
}

std::optional<absl::Duration> ReplicaAutoscaler::NextEventTime() const {
  std::optional<absl::Duration> next;
  auto consider = [&next](absl::Duration t) { next = next ? std::min(*next, t) : t; };
  if (!ready_at_.empty()) consider(ready_at_.front());
  if (above_since_) consider(*above_since_ + config_.scale_up_delay);
  if (below_since_) consider(*below_since_ + config_.scale_down_delay);
  return next;
}

}  // namespace vanguard::sim
