// LeaseKeeper: when heartbeats are sent (on the injected clock), what the replies turn
// into (cancel, lease lost), and that they stop the step in flight.
#include "worker/lease_keeper.h"

#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/testing/orchestrator_stub_mock.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;
using ::testing::Truly;

class LeaseKeeperTest : public ::testing::Test {
 protected:
  LeaseKeeperTest() : client_(&orchestrator_) {
    options_.worker_id = "w1";
    options_.lease_duration = absl::Seconds(30);
  }

  std::unique_ptr<LeaseKeeper> Keeper() {
    return std::make_unique<LeaseKeeper>(&client_, &clock_, /*test_id=*/5, /*attempt=*/3, options_,
                                         &step_cancel_);
  }

  NiceMock<vanguard::v1::OrchestratorStubMock> orchestrator_;
  OrchestratorClient client_;
  FakeClock clock_;
  LeaseKeeperOptions options_;
  CancellationToken step_cancel_;
};

TEST_F(LeaseKeeperTest, BeatsEveryThirdOfTheLease) {
  auto keeper = Keeper();
  EXPECT_EQ(keeper->interval(), absl::Seconds(10));
  EXPECT_CALL(orchestrator_, Heartbeat(_, Truly([](const vanguard::v1::HeartbeatRequest& r) {
                                         return r.test_id() == 5 && r.attempt() == 3 &&
                                                r.worker_id() == "w1" &&
                                                r.lease_duration().seconds() == 30;
                                       }),
                                       _))
      .Times(2)
      .WillRepeatedly(Return(grpc::Status::OK));
  keeper->MaybeBeat();  // just leased: not due
  clock_.Advance(absl::Seconds(9));
  keeper->MaybeBeat();  // 9 s: not due
  clock_.Advance(absl::Seconds(1));
  keeper->MaybeBeat();  // 10 s: beat
  keeper->MaybeBeat();  // again at once: not due
  clock_.Advance(absl::Seconds(10));
  keeper->MaybeBeat();  // 20 s: beat
  EXPECT_FALSE(keeper->cancel_requested());
  EXPECT_FALSE(keeper->lease_lost());
  EXPECT_FALSE(step_cancel_.IsCancelled());
}

TEST_F(LeaseKeeperTest, FailedBeatIsRetriedSooner) {
  auto keeper = Keeper();
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")))
      .WillOnce(Return(grpc::Status::OK));
  clock_.Advance(absl::Seconds(10));
  keeper->MaybeBeat();  // fails
  clock_.Advance(absl::Seconds(3));
  keeper->MaybeBeat();  // 3 s later: not yet (retry after interval / 3 = 3.33 s)
  clock_.Advance(absl::Seconds(1));
  keeper->MaybeBeat();  // retried
  EXPECT_FALSE(keeper->lease_lost());
}

TEST_F(LeaseKeeperTest, CancelRequestedCancelsTheStep) {
  auto keeper = Keeper();
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce([](grpc::ClientContext*, const vanguard::v1::HeartbeatRequest&,
                   vanguard::v1::HeartbeatResponse* response) {
        response->set_cancel_requested(true);
        return grpc::Status::OK;
      });
  clock_.Advance(absl::Seconds(10));
  keeper->MaybeBeat();
  EXPECT_TRUE(keeper->cancel_requested());
  EXPECT_FALSE(keeper->lease_lost());
  EXPECT_TRUE(step_cancel_.IsCancelled());
}

TEST_F(LeaseKeeperTest, FailedPreconditionLosesTheLeaseAndStopsBeating) {
  auto keeper = Keeper();
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "lease lost")));
  clock_.Advance(absl::Seconds(10));
  keeper->MaybeBeat();
  EXPECT_TRUE(keeper->lease_lost());
  EXPECT_TRUE(step_cancel_.IsCancelled());
  clock_.Advance(absl::Seconds(60));
  keeper->MaybeBeat();  // no second call
}

TEST_F(LeaseKeeperTest, BackgroundThreadBeatsWhenDue) {
  options_.background_tick = absl::Milliseconds(1);
  auto keeper = Keeper();
  absl::Notification beat;
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::HeartbeatRequest&,
                    vanguard::v1::HeartbeatResponse*) {
        beat.Notify();
        return grpc::Status::OK;
      });
  clock_.Advance(absl::Seconds(10));
  keeper->StartBackgroundBeats();
  // Bounded wait for the other thread, not a timing assertion.
  EXPECT_TRUE(beat.WaitForNotificationWithTimeout(absl::Seconds(30)));
  keeper->StopBackgroundBeats();
}

}  // namespace
}  // namespace vanguard::worker
