// `vanguard schedules ...` and `vanguard webhooks ...`; see schedule_commands.h. main()'s
// thread.
#include "orchestrator/cli/schedule_commands.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

std::string FormatUtc(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M", absl::FromUnixSeconds(t.seconds()),
                          absl::UTCTimeZone());
}

// The interval ("6h") or the cron expression ("cron 30 2 * * 1-5"), "-" for neither.
std::string FormatRepeat(const v1::TestSchedule& s) {
  if (s.repeat_case() == v1::TestSchedule::kCron) return absl::StrCat("cron ", s.cron());
  const google::protobuf::Duration& d = s.interval();
  if (!HasDuration(d)) return "-";
  return absl::FormatDuration(absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos()));
}

absl::StatusOr<v1::SetScheduleRequest> ParseSchedulesSet(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::SetScheduleRequest request;
  v1::TestSchedule& schedule = *request.mutable_schedule();
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  schedule.set_model(*model);  // required: ParseCommand checked it is there
  ASSIGN_OR_RETURN(std::optional<std::string> name, in.flags.NonEmptyText("name"));
  if (name.has_value()) schedule.set_name(*name);
  ASSIGN_OR_RETURN(bool on_new_version, in.flags.Bool("on_new_version"));
  schedule.set_on_new_version(on_new_version);
  ASSIGN_OR_RETURN(std::optional<absl::Duration> every, in.flags.Duration("every"));
  ASSIGN_OR_RETURN(std::optional<std::string> cron, in.flags.NonEmptyText("cron"));
  if (every.has_value() && cron.has_value()) {
    return FlagError("cron", "give --every (a fixed interval) or --cron, not both");
  }
  if (every.has_value()) SetProtoDuration(*every, schedule.mutable_interval());
  if (cron.has_value()) schedule.set_cron(*cron);  // the orchestrator parses it
  if (!on_new_version && !every.has_value() && !cron.has_value()) {
    return FlagError("on_new_version",
                     "give --on_new_version, and/or --every=DURATION or --cron=EXPRESSION");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> spec_file, in.flags.NonEmptyText("spec_file"));
  RETURN_IF_ERROR(ReadJsonMessage("spec_file", *spec_file, schedule.mutable_spec()));
  return request;
}

absl::StatusOr<v1::ListSchedulesRequest> ParseSchedulesList(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::ListSchedulesRequest request;
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  if (model.has_value()) request.set_model(*model);
  return request;
}

// The secret in a file: its first line, without surrounding whitespace.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return FlagError("secret_file", absl::StrCat("cannot read ", path));
  std::string line;
  std::getline(file, line);
  std::string secret(absl::StripAsciiWhitespace(line));
  if (secret.empty()) return FlagError("secret_file", "the file's first line is empty");
  return secret;
}

absl::StatusOr<v1::AddWebhookRequest> ParseWebhooksAdd(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::AddWebhookRequest request;
  v1::Webhook& webhook = *request.mutable_webhook();
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  ASSIGN_OR_RETURN(std::optional<std::string> team, in.flags.NonEmptyText("team"));
  if (model.has_value() && team.has_value()) {
    return FlagError("team",
                     "give --model (that model's regressions) or --team (every model "
                     "of the team), not both");
  }
  if (model.has_value()) webhook.set_model(*model);
  if (team.has_value()) webhook.set_team(*team);
  ASSIGN_OR_RETURN(std::optional<std::string> url, in.flags.NonEmptyText("url"));
  webhook.set_url(*url);  // required
  ASSIGN_OR_RETURN(std::optional<std::string> secret_file, in.flags.NonEmptyText("secret_file"));
  ASSIGN_OR_RETURN(std::string secret, ReadSecretFile(*secret_file));
  webhook.set_secret(std::move(secret));
  return request;
}

absl::StatusOr<v1::ListWebhooksRequest> ParseWebhooksList(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  v1::ListWebhooksRequest request;
  ASSIGN_OR_RETURN(std::optional<std::string> team, in.flags.NonEmptyText("team"));
  if (team.has_value()) request.set_team(*team);
  return request;
}

absl::StatusOr<int64_t> ParseIdArg(const CommandInput& in, absl::string_view example) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 1, example));
  return ParseTestId(in.command.args[0]);
}

