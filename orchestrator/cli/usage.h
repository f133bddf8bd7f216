// The `vanguard` help texts, generated from the command table: the whole usage (every command
// with its synopsis and summary, the global flags, the exit codes) and one command's help
// (its synopsis, summary, details and every flag with its help text).
//
//   std::cout << UsageText();                 // vanguard --help, vanguard help
//   std::cout << CommandHelp(*words.spec);    // vanguard submit --help, vanguard help submit
//
// Pure functions of the table; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_USAGE_H_
#define VANGUARD_ORCHESTRATOR_CLI_USAGE_H_

#include <string>

#include "orchestrator/cli/command_table.h"

namespace vanguard::cli {

std::string UsageText();
std::string CommandHelp(const CommandSpec& spec);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_USAGE_H_
