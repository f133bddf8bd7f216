// The `vanguard` command table; see command_table.h. Commands with their own files (submit,
// models register, compare, report, the planning commands, completion) contribute their parser and
// runner from there; the one-RPC commands are parsed here.
#include "orchestrator/cli/command_table.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/compare_command.h"
#include "orchestrator/cli/completion.h"
#include "orchestrator/cli/model_flags.h"
#include "orchestrator/cli/planning_commands.h"
#include "orchestrator/cli/price_commands.h"
#include "orchestrator/cli/report_command.h"
#include "orchestrator/cli/schedule_commands.h"
#include "orchestrator/cli/submit_flags.h"
#include "orchestrator/cli/team_commands.h"
#include "orchestrator/cli/usage.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {
namespace {

constexpr int kMaxListLimit = 1000;

absl::StatusOr<int32_t> ParseLimit(const FlagSet& flags) {
  ASSIGN_OR_RETURN(std::optional<int64_t> limit, flags.Integer("limit", 1, kMaxListLimit));
  return limit.has_value() ? static_cast<int32_t>(*limit) : 0;
}

absl::StatusOr<v1::TestState> ParseState(absl::string_view text) {
  return ParseEnumFlag("state", text, "TEST_STATE_", &v1::TestState_Parse,
                       "is not one of queued, running, succeeded, failed, cancelled");
}

absl::StatusOr<v1::Role> ParseRole(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "reader") return v1::ROLE_READER;
  if (lower == "submitter") return v1::ROLE_SUBMITTER;
  if (lower == "worker") return v1::ROLE_WORKER;
  if (lower == "admin") return v1::ROLE_ADMIN;
  return BadValue("role", text, "is not a role (reader, submitter, worker or admin)");
}

// get, cancel and watch: one test ID.
absl::StatusOr<int64_t> ParseTestIdArg(const CommandInput& in) {
  RETURN_IF_ERROR(
      ExpectArgs(in.command, 1, absl::StrCat("a test ID (vanguard ", in.command.name, " 42)")));
  return ParseTestId(in.command.args[0]);
}

absl::StatusOr<v1::GetModelRequest> ParseModelsGet(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 1, "a model NAME (vanguard models get resnet50)"));
  v1::GetModelRequest request;
  request.set_name(in.command.args[0]);
  ASSIGN_OR_RETURN(std::optional<std::string> version, in.flags.NonEmptyText("model_version"));
  if (version.has_value()) request.set_version(*version);
  return request;
}

absl::StatusOr<v1::ListModelsRequest> ParseModelsList(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::ListModelsRequest request;
  if (std::optional<std::string> name = in.flags.Text("name")) request.set_name(*name);
  ASSIGN_OR_RETURN(int32_t limit, ParseLimit(in.flags));
  request.set_page_size(limit);
  return request;
}

absl::StatusOr<v1::DeprecateModelRequest> ParseModelsDeprecate(const CommandInput& in) {
  RETURN_IF_ERROR(
      ExpectArgs(in.command, 1, "a model NAME (vanguard models deprecate resnet50 --version=v1)"));
  v1::DeprecateModelRequest request;
  request.set_name(in.command.args[0]);
  ASSIGN_OR_RETURN(std::optional<std::string> version, in.flags.NonEmptyText("model_version"));
  request.set_version(*version);  // a required flag: ParseCommand checked it is there
  return request;
}

absl::StatusOr<v1::CreateTokenRequest> ParseTokensCreate(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::CreateTokenRequest request;
  ASSIGN_OR_RETURN(std::optional<std::string> name, in.flags.NonEmptyText("name"));
  request.set_name(*name);
  ASSIGN_OR_RETURN(std::optional<std::string> role, in.flags.NonEmptyText("role"));
  ASSIGN_OR_RETURN(v1::Role parsed_role, ParseRole(*role));
  request.set_role(parsed_role);
  ASSIGN_OR_RETURN(std::optional<std::string> team, in.flags.NonEmptyText("team"));
  if (team.has_value()) request.set_team(*team);
  return request;
}

