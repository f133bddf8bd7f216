// `vanguard report`; see report_command.h.
#include "orchestrator/cli/report_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/render.h"
#include "orchestrator/cli/report_html.h"

namespace vanguard::cli {
namespace {

absl::Status SystemError(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat("cannot ", what, " '", path, "': ", strerror(errno)));
}

absl::Status NotRegular(const std::string& path) {
  return absl::FailedPreconditionError(
      absl::StrCat("'", path, "' exists and is not a regular file; not overwriting it"));
}

absl::StatusOr<ReportCommandOptions> ParseReport(const CommandInput& in) {
  ReportCommandOptions options;
  if (in.command.args.empty() || in.command.args.size() > 2) {
    return absl::InvalidArgumentError(
        in.command.args.empty()
            ? "'report' needs a test ID (vanguard report 12), or two side by side"
            : absl::StrCat("'report': unexpected argument '", in.command.args[2], "'"));
  }
  for (const std::string& arg : in.command.args) {
    ASSIGN_OR_RETURN(int64_t id, ParseTestId(arg));
    options.ids.push_back(id);
  }
  ASSIGN_OR_RETURN(std::optional<std::string> path, in.flags.NonEmptyText("o"));
  options.path = path.value_or(DefaultReportPath(options.ids));
  ASSIGN_OR_RETURN(std::optional<int64_t> step, in.flags.Integer("window_step", 0, 1 << 20));
  if (step.has_value()) options.window_step = static_cast<int>(*step);
  return options;
}

// The test and the model version it ran against; prints the error and returns nullopt when an
// RPC fails (GetModel's NOT_FOUND excepted: the report then has no registry entry).
std::optional<ReportSubject> FetchSubject(CommandRunner& runner, int64_t id) {
  v1::GetTestRequest get_test;
  get_test.set_id(id);
  absl::StatusOr<v1::GetTestResponse> test = runner.Call(&CommandRunner::Stub::GetTest, get_test);
  if (!test.ok()) {
    runner.RpcFailed("GetTest", test.status());
    return std::nullopt;
  }
  ReportSubject subject{.test = test->test()};
  v1::GetModelRequest get_model;
  get_model.set_name(TestModelName(subject.test));
  get_model.set_version(TestModelVersion(subject.test));
  absl::StatusOr<v1::GetModelResponse> model =
      runner.Call(&CommandRunner::Stub::GetModel, get_model);
  if (model.ok()) {
    subject.model = model->model();
  } else if (!absl::IsNotFound(model.status())) {
    runner.RpcFailed("GetModel", model.status());
    return std::nullopt;
  }
  return subject;
}

int RunReport(CommandRunner& runner, const ReportCommandOptions& options) {
  std::vector<ReportSubject> subjects;
  for (int64_t id : options.ids) {
    std::optional<ReportSubject> subject = FetchSubject(runner, id);
    if (!subject.has_value()) return kExitRpcError;
    subjects.push_back(std::move(*subject));
  }
  absl::StatusOr<std::string> html =
      RenderReportHtml(subjects, {.window_step_index = options.window_step});
  if (!html.ok()) {
    runner.err() << "error: " << html.status().message() << "\n";
    return absl::IsInvalidArgument(html.status()) ? kExitUsage : kExitRpcError;
  }
  if (absl::Status written = WriteReportFile(options.path, *html); !written.ok()) {
    runner.err() << "error: " << written.message() << "\n";
    return kExitRpcError;
  }
  runner.out() << options.path << "\n";
  return kExitOk;
}

}  // namespace

std::string DefaultReportPath(const std::vector<int64_t>& ids) {
  return absl::StrCat("report-", absl::StrJoin(ids, "-"), ".html");
}

absl::Status WriteReportFile(const std::string& path, const std::string& contents) {
  struct stat info;
  if (lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) return NotRegular(path);
  // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO put there since lstat is neither followed nor
  // waited on; fstat then checks what was opened.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return errno == ELOOP ? NotRegular(path) : SystemError("create", path);
  absl::Status status;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    status = NotRegular(path);
  } else if (ftruncate(fd, 0) != 0) {
    status = SystemError("truncate", path);
  }
  for (size_t written = 0; status.ok() && written < contents.size();) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) status = SystemError("write", path);
    if (n > 0) written += static_cast<size_t>(n);
  }
  if (close(fd) != 0 && status.ok()) status = SystemError("write", path);
  return status;
}

CommandSpec ReportCommand() {
  return Command<ReportCommandOptions>(
      {.words = {"report"},
       .args = "ID [ID2]",
       .summary = "Write a self-contained HTML report of a test (or of two side by side) and "
                  "print its path.",
       .details = "The page shows the search, latency and throughput against the offered "
                  "rate, per-window series of a step, latency distributions and what is needed "
                  "to reproduce the test; it fetches nothing when opened.",
       .flags = {{.name = "o",
                  .value = "FILE",
                  .help = "Where to write the page (default report-ID.html, or "
                          "report-ID-ID2.html); anything but a regular file there is refused.",
                  .file = true},
                 {.name = "window_step",
                  .value = "N",
                  .help = "The step whose per-window series are plotted (default: the best "
                          "passing step)."}},
       .outputs = {OutputFormat::kTable},
       .parse = ParseReport,
       .run = RunReport});
}

}  // namespace vanguard::cli
