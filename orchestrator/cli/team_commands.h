// A team's quota from the command line (docs/security.md, "Tenancy"): `vanguard team
// set-quota --team=T [--max_rate_qps=Q] [--max_step_duration=1h] [--max_test_duration=24h]
// [--max_concurrent_tests=N] [--max_submitter_priority=P] [--max_admin_priority=P]`
// (SetTeamQuota, admin only; flags left out keep the stored value) and `vanguard team
// get-quota [--team=T]` (GetTeamQuota; default the token's team). The orchestrator judges
// the values; this file parses, calls and prints.
//
//   out << RenderQuotaTable(response.team(), response.quota());
//   // TEAM    MAX_RATE_QPS  MAX_STEP  MAX_TEST  MAX_CONCURRENT  MAX_PRIO_SUBMITTER  MAX_PRIO_ADMIN
//   // vision  500           1h        24h       10              200                 1000
//
// Pure render and parse functions; the commands run on main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_TEAM_COMMANDS_H_
#define VANGUARD_ORCHESTRATOR_CLI_TEAM_COMMANDS_H_

#include <string>
#include <vector>

#include "orchestrator/cli/command_table.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

// One header row and one row for `team`.
std::string RenderQuotaTable(const std::string& team, const v1::TeamQuota& quota);

// The table entries: team set-quota, team get-quota.
std::vector<CommandSpec> TeamCommands();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_TEAM_COMMANDS_H_
