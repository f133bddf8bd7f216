// Injected time. Everything that paces, leases, heartbeats or judges over time takes a
// Clock so unit tests can drive it with FakeClock instead of sleeping.
//
//   FakeClock clock;
//   LeaseTimer timer(&clock);
//   clock.Advance(absl::Seconds(30));
#ifndef VANGUARD_COMMON_CLOCK_H_
#define VANGUARD_COMMON_CLOCK_H_

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace vanguard {

// Thread-safe; any thread may call.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for timestamps that leave the process.
  virtual absl::Time Now() = 0;
  // Monotonic time since an arbitrary epoch, for intervals.
  virtual absl::Duration Monotonic() = 0;
  // Blocks until Monotonic() has advanced by d (FakeClock: returns after advancing).
  virtual void SleepFor(absl::Duration d) = 0;

  // The process-wide real clock.
  static Clock* Real();
};

class RealClock : public Clock {
 public:
  absl::Time Now() override;
  absl::Duration Monotonic() override;
  void SleepFor(absl::Duration d) override;
};

// Sleeps `d` on `clock` in slices of at most `slice`, returning early once `stop` is true
// (checked before each slice): a wait that a flag set by another thread can end. Returns
// whether it slept all of `d` (false: stopped early). Called on the thread that waits.
bool SleepUnless(Clock* clock, absl::Duration d, absl::Duration slice,
                 const std::function<bool()>& stop);

// A clock that moves only when told to. SleepFor advances it, so code that sleeps
// runs instantly in tests while still seeing time pass.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() override;
  absl::Duration Monotonic() override;
  void SleepFor(absl::Duration d) override { Advance(d); }
  void Advance(absl::Duration d);

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration mono_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace vanguard

#endif  // VANGUARD_COMMON_CLOCK_H_
