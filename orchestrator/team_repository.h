// Per-team quotas (table team_quotas, migrations/0011): what an admin set for each team. A
// limit never set is stored as NULL and read back unset, so TeamLimits::From fills in the
// default of the day.
//
//   TeamRepository teams(pool);
//   ASSIGN_OR_RETURN(v1::TeamQuota stored, teams.Get("vision"));  // unset fields: default
//   ASSIGN_OR_RETURN(v1::TeamQuota now, teams.Set("vision", quota));  // merges set fields
//
// The count of a team's unfinished tests is not here: TestRepository::Submit counts it under
// the team row's lock. Thread-safe (all state is in Postgres); any thread may call. Database
// errors map as in common/postgres.h.
#ifndef VANGUARD_ORCHESTRATOR_TEAM_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_TEAM_REPOSITORY_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

class TeamRepository {
 public:
  explicit TeamRepository(PostgresPool* pool) : pool_(pool) {}

  // The team's stored quota: the fields an admin set; none for a team without a row.
  absl::StatusOr<v1::TeamQuota> Get(const std::string& team);

  // Stores the fields set in `quota` (validated by the caller), keeping the others, and
  // returns the stored quota (as Get).
  absl::StatusOr<v1::TeamQuota> Set(const std::string& team, const v1::TeamQuota& quota);

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_TEAM_REPOSITORY_H_
