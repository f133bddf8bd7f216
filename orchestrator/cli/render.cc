// Printing of tests and models for the `vanguard` tool; see render.h.
#include "orchestrator/cli/render.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "orchestrator/cli/formats.h"

namespace vanguard::cli {
namespace {

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    // Only a message with unknown Any types can fail to print; ours have none.
    return absl::StrCat("{\"error\": \"cannot print ", message.GetTypeName(), " as JSON\"}\n");
  }
  if (json.empty() || json.back() != '\n') json.push_back('\n');
  return json;
}

absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

bool IsSet(const google::protobuf::Timestamp& t) { return t.seconds() != 0 || t.nanos() != 0; }
bool IsSet(const google::protobuf::Duration& d) { return d.seconds() != 0 || d.nanos() != 0; }

std::string FormatTime(const google::protobuf::Timestamp& t) {
  if (!IsSet(t)) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", FromProto(t), absl::UTCTimeZone());
}

std::string FormatDuration(const google::protobuf::Duration& d) {
  absl::Duration v = FromProto(d);
  // Whole milliseconds are precise enough for a person reading a table.
  if (v >= absl::Seconds(1)) v = absl::Trunc(v, absl::Milliseconds(1));
  return absl::FormatDuration(v);
}

// RFC 3339 in UTC for CSV ("2024-05-01T12:00:00Z"); empty when unset.
std::string Rfc3339(const google::protobuf::Timestamp& t) {
  if (!IsSet(t)) return "";
  return absl::FormatTime(absl::RFC3339_full, FromProto(t), absl::UTCTimeZone());
}

double Millis(const google::protobuf::Duration& d) {
  return absl::ToDoubleMilliseconds(FromProto(d));
}

std::string CsvBool(bool value) { return value ? "true" : "false"; }

// "sweep", "binary_search", "adaptive", ... : the strategy oneof's field name.
std::string StrategyName(const v1::TestSpec& spec) {
  const google::protobuf::OneofDescriptor* oneof =
      v1::TestSpec::descriptor()->FindOneofByName("strategy");
  const google::protobuf::FieldDescriptor* field =
      oneof == nullptr ? nullptr
                       : v1::TestSpec::GetReflection()->GetOneofFieldDescriptor(spec, oneof);
  return field == nullptr ? "" : field->name();
}

std::string FormatPercent(double fraction) { return absl::StrFormat("%.2f", fraction * 100); }

// Drops an enum value's type prefix: ("HEALTH_STATE_WARN", "HEALTH_STATE_") -> "WARN".
std::string EnumSuffix(const std::string& name, absl::string_view prefix) {
  absl::string_view suffix = name;
  absl::ConsumePrefix(&suffix, prefix);
  if (suffix == "UNSPECIFIED" || suffix.empty()) return "-";
  return std::string(suffix);
}

std::string HealthName(v1::HealthState health) {
  return EnumSuffix(v1::HealthState_Name(health), "HEALTH_STATE_");
}

std::string ProtocolName(v1::Protocol protocol) {
  return absl::AsciiStrToLower(EnumSuffix(v1::Protocol_Name(protocol), "PROTOCOL_"));
}

std::string ScheduleName(v1::Schedule schedule) {
  // A spec without one runs Poisson arrivals (the worker's default).
  if (schedule == v1::SCHEDULE_UNSPECIFIED) schedule = v1::SCHEDULE_POISSON;
  return absl::AsciiStrToLower(EnumSuffix(v1::Schedule_Name(schedule), "SCHEDULE_"));
}

std::string ModelRef(const std::string& name, const std::string& version) {
  if (version.empty()) return name;
  return absl::StrCat(name, "/", version);
}

