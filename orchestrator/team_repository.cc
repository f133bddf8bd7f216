// Per-team quotas; see team_repository.h. Any thread may call.
#include "orchestrator/team_repository.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

constexpr char kQuotaColumns[] =
    " max_rate_qps, max_step_seconds, max_test_seconds, max_concurrent_tests,"
    " max_submitter_priority, max_admin_priority ";

v1::TeamQuota QuotaFromRow(const pqxx::row& row) {
  v1::TeamQuota quota;
  if (!row["max_rate_qps"].is_null()) quota.set_max_rate_qps(row["max_rate_qps"].as<double>());
  if (!row["max_step_seconds"].is_null()) {
    *quota.mutable_max_step_duration() = DurationFromSeconds(row["max_step_seconds"].as<double>());
  }
  if (!row["max_test_seconds"].is_null()) {
    *quota.mutable_max_test_duration() = DurationFromSeconds(row["max_test_seconds"].as<double>());
  }
  if (!row["max_concurrent_tests"].is_null()) {
    quota.set_max_concurrent_tests(row["max_concurrent_tests"].as<int32_t>());
  }
  if (!row["max_submitter_priority"].is_null()) {
    quota.set_max_submitter_priority(row["max_submitter_priority"].as<int32_t>());
  }
  if (!row["max_admin_priority"].is_null()) {
    quota.set_max_admin_priority(row["max_admin_priority"].as<int32_t>());
  }
  return quota;
}

std::optional<double> Seconds(bool has, const google::protobuf::Duration& d) {
  return has ? std::optional<double>(DurationToSeconds(d)) : std::nullopt;
}

template <typename T>
std::optional<T> IfSet(bool has, T value) {
  return has ? std::optional<T>(value) : std::nullopt;
}

}  // namespace

absl::StatusOr<v1::TeamQuota> TeamRepository::Get(const std::string& team) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::TeamQuota> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_params(
        absl::StrCat("SELECT", kQuotaColumns, " FROM team_quotas WHERE team = $1"), team);
    if (rows.empty()) return v1::TeamQuota();
    return QuotaFromRow(rows[0]);
  });
}

absl::StatusOr<v1::TeamQuota> TeamRepository::Set(const std::string& team,
                                                  const v1::TeamQuota& quota) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::TeamQuota> {
    pqxx::nontransaction txn(conn);
    // One statement: insert the team's row or merge the set fields into it (NULL: keep).
    return QuotaFromRow(txn.exec_params1(
        absl::StrCat("INSERT INTO team_quotas AS q (team,", kQuotaColumns,
                     ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
                     " ON CONFLICT (team) DO UPDATE SET"
                     "   max_rate_qps = coalesce($2, q.max_rate_qps),"
                     "   max_step_seconds = coalesce($3, q.max_step_seconds),"
                     "   max_test_seconds = coalesce($4, q.max_test_seconds),"
                     "   max_concurrent_tests = coalesce($5, q.max_concurrent_tests),"
                     "   max_submitter_priority = coalesce($6, q.max_submitter_priority),"
                     "   max_admin_priority = coalesce($7, q.max_admin_priority),"
                     "   updated_at = now()"
                     " RETURNING",
                     kQuotaColumns),
        team, IfSet(quota.has_max_rate_qps(), quota.max_rate_qps()),
        Seconds(quota.has_max_step_duration(), quota.max_step_duration()),
        Seconds(quota.has_max_test_duration(), quota.max_test_duration()),
        IfSet(quota.has_max_concurrent_tests(), quota.max_concurrent_tests()),
        IfSet(quota.has_max_submitter_priority(), quota.max_submitter_priority()),
        IfSet(quota.has_max_admin_priority(), quota.max_admin_priority())));
  });
}

}  // namespace vanguard
