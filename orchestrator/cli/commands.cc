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
#include "orchestrator/cli/command_table.h"
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
  err_ << "error: " << CodeName(status) << ": " << status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    err_ << " (" << rpc << " to orchestrator " << global_.orchestrator
         << "; set --orchestrator or VANGUARD_ORCHESTRATOR)";
  }
  err_ << "\n";
  return kExitRpcError;
}

void CommandRunner::PrintTest(const v1::Test& test) {
  out_ << (global_.output == OutputFormat::kJson ? RenderJson(test) : RenderTestTable(test));
}

namespace {

// ROLE_SUBMITTER -> "submitter", as `tokens create --role` spells it.
std::string RoleName(v1::Role role) {
  absl::string_view name = v1::Role_Name(role);
  absl::ConsumePrefix(&name, "ROLE_");
  return absl::AsciiStrToLower(name);
}

}  // namespace

int CommandRunner::DeprecateModel(const v1::DeprecateModelRequest& request) {
  v1::DeprecateModelResponse response;
  grpc::Status status = stub_.DeprecateModel(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("DeprecateModel", status);
  if (global_.output == OutputFormat::kJson) {
    out_ << RenderJson(response.model());
  } else {
    out_ << "Deprecated " << response.model().name() << "/" << response.model().version() << "\n";
  }
  return kExitOk;
}

int CommandRunner::CreateToken(const v1::CreateTokenRequest& request) {
  v1::CreateTokenResponse response;
  grpc::Status status = stub_.CreateToken(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("CreateToken", status);
  if (global_.output == OutputFormat::kJson) {
    out_ << RenderJson(response);
  } else {
    err_ << "created token " << response.token().name() << " (role "
         << RoleName(response.token().role()) << ", id " << response.token().id()
         << "); its secret is printed only now\n";
    out_ << response.secret() << "\n";
  }
  return kExitOk;
}

int CommandRunner::RevokeToken(const v1::RevokeTokenRequest& request) {
  v1::RevokeTokenResponse response;
  grpc::Status status = stub_.RevokeToken(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("RevokeToken", status);
  if (global_.output == OutputFormat::kJson) {
    out_ << RenderJson(response.token());
  } else {
    out_ << "Revoked token " << response.token().name() << " (id " << response.token().id()
         << ")\n";
  }
  return kExitOk;
}

int CommandRunner::ListTokens(const v1::ListTokensRequest& request) {
  v1::ListTokensResponse response;
  grpc::Status status = stub_.ListTokens(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("ListTokens", status);
  if (global_.output == OutputFormat::kJson) {
    out_ << RenderJson(response);
    return kExitOk;
  }
  out_ << absl::StrFormat("%-6s %-24s %-10s %s\n", "ID", "NAME", "ROLE", "STATE");
  for (const v1::Token& token : response.tokens()) {
    out_ << absl::StrFormat("%-6d %-24s %-10s %s\n", token.id(), token.name(),
                            RoleName(token.role()), token.has_revoke_time() ? "revoked" : "valid");
  }
  return kExitOk;
}

int CommandRunner::RegisterModel(const v1::Model& model) {
  v1::RegisterModelRequest request;
  *request.mutable_model() = model;
  v1::RegisterModelResponse response;
  grpc::Status status = stub_.RegisterModel(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("RegisterModel", status);
  if (global_.output == OutputFormat::kJson) {
    out_ << RenderJson(response.model());
  } else {
    out_ << "Registered " << response.model().name() << "/" << response.model().version() << "\n"
         << RenderModelTable(response.model());
  }
  return kExitOk;
}

int CommandRunner::GetModel(const v1::GetModelRequest& request) {
  v1::GetModelResponse response;
  grpc::Status status = stub_.GetModel(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("GetModel", status);
  out_ << (global_.output == OutputFormat::kJson ? RenderJson(response.model())
                                                 : RenderModelTable(response.model()));
  return kExitOk;
}

int CommandRunner::ListModels(const v1::ListModelsRequest& request) {
  v1::ListModelsResponse response;
  grpc::Status status = stub_.ListModels(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("ListModels", status);
  out_ << (global_.output == OutputFormat::kJson ? RenderJson(response)
                                                 : RenderModelListTable(response));
  return kExitOk;
}

int CommandRunner::Submit(const SubmitOptions& options) {
  v1::SubmitTestRequest request;
  *request.mutable_spec() = options.spec;
  request.set_request_id(options.request_id);
  v1::SubmitTestResponse response;
  grpc::Status status = stub_.SubmitTest(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("SubmitTest", status);
  const v1::Test& test = response.test();
  switch (options.follow) {
    case FollowMode::kNone:
      PrintTest(test);
      return kExitOk;
    case FollowMode::kPoll:
      err_ << "submitted test " << test.id() << "; waiting for it to finish\n";
      return PollUntilDone(test);
    case FollowMode::kStream:
      err_ << "submitted test " << test.id() << "\n";
      return StreamUntilDone(test.id());
  }
  return kExitOk;
}

int CommandRunner::GetTest(int64_t id) {
  v1::GetTestRequest request;
  request.set_id(id);
  v1::GetTestResponse response;
  grpc::Status status = stub_.GetTest(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("GetTest", status);
  PrintTest(response.test());
  return kExitOk;
}

int CommandRunner::ListTests(const v1::ListTestsRequest& request) {
  v1::ListTestsResponse response;
  grpc::Status status = stub_.ListTests(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("ListTests", status);
  out_ << (global_.output == OutputFormat::kJson ? RenderJson(response)
                                                 : RenderTestListTable(response));
  return kExitOk;
}

int CommandRunner::CancelTest(int64_t id) {
  v1::CancelTestRequest request;
  request.set_id(id);
  v1::CancelTestResponse response;
  grpc::Status status = stub_.CancelTest(NewContext(true).get(), request, &response);
  if (!status.ok()) return RpcFailed("CancelTest", status);
  PrintTest(response.test());
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

int CommandRunner::PollUntilDone(v1::Test test) {
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
  return ExitCodeFor(test);
}

int CommandRunner::StreamUntilDone(int64_t id) {
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
