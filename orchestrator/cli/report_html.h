// The `vanguard report` page: one self-contained HTML document (inline SVG and CSS, no
// scripts, nothing fetched) that shows how a test's search went and what it found.
//
//   ReportSubject subject{.test = test, .model = model};   // test as GetTest returns it
//   absl::StatusOr<std::string> html = RenderReportHtml({subject}, {.build = "0.4.1"});
//
// Panels, each a <section class="panel" id="...">: search, latency, throughput, windows,
// distribution, streaming (only when steps carry streaming figures) and reproduce. Every
// plotted mark carries data-* attributes, so a DOM check can count it. Two subjects are put
// side by side, one column each. All text taken from a test or model is HTML-escaped.
//
// Called by the `vanguard` tool on its main thread; a pure function of its input, so any
// thread may call it.
#ifndef VANGUARD_ORCHESTRATOR_CLI_REPORT_HTML_H_
#define VANGUARD_ORCHESTRATOR_CLI_REPORT_HTML_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

struct ReportSubject {
  v1::Test test;    // as returned by GetTest (steps with windows and latency_histogram)
  v1::Model model;  // may be empty (the name then comes from the test's spec)
};

struct ReportOptions {
  std::string build;           // the vanguard build/version string; may be empty
  int window_step_index = -1;  // step whose windows are plotted; -1: the best passing step
};

// The page for one test, or two side by side when subjects.size() == 2. A test with no
// steps (queued, or failed before its first step) renders a page saying "no steps yet".
// INVALID_ARGUMENT for 0 or more than 2 subjects, or a window_step_index that names no step
// of a test that has steps.
absl::StatusOr<std::string> RenderReportHtml(const std::vector<ReportSubject>& subjects,
                                             const ReportOptions& options);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_REPORT_HTML_H_
