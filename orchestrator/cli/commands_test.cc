// Tests of commands.h against the generated MockOrchestratorStub: what each command sends,
// what it prints, and its exit code. Polling runs on a FakeClock, so nothing sleeps.
#include "orchestrator/cli/commands.h"

#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/test/client_context_test_peer.h"
#include "grpcpp/test/mock_stream.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "orchestrator/cli/render.h"
#include "proto/testing/orchestrator_stub_mock.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::DoAll;
using ::testing::HasSubstr;
using ::testing::InSequence;
using ::testing::Invoke;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Return;
using ::testing::SetArgPointee;

v1::Step MakeStep(int index, double target, double achieved, double p99, bool passed) {
  v1::Step step;
  step.set_index(index);
  step.set_attempt(1);
  step.set_target_qps(target);
  step.set_achieved_qps(achieved);
  step.mutable_latency()->set_p99_ms(p99);
  step.set_health_state(passed ? v1::HEALTH_STATE_HEALTHY : v1::HEALTH_STATE_OVERLOADED);
  step.set_passed(passed);
  step.set_verdict(passed ? "within SLO" : "p99 over SLO");
  return step;
}

v1::Test MakeTest(int64_t id, v1::TestState state, int steps) {
  v1::Test test;
  test.set_id(id);
  test.set_state(state);
  test.mutable_spec()->set_model("resnet50");
  test.mutable_spec()->mutable_sweep()->add_rates_qps(100);
  test.mutable_spec()->mutable_sweep()->add_rates_qps(200);
  test.mutable_spec()->mutable_sweep()->add_rates_qps(300);
  if (state != v1::TEST_STATE_QUEUED) test.set_attempt(1);
  const double rates[] = {100, 200, 300};
  for (int i = 0; i < steps; ++i) {
    *test.add_steps() = MakeStep(i, rates[i], rates[i] * 0.99, 10.0 * (i + 1), i < 2);
  }
  if (state == v1::TEST_STATE_SUCCEEDED || state == v1::TEST_STATE_FAILED) {
    test.mutable_result()->set_max_sustainable_qps(200);
    test.mutable_result()->set_steps_taken(steps);
  }
  return test;
}

v1::GetTestResponse GetResponse(const v1::Test& test) {
  v1::GetTestResponse response;
  *response.mutable_test() = test;
  return response;
}

class CommandRunnerTest : public ::testing::Test {
 protected:
  CommandRunner Runner(OutputFormat output = OutputFormat::kTable, std::string token = "") {
    global_.output = output;
    global_.bearer_token = std::move(token);
    return CommandRunner(stub_, global_, out_, err_, clock_);
  }

  v1::OrchestratorStubMock stub_;
  GlobalOptions global_;
  std::ostringstream out_;
  std::ostringstream err_;
  FakeClock clock_;
};

TEST_F(CommandRunnerTest, GetPrintsJsonThatParsesBackIntoTheTest) {
  const v1::Test test = MakeTest(42, v1::TEST_STATE_SUCCEEDED, 3);
  v1::GetTestRequest sent;
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent), SetArgPointee<2>(GetResponse(test)),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kJson).GetTest(42), kExitOk);
  EXPECT_EQ(sent.id(), 42);

  v1::Test parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &parsed).ok()) << out_.str();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, test));
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["result"]["max_sustainable_qps"], 200);
  EXPECT_EQ(json["steps"][1]["target_qps"], 200);
  EXPECT_TRUE(json["steps"][1]["latency"].contains("p99_ms"));
  EXPECT_TRUE(json["steps"][1].contains("error_rate"));
  EXPECT_EQ(json["steps"][2]["health_state"], "HEALTH_STATE_OVERLOADED");
  EXPECT_THAT(err_.str(), IsEmpty());
}

TEST_F(CommandRunnerTest, GetPrintsTableWithStepRows) {
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(GetResponse(MakeTest(42, v1::TEST_STATE_FAILED, 3))),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner().GetTest(42), kExitOk);
  const std::string table = out_.str();
  EXPECT_THAT(table, HasSubstr("Test 42"));
  EXPECT_THAT(table, HasSubstr("FAILED"));
  for (const char* row : {"100.0          99.0", "200.0         198.0", "300.0         297.0"}) {
    EXPECT_THAT(table, HasSubstr(row));
  }
  EXPECT_THAT(table, HasSubstr("Result: max sustainable 200.0 qps"));
}

TEST_F(CommandRunnerTest, TokensCreatePrintsOnlyTheSecretOnStdout) {
  v1::CreateTokenResponse response;
  response.mutable_token()->set_id(3);
  response.mutable_token()->set_name("ci");
  response.mutable_token()->set_role(v1::ROLE_SUBMITTER);
  response.set_secret("vgt_secret");
  v1::CreateTokenRequest sent;
  EXPECT_CALL(stub_, CreateToken(_, _, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent), SetArgPointee<2>(response),
                      Return(grpc::Status::OK)));
  v1::CreateTokenRequest request;
  request.set_name("ci");
  request.set_role(v1::ROLE_SUBMITTER);
  EXPECT_EQ(Runner().CreateToken(request), kExitOk);
  EXPECT_EQ(sent.name(), "ci");
  EXPECT_EQ(out_.str(), "vgt_secret\n");  // scripts capture it with $(...)
  EXPECT_THAT(err_.str(), HasSubstr("created token ci (role submitter, id 3)"));
}

