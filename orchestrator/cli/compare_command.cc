// `vanguard compare`; see compare_command.h.
#include "orchestrator/cli/compare_command.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "orchestrator/cli/compare.h"
#include "orchestrator/cli/formats.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

absl::StatusOr<CompareOptions> ParseCompare(const CommandInput& in) {
  CompareOptions options;
  const bool by_version = in.flags.Has("model") || in.flags.Has("versions");
  if (!in.command.args.empty()) {
    if (by_version) {
      return absl::InvalidArgumentError(
          "'compare' takes two test IDs or --model and --versions, not both");
    }
    RETURN_IF_ERROR(ExpectArgs(in.command, 2, "two test IDs (vanguard compare 12 15)"));
    for (const std::string& arg : in.command.args) {
      ASSIGN_OR_RETURN(int64_t id, ParseTestId(arg));
      options.ids.push_back(id);
    }
    return options;
  }
  if (!by_version) {
    return absl::InvalidArgumentError(
        "'compare' needs two test IDs (vanguard compare 12 15) or --model=M --versions=V1,V2");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> model, in.flags.NonEmptyText("model"));
  if (!model.has_value()) return FlagError("model", "is required with --versions");
  const std::optional<std::string> versions = in.flags.Text("versions");
  if (!versions.has_value()) {
    return FlagError("versions", "is required with --model (e.g. --versions=v1,v2)");
  }
  ASSIGN_OR_RETURN(options.versions, SplitList("versions", *versions));
  if (options.versions.size() != 2) {
    return BadValue("versions", *versions, "must name two versions, A then B");
  }
  options.model = *model;
  return options;
}

// The two tests with their steps, A first; on failure prints the error and returns nullopt.
std::optional<std::vector<v1::Test>> FetchTests(CommandRunner& runner,
                                                const CompareOptions& options) {
  std::vector<int64_t> ids = options.ids;
  for (const std::string& version : options.versions) {
    absl::StatusOr<std::optional<v1::Test>> found =
        LatestSucceededTest(runner, options.model, version);
    if (found.ok() && !found->has_value()) {
      found = absl::NotFoundError(absl::StrCat("no succeeded test of ", options.model, "/", version,
                                               " among the model's ", kSucceededTestsSearched,
                                               " newest succeeded tests"));
    }
    if (!found.ok()) {
      runner.RpcFailed("ListTests", found.status());
      return std::nullopt;
    }
    ids.push_back((*found)->id());
  }
  std::vector<v1::Test> tests;
  for (int64_t id : ids) {
    v1::GetTestRequest request;
    request.set_id(id);
    absl::StatusOr<v1::GetTestResponse> response =
        runner.Call(&CommandRunner::Stub::GetTest, request);
    if (!response.ok()) {
      runner.RpcFailed("GetTest", response.status());
      return std::nullopt;
    }
    tests.push_back(response->test());
  }
  return tests;
}

std::string CapacityText(const CapacityInterval& interval) {
  return absl::StrCat(interval.at_least ? "at least " : "", FormatQps(interval.estimate), " qps");
}

std::string IntervalText(const CapacityInterval& interval) {
  if (!interval.stated) return "none stated";
  if (std::isinf(interval.high)) return absl::StrCat(FormatQps(interval.low), " qps and up");
  return absl::StrCat(FormatQps(interval.low), " to ", FormatQps(interval.high), " qps");
}

std::string LatencyText(const std::optional<LatencyAtRate>& latency) {
  if (!latency.has_value()) return "Latency: the two tests measured no offered rate in common.\n";
  std::string out = absl::StrCat("Latency at ", FormatQps(latency->rate_qps),
                                 " qps, the highest offered rate both tests measured:\n");
  for (const auto& [name, estimate] : {std::pair{"A", &latency->a}, std::pair{"B", &latency->b}}) {
    if (!estimate->Interpolated()) continue;
    absl::StrAppend(&out, "  ", name, " is interpolated between its steps at ",
                    FormatQps(estimate->below_qps), " and ", FormatQps(estimate->above_qps),
                    " qps\n");
  }
  TextTable table({{"", Align::kLeft}, {"A", Align::kRight}, {"B", Align::kRight}});
  table.AddRow({"p50 ms", FormatMs(latency->a.p50_ms), FormatMs(latency->b.p50_ms)});
  table.AddRow({"p90 ms", FormatMs(latency->a.p90_ms), FormatMs(latency->b.p90_ms)});
  table.AddRow({"p99 ms", FormatMs(latency->a.p99_ms), FormatMs(latency->b.p99_ms)});
  table.AddRow({"max ms", FormatMs(latency->a.max_ms), FormatMs(latency->b.max_ms)});
  return out + table.Render();
}

std::string ComparisonTable(const v1::Test& a, const v1::Test& b,
                            const CapacityComparison& capacity,
                            const std::optional<LatencyAtRate>& latency) {
  TextTable table({{"", Align::kLeft}, {"A", Align::kLeft}, {"B", Align::kLeft}});
  table.AddRow({"test", absl::StrCat(a.id()), absl::StrCat(b.id())});
  table.AddRow({"model", TestModelRef(a), TestModelRef(b)});
  table.AddRow({"state", TestStateName(a.state()), TestStateName(b.state())});
  table.AddRow({"capacity", CapacityText(capacity.a), CapacityText(capacity.b)});
  table.AddRow({"confidence interval", IntervalText(capacity.a), IntervalText(capacity.b)});
  return absl::StrCat(table.Render(), "\n", LatencyText(latency), "\nVerdict: ", capacity.verdict,
                      "\n");
}

