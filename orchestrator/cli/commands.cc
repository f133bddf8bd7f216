// The `vanguard` commands; see commands.h. Called from main()'s thread only.
#include "orchestrator/cli/commands.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "orchestrator/cli/command_table.h"
#include "orchestrator/cli/compare_command.h"
#include "orchestrator/cli/gates.h"
#include "orchestrator/cli/render.h"
#include "orchestrator/cli/usage.h"

namespace vanguard::cli {
namespace {

bool IsTransient(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::string CodeName(const grpc::Status& status) {
  return absl::StatusCodeToString(FromGrpcStatus(status).code());
}

// Erases the terminal line the cursor is on.
constexpr char kEraseLine[] = "\r\x1b[K";

// What the SIGINT handler touches (lock-free atomics: async-signal-safe): the flag it
// raises, and the write end of the pipe that wakes InterruptWatch's thread (-1: none).
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_interrupt_pipe{-1};

extern "C" void OnInterrupt(int) {
  g_interrupted.store(true);
  const int fd = g_interrupt_pipe.load();
  if (fd < 0) return;
  const int saved = errno;
  const char byte = 'i';
  (void)!write(fd, &byte, 1);  // async-signal-safe; a full pipe already says it
  errno = saved;
}

// Ctrl-C while a test is followed stops the following, not the tool: installed for the
// duration of a follow, SIGINT then only raises a flag and writes to a pipe, and a helper
// thread cancels the stream being read (a blocked Read cannot be woken otherwise). The
// previous handler comes back on destruction. One at a time (the tool follows one test);
// the follow loop's thread and the helper thread share it.
class InterruptWatch {
 public:
  InterruptWatch() {
    g_interrupted.store(false);
    if (pipe(fds_) != 0) {
      fds_[0] = fds_[1] = -1;
      return;  // no pipe, no handler: Ctrl-C ends the tool as it did before
    }
    fcntl(fds_[1], F_SETFL, O_NONBLOCK);
    g_interrupt_pipe.store(fds_[1]);
    struct sigaction action = {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    installed_ = sigaction(SIGINT, &action, &previous_) == 0;
    thread_ = std::thread([this] { Listen(); });
  }

  ~InterruptWatch() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
    g_interrupt_pipe.store(-1);
    if (thread_.joinable()) {
      const char quit = 'q';
      (void)!write(fds_[1], &quit, 1);
      thread_.join();
    }
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  bool interrupted() const { return g_interrupted.load(); }

  // The stream a Ctrl-C cancels (nullptr: none); cancelled at once if Ctrl-C came already.
  void Cancels(grpc::ClientContext* context) {
    absl::MutexLock lock(&mu_);
    context_ = context;
    if (context_ != nullptr && g_interrupted.load()) context_->TryCancel();
  }

 private:
  void Listen() {
    char byte;
    while (true) {
      const ssize_t n = read(fds_[0], &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 'q') return;
      absl::MutexLock lock(&mu_);
      if (context_ != nullptr) context_->TryCancel();
    }
  }

  int fds_[2] = {-1, -1};
  bool installed_ = false;
  struct sigaction previous_ = {};
  absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace

CommandRunner::CommandRunner(v1::Orchestrator::StubInterface& stub, const GlobalOptions& global,
                             std::ostream& out, std::ostream& err, Clock& clock)
    : stub_(stub), global_(global), out_(out), err_(err), clock_(clock) {}

std::unique_ptr<grpc::ClientContext> CommandRunner::NewContext(bool with_deadline) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (with_deadline) {
    // gRPC deadlines are wall-clock instants; the injected clock only paces polling.
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(global_.rpc_timeout));
  }
  if (!global_.bearer_token.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", global_.bearer_token));
  }
  return context;
}

int CommandRunner::RpcFailed(absl::string_view rpc, const grpc::Status& status) {
  return RpcFailed(rpc, FromGrpcStatus(status));
}

int CommandRunner::RpcFailed(absl::string_view rpc, const absl::Status& status) {
  err_ << "error: " << absl::StatusCodeToString(status.code()) << ": " << status.message();
  if (status.code() == absl::StatusCode::kUnavailable) {
    err_ << " (" << rpc << " to orchestrator " << global_.orchestrator
         << "; set --orchestrator or VANGUARD_ORCHESTRATOR)";
  }
  err_ << "\n";
  return kExitRpcError;
}

void CommandRunner::Print(const google::protobuf::Message& message,
                          const std::function<std::string()>& table,
                          const std::function<std::string()>& csv) {
  switch (global_.output) {
    case OutputFormat::kJson:
      out_ << RenderJson(message);
      return;
    case OutputFormat::kYaml:
      out_ << RenderYaml(message);
      return;
    case OutputFormat::kCsv:
      // The table entry offers csv only where a csv renderer is passed.
      out_ << (csv ? csv() : table());
      return;
    case OutputFormat::kTable:
      out_ << table();
      return;
  }
}

void CommandRunner::PrintTest(const v1::Test& test) {
  Print(
      test, [&] { return RenderTestTable(test); }, [&] { return RenderTestCsv(test); });
}

int CommandRunner::DeprecateModel(const v1::DeprecateModelRequest& request) {
  absl::StatusOr<v1::DeprecateModelResponse> response = Call(&Stub::DeprecateModel, request);
  if (!response.ok()) return RpcFailed("DeprecateModel", response.status());
  const v1::Model& model = response->model();
  Print(model,
        [&] { return absl::StrCat("Deprecated ", model.name(), "/", model.version(), "\n"); });
  return kExitOk;
}

int CommandRunner::CreateToken(const v1::CreateTokenRequest& request) {
  absl::StatusOr<v1::CreateTokenResponse> response = Call(&Stub::CreateToken, request);
  if (!response.ok()) return RpcFailed("CreateToken", response.status());
  if (global_.output != OutputFormat::kTable) {
    Print(*response, nullptr);  // the whole response (the table entry offers no csv)
    return kExitOk;
  }
  err_ << "created token " << response->token().name() << " (role "
       << RoleName(response->token().role()) << ", id " << response->token().id()
       << "); its secret is printed only now\n";
  out_ << response->secret() << "\n";
  return kExitOk;
}

int CommandRunner::RevokeToken(const v1::RevokeTokenRequest& request) {
  absl::StatusOr<v1::RevokeTokenResponse> response = Call(&Stub::RevokeToken, request);
  if (!response.ok()) return RpcFailed("RevokeToken", response.status());
  const v1::Token& token = response->token();
  Print(token,
        [&] { return absl::StrCat("Revoked token ", token.name(), " (id ", token.id(), ")\n"); });
  return kExitOk;
}

int CommandRunner::ListTokens(const v1::ListTokensRequest& request) {
  absl::StatusOr<v1::ListTokensResponse> response = Call(&Stub::ListTokens, request);
  if (!response.ok()) return RpcFailed("ListTokens", response.status());
  Print(
      *response, [&] { return RenderTokenListTable(*response); },
      [&] { return RenderTokenListCsv(*response); });
  return kExitOk;
}

int CommandRunner::RegisterModel(const v1::Model& model) {
  v1::RegisterModelRequest request;
  *request.mutable_model() = model;
  absl::StatusOr<v1::RegisterModelResponse> response = Call(&Stub::RegisterModel, request);
  if (!response.ok()) return RpcFailed("RegisterModel", response.status());
  const v1::Model& registered = response->model();
  Print(
      registered,
      [&] {
        return absl::StrCat("Registered ", registered.name(), "/", registered.version(), "\n",
                            RenderModelTable(registered));
      },
      [&] { return RenderModelCsv(registered); });
  return kExitOk;
}

int CommandRunner::GetModel(const v1::GetModelRequest& request) {
  absl::StatusOr<v1::GetModelResponse> response = Call(&Stub::GetModel, request);
  if (!response.ok()) return RpcFailed("GetModel", response.status());
  Print(
      response->model(), [&] { return RenderModelTable(response->model()); },
      [&] { return RenderModelCsv(response->model()); });
  return kExitOk;
}

int CommandRunner::ListModels(const v1::ListModelsRequest& request) {
  absl::StatusOr<v1::ListModelsResponse> response = Call(&Stub::ListModels, request);
  if (!response.ok()) return RpcFailed("ListModels", response.status());
  Print(
      *response, [&] { return RenderModelListTable(*response); },
      [&] { return RenderModelListCsv(*response); });
  return kExitOk;
}

int CommandRunner::Submit(const SubmitOptions& options) {
  v1::SubmitTestRequest request;
  *request.mutable_spec() = options.spec;
  request.set_request_id(options.request_id);
  absl::StatusOr<v1::SubmitTestResponse> response = Call(&Stub::SubmitTest, request);
  if (!response.ok()) return RpcFailed("SubmitTest", response.status());
  const v1::Test& test = response->test();
  v1::Test finished;
  int exit_code = kExitOk;
  switch (options.follow) {
    case FollowMode::kNone:
      PrintTest(test);
      return kExitOk;
    case FollowMode::kPoll:
      err_ << "submitted test " << test.id() << "; waiting for it to finish\n";
      exit_code = PollUntilDone(test, &finished);
      break;
    case FollowMode::kStream:
      err_ << "submitted test " << test.id() << "\n";
      exit_code = StreamUntilDone(test.id(), &finished);
      break;
  }
  if (exit_code == kExitRpcError || exit_code == kExitInterrupted || !options.gates.Any()) {
    return exit_code;
  }
  return JudgeGates(finished, options.gates, exit_code);
}

absl::StatusOr<std::optional<v1::Test>> CommandRunner::FindBaseline(const v1::Test& finished) {
  const std::string model = TestModelName(finished);
  const std::string version = TestModelVersion(finished);
  if (!version.empty()) {
    ASSIGN_OR_RETURN(std::optional<v1::Test> same_version,
                     LatestSucceededTest(*this, model, version, finished.id()));
    if (same_version.has_value()) return same_version;
  }
  return LatestSucceededTest(*this, model, "", finished.id());
}

int CommandRunner::JudgeGates(const v1::Test& finished, const GateOptions& gates, int exit_code) {
  bool passed = true;
  if (gates.fail_below_qps.has_value()) {
    const GateVerdict verdict = JudgeFailBelow(finished, *gates.fail_below_qps);
    err_ << verdict.line << "\n";
    passed &= verdict.passed;
  }
  if (gates.fail_if_regressed_pct.has_value()) {
    absl::StatusOr<std::optional<v1::Test>> baseline = std::optional<v1::Test>();
    if (finished.state() == v1::TEST_STATE_SUCCEEDED) baseline = FindBaseline(finished);
    if (!baseline.ok()) return RpcFailed("ListTests", baseline.status());
    const GateVerdict verdict = JudgeRegression(finished, *baseline, *gates.fail_if_regressed_pct);
    err_ << verdict.line << "\n";
    passed &= verdict.passed;
  }
  return passed ? exit_code : kExitGateFailed;
}

int CommandRunner::GetTest(int64_t id) {
  v1::GetTestRequest request;
  request.set_id(id);
  absl::StatusOr<v1::GetTestResponse> response = Call(&Stub::GetTest, request);
  if (!response.ok()) return RpcFailed("GetTest", response.status());
  PrintTest(response->test());
  return kExitOk;
}

int CommandRunner::ListTests(const v1::ListTestsRequest& request) {
  absl::StatusOr<v1::ListTestsResponse> response = Call(&Stub::ListTests, request);
  if (!response.ok()) return RpcFailed("ListTests", response.status());
  Print(
      *response, [&] { return RenderTestListTable(*response); },
      [&] { return RenderTestListCsv(*response); });
  return kExitOk;
}

int CommandRunner::CancelTest(int64_t id) {
  v1::CancelTestRequest request;
  request.set_id(id);
  absl::StatusOr<v1::CancelTestResponse> response = Call(&Stub::CancelTest, request);
  if (!response.ok()) return RpcFailed("CancelTest", response.status());
  PrintTest(response->test());
  return kExitOk;
}

int CommandRunner::WatchTest(int64_t id) { return StreamUntilDone(id); }

void CommandRunner::ReportProgress(const v1::Test& test, FollowProgress& progress,
                                   std::ostream& to) {
  // Steps first: a test that just ended reports its last step before its final state.
  for (const v1::Step& step : test.steps()) {
    const std::pair<int32_t, int32_t> key(step.attempt(), step.index());
    if (std::find(progress.reported_steps.begin(), progress.reported_steps.end(), key) !=
        progress.reported_steps.end()) {
      continue;
    }
    progress.reported_steps.push_back(key);
    EndLive(progress, to);
    to << RenderStepProgress(step) << "\n";
  }
  if (test.state() != progress.state || test.attempt() != progress.attempt ||
      test.cancel_requested() != progress.cancel_requested) {
    progress.state = test.state();
    progress.attempt = test.attempt();
    progress.cancel_requested = test.cancel_requested();
    EndLive(progress, to);
    to << RenderStateLine(test) << "\n";
  }
  to.flush();
}

void CommandRunner::ShowLive(const v1::Test& test, const v1::TestProgress& live,
                             FollowProgress& progress, std::ostream& to, bool terminal) {
  // Polling sees the same report several times; show each once.
  if (live.update_time().seconds() == progress.live_shown.seconds() &&
      live.update_time().nanos() == progress.live_shown.nanos()) {
    return;
  }
  progress.live_shown = live.update_time();
  if (terminal) {
    // A line longer than the terminal wraps, and erasing it would leave the wrapped part.
    std::string line = RenderProgressLine(test, live);
    if (global_.terminal_columns > 1 &&
        line.size() >= static_cast<size_t>(global_.terminal_columns)) {
      line.resize(global_.terminal_columns - 1);
    }
    to << kEraseLine << line;
    progress.live_open = true;
  } else {
    to << RenderProgressLine(test, live) << "\n";
  }
  to.flush();
}

void CommandRunner::EndLive(FollowProgress& progress, std::ostream& to) {
  if (!progress.live_open) return;
  to << kEraseLine;
  progress.live_open = false;
}

int CommandRunner::StoppedFollowing(int64_t id, FollowProgress& progress, std::ostream& to) {
  EndLive(progress, to);
  to.flush();
  err_ << "stopped watching test " << id << "; it goes on running. To cancel it: vanguard cancel "
       << id << "\n";
  return kExitInterrupted;
}

int CommandRunner::ExitCodeFor(const v1::Test& finished) const {
  return finished.state() == v1::TEST_STATE_SUCCEEDED ? kExitOk : kExitTestNotSucceeded;
}

int CommandRunner::PollUntilDone(v1::Test test, v1::Test* finished) {
  FollowProgress progress;
  InterruptWatch interrupt;
  int consecutive_failures = 0;
  ReportProgress(test, progress, err_);
  while (!IsTerminal(test.state())) {
    clock_.SleepFor(kFollowPollInterval);
    if (interrupt.interrupted()) return StoppedFollowing(test.id(), progress, err_);
    v1::GetTestRequest request;
    request.set_id(test.id());
    request.set_skip_windows(true);  // polled twice a second: the steps alone
    v1::GetTestResponse response;
    grpc::Status status = stub_.GetTest(NewContext(true).get(), request, &response);
    if (interrupt.interrupted()) return StoppedFollowing(test.id(), progress, err_);
    if (!status.ok()) {
      if (IsTransient(status) && ++consecutive_failures < kMaxConsecutiveFollowFailures) {
        err_ << "warning: GetTest failed (" << CodeName(status) << ": " << status.error_message()
             << "); retrying\n";
        continue;
      }
      return RpcFailed("GetTest", status);
    }
    consecutive_failures = 0;
    test = response.test();
    ReportProgress(test, progress, err_);
    if (response.has_progress()) {
      ShowLive(test, response.progress(), progress, err_, global_.stderr_is_terminal);
    }
  }
  EndLive(progress, err_);
  PrintTest(test);
  if (finished != nullptr) *finished = test;
  return ExitCodeFor(test);
}

int CommandRunner::StreamUntilDone(int64_t id, v1::Test* finished) {
  FollowProgress progress;
  InterruptWatch interrupt;
  int consecutive_failures = 0;
  v1::Test last;
  bool have_last = false;
  // The live line goes with the table output; json and yaml stay one object per change.
  const bool live = global_.output == OutputFormat::kTable;
  while (true) {
    v1::WatchTestRequest request;
    request.set_id(id);
    request.set_progress(live);
    std::unique_ptr<grpc::ClientContext> context = NewContext(false);
    interrupt.Cancels(context.get());
    std::unique_ptr<grpc::ClientReaderInterface<v1::WatchTestResponse>> reader =
        stub_.WatchTest(context.get(), request);
    v1::WatchTestResponse update;
    while (!interrupt.interrupted() && reader->Read(&update)) {
      consecutive_failures = 0;
      last = update.test();
      have_last = true;
      if (global_.output == OutputFormat::kJson) {
        out_ << RenderJsonLine(last);
        out_.flush();
      } else if (global_.output == OutputFormat::kYaml) {
        out_ << "---\n" << RenderYaml(last);
        out_.flush();
      } else {
        ReportProgress(last, progress, out_);
        if (live && update.has_progress()) {
          ShowLive(last, update.progress(), progress, out_, global_.stdout_is_terminal);
        }
      }
      if (IsTerminal(last.state())) break;
    }
    interrupt.Cancels(nullptr);  // the context ends with this pass of the loop
    if (interrupt.interrupted()) {
      context->TryCancel();
      reader->Finish();
      return StoppedFollowing(id, progress, out_);
    }
    if (have_last && IsTerminal(last.state())) {
      context->TryCancel();  // the server may keep the stream open; we are done with it
      reader->Finish();
      break;
    }
    grpc::Status status = reader->Finish();
    if (status.ok()) {
      err_ << "error: the orchestrator ended the watch of test " << id
           << " before the test finished\n";
      return kExitRpcError;
    }
    if (IsTransient(status) && ++consecutive_failures < kMaxConsecutiveFollowFailures) {
      err_ << "warning: WatchTest failed (" << CodeName(status) << ": " << status.error_message()
           << "); reconnecting\n";
      clock_.SleepFor(kFollowPollInterval);
      continue;
    }
    return RpcFailed("WatchTest", status);
  }
  EndLive(progress, out_);
  if (global_.output == OutputFormat::kTable) out_ << "\n" << RenderTestTable(last);
  if (finished != nullptr) *finished = last;
  return ExitCodeFor(last);
}

int RunCli(const std::vector<std::string>& argv, const Environment& env,
           const StubFactory& make_stub, std::ostream& out, std::ostream& err, Clock& clock) {
  absl::StatusOr<CommandLine> line = SplitArgv(argv);
  if (!line.ok()) {
    err << "error: " << line.status().message() << "\n"
        << "Run 'vanguard --help' for usage.\n";
    return kExitUsage;
  }
  absl::StatusOr<CommandWords> command = IdentifyCommand(line->words);
  if (line->help_requested) {
    out << (command.ok() ? CommandHelp(*command->spec) : UsageText());
    return kExitOk;
  }
  if (!command.ok()) {
    err << UsageText() << "\nerror: " << command.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<ParsedCommand> parsed = ParseCommand(*command, line->flags, env);
  if (!parsed.ok()) {
    err << "error: " << parsed.status().message() << "\n"
        << "Run 'vanguard " << command->name << " --help' for its flags.\n";
    return kExitUsage;
  }
  if (parsed->spec->run_offline) return parsed->spec->run_offline(out, parsed->options);
  std::unique_ptr<v1::Orchestrator::StubInterface> stub = make_stub(parsed->global);
  CommandRunner runner(*stub, parsed->global, out, err, clock);
  return parsed->spec->run(runner, parsed->options);
}

}  // namespace vanguard::cli
