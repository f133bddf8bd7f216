// `vanguard baseline`, `regressions`, `trend` and `plan`; see planning_commands.h.
#include "orchestrator/cli/planning_commands.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/formats.h"
#include "orchestrator/cli/plan_profile.h"
#include "orchestrator/cli/plan_rates.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

constexpr int kMaxRows = 1000;  // the orchestrator's largest page

struct RegressionsOptions {
  v1::ListRegressionsRequest request;
  bool fail_on_regression = false;
};

// --- Text pieces -------------------------------------------------------------------------

std::string Time(const google::protobuf::Timestamp& t, bool rfc3339) {
  if (t.seconds() == 0 && t.nanos() == 0) return rfc3339 ? "" : "-";
  const absl::Time time = absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
  return rfc3339 ? absl::FormatTime(absl::RFC3339_full, time, absl::UTCTimeZone())
                 : absl::FormatTime("%Y-%m-%d %H:%M", time, absl::UTCTimeZone());
}

// A result's interval as compare prints it.
std::string IntervalText(double low, double high, bool at_least) {
  if (at_least) return absl::StrCat("at least ", FormatQps(low));
  if (low <= 0 && high <= 0) return "none stated";
  if (high <= 0) return absl::StrCat(FormatQps(low), " and up");
  return absl::StrCat(FormatQps(low), " to ", FormatQps(high));
}

std::string ChangeText(const v1::CapacityPoint& point) {
  if (!point.has_change_fraction()) return "-";
  return absl::StrFormat("%+.1f%%", point.change_fraction() * 100);
}

std::string BaselineRef(const v1::CapacityPoint& point) {
  if (!point.has_baseline()) return "-";
  return absl::StrCat(point.baseline().test_id(), " (", point.baseline().model_version(), ")");
}

std::string Number(double value) { return CsvNumber(value); }
std::string Bool(bool value) { return value ? "true" : "false"; }

// --- Parsers -----------------------------------------------------------------------------

absl::StatusOr<int32_t> ParseRows(const FlagSet& flags) {
  ASSIGN_OR_RETURN(std::optional<int64_t> limit, flags.Integer("limit", 1, kMaxRows));
  return limit.has_value() ? static_cast<int32_t>(*limit) : 0;
}

absl::StatusOr<v1::AcceptBaselineRequest> ParseBaseline(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 1, "a test ID (vanguard baseline 42)"));
  v1::AcceptBaselineRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseTestId(in.command.args[0]));
  request.set_test_id(id);
  return request;
}

absl::StatusOr<RegressionsOptions> ParseRegressions(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  RegressionsOptions options;
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  if (model.has_value()) options.request.set_model(*model);
  ASSIGN_OR_RETURN(int32_t rows, ParseRows(in.flags));
  options.request.set_page_size(rows);
  ASSIGN_OR_RETURN(bool latest, in.flags.Bool("latest"));
  options.request.set_latest_only(latest);
  ASSIGN_OR_RETURN(options.fail_on_regression, in.flags.Bool("fail_on_regression"));
  return options;
}

absl::StatusOr<v1::GetCapacityTrendRequest> ParseTrend(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 1, "a model NAME (vanguard trend resnet50)"));
  v1::GetCapacityTrendRequest request;
  request.set_model(in.command.args[0]);
  ASSIGN_OR_RETURN(int32_t rows, ParseRows(in.flags));
  request.set_page_size(rows);
  return request;
}

// `vanguard plan`: the request, and with --profile the day it sizes over, with --rates the
// recorded trace's rates.
struct PlanOptions {
  v1::PlanCapacityRequest request;
  std::vector<ProfilePoint> profile;  // empty: no --profile
  std::vector<RatePoint> rates;       // empty: no --rates
};

