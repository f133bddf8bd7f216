// Command-line parsing for the `vanguard` tool; see command_line.h. Called from main()'s
// thread only.
#include "orchestrator/cli/command_line.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace vanguard::cli {
namespace {

constexpr absl::Duration kDefaultStepDuration = absl::Seconds(10);
constexpr int kMaxListLimit = 1000;

// Flags every command accepts.
const std::set<std::string>& GlobalFlagNames() {
  static const auto* names =
      new std::set<std::string>{"orchestrator", "timeout", "output", "tls_ca"};
  return *names;
}

// Flags each command accepts besides the global ones.
const std::set<std::string>& CommandFlagNames(CommandKind kind) {
  static const auto* none = new std::set<std::string>{};
  static const auto* models_register = new std::set<std::string>{"name",
                                                                 "model_version",
                                                                 "endpoint",
                                                                 "protocol",
                                                                 "served_name",
                                                                 "framework",
                                                                 "p99_ms",
                                                                 "p50_ms",
                                                                 "max_error_rate",
                                                                 "min_achieved_ratio",
                                                                 "warmup",
                                                                 "accelerator",
                                                                 "pool",
                                                                 "accelerator_count",
                                                                 "request_template",
                                                                 "from_file",
                                                                 "ttft_p99_ms",
                                                                 "inter_token_p99_ms",
                                                                 "max_gpu_utilization",
                                                                 "max_queue_depth"};
  static const auto* models_get = new std::set<std::string>{"model_version"};
  static const auto* models_list = new std::set<std::string>{"name", "limit"};
  static const auto* submit = new std::set<std::string>{"model",
                                                        "model_version",
                                                        "rates",
                                                        "min_qps",
                                                        "max_qps",
                                                        "steps",
                                                        "stop_after_failures",
                                                        "strategy",
                                                        "step_duration",
                                                        "step_warmup",
                                                        "request_timeout",
                                                        "schedule",
                                                        "trace",
                                                        "sustain_horizon",
                                                        "priority",
                                                        "max_attempts",
                                                        "request_id",
                                                        "spec_file",
                                                        "confirm_best",
                                                        "wait",
                                                        "watch"};
  static const auto* list = new std::set<std::string>{"state", "model", "limit"};
  static const auto* models_deprecate = new std::set<std::string>{"model_version"};
  static const auto* tokens_create = new std::set<std::string>{"name", "role"};
  static const auto* tokens_list = new std::set<std::string>{"all"};
  switch (kind) {
    case CommandKind::kModelsRegister:
      return *models_register;
    case CommandKind::kModelsGet:
      return *models_get;
    case CommandKind::kModelsList:
      return *models_list;
    case CommandKind::kSubmit:
      return *submit;
    case CommandKind::kList:
      return *list;
    case CommandKind::kModelsDeprecate:
      return *models_deprecate;
    case CommandKind::kTokensCreate:
      return *tokens_create;
    case CommandKind::kTokensList:
      return *tokens_list;
    case CommandKind::kTokensRevoke:
    case CommandKind::kHelp:
    case CommandKind::kGet:
    case CommandKind::kCancel:
    case CommandKind::kWatch:
      return *none;
  }
  return *none;
}

absl::Status FlagError(absl::string_view name, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(FlagDisplayName(name), ": ", problem));
}

absl::Status BadValue(absl::string_view name, absl::string_view value, absl::string_view rule) {
  return FlagError(name, absl::StrCat("'", value, "' ", rule));
}

// Read access to the given flags; remembers nothing.
class FlagSet {
 public:
  explicit FlagSet(const GivenFlags& flags) : flags_(flags) {}

  bool Has(const std::string& name) const { return flags_.contains(name); }

  std::optional<std::string> Text(const std::string& name) const {
    auto it = flags_.find(name);
    if (it == flags_.end()) return std::nullopt;
    return it->second;
  }

  // A non-empty string; an explicitly empty value is an error (it is almost always a
  // shell variable that was not set).
  absl::StatusOr<std::optional<std::string>> NonEmptyText(const std::string& name) const {
    std::optional<std::string> text = Text(name);
    if (text.has_value() && absl::StripAsciiWhitespace(*text).empty()) {
      return FlagError(name, "must not be empty");
    }
    return text;
  }

  absl::StatusOr<std::optional<double>> Number(const std::string& name) const {
    std::optional<std::string> text = Text(name);
    if (!text.has_value()) return std::optional<double>();
    double value = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*text), &value) || !std::isfinite(value)) {
      return BadValue(name, *text, "is not a number");
    }
    return std::optional<double>(value);
  }

  absl::StatusOr<std::optional<int64_t>> Integer(const std::string& name, int64_t min,
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

  absl::StatusOr<std::optional<absl::Duration>> Duration(const std::string& name) const {
    std::optional<std::string> text = Text(name);
    if (!text.has_value()) return std::optional<absl::Duration>();
    ASSIGN_OR_RETURN(absl::Duration d, ParseDurationFlag(name, *text));
    return std::optional<absl::Duration>(d);
  }

  absl::StatusOr<bool> Bool(const std::string& name) const {
    std::optional<std::string> text = Text(name);
    if (!text.has_value()) return false;
    bool value = false;
    if (!absl::SimpleAtob(*text, &value)) return BadValue(name, *text, "is not true or false");
    return value;
  }

 private:
  const GivenFlags& flags_;
};

