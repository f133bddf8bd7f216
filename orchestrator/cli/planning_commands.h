// The capacity planner's commands (issue 23; docs/planning.md): `vanguard baseline TEST_ID`
// (AcceptBaseline), `vanguard regressions [--model=M] [--latest] [--fail_on_regression]`
// (ListRegressions), `vanguard trend MODEL` (GetCapacityTrend) and `vanguard plan --model=M
// --peak_qps=Q [--headroom=30%] [--survive_loss=1]` (PlanCapacity). The verdicts, the
// baseline in force and the replica arithmetic are the orchestrator's (migration 0010); this
// file parses, calls and prints.
//
//   out << RenderPlanTable(plan);
//   // resnet50: peak 400.0 qps + 30% headroom = 520.0 qps, surviving the loss of 1 replica
//   // HARDWARE     VERSION  CAPACITY/REPLICA  TEST  REPLICAS  ACCELERATORS  COST/1M REQ ...
//   // nvidia-l4x2  v2                 100.0     7         7            14            - ...
//   // (then OUT TOK/REQ and COST/1M OUT TOK: a generative model's output tokens per request
//   // and the cost of a million of them at the SLO)
//
// Pure render and parse functions; the commands run on main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_PLANNING_COMMANDS_H_
#define VANGUARD_ORCHESTRATOR_CLI_PLANNING_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "orchestrator/cli/command_table.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

// "30%" or "30" -> 0.3 (a percentage, as --fail_if_regressed takes it); INVALID_ARGUMENT
// naming --headroom unless it is a finite number >= 0.
absl::StatusOr<double> ParseHeadroomPercent(absl::string_view text);

// "nvidia-l4x2 (pool a)", "cpu", "-" when nothing is registered.
std::string HardwareText(const v1::Hardware& hardware);
// "regressed", "improved", "unchanged", "undecided"; "-" without a baseline.
std::string VerdictName(v1::CapacityVerdict verdict);

// Tables (one row per test / per hardware) and CSV (a header row, then one row per test /
// per hardware; numbers unformatted, times RFC 3339 UTC, empty cells for what is unset).
std::string RenderBaselineTable(const v1::CapacityBaseline& baseline);
std::string RenderRegressionsTable(const v1::ListRegressionsResponse& regressions);
std::string RenderTrendTable(const v1::GetCapacityTrendResponse& trend);
std::string RenderCapacityPointsCsv(const std::vector<v1::CapacityPoint>& points);
std::string RenderPlanTable(const v1::PlanCapacityResponse& plan);
std::string RenderPlanCsv(const v1::PlanCapacityResponse& plan);

// The table entries: baseline, regressions, trend, plan.
std::vector<CommandSpec> PlanningCommands();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_PLANNING_COMMANDS_H_
