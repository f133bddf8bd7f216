// Jitter, warmup, co-location, stalls and errors of a simulated model; see
// service_time_model.h. Called from the owning scheduler's thread only.
#include "tests/simulator/service_time_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace vanguard::sim {

absl::Status ValidatePerturbations(const Perturbations& p) {
  if (!(p.jitter_sigma >= 0 && p.jitter_sigma <= 3)) {
    return absl::InvalidArgumentError(
        absl::StrCat("jitter_sigma must be in [0, 3], got ", p.jitter_sigma));
  }
  if (!(p.warmup_factor >= 1 && p.warmup_factor <= 1000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup_factor must be in [1, 1000], got ", p.warmup_factor));
  }
  if (p.warmup < absl::ZeroDuration() || p.warmup > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup must be in [0, 24h], got ", absl::FormatDuration(p.warmup)));
  }
  if (!(p.stall_rate_per_s >= 0 && p.stall_rate_per_s <= 1000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stall_rate_per_s must be in [0, 1000], got ", p.stall_rate_per_s));
  }
  if (p.stall_duration < absl::ZeroDuration() || p.stall_duration > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("stall_duration must be in [0, 1h], got ",
                                                   absl::FormatDuration(p.stall_duration)));
  }
  if (!(p.colocation >= 0 && p.colocation <= 0.95)) {
    return absl::InvalidArgumentError(
        absl::StrCat("colocation must be in [0, 0.95], got ", p.colocation));
  }
  if (!(p.error_rate >= 0 && p.error_rate <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("error_rate must be in [0, 1], got ", p.error_rate));
  }
  return absl::OkStatus();
}

ServiceTimeModel::ServiceTimeModel(const Perturbations& perturbations)
    : perturbations_(perturbations),
      jitter_rng_(perturbations.seed * 0x9E3779B97F4A7C15ull + 1),
      stall_rng_(perturbations.seed * 0x9E3779B97F4A7C15ull + 2),
      error_rng_(perturbations.seed * 0x9E3779B97F4A7C15ull + 3) {
  if (absl::Status status = ValidatePerturbations(perturbations); !status.ok()) {
    std::cerr << "ServiceTimeModel: " << status << "\n";
    std::abort();
  }
  next_poisson_stall_ = absl::InfiniteDuration();
  if (perturbations_.stall_rate_per_s > 0 && perturbations_.stall_duration > absl::ZeroDuration()) {
    std::exponential_distribution<double> gap(perturbations_.stall_rate_per_s);
    next_poisson_stall_ = absl::Seconds(gap(stall_rng_));
  }
}

double ServiceTimeModel::WarmupFactor(absl::Duration t) const {
  t -= warmup_origin_;
  if (perturbations_.warmup_factor <= 1 || t >= perturbations_.warmup ||
      perturbations_.warmup <= absl::ZeroDuration()) {
    return 1.0;
  }
  const double remaining =
      1.0 - absl::FDivDuration(std::max(t, absl::ZeroDuration()), perturbations_.warmup);
  return 1.0 + (perturbations_.warmup_factor - 1.0) * remaining;
}

absl::Duration ServiceTimeModel::Work(absl::Duration nominal, absl::Duration start) {
  double factor = WarmupFactor(start) / (1.0 - perturbations_.colocation);
  const double sigma = perturbations_.jitter_sigma;
  if (sigma > 0) factor *= std::exp(sigma * normal_(jitter_rng_) - 0.5 * sigma * sigma);
  return nominal * factor;
}

bool ServiceTimeModel::NextFails() {
  if (perturbations_.error_rate <= 0) return false;
  return uniform_(error_rng_) < perturbations_.error_rate;
}

void ServiceTimeModel::SetColocation(double colocation) {
  perturbations_.colocation = std::clamp(colocation, 0.0, 0.95);
}

void ServiceTimeModel::Restart(absl::Duration at, double factor, absl::Duration warmup) {
  warmup_origin_ = at;
  perturbations_.warmup_factor = std::clamp(factor, 1.0, 1000.0);
  perturbations_.warmup = std::clamp(warmup, absl::ZeroDuration(), absl::Hours(24));
}

double ServiceTimeModel::StallFreeFraction() const {
  return std::exp(-perturbations_.stall_rate_per_s *
                  absl::ToDoubleSeconds(perturbations_.stall_duration));
}

void ServiceTimeModel::AddStall(Stall stall) {
  if (stall.end <= stall.start) return;
  if (stalls_.empty() || stalls_.back().start <= stall.start) {
    if (!stalls_.empty() && stall.start <= stalls_.back().end) {
      stalls_.back().end = std::max(stalls_.back().end, stall.end);
    } else {
      stalls_.push_back(stall);
    }
    return;
  }
  // Out of order (an injected stall before a generated one): insert, then merge overlaps.
  auto it = std::upper_bound(stalls_.begin() + first_live_stall_, stalls_.end(), stall,
                             [](const Stall& a, const Stall& b) { return a.start < b.start; });
  stalls_.insert(it, stall);
  std::vector<Stall> merged(stalls_.begin(), stalls_.begin() + first_live_stall_);
  for (size_t i = first_live_stall_; i < stalls_.size(); ++i) {
    if (merged.size() > first_live_stall_ && stalls_[i].start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, stalls_[i].end);
    } else {
      merged.push_back(stalls_[i]);
    }
  }
  stalls_ = std::move(merged);
}

void ServiceTimeModel::GenerateStallsUntil(absl::Duration until) {
  if (next_poisson_stall_ == absl::InfiniteDuration()) return;
  std::exponential_distribution<double> gap(perturbations_.stall_rate_per_s);
  while (next_poisson_stall_ <= until) {
    AddStall({next_poisson_stall_, next_poisson_stall_ + perturbations_.stall_duration});
    next_poisson_stall_ += absl::Seconds(gap(stall_rng_));
  }
}

void ServiceTimeModel::InjectStall(absl::Duration at, absl::Duration length) {
  GenerateStallsUntil(at);
  AddStall({at, at + length});
}

absl::Duration ServiceTimeModel::FinishAfter(absl::Duration start, absl::Duration work) {
  GenerateStallsUntil(start + work);
  while (first_live_stall_ < stalls_.size() && stalls_[first_live_stall_].end <= start) {
    ++first_live_stall_;
  }
  if (first_live_stall_ > 1024 && first_live_stall_ * 2 > stalls_.size()) {
    stalls_.erase(stalls_.begin(), stalls_.begin() + first_live_stall_);
    first_live_stall_ = 0;
  }
  absl::Duration t = start;
  absl::Duration remaining = work;
  size_t i = first_live_stall_;
  while (i < stalls_.size()) {
    const Stall stall = stalls_[i];
    if (stall.end <= t) {
      ++i;
      continue;
    }
    if (stall.start >= t + remaining) break;
    if (stall.start > t) remaining -= stall.start - t;
    t = stall.end;
    // Stalls starting before the new finish must be known; stalls_[i] may grow by merging,
    // so it is looked at again.
    GenerateStallsUntil(t + remaining);
  }
  return t + remaining;
}

}  // namespace vanguard::sim