absl::StatusOr<v1::ListTestsRequest> ParseList(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::ListTestsRequest request;
  if (std::optional<std::string> state = in.flags.Text("state")) {
    ASSIGN_OR_RETURN(v1::TestState parsed_state, ParseState(*state));
    request.set_state(parsed_state);
  }
  if (std::optional<std::string> model = in.flags.Text("model")) request.set_model(*model);
  ASSIGN_OR_RETURN(int32_t limit, ParseLimit(in.flags));
  request.set_page_size(limit == 0 ? 50 : limit);
  return request;
}

absl::StatusOr<SubmitOptions> ParseSubmit(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  ASSIGN_OR_RETURN(SubmitOptions options, ParseSubmitFlags(in.flags));
  if (options.follow == FollowMode::kStream && in.global.output == OutputFormat::kCsv) {
    return FlagError("output", "csv cannot stream updates: use --wait with --output=csv");
  }
  return options;
}

// help [COMMAND...]: nullptr for the whole usage.
absl::StatusOr<const CommandSpec*> ParseHelp(const CommandInput& in) {
  if (in.command.args.empty()) return nullptr;
  ASSIGN_OR_RETURN(CommandWords topic, IdentifyCommand(in.command.args));
  if (!topic.args.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'help': unexpected argument '", topic.args[0], "'"));
  }
  return topic.spec;
}

const std::vector<std::string> kStates = {"queued", "running", "succeeded", "failed", "cancelled"};
const std::vector<std::string> kProtocols = {"kserve_v2_rest", "kserve_v2_grpc",
                                             "openai_completions", "openai_chat", "http"};

FlagSpec VersionFlag(std::string help, bool required = false) {
  return {.name = "model_version", .value = "V", .help = std::move(help), .required = required};
}

FlagSpec LimitFlag(std::string help) {
  return {.name = "limit", .value = "N", .help = std::move(help)};
}

CommandSpec ModelsRegister() {
  return Command<v1::Model>(
      {.words = {"models", "register"},
       .summary = "Register a model version, where it is served and the SLO it must hold.",
       .details = "--name, --version, --endpoint and --p99_ms are required unless --from_file "
                  "gives them.",
       .flags = {{.name = "name", .value = "N", .help = "The model's registry name."},
                 VersionFlag("The version to register, e.g. v3."),
                 {.name = "endpoint",
                  .value = "URL[,URL...]",
                  .help = "Predictor base URL(s), comma-separated, e.g. http://127.0.0.1:8000."},
                 {.name = "p99_ms",
                  .value = "MS",
                  .help = "SLO p99 latency in milliseconds, e.g. 100."},
                 {.name = "protocol",
                  .value = "PROTOCOL",
                  .help = "How requests are sent (default kserve_v2_rest).",
                  .choices = kProtocols},
                 {.name = "served_name",
                  .value = "X",
                  .help = "The name the predictor knows the model by (default: --name)."},
                 {.name = "framework", .value = "F", .help = "e.g. onnx, pytorch, tensorrt."},
                 {.name = "p50_ms", .value = "MS", .help = "SLO p50 latency in milliseconds."},
                 {.name = "max_error_rate",
                  .value = "0.01",
                  .help = "Highest tolerated fraction of failed requests."},
                 {.name = "min_achieved_ratio",
                  .value = "0.99",
                  .help = "Lowest tolerated achieved/offered rate ratio (default 0.99)."},
                 {.name = "ttft_p99_ms",
                  .value = "MS",
                  .help = "SLO p99 time to first token in milliseconds (streaming models)."},
                 {.name = "inter_token_p99_ms",
                  .value = "MS",
                  .help = "SLO p99 inter-token latency in milliseconds (streaming models)."},
                 {.name = "max_gpu_utilization",
                  .value = "0.9",
                  .help = "Highest tolerated predictor GPU utilization, a fraction."},
                 {.name = "max_queue_depth",
                  .value = "N",
                  .help = "Highest tolerated predictor queue depth (requests waiting)."},
                 {.name = "warmup",
                  .value = "5s",
                  .help = "Warmup excluded from judgement at the start of each step "
                          "(default 2s; 0s judges a step from its first request)."},
                 {.name = "accelerator",
                  .value = "A",
                  .help = "Accelerator type, e.g. nvidia-l40, cpu."},
                 {.name = "accelerator_count", .value = "N", .help = "Accelerators per replica."},
                 {.name = "pool", .value = "P", .help = "Node pool the replicas run in."},
                 {.name = "request_template",
                  .value = "'{...}'",
                  .help = "Request body sent when the test has no recorded trace (JSON for JSON "
                          "protocols)."},
                 {.name = "from_file",
                  .value = "model.json",
                  .help = "Read a vanguard.v1.Model in protobuf JSON; flags override its fields.",
                  .file = true}},
       .outputs = kEveryOutput,
       .parse = [](const CommandInput& in) -> absl::StatusOr<v1::Model> {
         RETURN_IF_ERROR(ExpectArgs(in.command, 0));
         return ParseModelFlags(in.flags);
       },
       .run = [](CommandRunner& r, const v1::Model& m) { return r.RegisterModel(m); }});
}

