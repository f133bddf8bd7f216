// SendSchedule: the pacing half of the replayer (the "rate limiter"). It computes the
// *intended* send time of every request of a step as an offset from the step's start, with
// no I/O and no clock, so it can be tested exactly. The sending half (HttpLoadLoop) arms an
// absolute timer at t0 + Next() for each request; error never accumulates because every
// intended time is computed from the start, never from the previous actual send.
//
//   ASSIGN_OR_RETURN(SendSchedule schedule,
//                    SendSchedule::Create(v1::SCHEDULE_POISSON, 200.0, /*seed=*/7,
//                                         /*end=*/absl::Seconds(10)));
//   while (std::optional<absl::Duration> at = schedule.Next()) { ... }
//
// Constant: request i is intended at i / rate (i = 0, 1, ...), computed from i directly.
// Poisson:  inter-arrival gaps are exponential with mean 1 / rate, drawn from a
//           std::mt19937_64 seeded with `seed` and turned into uniforms by hand (53 bits), so
//           the sequence is the same on every platform for the same seed.
// Ramp:     the rate rises (or falls) linearly from rate_qps at 0 to ramp_end_qps at `end`;
//           request i is intended at the t where the expected count r0 t + (r1-r0) t^2 / 2T
//           reaches i, computed from i directly.
// Sharding: one step can be split over several event loops (or replayers). Shard k of n
//           of a constant or ramp schedule gets the requests k, k+n, k+2n... of the whole
//           schedule; shard k of a Poisson schedule is an independent Poisson stream of
//           rate/n (the superposition of n such streams is a Poisson stream of rate `rate`),
//           seeded from (seed, k); shard 0 of 1 is exactly the unsharded schedule.
// Trace-timed schedules come from the request source (see request_source.h), not from here.
//
// Not thread-safe: owned and called by one event-loop thread.
#ifndef VANGUARD_REPLAYER_SEND_SCHEDULE_H_
#define VANGUARD_REPLAYER_SEND_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <random>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::replayer {

struct ScheduleSpec {
  v1::Schedule kind = v1::SCHEDULE_CONSTANT;
  double rate_qps = 0;
  double ramp_end_qps = 0;  // SCHEDULE_RAMP only
  uint64_t seed = 0;
  absl::Duration end;
  int shard = 0;
  int shards = 1;
};

class SendSchedule {
 public:
  // INVALID_ARGUMENT naming the rule for a bad spec (rates not finite and > 0, end not > 0,
  // shard not in [0, shards), SCHEDULE_TRACE, unknown kind).
  static absl::StatusOr<SendSchedule> Create(const ScheduleSpec& spec);

  // INVALID_ARGUMENT if rate_qps is not finite and > 0, end is not > 0, or the schedule kind
  // is unknown. SCHEDULE_UNSPECIFIED means constant.
  static absl::StatusOr<SendSchedule> Create(v1::Schedule kind, double rate_qps, uint64_t seed,
                                             absl::Duration end);

  // The intended offset of the next request, or nullopt once the next one would fall at or
  // after `end`.
  std::optional<absl::Duration> Next();

  // The intended offset of the next request without consuming it; absl::InfiniteDuration()
  // once the schedule is exhausted. Every request intended before Peek() has been returned.
  absl::Duration Peek() const { return next_; }

  // How many requests Next() has returned so far.
  int64_t issued() const { return issued_; }

 private:
  explicit SendSchedule(const ScheduleSpec& spec);
  absl::Duration Compute(int64_t index);

  v1::Schedule kind_;
  double rate_qps_;
  double ramp_end_qps_;
  absl::Duration end_;
  double end_seconds_;
  int shard_;
  int shards_;
  std::mt19937_64 rng_;
  double poisson_sum_seconds_ = 0.0;
  int64_t issued_ = 0;
  absl::Duration next_;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_SEND_SCHEDULE_H_
