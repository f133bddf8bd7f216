// Webhook delivery loop; see webhook_dispatcher.h.
#include "orchestrator/webhook_dispatcher.h"

#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/webhook_signature.h"

namespace vanguard {
namespace {

// The stored reason of a failed attempt: fixed text, the status code at most.
std::string FailureText(const absl::StatusOr<int>& status) {
  if (status.ok()) {
    return absl::StrCat("HTTP ", *status, ": the endpoint did not answer 2xx");
  }
  switch (status.status().code()) {
    case absl::StatusCode::kPermissionDenied:
      return "refused by the orchestrator's target policy (--allowed_targets)";
    case absl::StatusCode::kInvalidArgument:
      return "the webhook's url cannot be sent to";
    case absl::StatusCode::kDeadlineExceeded:
      return "no answer within the timeout";
    default:
      return "could not connect, or the connection or its TLS handshake failed";
  }
}

}  // namespace

absl::StatusOr<WebhookDispatcher::Pass> WebhookDispatcher::RunOnce() {
  Pass pass;
  ASSIGN_OR_RETURN(pass.created, webhooks_->CreateDeliveries(clock_->Now()));
  for (int i = 0; i < options_.max_per_pass; ++i) {
    ASSIGN_OR_RETURN(std::optional<WebhookDelivery> delivery,
                     webhooks_->Claim(clock_->Now(), options_.claim_for));
    if (!delivery.has_value()) break;
    RETURN_IF_ERROR(Deliver(*delivery, &pass));
  }
  return pass;
}

absl::Status WebhookDispatcher::Deliver(const WebhookDelivery& delivery, Pass* pass) {
  const absl::StatusOr<int> status =
      sender_->Post(delivery.url, delivery.body,
                    {{kWebhookSignatureHeader, WebhookSignature(delivery.secret, delivery.body)},
                     {"X-Vanguard-Delivery", absl::StrCat(delivery.id)}});
  const absl::Time now = clock_->Now();
  if (status.ok() && *status >= 200 && *status < 300) {
    ++pass->delivered;
    return webhooks_->MarkDelivered(delivery, *status, now);
  }
  const std::optional<absl::Time> retry_at = options_.retry.NextAttempt(delivery.attempts, now);
  ++(retry_at.has_value() ? pass->retrying : pass->failed);
  return webhooks_->MarkFailed(delivery, status.ok() ? std::optional<int>(*status) : std::nullopt,
                               FailureText(status), retry_at, now);
}

void WebhookDispatcher::Start() {
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(options_.interval)) {
      absl::StatusOr<Pass> pass = RunOnce();
      if (!pass.ok()) {
        std::cerr << "webhook dispatcher: " << pass.status() << std::endl;
      } else if (pass->delivered + pass->retrying + pass->failed > 0) {
        if (options_.on_attempts)
          options_.on_attempts(pass->delivered, pass->retrying, pass->failed);
        std::cerr << "webhook dispatcher: " << pass->delivered << " delivered, " << pass->retrying
                  << " to retry, " << pass->failed << " given up" << std::endl;
      }
    }
  });
}

void WebhookDispatcher::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vanguard