std::string DescribeStrategy(const v1::TestSpec& spec) {
  if (spec.strategy_case() != v1::TestSpec::kSweep) return "-";
  const v1::SweepStrategy& sweep = spec.sweep();
  std::string rates;
  if (!sweep.rates_qps().empty()) {
    rates = absl::StrCat(
        absl::StrJoin(sweep.rates_qps(), ", ",
                      [](std::string* out, double r) { absl::StrAppend(out, FormatQps(r)); }),
        " qps");
  } else {
    rates = absl::StrCat(FormatQps(sweep.min_qps()), " to ", FormatQps(sweep.max_qps()), " qps in ",
                         sweep.steps(), " steps");
  }
  const int stop_after = sweep.stop_after_failures() == 0 ? 1 : sweep.stop_after_failures();
  return absl::StrCat("sweep ", rates, "; stop after ", stop_after, " failed step",
                      stop_after == 1 ? "" : "s");
}

std::string DescribeStepSettings(const v1::TestSpec& spec) {
  return absl::StrCat(
      FormatDuration(spec.step_duration()), " measured, warmup ",
      IsSet(spec.step_warmup()) ? FormatDuration(spec.step_warmup()) : "model default",
      ", request timeout ",
      IsSet(spec.request_timeout()) ? FormatDuration(spec.request_timeout()) : "10s", ", schedule ",
      ScheduleName(spec.schedule()), ", priority ", spec.priority());
}

// "pass", "FAIL", or "interrupted" for a step its worker stopped (never judged).
std::string StepResultWord(const v1::Step& step) {
  if (step.interrupted()) return "interrupted";
  return step.passed() ? "pass" : "FAIL";
}