TEST_F(CommandRunnerTest, TokensListShowsRolesAndRevocationButNoSecrets) {
  v1::ListTokensResponse response;
  v1::Token* valid = response.add_tokens();
  valid->set_id(1);
  valid->set_name("bootstrap-admin");
  valid->set_role(v1::ROLE_ADMIN);
  v1::Token* revoked = response.add_tokens();
  revoked->set_id(2);
  revoked->set_name("old-ci");
  revoked->set_role(v1::ROLE_SUBMITTER);
  revoked->mutable_revoke_time()->set_seconds(1);
  EXPECT_CALL(stub_, ListTokens(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(response), Return(grpc::Status::OK)));
  EXPECT_EQ(Runner().ListTokens(v1::ListTokensRequest()), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("bootstrap-admin"));
  EXPECT_THAT(out_.str(), HasSubstr("admin"));
  EXPECT_THAT(out_.str(), HasSubstr("revoked"));
  EXPECT_THAT(out_.str(), HasSubstr("valid"));
}

TEST_F(CommandRunnerTest, RpcErrorPrintsCodeAndMessageAndExitsOne) {
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::NOT_FOUND, "test 9 does not exist")));
  EXPECT_EQ(Runner().GetTest(9), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: NOT_FOUND: test 9 does not exist\n");
  EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CommandRunnerTest, UnavailableNamesTheOrchestratorAddress) {
  global_.orchestrator = "orch.example:50051";
  EXPECT_CALL(stub_, ListTests(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused")));
  EXPECT_EQ(Runner().ListTests(v1::ListTestsRequest()), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("error: UNAVAILABLE: connection refused"));
  EXPECT_THAT(err_.str(), HasSubstr("orch.example:50051"));
}

TEST_F(CommandRunnerTest, SendsBearerTokenAndDeadline) {
  std::multimap<std::string, std::string> metadata;
  std::chrono::system_clock::time_point deadline;
  global_.rpc_timeout = absl::Seconds(7);
  EXPECT_CALL(stub_, CancelTest(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext* context, const v1::CancelTestRequest& request,
                           v1::CancelTestResponse* response) {
        metadata = grpc::testing::ClientContextTestPeer(context).GetSendInitialMetadata();
        deadline = context->deadline();
        *response->mutable_test() = MakeTest(request.id(), v1::TEST_STATE_CANCELLED, 1);
        return grpc::Status::OK;
      }));
  const auto before = std::chrono::system_clock::now();
  EXPECT_EQ(Runner(OutputFormat::kTable, "s3cret").CancelTest(5), kExitOk);
  const auto after = std::chrono::system_clock::now();
  ASSERT_EQ(metadata.count("authorization"), 1u);
  EXPECT_EQ(metadata.find("authorization")->second, "Bearer s3cret");
  EXPECT_GE(deadline, before + std::chrono::seconds(7));
  EXPECT_LE(deadline, after + std::chrono::seconds(7));
  EXPECT_THAT(out_.str(), HasSubstr("CANCELLED"));
}

TEST_F(CommandRunnerTest, NoTokenNoAuthorizationMetadata) {
  std::multimap<std::string, std::string> metadata;
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext* context, const v1::GetTestRequest&,
                           v1::GetTestResponse* response) {
        metadata = grpc::testing::ClientContextTestPeer(context).GetSendInitialMetadata();
        *response->mutable_test() = MakeTest(1, v1::TEST_STATE_QUEUED, 0);
        return grpc::Status::OK;
      }));
  EXPECT_EQ(Runner().GetTest(1), kExitOk);
  EXPECT_EQ(metadata.count("authorization"), 0u);
}

TEST_F(CommandRunnerTest, SubmitSendsSpecAndRequestIdAndPrintsQueuedTest) {
  SubmitOptions options;
  options.spec.set_model("resnet50");
  options.spec.mutable_sweep()->add_rates_qps(100);
  options.request_id = "ci-77";
  v1::SubmitTestRequest sent;
  v1::SubmitTestResponse response;
  *response.mutable_test() = MakeTest(8, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent), SetArgPointee<2>(response),
                      Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _)).Times(0);
  EXPECT_EQ(Runner().Submit(options), kExitOk);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(sent.spec(), options.spec));
  EXPECT_EQ(sent.request_id(), "ci-77");
  EXPECT_THAT(out_.str(), HasSubstr("Test 8"));
  EXPECT_THAT(out_.str(), HasSubstr("QUEUED"));
}