std::vector<CommandSpec> ModelCommands() {
  return {
      ModelsRegister(),
      Command<v1::GetModelRequest>(
          {.words = {"models", "get"},
           .args = "NAME",
           .summary = "Show a model version (default: the most recently registered one).",
           .flags = {VersionFlag("The version to show (default: the latest).")},
           .outputs = kEveryOutput,
           .parse = ParseModelsGet,
           .run = [](CommandRunner& r, const v1::GetModelRequest& q) { return r.GetModel(q); }}),
      Command<v1::ListModelsRequest>(
          {.words = {"models", "list"},
           .summary = "List registered model versions.",
           .flags = {{.name = "name", .value = "N", .help = "Only versions of this model."},
                     LimitFlag("At most this many rows.")},
           .outputs = kEveryOutput,
           .parse = ParseModelsList,
           .run = [](CommandRunner& r,
                     const v1::ListModelsRequest& q) { return r.ListModels(q); }}),
      Command<v1::DeprecateModelRequest>(
          {.words = {"models", "deprecate"},
           .args = "NAME",
           .summary = "Deprecate a model version: tests that name no version no longer pick it.",
           .flags = {VersionFlag("The version to deprecate.", /*required=*/true)},
           .parse = ParseModelsDeprecate,
           .run = [](CommandRunner& r,
                     const v1::DeprecateModelRequest& q) { return r.DeprecateModel(q); }}),
  };
}

// --strategy: help and choices from the one strategy table (submit_flags.h).
FlagSpec StrategyFlag() {
  FlagSpec flag{.name = "strategy", .value = "STRATEGY"};
  for (const SubmitStrategy& s : SubmitStrategies()) {
    absl::StrAppend(&flag.help, flag.help.empty() ? "" : "; ", s.name, " (", s.help, ")");
    flag.choices.push_back(s.name);
  }
  absl::StrAppend(&flag.help, ".");
  return flag;
}