absl::StatusOr<v1::ListWebhookDeliveriesRequest> ParseWebhookDeliveries(const CommandInput& in) {
  v1::ListWebhookDeliveriesRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseIdArg(in, "a webhook ID (vanguard webhooks deliveries 2)"));
  request.set_webhook_id(id);
  ASSIGN_OR_RETURN(std::optional<std::string> state, in.flags.NonEmptyText("state"));
  if (state == "pending") {
    request.set_state(v1::WEBHOOK_DELIVERY_STATE_PENDING);
  } else if (state == "delivered") {
    request.set_state(v1::WEBHOOK_DELIVERY_STATE_DELIVERED);
  } else if (state == "failed") {
    request.set_state(v1::WEBHOOK_DELIVERY_STATE_FAILED);
  } else if (state.has_value()) {
    return FlagError("state", "must be pending, delivered or failed");
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> limit, in.flags.Integer("limit", 1, 1000));
  if (limit.has_value()) request.set_page_size(static_cast<int32_t>(*limit));
  return request;
}

int RunSchedulesSet(CommandRunner& runner, const v1::SetScheduleRequest& request) {
  absl::StatusOr<v1::SetScheduleResponse> response =
      runner.Call(&CommandRunner::Stub::SetSchedule, request);
  if (!response.ok()) return runner.RpcFailed("SetSchedule", response.status());
  v1::ListSchedulesResponse one;
  *one.add_schedules() = response->schedule();
  runner.Print(*response, [&] { return RenderScheduleTable(one); });
  return kExitOk;
}

int RunSchedulesList(CommandRunner& runner, const v1::ListSchedulesRequest& request) {
  absl::StatusOr<v1::ListSchedulesResponse> response =
      runner.Call(&CommandRunner::Stub::ListSchedules, request);
  if (!response.ok()) return runner.RpcFailed("ListSchedules", response.status());
  runner.Print(*response, [&] { return RenderScheduleTable(*response); });
  return kExitOk;
}

int RunSchedulesDelete(CommandRunner& runner, const int64_t& id) {
  v1::DeleteScheduleRequest request;
  request.set_id(id);
  absl::StatusOr<v1::DeleteScheduleResponse> response =
      runner.Call(&CommandRunner::Stub::DeleteSchedule, request);
  if (!response.ok()) return runner.RpcFailed("DeleteSchedule", response.status());
  runner.Print(*response, [&] { return absl::StrCat("Schedule ", id, " deleted.\n"); });
  return kExitOk;
}

int RunWebhooksAdd(CommandRunner& runner, const v1::AddWebhookRequest& request) {
  absl::StatusOr<v1::AddWebhookResponse> response =
      runner.Call(&CommandRunner::Stub::AddWebhook, request);
  if (!response.ok()) return runner.RpcFailed("AddWebhook", response.status());
  v1::ListWebhooksResponse one;
  *one.add_webhooks() = response->webhook();
  runner.Print(*response, [&] { return RenderWebhookTable(one); });
  return kExitOk;
}

int RunWebhooksList(CommandRunner& runner, const v1::ListWebhooksRequest& request) {
  absl::StatusOr<v1::ListWebhooksResponse> response =
      runner.Call(&CommandRunner::Stub::ListWebhooks, request);
  if (!response.ok()) return runner.RpcFailed("ListWebhooks", response.status());
  runner.Print(*response, [&] { return RenderWebhookTable(*response); });
  return kExitOk;
}

int RunWebhooksDelete(CommandRunner& runner, const int64_t& id) {
  v1::DeleteWebhookRequest request;
  request.set_id(id);
  absl::StatusOr<v1::DeleteWebhookResponse> response =
      runner.Call(&CommandRunner::Stub::DeleteWebhook, request);
  if (!response.ok()) return runner.RpcFailed("DeleteWebhook", response.status());
  runner.Print(*response, [&] { return absl::StrCat("Webhook ", id, " deleted.\n"); });
  return kExitOk;
}

int RunWebhookDeliveries(CommandRunner& runner, const v1::ListWebhookDeliveriesRequest& request) {
  absl::StatusOr<v1::ListWebhookDeliveriesResponse> response =
      runner.Call(&CommandRunner::Stub::ListWebhookDeliveries, request);
  if (!response.ok()) return runner.RpcFailed("ListWebhookDeliveries", response.status());
  runner.Print(*response, [&] { return RenderWebhookDeliveryTable(*response); });
  return kExitOk;
}