TEST_F(CommandRunnerTest, WaitPollsUntilFailedAndExitsThree) {
  SubmitOptions options;
  options.spec.set_model("resnet50");
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(8, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  {
    InSequence in_order;
    for (const v1::Test& test :
         {MakeTest(8, v1::TEST_STATE_QUEUED, 0), MakeTest(8, v1::TEST_STATE_RUNNING, 1),
          MakeTest(8, v1::TEST_STATE_RUNNING, 1), MakeTest(8, v1::TEST_STATE_RUNNING, 2),
          MakeTest(8, v1::TEST_STATE_FAILED, 3)}) {
      EXPECT_CALL(stub_, GetTest(_, _, _))
          .WillOnce(DoAll(SetArgPointee<2>(GetResponse(test)), Return(grpc::Status::OK)));
    }
  }
  const absl::Duration start = clock_.Monotonic();
  EXPECT_EQ(Runner().Submit(options), kExitTestNotSucceeded);
  EXPECT_EQ(clock_.Monotonic() - start, 5 * kFollowPollInterval);

  // Each step and each state change is reported once, in order, on stderr.
  const std::string err = err_.str();
  const std::vector<std::string> lines = absl::StrSplit(err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 7u) << err;
  EXPECT_THAT(lines[0], HasSubstr("submitted test 8"));
  EXPECT_EQ(lines[1], "test 8: QUEUED");
  EXPECT_THAT(lines[2], HasSubstr("step 0: target 100.0 qps, achieved 99.0 qps, p99 10.0 ms"));
  EXPECT_EQ(lines[3], "test 8: RUNNING (attempt 1)");
  EXPECT_THAT(lines[4], HasSubstr("step 1: target 200.0 qps"));
  EXPECT_THAT(lines[5], HasSubstr("step 2: target 300.0 qps, achieved 297.0 qps, p99 30.0 ms"));
  EXPECT_THAT(lines[5], HasSubstr("FAIL"));
  EXPECT_EQ(lines[6], "test 8: FAILED (attempt 1)");
  // The final test goes to stdout.
  EXPECT_THAT(out_.str(), HasSubstr("Test 8"));
  EXPECT_THAT(out_.str(), HasSubstr("FAILED"));
}

TEST_F(CommandRunnerTest, WaitExitsZeroOnSuccessAndPrintsFinalJson) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(3, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(GetResponse(MakeTest(3, v1::TEST_STATE_SUCCEEDED, 2))),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kJson).Submit(options), kExitOk);
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["state"], "TEST_STATE_SUCCEEDED");
  EXPECT_EQ(json["steps"].size(), 2u);
}

TEST_F(CommandRunnerTest, WaitRidesOutTransientErrors) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(3, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting")))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "slow")))
      .WillOnce(DoAll(SetArgPointee<2>(GetResponse(MakeTest(3, v1::TEST_STATE_CANCELLED, 0))),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner().Submit(options), kExitTestNotSucceeded);
  EXPECT_THAT(err_.str(), HasSubstr("warning: GetTest failed (UNAVAILABLE: restarting)"));
  EXPECT_THAT(out_.str(), HasSubstr("CANCELLED"));
}

TEST_F(CommandRunnerTest, WaitStopsOnPermanentError) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(3, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "token expired")));
  EXPECT_EQ(Runner().Submit(options), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("error: PERMISSION_DENIED: token expired"));
  EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CommandRunnerTest, WaitGivesUpAfterTooManyTransientErrors) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(3, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .Times(kMaxConsecutiveFollowFailures)
      .WillRepeatedly(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")));
  EXPECT_EQ(Runner().Submit(options), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("error: UNAVAILABLE: down"));
}

// A scripted WatchTest stream: yields `updates`, then finishes with `status`.
grpc::testing::MockClientReader<v1::WatchTestResponse>* ScriptedStream(
    std::vector<v1::Test> updates, grpc::Status status) {
  auto* reader = new grpc::testing::MockClientReader<v1::WatchTestResponse>();
  auto remaining = std::make_shared<std::vector<v1::Test>>(std::move(updates));
  EXPECT_CALL(*reader, Read(_)).WillRepeatedly(Invoke([remaining](v1::WatchTestResponse* out) {
    if (remaining->empty()) return false;
    *out->mutable_test() = remaining->front();
    remaining->erase(remaining->begin());
    return true;
  }));
  EXPECT_CALL(*reader, Finish()).WillRepeatedly(Return(status));
  return reader;
}

TEST_F(CommandRunnerTest, WatchPrintsEachUpdateAndTheFinalTable) {
  v1::WatchTestRequest sent;
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent),
                      Return(ScriptedStream({MakeTest(4, v1::TEST_STATE_RUNNING, 1),
                                             MakeTest(4, v1::TEST_STATE_RUNNING, 2),
                                             MakeTest(4, v1::TEST_STATE_SUCCEEDED, 2)},
                                            grpc::Status::OK))));
  EXPECT_EQ(Runner().WatchTest(4), kExitOk);
  EXPECT_EQ(sent.id(), 4);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("step 0: target 100.0 qps"));
  EXPECT_THAT(out, HasSubstr("test 4: RUNNING (attempt 1)"));
  EXPECT_THAT(out, HasSubstr("step 1: target 200.0 qps"));
  EXPECT_THAT(out, HasSubstr("test 4: SUCCEEDED (attempt 1)"));
  EXPECT_THAT(out, HasSubstr("Result: max sustainable 200.0 qps"));
}

TEST_F(CommandRunnerTest, WatchJsonIsOneParsableObjectPerUpdate) {
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ScriptedStream(
          {MakeTest(4, v1::TEST_STATE_RUNNING, 1), MakeTest(4, v1::TEST_STATE_FAILED, 3)},
          grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kJson).WatchTest(4), kExitTestNotSucceeded);
  const std::vector<std::string> lines = absl::StrSplit(out_.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  EXPECT_EQ(nlohmann::json::parse(lines[0])["state"], "TEST_STATE_RUNNING");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["steps"].size(), 3u);
}

