// Applies the schema migrations (migrations/NNNN_name.sql, embedded in the binary) that a
// database has not seen yet, in order, and records each in schema_migrations.
//
//   ASSIGN_OR_RETURN(std::vector<std::string> applied, Migrator().Run(conninfo));
//
// Several orchestrators may start at once against one database: the whole run holds a
// session-level advisory lock, so one applies and the others then find nothing to do.
// Each migration runs in its own transaction together with its schema_migrations row, so a
// failing migration leaves no trace and the earlier ones stay applied. Running twice is a
// no-op. Called from main() (or a test) before the server starts; one thread.
#ifndef VANGUARD_ORCHESTRATOR_MIGRATOR_H_
#define VANGUARD_ORCHESTRATOR_MIGRATOR_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "migrations/migrations.h"

namespace vanguard {

class Migrator {
 public:
  // The advisory lock key held while migrating ("VGMIGRAT").
  static constexpr int64_t kAdvisoryLockKey = 0x56474D4947524154;

  explicit Migrator(std::span<const Migration> migrations = EmbeddedMigrations())
      : migrations_(migrations) {}

  // Connects to conninfo and applies what is missing. Returns the versions it applied
  // (empty when the schema was current). UNAVAILABLE if the database cannot be reached;
  // the failing migration's error (version named) otherwise.
  absl::StatusOr<std::vector<std::string>> Run(const std::string& conninfo,
                                               absl::Duration connect_timeout = absl::Seconds(10));

 private:
  std::span<const Migration> migrations_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_MIGRATOR_H_
