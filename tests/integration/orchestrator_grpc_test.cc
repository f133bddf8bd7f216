// The orchestrator over real gRPC (in-process server on a loopback port 0) and a real
// PostgreSQL ($VANGUARD_TEST_PG): a client registers, submits and watches while a worker
// leases, reports and completes; errors arrive as gRPC status codes with the field named.
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/grpc_service.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

class OrchestratorGrpcTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    grpc_service_ = std::make_unique<OrchestratorGrpcService>(
        service_.get(),
        OrchestratorGrpcService::Options{.watch_poll_interval = absl::Milliseconds(20)},
        Clock::Real());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(grpc_service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    stub_ = v1::Orchestrator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return context;
  }

  std::unique_ptr<OrchestratorGrpcService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

// A worker killed while its LeaseTest long poll waits: the server sees the call cancelled
// and must not lease the next test to it (that test would wait out a lease nobody holds and
// lose one of its attempts; the chaos bench saw tests fail so).
TEST_F(OrchestratorGrpcTest, ALongPollWhoseCallerWentAwayLeasesNothing) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(stub_->RegisterModel(Context().get(), reg, &registered).ok());

  auto gone = Context();
  grpc::Status gone_status;
  std::thread poller([&] {
    v1::LeaseTestRequest lease;
    lease.set_worker_id("killed-while-polling");
    lease.mutable_wait()->set_seconds(20);
    v1::LeaseTestResponse leased;
    gone_status = stub_->LeaseTest(gone.get(), lease, &leased);
  });
  // Let the call start waiting on the empty queue, then cut it as a dying process would.
  absl::SleepFor(absl::Milliseconds(300));
  gone->TryCancel();
  poller.join();
  EXPECT_EQ(gone_status.error_code(), grpc::StatusCode::CANCELLED);

  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stub_->SubmitTest(Context().get(), submit, &submitted).ok());
  // The server's poll re-checks the queue every second (no notifier here): give it two.
  absl::SleepFor(absl::Milliseconds(2500));
  v1::GetTestRequest get;
  get.set_id(submitted.test().id());
  v1::GetTestResponse got;
  ASSERT_TRUE(stub_->GetTest(Context().get(), get, &got).ok());
  EXPECT_EQ(got.test().state(), v1::TEST_STATE_QUEUED) << got.test().lease_owner();
  EXPECT_EQ(got.test().attempt(), 0);

  // A live worker gets it, at its first attempt.
  v1::LeaseTestRequest lease;
  lease.set_worker_id("alive");
  v1::LeaseTestResponse leased;
  grpc::Status status = stub_->LeaseTest(Context().get(), lease, &leased);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(leased.test().id(), submitted.test().id());
  EXPECT_EQ(leased.attempt(), 1);
}

TEST_F(OrchestratorGrpcTest, SubmitWatchAndRunATestOverGrpc) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse reg_response;
  grpc::Status status = stub_->RegisterModel(Context().get(), reg, &reg_response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(reg_response.model().has_create_time());

  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  status = stub_->SubmitTest(Context().get(), submit, &submitted);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const int64_t id = submitted.test().id();

  // A client watches the test from a thread of its own while a worker runs it.
  std::vector<v1::Test> seen;
  grpc::Status watch_status;
  auto watch_context = Context();
  std::thread watcher([&] {
    v1::WatchTestRequest watch;
    watch.set_id(id);
    auto reader = stub_->WatchTest(watch_context.get(), watch);
    v1::WatchTestResponse update;
    while (reader->Read(&update)) seen.push_back(update.test());
    watch_status = reader->Finish();
  });

  v1::LeaseTestRequest lease;
  lease.set_worker_id("worker-grpc");
  v1::LeaseTestResponse leased;
  status = stub_->LeaseTest(Context().get(), lease, &leased);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(leased.test().id(), id);
  EXPECT_EQ(leased.test().model().name(), "resnet50");
  for (int i = 0; i < 3; ++i) {
    // Let the watcher observe intermediate states; what is asserted is only the order.
    absl::SleepFor(absl::Milliseconds(60));
    v1::ReportStepRequest report;
    report.set_test_id(id);
    report.set_attempt(leased.attempt());
    *report.mutable_step() = ValidStep(i, 10.0 * (i + 1));
    v1::ReportStepResponse reported;
    status = stub_->ReportStep(Context().get(), report, &reported);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  v1::CompleteTestRequest complete;
  complete.set_test_id(id);
  complete.set_attempt(leased.attempt());
  complete.mutable_result()->set_max_sustainable_qps(30);
  v1::CompleteTestResponse completed;
  status = stub_->CompleteTest(Context().get(), complete, &completed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  watcher.join();

  // The stream ended by itself, OK, with the finished test last.
  EXPECT_TRUE(watch_status.ok()) << watch_status.error_message();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.front().id(), id);
  EXPECT_EQ(seen.back().state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_EQ(seen.back().steps_size(), 3);
  EXPECT_DOUBLE_EQ(seen.back().result().max_sustainable_qps(), 30);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].state(), seen[i - 1].state()) << "states only move forward";
    EXPECT_GE(seen[i].steps_size(), seen[i - 1].steps_size());
    // Updates are sent only on change.
    EXPECT_FALSE(seen[i].state() == seen[i - 1].state() &&
                 seen[i].steps_size() == seen[i - 1].steps_size() &&
                 seen[i].has_result() == seen[i - 1].has_result() &&
                 seen[i].lease_owner() == seen[i - 1].lease_owner())
        << "update " << i << " repeats the previous one";
  }

  v1::GetTestRequest get;
  get.set_id(id);
  v1::GetTestResponse got;
  ASSERT_TRUE(stub_->GetTest(Context().get(), get, &got).ok());
  EXPECT_EQ(got.test().steps_size(), 3);
  v1::ListTestsRequest list;
  v1::ListTestsResponse listed;
  ASSERT_TRUE(stub_->ListTests(Context().get(), list, &listed).ok());
  ASSERT_EQ(listed.tests_size(), 1);
  EXPECT_EQ(listed.tests(0).state(), v1::TEST_STATE_SUCCEEDED);
  v1::ListModelsRequest list_models;
  v1::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(Context().get(), list_models, &models).ok());
  EXPECT_EQ(models.models_size(), 1);
}

