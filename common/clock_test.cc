#include "common/clock.h"

#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(SleepUnlessTest, SleepsTheWholeDurationInSlicesWhenNeverStopped) {
  FakeClock clock;
  int checks = 0;
  EXPECT_TRUE(SleepUnless(&clock, absl::Milliseconds(250), absl::Milliseconds(100), [&] {
    ++checks;
    return false;
  }));
  EXPECT_EQ(clock.Monotonic(), absl::Milliseconds(250));
  EXPECT_EQ(checks, 4);  // before each of the three slices, and once at the end
}

TEST(SleepUnlessTest, StopsAtTheFirstSliceAfterTheFlagIsSet) {
  FakeClock clock;
  EXPECT_FALSE(SleepUnless(&clock, absl::Seconds(10), absl::Milliseconds(100),
                           [&] { return clock.Monotonic() >= absl::Milliseconds(300); }));
  EXPECT_EQ(clock.Monotonic(), absl::Milliseconds(300));
}

TEST(SleepUnlessTest, AlreadyStoppedDoesNotSleep) {
  FakeClock clock;
  EXPECT_FALSE(SleepUnless(&clock, absl::Seconds(1), absl::Milliseconds(100), [] { return true; }));
  EXPECT_EQ(clock.Monotonic(), absl::ZeroDuration());
}

TEST(SleepUnlessTest, StoppedDuringTheLastSliceReportsStopped) {
  FakeClock clock;
  EXPECT_FALSE(SleepUnless(&clock, absl::Milliseconds(100), absl::Milliseconds(100),
                           [&] { return clock.Monotonic() >= absl::Milliseconds(100); }));
  EXPECT_EQ(clock.Monotonic(), absl::Milliseconds(100));
}

}  // namespace
}  // namespace vanguard