void SetProtoDuration(absl::Duration d, google::protobuf::Duration* out) {
  absl::Duration remainder;
  const int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &remainder);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(remainder / absl::Nanoseconds(1)));
}

bool HasDuration(const google::protobuf::Duration& d) { return d.seconds() != 0 || d.nanos() != 0; }

absl::StatusOr<std::string> ReadFile(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FlagError(flag, absl::StrCat("cannot read '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return FlagError(flag, absl::StrCat("cannot read '", path, "'"));
  return text.str();
}

// Reads a message in protobuf's JSON mapping from the file a flag names.
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

// Maps "kserve_v2_rest" or "PROTOCOL_KSERVE_V2_REST" (any case) to the enum value.
absl::StatusOr<v1::Protocol> ParseProtocol(absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, "PROTOCOL_")) upper = absl::StrCat("PROTOCOL_", upper);
  v1::Protocol protocol = v1::PROTOCOL_UNSPECIFIED;
  if (!v1::Protocol_Parse(upper, &protocol) || protocol == v1::PROTOCOL_UNSPECIFIED) {
    return BadValue("protocol", text,
                    "is not one of kserve_v2_rest, kserve_v2_grpc, openai_completions, "
                    "openai_chat, http");
  }
  return protocol;
}

absl::StatusOr<v1::Schedule> ParseSchedule(absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, "SCHEDULE_")) upper = absl::StrCat("SCHEDULE_", upper);
  v1::Schedule schedule = v1::SCHEDULE_UNSPECIFIED;
  if (!v1::Schedule_Parse(upper, &schedule) || schedule == v1::SCHEDULE_UNSPECIFIED) {
    return BadValue("schedule", text, "is not one of constant, poisson");
  }
  return schedule;
}

absl::StatusOr<v1::TestState> ParseState(absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, "TEST_STATE_")) upper = absl::StrCat("TEST_STATE_", upper);
  v1::TestState state = v1::TEST_STATE_UNSPECIFIED;
  if (!v1::TestState_Parse(upper, &state) || state == v1::TEST_STATE_UNSPECIFIED) {
    return BadValue("state", text, "is not one of queued, running, succeeded, failed, cancelled");
  }
  return state;
}

// Splits "a, b,c" into trimmed entries; an empty entry is an error.
absl::StatusOr<std::vector<std::string>> SplitList(absl::string_view name, absl::string_view text) {
  std::vector<std::string> entries;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) return BadValue(name, text, "has an empty entry");
    entries.emplace_back(entry);
  }
  return entries;
}

absl::StatusOr<int64_t> ParseTestId(absl::string_view text) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ID: '", text, "' is not a test id (a positive integer)"));
  }
  return id;
}

// `what` names the missing argument and shows an example, e.g. "a test ID (vanguard get 42)".
absl::Status ExpectArgs(const CommandWords& command, size_t count, absl::string_view what = "") {
  if (command.args.size() < count) {
    return absl::InvalidArgumentError(absl::StrCat("'", command.name, "' needs ", what));
  }
  if (command.args.size() > count) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", command.name, "': unexpected argument '", command.args[count], "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckFlagsBelongTo(const CommandWords& command, const GivenFlags& flags) {
  const std::set<std::string>& allowed = CommandFlagNames(command.kind);
  for (const auto& [name, value] : flags) {
    if (GlobalFlagNames().contains(name) || allowed.contains(name)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(FlagDisplayName(name), " is not used by '", command.name, "'"));
  }
  return absl::OkStatus();
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
  ASSIGN_OR_RETURN(std::optional<std::string> tls_ca, flags.NonEmptyText("tls_ca"));
  if (tls_ca.has_value()) {
    std::ifstream in(*tls_ca, std::ios::binary);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in || pem.str().empty()) return BadValue("tls_ca", *tls_ca, "cannot be read");
    global.tls_root_certs = pem.str();
  }

  ASSIGN_OR_RETURN(std::optional<absl::Duration> timeout, flags.Duration("timeout"));
  if (timeout.has_value()) {
    if (*timeout <= absl::ZeroDuration()) {
      return BadValue("timeout", *flags.Text("timeout"), "must be positive");
    }
    global.rpc_timeout = *timeout;
  }
  if (std::optional<std::string> output = flags.Text("output"); output.has_value()) {
    const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(*output));
    if (lower == "table") {
      global.output = OutputFormat::kTable;
    } else if (lower == "json") {
      global.output = OutputFormat::kJson;
    } else {
      return BadValue("output", *output, "is not one of table, json");
    }
  }
  return global;
}

