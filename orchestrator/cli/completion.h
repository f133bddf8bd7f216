// Shell completion for `vanguard`, generated from the command table: command words (with
// their summaries in zsh), each command's flags and the global ones, the values a flag offers
// (--output=, --strategy=, ...), file names for file flags and a command's fixed arguments.
//
//   vanguard completion bash > /etc/bash_completion.d/vanguard     # or: source <(vanguard
//   completion bash) vanguard completion zsh > "${fpath[1]}/_vanguard"              # then:
//   compinit
//
// Pure functions of the table; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMPLETION_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMPLETION_H_

#include <string>
#include <vector>

#include "orchestrator/cli/command_table.h"

namespace vanguard::cli {

// A bash script defining _vanguard and registering it with `complete -F`.
std::string BashCompletion(const std::vector<CommandSpec>& commands);
// A zsh script (#compdef vanguard) defining _vanguard with _describe and _arguments.
std::string ZshCompletion(const std::vector<CommandSpec>& commands);

// The `completion bash|zsh` table entry.
CommandSpec CompletionCommand();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMPLETION_H_