absl::StatusOr<PlanOptions> ParsePlan(const CommandInput& in) {
  RETURN_IF_ERROR(ExpectArgs(in.command, 0));
  PlanOptions options;
  v1::PlanCapacityRequest& request = options.request;
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  request.set_model(*model);  // required flags: ParseCommand checked they are there
  ASSIGN_OR_RETURN(std::optional<std::string> profile_path, in.flags.NonEmptyText("profile"));
  ASSIGN_OR_RETURN(std::optional<std::string> rates_path, in.flags.NonEmptyText("rates"));
  if (profile_path.has_value() && rates_path.has_value()) {
    return FlagError("rates", "give --profile (a day) or --rates (a recorded trace), not both");
  }
  if (profile_path.has_value()) {
    ASSIGN_OR_RETURN(std::string csv, ReadFile("profile", *profile_path));
    ASSIGN_OR_RETURN(options.profile, ParseDailyProfile(csv));
  }
  if (rates_path.has_value()) {
    ASSIGN_OR_RETURN(std::string csv, ReadFile("rates", *rates_path));
    ASSIGN_OR_RETURN(options.rates, ParseRates(csv));
  }
  ASSIGN_OR_RETURN(std::optional<double> peak, in.flags.Number("peak_qps"));
  if (!peak.has_value() && !options.profile.empty()) peak = ProfilePeak(options.profile);
  if (!peak.has_value() && !options.rates.empty()) peak = RatesPeak(options.rates);
  if (!peak.has_value()) {
    return FlagError("peak_qps", "is required (or give --profile or --rates)");
  }
  if (!(*peak > 0)) {
    return BadValue("peak_qps", in.flags.Text("peak_qps").value_or(absl::StrCat(*peak)),
                    "must be > 0 (requests/s)");
  }
  request.set_peak_qps(*peak);
  if (std::optional<std::string> headroom = in.flags.Text("headroom")) {
    ASSIGN_OR_RETURN(double fraction, ParseHeadroomPercent(*headroom));
    request.set_headroom(fraction);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> loss, in.flags.Integer("survive_loss", 0, 10000));
  if (loss.has_value()) request.set_survive_loss(static_cast<int32_t>(*loss));
  return options;
}

// --- Runners -----------------------------------------------------------------------------

int RunBaseline(CommandRunner& runner, const v1::AcceptBaselineRequest& request) {
  absl::StatusOr<v1::AcceptBaselineResponse> response =
      runner.Call(&CommandRunner::Stub::AcceptBaseline, request);
  if (!response.ok()) return runner.RpcFailed("AcceptBaseline", response.status());
  runner.Print(*response, [&] { return RenderBaselineTable(response->baseline()); });
  return kExitOk;
}

int RunRegressions(CommandRunner& runner, const RegressionsOptions& options) {
  absl::StatusOr<v1::ListRegressionsResponse> response =
      runner.Call(&CommandRunner::Stub::ListRegressions, options.request);
  if (!response.ok()) return runner.RpcFailed("ListRegressions", response.status());
  runner.Print(
      *response, [&] { return RenderRegressionsTable(*response); },
      [&] {
        return RenderCapacityPointsCsv(
            {response->regressions().begin(), response->regressions().end()});
      });
  if (!options.fail_on_regression) return kExitOk;
  const int n = response->regressions_size();
  if (n == 0) {
    runner.err() << "gate --fail_on_regression: passed: no test regressed against its baseline\n";
    return kExitOk;
  }
  runner.err() << "gate --fail_on_regression: FAILED: " << n << (n == 1 ? " test" : " tests")
               << " regressed against its baseline beyond both confidence intervals\n";
  return kExitGateFailed;
}

int RunTrend(CommandRunner& runner, const v1::GetCapacityTrendRequest& request) {
  absl::StatusOr<v1::GetCapacityTrendResponse> response =
      runner.Call(&CommandRunner::Stub::GetCapacityTrend, request);
  if (!response.ok()) return runner.RpcFailed("GetCapacityTrend", response.status());
  runner.Print(
      *response, [&] { return RenderTrendTable(*response); },
      [&] {
        return RenderCapacityPointsCsv({response->points().begin(), response->points().end()});
      });
  return kExitOk;
}

int RunPlan(CommandRunner& runner, const PlanOptions& options) {
  absl::StatusOr<v1::PlanCapacityResponse> response =
      runner.Call(&CommandRunner::Stub::PlanCapacity, options.request);
  if (!response.ok()) return runner.RpcFailed("PlanCapacity", response.status());
  if (!options.rates.empty()) {
    runner.Print(
        *response,
        [&] {
          return absl::StrCat(RenderPlanTable(*response), "\n",
                              RenderRatesTable(*response, options.rates));
        },
        [&] { return RenderRatesCsv(*response, options.rates); });
    return kExitOk;
  }
  if (options.profile.empty()) {
    runner.Print(
        *response, [&] { return RenderPlanTable(*response); },
        [&] { return RenderPlanCsv(*response); });
    return kExitOk;
  }
  runner.Print(
      *response,
      [&] {
        return absl::StrCat(RenderPlanTable(*response), "\n",
                            RenderProfileTable(*response, options.profile));
      },
      [&] { return RenderProfileCsv(*response, options.profile); });
  return kExitOk;
}

}  // namespace