bool IsHttpProtocol(v1::Protocol protocol) {
  return protocol == v1::PROTOCOL_KSERVE_V2_REST || protocol == v1::PROTOCOL_OPENAI_COMPLETIONS ||
         protocol == v1::PROTOCOL_OPENAI_CHAT || protocol == v1::PROTOCOL_HTTP;
}

bool IsJsonProtocol(v1::Protocol protocol) {
  return protocol == v1::PROTOCOL_KSERVE_V2_REST || protocol == v1::PROTOCOL_OPENAI_COMPLETIONS ||
         protocol == v1::PROTOCOL_OPENAI_CHAT;
}

absl::StatusOr<v1::Model> ParseModel(const FlagSet& flags) {
  v1::Model model;
  if (std::optional<std::string> path = flags.Text("from_file"); path.has_value()) {
    RETURN_IF_ERROR(ReadJsonMessage("from_file", *path, &model));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> name, flags.NonEmptyText("name"));
  if (name.has_value()) model.set_name(*name);
  ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
  if (version.has_value()) model.set_version(*version);
  ASSIGN_OR_RETURN(std::optional<std::string> served_name, flags.NonEmptyText("served_name"));
  if (served_name.has_value()) model.set_served_name(*served_name);
  if (std::optional<std::string> framework = flags.Text("framework"); framework.has_value()) {
    model.set_framework(*framework);
  }
  if (std::optional<std::string> protocol = flags.Text("protocol"); protocol.has_value()) {
    ASSIGN_OR_RETURN(v1::Protocol parsed, ParseProtocol(*protocol));
    model.set_protocol(parsed);
  }
  if (model.protocol() == v1::PROTOCOL_UNSPECIFIED) model.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);

  if (std::optional<std::string> endpoints = flags.Text("endpoint"); endpoints.has_value()) {
    ASSIGN_OR_RETURN(std::vector<std::string> list, SplitList("endpoint", *endpoints));
    model.clear_endpoints();
    for (std::string& endpoint : list) model.add_endpoints(std::move(endpoint));
  }
  for (const std::string& endpoint : model.endpoints()) {
    if (absl::StrContains(endpoint, ' ')) {
      return BadValue("endpoint", endpoint, "must not contain spaces");
    }
    if (IsHttpProtocol(model.protocol()) && !absl::StartsWith(endpoint, "http://") &&
        !absl::StartsWith(endpoint, "https://")) {
      return BadValue("endpoint", endpoint,
                      "must start with http:// or https:// for an HTTP protocol");
    }
  }

  v1::Slo* slo = model.mutable_slo();
  ASSIGN_OR_RETURN(std::optional<double> p99_ms, flags.Number("p99_ms"));
  if (p99_ms.has_value()) {
    if (*p99_ms <= 0) return BadValue("p99_ms", *flags.Text("p99_ms"), "must be positive");
    SetProtoDuration(absl::Milliseconds(*p99_ms), slo->mutable_p99_latency());
  }
  ASSIGN_OR_RETURN(std::optional<double> p50_ms, flags.Number("p50_ms"));
  if (p50_ms.has_value()) {
    if (*p50_ms <= 0) return BadValue("p50_ms", *flags.Text("p50_ms"), "must be positive");
    if (p99_ms.has_value() && *p50_ms > *p99_ms) {
      return BadValue("p50_ms", *flags.Text("p50_ms"), "must not exceed --p99_ms");
    }
    SetProtoDuration(absl::Milliseconds(*p50_ms), slo->mutable_p50_latency());
  }
  ASSIGN_OR_RETURN(std::optional<double> max_error_rate, flags.Number("max_error_rate"));
  if (max_error_rate.has_value()) {
    if (*max_error_rate < 0 || *max_error_rate > 1) {
      return BadValue("max_error_rate", *flags.Text("max_error_rate"),
                      "must be a fraction in [0, 1], e.g. 0.01");
    }
    slo->set_max_error_rate(*max_error_rate);
  }
  ASSIGN_OR_RETURN(std::optional<double> min_ratio, flags.Number("min_achieved_ratio"));
  if (min_ratio.has_value()) {
    if (*min_ratio <= 0 || *min_ratio > 1) {
      return BadValue("min_achieved_ratio", *flags.Text("min_achieved_ratio"),
                      "must be a fraction in (0, 1], e.g. 0.99");
    }
    slo->set_min_achieved_ratio(*min_ratio);
  }
  for (const char* name : {"ttft_p99_ms", "inter_token_p99_ms"}) {
    ASSIGN_OR_RETURN(std::optional<double> ms, flags.Number(name));
    if (!ms.has_value()) continue;
    if (*ms <= 0) return BadValue(name, *flags.Text(name), "must be positive");
    SetProtoDuration(absl::Milliseconds(*ms), std::string_view(name) == "ttft_p99_ms"
                                                  ? slo->mutable_ttft_p99()
                                                  : slo->mutable_inter_token_p99());
  }
  ASSIGN_OR_RETURN(std::optional<double> gpu, flags.Number("max_gpu_utilization"));
  if (gpu.has_value()) {
    if (*gpu <= 0 || *gpu > 1) {
      return BadValue("max_gpu_utilization", *flags.Text("max_gpu_utilization"),
                      "must be a fraction in (0, 1], e.g. 0.9");
    }
    slo->set_max_gpu_utilization(*gpu);
  }
  ASSIGN_OR_RETURN(std::optional<double> queue_depth, flags.Number("max_queue_depth"));
  if (queue_depth.has_value()) {
    if (*queue_depth <= 0) {
      return BadValue("max_queue_depth", *flags.Text("max_queue_depth"), "must be positive");
    }
    slo->set_max_queue_depth(*queue_depth);
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> warmup, flags.Duration("warmup"));
  if (warmup.has_value()) SetProtoDuration(*warmup, model.mutable_default_warmup());

  v1::Hardware* hardware = model.mutable_hardware();
  if (std::optional<std::string> accelerator = flags.Text("accelerator")) {
    hardware->set_accelerator(*accelerator);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> count,
                   flags.Integer("accelerator_count", 0, std::numeric_limits<int32_t>::max()));
  if (count.has_value()) hardware->set_accelerator_count(static_cast<int32_t>(*count));
  if (std::optional<std::string> pool = flags.Text("pool")) hardware->set_pool(*pool);

  if (std::optional<std::string> tmpl = flags.Text("request_template"); tmpl.has_value()) {
    if (IsJsonProtocol(model.protocol()) && !nlohmann::json::accept(*tmpl)) {
      return FlagError(
          "request_template",
          absl::StrCat("is not valid JSON (the ",
                       absl::AsciiStrToLower(
                           v1::Protocol_Name(model.protocol()).substr(sizeof("PROTOCOL_") - 1)),
                       " protocol sends it as the request body)"));
    }
    model.set_request_template(*tmpl);
  }

  if (model.name().empty()) return FlagError("name", "is required (or give --from_file)");
  if (model.version().empty()) return FlagError("model_version", "is required (e.g. --version=v1)");
  if (model.endpoints().empty()) {
    return FlagError("endpoint", "is required: the predictor's base URL(s), comma-separated");
  }
  if (!HasDuration(model.slo().p99_latency())) {
    return FlagError("p99_ms", "is required: the SLO's p99 latency in milliseconds");
  }
  return model;
}

