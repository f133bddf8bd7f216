// `vanguard report ID [ID2] [-o report.html]`: fetches each test (GetTest) and the model
// version it ran against (GetModel; a model no longer registered is left out), renders the
// page of report_html.h, writes it and prints its path.
//
// The file is written only where a regular file or nothing is: a directory, a link, a FIFO or
// a device at the path is refused, never followed or overwritten.
//
// Called from main()'s thread only.
#ifndef VANGUARD_ORCHESTRATOR_CLI_REPORT_COMMAND_H_
#define VANGUARD_ORCHESTRATOR_CLI_REPORT_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "orchestrator/cli/command_table.h"

namespace vanguard::cli {

struct ReportCommandOptions {
  std::vector<int64_t> ids;  // one, or two side by side
  std::string path;          // -o; empty: DefaultReportPath(ids)
  int window_step = -1;      // --window_step; -1: the best passing step
};

// "report-12.html", or "report-12-15.html" for two tests.
std::string DefaultReportPath(const std::vector<int64_t>& ids);

// Writes `contents` to `path`, creating it (mode 0644 less the umask) or replacing a regular
// file. FAILED_PRECONDITION when something other than a regular file is at `path`; other
// errors name the path and the system's reason.
absl::Status WriteReportFile(const std::string& path, const std::string& contents);

// The table entry.
CommandSpec ReportCommand();

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_REPORT_COMMAND_H_
