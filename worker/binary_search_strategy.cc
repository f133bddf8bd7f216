// Binary search over the offered rate. See binary_search_strategy.h.
#include "worker/binary_search_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vanguard::worker {

absl::StatusOr<std::unique_ptr<BinarySearchStrategy>> BinarySearchStrategy::Create(
    const vanguard::v1::BinarySearchStrategy& config) {
  if (!std::isfinite(config.min_qps()) || config.min_qps() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("binary_search.min_qps must be > 0, got ", config.min_qps()));
  }
  if (!std::isfinite(config.max_qps()) || config.max_qps() <= config.min_qps()) {
    return absl::InvalidArgumentError(absl::StrCat("binary_search.max_qps must be > min_qps (",
                                                   config.min_qps(), "), got ", config.max_qps()));
  }
  if (!std::isfinite(config.tolerance_qps()) || config.tolerance_qps() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("binary_search.tolerance_qps must be >= 0, got ", config.tolerance_qps()));
  }
  if (config.max_steps() < 0 || config.max_steps() > kMaxSteps) {
    return absl::InvalidArgumentError(absl::StrCat("binary_search.max_steps must be in [0, ",
                                                   kMaxSteps, "], got ", config.max_steps()));
  }
  int max_steps = config.max_steps();
  if (max_steps == 0) {
    const double tol = config.tolerance_qps() > 0 ? config.tolerance_qps()
                                                  : kDefaultRelativeTolerance * config.min_qps();
    max_steps = std::clamp(
        static_cast<int>(std::ceil(std::log2((config.max_qps() - config.min_qps()) / tol))) + 2, 1,
        kMaxSteps);
  }
  return std::unique_ptr<BinarySearchStrategy>(new BinarySearchStrategy(config, max_steps));
}

double BinarySearchStrategy::Tolerance() const {
  return config_.tolerance_qps() > 0 ? config_.tolerance_qps() : kDefaultRelativeTolerance * high_;
}

Decision BinarySearchStrategy::Finish(bool converged, const std::string& why) {
  Done done;
  done.max_sustainable_qps = highest_pass_.value_or(0);
  done.converged = converged;
  done.confidence_low_qps = highest_pass_.value_or(0);
  done.confidence_high_qps = lowest_failure_.value_or(config_.max_qps());
  done.summary = absl::StrFormat("binary search: %s after %d steps; bracket [%g, %g] qps", why,
                                 steps_, done.confidence_low_qps, done.confidence_high_qps);
  done_ = done;
  return done;
}

std::optional<int> BinarySearchStrategy::StepsLeft() const {
  if (done_) return 0;
  if (!current_) return std::nullopt;
  // The step in flight halves the bracket; then one step per halving down to the tolerance.
  const double after = (high_ - low_) / 2;
  const int halvings =
      after > Tolerance() ? static_cast<int>(std::ceil(std::log2(after / Tolerance()))) : 0;
  return std::clamp(halvings, 0, std::max(0, max_steps_ - steps_ - 1));
}

Decision BinarySearchStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (current_ && last) {
    if (!last->client_valid) {
      if (!retried_invalid_client_) {
        retried_invalid_client_ = true;
        return RunStep{*current_};
      }
    }
    const bool passed = last->client_valid && last->passed;  // invalid twice: a failure
    retried_invalid_client_ = false;
    ++steps_;
    if (passed) {
      low_ = *current_;
      highest_pass_ = std::max(highest_pass_.value_or(0), *current_);
    } else {
      high_ = *current_;
      lowest_failure_ = std::min(lowest_failure_.value_or(*current_), *current_);
    }
    if (high_ - low_ <= Tolerance()) {
      const bool bracketed = highest_pass_.has_value() && lowest_failure_.has_value();
      return Finish(bracketed, bracketed ? "converged"
                                         : (highest_pass_ ? "every rate passed up to max_qps"
                                                          : "no rate passed down to min_qps"));
    }
    if (steps_ >= max_steps_) return Finish(false, "step limit reached");
  }
  if (!current_) {
    current_ = low_;  // the lower end first (see the header)
    return RunStep{*current_};
  }
  current_ = (low_ + high_) / 2;
  // The first bracket end is assumed, not measured: test it when the bracket nears it.
  if (!highest_pass_ && high_ - low_ <= 2 * Tolerance()) current_ = low_;
  return RunStep{*current_};
}

}  // namespace vanguard::worker