std::string RenderSteps(const v1::Test& test) {
  if (test.steps().empty()) return "(no steps yet)\n";
  bool several_attempts = false;
  for (const v1::Step& step : test.steps()) {
    several_attempts |= step.attempt() != test.steps(0).attempt();
  }
  std::vector<TextTable::Column> columns = {
      {"STEP", Align::kRight},    {"TARGET QPS", Align::kRight}, {"ACHIEVED QPS", Align::kRight},
      {"P50 MS", Align::kRight},  {"P99 MS", Align::kRight},     {"MAX MS", Align::kRight},
      {"ERROR %", Align::kRight}, {"HEALTH", Align::kLeft},      {"RESULT", Align::kLeft},
      {"VERDICT", Align::kLeft}};
  if (several_attempts) columns.insert(columns.begin(), {"ATTEMPT", Align::kRight});
  TextTable table(std::move(columns));
  for (const v1::Step& step : test.steps()) {
    std::vector<std::string> row = {absl::StrCat(step.index()),
                                    FormatQps(step.target_qps()),
                                    FormatQps(step.achieved_qps()),
                                    FormatMs(step.latency().p50_ms()),
                                    FormatMs(step.latency().p99_ms()),
                                    FormatMs(step.latency().max_ms()),
                                    FormatPercent(step.error_rate()),
                                    HealthName(step.health_state()),
                                    StepResultWord(step),
                                    step.verdict()};
    if (several_attempts) row.insert(row.begin(), absl::StrCat(step.attempt()));
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::string FormatGauge(bool has, double value, const char* format) {
  return has ? absl::StrFormat(format, value) : "-";
}

// One step's fleet line: load imbalance, and tail utilisation when the replicas were scraped.
std::string FleetLine(const v1::Step& step) {
  std::string line =
      absl::StrFormat("step %d: load imbalance %.2f", step.index(), step.endpoint_imbalance());
  if (step.tail_utilization() > 0) {
    absl::StrAppend(&line,
                    absl::StrFormat("; tail utilisation %.1f%% (p95 across replicas, "
                                    "mean %.1f%%)",
                                    step.tail_utilization() * 100, step.mean_utilization() * 100));
  }
  return line + "\n";
}

std::string RenderResult(const v1::Test& test) {
  if (!test.has_result()) {
    return IsTerminal(test.state()) ? "Result: none\n" : "Result: pending\n";
  }
  const v1::TestResult& result = test.result();
  // The top of the range held: the capacity is somewhere above it, never equal to it.
  std::string out =
      absl::StrCat("Result: max sustainable ", result.at_least() ? "at least " : "",
                   FormatQps(result.max_sustainable_qps()), " qps",
                   result.at_least() ? " (the top of the range held)" : "", ", converged ",
                   result.converged() ? "yes" : "no", ", ", result.steps_taken(), " steps, took ",
                   FormatDuration(result.test_duration()));
  if (result.confidence_low_qps() != 0 || result.confidence_high_qps() != 0) {
    absl::StrAppend(&out, ", range ", FormatQps(result.confidence_low_qps()), " to ",
                    FormatQps(result.confidence_high_qps()), " qps");
  }
  absl::StrAppend(&out, "\n");
  if (!result.summary().empty()) absl::StrAppend(&out, "  ", result.summary(), "\n");
  if (!result.verification().empty()) {
    absl::StrAppend(&out, "  verified: ", result.verification(), "\n");
  }
  if (IsSet(result.model_warmup())) {
    absl::StrAppend(&out, "  model warmup: ", FormatDuration(result.model_warmup()),
                    " before its latency stopped falling\n");
  }
  if (IsSet(result.more_time_needed())) {
    absl::StrAppend(&out, "  undecided: about ", FormatDuration(result.more_time_needed()),
                    " more of measuring would decide it\n");
  }
  for (const std::string& flag : result.drift_flags()) {
    absl::StrAppend(&out, "  drift: ", flag, "\n");
  }
  return out;
}

std::string DescribeHardware(const v1::Hardware& hardware) {
  if (hardware.accelerator().empty() && hardware.pool().empty()) return "-";
  std::string out = hardware.accelerator().empty() ? "-" : hardware.accelerator();
  if (hardware.accelerator_count() > 0) absl::StrAppend(&out, " x", hardware.accelerator_count());
  if (!hardware.pool().empty()) absl::StrAppend(&out, " (pool ", hardware.pool(), ")");
  return out;
}

std::string DescribeSlo(const v1::Slo& slo) {
  std::vector<std::string> parts;
  if (IsSet(slo.p99_latency())) parts.push_back("p99 <= " + FormatDuration(slo.p99_latency()));
  if (IsSet(slo.p50_latency())) parts.push_back("p50 <= " + FormatDuration(slo.p50_latency()));
  parts.push_back(absl::StrCat("errors <= ", FormatPercent(slo.max_error_rate()), "%"));
  const double ratio = slo.min_achieved_ratio() == 0 ? 0.99 : slo.min_achieved_ratio();
  parts.push_back(absl::StrCat("achieved >= ", FormatPercent(ratio), "% of offered"));
  return absl::StrJoin(parts, ", ");
}

std::string ModelCsvHeader() {
  return CsvLine({"name", "version", "protocol", "endpoints", "served_name", "framework", "p99_ms",
                  "p50_ms", "max_error_rate", "accelerator", "accelerator_count", "pool",
                  "created"});
}

std::string ModelCsvRow(const v1::Model& model) {
  return CsvLine({model.name(), model.version(), ProtocolName(model.protocol()),
                  absl::StrJoin(model.endpoints(), " "), model.served_name(), model.framework(),
                  CsvNumber(Millis(model.slo().p99_latency())),
                  CsvNumber(Millis(model.slo().p50_latency())),
                  CsvNumber(model.slo().max_error_rate()), model.hardware().accelerator(),
                  absl::StrCat(model.hardware().accelerator_count()), model.hardware().pool(),
                  Rfc3339(model.create_time())});
}

}  // namespace

std::string RenderStepEndpoints(const v1::Test& test) {
  TextTable table({{"STEP", Align::kRight},
                   {"ENDPOINT", Align::kLeft},
                   {"SHARE %", Align::kRight},
                   {"ACHIEVED QPS", Align::kRight},
                   {"P99 MS", Align::kRight},
                   {"ERRORS", Align::kRight},
                   {"PEAK IN FLIGHT", Align::kRight},
                   {"GPU UTIL %", Align::kRight},
                   {"QUEUE", Align::kRight}});
  std::string fleet;
  for (const v1::Step& step : test.steps()) {
    if (step.endpoints_size() < 2) continue;
    for (const v1::EndpointTelemetry& e : step.endpoints()) {
      const v1::ReplicaGauges& g = e.scraped();
      table.AddRow({absl::StrCat(step.index()), e.target(), FormatPercent(e.share()),
                    FormatQps(e.achieved_qps()), FormatMs(e.latency().p99_ms()),
                    absl::StrCat(e.errors() + e.timeouts()), absl::StrCat(e.peak_in_flight()),
                    FormatGauge(g.has_gpu_utilization(), g.gpu_utilization() * 100, "%.1f"),
                    FormatGauge(g.has_queue_depth(), g.queue_depth(), "%.1f")});
    }
    absl::StrAppend(&fleet, FleetLine(step));
  }
  if (fleet.empty()) return "";
  return absl::StrCat(table.Render(), fleet);
}

std::string FormatQps(double qps) { return absl::StrFormat("%.1f", qps); }

// Two decimals below 10 ms so sub-millisecond latencies stay readable.
std::string FormatMs(double ms) { return absl::StrFormat(ms < 10 ? "%.2f" : "%.1f", ms); }

std::string TestModelName(const v1::Test& test) {
  return test.model().name().empty() ? test.spec().model() : test.model().name();
}

std::string TestModelVersion(const v1::Test& test) {
  return test.model().name().empty() ? test.spec().model_version() : test.model().version();
}

std::string TestModelRef(const v1::Test& test) {
  const std::string version = TestModelVersion(test);
  return ModelRef(TestModelName(test), version.empty() ? "latest" : version);
}

std::string TextTable::Render() const {
  std::vector<size_t> widths;
  for (const Column& column : columns_) widths.push_back(column.title.size());
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  std::vector<std::string> titles;
  for (const Column& column : columns_) titles.push_back(column.title);
  AppendRow(titles, widths, &out);
  for (const auto& row : rows_) AppendRow(row, widths, &out);
  return out;
}

void TextTable::AppendRow(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                          std::string* out) const {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += "  ";
    const std::string padding(widths[i] - cells[i].size(), ' ');
    const bool last = i + 1 == cells.size();
    if (columns_[i].align == Align::kRight) {
      absl::StrAppend(&line, padding, cells[i]);
    } else {
      absl::StrAppend(&line, cells[i], last ? "" : padding);
    }
  }
  absl::StrAppend(out, absl::StripTrailingAsciiWhitespace(line), "\n");
}

