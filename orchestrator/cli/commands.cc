// The `vanguard` commands; see commands.h. Called from main()'s thread only.
#include "orchestrator/cli/commands.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
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
  if (exit_code == kExitRpcError || !options.gates.Any()) return exit_code;
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
    to << RenderStepProgress(step) << "\n";
  }
  if (test.state() != progress.state || test.attempt() != progress.attempt ||
      test.cancel_requested() != progress.cancel_requested) {
    progress.state = test.state();
    progress.attempt = test.attempt();
    progress.cancel_requested = test.cancel_requested();
    to << RenderStateLine(test) << "\n";
  }
  to.flush();
}

int CommandRunner::ExitCodeFor(const v1::Test& finished) const {
  return finished.state() == v1::TEST_STATE_SUCCEEDED ? kExitOk : kExitTestNotSucceeded;
}

int CommandRunner::PollUntilDone(v1::Test test, v1::Test* finished) {
  FollowProgress progress;
  int consecutive_failures = 0;
  ReportProgress(test, progress, err_);
  while (!IsTerminal(test.state())) {
    clock_.SleepFor(kFollowPollInterval);
    v1::GetTestRequest request;
    request.set_id(test.id());
    v1::GetTestResponse response;
    grpc::Status status = stub_.GetTest(NewContext(true).get(), request, &response);
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
  }
  PrintTest(test);
  if (finished != nullptr) *finished = test;
  return ExitCodeFor(test);
}

int CommandRunner::StreamUntilDone(int64_t id, v1::Test* finished) {
  FollowProgress progress;
  int consecutive_failures = 0;
  v1::Test last;
  bool have_last = false;
  while (true) {
    v1::WatchTestRequest request;
    request.set_id(id);
    std::unique_ptr<grpc::ClientContext> context = NewContext(false);
    std::unique_ptr<grpc::ClientReaderInterface<v1::WatchTestResponse>> reader =
        stub_.WatchTest(context.get(), request);
    v1::WatchTestResponse update;
    while (reader->Read(&update)) {
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
      }
      if (IsTerminal(last.state())) break;
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
