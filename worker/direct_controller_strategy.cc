// Verification of an autoscaler's target rate. See direct_controller_strategy.h.
#include "worker/direct_controller_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vanguard::worker {

absl::StatusOr<std::unique_ptr<DirectControllerStrategy>> DirectControllerStrategy::Create(
    const vanguard::v1::DirectControllerStrategy& config, double target_qps) {
  if (!std::isfinite(target_qps) || target_qps <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "direct_controller: the autoscaler's target rate must be > 0 qps, got ", target_qps));
  }
  if (!std::isfinite(config.headroom_fraction()) || config.headroom_fraction() < 0 ||
      config.headroom_fraction() > 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("direct_controller.headroom_fraction must be in [0, 10], got ",
                     config.headroom_fraction()));
  }
  std::vector<double> rates = {target_qps};
  if (config.headroom_fraction() > 0)
    rates.push_back(target_qps * (1 + config.headroom_fraction()));
  return std::unique_ptr<DirectControllerStrategy>(new DirectControllerStrategy(rates));
}

Decision DirectControllerStrategy::Conclude(const std::string& note) {
  Done done;
  done.max_sustainable_qps = highest_pass_.value_or(0);
  done.converged = highest_pass_.has_value() || lowest_failure_.has_value();
  done.confidence_low_qps = highest_pass_.value_or(0);
  done.confidence_high_qps =
      lowest_failure_.value_or(rates_[std::min(current_, rates_.size() - 1)]);
  const bool target_holds = highest_pass_.has_value();
  done.summary = absl::StrFormat(
      "direct controller: the autoscaler's target %g qps %s the SLO%s%s%s", rates_[0],
      target_holds ? "holds" : "does NOT hold",
      rates_.size() > 1 && target_holds
          ? (*highest_pass_ > rates_[0] ? absl::StrFormat("; headroom %g qps holds too", rates_[1])
                                        : absl::StrFormat("; headroom %g qps fails", rates_[1]))
          : std::string(),
      tail_note_, note);
  done_ = done;
  return done;
}

std::optional<int> DirectControllerStrategy::StepsLeft() const {
  if (done_) return 0;
  return static_cast<int>(rates_.size() - std::min(rates_.size(), current_ + 1));
}

Decision DirectControllerStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (!started_ || !last) {
    started_ = true;
    return RunStep{rates_[current_]};
  }
  if (!last->client_valid) {
    if (!retried_invalid_client_) {
      retried_invalid_client_ = true;
      return RunStep{rates_[current_]};
    }
    return Conclude(
        absl::StrFormat(" (stopped: load generator invalid twice at %g qps)", rates_[current_]));
  }
  retried_invalid_client_ = false;
  at_rate_.push_back(*last);
  const bool tail_only_first =
      !at_rate_[0].passed && at_rate_[0].passed_apart_from_tail && at_rate_[0].tail_samples > 0;
  const PooledSteps pooled = PoolSteps(at_rate_);
  if (tail_only_first && pooled.other_failures == 0 &&
      static_cast<int>(at_rate_.size()) < kTailJudgingSteps) {
    return RunStep{rates_[current_]};  // one short step cannot fail a long-run p99 alone
  }
  const bool passed = tail_only_first ? pooled.held() : last->passed;
  if (tail_only_first) {
    absl::StrAppend(&tail_note_,
                    absl::StrFormat("; at %g qps the tail over %d steps was %.2f of allowed",
                                    rates_[current_], at_rate_.size(), pooled.ratio));
  }
  at_rate_.clear();
  if (passed) {
    highest_pass_ = rates_[current_];
  } else {
    lowest_failure_ = rates_[current_];
    return Conclude("");
  }
  if (++current_ >= rates_.size()) {
    current_ = rates_.size() - 1;
    return Conclude("");
  }
  return RunStep{rates_[current_]};
}

}  // namespace vanguard::worker
