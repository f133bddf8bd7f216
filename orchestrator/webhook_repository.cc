// Webhooks and their deliveries; see webhook_repository.h. Any thread may call.
#include "orchestrator/webhook_repository.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

constexpr char kSelectWebhook[] =
    "SELECT id, team, coalesce(model, '') AS model, url,"
    "       (extract(epoch FROM created_at) * 1000000)::bigint AS created_us"
    "  FROM webhooks ";

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

v1::Webhook WebhookFromRow(const pqxx::row& row) {
  v1::Webhook w;
  w.set_id(row["id"].as<int64_t>());
  w.set_team(row["team"].c_str());
  w.set_model(row["model"].c_str());
  w.set_url(row["url"].c_str());
  *w.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  return w;
}

// RFC 3339 in UTC with microseconds, for a timestamptz expression.
#define VANGUARD_RFC3339(expr) \
  "to_char((" expr ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

// The payload of docs/planning.md, from a row `r` of capacity_baseline_regressions, its
// model's owner `o`, and $1 (the time it is created, microseconds).
constexpr char kPayload[] =
    "jsonb_build_object("
    "  'event', 'capacity.regressed',"
    "  'test_id', r.test_id, 'model', r.model, 'model_version', r.model_version,"
    "  'team', o.team,"
    "  'hardware', jsonb_build_object('accelerator', r.accelerator,"
    "      'accelerator_count', r.accelerator_count, 'pool', r.pool),"
    "  'verdict', r.verdict,"
    "  'capacity', jsonb_build_object('qps', r.qps,"
    "      'confidence_low_qps', r.confidence_low_qps,"
    "      'confidence_high_qps', r.confidence_high_qps, 'at_least', r.at_least,"
    "      'converged', r.converged, 'recorded_at', " VANGUARD_RFC3339("r.recorded_at") "),"
    "  'baseline', jsonb_build_object('test_id', r.baseline_test_id,"
    "      'model_version', r.baseline_version, 'qps', r.baseline_qps,"
    "      'confidence_low_qps', r.baseline_low_qps,"
    "      'confidence_high_qps', r.baseline_high_qps, 'at_least', r.baseline_at_least,"
    "      'accepted_by', r.baseline_accepted_by,"
    "      'accepted_at', " VANGUARD_RFC3339("r.baseline_accepted_at") "),"
    "  'change_fraction', r.change_fraction,"
    "  'timestamp', " VANGUARD_RFC3339("to_timestamp($1::bigint / 1e6)") ")::text";

#undef VANGUARD_RFC3339

v1::WebhookDeliveryState DeliveryStateFromDb(const std::string& state) {
  if (state == "pending") return v1::WEBHOOK_DELIVERY_STATE_PENDING;
  if (state == "delivered") return v1::WEBHOOK_DELIVERY_STATE_DELIVERED;
  if (state == "failed") return v1::WEBHOOK_DELIVERY_STATE_FAILED;
  return v1::WEBHOOK_DELIVERY_STATE_UNSPECIFIED;
}

v1::WebhookDelivery DeliveryFromRow(const pqxx::row& row) {
  v1::WebhookDelivery d;
  d.set_id(row["id"].as<int64_t>());
  d.set_webhook_id(row["webhook_id"].as<int64_t>());
  d.set_test_id(row["test_id"].as<int64_t>());
  d.set_state(DeliveryStateFromDb(row["state"].c_str()));
  d.set_attempts(row["attempts"].as<int>());
  if (d.state() == v1::WEBHOOK_DELIVERY_STATE_PENDING) {
    *d.mutable_next_attempt_time() = TimestampFromMicros(row["next_us"].as<int64_t>());
  }
  if (!row["last_status"].is_null()) d.set_last_status(row["last_status"].as<int>());
  d.set_last_error(row["error"].c_str());
  *d.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  if (!row["finished_us"].is_null()) {
    *d.mutable_finish_time() = TimestampFromMicros(row["finished_us"].as<int64_t>());
  }
  d.set_body(row["body"].c_str());
  return d;
}

}  // namespace