std::string DeliveryStateName(v1::WebhookDeliveryState state) {
  switch (state) {
    case v1::WEBHOOK_DELIVERY_STATE_PENDING:
      return "pending";
    case v1::WEBHOOK_DELIVERY_STATE_DELIVERED:
      return "delivered";
    case v1::WEBHOOK_DELIVERY_STATE_FAILED:
      return "failed";
    default:
      return "-";
  }
}

}  // namespace

std::string RenderScheduleTable(const v1::ListSchedulesResponse& list) {
  TextTable table({{"ID", Align::kRight},
                   {"MODEL", Align::kLeft},
                   {"NAME", Align::kLeft},
                   {"TEAM", Align::kLeft},
                   {"ON NEW VERSION", Align::kLeft},
                   {"EVERY", Align::kRight},
                   {"NEXT RUN (UTC)", Align::kLeft},
                   {"LAST TEST", Align::kRight}});
  for (const v1::TestSchedule& s : list.schedules()) {
    table.AddRow({absl::StrCat(s.id()), s.model(), s.name(), s.team(),
                  s.on_new_version() ? "yes" : "no", FormatRepeat(s), FormatUtc(s.next_run_time()),
                  s.last_test_id() > 0 ? absl::StrCat(s.last_test_id()) : "-"});
  }
  return table.Render();
}

std::string RenderWebhookTable(const v1::ListWebhooksResponse& list) {
  TextTable table({{"ID", Align::kRight},
                   {"TEAM", Align::kLeft},
                   {"MODEL", Align::kLeft},
                   {"URL", Align::kLeft},
                   {"CREATED (UTC)", Align::kLeft}});
  for (const v1::Webhook& w : list.webhooks()) {
    table.AddRow({absl::StrCat(w.id()), w.team(), w.model().empty() ? "(every model)" : w.model(),
                  w.url(), FormatUtc(w.create_time())});
  }
  return table.Render();
}

std::string RenderWebhookDeliveryTable(const v1::ListWebhookDeliveriesResponse& list) {
  TextTable table({{"ID", Align::kRight},
                   {"TEST", Align::kRight},
                   {"STATE", Align::kLeft},
                   {"ATTEMPTS", Align::kRight},
                   {"LAST ANSWER", Align::kLeft},
                   {"CREATED (UTC)", Align::kLeft},
                   {"NEXT ATTEMPT / FINISHED (UTC)", Align::kLeft}});
  for (const v1::WebhookDelivery& d : list.deliveries()) {
    std::string answer = "-";
    if (!d.last_error().empty()) {
      answer = d.last_error();
    } else if (d.last_status() > 0) {
      answer = absl::StrCat("HTTP ", d.last_status());
    }
    table.AddRow({absl::StrCat(d.id()), absl::StrCat(d.test_id()), DeliveryStateName(d.state()),
                  absl::StrCat(d.attempts()), answer, FormatUtc(d.create_time()),
                  d.has_next_attempt_time() ? FormatUtc(d.next_attempt_time())
                  : d.has_finish_time()     ? FormatUtc(d.finish_time())
                                            : "-"});
  }
  return table.Render();
}