absl::StatusOr<double> ParseHeadroomPercent(absl::string_view text) {
  absl::string_view number = absl::StripAsciiWhitespace(text);
  absl::ConsumeSuffix(&number, "%");
  double pct = 0;
  if (!absl::SimpleAtod(number, &pct) || !std::isfinite(pct) || pct < 0) {
    return BadValue("headroom", text, "is not a percentage >= 0, e.g. 30%");
  }
  return pct / 100;
}

std::string HardwareText(const v1::Hardware& hardware) {
  std::string out = hardware.accelerator().empty() ? "-" : hardware.accelerator();
  if (hardware.accelerator_count() > 0) absl::StrAppend(&out, "x", hardware.accelerator_count());
  if (!hardware.pool().empty()) absl::StrAppend(&out, " (pool ", hardware.pool(), ")");
  return out;
}

std::string VerdictName(v1::CapacityVerdict verdict) {
  switch (verdict) {
    case v1::CAPACITY_VERDICT_UNCHANGED:
      return "unchanged";
    case v1::CAPACITY_VERDICT_IMPROVED:
      return "improved";
    case v1::CAPACITY_VERDICT_REGRESSED:
      return "regressed";
    case v1::CAPACITY_VERDICT_UNDECIDED:
      return "undecided";
    default:
      return "-";
  }
}

std::string RenderBaselineTable(const v1::CapacityBaseline& b) {
  return absl::StrCat("Test ", b.test_id(), " is the baseline of ", b.model(), "/",
                      b.model_version(), " on ", HardwareText(b.hardware()), ": ",
                      b.at_least() ? "at least " : "", FormatQps(b.max_sustainable_qps()),
                      " qps, interval ",
                      IntervalText(b.confidence_low_qps(), b.confidence_high_qps(), b.at_least()),
                      " qps (accepted by ", b.accepted_by().empty() ? "-" : b.accepted_by(), ", ",
                      Time(b.accept_time(), false), " UTC)\n");
}

std::string RenderRegressionsTable(const v1::ListRegressionsResponse& regressions) {
  if (regressions.regressions().empty()) {
    return "No test regressed against its baseline.\n";
  }
  TextTable table({{"TEST", Align::kRight},
                   {"MODEL", Align::kLeft},
                   {"VERSION", Align::kLeft},
                   {"HARDWARE", Align::kLeft},
                   {"QPS", Align::kRight},
                   {"INTERVAL", Align::kLeft},
                   {"BASELINE", Align::kLeft},
                   {"BASELINE QPS", Align::kRight},
                   {"BASELINE INTERVAL", Align::kLeft},
                   {"CHANGE", Align::kRight},
                   {"RECORDED (UTC)", Align::kLeft}});
  for (const v1::CapacityPoint& p : regressions.regressions()) {
    const v1::CapacityBaseline& b = p.baseline();
    table.AddRow({absl::StrCat(p.test_id()), p.model(), p.model_version(),
                  HardwareText(p.hardware()), FormatQps(p.max_sustainable_qps()),
                  IntervalText(p.confidence_low_qps(), p.confidence_high_qps(), p.at_least()),
                  BaselineRef(p), FormatQps(b.max_sustainable_qps()),
                  IntervalText(b.confidence_low_qps(), b.confidence_high_qps(), b.at_least()),
                  ChangeText(p), Time(p.record_time(), false)});
  }
  return table.Render();
}

