// Webhook retry schedule; see webhook_retry.h. Any thread may call.
#include "orchestrator/webhook_retry.h"

#include <algorithm>

namespace vanguard {

absl::Duration WebhookRetryPolicy::BackoffAfter(int attempts_made) const {
  absl::Duration backoff = initial_backoff;
  for (int i = 1; i < attempts_made && backoff < max_backoff; ++i) backoff *= 2;
  return std::min(backoff, max_backoff);
}

std::optional<absl::Time> WebhookRetryPolicy::NextAttempt(int attempts_made,
                                                          absl::Time failed_at) const {
  if (attempts_made >= max_attempts) return std::nullopt;
  return failed_at + BackoffAfter(attempts_made);
}

}  // namespace vanguard
