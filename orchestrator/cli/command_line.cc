// Command-line machinery for the `vanguard` tool; see command_line.h. Which commands and
// flags exist comes from the command table. Called from main()'s thread only.
#include "orchestrator/cli/command_line.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "orchestrator/cli/command_table.h"

namespace vanguard::cli {
absl::StatusOr<std::string> ReadFile(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FlagError(flag, absl::StrCat("cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return FlagError(flag, absl::StrCat("cannot read '", path, "'"));
  return text.str();
}

namespace {

// "a, b or c".
std::string OneOf(const std::vector<std::string>& words) {
  if (words.size() < 2) return absl::StrJoin(words, "");
  return absl::StrCat(absl::StrJoin(words.begin(), words.end() - 1, ", "), " or ", words.back());
}

absl::Status CheckFlagsBelongTo(const CommandWords& command, const GivenFlags& flags) {
  for (const auto& [name, value] : flags) {
    const bool global = std::any_of(GlobalFlags().begin(), GlobalFlags().end(),
                                    [&](const FlagSpec& flag) { return flag.name == name; });
    if (global || command.spec->FindFlag(name) != nullptr) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(FlagDisplayName(name), " is not used by '", command.name, "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequiredFlags(const CommandSpec& spec, const FlagSet& flags) {
  for (const FlagSpec& flag : spec.flags) {
    if (!flag.required) continue;
    ASSIGN_OR_RETURN(std::optional<std::string> text, flags.NonEmptyText(flag.name));
    if (text.has_value()) continue;
    return FlagError(flag.name, flag.choices.empty()
                                    ? "is required"
                                    : absl::StrCat("is required (", OneOf(flag.choices), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  for (OutputFormat format :
       {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kCsv, OutputFormat::kYaml}) {
    if (lower == OutputFormatName(format)) return format;
  }
  return BadValue("output", text, "is not one of table, json, csv, yaml");
}

absl::StatusOr<GlobalOptions> ParseGlobalOptions(const FlagSet& flags, const Environment& env) {
  GlobalOptions global;
  ASSIGN_OR_RETURN(std::optional<std::string> orchestrator, flags.NonEmptyText("orchestrator"));
  if (orchestrator.has_value()) {
    global.orchestrator = std::string(absl::StripAsciiWhitespace(*orchestrator));
  } else if (env.orchestrator.has_value() && !env.orchestrator->empty()) {
    global.orchestrator = *env.orchestrator;
  }
  if (env.token.has_value()) global.bearer_token = *env.token;
  global.stdout_is_terminal = env.stdout_is_terminal;
  global.stderr_is_terminal = env.stderr_is_terminal;
  global.terminal_columns = env.terminal_columns;
  ASSIGN_OR_RETURN(std::optional<std::string> tls_ca, flags.NonEmptyText("tls_ca"));
  ASSIGN_OR_RETURN(std::optional<std::string> cert, flags.NonEmptyText("tls_client_cert"));
  ASSIGN_OR_RETURN(std::optional<std::string> key, flags.NonEmptyText("tls_client_key"));
  ASSIGN_OR_RETURN(global.tls, LoadChannelTls({.ca = tls_ca.value_or(""),
                                               .cert = cert.value_or(""),
                                               .key = key.value_or(""),
                                               .cert_flag = "tls_client_cert",
                                               .key_flag = "tls_client_key"}));
  ASSIGN_OR_RETURN(std::optional<absl::Duration> timeout, flags.Duration("timeout"));
  if (timeout.has_value()) {
    if (*timeout <= absl::ZeroDuration()) {
      return BadValue("timeout", *flags.Text("timeout"), "must be positive");
    }
    global.rpc_timeout = *timeout;
  }
  if (std::optional<std::string> output = flags.Text("output"); output.has_value()) {
    ASSIGN_OR_RETURN(global.output, ParseOutputFormat(*output));
  }
  return global;
}

absl::Status CheckOutputPrinted(const CommandSpec& spec, OutputFormat output) {
  if (spec.Prints(output)) return absl::OkStatus();
  std::vector<std::string> names;
  for (OutputFormat format : spec.outputs) names.push_back(OutputFormatName(format));
  return BadValue("output", OutputFormatName(output),
                  absl::StrCat("is not printed by '", spec.Name(), "' (use ", OneOf(names), ")"));
}

// Positional words that name a group ("models") but no command of it.
absl::Status UnknownCommand(const std::vector<std::string>& words) {
  std::vector<std::string> subcommands;
  for (const CommandSpec& spec : Commands()) {
    if (spec.words.size() > 1 && spec.words[0] == words[0]) subcommands.push_back(spec.words[1]);
  }
  if (subcommands.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown command '", words[0], "'"));
  }
  if (words.size() == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", words[0], "' needs a subcommand: ", OneOf(subcommands)));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", words[0], " ", words[1],
                                                 "' (use ", OneOf(subcommands), ")"));
}

// One argv word that starts with a dash: "--name=value", "-name", "--name".
struct FlagWord {
  absl::string_view name;
  bool has_value = false;
  absl::string_view value;
};

// nullopt for a positional word (one that does not start with '-', or "-" alone).
std::optional<FlagWord> AsFlagWord(absl::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return std::nullopt;
  if (!absl::ConsumePrefix(&arg, "--")) absl::ConsumePrefix(&arg, "-");
  const size_t equals = arg.find('=');
  FlagWord word;
  word.name = arg.substr(0, equals);
  word.has_value = equals != absl::string_view::npos;
  if (word.has_value) word.value = arg.substr(equals + 1);
  return word;
}

// Checks one flag word and appends it (with `next`, the following word, when it is the
// flag's value) to `prepared`. Returns whether `next` was taken.
absl::StatusOr<bool> PrepareFlag(const std::string& arg, const FlagWord& flag,
                                 const std::optional<std::string>& next,
                                 const std::function<FlagKind(absl::string_view name)>& kind_of,
                                 PreparedArgv& prepared) {
  if (flag.name == "version") {
    if (!flag.has_value && !next.has_value()) {
      return absl::InvalidArgumentError("--version needs a value (the model version)");
    }
    prepared.argv.push_back(absl::StrCat("--model_version=", flag.has_value ? flag.value : *next));
    prepared.given_names.insert("model_version");
    return !flag.has_value;
  }
  FlagKind kind = kind_of(flag.name);
  absl::string_view given_name = flag.name;
  if (kind == FlagKind::kUnknown && absl::StartsWith(flag.name, "no") && !flag.has_value &&
      kind_of(flag.name.substr(2)) == FlagKind::kBool) {
    kind = FlagKind::kBool;  // --nowait
    given_name = flag.name.substr(2);
  }
  if (kind == FlagKind::kUnknown) {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag --", flag.name));
  }
  prepared.given_names.insert(std::string(given_name));
  prepared.argv.push_back(arg);
  bool ignored = false;
  if (kind == FlagKind::kBool && flag.has_value && !absl::SimpleAtob(flag.value, &ignored)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag.name, ": '", flag.value, "' is not true or false"));
  }
  if (kind == FlagKind::kBool || flag.has_value) return false;
  if (!next.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag.name, " needs a value"));
  }
  prepared.argv.push_back(*next);
  return true;
}

}  // namespace

std::string OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kYaml:
      return "yaml";
  }
  return "table";
}

std::optional<std::string> FlagSet::Text(const std::string& name) const {
  auto it = flags_.find(name);
  if (it == flags_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::optional<std::string>> FlagSet::NonEmptyText(const std::string& name) const {
  std::optional<std::string> text = Text(name);
  if (text.has_value() && absl::StripAsciiWhitespace(*text).empty()) {
    return FlagError(name, "must not be empty");
  }
  return text;
}

absl::StatusOr<std::optional<double>> FlagSet::Number(const std::string& name) const {
  std::optional<std::string> text = Text(name);
  if (!text.has_value()) return std::optional<double>();
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*text), &value) || !std::isfinite(value)) {
    return BadValue(name, *text, "is not a number");
  }
  return std::optional<double>(value);
}

