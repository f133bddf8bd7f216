#include "orchestrator/cli/report_html.h"

#include "absl/status/status.h"

namespace vanguard::cli {

absl::StatusOr<std::string> RenderReportHtml(const std::vector<ReportSubject>& subjects,
                                             const ReportOptions& options) {
  if (subjects.empty() || subjects.size() > 2) {
    return absl::InvalidArgumentError("report: subjects must be 1 or 2 tests");
  }
  return absl::UnimplementedError("report: HTML rendering is not written yet");
}

}  // namespace vanguard::cli