TEST_F(CommandRunnerTest, WatchThatEndsBeforeTheTestIsAnError) {
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ScriptedStream({MakeTest(4, v1::TEST_STATE_RUNNING, 1)}, grpc::Status::OK)));
  EXPECT_EQ(Runner().WatchTest(4), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("before the test finished"));
}

TEST_F(CommandRunnerTest, WatchReconnectsAfterUnavailable) {
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ScriptedStream({MakeTest(4, v1::TEST_STATE_RUNNING, 1)},
                                      grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone"))))
      .WillOnce(Return(ScriptedStream(
          {MakeTest(4, v1::TEST_STATE_RUNNING, 1), MakeTest(4, v1::TEST_STATE_SUCCEEDED, 2)},
          grpc::Status::OK)));
  EXPECT_EQ(Runner().WatchTest(4), kExitOk);
  // The step seen before the reconnect is not reported twice.
  const std::string out = out_.str();
  EXPECT_EQ(out.find("step 0:"), out.rfind("step 0:"));
  EXPECT_THAT(err_.str(), HasSubstr("reconnecting"));
}

TEST_F(CommandRunnerTest, WatchRpcErrorExitsOne) {
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ScriptedStream({}, grpc::Status(grpc::StatusCode::NOT_FOUND, "no test 4"))));
  EXPECT_EQ(Runner().WatchTest(4), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: NOT_FOUND: no test 4\n");
}

TEST_F(CommandRunnerTest, SubmitWatchStreamsTheNewTest) {
  SubmitOptions options;
  options.follow = FollowMode::kStream;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(12, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  v1::WatchTestRequest sent;
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(DoAll(
          ::testing::SaveArg<1>(&sent),
          Return(ScriptedStream({MakeTest(12, v1::TEST_STATE_FAILED, 3)}, grpc::Status::OK))));
  EXPECT_EQ(Runner().Submit(options), kExitTestNotSucceeded);
  EXPECT_EQ(sent.id(), 12);
}

// The step in flight as the worker reported it at `second` (its update time).
v1::TestProgress LiveProgress(int step, double achieved, int64_t second) {
  v1::TestProgress p;
  p.set_step_index(step);
  p.set_offered_qps(100);
  p.set_health_state(v1::HEALTH_STATE_HEALTHY);
  p.mutable_elapsed()->set_seconds(second);
  p.mutable_step_remaining()->set_seconds(10);
  v1::StepWindow* w = p.add_windows();
  w->set_achieved_qps(achieved);
  w->mutable_latency()->set_p99_ms(20);
  p.mutable_update_time()->set_seconds(1'700'000'000 + second);
  return p;
}

// A WatchTest stream of whole responses (test and progress), then OK.
grpc::testing::MockClientReader<v1::WatchTestResponse>* ResponseStream(
    std::vector<v1::WatchTestResponse> updates, std::function<void(size_t)> before_read = nullptr) {
  auto* reader = new grpc::testing::MockClientReader<v1::WatchTestResponse>();
  auto remaining = std::make_shared<std::vector<v1::WatchTestResponse>>(std::move(updates));
  auto reads = std::make_shared<size_t>(0);
  EXPECT_CALL(*reader, Read(_))
      .WillRepeatedly(Invoke([remaining, reads, before_read](v1::WatchTestResponse* out) {
        if (before_read) before_read((*reads)++);
        if (remaining->empty()) return false;
        *out = remaining->front();
        remaining->erase(remaining->begin());
        return true;
      }));
  EXPECT_CALL(*reader, Finish()).WillRepeatedly(Return(grpc::Status::OK));
  return reader;
}

v1::WatchTestResponse Update(const v1::Test& test,
                             std::optional<v1::TestProgress> progress = std::nullopt) {
  v1::WatchTestResponse update;
  *update.mutable_test() = test;
  if (progress.has_value()) *update.mutable_progress() = *progress;
  return update;
}

TEST_F(CommandRunnerTest, WatchOnATerminalRewritesOneLiveLineInPlace) {
  global_.stdout_is_terminal = true;
  const v1::Test running = MakeTest(4, v1::TEST_STATE_RUNNING, 0);
  v1::WatchTestRequest sent;
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent),
                      Return(ResponseStream({Update(running, LiveProgress(0, 97, 1)),
                                             Update(running, LiveProgress(0, 99, 2)),
                                             Update(MakeTest(4, v1::TEST_STATE_RUNNING, 1)),
                                             Update(MakeTest(4, v1::TEST_STATE_SUCCEEDED, 1))}))));
  EXPECT_EQ(Runner().WatchTest(4), kExitOk);
  EXPECT_TRUE(sent.progress()) << "table output asks for the live progress";
  const std::string out = out_.str();
  const std::string first = RenderProgressLine(running, LiveProgress(0, 97, 1));
  const std::string second = RenderProgressLine(running, LiveProgress(0, 99, 2));
  // Each report replaces the line before it; the step's own line replaces the last one.
  EXPECT_THAT(out, HasSubstr("test 4: RUNNING (attempt 1)\n\r\x1b[K" + first + "\r\x1b[K" + second +
                             "\r\x1b[Kstep 0: target 100.0 qps"));
  EXPECT_THAT(first, HasSubstr("step 0 at 100.0 qps: achieved 97.0 qps"));
  EXPECT_THAT(out, HasSubstr("test 4: SUCCEEDED"));
  EXPECT_THAT(out, HasSubstr("Result: max sustainable 200.0 qps"));
}