absl::StatusOr<std::optional<int64_t>> FlagSet::Integer(const std::string& name, int64_t min,
                                                        int64_t max) const {
  std::optional<std::string> text = Text(name);
  if (!text.has_value()) return std::optional<int64_t>();
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return BadValue(name, *text, "is not an integer");
  }
  if (value < min || value > max) {
    return BadValue(name, *text, absl::StrCat("is out of range [", min, ", ", max, "]"));
  }
  return std::optional<int64_t>(value);
}

absl::StatusOr<std::optional<absl::Duration>> FlagSet::Duration(const std::string& name) const {
  std::optional<std::string> text = Text(name);
  if (!text.has_value()) return std::optional<absl::Duration>();
  ASSIGN_OR_RETURN(absl::Duration d, ParseDurationFlag(name, *text));
  return std::optional<absl::Duration>(d);
}

absl::StatusOr<bool> FlagSet::Bool(const std::string& name) const {
  std::optional<std::string> text = Text(name);
  if (!text.has_value()) return false;
  bool value = false;
  if (!absl::SimpleAtob(*text, &value)) return BadValue(name, *text, "is not true or false");
  return value;
}

absl::Status FlagError(absl::string_view name, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(FlagDisplayName(name), ": ", problem));
}

absl::Status BadValue(absl::string_view name, absl::string_view value, absl::string_view rule) {
  return FlagError(name, absl::StrCat("'", value, "' ", rule));
}

absl::StatusOr<int64_t> ParseTestId(absl::string_view text) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ID: '", text, "' is not a test id (a positive integer)"));
  }
  return id;
}

absl::Status ExpectArgs(const CommandWords& command, size_t count, absl::string_view what) {
  if (command.args.size() < count) {
    return absl::InvalidArgumentError(absl::StrCat("'", command.name, "' needs ", what));
  }
  if (command.args.size() > count) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", command.name, "': unexpected argument '", command.args[count], "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> SplitList(absl::string_view name, absl::string_view text) {
  std::vector<std::string> entries;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) return BadValue(name, text, "has an empty entry");
    entries.emplace_back(entry);
  }
  return entries;
}