std::string RenderJson(const google::protobuf::Message& message) { return ToJson(message, true); }

std::string RenderJsonLine(const google::protobuf::Message& message) {
  return ToJson(message, false);
}

std::string RenderYaml(const google::protobuf::Message& message) {
  // Our own printer's output: parsing it cannot fail, but a failure must not throw.
  const nlohmann::ordered_json json =
      nlohmann::ordered_json::parse(ToJson(message, false), nullptr, /*allow_exceptions=*/false);
  return JsonToYaml(json);
}

std::string RoleName(v1::Role role) {
  absl::string_view name = v1::Role_Name(role);
  absl::ConsumePrefix(&name, "ROLE_");
  return absl::AsciiStrToLower(name);
}

std::string RenderTestCsv(const v1::Test& test) {
  std::string out = CsvLine({"test_id", "attempt", "step", "target_qps", "achieved_qps", "p50_ms",
                             "p90_ms", "p99_ms", "p999_ms", "max_ms", "error_rate", "health",
                             "passed", "interrupted", "verdict"});
  for (const v1::Step& step : test.steps()) {
    const v1::LatencySummary& latency = step.latency();
    absl::StrAppend(&out,
                    CsvLine({absl::StrCat(test.id()), absl::StrCat(step.attempt()),
                             absl::StrCat(step.index()), CsvNumber(step.target_qps()),
                             CsvNumber(step.achieved_qps()), CsvNumber(latency.p50_ms()),
                             CsvNumber(latency.p90_ms()), CsvNumber(latency.p99_ms()),
                             CsvNumber(latency.p999_ms()), CsvNumber(latency.max_ms()),
                             CsvNumber(step.error_rate()), HealthName(step.health_state()),
                             CsvBool(step.passed()), CsvBool(step.interrupted()), step.verdict()}));
  }
  return out;
}