// --strategy=binary|adaptive search between --min_qps and --max_qps; ladder climbs from
// --min_qps (default 2) with --max_qps as the ceiling of its coarse ramp.
absl::Status ParseSearch(const FlagSet& flags, const std::string& strategy, v1::TestSpec* spec) {
  for (const char* sweep_only : {"rates", "steps", "stop_after_failures"}) {
    if (flags.Has(sweep_only)) {
      return FlagError(sweep_only, absl::StrCat("belongs to --strategy=sweep, not ", strategy));
    }
  }
  if (flags.Has("confirm_best") && strategy != "adaptive") {
    return FlagError("confirm_best",
                     absl::StrCat("belongs to --strategy=adaptive, not ", strategy));
  }
  const bool ladder = strategy == "ladder";
  if (!ladder) {
    for (const char* name : {"min_qps", "max_qps"}) {
      if (!flags.Has(name)) {
        return FlagError(name, absl::StrCat("is required with --strategy=", strategy));
      }
    }
  }
  ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
  ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
  if (min_qps.has_value() && *min_qps <= 0) {
    return BadValue("min_qps", *flags.Text("min_qps"), "must be positive");
  }
  if (max_qps.has_value() && *max_qps <= min_qps.value_or(0)) {
    return BadValue("max_qps", *flags.Text("max_qps"), "must be above --min_qps");
  }
  if (strategy == "binary") {
    spec->mutable_binary_search()->set_min_qps(*min_qps);
    spec->mutable_binary_search()->set_max_qps(*max_qps);
  } else if (strategy == "adaptive") {
    spec->mutable_adaptive()->set_min_qps(*min_qps);
    spec->mutable_adaptive()->set_max_qps(*max_qps);
    ASSIGN_OR_RETURN(bool confirm_best, flags.Bool("confirm_best"));
    spec->mutable_adaptive()->set_confirm_best(confirm_best);
  } else {
    v1::LadderStrategy* l = spec->mutable_ladder();
    if (min_qps.has_value()) l->set_start_qps(*min_qps);
    if (max_qps.has_value()) l->set_max_qps(*max_qps);
  }
  return absl::OkStatus();
}