absl::Status ReadJsonMessage(absl::string_view flag, const std::string& path,
                             google::protobuf::Message* message) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(flag, path));
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt field must not be silently dropped
  auto status = google::protobuf::util::JsonStringToMessage(text, message, options);
  if (!status.ok()) {
    return FlagError(flag, absl::StrCat("'", path, "' is not a ", message->GetTypeName(),
                                        " in protobuf JSON: ", status.message().ToString()));
  }
  return absl::OkStatus();
}

bool HasDuration(const google::protobuf::Duration& d) { return d.seconds() != 0 || d.nanos() != 0; }

void SetProtoDuration(absl::Duration d, google::protobuf::Duration* out) {
  absl::Duration remainder;
  const int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &remainder);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(remainder / absl::Nanoseconds(1)));
}

std::string FlagDisplayName(absl::string_view name) {
  if (name == "model_version") return "--version";
  if (name.size() == 1) return absl::StrCat("-", name);
  return absl::StrCat("--", name);
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view name, absl::string_view value) {
  absl::Duration d;
  if (!absl::ParseDuration(absl::StripAsciiWhitespace(value), &d) ||
      d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return BadValue(name, value, "is not a duration (use e.g. 10s, 500ms, 2m)");
  }
  if (d < absl::ZeroDuration()) return BadValue(name, value, "must not be negative");
  return d;
}

absl::StatusOr<CommandWords> IdentifyCommand(const std::vector<std::string>& words) {
  if (words.empty()) return absl::InvalidArgumentError("missing command");
  for (const CommandSpec& spec : Commands()) {
    if (words.size() < spec.words.size()) continue;
    if (!std::equal(spec.words.begin(), spec.words.end(), words.begin())) continue;
    CommandWords command;
    command.spec = &spec;
    command.name = spec.Name();
    command.args.assign(words.begin() + spec.words.size(), words.end());
    return command;
  }
  return UnknownCommand(words);
}

absl::StatusOr<ParsedCommand> ParseCommand(const CommandWords& command, const GivenFlags& given,
                                           const Environment& env) {
  RETURN_IF_ERROR(CheckFlagsBelongTo(command, given));
  const FlagSet flags(given);
  ParsedCommand parsed;
  parsed.spec = command.spec;
  ASSIGN_OR_RETURN(parsed.global, ParseGlobalOptions(flags, env));
  RETURN_IF_ERROR(CheckOutputPrinted(*command.spec, parsed.global.output));
  RETURN_IF_ERROR(CheckRequiredFlags(*command.spec, flags));
  ASSIGN_OR_RETURN(parsed.options,
                   command.spec->parse(CommandInput{command, flags, parsed.global}));
  return parsed;
}

absl::StatusOr<CommandLine> SplitArgv(const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(PreparedArgv prepared, PrepareArgv(argv, FlagKindOf));
  CommandLine line;
  line.help_requested = prepared.help_requested;
  for (size_t i = 1; i < prepared.argv.size(); ++i) {
    const std::string& arg = prepared.argv[i];
    if (arg == "--") {
      line.words.insert(line.words.end(), prepared.argv.begin() + i + 1, prepared.argv.end());
      break;
    }
    const std::optional<FlagWord> flag = AsFlagWord(arg);
    if (!flag.has_value()) {
      line.words.push_back(arg);
      continue;
    }
    // PrepareArgv accepted it: a known flag, --noX for a bool X, or a valued flag whose value
    // is in this word or the next.
    const std::string name(flag->name);
    const FlagKind kind = FlagKindOf(name);
    if (kind == FlagKind::kUnknown) {  // --noX
      line.flags[name.substr(2)] = "false";
    } else if (kind == FlagKind::kBool) {
      bool on = true;
      if (flag->has_value) on = absl::SimpleAtob(flag->value, &on) && on;
      line.flags[name] = on ? "true" : "false";
    } else {
      line.flags[name] = flag->has_value ? std::string(flag->value) : prepared.argv[++i];
    }
  }
  return line;
}

absl::StatusOr<PreparedArgv> PrepareArgv(
    const std::vector<std::string>& argv,
    const std::function<FlagKind(absl::string_view name)>& kind_of) {
  PreparedArgv prepared;
  if (argv.empty()) return prepared;
  prepared.argv.push_back(argv[0]);
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {  // everything after is positional
      prepared.argv.insert(prepared.argv.end(), argv.begin() + i, argv.end());
      break;
    }
    const std::optional<FlagWord> flag = AsFlagWord(arg);
    if (!flag.has_value()) {
      prepared.argv.push_back(arg);
      continue;
    }
    if (flag->name == "help" || flag->name == "h") {
      prepared.help_requested = true;
      continue;
    }
    const std::optional<std::string> next =
        i + 1 < argv.size() ? std::optional<std::string>(argv[i + 1]) : std::nullopt;
    ASSIGN_OR_RETURN(bool took_next, PrepareFlag(arg, *flag, next, kind_of, prepared));
    if (took_next) ++i;
  }
  return prepared;
}

}  // namespace vanguard::cli
