// Identity-bound leases over real gRPC and PostgreSQL ($VANGUARD_TEST_PG): with auth on, a
// test belongs to the worker token that leased it. A second worker token (or an admin
// token) trying any lease call on it is refused with PERMISSION_DENIED and changes nothing,
// whatever worker_id it sends; the holder's calls still work; a test leased again after
// its lease expired belongs to the new holder. Without auth, leases behave as before.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "database_test_base.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/authorizer.h"
#include "orchestrator/grpc_service.h"
#include "orchestrator/lease_reaper.h"
#include "orchestrator/token_repository.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using Stub = v1::Orchestrator::Stub;

// One lease-holder call on (test, attempt), sent with `worker_id` where the request has one.
using LeaseCall = std::function<grpc::Status(Stub&, grpc::ClientContext&, int64_t test_id,
                                             int32_t attempt, const std::string& worker_id)>;

// Every call a worker makes on a test it holds, by method name.
std::map<std::string, LeaseCall> LeaseCalls() {
  return {
      {"Heartbeat",
       [](Stub& stub, grpc::ClientContext& ctx, int64_t id, int32_t attempt,
          const std::string& worker_id) {
         v1::HeartbeatRequest request;
         request.set_test_id(id);
         request.set_attempt(attempt);
         request.set_worker_id(worker_id);
         request.mutable_lease_duration()->set_seconds(600);
         v1::HeartbeatResponse response;
         return stub.Heartbeat(&ctx, request, &response);
       }},
      {"ReportStep",
       [](Stub& stub, grpc::ClientContext& ctx, int64_t id, int32_t attempt, const std::string&) {
         v1::ReportStepRequest request;
         request.set_test_id(id);
         request.set_attempt(attempt);
         *request.mutable_step() = ValidStep(7, 70);
         v1::ReportStepResponse response;
         return stub.ReportStep(&ctx, request, &response);
       }},
      {"ReportProgress",
       [](Stub& stub, grpc::ClientContext& ctx, int64_t id, int32_t attempt,
          const std::string& worker_id) {
         v1::ReportProgressRequest request;
         request.set_test_id(id);
         request.set_attempt(attempt);
         request.set_worker_id(worker_id);
         request.mutable_progress()->set_step_index(7);
         request.mutable_progress()->set_offered_qps(70);
         request.mutable_progress()->add_windows()->set_achieved_qps(69);
         v1::ReportProgressResponse response;
         return stub.ReportProgress(&ctx, request, &response);
       }},
      {"CompleteTest",
       [](Stub& stub, grpc::ClientContext& ctx, int64_t id, int32_t attempt, const std::string&) {
         v1::CompleteTestRequest request;
         request.set_test_id(id);
         request.set_attempt(attempt);
         request.mutable_result()->set_max_sustainable_qps(1e6);
         v1::CompleteTestResponse response;
         return stub.CompleteTest(&ctx, request, &response);
       }},
      {"ReleaseTest",
       [](Stub& stub, grpc::ClientContext& ctx, int64_t id, int32_t attempt,
          const std::string& worker_id) {
         v1::ReleaseTestRequest request;
         request.set_test_id(id);
         request.set_attempt(attempt);
         request.set_worker_id(worker_id);
         request.set_reason("not mine to give back");
         v1::ReleaseTestResponse response;
         return stub.ReleaseTest(&ctx, request, &response);
       }},
  };
}

class LeaseIdentityTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    model_id_ = RegisterModelId(ValidModel());
    tokens_ = std::make_unique<TokenRepository>(pool_.get());
    authorizer_ = std::make_unique<Authorizer>(tokens_.get(), Clock::Real());
    for (const auto& [name, role] :
         {std::pair{"worker-a", v1::ROLE_WORKER}, std::pair{"worker-b", v1::ROLE_WORKER},
          std::pair{"admin", v1::ROLE_ADMIN}}) {
      absl::StatusOr<CreatedToken> token = tokens_->Create(name, role);
      ASSERT_TRUE(token.ok()) << token.status();
      bearer_[name] = "Bearer " + token->secret;
    }
    StartServer(authorizer_.get());
  }

  void TearDown() override { StopServer(); }

  // Serves the orchestrator with `authorizer` (nullptr: auth off).
  void StartServer(Authorizer* authorizer) {
    StopServer();
    grpc_service_ = std::make_unique<OrchestratorGrpcService>(
        service_.get(), OrchestratorGrpcService::Options{.authorizer = authorizer}, Clock::Real());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(grpc_service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Orchestrator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }

  void StopServer() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }

  // A context carrying the bearer token named `token` ("" for none).
  std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!token.empty()) ctx->AddMetadata("authorization", bearer_.at(token));
    return ctx;
  }

  int64_t Submit() {
    v1::TestSpec spec = ValidSpec();
    spec.set_max_attempts(3);
    absl::StatusOr<v1::Test> test = tests_->Submit(spec, model_id_, "");
    EXPECT_TRUE(test.ok()) << test.status();
    return test.ok() ? test->id() : 0;
  }

  // Leases the next test as token `token` under `worker_id`; returns (test id, attempt).
  std::pair<int64_t, int32_t> LeaseAs(const std::string& token, const std::string& worker_id) {
    v1::LeaseTestRequest request;
    request.set_worker_id(worker_id);
    v1::LeaseTestResponse response;
    grpc::Status status = stub_->LeaseTest(As(token).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(response.has_test()) << "nothing to lease";
    return {response.test().id(), response.attempt()};
  }

  grpc::Status Call(const std::string& method, const std::string& token, int64_t id,
                    int32_t attempt, const std::string& worker_id) {
    return LeaseCalls().at(method)(*stub_, *As(token), id, attempt, worker_id);
  }

  // Everything a lease call could change about test `id`.
  auto Snapshot(int64_t id) {
    pqxx::row r = SqlParams(
        "SELECT state, attempt, coalesce(lease_owner, ''), lease_expires_at::text,"
        "   max_attempts, coalesce(requeue_reason, ''), cancel_requested,"
        "   (SELECT count(*) FROM steps WHERE test_id = t.id),"
        "   (SELECT count(*) FROM results WHERE test_id = t.id),"
        "   (SELECT coalesce(max(updated_at)::text, '') FROM test_progress WHERE test_id = t.id)"
        " FROM tests t WHERE id = $1",
        id)[0];
    return std::make_tuple(std::string(r[0].c_str()), r[1].as<int>(), std::string(r[2].c_str()),
                           std::string(r[3].is_null() ? "" : r[3].c_str()), r[4].as<int>(),
                           std::string(r[5].c_str()), r[6].as<bool>(), r[7].as<int64_t>(),
                           r[8].as<int64_t>(), std::string(r[9].c_str()));
  }

  v1::Test Get(int64_t id) {
    absl::StatusOr<v1::Test> test = tests_->Get(id);
    EXPECT_TRUE(test.ok()) << test.status();
    return test.ok() ? *test : v1::Test();
  }

  // Expires the lease of test `id` and lets the reaper queue it again at once.
  void ExpireAndRequeue(int64_t id) {
    ExpireLease(id);
    LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
    absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
    ASSERT_TRUE(pass.ok()) << pass.status();
    ASSERT_EQ(pass->requeued, 1);
  }

  int64_t model_id_ = 0;
  std::unique_ptr<TokenRepository> tokens_;
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<OrchestratorGrpcService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Stub> stub_;
  std::map<std::string, std::string> bearer_;  // by token name
};

TEST_F(LeaseIdentityTest, EveryWorkerCallBesidesLeaseAndReadsIsALeaseCallCoveredHere) {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "vanguard.v1.Orchestrator");
  ASSERT_NE(service, nullptr);
  const std::map<std::string, LeaseCall> calls = LeaseCalls();
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string& method = service->method(i)->name();
    if (!RoleAllows(v1::ROLE_WORKER, method)) continue;
    if (method == "LeaseTest" || method == "GetModel" || method == "GetTest") continue;
    EXPECT_TRUE(calls.contains(method)) << method << " is a lease call this test does not try";
  }
}