std::string RenderTestListCsv(const v1::ListTestsResponse& list) {
  std::string out =
      CsvLine({"id", "state", "model", "version", "attempt", "max_sustainable_qps", "at_least",
               "confidence_low_qps", "confidence_high_qps", "converged", "created", "strategy"});
  for (const v1::Test& test : list.tests()) {
    const v1::TestResult& result = test.result();
    const auto number = [&](double value) { return test.has_result() ? CsvNumber(value) : ""; };
    absl::StrAppend(
        &out, CsvLine({absl::StrCat(test.id()), TestStateName(test.state()), TestModelName(test),
                       TestModelVersion(test), absl::StrCat(test.attempt()),
                       number(result.max_sustainable_qps()),
                       test.has_result() ? CsvBool(result.at_least()) : "",
                       number(result.confidence_low_qps()), number(result.confidence_high_qps()),
                       test.has_result() ? CsvBool(result.converged()) : "",
                       Rfc3339(test.create_time()), StrategyName(test.spec())}));
  }
  return out;
}

std::string RenderModelCsv(const v1::Model& model) {
  return absl::StrCat(ModelCsvHeader(), ModelCsvRow(model));
}

std::string RenderModelListCsv(const v1::ListModelsResponse& list) {
  std::string out = ModelCsvHeader();
  for (const v1::Model& model : list.models()) absl::StrAppend(&out, ModelCsvRow(model));
  return out;
}

std::string RenderTokenListTable(const v1::ListTokensResponse& list) {
  std::string out =
      absl::StrFormat("%-6s %-24s %-10s %-16s %s\n", "ID", "NAME", "ROLE", "TEAM", "STATE");
  for (const v1::Token& token : list.tokens()) {
    absl::StrAppend(&out, absl::StrFormat("%-6d %-24s %-10s %-16s %s\n", token.id(), token.name(),
                                          RoleName(token.role()), token.team(),
                                          token.has_revoke_time() ? "revoked" : "valid"));
  }
  return out;
}

std::string RenderTokenListCsv(const v1::ListTokensResponse& list) {
  // team last: scripts that read the columns before it by position keep working.
  std::string out = CsvLine({"id", "name", "role", "created", "revoked", "team"});
  for (const v1::Token& token : list.tokens()) {
    absl::StrAppend(
        &out, CsvLine({absl::StrCat(token.id()), token.name(), RoleName(token.role()),
                       Rfc3339(token.create_time()), Rfc3339(token.revoke_time()), token.team()}));
  }
  return out;
}

std::string TestStateName(v1::TestState state) {
  return EnumSuffix(v1::TestState_Name(state), "TEST_STATE_");
}

bool IsTerminal(v1::TestState state) {
  return state == v1::TEST_STATE_SUCCEEDED || state == v1::TEST_STATE_FAILED ||
         state == v1::TEST_STATE_CANCELLED;
}

std::string RenderTestTable(const v1::Test& test) {
  std::string out =
      absl::StrCat("Test ", test.id(), "  ", TestModelRef(test), "  ", TestStateName(test.state()));
  if (test.attempt() > 0) absl::StrAppend(&out, "  (attempt ", test.attempt(), ")");
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "  strategy   ", DescribeStrategy(test.spec()), "\n");
  absl::StrAppend(&out, "  steps      ", DescribeStepSettings(test.spec()), "\n");
  absl::StrAppend(&out, "  created    ", FormatTime(test.create_time()), "\n");
  absl::StrAppend(&out, "  started    ", FormatTime(test.start_time()), "\n");
  absl::StrAppend(&out, "  ended      ", FormatTime(test.end_time()), "\n");
  if (!test.lease_owner().empty() && !IsTerminal(test.state())) {
    absl::StrAppend(&out, "  worker     ", test.lease_owner(), "\n");
  }
  if (test.cancel_requested() && !IsTerminal(test.state())) {
    absl::StrAppend(&out, "  cancel     requested; the worker stops at its next heartbeat\n");
  }
  if (!test.requeue_reason().empty()) {
    absl::StrAppend(&out, "  requeued   ", test.requeue_reason(), "\n");
  }
  if (!test.request_id().empty()) absl::StrAppend(&out, "  request id ", test.request_id(), "\n");
  if (!test.error().empty()) absl::StrAppend(&out, "  error      ", test.error(), "\n");
  absl::StrAppend(&out, "\n", RenderSteps(test), "\n");
  if (const std::string endpoints = RenderStepEndpoints(test); !endpoints.empty()) {
    absl::StrAppend(&out, endpoints, "\n");
  }
  absl::StrAppend(&out, RenderResult(test));
  return out;
}

