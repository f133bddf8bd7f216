// Prices per accelerator-hour over real gRPC and PostgreSQL ($VANGUARD_TEST_PG), with the
// authorizer on: SetAcceleratorPrice is the admin's, ListAcceleratorPrices any reader's,
// bad prices and names are refused by name, a second set replaces the first, and
// PlanCapacity prices replicas with what was set (hand computation as in
// capacity_planning_test: price * accelerators per replica / (capacity * 3600) * 1e6).
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/authorizer.h"
#include "orchestrator/capacity_repository.h"
#include "orchestrator/grpc_service.h"
#include "orchestrator/token_repository.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

class AcceleratorPriceTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tokens_ = std::make_unique<TokenRepository>(pool_.get());
    authorizer_ = std::make_unique<Authorizer>(tokens_.get(), Clock::Real(), Authorizer::Options{});
    capacity_ = std::make_unique<CapacityRepository>(pool_.get());
    planner_ =
        std::make_unique<OrchestratorService>(models_.get(), tests_.get(), tokens_.get(), nullptr,
                                              capacity_.get(), OrchestratorService::Options());
    grpc_service_ = std::make_unique<OrchestratorGrpcService>(
        planner_.get(), OrchestratorGrpcService::Options{.authorizer = authorizer_.get()},
        Clock::Real());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(grpc_service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Orchestrator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
    for (v1::Role role : {v1::ROLE_READER, v1::ROLE_SUBMITTER, v1::ROLE_WORKER, v1::ROLE_ADMIN}) {
      absl::StatusOr<CreatedToken> token = tokens_->Create(RoleToDb(role), role);
      ASSERT_TRUE(token.ok()) << token.status();
      secrets_[role] = token->secret;
    }
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  std::unique_ptr<grpc::ClientContext> As(v1::Role role) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    ctx->AddMetadata("authorization", "Bearer " + secrets_[role]);
    return ctx;
  }

  grpc::Status SetPrice(v1::Role role, const std::string& accelerator, double price,
                        v1::SetAcceleratorPriceResponse* response = nullptr) {
    v1::SetAcceleratorPriceRequest request;
    request.set_accelerator(accelerator);
    request.set_price_per_hour(price);
    v1::SetAcceleratorPriceResponse ignored;
    return stub_->SetAcceleratorPrice(As(role).get(), request,
                                      response != nullptr ? response : &ignored);
  }

  v1::ListAcceleratorPricesResponse List(v1::Role role) {
    v1::ListAcceleratorPricesResponse response;
    grpc::Status status =
        stub_->ListAcceleratorPrices(As(role).get(), v1::ListAcceleratorPricesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // resnet50 v2 on two nvidia-l4 per replica, measured at 100 req/s by a finished test.
  void MeasureOnL4() {
    v1::Model model = ValidModel("resnet50", "v2");
    model.mutable_hardware()->set_accelerator("nvidia-l4");
    model.mutable_hardware()->set_accelerator_count(2);
    const int64_t model_id = RegisterModelId(model);
    v1::TestSpec spec = ValidSpec();
    spec.set_model_version("v2");
    absl::StatusOr<v1::Test> submitted = tests_->Submit(spec, model_id, "");
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("w1", absl::Seconds(30));
    ASSERT_TRUE(leased.ok() && leased->has_value());
    v1::TestResult result;
    result.set_max_sustainable_qps(100);
    result.set_confidence_low_qps(100);
    result.set_confidence_high_qps(110);
    result.set_converged(true);
    absl::StatusOr<v1::Test> done =
        tests_->Complete(submitted->id(), (**leased).attempt(), result, "");
    ASSERT_TRUE(done.ok()) << done.status();
  }

  v1::ReplicaPlan PlanOnL4(v1::Role role) {
    v1::PlanCapacityRequest request;
    request.set_model("resnet50");
    request.set_peak_qps(400);
    request.set_headroom(0.3);
    request.set_survive_loss(1);
    v1::PlanCapacityResponse response;
    grpc::Status status = stub_->PlanCapacity(As(role).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.plans_size(), 1);
    return response.plans_size() == 1 ? response.plans(0) : v1::ReplicaPlan();
  }

  std::unique_ptr<TokenRepository> tokens_;
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<CapacityRepository> capacity_;
  std::unique_ptr<OrchestratorService> planner_;
  std::unique_ptr<OrchestratorGrpcService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
  std::map<v1::Role, std::string> secrets_;
};

TEST_F(AcceleratorPriceTest, AnAdminSetsAPriceAndEveryReaderListsIt) {
  v1::SetAcceleratorPriceResponse set;
  grpc::Status status = SetPrice(v1::ROLE_ADMIN, "nvidia-l4", 2.5, &set);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(set.price().accelerator(), "nvidia-l4");
  EXPECT_EQ(set.price().price_per_hour(), 2.5);
  EXPECT_EQ(set.price().currency(), "USD");
  EXPECT_GT(set.price().update_time().seconds(), 0);
  ASSERT_TRUE(SetPrice(v1::ROLE_ADMIN, "cpu", 0.36).ok());

  for (v1::Role role : {v1::ROLE_READER, v1::ROLE_SUBMITTER, v1::ROLE_ADMIN}) {
    v1::ListAcceleratorPricesResponse list = List(role);
    ASSERT_EQ(list.prices_size(), 2) << RoleToDb(role);
    EXPECT_EQ(list.prices(0).accelerator(), "cpu");  // by accelerator
    EXPECT_EQ(list.prices(0).price_per_hour(), 0.36);
    EXPECT_EQ(list.prices(1).accelerator(), "nvidia-l4");
    EXPECT_EQ(list.prices(1).price_per_hour(), 2.5);
  }
  // The row a planner's SQL reads.
  EXPECT_EQ(
      Sql("SELECT price_per_hour FROM accelerator_prices WHERE accelerator = 'nvidia-l4'")[0][0]
          .as<double>(),
      2.5);
}

TEST_F(AcceleratorPriceTest, OnlyAnAdminMaySetAPrice) {
  for (v1::Role role : {v1::ROLE_SUBMITTER, v1::ROLE_READER, v1::ROLE_WORKER}) {
    grpc::Status status = SetPrice(role, "nvidia-l4", 2.5);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << RoleToDb(role);
    EXPECT_THAT(
        status.error_message(),
        HasSubstr(absl::StrCat("role ", RoleToDb(role), " may not call SetAcceleratorPrice")));
  }
  v1::ListAcceleratorPricesResponse response;
  EXPECT_EQ(stub_
                ->ListAcceleratorPrices(As(v1::ROLE_WORKER).get(),
                                        v1::ListAcceleratorPricesRequest(), &response)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(List(v1::ROLE_ADMIN).prices_size(), 0) << "a refused set stored nothing";
}

TEST_F(AcceleratorPriceTest, RefusesBadPricesAndNamesByField) {
  struct Case {
    std::string accelerator;
    double price;
    std::string message;
  };
  const Case cases[] = {
      {"nvidia-l4", std::numeric_limits<double>::quiet_NaN(), "price_per_hour: must be a finite"},
      {"nvidia-l4", std::numeric_limits<double>::infinity(), "price_per_hour: must be a finite"},
      {"nvidia-l4", -0.01, "price_per_hour: must be >= 0"},
      {"nvidia-l4", 1e6 + 1, "price_per_hour: must be at most 1000000"},
      {"nvidia-l4", 1e300, "price_per_hour: must be at most 1000000"},
      {"", 1, "accelerator: must not be empty"},
      {std::string(201, 'a'), 1, "accelerator: must be at most 200 characters"},
      {"nvidia l4", 1, "accelerator: may contain only letters"},
      {"l4'; DROP TABLE accelerator_prices; --", 1, "accelerator: may contain only letters"},
  };
  for (const Case& c : cases) {
    grpc::Status status = SetPrice(v1::ROLE_ADMIN, c.accelerator, c.price);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
  EXPECT_EQ(List(v1::ROLE_ADMIN).prices_size(), 0);
  // The bounds themselves are accepted.
  EXPECT_TRUE(SetPrice(v1::ROLE_ADMIN, "free", 0).ok());
  EXPECT_TRUE(SetPrice(v1::ROLE_ADMIN, std::string(200, 'a'), 1e6).ok());
  EXPECT_EQ(List(v1::ROLE_ADMIN).prices_size(), 2);
}

TEST_F(AcceleratorPriceTest, PlanCapacityPricesWithThePriceSetAndASecondSetReplacesIt) {
  MeasureOnL4();
  if (HasFatalFailure()) return;
  EXPECT_FALSE(PlanOnL4(v1::ROLE_READER).has_cost_per_million_requests()) << "no price yet";

  ASSERT_TRUE(SetPrice(v1::ROLE_ADMIN, "nvidia-l4", 2.5).ok());
  v1::ReplicaPlan plan = PlanOnL4(v1::ROLE_READER);
  ASSERT_TRUE(plan.has_cost_per_million_requests());
  // 2.5 $/h * 2 accelerators / (100 req/s * 3600 s) * 1e6
  EXPECT_NEAR(plan.cost_per_million_requests(), 13.888888888888889, 1e-9);

  v1::SetAcceleratorPriceResponse again;
  ASSERT_TRUE(SetPrice(v1::ROLE_ADMIN, "nvidia-l4", 5, &again).ok());
  EXPECT_EQ(again.price().price_per_hour(), 5);
  plan = PlanOnL4(v1::ROLE_READER);
  ASSERT_TRUE(plan.has_cost_per_million_requests());
  EXPECT_NEAR(plan.cost_per_million_requests(), 27.777777777777779, 1e-9);
  ASSERT_EQ(List(v1::ROLE_READER).prices_size(), 1) << "the second set replaced the first";
}

}  // namespace
}  // namespace vanguard