TEST_F(LeaseIdentityTest, ASecondWorkerTokenIsRefusedEveryLeaseCallAndChangesNothing) {
  const int64_t submitted = Submit();
  auto [id, attempt] = LeaseAs("worker-a", "a-1");
  ASSERT_EQ(id, submitted);
  ASSERT_TRUE(Call("ReportStep", "worker-a", id, attempt, "a-1").ok());
  const auto before = Snapshot(id);

  for (const auto& [method, call] : LeaseCalls()) {
    // Under its own name, and claiming the holder's worker_id: the token decides.
    for (const std::string worker_id : {"b-1", "a-1"}) {
      grpc::Status status = Call(method, "worker-b", id, attempt, worker_id);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
          << method << " by worker-b as " << worker_id << ": " << status.error_message();
      EXPECT_THAT(status.error_message(), HasSubstr("another worker token")) << method;
      EXPECT_EQ(Snapshot(id), before) << method << " by worker-b as " << worker_id;
    }
  }

  // The holder is unaffected: it heartbeats, reports and completes.
  EXPECT_TRUE(Call("Heartbeat", "worker-a", id, attempt, "a-1").ok());
  EXPECT_TRUE(Call("ReportStep", "worker-a", id, attempt, "a-1").ok());
  grpc::Status done = Call("CompleteTest", "worker-a", id, attempt, "a-1");
  ASSERT_TRUE(done.ok()) << done.error_message();
  v1::Test finished = Get(id);
  EXPECT_EQ(finished.state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_EQ(finished.steps_size(), 1);
}

TEST_F(LeaseIdentityTest, TheHolderMayReleaseAndAnotherWorkerThenHoldsTheTest) {
  Submit();
  auto [id, attempt] = LeaseAs("worker-a", "a-1");
  grpc::Status released = Call("ReleaseTest", "worker-a", id, attempt, "a-1");
  ASSERT_TRUE(released.ok()) << released.error_message();
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_QUEUED);

  auto [again, next] = LeaseAs("worker-b", "b-1");
  ASSERT_EQ(again, id);
  ASSERT_EQ(next, attempt + 1);
  const auto before = Snapshot(id);
  for (const auto& [method, call] : LeaseCalls()) {
    EXPECT_EQ(Call(method, "worker-a", id, next, "a-1").error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << method << " by the former holder on the new attempt";
    EXPECT_EQ(Call(method, "worker-a", id, attempt, "a-1").error_code(),
              grpc::StatusCode::FAILED_PRECONDITION)
        << method << " by the former holder on its own, released attempt";
  }
  EXPECT_EQ(Snapshot(id), before);
  EXPECT_TRUE(Call("Heartbeat", "worker-b", id, next, "b-1").ok());
}

TEST_F(LeaseIdentityTest, ATestLeasedAgainAfterExpiryBelongsToTheNewHolder) {
  Submit();
  auto [id, first] = LeaseAs("worker-a", "a-1");
  ExpireAndRequeue(id);
  auto [again, second] = LeaseAs("worker-b", "b-1");
  ASSERT_EQ(again, id);
  ASSERT_EQ(second, first + 1);
  const auto before = Snapshot(id);

  for (const auto& [method, call] : LeaseCalls()) {
    // The old holder's stale attempt is fenced as before (its lease is lost) ...
    EXPECT_EQ(Call(method, "worker-a", id, first, "a-1").error_code(),
              grpc::StatusCode::FAILED_PRECONDITION)
        << method << " with the expired attempt";
    // ... and knowing the new attempt does not make it the holder.
    EXPECT_EQ(Call(method, "worker-a", id, second, "b-1").error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << method << " by the old holder on the new attempt";
  }
  EXPECT_EQ(Snapshot(id), before);

  EXPECT_TRUE(Call("Heartbeat", "worker-b", id, second, "b-1").ok());
  EXPECT_TRUE(Call("ReportStep", "worker-b", id, second, "b-1").ok());
  EXPECT_TRUE(Call("CompleteTest", "worker-b", id, second, "b-1").ok());
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_SUCCEEDED);
}

TEST_F(LeaseIdentityTest, AnAdminTokenMayCancelButNotActAsTheHolder) {
  Submit();
  auto [id, attempt] = LeaseAs("worker-a", "a-1");
  const auto before = Snapshot(id);
  for (const auto& [method, call] : LeaseCalls()) {
    EXPECT_EQ(Call(method, "admin", id, attempt, "a-1").error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << method << " by an admin token on a worker's lease";
  }
  EXPECT_EQ(Snapshot(id), before);

  v1::CancelTestRequest cancel;
  cancel.set_id(id);
  v1::CancelTestResponse cancelled;
  ASSERT_TRUE(stub_->CancelTest(As("admin").get(), cancel, &cancelled).ok());
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_test_id(id);
  heartbeat.set_attempt(attempt);
  heartbeat.set_worker_id("a-1");
  v1::HeartbeatResponse beat;
  ASSERT_TRUE(stub_->Heartbeat(As("worker-a").get(), heartbeat, &beat).ok());
  EXPECT_TRUE(beat.cancel_requested()) << "the holder learns of the admin's cancel";
}

TEST_F(LeaseIdentityTest, WithoutAuthLeasesAreFencedByAttemptAndWorkerIdAsBefore) {
  StartServer(nullptr);
  Submit();
  auto [id, attempt] = LeaseAs("", "a-1");
  // Heartbeat, progress and release name the owner; a different worker_id is refused as
  // before.
  EXPECT_EQ(Call("Heartbeat", "", id, attempt, "b-1").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Call("ReportProgress", "", id, attempt, "b-1").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(Call("ReportProgress", "", id, attempt, "a-1").ok());
  EXPECT_EQ(Call("ReleaseTest", "", id, attempt, "b-1").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // Steps and completion carry the attempt only.
  EXPECT_TRUE(Call("ReportStep", "", id, attempt, "b-1").ok());
  EXPECT_TRUE(Call("Heartbeat", "", id, attempt, "a-1").ok());
  EXPECT_TRUE(Call("CompleteTest", "", id, attempt, "b-1").ok());
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace vanguard
