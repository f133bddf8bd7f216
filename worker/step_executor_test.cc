// StepExecutor: the RunStepRequest built from a leased test, and how the RunStep stream
// is collected (windows, result, errors, cancellation).
#include "worker/step_executor.h"

#include <memory>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "vanguard/v1/replayer_mock.grpc.pb.h"
#include "worker/proto_time.h"
#include "worker/testing/scripted_stream.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;
using testing_util::MakeStepResult;
using testing_util::NewScriptedReader;
using testing_util::ResultEvent;
using testing_util::StreamScript;
using testing_util::WindowEvent;

vanguard::v1::Test LeasedTest() {
  vanguard::v1::Test test;
  test.set_id(42);
  vanguard::v1::Model* model = test.mutable_model();
  model->set_name("resnet50");
  model->set_version("v3");
  model->set_served_name("resnet50_onnx");
  model->set_protocol(vanguard::v1::PROTOCOL_KSERVE_V2_REST);
  model->add_endpoints("http://127.0.0.1:8000");
  model->add_endpoints("http://127.0.0.1:8001");
  model->set_request_template(R"({"inputs":[]})");
  *model->mutable_default_warmup() = ToProtoDuration(absl::Seconds(5));
  vanguard::v1::TestSpec* spec = test.mutable_spec();
  *spec->mutable_step_duration() = ToProtoDuration(absl::Seconds(20));
  *spec->mutable_step_warmup() = ToProtoDuration(absl::Seconds(3));
  *spec->mutable_request_timeout() = ToProtoDuration(absl::Seconds(2));
  spec->set_schedule(vanguard::v1::SCHEDULE_POISSON);
  return test;
}

TEST(StepExecutorTest, ASpecWithoutAScheduleRunsPoissonArrivals) {
  // What an estimate claims is a Poisson rate: a user who names no schedule gets one, and
  // constant arrivals only when asked.
  vanguard::v1::Test test = LeasedTest();
  test.mutable_spec()->clear_schedule();
  auto request = StepExecutor::BuildRequest(test, 250, 1);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->schedule(), vanguard::v1::SCHEDULE_POISSON);
  test.mutable_spec()->set_schedule(vanguard::v1::SCHEDULE_CONSTANT);
  request = StepExecutor::BuildRequest(test, 250, 1);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->schedule(), vanguard::v1::SCHEDULE_CONSTANT);
}

TEST(StepExecutorTest, BuildsRequestFromTheLeasedTest) {
  auto request = StepExecutor::BuildRequest(LeasedTest(), 250, 3);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->target(), "http://127.0.0.1:8000");
  EXPECT_EQ(request->protocol(), vanguard::v1::PROTOCOL_KSERVE_V2_REST);
  EXPECT_EQ(request->model_name(), "resnet50_onnx");
  EXPECT_EQ(request->request_body(), R"({"inputs":[]})");
  EXPECT_EQ(request->rate_qps(), 250);
  EXPECT_EQ(request->schedule(), vanguard::v1::SCHEDULE_POISSON);
  EXPECT_EQ(FromProtoDuration(request->duration()), absl::Seconds(20));
  EXPECT_EQ(FromProtoDuration(request->warmup()), absl::Seconds(3));
  EXPECT_EQ(FromProtoDuration(request->request_timeout()), absl::Seconds(2));
  EXPECT_EQ(request->seed(), StepExecutor::StepSeed(42, 3));
  // The replayer sizes the connection pool from the rate and the timeout (0: its choice), so
  // a model of second-long latencies is not held back by a pool of one second's worth.
  EXPECT_EQ(request->max_connections(), 0);
}

TEST(StepExecutorTest, SeveralEndpointsGoAsTargetsWithTheSpecsPolicy) {
  vanguard::v1::Test test = LeasedTest();  // two endpoints
  auto request = StepExecutor::BuildRequest(test, 250, 3);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->targets(),
              ::testing::ElementsAre("http://127.0.0.1:8000", "http://127.0.0.1:8001"));
  EXPECT_EQ(request->endpoint_policy(), vanguard::v1::ENDPOINT_POLICY_UNSPECIFIED);

  test.mutable_spec()->set_endpoint_policy(vanguard::v1::ENDPOINT_POLICY_P2C);
  request = StepExecutor::BuildRequest(test, 250, 3);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->targets_size(), 2);
  EXPECT_EQ(request->endpoint_policy(), vanguard::v1::ENDPOINT_POLICY_P2C);

  test.mutable_spec()->set_endpoint_policy(vanguard::v1::ENDPOINT_POLICY_SINGLE);
  request = StepExecutor::BuildRequest(test, 250, 3);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->targets_size(), 0);
  EXPECT_EQ(request->target(), "http://127.0.0.1:8000");
}

