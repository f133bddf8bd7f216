// Schema migration runner; see migrator.h. One thread.
#include "orchestrator/migrator.h"

#include "absl/strings/str_cat.h"
#include "common/postgres.h"

namespace vanguard {

absl::StatusOr<std::vector<std::string>> Migrator::Run(const std::string& conninfo,
                                                       absl::Duration connect_timeout) {
  absl::StatusOr<std::unique_ptr<pqxx::connection>> conn =
      ConnectPostgres(conninfo, connect_timeout);
  if (!conn.ok()) return conn.status();
  std::vector<std::string> applied;
  const Migration* current = nullptr;
  try {
    {
      pqxx::nontransaction session(**conn);
      // "relation already exists, skipping" notices from IF NOT EXISTS are expected.
      session.exec("SET client_min_messages = warning");
      // Blocks until no other orchestrator is migrating; released at unlock or disconnect.
      session.exec_params("SELECT pg_advisory_lock($1)", kAdvisoryLockKey);
      session.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          "  version text PRIMARY KEY,"
          "  applied_at timestamptz NOT NULL DEFAULT now())");
    }

    for (const Migration& migration : migrations_) {
      current = &migration;
      pqxx::work txn(**conn);
      pqxx::result done =
          txn.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", migration.version);
      if (!done.empty()) continue;
      txn.exec(migration.sql);
      txn.exec_params("INSERT INTO schema_migrations (version) VALUES ($1)", migration.version);
      txn.commit();
      applied.emplace_back(migration.version);
    }
    current = nullptr;
    pqxx::nontransaction unlock(**conn);
    unlock.exec_params("SELECT pg_advisory_unlock($1)", kAdvisoryLockKey);
  } catch (...) {
    absl::Status status = PostgresErrorToStatus(std::current_exception());
    if (current == nullptr) return status;
    return absl::Status(
        status.code(), absl::StrCat("migration ", current->version, " failed: ", status.message()));
  }
  return applied;
}

}  // namespace vanguard
