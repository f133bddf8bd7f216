// How the `vanguard` tool prints what the orchestrator returns: as protobuf's JSON mapping
// (field names as in the .proto, every primitive field present), as YAML of that same JSON
// object, as CSV rows, or as human-readable tables.
//
//   std::cout << RenderJson(test);        // {"id": "7", "state": "TEST_STATE_SUCCEEDED", ...}
//   std::cout << RenderTestTable(test);   // header, one row per step, the result line
//   std::cerr << RenderStepProgress(step) << "\n";
//
// Pure functions of their input; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_RENDER_H_
#define VANGUARD_ORCHESTRATOR_CLI_RENDER_H_

#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/message.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

// Pretty-printed JSON (snake_case names, primitives always printed), ending in a newline.
std::string RenderJson(const google::protobuf::Message& message);
// The same mapping on one line, ending in a newline: one object per line for streams.
std::string RenderJsonLine(const google::protobuf::Message& message);
// The object RenderJson prints, as a YAML document (formats.h), ending in a newline.
std::string RenderYaml(const google::protobuf::Message& message);

// CSV with a header row: one row per step of a test (attempt, index, rates, latency
// percentiles, error rate, health, pass/fail, verdict); one row per test of a list; one row per
// model version; one row per token. Numbers are unformatted (CsvNumber), times RFC 3339 UTC.
std::string RenderTestCsv(const v1::Test& test);
std::string RenderTestListCsv(const v1::ListTestsResponse& list);
std::string RenderModelCsv(const v1::Model& model);
std::string RenderModelListCsv(const v1::ListModelsResponse& list);
std::string RenderTokenListCsv(const v1::ListTokensResponse& list);

// A test: id, model/version, state, attempt, strategy, times; the steps table (index,
// target and achieved qps, p50/p99/max ms, error %, health, pass/fail, verdict); the steps'
// endpoints (RenderStepEndpoints) when any step ran over several; the result.
std::string RenderTestTable(const v1::Test& test);
// For every step over two or more endpoints, a row per endpoint (share, achieved qps, p99,
// errors and timeouts, peak in flight, the replica's scraped GPU utilisation and queue, "-"
// when not scraped), then a line per such step: its load imbalance and, when the replicas'
// gauges were scraped, the tail utilisation across them and their mean. Empty when no step
// ran over several endpoints.
std::string RenderStepEndpoints(const v1::Test& test);
// One row per test (the list carries no steps).
std::string RenderTestListTable(const v1::ListTestsResponse& list);
std::string RenderModelTable(const v1::Model& model);
std::string RenderModelListTable(const v1::ListModelsResponse& list);
// ID, name, role and whether it is revoked; never a secret.
std::string RenderTokenListTable(const v1::ListTokensResponse& list);

// One line for a finished step, e.g.
// "step 2: target 300.0 qps, achieved 251.3 qps, p99 180.20 ms, errors 2.10%, OVERLOADED, FAIL
//  (p99 180ms > 100ms)". No trailing newline.
std::string RenderStepProgress(const v1::Step& step);
// One line for the test's state, e.g. "test 7: RUNNING (attempt 1, worker w-1)".
std::string RenderStateLine(const v1::Test& test);
// The live line of the step in flight (vanguard watch, submit --wait), from the worker's
// latest progress and the test's SLO, e.g.
// "step 3 at 400.0 qps: achieved 398.2 qps, p50 12.10 ms, p99 45.30/250 ms, errors
//  0.10%/1.00%, WARN, 1m32s elapsed, 18s+ left in step, ~3m10s in test"
// Latency and achieved rate are the latest window's, errors the step's so far; the SLO
// limits follow a slash when the model sets them. While the step settles the health says
// "settling"; before its first window, "waiting for the first window". The step's time
// left is its plan's, a lower bound ("18s+"; "step past its plan" once settling outlasts
// it); the test's appears when the worker could estimate it. No trailing newline.
std::string RenderProgressLine(const v1::Test& test, const v1::TestProgress& progress);
// A duration as a person reads it on a live line: "42s", "1m32s", "2h05m".
std::string FormatElapsed(const google::protobuf::Duration& d);

// ROLE_SUBMITTER -> "submitter", as `tokens create --role` spells it.
std::string RoleName(v1::Role role);

// Pieces of the tables, for commands with tables of their own (compare).
std::string FormatQps(double qps);  // "200.0"
std::string FormatMs(double ms);    // "4.25", "120.5"
// The model a test runs against: the resolved version once known, else what was asked for
// ("resnet50/v3", "resnet50/latest").
std::string TestModelRef(const v1::Test& test);
// Its parts: the resolved model's name and version, else the spec's (the version may be "").
std::string TestModelName(const v1::Test& test);
std::string TestModelVersion(const v1::Test& test);

enum class Align { kLeft, kRight };

// A plain-text table: columns padded to their widest cell, separated by two spaces.
class TextTable {
 public:
  struct Column {
    std::string title;
    Align align;
  };
  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void AddRow(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
  }
  std::string Render() const;

 private:
  void AppendRow(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                 std::string* out) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "SUCCEEDED" for TEST_STATE_SUCCEEDED; "-" for unspecified.
std::string TestStateName(v1::TestState state);
bool IsTerminal(v1::TestState state);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_RENDER_H_
