// `vanguard team set-quota` and `team get-quota`; see team_commands.h. main()'s thread.
#include "orchestrator/cli/team_commands.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

absl::StatusOr<v1::SetTeamQuotaRequest> ParseSetQuota(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::SetTeamQuotaRequest request;
  ASSIGN_OR_RETURN(std::optional<std::string> team, in.flags.NonEmptyText("team"));
  request.set_team(*team);  // a required flag: ParseCommand checked it is there
  v1::TeamQuota& quota = *request.mutable_quota();
  ASSIGN_OR_RETURN(std::optional<double> rate, in.flags.Number("max_rate_qps"));
  if (rate.has_value()) quota.set_max_rate_qps(*rate);
  ASSIGN_OR_RETURN(std::optional<absl::Duration> step, in.flags.Duration("max_step_duration"));
  if (step.has_value()) SetProtoDuration(*step, quota.mutable_max_step_duration());
  ASSIGN_OR_RETURN(std::optional<absl::Duration> test, in.flags.Duration("max_test_duration"));
  if (test.has_value()) SetProtoDuration(*test, quota.mutable_max_test_duration());
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  ASSIGN_OR_RETURN(std::optional<int64_t> concurrent,
                   in.flags.Integer("max_concurrent_tests", 1, kMax));
  if (concurrent.has_value()) quota.set_max_concurrent_tests(static_cast<int32_t>(*concurrent));
  ASSIGN_OR_RETURN(std::optional<int64_t> submitter,
                   in.flags.Integer("max_submitter_priority", kMin, kMax));
  if (submitter.has_value()) quota.set_max_submitter_priority(static_cast<int32_t>(*submitter));
  ASSIGN_OR_RETURN(std::optional<int64_t> admin,
                   in.flags.Integer("max_admin_priority", kMin, kMax));
  if (admin.has_value()) quota.set_max_admin_priority(static_cast<int32_t>(*admin));
  if (quota.ByteSizeLong() == 0) {
    return FlagError("team", "set-quota needs at least one --max_* flag to change");
  }
  return request;
}

absl::StatusOr<v1::GetTeamQuotaRequest> ParseGetQuota(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::GetTeamQuotaRequest request;
  ASSIGN_OR_RETURN(std::optional<std::string> team, in.flags.NonEmptyText("team"));
  if (team.has_value()) request.set_team(*team);
  return request;
}

template <typename Response>
void PrintQuota(CommandRunner& runner, const Response& response) {
  runner.Print(response, [&] { return RenderQuotaTable(response.team(), response.quota()); });
}

int RunSetQuota(CommandRunner& runner, const v1::SetTeamQuotaRequest& request) {
  absl::StatusOr<v1::SetTeamQuotaResponse> response =
      runner.Call(&CommandRunner::Stub::SetTeamQuota, request);
  if (!response.ok()) return runner.RpcFailed("SetTeamQuota", response.status());
  PrintQuota(runner, *response);
  return kExitOk;
}

int RunGetQuota(CommandRunner& runner, const v1::GetTeamQuotaRequest& request) {
  absl::StatusOr<v1::GetTeamQuotaResponse> response =
      runner.Call(&CommandRunner::Stub::GetTeamQuota, request);
  if (!response.ok()) return runner.RpcFailed("GetTeamQuota", response.status());
  PrintQuota(runner, *response);
  return kExitOk;
}

}  // namespace

std::string RenderQuotaTable(const std::string& team, const v1::TeamQuota& quota) {
  TextTable table({{"TEAM", Align::kLeft},
                   {"MAX_RATE_QPS", Align::kRight},
                   {"MAX_STEP", Align::kRight},
                   {"MAX_TEST", Align::kRight},
                   {"MAX_CONCURRENT", Align::kRight},
                   {"MAX_PRIO_SUBMITTER", Align::kRight},
                   {"MAX_PRIO_ADMIN", Align::kRight}});
  table.AddRow({team, absl::StrCat(quota.max_rate_qps()),
                absl::FormatDuration(FromProto(quota.max_step_duration())),
                absl::FormatDuration(FromProto(quota.max_test_duration())),
                absl::StrCat(quota.max_concurrent_tests()),
                absl::StrCat(quota.max_submitter_priority()),
                absl::StrCat(quota.max_admin_priority())});
  return table.Render();
}

std::vector<CommandSpec> TeamCommands() {
  const FlagSpec team{.name = "team", .value = "T", .help = "The team."};
  FlagSpec required_team = team;
  required_team.required = true;
  return {
      Command<v1::SetTeamQuotaRequest>(
          {.words = {"team", "set-quota"},
           .summary = "Set a team's quota (admin); limits left out keep their value.",
           .details = "Defaults: 1000000 qps, 1h steps, 24h tests, 100 tests queued or running, "
                      "priority up to 200 (submitter) / 1000 (admin). docs/security.md.",
           .flags = {required_team,
                     {.name = "max_rate_qps",
                      .value = "QPS",
                      .help = "Highest rate any step of a test may offer."},
                     {.name = "max_step_duration",
                      .value = "1h",
                      .help = "Longest step (warmup + measured part)."},
                     {.name = "max_test_duration",
                      .value = "24h",
                      .help = "Longest test: its most steps times their length."},
                     {.name = "max_concurrent_tests",
                      .value = "N",
                      .help = "Most tests of the team queued or running at once."},
                     {.name = "max_submitter_priority",
                      .value = "P",
                      .help = "Highest priority a submitter may give the team's tests."},
                     {.name = "max_admin_priority",
                      .value = "P",
                      .help = "Highest priority an admin may give the team's tests."}},
           .parse = ParseSetQuota,
           .run = RunSetQuota}),
      Command<v1::GetTeamQuotaRequest>(
          {.words = {"team", "get-quota"},
           .summary = "Show a team's quota in force (default: the token's team).",
           .flags = {team},
           .parse = ParseGetQuota,
           .run = RunGetQuota}),
  };
}

}  // namespace vanguard::cli
