// The `vanguard` command line turned into a typed command: argv split into words and flags,
// the command the words select, and the options its flags describe, validated. Which commands
// exist, their flags, help and parsers are entries of one table (command_table.h); everything
// here reads that table. A bad value is a usage error (INVALID_ARGUMENT) whose message names
// the flag, e.g. "--step_duration: '10' is not a duration (use e.g. 10s, 500ms, 2m)".
//
//   ASSIGN_OR_RETURN(CommandLine line, SplitArgv({"vanguard", "get", "7", "--output=json"}));
//   ASSIGN_OR_RETURN(CommandWords cmd, IdentifyCommand(line.words));
//   ASSIGN_OR_RETURN(ParsedCommand parsed, ParseCommand(cmd, line.flags, Environment{}));
//   // parsed.Options<int64_t>() == 7, parsed.global.output == OutputFormat::kJson
//
// Pure functions, except that flags naming files (--spec_file, --from_file, --tls_*) are read
// from disk. Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/grpc_tls.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/message.h"

namespace vanguard::cli {

// Exit codes of the `vanguard` tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsage = 2;
// submit --wait/--watch and watch: the test ended FAILED or CANCELLED; compare: a test has
// no result.
inline constexpr int kExitTestNotSucceeded = 3;
// submit --fail_below / --fail_if_regressed: a gate failed (a test that did not succeed
// fails every gate); regressions --fail_on_regression: a regression was listed.
inline constexpr int kExitGateFailed = 4;
// submit --wait/--watch and watch: Ctrl-C stopped following the test (it goes on running).
inline constexpr int kExitInterrupted = 130;

inline constexpr char kDefaultOrchestrator[] = "127.0.0.1:50051";

// The flags the user set on the command line: name (without dashes) -> text value. Bool
// flags carry "true" or "false". The model version flag is named "model_version"
// (`--version` on the command line).
using GivenFlags = std::map<std::string, std::string>;

// What the environment contributes (unset variables are nullopt).
struct Environment {
  std::optional<std::string> orchestrator;  // VANGUARD_ORCHESTRATOR
  std::optional<std::string> token;         // VANGUARD_TOKEN
  // Whether stdout / stderr are terminals (main: isatty), and the terminal's width (0:
  // unknown); see GlobalOptions.
  bool stdout_is_terminal = false;
  bool stderr_is_terminal = false;
  int terminal_columns = 0;
};

enum class OutputFormat { kTable, kJson, kCsv, kYaml };

// "table", "json", "csv", "yaml".
std::string OutputFormatName(OutputFormat format);

// Options every command shares.
struct GlobalOptions {
  std::string orchestrator = kDefaultOrchestrator;
  std::string bearer_token;  // empty: no authorization metadata is sent
  ChannelTls tls;  // --tls_ca (TLS on), --tls_client_cert/--tls_client_key; default plaintext
  absl::Duration rpc_timeout = absl::Seconds(10);
  OutputFormat output = OutputFormat::kTable;
  // From Environment: on a terminal, live progress is one line rewritten in place, cut to
  // the terminal's width when known (a plain line per update otherwise).
  bool stdout_is_terminal = false;
  bool stderr_is_terminal = false;
  int terminal_columns = 0;
};

struct CommandSpec;  // command_table.h

// The command the positional words select, and the words after it (e.g. the test id).
struct CommandWords {
  const CommandSpec* spec = nullptr;
  std::string name;  // "models register", "get", ...
  std::vector<std::string> args;
};

// A validated command: its table entry, the global options and what its parser built (the
// entry's own type, e.g. SubmitOptions for submit, int64_t for get).
struct ParsedCommand {
  const CommandSpec* spec = nullptr;
  GlobalOptions global;
  std::any options;

  // Throws std::bad_any_cast when T is not the entry's type (a bug, never user input).
  template <typename T>
  const T& Options() const {
    return std::any_cast<const T&>(options);
  }
};

// Finds the command in the positional words (argv without argv[0] and without flags).
// INVALID_ARGUMENT when the command is missing or unknown; callers then print UsageText().
absl::StatusOr<CommandWords> IdentifyCommand(const std::vector<std::string>& words);

// Validates the command's arguments and flags and builds its options. Flags that the
// command does not use are usage errors too (they are usually typos), and so is an --output
// format the command does not print.
absl::StatusOr<ParsedCommand> ParseCommand(const CommandWords& command, const GivenFlags& flags,
                                           const Environment& env);

// "--version" for the model version flag, "-o" for one-letter flags, "--name" otherwise.
std::string FlagDisplayName(absl::string_view name);

// Read access to the given flags, for command parsers; remembers nothing.
class FlagSet {
 public:
  explicit FlagSet(const GivenFlags& flags) : flags_(flags) {}