absl::StatusOr<v1::Webhook> WebhookRepository::Add(const v1::Webhook& webhook,
                                                   const std::string& created_by) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::Webhook> {
    pqxx::nontransaction txn(conn);
    return WebhookFromRow(txn.exec_params1(
        "INSERT INTO webhooks (team, model, url, secret, created_by)"
        " VALUES ($1, NULLIF($2, ''), $3, $4, $5)"
        " RETURNING id, team, coalesce(model, '') AS model, url,"
        "   (extract(epoch FROM created_at) * 1000000)::bigint AS created_us",
        webhook.team(), webhook.model(), webhook.url(), webhook.secret(), created_by));
  });
}

absl::StatusOr<v1::Webhook> WebhookRepository::Get(int64_t id) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::Webhook> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(absl::StrCat(kSelectWebhook, "WHERE id = $1"), id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("webhook ", id, " does not exist"));
    return WebhookFromRow(rows[0]);
  });
}

absl::StatusOr<std::vector<v1::Webhook>> WebhookRepository::List(const std::string& team) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::Webhook>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(
        absl::StrCat(kSelectWebhook, "WHERE $1::text = '' OR team = $1::text ORDER BY id"), team);
    std::vector<v1::Webhook> webhooks;
    for (const pqxx::row& row : rows) webhooks.push_back(WebhookFromRow(row));
    return webhooks;
  });
}

absl::Status WebhookRepository::Delete(int64_t id) {
  absl::StatusOr<bool> deleted = pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<bool> {
    pqxx::nontransaction txn(conn);
    return txn.exec_params("DELETE FROM webhooks WHERE id = $1", id).affected_rows() > 0;
  });
  if (!deleted.ok()) return deleted.status();
  if (!*deleted) return absl::NotFoundError(absl::StrCat("webhook ", id, " does not exist"));
  return absl::OkStatus();
}

absl::StatusOr<int> WebhookRepository::CreateDeliveries(absl::Time now) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<int> {
    pqxx::nontransaction txn(conn);
    return static_cast<int>(
        txn.exec_params(
               absl::StrCat(
                   "INSERT INTO webhook_deliveries"
                   "   (webhook_id, test_id, body, next_attempt_at, created_at)"
                   " SELECT w.id, r.test_id, ",
                   kPayload,
                   ", to_timestamp($1::bigint / 1e6), to_timestamp($1::bigint / 1e6)"
                   " FROM capacity_baseline_regressions r"
                   " JOIN model_owners o ON o.name = r.model"
                   " JOIN webhooks w ON w.team = o.team AND (w.model IS NULL OR w.model = r.model)"
                   " WHERE r.recorded_at >= w.created_at"
                   "   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d"
                   "                   WHERE d.webhook_id = w.id AND d.test_id = r.test_id)"
                   " ON CONFLICT (webhook_id, test_id) DO NOTHING"),
               Micros(now))
            .affected_rows());
  });
}

absl::StatusOr<std::optional<WebhookDelivery>> WebhookRepository::Claim(absl::Time now,
                                                                        absl::Duration claim_for) {
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<std::optional<WebhookDelivery>> {
    pqxx::result rows = txn.exec_params(
        "UPDATE webhook_deliveries d"
        " SET attempts = d.attempts + 1,"
        "     claimed_until = to_timestamp($1::bigint / 1e6) + make_interval(secs => $2::float8)"
        " FROM webhooks w"
        " WHERE w.id = d.webhook_id AND d.id = ("
        "   SELECT id FROM webhook_deliveries"
        "   WHERE state = 'pending' AND next_attempt_at <= to_timestamp($1::bigint / 1e6)"
        "     AND (claimed_until IS NULL OR claimed_until <= to_timestamp($1::bigint / 1e6))"
        "   ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " RETURNING d.id, d.webhook_id, d.test_id, d.attempts, w.url, w.secret, d.body",
        Micros(now), absl::ToDoubleSeconds(claim_for));
    if (rows.empty()) return std::nullopt;
    const pqxx::row& row = rows[0];
    return WebhookDelivery{.id = row["id"].as<int64_t>(),
                           .webhook_id = row["webhook_id"].as<int64_t>(),
                           .test_id = row["test_id"].as<int64_t>(),
                           .attempts = row["attempts"].as<int>(),
                           .url = row["url"].c_str(),
                           .secret = row["secret"].c_str(),
                           .body = row["body"].c_str()};
  });
}

