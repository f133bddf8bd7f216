// Multi-rate sweep decisions. See sweep_strategy.h for the semantics.
#include "worker/sweep_strategy.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vanguard::worker {
namespace {

bool IsPositiveFinite(double v) { return std::isfinite(v) && v > 0; }

std::string Qps(double v) { return absl::StrFormat("%g qps", v); }

}  // namespace

absl::StatusOr<std::unique_ptr<SweepStrategy>> SweepStrategy::Create(
    const vanguard::v1::SweepStrategy& config) {
  if (config.stop_after_failures() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep.stop_after_failures must be >= 0, got ", config.stop_after_failures()));
  }
  const int stop_after_failures =
      config.stop_after_failures() == 0 ? 1 : config.stop_after_failures();

  std::vector<double> rates;
  if (config.rates_qps_size() > 0) {
    if (config.min_qps() != 0 || config.max_qps() != 0) {
      return absl::InvalidArgumentError(
          "sweep: give either rates_qps or min_qps/max_qps/steps, not both");
    }
    if (config.rates_qps_size() > kMaxRates) {
      return absl::InvalidArgumentError(absl::StrCat("sweep.rates_qps has ",
                                                     config.rates_qps_size(), " rates; at most ",
                                                     kMaxRates, " are allowed"));
    }
    for (int i = 0; i < config.rates_qps_size(); ++i) {
      if (!IsPositiveFinite(config.rates_qps(i))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sweep.rates_qps[", i, "] must be a positive number, got ", config.rates_qps(i)));
      }
      rates.push_back(config.rates_qps(i));
    }
  } else {
    if (config.min_qps() == 0 && config.max_qps() == 0 && config.steps() == 0) {
      return absl::InvalidArgumentError("sweep: set rates_qps, or min_qps, max_qps and steps");
    }
    if (!IsPositiveFinite(config.min_qps())) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep.min_qps must be > 0, got ", config.min_qps()));
    }
    if (config.steps() < 1 || config.steps() > kMaxRates) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep.steps must be in [1, ", kMaxRates, "], got ", config.steps()));
    }
    if (config.steps() == 1) {
      rates.push_back(config.min_qps());
    } else {
      if (!std::isfinite(config.max_qps()) || config.max_qps() < config.min_qps()) {
        return absl::InvalidArgumentError(absl::StrCat("sweep.max_qps must be >= sweep.min_qps (",
                                                       config.min_qps(), "), got ",
                                                       config.max_qps()));
      }
      const double step = (config.max_qps() - config.min_qps()) / (config.steps() - 1);
      for (int i = 0; i < config.steps(); ++i) {
        // The last rate is exactly max_qps, not min + (n-1)*step with rounding error.
        rates.push_back(i == config.steps() - 1 ? config.max_qps() : config.min_qps() + i * step);
      }
    }
  }
  std::sort(rates.begin(), rates.end());
  rates.erase(std::unique(rates.begin(), rates.end()), rates.end());
  return std::unique_ptr<SweepStrategy>(new SweepStrategy(std::move(rates), stop_after_failures));
}

std::optional<int> SweepStrategy::StepsLeft() const {
  if (done_) return 0;
  return static_cast<int>(rates_.size() - std::min(rates_.size(), current_ + 1));
}

Decision SweepStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (!started_ || !last) {
    // First call (or a caller that lost the outcome): ask for the current rate again.
    started_ = true;
    return RunStep{rates_[current_]};
  }
  const double rate = rates_[current_];

  if (!last->client_valid) {
    if (!retried_invalid_client_) {
      retried_invalid_client_ = true;
      return RunStep{rate};
    }
    Done done = Conclude();
    done.converged = false;
    done.summary = absl::StrCat("stopped: the load generator was not valid twice at ", Qps(rate),
                                " (step not judged); ", done.summary);
    return Finish(std::move(done));
  }
  retried_invalid_client_ = false;

  if (last->passed) {
    consecutive_failures_ = 0;
    if (first_failure_) {
      passes_after_first_failure_.push_back(rate);
    } else {
      highest_pass_before_first_failure_ = rate;
    }
  } else {
    ++consecutive_failures_;
    if (!first_failure_) first_failure_ = rate;
  }

  if (consecutive_failures_ >= stop_after_failures_ || current_ + 1 == rates_.size()) {
    return Finish(Conclude());
  }
  ++current_;
  return RunStep{rates_[current_]};
}

Done SweepStrategy::Conclude() const {
  Done done;
  if (!first_failure_) {
    // No failure: either every rate passed or the sweep stopped early (invalid client).
    const double estimate = highest_pass_before_first_failure_.value_or(0);
    done.max_sustainable_qps = estimate;
    done.confidence_low_qps = estimate;
    done.confidence_high_qps = estimate;
    done.converged = false;
    if (current_ + 1 == rates_.size() && highest_pass_before_first_failure_ == rates_.back()) {
      done.summary = absl::StrCat("every rate passed up to ", Qps(estimate),
                                  "; capacity above the sweep's max_qps");
    } else if (highest_pass_before_first_failure_) {
      done.summary = absl::StrCat("highest passing rate ", Qps(estimate),
                                  ", no failure seen; capacity is at least that");
    } else {
      done.summary = "no step was judged; no estimate";
    }
    return done;
  }
  if (!highest_pass_before_first_failure_) {
    done.max_sustainable_qps = 0;
    done.confidence_low_qps = 0;
    done.confidence_high_qps = *first_failure_;
    done.converged = false;
    done.summary = absl::StrCat("the lowest rate ", Qps(*first_failure_),
                                " failed; capacity is below the sweep's lowest rate");
    return done;
  }
  done.max_sustainable_qps = *highest_pass_before_first_failure_;
  done.confidence_low_qps = *highest_pass_before_first_failure_;
  done.confidence_high_qps = *first_failure_;
  done.converged = true;
  done.summary = absl::StrCat("highest passing rate ", Qps(*highest_pass_before_first_failure_),
                              ", first failure at ", Qps(*first_failure_));
  if (consecutive_failures_ >= stop_after_failures_ && stop_after_failures_ > 1) {
    absl::StrAppend(&done.summary, "; stopped after ", consecutive_failures_,
                    " consecutive failures");
  }
  if (!passes_after_first_failure_.empty()) {
    absl::StrAppend(&done.summary, "; passed again after the first failure at ",
                    absl::StrJoin(passes_after_first_failure_, ", ",
                                  [](std::string* out, double r) { out->append(Qps(r)); }),
                    " (not counted: results are not monotonic)");
  }
  return done;
}

Decision SweepStrategy::Finish(Done done) {
  done_ = std::move(done);
  return *done_;
}

}  // namespace vanguard::worker