std::string RenderTestListTable(const v1::ListTestsResponse& list) {
  if (list.tests().empty()) return "(no tests)\n";
  TextTable table({{"ID", Align::kRight},
                   {"STATE", Align::kLeft},
                   {"MODEL", Align::kLeft},
                   {"ATTEMPT", Align::kRight},
                   {"MAX QPS", Align::kRight},
                   {"CREATED", Align::kLeft},
                   {"STRATEGY", Align::kLeft}});
  for (const v1::Test& test : list.tests()) {
    table.AddRow({absl::StrCat(test.id()), TestStateName(test.state()), TestModelRef(test),
                  absl::StrCat(test.attempt()),
                  test.has_result() ? FormatQps(test.result().max_sustainable_qps()) : "-",
                  FormatTime(test.create_time()), DescribeStrategy(test.spec())});
  }
  return table.Render();
}

std::string RenderModelTable(const v1::Model& model) {
  std::string out = absl::StrCat("Model ", ModelRef(model.name(), model.version()), "\n");
  absl::StrAppend(&out, "  protocol     ", ProtocolName(model.protocol()), "\n");
  absl::StrAppend(&out, "  endpoints    ", absl::StrJoin(model.endpoints(), ", "), "\n");
  absl::StrAppend(&out, "  served name  ",
                  model.served_name().empty() ? model.name() : model.served_name(), "\n");
  absl::StrAppend(&out, "  framework    ", model.framework().empty() ? "-" : model.framework(),
                  "\n");
  absl::StrAppend(&out, "  hardware     ", DescribeHardware(model.hardware()), "\n");
  absl::StrAppend(&out, "  SLO          ", DescribeSlo(model.slo()), "\n");
  absl::StrAppend(&out, "  warmup       ", FormatDuration(model.default_warmup()), "\n");
  absl::StrAppend(&out, "  created      ", FormatTime(model.create_time()), "\n");
  if (!model.request_template().empty()) {
    absl::StrAppend(&out, "  template     ", model.request_template(), "\n");
  }
  return out;
}

std::string RenderModelListTable(const v1::ListModelsResponse& list) {
  if (list.models().empty()) return "(no models)\n";
  TextTable table({{"NAME", Align::kLeft},
                   {"VERSION", Align::kLeft},
                   {"PROTOCOL", Align::kLeft},
                   {"P99 SLO", Align::kRight},
                   {"HARDWARE", Align::kLeft},
                   {"CREATED", Align::kLeft},
                   {"ENDPOINTS", Align::kLeft}});
  for (const v1::Model& model : list.models()) {
    table.AddRow({model.name(), model.version(), ProtocolName(model.protocol()),
                  FormatDuration(model.slo().p99_latency()), DescribeHardware(model.hardware()),
                  FormatTime(model.create_time()), absl::StrJoin(model.endpoints(), ",")});
  }
  return table.Render();
}

std::string RenderStepProgress(const v1::Step& step) {
  std::string line = absl::StrCat("step ", step.index(), ": target ", FormatQps(step.target_qps()),
                                  " qps, achieved ", FormatQps(step.achieved_qps()), " qps, p99 ",
                                  FormatMs(step.latency().p99_ms()), " ms, errors ",
                                  FormatPercent(step.error_rate()), "%, ",
                                  HealthName(step.health_state()), ", ", StepResultWord(step));
  if (!step.verdict().empty()) absl::StrAppend(&line, " (", step.verdict(), ")");
  return line;
}