std::vector<FlagSpec> SubmitFlags() {
  return {
      {.name = "model", .value = "N", .help = "The registered model to test (required)."},
      VersionFlag("The model version (default: the latest registered)."),
      {.name = "rates", .value = "R1,R2,...", .help = "Sweep: offered rates in requests/s."},
      {.name = "min_qps",
       .value = "QPS",
       .help = "Lowest rate of an evenly spaced sweep, or of a search's range."},
      {.name = "max_qps",
       .value = "QPS",
       .help = "Highest rate of an evenly spaced sweep, or of a search's range."},
      {.name = "steps",
       .value = "K",
       .help = "Sweep: number of rates from --min_qps to --max_qps."},
      StrategyFlag(),
      {.name = "stop_after_failures",
       .value = "1",
       .help = "Sweep: stop after this many consecutive failed steps."},
      {.name = "step_duration", .value = "10s", .help = "Measured duration of each step."},
      {.name = "step_warmup",
       .value = "2s",
       .help = "Warmup at the start of each step (default: the model's warmup)."},
      {.name = "request_timeout",
       .value = "10s",
       .help = "A request still open after this counts as failed; must exceed the model's "
               "longest SLO latency limit (default: 10s, or 1.25x that limit when longer)."},
      {.name = "schedule",
       .value = "SCHEDULE",
       .help = "Arrivals: poisson (default: what the estimate claims) or constant (queues "
               "less than real traffic, so it reads a queueing model higher).",
       .choices = {"constant", "poisson"}},
      {.name = "endpoint_policy",
       .value = "POLICY",
       .help = "How each step's requests are spread over the model's endpoints (replicas): "
               "round_robin (default for several), random (seeded by the step), p2c (fewer in "
               "flight of two drawn) or single (all to the first endpoint, e.g. a router).",
       .choices = {"round_robin", "random", "p2c", "single"}},
      {.name = "trace",
       .value = "FILE",
       .help = "A recorded trace (a path on the replayer's host) to replay instead of the "
               "model's request template."},
      {.name = "sustain_horizon",
       .value = "5m",
       .help = "How long the estimate must hold; the estimate is held long enough to back it."},
      {.name = "priority",
       .value = "PRIORITY",
       .help = "Higher runs first (default 0): an integer or oncall/adhoc (200), ci (100), "
               "scheduled (0).",
       .choices = {"oncall", "adhoc", "ci", "scheduled"}},
      {.name = "max_attempts",
       .value = "3",
       .help = "Attempts before the test fails when workers are lost."},
      {.name = "replayers",
       .value = "K",
       .help = "Split each step over K replayers of the worker's pool (at most its size; "
               "default: chosen from the rate and each replayer's measured headroom)."},
      {.name = "request_id",
       .value = "KEY",
       .help = "Idempotency key: submitting again with the same key returns the same test."},
      {.name = "spec_file",
       .value = "test.json",
       .help = "Read a vanguard.v1.TestSpec in protobuf JSON; flags override its fields.",
       .file = true},
      {.name = "remove_url",
       .value = "URL",
       .help = "Replica loss: POSTed by the worker to take a replica away mid-hold (e.g. the "
               "simulator's http://host:port/admin/down?seconds=30); the worker's "
               "--allowed_targets must allow it."},
      {.name = "restore_url",
       .value = "URL",
       .help = "Replica loss: POSTed after each loss to bring the replica back (default: none, "
               "the fleet heals itself before the next trial)."},
      {.name = "removed_endpoint",
       .value = "URL",
       .help = "Replica loss: which of the model's endpoints --remove_url takes away (default: "
               "the last)."},
      {.name = "after_loss",
       .value = "20s",
       .help = "Replica loss: how long the survivors are measured after the loss."},
      {.name = "max_recovery",
       .value = "5s",
       .help = "Replica loss: the longest recovery (loss to SLO met again) that still holds "
               "(default: a quarter of --after_loss). Version transition: the longest recovery "
               "of one restart (default: half of --per_replica)."},
      {.name = "restart_url",
       .value = "URL,URL",
       .help = "Version transition: one URL per endpoint of the model, comma-separated in its "
               "endpoint order, POSTed by the worker to switch that replica to the new version "
               "(e.g. the simulator's http://host:port/admin/restart?warmup_s=5&factor=4); the "
               "worker's --allowed_targets must allow them."},
      {.name = "per_replica",
       .value = "10s",
       .help = "Version transition: how long the fleet is measured after each replica's "
               "restart."},
      {.name = "confirm_best",
       .help = "Adaptive: accepted for old scripts and ignored (every adaptive search now holds "
               "its estimate, see --sustain_horizon)."},
      {.name = "wait",
       .help = "Poll until the test ends, progress on stderr, then print it; exit 0 if it "
               "SUCCEEDED, 3 if it FAILED or was CANCELLED."},
      {.name = "watch", .help = "Like --wait, but stream every update to stdout (WatchTest)."},
      {.name = "fail_below",
       .value = "QPS",
       .help = "CI gate (with --wait or --watch): exit 4 when the max sustainable rate is below "
               "QPS, or only known to be at least a lower rate, or the test did not succeed. "
               "One line on stderr says why it passed or failed."},
      {.name = "fail_if_regressed",
       .value = "5%",
       .help = "CI gate (with --wait or --watch): exit 4 when the capacity is lower than the "
               "latest earlier succeeded test of the same model version (else of the same "
               "model) by more than this percentage and beyond both tests' confidence "
               "intervals, or the test did not succeed."},
  };
}