std::string RenderTrendTable(const v1::GetCapacityTrendResponse& trend) {
  if (trend.points().empty()) return "No succeeded test of this model yet.\n";
  TextTable table({{"TEST", Align::kRight},
                   {"RECORDED (UTC)", Align::kLeft},
                   {"VERSION", Align::kLeft},
                   {"HARDWARE", Align::kLeft},
                   {"QPS", Align::kRight},
                   {"INTERVAL", Align::kLeft},
                   {"CONVERGED", Align::kLeft},
                   {"VERDICT", Align::kLeft},
                   {"BASELINE", Align::kLeft},
                   {"CHANGE", Align::kRight}});
  for (const v1::CapacityPoint& p : trend.points()) {
    table.AddRow({absl::StrCat(p.test_id()), Time(p.record_time(), false), p.model_version(),
                  HardwareText(p.hardware()),
                  absl::StrCat(p.at_least() ? ">= " : "", FormatQps(p.max_sustainable_qps())),
                  IntervalText(p.confidence_low_qps(), p.confidence_high_qps(), p.at_least()),
                  p.converged() ? "yes" : "no", VerdictName(p.verdict()), BaselineRef(p),
                  ChangeText(p)});
  }
  return table.Render();
}

std::string RenderCapacityPointsCsv(const std::vector<v1::CapacityPoint>& points) {
  std::string out =
      CsvLine({"test_id", "model", "version", "accelerator", "accelerator_count", "pool",
               "max_sustainable_qps", "at_least", "confidence_low_qps", "confidence_high_qps",
               "converged", "recorded", "verdict", "baseline_test_id", "baseline_version",
               "baseline_qps", "baseline_low_qps", "baseline_high_qps", "change_fraction"});
  for (const v1::CapacityPoint& p : points) {
    const v1::CapacityBaseline& b = p.baseline();
    const bool has_b = p.has_baseline();
    absl::StrAppend(
        &out,
        CsvLine({absl::StrCat(p.test_id()), p.model(), p.model_version(),
                 p.hardware().accelerator(), absl::StrCat(p.hardware().accelerator_count()),
                 p.hardware().pool(), Number(p.max_sustainable_qps()), Bool(p.at_least()),
                 Number(p.confidence_low_qps()), Number(p.confidence_high_qps()),
                 Bool(p.converged()), Time(p.record_time(), true),
                 has_b ? VerdictName(p.verdict()) : "", has_b ? absl::StrCat(b.test_id()) : "",
                 b.model_version(), has_b ? Number(b.max_sustainable_qps()) : "",
                 has_b ? Number(b.confidence_low_qps()) : "",
                 has_b ? Number(b.confidence_high_qps()) : "",
                 p.has_change_fraction() ? Number(p.change_fraction()) : ""}));
  }
  return out;
}

namespace {

// For a hardware whose plan used a co-location or survivor factor: the factors, the
// capacities they give and the replicas they make; "" for one without.
std::string FactorsLine(const v1::PlanCapacityResponse& plan, const v1::ReplicaPlan& p) {
  if (p.test_id() == 0 || (!p.has_colocation_factor() && !p.has_survivor_factor())) return "";
  std::string line = absl::StrCat(HardwareText(p.hardware()), ":");
  if (p.has_colocation_factor()) {
    absl::StrAppend(&line, absl::StrFormat(" co-located %.2f (test %d) -> %s qps a replica;",
                                           p.colocation_factor(), p.colocation_test_id(),
                                           FormatQps(p.effective_capacity_qps())));
  }
  if (p.has_survivor_factor()) {
    absl::StrAppend(&line,
                    absl::StrFormat(" survivor %.2f (test %d) -> %s qps;", p.survivor_factor(),
                                    p.survivor_test_id(), FormatQps(p.survivor_capacity_qps())));
  }
  const std::string required = FormatQps(plan.required_qps());
  if (plan.survive_loss() == 0) {
    return absl::StrCat(line, " replicas = ceil(", required, " / ",
                        FormatQps(p.effective_capacity_qps()), ") = ", p.replicas(), "\n");
  }
  return absl::StrCat(line, " replicas = max(ceil(", required, " / ",
                      FormatQps(p.effective_capacity_qps()), "), ceil(", required, " / ",
                      FormatQps(p.survivor_capacity_qps()), ") + ", plan.survive_loss(),
                      ") = ", p.replicas(), "\n");
}

}  // namespace