std::string FormatElapsed(const google::protobuf::Duration& d) {
  const int64_t seconds = std::max<int64_t>(0, std::llround(absl::ToDoubleSeconds(FromProto(d))));
  if (seconds < 60) return absl::StrCat(seconds, "s");
  if (seconds < 3600) return absl::StrFormat("%dm%02ds", seconds / 60, seconds % 60);
  return absl::StrFormat("%dh%02dm", seconds / 3600, (seconds % 3600) / 60);
}

std::string RenderProgressLine(const v1::Test& test, const v1::TestProgress& progress) {
  const v1::Slo& slo = test.model().slo();
  // "45.30 ms" or, with the SLO's limit, "45.30/250 ms".
  const auto against = [](double ms, const google::protobuf::Duration& limit) {
    return IsSet(limit) ? absl::StrCat(FormatMs(ms), "/", FormatMs(Millis(limit)), " ms")
                        : absl::StrCat(FormatMs(ms), " ms");
  };
  std::vector<std::string> parts;
  if (progress.windows_size() == 0) {
    parts.push_back("waiting for the first window");
  } else {
    const v1::StepWindow& w = progress.windows(progress.windows_size() - 1);
    parts.push_back(absl::StrCat("achieved ", FormatQps(w.achieved_qps()), " qps"));
    parts.push_back(absl::StrCat("p50 ", against(w.latency().p50_ms(), slo.p50_latency())));
    parts.push_back(absl::StrCat("p99 ", against(w.latency().p99_ms(), slo.p99_latency())));
  }
  if (progress.step_scheduled() > 0) {
    std::string errors = absl::StrCat(
        "errors ",
        FormatPercent(static_cast<double>(progress.step_errors()) / progress.step_scheduled()),
        "%");
    if (slo.max_error_rate() > 0)
      absl::StrAppend(&errors, "/", FormatPercent(slo.max_error_rate()), "%");
    parts.push_back(std::move(errors));
  }
  const bool settling =
      progress.windows_size() > 0 && progress.windows(progress.windows_size() - 1).warmup();
  if (settling) {
    parts.push_back("settling");
  } else if (progress.health_state() != v1::HEALTH_STATE_UNSPECIFIED) {
    parts.push_back(HealthName(progress.health_state()));
  }
  parts.push_back(absl::StrCat(FormatElapsed(progress.elapsed()), " elapsed"));
  // Settling until steady can outlast the step's plan: then only a lower bound is known.
  const bool past_plan = FromProto(progress.step_remaining()) < absl::Seconds(1);
  std::string left = past_plan
                         ? "step past its plan"
                         : absl::StrCat(FormatElapsed(progress.step_remaining()), "+ left in step");
  if (progress.has_test_remaining()) {
    absl::StrAppend(&left, ", ~", FormatElapsed(progress.test_remaining()), past_plan ? "+" : "",
                    " in test");
  }
  parts.push_back(std::move(left));
  return absl::StrCat("step ", progress.step_index(), " at ", FormatQps(progress.offered_qps()),
                      " qps: ", absl::StrJoin(parts, ", "));
}

std::string RenderStateLine(const v1::Test& test) {
  std::string line = absl::StrCat("test ", test.id(), ": ", TestStateName(test.state()));
  std::vector<std::string> details;
  if (test.attempt() > 0) details.push_back(absl::StrCat("attempt ", test.attempt()));
  if (!test.lease_owner().empty() && !IsTerminal(test.state())) {
    details.push_back(absl::StrCat("worker ", test.lease_owner()));
  }
  if (test.cancel_requested() && !IsTerminal(test.state())) {
    details.push_back("cancel requested");
  }
  if (test.state() == v1::TEST_STATE_QUEUED && !test.requeue_reason().empty()) {
    details.push_back(absl::StrCat("requeued: ", test.requeue_reason()));
  }
  if (!test.error().empty()) details.push_back(test.error());
  if (!details.empty()) absl::StrAppend(&line, " (", absl::StrJoin(details, ", "), ")");
  return line;
}

}  // namespace vanguard::cli