nlohmann::ordered_json SideJson(const v1::Test& test, const CapacityInterval& interval) {
  return {{"id", absl::StrCat(test.id())},
          {"model", TestModelName(test)},
          {"version", TestModelVersion(test)},
          {"state", v1::TestState_Name(test.state())},
          {"max_sustainable_qps", interval.estimate},
          {"at_least", interval.at_least},
          {"confidence_low_qps", interval.stated ? nlohmann::ordered_json(interval.low) : nullptr},
          {"confidence_high_qps", interval.stated && !std::isinf(interval.high)
                                      ? nlohmann::ordered_json(interval.high)
                                      : nullptr}};
}

nlohmann::ordered_json LatencyJson(const LatencyEstimate& estimate) {
  return {{"p50_ms", estimate.p50_ms},
          {"p90_ms", estimate.p90_ms},
          {"p99_ms", estimate.p99_ms},
          {"max_ms", estimate.max_ms},
          {"interpolated", estimate.Interpolated()},
          {"between_qps", {estimate.below_qps, estimate.above_qps}}};
}

// The object --output=json and --output=yaml print.
nlohmann::ordered_json ComparisonJson(const v1::Test& a, const v1::Test& b,
                                      const CapacityComparison& capacity,
                                      const std::optional<LatencyAtRate>& latency) {
  nlohmann::ordered_json json = {
      {"a", SideJson(a, capacity.a)},
      {"b", SideJson(b, capacity.b)},
      {"capacity_change_pct",
       capacity.change_pct.has_value() ? nlohmann::ordered_json(*capacity.change_pct) : nullptr},
      {"beyond_confidence_intervals", capacity.beyond_intervals},
      {"verdict", capacity.verdict},
      {"latency_at_rate", nullptr}};
  if (latency.has_value()) {
    json["latency_at_rate"] = {{"rate_qps", latency->rate_qps},
                               {"a", LatencyJson(latency->a)},
                               {"b", LatencyJson(latency->b)}};
  }
  return json;
}

int RunCompare(CommandRunner& runner, const CompareOptions& options) {
  std::optional<std::vector<v1::Test>> tests = FetchTests(runner, options);
  if (!tests.has_value()) return kExitRpcError;
  const v1::Test& a = (*tests)[0];
  const v1::Test& b = (*tests)[1];
  for (const v1::Test* test : {&a, &b}) {
    if (test->has_result()) continue;
    runner.err() << "error: test " << test->id() << " has no result ("
                 << TestStateName(test->state()) << "); nothing to compare\n";
    return kExitTestNotSucceeded;
  }
  const CapacityComparison capacity = CompareCapacity(a.result(), b.result());
  const std::optional<LatencyAtRate> latency = LatencyAtCommonRate(a, b);
  switch (runner.global().output) {
    case OutputFormat::kJson:
      runner.out() << ComparisonJson(a, b, capacity, latency).dump(2) << "\n";
      break;
    case OutputFormat::kYaml:
      runner.out() << JsonToYaml(ComparisonJson(a, b, capacity, latency));
      break;
    default:
      runner.out() << ComparisonTable(a, b, capacity, latency);
  }
  return kExitOk;
}

}  // namespace

absl::StatusOr<std::optional<v1::Test>> LatestSucceededTest(const CommandRunner& runner,
                                                            const std::string& model,
                                                            const std::string& version,
                                                            int64_t before_id) {
  v1::ListTestsRequest request;
  request.set_state(v1::TEST_STATE_SUCCEEDED);
  request.set_model(model);
  request.set_page_size(kSucceededTestsSearched);
  ASSIGN_OR_RETURN(v1::ListTestsResponse response,
                   runner.Call(&CommandRunner::Stub::ListTests, request));
  for (const v1::Test& test : response.tests()) {  // newest first
    if (before_id > 0 && test.id() >= before_id) continue;
    if (!version.empty() && TestModelVersion(test) != version) continue;
    return std::optional<v1::Test>(test);
  }
  return std::optional<v1::Test>();
}

CommandSpec CompareCommand() {
  return Command<CompareOptions>(
      {.words = {"compare"},
       .args = "A B",
       .summary = "Compare two tests: capacity with its confidence interval, latency at the "
                  "highest rate both measured, and whether B differs from A beyond the noise.",
       .details = "Give two test IDs, or --model with --versions=V1,V2 for the latest succeeded "
                  "test of each version (among the model's 1000 newest succeeded tests). Where a "
                  "test has no step at the common rate its latency is interpolated linearly "
                  "between the steps around it, and the output says so.",
       .flags = {{.name = "model",
                  .value = "N",
                  .help = "With --versions: the model whose versions to compare."},
                 {.name = "versions",
                  .value = "V1,V2",
                  .help = "With --model: the two versions, A (the reference) then B."}},
       .parse = ParseCompare,
       .run = RunCompare});
}

}  // namespace vanguard::cli
