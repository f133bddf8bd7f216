// The `vanguard` commands, one entry each: the words that select it, a one-line summary, its
// flags with their help, the --output formats it prints, a parser and a runner. Usage text,
// per-command --help, flag membership, argv splitting and the bash/zsh completion scripts are
// all derived from this table, so adding a command is one entry (plus its own files).
//
//   Command<CompareOptions>({
//       .words = {"compare"}, .args = "A B", .summary = "Compare two tests.",
//       .flags = {{.name = "model", .value = "NAME", .help = "..."}},
//       .parse = ParseCompare,                       // CommandInput -> StatusOr<CompareOptions>
//       .run = [](CommandRunner& r, const CompareOptions& o) { return RunCompare(r, o); }})
//
// The table is built once, on first use, and never changes; any thread may read it.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMMAND_TABLE_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMMAND_TABLE_H_

#include <any>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "orchestrator/cli/command_line.h"

namespace vanguard::cli {

class CommandRunner;  // commands.h

struct FlagSpec {
  std::string name;   // without dashes; "model_version" is spelled --version, "o" -o
  std::string value;  // placeholder in usage, e.g. "N" or "10s"; empty: a bool flag
  std::string help;
  // ParseCommand refuses the command without it (the help says so).
  bool required = false;
  // Values offered by completion and listed by --help; the parser still validates.
  std::vector<std::string> choices;
  bool file = false;  // the value is a local file name (completion offers files)

  bool is_bool() const { return value.empty(); }
};

// What a command's parser reads.
struct CommandInput {
  const CommandWords& command;
  const FlagSet& flags;
  const GlobalOptions& global;
};

inline const std::vector<OutputFormat> kTableJsonYaml = {OutputFormat::kTable, OutputFormat::kJson,
                                                         OutputFormat::kYaml};
inline const std::vector<OutputFormat> kEveryOutput = {OutputFormat::kTable, OutputFormat::kJson,
                                                       OutputFormat::kCsv, OutputFormat::kYaml};

struct CommandSpec {
  std::vector<std::string> words;        // {"models", "register"}
  std::string args;                      // positional arguments in usage, e.g. "ID"; may be empty
  std::vector<std::string> arg_choices;  // the values an argument takes, for completion
  std::string summary;                   // one line
  std::string details;                   // more lines for `vanguard CMD --help`; may be empty
  std::vector<FlagSpec> flags;           // besides the global ones
  std::vector<OutputFormat> outputs = kTableJsonYaml;
  // Validates the arguments and flags; the value is what `run` receives.
  std::function<absl::StatusOr<std::any>(const CommandInput&)> parse;
  // Exactly one is set: a command against the orchestrator, or one that needs none (help,
  // completion), which gets stdout. Both return the exit code.
  std::function<int(CommandRunner&, const std::any&)> run;
  std::function<int(std::ostream& out, const std::any&)> run_offline;

  std::string Name() const;  // the words joined by spaces
  const FlagSpec* FindFlag(absl::string_view name) const;
  bool Prints(OutputFormat format) const;
};

// A command whose parser builds an `Options` (written without std::any).
template <typename Options>
struct TypedCommand {
  std::vector<std::string> words;
  std::string args;
  std::vector<std::string> arg_choices;
  std::string summary;
  std::string details;
  std::vector<FlagSpec> flags;
  std::vector<OutputFormat> outputs = kTableJsonYaml;
  std::function<absl::StatusOr<Options>(const CommandInput&)> parse;
  std::function<int(CommandRunner&, const Options&)> run;
  std::function<int(std::ostream&, const Options&)> run_offline;
};

template <typename Options>
CommandSpec Command(TypedCommand<Options> typed) {
  CommandSpec spec{.words = std::move(typed.words),
                   .args = std::move(typed.args),
                   .arg_choices = std::move(typed.arg_choices),
                   .summary = std::move(typed.summary),
                   .details = std::move(typed.details),
                   .flags = std::move(typed.flags),
                   .outputs = std::move(typed.outputs)};
  spec.parse = [parse =
                    std::move(typed.parse)](const CommandInput& input) -> absl::StatusOr<std::any> {
    ASSIGN_OR_RETURN(Options options, parse(input));
    return std::any(std::move(options));
  };
  if (typed.run) {
    spec.run = [run = std::move(typed.run)](CommandRunner& runner, const std::any& options) {
      return run(runner, std::any_cast<const Options&>(options));
    };
  } else {
    spec.run_offline = [run = std::move(typed.run_offline)](std::ostream& out,
                                                            const std::any& options) {
      return run(out, std::any_cast<const Options&>(options));
    };
  }
  return spec;
}

// Every command, in the order usage lists them.
const std::vector<CommandSpec>& Commands();
// Flags every command accepts: --orchestrator, --timeout, --output, --tls_ca,
// --tls_client_cert, --tls_client_key.
const std::vector<FlagSpec>& GlobalFlags();
// How a flag name takes its value in any command (the table test checks that no name is a
// bool in one command and valued in another).
FlagKind FlagKindOf(absl::string_view name);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMMAND_TABLE_H_
