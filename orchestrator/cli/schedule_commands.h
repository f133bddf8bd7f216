// Continuous regression testing from the command line (docs/planning.md):
//   vanguard schedules set --model=M [--name=N] [--on_new_version] [--every=6h | --cron=EXPR]
//                          --spec_file=F
//   vanguard schedules list [--model=M]
//   vanguard schedules delete ID
//   vanguard webhooks add (--model=M | --team=T) --url=URL --secret_file=F
//   vanguard webhooks list [--team=T]
//   vanguard webhooks delete ID
//   vanguard webhooks deliveries ID [--state=pending|delivered|failed] [--limit=N]
// The orchestrator judges the values (and the caller's team); this file parses, calls and
// prints. A webhook's secret is read from a file, never from a flag's value (which other
// users may see in the process list), and is never printed.
//
//   out << RenderScheduleTable(response);
//   // ID  MODEL     NAME     TEAM     ON NEW VERSION  EVERY  NEXT RUN (UTC)    LAST TEST
//   //  3  resnet50  default  vision   yes             6h     2026-12-02 18:00  41
//   // (EVERY is the interval, or "cron " and the expression)
//
// Pure render and parse functions; the commands run on main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_SCHEDULE_COMMANDS_H_
#define VANGUARD_ORCHESTRATOR_CLI_SCHEDULE_COMMANDS_H_

#include <string>
#include <vector>

#include "orchestrator/cli/command_table.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

std::string RenderScheduleTable(const v1::ListSchedulesResponse& list);
std::string RenderWebhookTable(const v1::ListWebhooksResponse& list);
// One row per delivery: ID, TEST, STATE, ATTEMPTS, LAST ANSWER (the HTTP status, or the
// error when there was none), CREATED, and NEXT ATTEMPT (pending) or FINISHED (UTC). The
// body is in --output=json only.
std::string RenderWebhookDeliveryTable(const v1::ListWebhookDeliveriesResponse& list);

// The table entries: schedules set|list|delete, webhooks add|list|delete|deliveries.
std::vector<CommandSpec> ScheduleCommands();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_SCHEDULE_COMMANDS_H_