absl::Status ParseSweep(const FlagSet& flags, v1::TestSpec* spec) {
  if (std::optional<std::string> strategy = flags.Text("strategy");
      strategy.has_value() && *strategy != "sweep") {
    if (*strategy != "binary" && *strategy != "adaptive" && *strategy != "ladder") {
      return BadValue("strategy", *strategy, "must be sweep, binary, adaptive or ladder");
    }
    return ParseSearch(flags, *strategy, spec);
  }
  if (flags.Has("confirm_best")) {
    return FlagError("confirm_best", "belongs to --strategy=adaptive, not sweep");
  }
  const bool has_rates = flags.Has("rates");
  const bool has_range = flags.Has("min_qps") || flags.Has("max_qps") || flags.Has("steps");
  if (has_rates && has_range) {
    return absl::InvalidArgumentError(
        "--rates cannot be combined with --min_qps/--max_qps/--steps; give one or the other");
  }
  if (has_rates) {
    const std::string text = *flags.Text("rates");
    ASSIGN_OR_RETURN(std::vector<std::string> entries, SplitList("rates", text));
    v1::SweepStrategy* sweep = spec->mutable_sweep();
    sweep->clear_rates_qps();
    sweep->clear_min_qps();
    sweep->clear_max_qps();
    sweep->clear_steps();
    for (const std::string& entry : entries) {
      double rate = 0;
      if (!absl::SimpleAtod(entry, &rate) || !std::isfinite(rate)) {
        return BadValue("rates", entry, "is not a number (rates are requests/s, e.g. 100,200)");
      }
      if (rate <= 0) return BadValue("rates", entry, "must be positive");
      sweep->add_rates_qps(rate);
    }
  }
  if (has_range) {
    for (const char* name : {"min_qps", "max_qps", "steps"}) {
      if (!flags.Has(name)) {
        return FlagError(name, "is required with --min_qps/--max_qps/--steps (give all three)");
      }
    }
    ASSIGN_OR_RETURN(std::optional<double> min_qps, flags.Number("min_qps"));
    ASSIGN_OR_RETURN(std::optional<double> max_qps, flags.Number("max_qps"));
    ASSIGN_OR_RETURN(std::optional<int64_t> steps, flags.Integer("steps", 1, 10000));
    if (*min_qps <= 0) return BadValue("min_qps", *flags.Text("min_qps"), "must be positive");
    if (*max_qps < *min_qps) {
      return BadValue("max_qps", *flags.Text("max_qps"), "must not be below --min_qps");
    }
    if (*max_qps > *min_qps && *steps < 2) {
      return BadValue("steps", *flags.Text("steps"),
                      "must be at least 2 when --max_qps exceeds --min_qps");
    }
    v1::SweepStrategy* sweep = spec->mutable_sweep();
    sweep->clear_rates_qps();
    sweep->set_min_qps(*min_qps);
    sweep->set_max_qps(*max_qps);
    sweep->set_steps(static_cast<int32_t>(*steps));
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> stop_after,
                   flags.Integer("stop_after_failures", 1, 1000));
  if (stop_after.has_value()) {
    spec->mutable_sweep()->set_stop_after_failures(static_cast<int32_t>(*stop_after));
  }
  if (spec->strategy_case() == v1::TestSpec::STRATEGY_NOT_SET) {
    return absl::InvalidArgumentError(
        "submit needs a sweep: --rates=R1,R2,... or --min_qps, --max_qps and --steps");
  }
  const v1::SweepStrategy& sweep = spec->sweep();
  if (spec->has_sweep() && sweep.rates_qps().empty() && sweep.steps() == 0) {
    return absl::InvalidArgumentError(
        "submit needs the sweep's rates: --rates=R1,R2,... or --min_qps, --max_qps and --steps");
  }
  return absl::OkStatus();
}

