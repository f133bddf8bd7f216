// SendSchedule implementation; see send_schedule.h. Called by one event-loop thread.
#include "replayer/send_schedule.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard::replayer {

absl::StatusOr<SendSchedule> SendSchedule::Create(v1::Schedule kind, double rate_qps, uint64_t seed,
                                                  absl::Duration end) {
  if (!std::isfinite(rate_qps) || rate_qps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate_qps must be a finite number > 0, got ", rate_qps));
  }
  if (end <= absl::ZeroDuration() || end == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("schedule end must be a finite duration > 0");
  }
  if (kind == v1::SCHEDULE_UNSPECIFIED) kind = v1::SCHEDULE_CONSTANT;
  if (kind != v1::SCHEDULE_CONSTANT && kind != v1::SCHEDULE_POISSON) {
    return absl::InvalidArgumentError(absl::StrCat("schedule: unknown value ", kind));
  }
  return SendSchedule(kind, rate_qps, seed, end);
}

SendSchedule::SendSchedule(v1::Schedule kind, double rate_qps, uint64_t seed, absl::Duration end)
    : kind_(kind), rate_qps_(rate_qps), end_(end), rng_(seed) {
  next_ = Compute(0);
}

absl::Duration SendSchedule::Compute(int64_t index) {
  double seconds = 0.0;
  if (kind_ == v1::SCHEDULE_CONSTANT) {
    seconds = static_cast<double>(index) / rate_qps_;
  } else {
    // The first request is at the first arrival, not at 0, like a real Poisson process.
    // u is uniform in [0, 1) with 53 random bits, so 1 - u is in (0, 1] and log is finite.
    double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    poisson_sum_seconds_ += -std::log1p(-u) / rate_qps_;
    seconds = poisson_sum_seconds_;
  }
  absl::Duration at = absl::Nanoseconds(std::llround(seconds * 1e9));
  return at < end_ ? at : absl::InfiniteDuration();
}

std::optional<absl::Duration> SendSchedule::Next() {
  if (next_ == absl::InfiniteDuration()) return std::nullopt;
  absl::Duration current = next_;
  ++issued_;
  next_ = Compute(issued_);
  return current;
}

}  // namespace vanguard::replayer