TEST(StepExecutorTest, TheSpecsReplayerCountGoesToThePool) {
  vanguard::v1::Test test = LeasedTest();
  auto request = StepExecutor::BuildRequest(test, 250, 3);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->replayers(), 0);  // the pool chooses
  test.mutable_spec()->set_replayers(3);
  request = StepExecutor::BuildRequest(test, 250, 3);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->replayers(), 3);
}

TEST(StepExecutorTest, OneEndpointOrAGrpcModelKeepsTheSingleTarget) {
  vanguard::v1::Test one = LeasedTest();
  one.mutable_model()->mutable_endpoints()->RemoveLast();
  auto request = StepExecutor::BuildRequest(one, 100, 1);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->targets_size(), 0);
  EXPECT_EQ(request->target(), "http://127.0.0.1:8000");

  vanguard::v1::Test grpc = LeasedTest();
  grpc.mutable_model()->set_protocol(vanguard::v1::PROTOCOL_KSERVE_V2_GRPC);
  request = StepExecutor::BuildRequest(grpc, 100, 1);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->targets_size(), 0);
  EXPECT_EQ(request->endpoint_policy(), vanguard::v1::ENDPOINT_POLICY_SINGLE);
}

TEST(StepExecutorTest, ATestsRecordedTraceReplacesTheTemplate) {
  vanguard::v1::Test test = LeasedTest();
  auto synthetic = StepExecutor::BuildRequest(test, 100, 1);
  ASSERT_TRUE(synthetic.ok()) << synthetic.status();
  EXPECT_EQ(synthetic->trace_path(), "");
  test.mutable_spec()->set_trace("/traces/resnet50-mix.vtrace");
  auto recorded = StepExecutor::BuildRequest(test, 100, 1);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  EXPECT_EQ(recorded->trace_path(), "/traces/resnet50-mix.vtrace");
}

TEST(StepExecutorTest, FallsBackToModelNameDefaultWarmupAndTimeout) {
  vanguard::v1::Test test = LeasedTest();
  test.mutable_model()->clear_served_name();
  test.mutable_spec()->clear_step_warmup();
  test.mutable_spec()->clear_request_timeout();
  auto request = StepExecutor::BuildRequest(test, 100, 1);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->model_name(), "resnet50");
  EXPECT_EQ(FromProtoDuration(request->warmup()), absl::Seconds(5));
  EXPECT_EQ(FromProtoDuration(request->request_timeout()), absl::Seconds(10));
}

TEST(StepExecutorTest, SeedIsStablePerStepAndDiffersAcrossStepsAndTests) {
  EXPECT_EQ(StepExecutor::StepSeed(42, 1), StepExecutor::StepSeed(42, 1));
  EXPECT_NE(StepExecutor::StepSeed(42, 1), StepExecutor::StepSeed(42, 2));
  EXPECT_NE(StepExecutor::StepSeed(42, 1), StepExecutor::StepSeed(43, 1));
}

TEST(StepExecutorTest, RejectsTestsItCannotRun) {
  vanguard::v1::Test no_endpoint = LeasedTest();
  no_endpoint.mutable_model()->clear_endpoints();
  auto r1 = StepExecutor::BuildRequest(no_endpoint, 100, 1);
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r1.status().message()), HasSubstr("model.endpoints"));

  vanguard::v1::Test no_duration = LeasedTest();
  no_duration.mutable_spec()->clear_step_duration();
  auto r2 = StepExecutor::BuildRequest(no_duration, 100, 1);
  EXPECT_THAT(std::string(r2.status().message()), HasSubstr("spec.step_duration"));

  EXPECT_EQ(StepExecutor::BuildRequest(LeasedTest(), 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(StepExecutorTest, DeadlineCoversWarmupDurationTimeoutAndMargin) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock, {.deadline_margin = absl::Seconds(7)});
  auto request = StepExecutor::BuildRequest(LeasedTest(), 100, 1);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(executor.Deadline(*request), absl::Seconds(3 + 20 + 2 + 7));
}

