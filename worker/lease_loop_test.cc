// LeaseLoop: polling when the queue is empty, backing off when the orchestrator is down,
// running leased tests, and stopping.
#include "worker/lease_loop.h"

#include <memory>

#include "absl/time/clock.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/testing/orchestrator_stub_mock.h"
#include "vanguard/v1/replayer_mock.grpc.pb.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;

// A leased test the runner rejects at once (no strategy), so each run is one CompleteTest.
grpc::Status LeaseOneTest(grpc::ClientContext*, const vanguard::v1::LeaseTestRequest& request,
                          vanguard::v1::LeaseTestResponse* response) {
  response->set_attempt(1);
  response->mutable_test()->set_id(11);
  return grpc::Status::OK;
}

grpc::Status NoTestReady(grpc::ClientContext*, const vanguard::v1::LeaseTestRequest&,
                         vanguard::v1::LeaseTestResponse*) {
  return grpc::Status::OK;
}

class LeaseLoopTest : public ::testing::Test {
 protected:
  LeaseLoopTest()
      : client_(&orchestrator_),
        executor_(&replayer_, &clock_),
        runner_(&client_, &executor_, &clock_, {.worker_id = "w", .heartbeat_thread = false}) {
    options_.worker_id = "w";
    options_.poll_interval = absl::Seconds(1);
    options_.initial_backoff = absl::Seconds(1);
    options_.max_backoff = absl::Seconds(4);
  }

  NiceMock<vanguard::v1::OrchestratorStubMock> orchestrator_;
  NiceMock<vanguard::v1::MockReplayerStub> replayer_;
  FakeClock clock_;
  OrchestratorClient client_;
  StepExecutor executor_;
  TestRunner runner_;
  LeaseLoopOptions options_;
};

TEST_F(LeaseLoopTest, PollsUntilATestIsReadyThenRunsIt) {
  options_.max_tests = 1;
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _))
      .WillOnce(NoTestReady)
      .WillOnce(NoTestReady)
      .WillOnce(LeaseOneTest);
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(1);
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  loop.Run();
  EXPECT_EQ(loop.tests_run(), 1);
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(2));  // two poll intervals
}

TEST_F(LeaseLoopTest, BacksOffExponentiallyWhileTheOrchestratorIsDown) {
  options_.max_tests = 1;
  const grpc::Status down(grpc::StatusCode::UNAVAILABLE, "connection refused");
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _))
      .WillOnce(Return(down))
      .WillOnce(Return(down))
      .WillOnce(Return(down))
      .WillOnce(Return(down))
      .WillOnce(LeaseOneTest);
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  loop.Run();
  EXPECT_EQ(loop.tests_run(), 1);
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(1 + 2 + 4 + 4));  // capped at max_backoff
}

TEST_F(LeaseLoopTest, RunsTestsOneAfterAnotherUpToMaxTests) {
  options_.max_tests = 3;
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _)).Times(3).WillRepeatedly(LeaseOneTest);
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(3);
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  loop.Run();
  EXPECT_EQ(loop.tests_run(), 3);
}

TEST_F(LeaseLoopTest, StopEndsTheLoopWhileWaiting) {
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  int calls = 0;
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _))
      .WillRepeatedly([&](grpc::ClientContext* ctx, const vanguard::v1::LeaseTestRequest& r,
                          vanguard::v1::LeaseTestResponse* response) {
        if (++calls == 3) loop.Stop();
        return NoTestReady(ctx, r, response);
      });
  loop.Run();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(loop.tests_run(), 0);
}

TEST_F(LeaseLoopTest, ATestLeasedAsStopCameIsGivenBackAtOnce) {
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _))
      .WillOnce([&](grpc::ClientContext* ctx, const vanguard::v1::LeaseTestRequest& r,
                    vanguard::v1::LeaseTestResponse* response) {
        loop.Stop();  // SIGTERM while the lease call was on its way back
        return LeaseOneTest(ctx, r, response);
      });
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _))
      .WillOnce([](grpc::ClientContext*, const vanguard::v1::ReleaseTestRequest& r,
                   vanguard::v1::ReleaseTestResponse*) {
        EXPECT_EQ(r.test_id(), 11);
        EXPECT_EQ(r.attempt(), 1);
        EXPECT_EQ(r.worker_id(), "w");
        return grpc::Status::OK;
      });
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);
  loop.Run();
}

TEST_F(LeaseLoopTest, AsksForTheConfiguredLease) {
  options_.max_tests = 1;
  options_.lease_duration = absl::Seconds(45);
  EXPECT_CALL(orchestrator_, LeaseTest(_, _, _))
      .WillOnce([](grpc::ClientContext* ctx, const vanguard::v1::LeaseTestRequest& r,
                   vanguard::v1::LeaseTestResponse* response) {
        EXPECT_EQ(r.worker_id(), "w");
        EXPECT_EQ(r.lease_duration().seconds(), 45);
        // The long poll ends seconds before the call's deadline, so that the reply to a
        // lease taken at its very end is not lost to the deadline.
        EXPECT_EQ(r.wait().seconds(), 8);
        EXPECT_GE(absl::FromChrono(ctx->deadline()) - absl::Now(), absl::Seconds(9));
        return LeaseOneTest(ctx, r, response);
      });
  LeaseLoop loop(&client_, &runner_, &clock_, options_);
  loop.Run();
}

}  // namespace
}  // namespace vanguard::worker