std::string RenderPlanTable(const v1::PlanCapacityResponse& plan) {
  std::string out = absl::StrFormat(
      "%s: peak %s qps + %g%% headroom = %s qps, surviving the loss of %d replica%s\n",
      plan.model(), FormatQps(plan.peak_qps()), plan.headroom() * 100,
      FormatQps(plan.required_qps()), plan.survive_loss(), plan.survive_loss() == 1 ? "" : "s");
  if (plan.plans().empty()) {
    return absl::StrCat(out, "No version of ", plan.model(), " that is not deprecated.\n");
  }
  TextTable table({{"HARDWARE", Align::kLeft},
                   {"VERSION", Align::kLeft},
                   {"CAPACITY/REPLICA", Align::kRight},
                   {"TEST", Align::kRight},
                   {"REPLICAS", Align::kRight},
                   {"ACCELERATORS", Align::kRight},
                   {"COST/1M REQ", Align::kRight},
                   {"OUT TOK/REQ", Align::kRight},
                   {"COST/1M OUT TOK", Align::kRight}});
  bool unmeasured = false;
  bool priced = false;
  for (const v1::ReplicaPlan& p : plan.plans()) {
    const bool measured = p.test_id() != 0;
    unmeasured |= !measured;
    priced |= p.has_cost_per_million_requests();
    table.AddRow(
        {HardwareText(p.hardware()), p.model_version(),
         measured ? absl::StrCat(p.at_least() ? ">= " : "", FormatQps(p.capacity_qps()))
                  : "not measured",
         measured ? absl::StrCat(p.test_id()) : "-", measured ? absl::StrCat(p.replicas()) : "-",
         measured && p.accelerators() > 0 ? absl::StrCat(p.accelerators()) : "-",
         p.has_cost_per_million_requests() ? absl::StrFormat("%.4f", p.cost_per_million_requests())
                                           : "-",
         p.has_output_tokens_per_request() ? absl::StrFormat("%.1f", p.output_tokens_per_request())
                                           : "-",
         p.has_cost_per_million_output_tokens()
             ? absl::StrFormat("%.4f", p.cost_per_million_output_tokens())
             : "-"});
  }
  absl::StrAppend(&out, table.Render(), "replicas = ceil(", FormatQps(plan.required_qps()),
                  " / capacity per replica) + ", plan.survive_loss(), "\n");
  for (const v1::ReplicaPlan& p : plan.plans()) absl::StrAppend(&out, FactorsLine(plan, p));
  if (unmeasured) absl::StrAppend(&out, "not measured: that version has no converged test\n");
  if (!priced) {
    absl::StrAppend(&out,
                    "cost: the registry stores no price per accelerator-hour for these "
                    "accelerators (set one with `vanguard prices set`)\n");
  }
  return out;
}

std::string RenderPlanCsv(const v1::PlanCapacityResponse& plan) {
  std::string out =
      CsvLine({"model", "peak_qps", "headroom", "survive_loss", "required_qps", "accelerator",
               "accelerator_count", "pool", "version", "test_id", "capacity_qps", "at_least",
               "replicas", "accelerators", "cost_per_million_requests", "output_tokens_per_request",
               "cost_per_million_output_tokens"});
  for (const v1::ReplicaPlan& p : plan.plans()) {
    const bool measured = p.test_id() != 0;
    absl::StrAppend(
        &out,
        CsvLine({plan.model(), Number(plan.peak_qps()), Number(plan.headroom()),
                 absl::StrCat(plan.survive_loss()), Number(plan.required_qps()),
                 p.hardware().accelerator(), absl::StrCat(p.hardware().accelerator_count()),
                 p.hardware().pool(), p.model_version(), measured ? absl::StrCat(p.test_id()) : "",
                 measured ? Number(p.capacity_qps()) : "", measured ? Bool(p.at_least()) : "",
                 measured ? absl::StrCat(p.replicas()) : "",
                 measured && p.accelerators() > 0 ? absl::StrCat(p.accelerators()) : "",
                 p.has_cost_per_million_requests() ? Number(p.cost_per_million_requests()) : "",
                 p.has_output_tokens_per_request() ? Number(p.output_tokens_per_request()) : "",
                 p.has_cost_per_million_output_tokens() ? Number(p.cost_per_million_output_tokens())
                                                        : ""}));
  }
  return out;
}