TEST_F(CommandRunnerTest, TheLiveLineIsCutToTheTerminalsWidth) {
  global_.stdout_is_terminal = true;
  global_.terminal_columns = 30;
  const v1::Test running = MakeTest(4, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ResponseStream({Update(running, LiveProgress(0, 97, 1)),
                                       Update(MakeTest(4, v1::TEST_STATE_SUCCEEDED, 1))})));
  EXPECT_EQ(Runner().WatchTest(4), kExitOk);
  EXPECT_THAT(
      out_.str(),
      HasSubstr("\r\x1b[K" + RenderProgressLine(running, LiveProgress(0, 97, 1)).substr(0, 29) +
                "\r\x1b[Kstep 0:"));
}

TEST_F(CommandRunnerTest, WatchIntoAPipePrintsAPlainLinePerReport) {
  const v1::Test running = MakeTest(4, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ResponseStream({Update(running, LiveProgress(0, 97, 1)),
                                       Update(running, LiveProgress(0, 99, 2)),
                                       Update(MakeTest(4, v1::TEST_STATE_FAILED, 1))})));
  EXPECT_EQ(Runner().WatchTest(4), kExitTestNotSucceeded);
  const std::string out = out_.str();
  EXPECT_THAT(out, Not(HasSubstr("\x1b")));
  EXPECT_THAT(out, HasSubstr(RenderProgressLine(running, LiveProgress(0, 97, 1)) + "\n" +
                             RenderProgressLine(running, LiveProgress(0, 99, 2)) + "\n"));
}

TEST_F(CommandRunnerTest, WatchJsonDoesNotAskForProgress) {
  v1::WatchTestRequest sent;
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(DoAll(
          ::testing::SaveArg<1>(&sent),
          Return(ScriptedStream({MakeTest(4, v1::TEST_STATE_SUCCEEDED, 2)}, grpc::Status::OK))));
  EXPECT_EQ(Runner(OutputFormat::kJson).WatchTest(4), kExitOk);
  EXPECT_FALSE(sent.progress());
}

TEST_F(CommandRunnerTest, WaitShowsEachReportOnceOnStderrAndAsksForNoWindows) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(8, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  const v1::Test running = MakeTest(8, v1::TEST_STATE_RUNNING, 0);
  std::vector<v1::GetTestRequest> polls;
  {
    InSequence in_order;
    for (const std::optional<v1::TestProgress>& p :
         {std::optional(LiveProgress(0, 97, 1)), std::optional(LiveProgress(0, 97, 1)),
          std::optional(LiveProgress(0, 99, 2)), std::optional<v1::TestProgress>()}) {
      v1::GetTestResponse response = GetResponse(running);
      if (p.has_value()) *response.mutable_progress() = *p;
      EXPECT_CALL(stub_, GetTest(_, _, _))
          .WillOnce(DoAll(Invoke([&polls](grpc::ClientContext*, const v1::GetTestRequest& r,
                                          v1::GetTestResponse*) { polls.push_back(r); }),
                          SetArgPointee<2>(response), Return(grpc::Status::OK)));
    }
    EXPECT_CALL(stub_, GetTest(_, _, _))
        .WillOnce(DoAll(SetArgPointee<2>(GetResponse(MakeTest(8, v1::TEST_STATE_SUCCEEDED, 1))),
                        Return(grpc::Status::OK)));
  }
  global_.stderr_is_terminal = true;
  EXPECT_EQ(Runner().Submit(options), kExitOk);
  for (const v1::GetTestRequest& r : polls) EXPECT_TRUE(r.skip_windows());
  const std::string err = err_.str();
  const std::string first = RenderProgressLine(running, LiveProgress(0, 97, 1));
  EXPECT_EQ(err.find(first), err.rfind(first)) << "a report polled twice is shown once";
  EXPECT_THAT(err, HasSubstr("\r\x1b[K" + first + "\r\x1b[K" +
                             RenderProgressLine(running, LiveProgress(0, 99, 2)) +
                             "\r\x1b[Kstep 0: target 100.0 qps"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("\x1b"))) << "stdout keeps the final test alone";
}