  bool Has(const std::string& name) const { return flags_.contains(name); }
  std::optional<std::string> Text(const std::string& name) const;
  // A non-empty string; an explicitly empty value is an error (it is almost always a
  // shell variable that was not set).
  absl::StatusOr<std::optional<std::string>> NonEmptyText(const std::string& name) const;
  absl::StatusOr<std::optional<double>> Number(const std::string& name) const;
  absl::StatusOr<std::optional<int64_t>> Integer(const std::string& name, int64_t min,
                                                 int64_t max) const;
  absl::StatusOr<std::optional<absl::Duration>> Duration(const std::string& name) const;
  absl::StatusOr<bool> Bool(const std::string& name) const;  // absent: false

 private:
  const GivenFlags& flags_;
};

// Helpers for command parsers. Every error is INVALID_ARGUMENT.
// "--name: problem".
absl::Status FlagError(absl::string_view name, absl::string_view problem);
// "--name: 'value' rule".
absl::Status BadValue(absl::string_view name, absl::string_view value, absl::string_view rule);
// A positive integer test id given as a positional argument.
absl::StatusOr<int64_t> ParseTestId(absl::string_view text);
// Exactly `count` positional arguments; `what` names a missing one with an example, e.g.
// "a test ID (vanguard get 42)".
absl::Status ExpectArgs(const CommandWords& command, size_t count, absl::string_view what = "");
// Splits "a, b,c" into trimmed entries; an empty entry is an error naming the flag.
absl::StatusOr<std::vector<std::string>> SplitList(absl::string_view name, absl::string_view text);
// Reads a message in protobuf's JSON mapping (unknown fields refused) from the file a flag
// names.
// The whole file at `path` (named by --flag); INVALID_ARGUMENT naming --flag when it cannot
// be read.
absl::StatusOr<std::string> ReadFile(absl::string_view flag, const std::string& path);

absl::Status ReadJsonMessage(absl::string_view flag, const std::string& path,
                             google::protobuf::Message* message);
void SetProtoDuration(absl::Duration d, google::protobuf::Duration* out);
bool HasDuration(const google::protobuf::Duration& d);  // not zero
// An enum value named by its suffix in any case ("poisson") or in full ("SCHEDULE_POISSON");
// the _UNSPECIFIED value (0) is refused with BadValue(flag, text, rule).
template <typename Enum>
absl::StatusOr<Enum> ParseEnumFlag(absl::string_view flag, absl::string_view text,
                                   absl::string_view prefix,
                                   bool (*parse)(const std::string&, Enum*),
                                   absl::string_view rule) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, prefix)) upper = absl::StrCat(prefix, upper);
  Enum value{};
  if (!parse(upper, &value) || static_cast<int>(value) == 0) return BadValue(flag, text, rule);
  return value;
}

// Parses a duration flag with absl::ParseDuration ("10s", "500ms", "1m30s"); infinite and
// negative values are rejected.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view name, absl::string_view value);

// How a flag takes its value; PrepareArgv asks this of every flag it sees.
enum class FlagKind { kUnknown, kBool, kValued };

struct PreparedArgv {
  std::vector<std::string> argv;  // every flag known, every valued flag with its value
  bool help_requested = false;    // --help, -help or -h was given
  // Names of the flags on the command line ("model_version" for --version, "wait" for
  // --nowait), so that an explicitly empty value is told apart from an absent flag.
  std::set<std::string> given_names;
};

// Checks argv: an unknown flag, a bad bool value or a missing value is a usage error; rewrites
// --version=V / --version V to --model_version=V.
absl::StatusOr<PreparedArgv> PrepareArgv(
    const std::vector<std::string>& argv,
    const std::function<FlagKind(absl::string_view name)>& kind_of);

// argv (argv[0] included) split into positional words and flags, with the flags' kinds
// taken from the command table. Flags may come before, between or after the words; "--"
// ends the flags; --noX sets bool flag X to false; a repeated flag keeps its last value.
struct CommandLine {
  std::vector<std::string> words;
  GivenFlags flags;
  bool help_requested = false;
};
absl::StatusOr<CommandLine> SplitArgv(const std::vector<std::string>& argv);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_