absl::Status WebhookRepository::MarkDelivered(const WebhookDelivery& delivery, int http_status,
                                              absl::Time now) {
  return pool_
      ->Run([&](pqxx::connection& conn) -> absl::StatusOr<bool> {
        pqxx::nontransaction txn(conn);
        txn.exec_params(
            "UPDATE webhook_deliveries SET state = 'delivered', last_status = $2,"
            "   last_error = NULL, claimed_until = NULL,"
            "   finished_at = to_timestamp($3::bigint / 1e6)"
            " WHERE id = $1 AND attempts = $4 AND state = 'pending'",
            delivery.id, http_status, Micros(now), delivery.attempts);
        return true;
      })
      .status();
}

absl::Status WebhookRepository::MarkFailed(const WebhookDelivery& delivery,
                                           std::optional<int> http_status, const std::string& error,
                                           std::optional<absl::Time> retry_at, absl::Time now) {
  const std::optional<int64_t> retry_us =
      retry_at.has_value() ? std::optional<int64_t>(Micros(*retry_at)) : std::nullopt;
  return pool_
      ->Run([&](pqxx::connection& conn) -> absl::StatusOr<bool> {
        pqxx::nontransaction txn(conn);
        txn.exec_params(
            "UPDATE webhook_deliveries SET"
            "   state = CASE WHEN $4::bigint IS NULL THEN 'failed' ELSE 'pending' END,"
            "   next_attempt_at = coalesce(to_timestamp($4::bigint / 1e6), next_attempt_at),"
            "   finished_at = CASE WHEN $4::bigint IS NULL"
            "                      THEN to_timestamp($5::bigint / 1e6) END,"
            "   last_status = $2, last_error = $3, claimed_until = NULL"
            " WHERE id = $1 AND attempts = $6 AND state = 'pending'",
            delivery.id, http_status, error, retry_us, Micros(now), delivery.attempts);
        return true;
      })
      .status();
}

absl::StatusOr<std::vector<WebhookDeliveryState>> WebhookRepository::Deliveries(
    int64_t webhook_id) {
  return pool_->Run(
      [&](pqxx::connection& conn) -> absl::StatusOr<std::vector<WebhookDeliveryState>> {
        pqxx::nontransaction txn(conn);
        pqxx::result rows = txn.exec_params(
            "SELECT id, test_id, state, attempts, last_status, coalesce(last_error, '') AS error,"
            "   (extract(epoch FROM next_attempt_at) * 1000000)::bigint AS next_us, body"
            " FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id",
            webhook_id);
        std::vector<WebhookDeliveryState> out;
        for (const pqxx::row& row : rows) {
          WebhookDeliveryState d;
          d.id = row["id"].as<int64_t>();
          d.test_id = row["test_id"].as<int64_t>();
          d.state = row["state"].c_str();
          d.attempts = row["attempts"].as<int>();
          d.next_attempt = absl::FromUnixMicros(row["next_us"].as<int64_t>());
          if (!row["last_status"].is_null()) d.last_status = row["last_status"].as<int>();
          d.last_error = row["error"].c_str();
          d.body = row["body"].c_str();
          out.push_back(std::move(d));
        }
        return out;
      });
}

absl::StatusOr<std::vector<v1::WebhookDelivery>> WebhookRepository::ListDeliveries(
    int64_t webhook_id, const std::string& state, int limit) {
  return pool_->Run(
      [&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::WebhookDelivery>> {
        pqxx::nontransaction txn(conn);
        pqxx::result rows = txn.exec_params(
            "SELECT id, webhook_id, test_id, state, attempts, last_status,"
            "   coalesce(last_error, '') AS error, body,"
            "   (extract(epoch FROM next_attempt_at) * 1000000)::bigint AS next_us,"
            "   (extract(epoch FROM created_at) * 1000000)::bigint AS created_us,"
            "   (extract(epoch FROM finished_at) * 1000000)::bigint AS finished_us"
            " FROM webhook_deliveries"
            " WHERE webhook_id = $1 AND ($2 = '' OR state = $2)"
            " ORDER BY created_at DESC, id DESC LIMIT $3",
            webhook_id, state, limit);
        std::vector<v1::WebhookDelivery> out;
        out.reserve(rows.size());
        for (const pqxx::row& row : rows) out.push_back(DeliveryFromRow(row));
        return out;
      });
}

}  // namespace vanguard