TEST_F(CommandRunnerTest, CtrlCWhileWaitingStopsFollowingAndSaysHowToCancel) {
  SubmitOptions options;
  options.follow = FollowMode::kPoll;
  options.gates.fail_below_qps = 100;  // not judged: the test did not end
  v1::SubmitTestResponse submitted;
  *submitted.mutable_test() = MakeTest(8, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, SubmitTest(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillOnce(DoAll(Invoke([](grpc::ClientContext*, const v1::GetTestRequest&,
                                v1::GetTestResponse*) { std::raise(SIGINT); }),
                      SetArgPointee<2>(GetResponse(MakeTest(8, v1::TEST_STATE_RUNNING, 0))),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner().Submit(options), kExitInterrupted);
  EXPECT_THAT(err_.str(), HasSubstr("stopped watching test 8; it goes on running. To cancel it: "
                                    "vanguard cancel 8\n"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("fail_below")));
  EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CommandRunnerTest, CtrlCWhileWatchingStopsTheStreamAndSaysHowToCancel) {
  const v1::Test running = MakeTest(4, v1::TEST_STATE_RUNNING, 0);
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ResponseStream(
          {Update(running, LiveProgress(0, 97, 1)), Update(running, LiveProgress(0, 98, 2)),
           Update(MakeTest(4, v1::TEST_STATE_SUCCEEDED, 1))},
          [](size_t read) {
            if (read == 1) std::raise(SIGINT);  // while waiting for the second update
          })));
  EXPECT_EQ(Runner().WatchTest(4), kExitInterrupted);
  EXPECT_THAT(err_.str(), HasSubstr("stopped watching test 4; it goes on running. To cancel it: "
                                    "vanguard cancel 4"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("SUCCEEDED")));
  // Ctrl-C after the watch is the default again (the handler is gone): not tested by
  // raising it, which would end this test binary.
}

TEST_F(CommandRunnerTest, RegisterModelSendsTheModel) {
  v1::Model model;
  model.set_name("resnet50");
  model.set_version("v3");
  model.add_endpoints("http://127.0.0.1:8000");
  v1::RegisterModelRequest sent;
  v1::RegisterModelResponse response;
  *response.mutable_model() = model;
  EXPECT_CALL(stub_, RegisterModel(_, _, _))
      .WillOnce(DoAll(::testing::SaveArg<1>(&sent), SetArgPointee<2>(response),
                      Return(grpc::Status::OK)));
  EXPECT_EQ(Runner().RegisterModel(model), kExitOk);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(sent.model(), model));
  EXPECT_THAT(out_.str(), HasSubstr("Registered resnet50/v3"));
}

TEST_F(CommandRunnerTest, RegisterModelConflictExitsOne) {
  EXPECT_CALL(stub_, RegisterModel(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "resnet50/v3 exists")));
  EXPECT_EQ(Runner().RegisterModel(v1::Model()), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: ALREADY_EXISTS: resnet50/v3 exists\n");
}

TEST_F(CommandRunnerTest, ListModelsJsonIsTheResponseMessage) {
  v1::ListModelsResponse response;
  response.add_models()->set_name("resnet50");
  response.add_models()->set_name("bert");
  EXPECT_CALL(stub_, ListModels(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(response), Return(grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kJson).ListModels(v1::ListModelsRequest()), kExitOk);
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  ASSERT_EQ(json["models"].size(), 2u);
  EXPECT_EQ(json["models"][1]["name"], "bert");
  EXPECT_TRUE(json["models"][0].contains("served_name"));
}

TEST_F(CommandRunnerTest, GetPrintsCsvRowsPerStepAndYamlOfTheJsonObject) {
  EXPECT_CALL(stub_, GetTest(_, _, _))
      .WillRepeatedly(DoAll(SetArgPointee<2>(GetResponse(MakeTest(42, v1::TEST_STATE_FAILED, 3))),
                            Return(grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kCsv).GetTest(42), kExitOk);
  const std::vector<std::string> rows = absl::StrSplit(out_.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 4u) << out_.str();
  EXPECT_THAT(rows[0], ::testing::StartsWith("test_id,attempt,step,target_qps"));
  EXPECT_THAT(rows[3], ::testing::StartsWith("42,1,2,300,297,"));
  EXPECT_THAT(rows[3], HasSubstr(",OVERLOADED,false,false,p99 over SLO"));

  out_.str("");
  EXPECT_EQ(Runner(OutputFormat::kYaml).GetTest(42), kExitOk);
  EXPECT_THAT(out_.str(), ::testing::StartsWith("id: \"42\"\n"));
  EXPECT_THAT(out_.str(), HasSubstr("state: TEST_STATE_FAILED\n"));
  EXPECT_THAT(out_.str(), HasSubstr("  - index: 2\n"));
}

TEST_F(CommandRunnerTest, ListPrintsCsvRowsPerTest) {
  v1::ListTestsResponse response;
  *response.add_tests() = MakeTest(7, v1::TEST_STATE_SUCCEEDED, 0);
  *response.add_tests() = MakeTest(8, v1::TEST_STATE_QUEUED, 0);
  EXPECT_CALL(stub_, ListTests(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(response), Return(grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kCsv).ListTests(v1::ListTestsRequest()), kExitOk);
  const std::vector<std::string> rows = absl::StrSplit(out_.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 3u) << out_.str();
  EXPECT_THAT(rows[1], ::testing::StartsWith("7,SUCCEEDED,resnet50,,1,200,"));
  EXPECT_THAT(rows[2], ::testing::StartsWith("8,QUEUED,resnet50,,0,,"));
}

TEST_F(CommandRunnerTest, WatchYamlIsOneDocumentPerUpdate) {
  EXPECT_CALL(stub_, WatchTestRaw(_, _))
      .WillOnce(Return(ScriptedStream(
          {MakeTest(4, v1::TEST_STATE_RUNNING, 1), MakeTest(4, v1::TEST_STATE_SUCCEEDED, 2)},
          grpc::Status::OK)));
  EXPECT_EQ(Runner(OutputFormat::kYaml).WatchTest(4), kExitOk);
  const std::string out = out_.str();
  EXPECT_THAT(out, ::testing::StartsWith("---\nid: \"4\"\n"));
  EXPECT_THAT(out, HasSubstr("state: TEST_STATE_RUNNING\n"));
  EXPECT_THAT(out, HasSubstr("---\nid: \"4\"\nspec:"));
  EXPECT_THAT(out, HasSubstr("state: TEST_STATE_SUCCEEDED\n"));
  EXPECT_THAT(out, Not(HasSubstr("Result:")));  // no table after the documents
}

// A finished test of resnet50/VERSION whose capacity is in [low, high).
v1::Test Finished(int64_t id, const std::string& version, double low, double high,
                  v1::TestState state = v1::TEST_STATE_SUCCEEDED) {
  v1::Test test = MakeTest(id, state, 2);
  test.mutable_model()->set_name("resnet50");
  test.mutable_model()->set_version(version);
  test.mutable_result()->set_max_sustainable_qps(low);
  test.mutable_result()->set_confidence_low_qps(low);
  test.mutable_result()->set_confidence_high_qps(high);
  return test;
}

class GateTest : public CommandRunnerTest {
 protected:
  // submit --wait with `gates`; the test is queued as `final.id()` and polled once, `final`.
  int SubmitAndWait(const v1::Test& final, GateOptions gates) {
    SubmitOptions options;
    options.spec.set_model("resnet50");
    options.follow = FollowMode::kPoll;
    options.gates = gates;
    v1::SubmitTestResponse submitted;
    *submitted.mutable_test() = MakeTest(final.id(), v1::TEST_STATE_QUEUED, 0);
    EXPECT_CALL(stub_, SubmitTest(_, _, _))
        .WillOnce(DoAll(SetArgPointee<2>(submitted), Return(grpc::Status::OK)));
    EXPECT_CALL(stub_, GetTest(_, _, _))
        .WillOnce(DoAll(SetArgPointee<2>(GetResponse(final)), Return(grpc::Status::OK)));
    return Runner().Submit(options);
  }

  // ListTests answers `tests` (newest first) to every call and records the requests.
  void ListSucceeded(const std::vector<v1::Test>& tests) {
    v1::ListTestsResponse response;
    for (const v1::Test& test : tests) *response.add_tests() = test;
    EXPECT_CALL(stub_, ListTests(_, _, _))
        .WillRepeatedly(
            Invoke([this, response](grpc::ClientContext*, const v1::ListTestsRequest& request,
                                    v1::ListTestsResponse* out) {
              listed_.push_back(request);
              *out = response;
              return grpc::Status::OK;
            }));
  }

  std::vector<v1::ListTestsRequest> listed_;
};

TEST_F(GateTest, FailBelowExitsFourAndSaysWhy) {
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 200, 250), {.fail_below_qps = 250}), kExitGateFailed);
  EXPECT_THAT(err_.str(),
              HasSubstr("gate --fail_below=250: FAILED: max sustainable 200.0 qps is below "
                        "250.0 qps\n"));
  EXPECT_THAT(out_.str(), HasSubstr("Test 20"));  // the finished test is still printed
}

