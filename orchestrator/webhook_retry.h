// When a failed webhook delivery is tried again: after `initial_backoff`, doubling with each
// failed attempt up to `max_backoff`, until `max_attempts` attempts have failed; then the
// delivery is given up (stored as failed). Pure: the caller passes the time of the failure
// (from its injected Clock), so tests step through the schedule without sleeping.
//
//   WebhookRetryPolicy policy;                        // 10s, 20s, 40s, ... 1h; 8 attempts
//   std::optional<absl::Time> next = policy.NextAttempt(attempts_made, clock->Now());
//   if (!next.has_value()) { /* give up */ }
//
// Any thread may call.
#ifndef VANGUARD_ORCHESTRATOR_WEBHOOK_RETRY_H_
#define VANGUARD_ORCHESTRATOR_WEBHOOK_RETRY_H_

#include <optional>

#include "absl/time/time.h"

namespace vanguard {

struct WebhookRetryPolicy {
  absl::Duration initial_backoff = absl::Seconds(10);
  absl::Duration max_backoff = absl::Hours(1);
  int max_attempts = 8;

  // The wait after the `attempts_made`-th failed attempt (1: the first): initial_backoff *
  // 2^(attempts_made - 1), at most max_backoff.
  absl::Duration BackoffAfter(int attempts_made) const;
  // When to try again after `attempts_made` attempts, the last failing at `failed_at`;
  // nullopt once attempts_made >= max_attempts.
  std::optional<absl::Time> NextAttempt(int attempts_made, absl::Time failed_at) const;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WEBHOOK_RETRY_H_
