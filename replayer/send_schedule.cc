// SendSchedule implementation; see send_schedule.h. Called by one event-loop thread.
#include "replayer/send_schedule.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vanguard::replayer {

absl::StatusOr<SendSchedule> SendSchedule::Create(v1::Schedule kind, double rate_qps, uint64_t seed,
                                                  absl::Duration end) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.rate_qps = rate_qps;
  spec.seed = seed;
  spec.end = end;
  return Create(spec);
}

absl::StatusOr<SendSchedule> SendSchedule::Create(const ScheduleSpec& spec_in) {
  ScheduleSpec spec = spec_in;
  if (!std::isfinite(spec.rate_qps) || spec.rate_qps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate_qps must be a finite number > 0, got ", spec.rate_qps));
  }
  if (spec.end <= absl::ZeroDuration() || spec.end == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("schedule end must be a finite duration > 0");
  }
  if (spec.shards < 1 || spec.shard < 0 || spec.shard >= spec.shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule shard must be in [0, ", spec.shards, "), got ", spec.shard));
  }
  if (spec.kind == v1::SCHEDULE_UNSPECIFIED) spec.kind = v1::SCHEDULE_CONSTANT;
  if (spec.kind == v1::SCHEDULE_RAMP &&
      (!std::isfinite(spec.ramp_end_qps) || spec.ramp_end_qps <= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ramp_end_qps must be a finite number > 0 for SCHEDULE_RAMP, got ", spec.ramp_end_qps));
  }
  if (spec.kind == v1::SCHEDULE_TRACE) {
    return absl::InvalidArgumentError(
        "schedule: SCHEDULE_TRACE takes its times from the trace, not from a SendSchedule");
  }
  if (spec.kind != v1::SCHEDULE_CONSTANT && spec.kind != v1::SCHEDULE_POISSON &&
      spec.kind != v1::SCHEDULE_RAMP) {
    return absl::InvalidArgumentError(absl::StrCat("schedule: unknown value ", spec.kind));
  }
  return SendSchedule(spec);
}

namespace {
// Shard k > 0 of a Poisson schedule gets its own stream; shard 0 keeps `seed` unchanged.
uint64_t ShardSeed(uint64_t seed, int shard) {
  return seed + static_cast<uint64_t>(shard) * 0x9E3779B97F4A7C15ull;
}
}  // namespace

SendSchedule::SendSchedule(const ScheduleSpec& spec)
    : kind_(spec.kind),
      rate_qps_(spec.rate_qps),
      ramp_end_qps_(spec.ramp_end_qps),
      end_(spec.end),
      end_seconds_(absl::ToDoubleSeconds(spec.end)),
      shard_(spec.shard),
      shards_(spec.shards),
      rng_(ShardSeed(spec.seed, spec.shard)) {
  next_ = Compute(0);
}

absl::Duration SendSchedule::Compute(int64_t index) {
  double seconds = 0.0;
  // The index of this request in the whole (unsharded) schedule.
  double global = static_cast<double>(index) * shards_ + shard_;
  if (kind_ == v1::SCHEDULE_CONSTANT) {
    seconds = global / rate_qps_;
  } else if (kind_ == v1::SCHEDULE_RAMP) {
    // Solve r0 t + a t^2 = global with a = (r1 - r0) / 2T, in the cancellation-free form
    // t = 2 g / (r0 + sqrt(r0^2 + 4 a g)). A falling ramp may never reach g: exhausted.
    double a = (ramp_end_qps_ - rate_qps_) / (2.0 * end_seconds_);
    double discriminant = rate_qps_ * rate_qps_ + 4.0 * a * global;
    if (discriminant < 0) return absl::InfiniteDuration();
    seconds = 2.0 * global / (rate_qps_ + std::sqrt(discriminant));
  } else {
    // The first request is at the first arrival, not at 0, like a real Poisson process.
    // u is uniform in [0, 1) with 53 random bits, so 1 - u is in (0, 1] and log is finite.
    double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    poisson_sum_seconds_ += -std::log1p(-u) * shards_ / rate_qps_;
    seconds = poisson_sum_seconds_;
  }
  if (!(seconds < end_seconds_ + 1.0)) return absl::InfiniteDuration();
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