std::vector<CommandSpec> PlanningCommands() {
  const FlagSpec limit{.name = "limit", .value = "N", .help = "At most this many rows."};
  return {
      Command<v1::AcceptBaselineRequest>(
          {.words = {"baseline"},
           .args = "TEST_ID",
           .summary = "Accept a succeeded test as the capacity baseline of its model version "
                      "(submitter); later tests are judged against it.",
           .details = "A test of version V is judged against the baseline of V, else of the "
                      "latest version registered before V, on the same hardware (the latest "
                      "accepted). Accepting a test again makes it the newest baseline again.",
           .parse = ParseBaseline,
           .run = RunBaseline}),
      Command<RegressionsOptions>(
          {.words = {"regressions"},
           .summary = "List tests whose capacity dropped beyond the noise against their "
                      "baseline: the new confidence interval wholly below the baseline's.",
           .flags = {{.name = "model", .value = "N", .help = "Only this model's tests."},
                     {.name = "latest",
                      .help = "Only tests that are still the newest succeeded test of their "
                              "model on their hardware (not measured again since)."},
                     {.name = "fail_on_regression",
                      .help = "CI gate: exit 4 when any test is listed (with --latest: when "
                              "the newest test regressed). One line on stderr says why."},
                     limit},
           .outputs = kEveryOutput,
           .parse = ParseRegressions,
           .run = RunRegressions}),
      Command<v1::GetCapacityTrendRequest>(
          {.words = {"trend"},
           .args = "MODEL",
           .summary = "A model's capacity over time: every succeeded test, oldest first, with "
                      "its interval and its verdict against the baseline in force.",
           .flags = {{.name = "limit",
                      .value = "N",
                      .help = "The newest this many tests (default 200)."}},
           .outputs = kEveryOutput,
           .parse = ParseTrend,
           .run = RunTrend}),
      Command<PlanOptions>(
          {.words = {"plan"},
           .summary = "Replicas needed per hardware for a peak rate, from the latest converged "
                      "capacity of the model's newest version on each hardware.",
           .details = "replicas = ceil(peak_qps * (1 + headroom) / capacity per replica) + "
                      "survive_loss; where the model was measured co-located with a neighbour "
                      "or as the survivor of a lost replica (TestSpec.capacity_condition), the "
                      "capacity is scaled by those factors and replicas = max(ceil(required / "
                      "co-located capacity), ceil(required / survivor capacity) + "
                      "survive_loss); cost per million requests = price per accelerator-hour * "
                      "accelerators per replica / (capacity * 3600) * 1e6 where the registry "
                      "has a price; for generative models that stream, the output tokens per "
                      "request the capacity test measured (one per content chunk) and cost per "
                      "million output tokens = cost per million requests / tokens per request "
                      "(docs/planning.md). With --rates (a recorded trace's rates): replicas "
                      "in each bucket, the fewest and most, replica-hours, accelerator-hours "
                      "and cost over the trace. With --profile: replicas at each time "
                      "of the day, replica-hours, accelerator-hours and cost per day (table and "
                      "CSV; JSON and YAML print the plan only).",
           .flags = {{.name = "model", .value = "N", .help = "The model.", .required = true},
                     {.name = "peak_qps",
                      .value = "QPS",
                      .help = "The peak request rate to carry, requests/s (default with "
                              "--profile: its highest rate)."},
                     {.name = "profile",
                      .value = "FILE",
                      .help = "A daily traffic profile, CSV lines TIME,QPS (TIME HH:MM); each "
                              "rate holds until the next time, the last until the first one "
                              "the next day."},
                     {.name = "rates",
                      .value = "FILE",
                      .help = "A recorded trace's request rate over time, CSV lines "
                              "START_S,DURATION_S,QPS as `vanguard-replayer rates "
                              "--trace=traffic.vtr [--bucket=5m] [--model=M]` prints them; not "
                              "with --profile.",
                      .file = true},
                     {.name = "headroom",
                      .value = "30%",
                      .help = "Capacity kept spare above the peak, a percentage (default 30%)."},
                     {.name = "survive_loss",
                      .value = "1",
                      .help = "Replicas that may fail while the rest still carry the peak with "
                              "headroom (default 1)."}},
           .outputs = kEveryOutput,
           .parse = ParsePlan,
           .run = RunPlan}),
  };
}

}  // namespace vanguard::cli