TEST_F(GateTest, FailBelowPassesAtOrAboveTheThreshold) {
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 200, 250), {.fail_below_qps = 150}), kExitOk);
  EXPECT_THAT(err_.str(),
              HasSubstr("gate --fail_below=150: passed: max sustainable 200.0 qps >= 150.0 qps"));
}

TEST_F(GateTest, ATestThatFailedFailsTheGateWithItsOwnCode) {
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 200, 250, v1::TEST_STATE_FAILED),
                          {.fail_below_qps = 100, .fail_if_regressed_pct = 5}),
            kExitGateFailed);
  EXPECT_THAT(err_.str(), HasSubstr("gate --fail_below=100: FAILED: test 20 ended FAILED"));
  EXPECT_THAT(err_.str(), HasSubstr("gate --fail_if_regressed=5%: FAILED: test 20 ended FAILED"));
}

TEST_F(GateTest, RegressionComparesWithTheLatestEarlierTestOfTheSameVersion) {
  // Test 21 is newer than the one judged; 19 is another version; 18 is the baseline:
  // (270 - 280) / 280 = -3.6%, within 5%.
  ListSucceeded(
      {Finished(21, "v2", 100, 110), Finished(19, "v1", 300, 330), Finished(18, "v2", 280, 300)});
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 270, 300), {.fail_if_regressed_pct = 5}), kExitOk);
  EXPECT_THAT(err_.str(),
              HasSubstr("gate --fail_if_regressed=5%: passed: 270.0 qps is 3.6% below test 18's "
                        "280.0 qps (resnet50/v2), within the 5% allowed"));
  ASSERT_EQ(listed_.size(), 1u);
  EXPECT_EQ(listed_[0].state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_EQ(listed_[0].model(), "resnet50");
}

TEST_F(GateTest, RegressionFallsBackToTheModelAndFailsBeyondTheIntervals) {
  // No earlier v2 test: the latest earlier test of resnet50 (v1) is the baseline. 10% lower,
  // and [270, 300) lies below [300, 330).
  ListSucceeded({Finished(19, "v1", 300, 330)});
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 270, 300), {.fail_if_regressed_pct = 5}),
            kExitGateFailed);
  EXPECT_THAT(err_.str(),
              HasSubstr("gate --fail_if_regressed=5%: FAILED: 270.0 qps is 10.0% below test "
                        "19's 300.0 qps (resnet50/v1), more than the 5% allowed and beyond both "
                        "tests' confidence intervals"));
  EXPECT_EQ(listed_.size(), 2u);  // the version, then the model
}

