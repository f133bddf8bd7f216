// The `vanguard` command line turned into a typed command: which command the positional
// words select, and the options its flags describe, validated. A bad value is a usage error
// (INVALID_ARGUMENT) whose message names the flag, e.g. "--step_duration: '10' is not a
// duration (use e.g. 10s, 500ms, 2m)".
//
//   std::vector<std::string> words = {"submit"};
//   GivenFlags flags = {{"model", "resnet50"}, {"rates", "100,200"}, {"wait", "true"}};
//   ASSIGN_OR_RETURN(CommandWords cmd, IdentifyCommand(words));
//   ASSIGN_OR_RETURN(ParsedCommand parsed, ParseCommand(cmd, flags, Environment{}));
//   // parsed.submit.spec.sweep().rates_qps() == {100, 200}
//
// Flags arrive as text by name (absl flags are defined only in main.cc), so every rule and
// default lives here, where tests reach it. Pure functions, except that --spec_file and
// --from_file are read from disk. Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

// Exit codes of the `vanguard` tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsage = 2;
// submit --wait/--watch and watch: the test ended FAILED or CANCELLED.
inline constexpr int kExitTestNotSucceeded = 3;

inline constexpr char kDefaultOrchestrator[] = "127.0.0.1:50051";

// The flags the user set on the command line: name (without dashes) -> text value. Bool
// flags carry "true" or "false". The model version flag is named "model_version"
// (`--version` on the command line; absl reserves that name, see PrepareArgv).
using GivenFlags = std::map<std::string, std::string>;

// What the environment contributes (unset variables are nullopt).
struct Environment {
  std::optional<std::string> orchestrator;  // VANGUARD_ORCHESTRATOR
  std::optional<std::string> token;         // VANGUARD_TOKEN
};

enum class OutputFormat { kTable, kJson };

// Options every command shares.
struct GlobalOptions {
  std::string orchestrator = kDefaultOrchestrator;
  std::string bearer_token;    // empty: no authorization metadata is sent
  std::string tls_root_certs;  // PEM from --tls_ca; empty: plaintext
  absl::Duration rpc_timeout = absl::Seconds(10);
  OutputFormat output = OutputFormat::kTable;
};

enum class CommandKind {
  kHelp,
  kModelsRegister,
  kModelsGet,
  kModelsList,
  kSubmit,
  kGet,
  kList,
  kCancel,
  kWatch,
  kModelsDeprecate,
  kTokensCreate,
  kTokensRevoke,
  kTokensList,
};

// The command the positional words select, and the words after it (e.g. the test id).
struct CommandWords {
  CommandKind kind = CommandKind::kHelp;
  std::string name;  // "models register", "get", ...
  std::vector<std::string> args;
};

// How `submit` follows the test after queueing it.
enum class FollowMode {
  kNone,    // print the queued test and return
  kPoll,    // --wait: poll GetTest, progress lines on stderr, final test on stdout
  kStream,  // --watch: stream WatchTest updates to stdout
};

struct SubmitOptions {
  v1::TestSpec spec;
  std::string request_id;
  FollowMode follow = FollowMode::kNone;
};

struct ParsedCommand {
  CommandKind kind = CommandKind::kHelp;
  GlobalOptions global;
  v1::Model model;                            // models register
  v1::GetModelRequest get_model;              // models get
  v1::ListModelsRequest list_models;          // models list
  SubmitOptions submit;                       // submit
  int64_t test_id = 0;                        // get, cancel, watch
  v1::ListTestsRequest list_tests;            // list
  v1::DeprecateModelRequest deprecate_model;  // models deprecate
  v1::CreateTokenRequest create_token;        // tokens create
  v1::RevokeTokenRequest revoke_token;        // tokens revoke
  v1::ListTokensRequest list_tokens;          // tokens list
};

// Finds the command in the positional words (argv without argv[0] and without flags).
// INVALID_ARGUMENT when the command is missing or unknown; callers then print UsageText().
absl::StatusOr<CommandWords> IdentifyCommand(const std::vector<std::string>& words);

// Validates the command's arguments and flags and builds its options. Flags that the
// command does not use are usage errors too (they are usually typos).
absl::StatusOr<ParsedCommand> ParseCommand(const CommandWords& command, const GivenFlags& flags,
                                           const Environment& env);

// The usage message: every command with its main flags, the global flags, exit codes.
std::string UsageText();

// "--version" for the model version flag, "--name" otherwise.
std::string FlagDisplayName(absl::string_view name);

// Parses a duration flag with absl::ParseDuration ("10s", "500ms", "1m30s"); infinite and
// negative values are rejected.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view name, absl::string_view value);

// How absl knows a flag name; PrepareArgv asks this of every flag it sees.
enum class FlagKind { kUnknown, kBool, kValued };

struct PreparedArgv {
  std::vector<std::string> argv;  // safe to hand to absl::ParseCommandLine
  bool help_requested = false;    // --help, -help or -h was given
  // Names of the flags on the command line ("model_version" for --version, "wait" for
  // --nowait), so that an explicitly empty value is told apart from an absent flag.
  std::set<std::string> given_names;
};

// Checks argv before absl parses it, so that mistakes absl would report with exit code 1
// (unknown flag, bad bool value, missing value) become usage errors here, and rewrites
// --version=V / --version V to --model_version=V (absl reserves --version).
absl::StatusOr<PreparedArgv> PrepareArgv(
    const std::vector<std::string>& argv,
    const std::function<FlagKind(absl::string_view name)>& kind_of);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMMAND_LINE_H_