TEST(StepExecutorTest, CollectsWindowsAndResult) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto request = StepExecutor::BuildRequest(LeasedTest(), 100, 1);
  ASSERT_TRUE(request.ok());

  auto script = std::make_shared<StreamScript>();
  const vanguard::v1::StepResult result = MakeStepResult(100, 99.5, 10, 30);
  script->events = {WindowEvent(0, 98), WindowEvent(1, 101), ResultEvent(result)};
  script->before_read = [&clock] { clock.Advance(absl::Seconds(1)); };
  vanguard::v1::RunStepRequest sent;
  EXPECT_CALL(replayer, RunStepRaw(_, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        sent = r;
        return NewScriptedReader(script);
      });

  int windows_seen = 0;
  const absl::Time before = clock.Now();
  auto executed = executor.Execute(*request, nullptr,
                                   [&](const vanguard::v1::WindowMetrics&) { ++windows_seen; });
  ASSERT_TRUE(executed.ok()) << executed.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(sent, *request));
  EXPECT_EQ(windows_seen, 2);
  ASSERT_EQ(executed->windows.size(), 2u);
  EXPECT_EQ(executed->windows[1].achieved_qps(), 101);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(executed->result, result));
  EXPECT_EQ(executed->start_time, before);
  EXPECT_EQ(executed->end_time, before + absl::Seconds(4));  // four Reads, one per second
}

TEST(StepExecutorTest, StreamWithoutResultIsUnavailable) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto script = std::make_shared<StreamScript>();
  script->events = {WindowEvent(0), WindowEvent(1)};
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(script)));
  auto executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), nullptr, {});
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(executed.status().message()), HasSubstr("without a step result"));
}

TEST(StepExecutorTest, StreamErrorIsReturnedWithItsCode) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto script = std::make_shared<StreamScript>();
  script->events = {WindowEvent(0), ResultEvent(MakeStepResult(100, 100, 1, 2))};
  script->final_status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rate_qps too high");
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(script)));
  auto executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), nullptr, {});
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(executed.status().message()), HasSubstr("rate_qps too high"));
}

TEST(StepExecutorTest, ATargetTheReplayerRefusedFailsTheStepAtTheFirstWindow) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto script = std::make_shared<StreamScript>();
  vanguard::v1::RunStepEvent refused = WindowEvent(0);
  (*refused.mutable_window()->mutable_errors_by_class())[kTargetRefusedClass] = 50;
  script->events = {refused, WindowEvent(1), ResultEvent(MakeStepResult(100, 0, 0, 0))};
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(script)));
  int windows_seen = 0;
  auto executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), nullptr,
                                   [&](const vanguard::v1::WindowMetrics&) { ++windows_seen; });
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(executed.status().message()), HasSubstr("--allowed_targets"));
  EXPECT_EQ(windows_seen, 0);

  // Only in the result (a replayer that streamed no window) is refused too.
  auto result_only = std::make_shared<StreamScript>();
  vanguard::v1::StepResult result = MakeStepResult(100, 0, 0, 0);
  (*result.mutable_errors_by_class())[kTargetRefusedClass] = 1;
  result_only->events = {ResultEvent(result)};
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(result_only)));
  executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), nullptr, {});
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(StepExecutorTest, CancellationStopsReadingAtOnce) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto script = std::make_shared<StreamScript>();
  for (int i = 0; i < 10; ++i) script->events.push_back(WindowEvent(i));
  script->events.push_back(ResultEvent(MakeStepResult(100, 100, 1, 2)));
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(script)));
  CancellationToken cancel;
  auto executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), &cancel,
                                   [&](const vanguard::v1::WindowMetrics& w) {
                                     if (w.index() == 2) cancel.Cancel();
                                   });
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(script->reads, 3);
}

TEST(StepExecutorTest, AlreadyCancelledTokenCancelsTheCall) {
  vanguard::v1::MockReplayerStub replayer;
  FakeClock clock;
  StepExecutor executor(&replayer, &clock);
  auto script = std::make_shared<StreamScript>();
  script->events = {WindowEvent(0), ResultEvent(MakeStepResult(100, 100, 1, 2))};
  EXPECT_CALL(replayer, RunStepRaw(_, _)).WillOnce(Return(NewScriptedReader(script)));
  CancellationToken cancel;
  cancel.Cancel();
  auto executed = executor.Execute(*StepExecutor::BuildRequest(LeasedTest(), 100, 1), &cancel, {});
  EXPECT_EQ(executed.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(script->reads, 1);
}

}  // namespace
}  // namespace vanguard::worker
