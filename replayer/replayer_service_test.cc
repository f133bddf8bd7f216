// The gRPC adapter, in-process on 127.0.0.1:0, against an in-process HTTP server.
#include "replayer/replayer_service.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "replayer/testing/fake_http_server.h"

namespace vanguard::replayer {
namespace {

using testing::FakeHttpServer;

class ReplayerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    stub_ = v1::Replayer::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                      grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  v1::RunStepRequest Request(double rate, int duration_ms) {
    v1::RunStepRequest r;
    r.set_target(http_.url());
    r.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
    r.set_model_name("fake");
    r.set_rate_qps(rate);
    r.mutable_duration()->set_seconds(duration_ms / 1000);
    r.mutable_duration()->set_nanos((duration_ms % 1000) * 1'000'000);
    r.mutable_window()->set_nanos(250'000'000);
    return r;
  }

  FakeHttpServer http_{[](int64_t) { return FakeHttpServer::Reply{}; }};
  ReplayerService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Replayer::Stub> stub_;
};

TEST_F(ReplayerServiceTest, StreamsWindowsThenOneResult) {
  grpc::ClientContext context;
  auto reader = stub_->RunStep(&context, Request(100, 1000));
  std::vector<v1::RunStepEvent> events;
  v1::RunStepEvent event;
  while (reader->Read(&event)) events.push_back(event);
  grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(events.size(), 5u);  // 4 windows of 250 ms, then the result
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(events[i].has_window()) << i;
    EXPECT_EQ(events[i].window().index(), i);
    EXPECT_EQ(events[i].window().scheduled(), 25);
  }
  ASSERT_TRUE(events.back().has_result());
  EXPECT_EQ(events.back().result().scheduled(), 100);
  EXPECT_EQ(events.back().result().completed(), 100);
  EXPECT_EQ(events.back().result().target_qps(), 100);
}

TEST_F(ReplayerServiceTest, InvalidRequestGetsInvalidArgumentNamingTheField) {
  grpc::ClientContext context;
  v1::RunStepRequest request = Request(100, 1000);
  request.set_rate_qps(-1);
  auto reader = stub_->RunStep(&context, request);
  v1::RunStepEvent event;
  EXPECT_FALSE(reader->Read(&event));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "rate_qps")) << status.error_message();

  grpc::ClientContext context2;
  request = Request(100, 1000);
  request.set_target("ftp://x");
  reader = stub_->RunStep(&context2, request);
  EXPECT_FALSE(reader->Read(&event));
  status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "target")) << status.error_message();
}

TEST_F(ReplayerServiceTest, OneStepAtATimeAndCancellationStopsTheStep) {
  grpc::ClientContext long_context;
  auto long_reader = stub_->RunStep(&long_context, Request(50, 60'000));
  v1::RunStepEvent event;
  ASSERT_TRUE(long_reader->Read(&event));  // the first window: the step is running
  ASSERT_TRUE(event.has_window());

  grpc::ClientContext second_context;
  auto second_reader = stub_->RunStep(&second_context, Request(50, 1000));
  EXPECT_FALSE(second_reader->Read(&event));
  grpc::Status second = second_reader->Finish();
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.error_message();

  long_context.TryCancel();
  while (long_reader->Read(&event)) {
  }
  EXPECT_EQ(long_reader->Finish().error_code(), grpc::StatusCode::CANCELLED);

  // The cancelled step released the replayer: a new step runs (the server notices the
  // cancellation within tens of milliseconds, so allow it a few attempts).
  grpc::Status status;
  for (int attempt = 0; attempt < 50; ++attempt) {
    grpc::ClientContext context;
    auto reader = stub_->RunStep(&context, Request(100, 250));
    while (reader->Read(&event)) {
    }
    status = reader->Finish();
    if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(event.has_result());
}

}  // namespace
}  // namespace vanguard::replayer
