#include "common/clock.h"

#include <algorithm>
#include <chrono>

namespace vanguard {

Clock* Clock::Real() {
  static RealClock* clock = new RealClock();
  return clock;
}

absl::Time RealClock::Now() { return absl::Now(); }

absl::Duration RealClock::Monotonic() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

void RealClock::SleepFor(absl::Duration d) { absl::SleepFor(d); }

bool SleepUnless(Clock* clock, absl::Duration d, absl::Duration slice,
                 const std::function<bool()>& stop) {
  while (d > absl::ZeroDuration()) {
    if (stop()) return false;
    const absl::Duration step = std::min(d, slice);
    clock->SleepFor(step);
    d -= step;
  }
  return !stop();
}

absl::Time FakeClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

absl::Duration FakeClock::Monotonic() {
  absl::MutexLock lock(&mu_);
  return mono_;
}

void FakeClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
  mono_ += d;
}

}  // namespace vanguard
