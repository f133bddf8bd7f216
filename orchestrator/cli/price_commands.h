// Prices per accelerator-hour from the command line (docs/planning.md, "Cost"): `vanguard
// prices set ACCELERATOR PRICE_PER_HOUR` (SetAcceleratorPrice, admin only; inserts or
// replaces) and `vanguard prices list` (ListAcceleratorPrices). `vanguard plan` turns them
// into cost_per_million_requests. The orchestrator judges the values (a plain accelerator
// name, a price finite, >= 0 and <= 1000000); this file parses, calls and prints.
//
//   out << RenderPriceTable(response.prices());
//   // ACCELERATOR  PRICE_PER_HOUR  CURRENCY  UPDATED
//   // nvidia-l4              0.8   USD       2026-12-03 12:00:00 UTC
//
// Pure render and parse functions; the commands run on main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_PRICE_COMMANDS_H_
#define VANGUARD_ORCHESTRATOR_CLI_PRICE_COMMANDS_H_

#include <string>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "orchestrator/cli/command_table.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

// One header row and one row per price, in the order given.
std::string RenderPriceTable(
    const google::protobuf::RepeatedPtrField<v1::AcceleratorPrice>& prices);

// The table entries: prices set, prices list.
std::vector<CommandSpec> PriceCommands();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_PRICE_COMMANDS_H_