TEST_F(GateTest, RegressionWithoutABaselinePasses) {
  ListSucceeded({});
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 270, 300), {.fail_if_regressed_pct = 5}), kExitOk);
  EXPECT_THAT(err_.str(), HasSubstr("passed: no earlier succeeded test of resnet50/v2"));
}

TEST_F(GateTest, BaselineLookupErrorExitsOne) {
  EXPECT_CALL(stub_, ListTests(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "reader only")));
  EXPECT_EQ(SubmitAndWait(Finished(20, "v2", 270, 300), {.fail_if_regressed_pct = 5}),
            kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("error: PERMISSION_DENIED: reader only"));
}

// RunCli: the whole tool, from argv.
class RunCliTest : public ::testing::Test {
 protected:
  int Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"vanguard"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCli(argv, Environment{}, factory_, out_, err_, clock_);
  }

  int stubs_made_ = 0;
  GlobalOptions seen_;
  std::function<void(v1::MockOrchestratorStub&)> expect_;
  StubFactory factory_ = [this](const GlobalOptions& global) {
    ++stubs_made_;
    seen_ = global;
    auto stub = std::make_unique<v1::OrchestratorStubMock>();
    if (expect_) expect_(*stub);
    return std::unique_ptr<v1::Orchestrator::StubInterface>(std::move(stub));
  };
  std::ostringstream out_;
  std::ostringstream err_;
  FakeClock clock_;
};

TEST_F(RunCliTest, MissingOrUnknownCommandPrintsUsageAndExitsTwo) {
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{}, std::vector<std::string>{"frobnicate"}}) {
    err_.str("");
    EXPECT_EQ(Run(words), kExitUsage);
    for (const char* command : {"models register", "models get", "models list", "submit", "get ID",
                                "list", "cancel ID", "watch ID"}) {
      EXPECT_THAT(err_.str(), HasSubstr(command));
    }
    EXPECT_THAT(err_.str(), HasSubstr("--model"));  // the synopses name the flags
  }
  EXPECT_THAT(err_.str(), HasSubstr("error: unknown command 'frobnicate'"));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, BadFlagValueExitsTwoNamingTheFlag) {
  EXPECT_EQ(Run({"submit", "--model=m", "--rates=100", "--step_duration=10"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("error: --step_duration: '10' is not a duration"));
  EXPECT_THAT(err_.str(), HasSubstr("vanguard submit --help"));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, UnknownFlagExitsTwo) {
  EXPECT_EQ(Run({"get", "1", "--modle=x"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("error: unknown flag --modle"));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, HelpCommandPrintsUsageToStdout) {
  EXPECT_EQ(Run({"help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("models register"));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, CommandHelpPrintsThatCommandsFlagsAndExitsZero) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"submit", "--help"}, std::vector<std::string>{"help", "submit"},
        std::vector<std::string>{"submit", "--model=m", "-h"}}) {
    out_.str("");
    EXPECT_EQ(Run(args), kExitOk) << ::testing::PrintToString(args);
    const std::string help = out_.str();
    EXPECT_THAT(help, HasSubstr("Usage: vanguard submit"));
    EXPECT_THAT(help, HasSubstr("--step_duration=10s\n      Measured duration of each step."));
    EXPECT_THAT(help, HasSubstr("--strategy=STRATEGY"));
    EXPECT_THAT(help, HasSubstr("--orchestrator=HOST:PORT"));  // the global flags too
    EXPECT_THAT(help, Not(HasSubstr("models register")));      // not the other commands
  }
  out_.str("");
  EXPECT_EQ(Run({"tokens", "create", "--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("--role=ROLE\n      reader (Get/List/Watch)"));
  EXPECT_THAT(out_.str(), HasSubstr("Required."));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, CompletionPrintsTheShellsScriptWithoutAnOrchestrator) {
  EXPECT_EQ(Run({"completion", "bash"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("complete -F _vanguard vanguard"));
  out_.str("");
  EXPECT_EQ(Run({"completion", "zsh"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("#compdef vanguard"));
  EXPECT_EQ(stubs_made_, 0);
}

TEST_F(RunCliTest, RunsTheCommandAgainstTheConfiguredOrchestrator) {
  expect_ = [](v1::MockOrchestratorStub& stub) {
    EXPECT_CALL(stub, GetModel(_, _, _))
        .WillOnce(Invoke([](grpc::ClientContext*, const v1::GetModelRequest& request,
                            v1::GetModelResponse* response) {
          response->mutable_model()->set_name(request.name());
          response->mutable_model()->set_version(request.version());
          return grpc::Status::OK;
        }));
  };
  EXPECT_EQ(Run({"models", "get", "bert", "--version", "v7", "--orchestrator=orch:1234",
                 "--output=json"}),
            kExitOk);
  EXPECT_EQ(seen_.orchestrator, "orch:1234");
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["name"], "bert");
  EXPECT_EQ(json["version"], "v7");
}

}  // namespace
}  // namespace vanguard::cli