absl::StatusOr<SubmitOptions> ParseSubmit(const FlagSet& flags) {
  SubmitOptions options;
  v1::TestSpec& spec = options.spec;
  if (std::optional<std::string> path = flags.Text("spec_file"); path.has_value()) {
    RETURN_IF_ERROR(ReadJsonMessage("spec_file", *path, &spec));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> model, flags.NonEmptyText("model"));
  if (model.has_value()) spec.set_model(*model);
  ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
  if (version.has_value()) spec.set_model_version(*version);
  if (spec.model().empty()) return FlagError("model", "is required (the registered model name)");

  RETURN_IF_ERROR(ParseSweep(flags, &spec));

  ASSIGN_OR_RETURN(std::optional<absl::Duration> step_duration, flags.Duration("step_duration"));
  if (step_duration.has_value()) {
    if (*step_duration <= absl::ZeroDuration()) {
      return BadValue("step_duration", *flags.Text("step_duration"), "must be positive");
    }
    SetProtoDuration(*step_duration, spec.mutable_step_duration());
  } else if (!HasDuration(spec.step_duration())) {
    SetProtoDuration(kDefaultStepDuration, spec.mutable_step_duration());
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> step_warmup, flags.Duration("step_warmup"));
  if (step_warmup.has_value()) SetProtoDuration(*step_warmup, spec.mutable_step_warmup());
  ASSIGN_OR_RETURN(std::optional<absl::Duration> request_timeout,
                   flags.Duration("request_timeout"));
  if (request_timeout.has_value()) {
    if (*request_timeout <= absl::ZeroDuration()) {
      return BadValue("request_timeout", *flags.Text("request_timeout"), "must be positive");
    }
    SetProtoDuration(*request_timeout, spec.mutable_request_timeout());
  }
  if (std::optional<std::string> schedule = flags.Text("schedule"); schedule.has_value()) {
    ASSIGN_OR_RETURN(v1::Schedule parsed, ParseSchedule(*schedule));
    spec.set_schedule(parsed);
  }
  if (std::optional<std::string> trace = flags.Text("trace"); trace.has_value()) {
    if (trace->empty()) return BadValue("trace", *trace, "must name a trace file");
    spec.set_trace(*trace);
  }
  ASSIGN_OR_RETURN(std::optional<absl::Duration> horizon, flags.Duration("sustain_horizon"));
  if (horizon.has_value()) {
    if (*horizon <= absl::ZeroDuration()) {
      return BadValue("sustain_horizon", *flags.Text("sustain_horizon"), "must be positive");
    }
    SetProtoDuration(*horizon, spec.mutable_sustain_horizon());
  }
  // Named classes for the usual sources of tests; any integer works too.
  static const auto* const kPriorityClasses = new std::map<std::string, int32_t>{
      {"oncall", 200}, {"adhoc", 200}, {"ci", 100}, {"scheduled", 0}};
  std::optional<std::string> priority_text = flags.Text("priority");
  auto named = priority_text.has_value() ? kPriorityClasses->find(absl::AsciiStrToLower(
                                               absl::StripAsciiWhitespace(*priority_text)))
                                         : kPriorityClasses->end();
  if (named != kPriorityClasses->end()) {
    spec.set_priority(named->second);
  } else {
    absl::StatusOr<std::optional<int64_t>> priority = flags.Integer(
        "priority", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
    if (!priority.ok()) {
      return BadValue("priority", *priority_text,
                      "is not an integer or a class (oncall/adhoc 200, ci 100, scheduled 0)");
    }
    if (priority->has_value()) spec.set_priority(static_cast<int32_t>(**priority));
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> max_attempts, flags.Integer("max_attempts", 1, 100));
  if (max_attempts.has_value()) spec.set_max_attempts(static_cast<int32_t>(*max_attempts));

  ASSIGN_OR_RETURN(std::optional<std::string> request_id, flags.NonEmptyText("request_id"));
  if (request_id.has_value()) options.request_id = *request_id;

  ASSIGN_OR_RETURN(bool wait, flags.Bool("wait"));
  ASSIGN_OR_RETURN(bool watch, flags.Bool("watch"));
  options.follow = watch ? FollowMode::kStream : wait ? FollowMode::kPoll : FollowMode::kNone;
  return options;
}

absl::StatusOr<int32_t> ParseLimit(const FlagSet& flags) {
  ASSIGN_OR_RETURN(std::optional<int64_t> limit, flags.Integer("limit", 1, kMaxListLimit));
  return limit.has_value() ? static_cast<int32_t>(*limit) : 0;
}

struct CommandSpelling {
  std::vector<absl::string_view> words;
  CommandKind kind;
};

const std::vector<CommandSpelling>& Commands() {
  static const auto* commands = new std::vector<CommandSpelling>{
      {{"models", "register"}, CommandKind::kModelsRegister},
      {{"models", "get"}, CommandKind::kModelsGet},
      {{"models", "list"}, CommandKind::kModelsList},
      {{"models", "deprecate"}, CommandKind::kModelsDeprecate},
      {{"tokens", "create"}, CommandKind::kTokensCreate},
      {{"tokens", "revoke"}, CommandKind::kTokensRevoke},
      {{"tokens", "list"}, CommandKind::kTokensList},
      {{"submit"}, CommandKind::kSubmit},
      {{"get"}, CommandKind::kGet},
      {{"list"}, CommandKind::kList},
      {{"cancel"}, CommandKind::kCancel},
      {{"watch"}, CommandKind::kWatch},
      {{"help"}, CommandKind::kHelp},
  };
  return *commands;
}

}  // namespace

std::string FlagDisplayName(absl::string_view name) {
  if (name == "model_version") return "--version";
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
  for (const CommandSpelling& spelling : Commands()) {
    if (words.size() < spelling.words.size()) continue;
    if (!std::equal(spelling.words.begin(), spelling.words.end(), words.begin())) continue;
    CommandWords command;
    command.kind = spelling.kind;
    command.name = absl::StrJoin(spelling.words, " ");
    command.args.assign(words.begin() + spelling.words.size(), words.end());
    return command;
  }
  if (words[0] == "models") {
    if (words.size() == 1) {
      return absl::InvalidArgumentError(
          "'models' needs a subcommand: register, get, list or deprecate");
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown command 'models ", words[1],
                                                   "' (use register, get, list or deprecate)"));
  }
  if (words[0] == "tokens") {
    if (words.size() == 1) {
      return absl::InvalidArgumentError("'tokens' needs a subcommand: create, revoke or list");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command 'tokens ", words[1], "' (use create, revoke or list)"));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", words[0], "'"));
}