std::vector<CommandSpec> TestCommands() {
  return {
      Command<SubmitOptions>(
          {.words = {"submit"},
           .summary = "Queue a capacity test of a model version.",
           .details = "The search is a sweep (--rates, or --min_qps --max_qps --steps) or "
                      "--strategy=binary|adaptive with --min_qps and --max_qps, or "
                      "--strategy=ladder [--max_qps], or --strategy=replica_loss with "
                      "--min_qps, --max_qps and --remove_url, or "
                      "--strategy=version_transition with --min_qps, --max_qps and "
                      "--restart_url (both for a model with 2+ endpoints).",
           .flags = SubmitFlags(),
           .outputs = kEveryOutput,
           .parse = ParseSubmit,
           .run = [](CommandRunner& r, const SubmitOptions& o) { return r.Submit(o); }}),
      Command<int64_t>({.words = {"get"},
                        .args = "ID",
                        .summary = "Show a test: header, every step, and the result.",
                        .outputs = kEveryOutput,
                        .parse = ParseTestIdArg,
                        .run = [](CommandRunner& r, const int64_t& id) { return r.GetTest(id); }}),
      Command<v1::ListTestsRequest>(
          {.words = {"list"},
           .summary = "List tests, newest first.",
           .flags = {{.name = "state",
                      .value = "STATE",
                      .help = "Only tests in this state.",
                      .choices = kStates},
                     {.name = "model", .value = "N", .help = "Only tests of this model."},
                     LimitFlag("At most this many rows (default 50).")},
           .outputs = kEveryOutput,
           .parse = ParseList,
           .run = [](CommandRunner& r, const v1::ListTestsRequest& q) { return r.ListTests(q); }}),
      Command<int64_t>(
          {.words = {"cancel"},
           .args = "ID",
           .summary = "Cancel a queued or running test.",
           .outputs = kEveryOutput,
           .parse = ParseTestIdArg,
           .run = [](CommandRunner& r, const int64_t& id) { return r.CancelTest(id); }}),
      Command<int64_t>(
          {.words = {"watch"},
           .args = "ID",
           .summary = "Stream a test's updates until it ends (json: one object per line; yaml: "
                      "one document per update).",
           .parse = ParseTestIdArg,
           .run = [](CommandRunner& r, const int64_t& id) { return r.WatchTest(id); }}),
      CompareCommand(),
      ReportCommand(),
  };
}

std::vector<CommandSpec> TokenCommands() {
  return {
      Command<v1::CreateTokenRequest>(
          {.words = {"tokens", "create"},
           .summary = "Create a bearer token (admin). Prints the secret alone on stdout, shown "
                      "only this once (json/yaml: the whole response).",
           .flags = {{.name = "name", .value = "N", .help = "The token's name.", .required = true},
                     {.name = "role",
                      .value = "ROLE",
                      .help = "reader (Get/List/Watch), submitter (+ submit, cancel, register), "
                              "worker (the worker protocol) or admin (everything, tokens).",
                      .required = true,
                      .choices = {"reader", "submitter", "worker", "admin"}},
                     {.name = "team",
                      .value = "T",
                      .help = "The team it acts for (default \"default\"); a submitter acts on "
                              "its team's models and tests only, an admin on every team's."}},
           .parse = ParseTokensCreate,
           .run = [](CommandRunner& r,
                     const v1::CreateTokenRequest& q) { return r.CreateToken(q); }}),
      Command<v1::RevokeTokenRequest>(
          {.words = {"tokens", "revoke"},
           .args = "NAME",
           .summary = "Revoke a token (admin); the orchestrators refuse it within seconds.",
           .parse = [](const CommandInput& in) -> absl::StatusOr<v1::RevokeTokenRequest> {
             RETURN_IF_ERROR(ExpectArgs(in.command, 1, "a token NAME (vanguard tokens revoke ci)"));
             v1::RevokeTokenRequest request;
             request.set_name(in.command.args[0]);
             return request;
           },
           .run = [](CommandRunner& r,
                     const v1::RevokeTokenRequest& q) { return r.RevokeToken(q); }}),
      Command<v1::ListTokensRequest>(
          {.words = {"tokens", "list"},
           .summary = "List tokens, never their secrets (admin).",
           .flags = {{.name = "all", .help = "Include revoked tokens."}},
           .outputs = kEveryOutput,
           .parse = [](const CommandInput& in) -> absl::StatusOr<v1::ListTokensRequest> {
             RETURN_IF_ERROR(ExpectArgs(in.command, 0));
             v1::ListTokensRequest request;
             ASSIGN_OR_RETURN(bool all, in.flags.Bool("all"));
             request.set_include_revoked(all);
             return request;
           },
           .run = [](CommandRunner& r,
                     const v1::ListTokensRequest& q) { return r.ListTokens(q); }}),
  };
}