std::vector<CommandSpec> ScheduleCommands() {
  const FlagSpec model{.name = "model", .value = "M", .help = "The model."};
  FlagSpec required_model = model;
  required_model.required = true;
  required_model.help = "The model whose tests the schedule queues.";
  return {
      Command<v1::SetScheduleRequest>(
          {.words = {"schedules", "set"},
           .summary = "Test a model on every new version and/or at an interval or cron times.",
           .details =
               "Replaces the schedule of the same --model and --name. The spec file is a "
               "vanguard.v1.TestSpec (as `vanguard submit --spec_file`) without "
               "model_version: each queued test pins the version it tests. --every is a fixed "
               "interval; --cron five crontab fields in UTC (minute hour day-of-month month "
               "day-of-week: '30 2 * * 1-5' is 02:30 UTC on weekdays) or @hourly, @daily, "
               "@weekly, @monthly, @yearly; prefixed 'CRON_TZ=Europe/Berlin ' they are read on "
               "that zone's wall clock. A run missed while no orchestrator ran is made up "
               "once. docs/planning.md.",
           .flags = {required_model,
                     {.name = "name",
                      .value = "N",
                      .help = "The schedule's name among the model's (default \"default\")."},
                     {.name = "on_new_version",
                      .help = "Queue the test whenever a new version of the model is registered."},
                     {.name = "every",
                      .value = "6h",
                      .help = "Queue the test at this interval (1m to 366 days) against the "
                              "newest version that is not deprecated."},
                     {.name = "cron",
                      .value = "'M H DOM MON DOW'",
                      .help = "Queue the test at the minutes (UTC) this cron expression matches "
                              "against the newest version that is not deprecated: *, N, N-M, "
                              "lists, /STEP, JAN-DEC, SUN-SAT, or a macro (@daily); "
                              "'CRON_TZ=ZONE ' first for a zone's wall clock; not with "
                              "--every."},
                     {.name = "spec_file",
                      .value = "test.json",
                      .help = "The test to queue: a vanguard.v1.TestSpec in protobuf JSON.",
                      .required = true,
                      .file = true}},
           .parse = ParseSchedulesSet,
           .run = RunSchedulesSet}),
      Command<v1::ListSchedulesRequest>(
          {.words = {"schedules", "list"},
           .summary = "List schedules (your team's; an admin's: every team's).",
           .flags = {model},
           .parse = ParseSchedulesList,
           .run = RunSchedulesList}),
      Command<int64_t>({.words = {"schedules", "delete"},
                        .args = "ID",
                        .summary = "Delete a schedule; the tests it queued stay.",
                        .parse =
                            [](const CommandInput& in) {
                              return ParseIdArg(in, "a schedule ID (vanguard schedules delete 3)");
                            },
                        .run = RunSchedulesDelete}),
      Command<v1::AddWebhookRequest>(
          {.words = {"webhooks", "add"},
           .summary = "POST every regressed verdict of a model or a team to a URL, signed.",
           .details =
               "The body is signed with HMAC-SHA256 under the secret "
               "(X-Vanguard-Signature: sha256=<hex>). The URL must be http:// or https:// and "
               "within the orchestrator's --allowed_targets. docs/planning.md.",
           .flags = {{.name = "model", .value = "M", .help = "Announce this model's regressions."},
                     {.name = "team",
                      .value = "T",
                      .help = "Announce every model of this team (default: your team)."},
                     {.name = "url",
                      .value = "https://HOST[:PORT]/PATH",
                      .help = "Where to POST.",
                      .required = true},
                     {.name = "secret_file",
                      .value = "FILE",
                      .help = "A file whose first line is the shared secret (16 to 1024 bytes).",
                      .required = true,
                      .file = true}},
           .parse = ParseWebhooksAdd,
           .run = RunWebhooksAdd}),
      Command<v1::ListWebhooksRequest>(
          {.words = {"webhooks", "list"},
           .summary = "List webhooks, never their secrets.",
           .flags = {{.name = "team",
                      .value = "T",
                      .help = "The team (default: yours; an admin's: every team)."}},
           .parse = ParseWebhooksList,
           .run = RunWebhooksList}),
      Command<int64_t>({.words = {"webhooks", "delete"},
                        .args = "ID",
                        .summary = "Delete a webhook; its undelivered notifications go too.",
                        .parse =
                            [](const CommandInput& in) {
                              return ParseIdArg(in, "a webhook ID (vanguard webhooks delete 2)");
                            },
                        .run = RunWebhooksDelete}),
      Command<v1::ListWebhookDeliveriesRequest>(
          {.words = {"webhooks", "deliveries"},
           .args = "ID",
           .summary = "List a webhook's deliveries, newest first: attempts and answers.",
           .details = "One row per regressed test announced to the webhook. A pending delivery is "
                      "retried at NEXT ATTEMPT; a failed one was given up after its last attempt "
                      "(LAST ANSWER: the HTTP status, never the response body). --output=json "
                      "includes each exact body sent. docs/planning.md.",
           .flags = {{.name = "state",
                      .value = "S",
                      .help = "Only deliveries in this state.",
                      .choices = {"pending", "delivered", "failed"}},
                     {.name = "limit", .value = "N", .help = "At most this many (default 100)."}},
           .parse = ParseWebhookDeliveries,
           .run = RunWebhookDeliveries}),
  };
}

}  // namespace vanguard::cli