TEST_F(OrchestratorGrpcTest, ErrorsArriveAsStatusCodesNamingTheField) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  reg.mutable_model()->set_endpoints(0, "not-a-url");
  v1::RegisterModelResponse reg_response;
  grpc::Status status = stub_->RegisterModel(Context().get(), reg, &reg_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("model.endpoints[0]: must be an http(s) URL"));

  v1::GetTestRequest get;
  get.set_id(4242);
  v1::GetTestResponse got;
  EXPECT_EQ(stub_->GetTest(Context().get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);

  v1::WatchTestRequest watch;
  watch.set_id(4242);
  auto context = Context();
  auto reader = stub_->WatchTest(context.get(), watch);
  v1::WatchTestResponse update;
  EXPECT_FALSE(reader->Read(&update));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);

  v1::HeartbeatRequest heartbeat;
  heartbeat.set_test_id(1);
  heartbeat.set_attempt(1);
  heartbeat.set_worker_id("w");
  v1::HeartbeatResponse hb;
  EXPECT_EQ(stub_->Heartbeat(Context().get(), heartbeat, &hb).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(OrchestratorGrpcTest, WatchEndsWhenTheClientCancels) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse reg_response;
  ASSERT_TRUE(stub_->RegisterModel(Context().get(), reg, &reg_response).ok());
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stub_->SubmitTest(Context().get(), submit, &submitted).ok());

  auto context = Context();
  v1::WatchTestRequest watch;
  watch.set_id(submitted.test().id());
  auto reader = stub_->WatchTest(context.get(), watch);
  v1::WatchTestResponse update;
  ASSERT_TRUE(reader->Read(&update));  // the current state comes at once
  EXPECT_EQ(update.test().state(), v1::TEST_STATE_QUEUED);
  context->TryCancel();
  while (reader->Read(&update)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The server thread noticed too: shutting down does not hang (TearDown has a deadline,
  // and the next call still works).
  v1::GetTestRequest get;
  get.set_id(submitted.test().id());
  v1::GetTestResponse got;
  EXPECT_TRUE(stub_->GetTest(Context().get(), get, &got).ok());
}

TEST_F(OrchestratorGrpcTest, ShutdownEndsOpenWatchesWithUnavailable) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse reg_response;
  ASSERT_TRUE(stub_->RegisterModel(Context().get(), reg, &reg_response).ok());
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stub_->SubmitTest(Context().get(), submit, &submitted).ok());

  auto context = Context();
  v1::WatchTestRequest watch;
  watch.set_id(submitted.test().id());
  auto reader = stub_->WatchTest(context.get(), watch);
  v1::WatchTestResponse update;
  ASSERT_TRUE(reader->Read(&update));
  grpc_service_->BeginShutdown();
  while (reader->Read(&update)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
}

}  // namespace
}  // namespace vanguard
