#include "orchestrator/webhook_retry.h"

#include <optional>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(WebhookRetryPolicyTest, BackoffDoublesFromTheInitialUpToTheCap) {
  const WebhookRetryPolicy policy{
      .initial_backoff = absl::Seconds(10), .max_backoff = absl::Seconds(60), .max_attempts = 10};
  std::vector<absl::Duration> waits;
  for (int attempt = 1; attempt <= 5; ++attempt) waits.push_back(policy.BackoffAfter(attempt));
  EXPECT_EQ(waits,
            (std::vector<absl::Duration>{absl::Seconds(10), absl::Seconds(20), absl::Seconds(40),
                                         absl::Seconds(60), absl::Seconds(60)}));
}

// A delivery that always fails, stepped through on a FakeClock: each retry is due exactly
// one backoff after the failure, and the last attempt is given up.
TEST(WebhookRetryPolicyTest, ScheduleOfADeliveryThatAlwaysFailsEndsAfterMaxAttempts) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  const WebhookRetryPolicy policy{
      .initial_backoff = absl::Seconds(10), .max_backoff = absl::Hours(1), .max_attempts = 4};
  std::vector<absl::Duration> attempt_times;
  int attempts = 0;
  while (true) {
    ++attempts;  // the attempt is made now, and fails
    attempt_times.push_back(clock.Now() - start);
    std::optional<absl::Time> next = policy.NextAttempt(attempts, clock.Now());
    if (!next.has_value()) break;
    ASSERT_GT(*next, clock.Now());
    clock.Advance(*next - clock.Now());
  }
  EXPECT_EQ(attempts, 4);
  // Attempts at 0, +10s, +20s (30s), +40s (70s).
  EXPECT_EQ(attempt_times, (std::vector<absl::Duration>{absl::ZeroDuration(), absl::Seconds(10),
                                                        absl::Seconds(30), absl::Seconds(70)}));
}

TEST(WebhookRetryPolicyTest, DefaultsGiveUpAfterEightAttemptsWithinAnHourCap) {
  const WebhookRetryPolicy policy;
  const absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  EXPECT_EQ(policy.NextAttempt(1, t), t + absl::Seconds(10));
  EXPECT_EQ(policy.NextAttempt(7, t), t + absl::Seconds(640));
  EXPECT_EQ(policy.NextAttempt(8, t), std::nullopt);
  EXPECT_EQ(policy.BackoffAfter(30), absl::Hours(1));
}

}  // namespace
}  // namespace vanguard