absl::StatusOr<ParsedCommand> ParseCommand(const CommandWords& command, const GivenFlags& given,
                                           const Environment& env) {
  RETURN_IF_ERROR(CheckFlagsBelongTo(command, given));
  const FlagSet flags(given);
  ParsedCommand parsed;
  parsed.kind = command.kind;
  ASSIGN_OR_RETURN(parsed.global, ParseGlobalOptions(flags, env));
  switch (command.kind) {
    case CommandKind::kHelp:
      break;
    case CommandKind::kModelsRegister: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      ASSIGN_OR_RETURN(parsed.model, ParseModel(flags));
      break;
    }
    case CommandKind::kModelsGet: {
      RETURN_IF_ERROR(ExpectArgs(command, 1, "a model NAME (vanguard models get resnet50)"));
      parsed.get_model.set_name(command.args[0]);
      ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
      if (version.has_value()) parsed.get_model.set_version(*version);
      break;
    }
    case CommandKind::kModelsList: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      if (std::optional<std::string> name = flags.Text("name")) {
        parsed.list_models.set_name(*name);
      }
      ASSIGN_OR_RETURN(int32_t limit, ParseLimit(flags));
      parsed.list_models.set_page_size(limit);
      break;
    }
    case CommandKind::kSubmit: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      ASSIGN_OR_RETURN(parsed.submit, ParseSubmit(flags));
      break;
    }
    case CommandKind::kGet:
    case CommandKind::kCancel:
    case CommandKind::kWatch: {
      RETURN_IF_ERROR(
          ExpectArgs(command, 1, absl::StrCat("a test ID (vanguard ", command.name, " 42)")));
      ASSIGN_OR_RETURN(parsed.test_id, ParseTestId(command.args[0]));
      break;
    }
    case CommandKind::kModelsDeprecate: {
      RETURN_IF_ERROR(
          ExpectArgs(command, 1, "a model NAME (vanguard models deprecate resnet50 --version=v1)"));
      parsed.deprecate_model.set_name(command.args[0]);
      ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
      if (!version.has_value()) return FlagError("model_version", "is required");
      parsed.deprecate_model.set_version(*version);
      break;
    }
    case CommandKind::kTokensCreate: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      ASSIGN_OR_RETURN(std::optional<std::string> name, flags.NonEmptyText("name"));
      if (!name.has_value()) return FlagError("name", "is required");
      parsed.create_token.set_name(*name);
      ASSIGN_OR_RETURN(std::optional<std::string> role, flags.NonEmptyText("role"));
      if (!role.has_value()) {
        return FlagError("role", "is required (reader, submitter, worker or admin)");
      }
      const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(*role));
      v1::Role parsed_role = v1::ROLE_UNSPECIFIED;
      if (lower == "reader") parsed_role = v1::ROLE_READER;
      if (lower == "submitter") parsed_role = v1::ROLE_SUBMITTER;
      if (lower == "worker") parsed_role = v1::ROLE_WORKER;
      if (lower == "admin") parsed_role = v1::ROLE_ADMIN;
      if (parsed_role == v1::ROLE_UNSPECIFIED) {
        return BadValue("role", *role, "is not a role (reader, submitter, worker or admin)");
      }
      parsed.create_token.set_role(parsed_role);
      break;
    }
    case CommandKind::kTokensRevoke: {
      RETURN_IF_ERROR(ExpectArgs(command, 1, "a token NAME (vanguard tokens revoke ci)"));
      parsed.revoke_token.set_name(command.args[0]);
      break;
    }
    case CommandKind::kTokensList: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      if (std::optional<std::string> all = flags.Text("all")) {
        parsed.list_tokens.set_include_revoked(*all == "true");
      }
      break;
    }
    case CommandKind::kList: {
      RETURN_IF_ERROR(ExpectArgs(command, 0));
      if (std::optional<std::string> state = flags.Text("state")) {
        ASSIGN_OR_RETURN(v1::TestState parsed_state, ParseState(*state));
        parsed.list_tests.set_state(parsed_state);
      }
      if (std::optional<std::string> model = flags.Text("model")) {
        parsed.list_tests.set_model(*model);
      }
      ASSIGN_OR_RETURN(int32_t limit, ParseLimit(flags));
      parsed.list_tests.set_page_size(limit == 0 ? 50 : limit);
      break;
    }
  }
  return parsed;
}

