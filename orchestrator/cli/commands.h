// The `vanguard` commands: each is one or a few Orchestrator RPCs whose answer is printed in
// the --output format (table, json, csv or yaml). Depends only on the generated StubInterface, so
// tests substitute MockOrchestratorStub.
//
//   auto stub = v1::Orchestrator::NewStub(grpc::CreateChannel(addr, creds));
//   CommandRunner runner(*stub, parsed.global, std::cout, std::cerr, *Clock::Real());
//   return runner.GetTest(42);  // an exit code: kExitOk, kExitRpcError, ...
//
// RunCli() is the whole tool: it splits argv, answers --help, identifies the command,
// validates its flags, prints usage errors (exit 2), creates the stub and runs the command's
// table entry (command_table.h).
//
// Called from one thread (main's); not thread-safe.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMMANDS_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/grpc_status.h"
#include "google/protobuf/message.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "orchestrator/cli/command_line.h"
#include "orchestrator/cli/submit_flags.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard::cli {

// How often --wait polls GetTest, and how long a broken watch stream waits to reopen.
inline constexpr absl::Duration kFollowPollInterval = absl::Milliseconds(500);
// Transient failures (UNAVAILABLE, DEADLINE_EXCEEDED) tolerated in a row while following a
// test, so that a restarting orchestrator does not end a long --wait.
inline constexpr int kMaxConsecutiveFollowFailures = 20;

class CommandRunner {
 public:
  using Stub = v1::Orchestrator::StubInterface;

  // stub, out, err and clock must outlive the runner. `clock` paces --wait polling.
  CommandRunner(v1::Orchestrator::StubInterface& stub, const GlobalOptions& global,
                std::ostream& out, std::ostream& err, Clock& clock);

  int RegisterModel(const v1::Model& model);
  int GetModel(const v1::GetModelRequest& request);
  int ListModels(const v1::ListModelsRequest& request);
  // Queues the test; with --wait polls until it ends (0 SUCCEEDED, 3 FAILED/CANCELLED),
  // with --watch streams its updates; then judges the gates (4 when one fails). While it
  // follows the test it shows the live line of the step in flight (RenderProgressLine;
  // --wait on stderr, --watch with table output on stdout): rewritten in place on a
  // terminal, a line per update otherwise. Ctrl-C stops following (not the test), says how
  // to cancel it and returns kExitInterrupted.
  int Submit(const SubmitOptions& options);
  int GetTest(int64_t id);
  int ListTests(const v1::ListTestsRequest& request);
  int CancelTest(int64_t id);
  // Streams updates (and, with table output, the live line) until the test ends; exits like
  // submit --wait, Ctrl-C included.
  int WatchTest(int64_t id);
  int DeprecateModel(const v1::DeprecateModelRequest& request);
  // Table output: the secret alone on stdout (for scripts), what was created on stderr.
  int CreateToken(const v1::CreateTokenRequest& request);
  int RevokeToken(const v1::RevokeTokenRequest& request);
  int ListTokens(const v1::ListTokensRequest& request);

  // For commands in their own files (compare, report).
  // One unary RPC with the deadline and the bearer token; an error is returned, not printed.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&,
                                                          Response*),
                                const Request& request) const {
    Response response;
    const grpc::Status status = (stub_.*rpc)(NewContext(true).get(), request, &response);
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }
  // Prints "error: CODE: message" on stderr (naming the orchestrator when it is UNAVAILABLE);
  // returns kExitRpcError.
  int RpcFailed(absl::string_view rpc, const absl::Status& status);
  // Prints `message` in the --output format: json and yaml from the message itself, table and
  // csv from the callbacks (csv falls back to table when null; table entries that offer csv
  // pass one).
  void Print(const google::protobuf::Message& message, const std::function<std::string()>& table,
             const std::function<std::string()>& csv = nullptr);
  const GlobalOptions& global() const { return global_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }

 private:
  // Remembers what was already reported about a followed test, so that each state change
  // and each step is reported once.
  struct FollowProgress {
    v1::TestState state = v1::TEST_STATE_UNSPECIFIED;
    int32_t attempt = -1;
    bool cancel_requested = false;
    std::vector<std::pair<int32_t, int32_t>> reported_steps;  // (attempt, index)
    // The live line: the progress last shown (its update time), and whether a line is open
    // on a terminal (to be erased before the next line).
    google::protobuf::Timestamp live_shown;
    bool live_open = false;
  };

  std::unique_ptr<grpc::ClientContext> NewContext(bool with_deadline) const;
  int RpcFailed(absl::string_view rpc, const grpc::Status& status);
  void ReportProgress(const v1::Test& test, FollowProgress& progress, std::ostream& to);
  // Shows `live` (a progress the test's worker reported) as the live line on `to`, once per
  // report; `terminal` rewrites one line in place.
  void ShowLive(const v1::Test& test, const v1::TestProgress& live, FollowProgress& progress,
                std::ostream& to, bool terminal);
  // Erases an open live line before other output goes to `to`.
  void EndLive(FollowProgress& progress, std::ostream& to);
  // After Ctrl-C: says the test goes on and how to cancel it; kExitInterrupted.
  int StoppedFollowing(int64_t id, FollowProgress& progress, std::ostream& to);
  // Both print the finished test and store it in *finished (when not null).
  int PollUntilDone(v1::Test test, v1::Test* finished = nullptr);
  int StreamUntilDone(int64_t id, v1::Test* finished = nullptr);
  // The gates' lines on stderr; kExitGateFailed if one failed, else `exit_code`.
  int JudgeGates(const v1::Test& finished, const GateOptions& gates, int exit_code);
  // The latest earlier succeeded test of the finished test's model version, else of its model.
  absl::StatusOr<std::optional<v1::Test>> FindBaseline(const v1::Test& finished);
  int ExitCodeFor(const v1::Test& finished) const;
  void PrintTest(const v1::Test& test);

  v1::Orchestrator::StubInterface& stub_;
  const GlobalOptions global_;
  std::ostream& out_;
  std::ostream& err_;
  Clock& clock_;
};

// Creates the stub once the command line is known to be valid.
using StubFactory =
    std::function<std::unique_ptr<v1::Orchestrator::StubInterface>(const GlobalOptions&)>;

// The whole tool: `argv` as main() received it (argv[0] included). Returns the exit code.
int RunCli(const std::vector<std::string>& argv, const Environment& env,
           const StubFactory& make_stub, std::ostream& out, std::ostream& err, Clock& clock);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMMANDS_H_
