// The webhook tables (`webhooks`, `webhook_deliveries`, migration 0012): where a `regressed`
// verdict is POSTed, and each delivery until it is answered. A delivery is created once per
// (webhook, regressed test) with its body fixed, claimed by one sender at a time, and
// retried until delivered or given up; a claim that lapses (its sender died) is claimed
// again, so a crash loses no delivery.
//
//   WebhookRepository webhooks(pool);
//   ASSIGN_OR_RETURN(int created, webhooks.CreateDeliveries(clock->Now()));
//   ASSIGN_OR_RETURN(std::optional<WebhookDelivery> d, webhooks.Claim(now, absl::Minutes(2)));
//   ... POST d->body to d->url ...
//   RETURN_IF_ERROR(webhooks.MarkDelivered(*d, 204, clock->Now()));
//
// Stores what it is given: validation and the team check are the service's. Thread-safe
// (all state is in Postgres); any thread may call. Database errors map as in
// common/postgres.h.
#ifndef VANGUARD_ORCHESTRATOR_WEBHOOK_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_WEBHOOK_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

// A delivery a sender holds: what to send where, and how many attempts (this one included)
// it has had.
struct WebhookDelivery {
  int64_t id = 0;
  int64_t webhook_id = 0;
  int64_t test_id = 0;
  int attempts = 0;
  std::string url;
  std::string secret;
  std::string body;
};

// A delivery as stored, for tests and operators.
struct WebhookDeliveryState {
  int64_t id = 0;
  int64_t test_id = 0;
  std::string state;  // pending, delivered, failed
  int attempts = 0;
  absl::Time next_attempt;
  std::optional<int> last_status;
  std::string last_error;
  std::string body;
};

class WebhookRepository {
 public:
  explicit WebhookRepository(PostgresPool* pool) : pool_(pool) {}

  // Stores webhook (team, model or empty, url, secret); returns it without its secret.
  // FAILED_PRECONDITION when the model was never registered.
  absl::StatusOr<v1::Webhook> Add(const v1::Webhook& webhook, const std::string& created_by);
  // Without its secret. NOT_FOUND for an unknown id.
  absl::StatusOr<v1::Webhook> Get(int64_t id);
  // `team`'s webhooks (every team's when empty), by id, without secrets.
  absl::StatusOr<std::vector<v1::Webhook>> List(const std::string& team);
  // Its pending deliveries go with it. NOT_FOUND for an unknown id.
  absl::Status Delete(int64_t id);

  // Creates a pending delivery, due at `now`, for each regressed test (the view
  // capacity_baseline_regressions) recorded since a webhook of its model or its model's team
  // was added, unless that pair has one. The body is the payload of docs/planning.md, its
  // "timestamp" `now`. Returns how many it created. Idempotent; any replica may call.
  absl::StatusOr<int> CreateDeliveries(absl::Time now);

  // Claims the pending delivery due longest ago (next_attempt_at <= now) that no live claim
  // holds: counts the attempt and holds it until now + claim_for. nullopt when none is due.
  // Concurrent claimers never get the same delivery.
  absl::StatusOr<std::optional<WebhookDelivery>> Claim(absl::Time now, absl::Duration claim_for);
  // Record the outcome of `delivery`'s claimed attempt. Fenced by its attempt count: when
  // another sender claimed it since (this one overran its claim), nothing is changed.
  // MarkDelivered: answered 2xx with `http_status`.
  absl::Status MarkDelivered(const WebhookDelivery& delivery, int http_status, absl::Time now);
  // MarkFailed: `http_status` (nullopt: no response) and `error` (a fixed message, never the
  // response body) are kept; it is tried again at `retry_at`, or given up (state failed) when
  // nullopt.
  absl::Status MarkFailed(const WebhookDelivery& delivery, std::optional<int> http_status,
                          const std::string& error, std::optional<absl::Time> retry_at,
                          absl::Time now);

  // webhook_id's deliveries, by id.
  absl::StatusOr<std::vector<WebhookDeliveryState>> Deliveries(int64_t webhook_id);
  // webhook_id's deliveries in `state` ("pending", "delivered" or "failed"; empty: every
  // state), newest first, at most `limit`; for operators (ListWebhookDeliveries).
  absl::StatusOr<std::vector<v1::WebhookDelivery>> ListDeliveries(int64_t webhook_id,
                                                                  const std::string& state,
                                                                  int limit);

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WEBHOOK_REPOSITORY_H_