std::vector<CommandSpec> ToolCommands() {
  return {
      CompletionCommand(),
      Command<const CommandSpec*>({.words = {"help"},
                                   .args = "[COMMAND]",
                                   .summary = "Show this message, or a command's flags.",
                                   .outputs = kEveryOutput,
                                   .parse = ParseHelp,
                                   .run_offline =
                                       [](std::ostream& out, const CommandSpec* const& topic) {
                                         out << (topic == nullptr ? UsageText()
                                                                  : CommandHelp(*topic));
                                         return kExitOk;
                                       }}),
  };
}

std::vector<CommandSpec> BuildTable() {
  std::vector<CommandSpec> table;
  for (auto* group : {&ModelCommands, &TestCommands, &PlanningCommands, &TokenCommands,
                      &PriceCommands, &TeamCommands, &ScheduleCommands, &ToolCommands}) {
    for (CommandSpec& spec : (*group)()) table.push_back(std::move(spec));
  }
  // `help COMMAND` completes to every command's first word, known only now.
  std::vector<std::string> first_words;
  for (const CommandSpec& spec : table) {
    if (std::find(first_words.begin(), first_words.end(), spec.words[0]) == first_words.end()) {
      first_words.push_back(spec.words[0]);
    }
  }
  for (CommandSpec& spec : table) {
    if (spec.Name() == "help") spec.arg_choices = first_words;
  }
  return table;
}

}  // namespace

std::string CommandSpec::Name() const { return absl::StrJoin(words, " "); }

const FlagSpec* CommandSpec::FindFlag(absl::string_view name) const {
  for (const FlagSpec& flag : flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

bool CommandSpec::Prints(OutputFormat format) const {
  return std::find(outputs.begin(), outputs.end(), format) != outputs.end();
}

const std::vector<CommandSpec>& Commands() {
  static const auto* const table = new std::vector<CommandSpec>(BuildTable());
  return *table;
}

const std::vector<FlagSpec>& GlobalFlags() {
  static const auto* const flags = new std::vector<FlagSpec>{
      {.name = "orchestrator",
       .value = "HOST:PORT",
       .help = "Orchestrator address (default $VANGUARD_ORCHESTRATOR, else 127.0.0.1:50051)."},
      {.name = "timeout",
       .value = "10s",
       .help = "Deadline of each RPC (watch streams have none)."},
      {.name = "output",
       .value = "FORMAT",
       .help = "table (default); json (protobuf's JSON mapping, .proto field names); yaml (the "
               "same object); csv (get: a row per step, list: a row per test). Each command's "
               "--help says which it prints.",
       .choices = {"table", "json", "csv", "yaml"}},
      {.name = "tls_ca",
       .value = "PEM",
       .help = "Talk TLS, trusting these CA certificates (orchestrator --tls_cert); default "
               "plaintext.",
       .file = true},
      {.name = "tls_client_cert",
       .value = "PEM",
       .help = "With --tls_ca: present this client certificate (orchestrator --tls_client_ca, "
               "mutual TLS).",
       .file = true},
      {.name = "tls_client_key",
       .value = "PEM",
       .help = "Private key of --tls_client_cert.",
       .file = true},
  };
  return *flags;
}

FlagKind FlagKindOf(absl::string_view name) {
  for (const FlagSpec& flag : GlobalFlags()) {
    if (flag.name == name) return flag.is_bool() ? FlagKind::kBool : FlagKind::kValued;
  }
  for (const CommandSpec& spec : Commands()) {
    if (const FlagSpec* flag = spec.FindFlag(name)) {
      return flag->is_bool() ? FlagKind::kBool : FlagKind::kValued;
    }
  }
  return FlagKind::kUnknown;
}

}  // namespace vanguard::cli