std::string UsageText() {
  return R"(vanguard: register models and run capacity tests on a Vanguard orchestrator.

Usage: vanguard COMMAND [ARGS] [--flag=value ...]

Commands:
  models register --name=N --version=V --endpoint=URL[,URL...] --p99_ms=MS
                  [--protocol=kserve_v2_rest|kserve_v2_grpc|openai_completions|openai_chat|http]
                  [--served_name=X] [--framework=F] [--p50_ms=MS] [--max_error_rate=0.01]
                  [--min_achieved_ratio=0.99] [--ttft_p99_ms=MS] [--inter_token_p99_ms=MS]
                  [--max_gpu_utilization=0.9] [--max_queue_depth=N] [--warmup=5s] [--accelerator=A]
                  [--accelerator_count=N] [--pool=P] [--request_template='{...}']
                  [--from_file=model.json]   (a vanguard.v1.Model in protobuf JSON;
                                              flags override its fields)
      Register a model version, where it is served and the SLO it must hold.
  models get NAME [--version=V]
      Show a model version (default: the most recently registered one).
  models list [--name=N] [--limit=N]
      List registered model versions.
  submit --model=N [--version=V] (--rates=R1,R2,... | --min_qps=A --max_qps=B --steps=K |
         --strategy=binary|adaptive --min_qps=A --max_qps=B |
         --strategy=ladder [--max_qps=B])
         [--stop_after_failures=1] [--step_duration=10s] [--step_warmup=2s]
         [--request_timeout=10s] [--schedule=constant|poisson] [--trace=FILE]
         [--sustain_horizon=5m] [--priority=0|oncall|ci|scheduled]
         [--max_attempts=3] [--request_id=KEY] [--spec_file=test.json] [--wait | --watch]
      Queue a multi-rate sweep. --wait polls until the test ends (progress on stderr, the
      final test on stdout); --watch streams every update to stdout instead.
  get ID
      Show a test: header, every step, and the result.
  list [--state=queued|running|succeeded|failed|cancelled] [--model=N] [--limit=50]
      List tests, newest first.
  cancel ID
      Cancel a queued or running test.
  watch ID
      Stream a test's updates until it ends (with --output=json: one JSON object per line).
  models deprecate NAME --version=V
      Deprecate a model version: tests that name no version no longer pick it.
  tokens create --name=N --role=reader|submitter|worker|admin      (admin)
      Create a bearer token. Prints the secret alone on stdout (shown only this once;
      with --output=json the whole response); pass it to clients as $VANGUARD_TOKEN.
  tokens revoke NAME                                               (admin)
      Revoke a token; the orchestrators refuse it within seconds.
  tokens list [--all]                                              (admin)
      List tokens (never their secrets); --all includes revoked ones.
  help
      Show this message.

Global flags:
  --orchestrator=HOST:PORT  default $VANGUARD_ORCHESTRATOR, else 127.0.0.1:50051
  --timeout=10s             deadline of each RPC (watch streams have none)
  --output=table|json       json: protobuf's JSON mapping with the .proto's field names
  --tls_ca=PEM              talk TLS, trusting these CA certificates (orchestrator --tls_cert)
  $VANGUARD_TOKEN, when set, is sent as "authorization: Bearer <token>".

Exit codes: 0 ok; 1 RPC error; 2 usage error; 3 the followed test ended FAILED or CANCELLED.
)";
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
    if (arg.size() < 2 || arg[0] != '-') {
      prepared.argv.push_back(arg);
      continue;
    }
    absl::string_view body = arg;
    if (!absl::ConsumePrefix(&body, "--")) absl::ConsumePrefix(&body, "-");
    const size_t equals = body.find('=');
    const absl::string_view name = body.substr(0, equals);
    const bool has_value = equals != absl::string_view::npos;
    const absl::string_view value = has_value ? body.substr(equals + 1) : absl::string_view();

    if (name == "help" || name == "h") {
      prepared.help_requested = true;
      continue;
    }
    if (name == "version") {
      if (has_value) {
        prepared.argv.push_back(absl::StrCat("--model_version=", value));
        prepared.given_names.insert("model_version");
      } else if (i + 1 < argv.size()) {
        prepared.argv.push_back(absl::StrCat("--model_version=", argv[++i]));
        prepared.given_names.insert("model_version");
      } else {
        return absl::InvalidArgumentError("--version needs a value (the model version)");
      }
      continue;
    }
    FlagKind kind = kind_of(name);
    absl::string_view given_name = name;
    if (kind == FlagKind::kUnknown && absl::StartsWith(name, "no") && !has_value &&
        kind_of(name.substr(2)) == FlagKind::kBool) {
      kind = FlagKind::kBool;  // --nowait
      given_name = name.substr(2);
    }
    if (kind != FlagKind::kUnknown) prepared.given_names.insert(std::string(given_name));
    switch (kind) {
      case FlagKind::kUnknown:
        return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
      case FlagKind::kBool: {
        bool ignored = false;
        if (has_value && !absl::SimpleAtob(value, &ignored)) {
          return absl::InvalidArgumentError(
              absl::StrCat("--", name, ": '", value, "' is not true or false"));
        }
        prepared.argv.push_back(arg);
        break;
      }
      case FlagKind::kValued:
        prepared.argv.push_back(arg);
        if (!has_value) {
          if (i + 1 >= argv.size()) {
            return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
          }
          prepared.argv.push_back(argv[++i]);
        }
        break;
    }
  }
  return prepared;
}

}  // namespace vanguard::cli
