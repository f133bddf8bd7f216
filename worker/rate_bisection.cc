// Binary search over trial rates; see rate_bisection.h.
#include "worker/rate_bisection.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace vanguard::worker {
namespace {

absl::Status Invalid(absl::string_view prefix, absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, ".", field, " ", rule));
}

double ToleranceFor(double max_qps, double tolerance_qps) {
  return tolerance_qps > 0 ? tolerance_qps : RateBisection::kDefaultRelativeTolerance * max_qps;
}

int TrialsFor(double min_qps, double max_qps, double tolerance, int max_trials) {
  if (max_trials > 0) return max_trials;
  const double range = max_qps - min_qps;
  return std::min(
      RateBisection::kMaxTrials,
      1 + static_cast<int>(std::ceil(std::log2(std::max(1.0, range / std::max(tolerance, 1e-9))))));
}

}  // namespace

absl::Status RateBisection::ValidateRates(absl::string_view prefix, double min_qps, double max_qps,
                                          double tolerance_qps, int max_trials) {
  if (!(min_qps > 0) || !std::isfinite(min_qps)) return Invalid(prefix, "min_qps", "must be > 0");
  if (!(max_qps > min_qps) || !std::isfinite(max_qps)) {
    return Invalid(prefix, "max_qps", "must be > min_qps");
  }
  if (!(tolerance_qps >= 0) || !std::isfinite(tolerance_qps)) {
    return Invalid(prefix, "tolerance_qps", "must be >= 0 (0: 5% of max_qps)");
  }
  if (max_trials < 0 || max_trials > kMaxTrials) {
    return Invalid(prefix, "max_trials", absl::StrCat("must be from 0 to ", kMaxTrials));
  }
  return absl::OkStatus();
}

RateBisection::RateBisection(double min_qps, double max_qps, double tolerance_qps, int max_trials)
    : min_qps_(min_qps),
      tolerance_(ToleranceFor(max_qps, tolerance_qps)),
      max_trials_(TrialsFor(min_qps, max_qps, ToleranceFor(max_qps, tolerance_qps), max_trials)),
      low_(min_qps),
      high_(max_qps) {}

RateBisection::Verdict RateBisection::Record(double rate, bool held) {
  ++trials_;
  if (held) {
    highest_held_ = std::max(highest_held_.value_or(0), rate);
    low_ = std::max(low_, rate);
  } else {
    lowest_failed_ = std::min(lowest_failed_.value_or(rate), rate);
    high_ = std::min(high_, rate);
  }
  if (!highest_held_) return {.ending = Ending::kNothingHeld};
  if (high_ - low_ <= tolerance_) {
    return {.ending = lowest_failed_ ? Ending::kConverged : Ending::kNoTrialFailed};
  }
  if (trials_ >= max_trials_) return {.ending = Ending::kBudgetSpent};
  return {.ending = Ending::kNone, .next_rate = (low_ + high_) / 2};
}

int RateBisection::TrialsLeftAfterCurrent() const {
  const int halvings = high_ - low_ > tolerance_
                           ? static_cast<int>(std::ceil(std::log2((high_ - low_) / tolerance_)))
                           : 0;
  return std::max(std::min(max_trials_ - trials_ - 1, std::max(halvings - 1, 0)), 0);
}

std::string RateBisection::Describe(Ending ending) const {
  switch (ending) {
    case Ending::kConverged:
      return "converged";
    case Ending::kNoTrialFailed:
      return "no trial failed (the upper end max_qps is assumed)";
    case Ending::kBudgetSpent:
      return absl::StrCat("budget of ", max_trials_, " trials spent");
    case Ending::kNone:
    case Ending::kNothingHeld:
      return "";
  }
  return "";
}

}  // namespace vanguard::worker
