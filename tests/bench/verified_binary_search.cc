// Binary search with the final verification; see verified_binary_search.h.
#include "tests/bench/verified_binary_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"

namespace vanguard::bench {

using worker::Decision;
using worker::Done;
using worker::RunStep;
using worker::StepOutcome;

VerifiedBinarySearch::VerifiedBinarySearch(double min_qps, double max_qps,
                                           std::function<double(double)> part_seconds,
                                           double horizon_s)
    : min_qps_(min_qps),
      max_qps_(max_qps),
      part_seconds_(std::move(part_seconds)),
      horizon_s_(horizon_s) {}

double VerifiedBinarySearch::HighestPassBelow(double rate) const {
  double best = 0;
  for (double p : passes_) {
    if (p < rate) best = std::max(best, p);
  }
  return best;
}

Decision VerifiedBinarySearch::Asked(Decision d) {
  if (const Done* finished = std::get_if<Done>(&d)) return Hold(*finished);
  asked_ = std::get<RunStep>(d).rate_qps;
  return d;
}

Decision VerifiedBinarySearch::StartSearch(double low, double high, bool low_passed) {
  vanguard::v1::BinarySearchStrategy config;
  config.set_min_qps(low);
  config.set_max_qps(high);
  search_ = *worker::BinarySearchStrategy::Create(config);
  Decision d = search_->Next(std::nullopt);  // its first step: the lower end
  if (low_passed && std::holds_alternative<RunStep>(d)) {
    StepOutcome known;
    known.client_valid = true;
    known.passed = true;
    d = search_->Next(known);
  }
  return d;
}

Decision VerifiedBinarySearch::Hold(const Done& done) {
  const double rate = done.max_sustainable_qps;
  if (rate <= 0) {
    done_ = done;
    return done;
  }
  holding_ = rate;
  const double part = std::max(1e-3, part_seconds_(rate));
  RunStep hold{rate};
  hold.hold = std::max(1.0, std::ceil(horizon_s_ / part));
  hold.verification = true;
  return hold;
}

Decision VerifiedBinarySearch::AfterHold(bool held) {
  const double rate = holding_;
  holding_ = 0;
  ++holds_;
  if (held) {
    Done done;
    done.max_sustainable_qps = rate;
    done.converged = true;
    done.confidence_low_qps = rate;
    done.confidence_high_qps = lowest_failed_hold_ > 0 ? lowest_failed_hold_ : rate;
    done.summary =
        absl::StrFormat("verified binary search: converged after %d steps; %.4g held (%d holds)",
                        steps_, rate, holds_);
    done_ = done;
    return done;
  }
  lowest_failed_hold_ = lowest_failed_hold_ > 0 ? std::min(lowest_failed_hold_, rate) : rate;
  const double below = HighestPassBelow(lowest_failed_hold_);
  if (holds_ >= kMaxHolds || below <= 0 ||
      lowest_failed_hold_ - below <=
          worker::BinarySearchStrategy::kDefaultRelativeTolerance * lowest_failed_hold_) {
    Done done;
    done.max_sustainable_qps = below;
    done.converged = false;
    done.confidence_low_qps = below;
    done.confidence_high_qps = lowest_failed_hold_;
    done.summary = absl::StrFormat(
        "verified binary search: no hold held after %d steps (%d holds); the highest pass below "
        "the lowest failed hold: %.4g",
        steps_, holds_, below);
    done_ = done;
    return done;
  }
  return Asked(StartSearch(below, lowest_failed_hold_, /*low_passed=*/true));
}

Decision VerifiedBinarySearch::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (search_ == nullptr) return Asked(StartSearch(min_qps_, max_qps_, /*low_passed=*/false));
  if (last) ++steps_;
  const bool passed = last && last->client_valid && last->passed;
  if (holding_ > 0) {
    if (passed) passes_.push_back(holding_);
    return AfterHold(passed);
  }
  if (passed) passes_.push_back(asked_);
  return Asked(search_->Next(last));
}

}  // namespace vanguard::bench
