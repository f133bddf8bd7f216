// Bearer-token auth over real gRPC and PostgreSQL ($VANGUARD_TEST_PG): every RPC x every role
// plus a missing and a wrong token, revocation, and that only hashes are stored.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/authorizer.h"
#include "orchestrator/grpc_service.h"
#include "orchestrator/metrics.h"
#include "orchestrator/team_repository.h"
#include "orchestrator/token_repository.h"
#include "tests/integration/watch_stream.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using Stub = v1::Orchestrator::Stub;
// Calls one RPC with a request that is harmless (and mostly invalid: what matters here is
// whether the call got past authorization).
using RpcCall = std::function<grpc::StatusCode(Stub&, grpc::ClientContext&)>;

template <typename Request, typename Response>
RpcCall Unary(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
              Request request = Request()) {
  return [method, request](Stub& stub, grpc::ClientContext& ctx) {
    Response response;
    return (stub.*method)(&ctx, request, &response).error_code();
  };
}

std::map<std::string, RpcCall> AllRpcs() {
  v1::LeaseTestRequest lease;  // no worker_id: answered at once, no long poll
  return {
      {"RegisterModel", Unary(&Stub::RegisterModel)},
      {"GetModel", Unary(&Stub::GetModel)},
      {"ListModels", Unary(&Stub::ListModels)},
      {"DeprecateModel", Unary(&Stub::DeprecateModel)},
      {"SubmitTest", Unary(&Stub::SubmitTest)},
      {"GetTest", Unary(&Stub::GetTest)},
      {"ListTests", Unary(&Stub::ListTests)},
      {"CancelTest", Unary(&Stub::CancelTest)},
      {"WatchTest",
       [](Stub& stub, grpc::ClientContext& ctx) {
         v1::WatchTestRequest request;  // id 0: invalid
         auto reader = stub.WatchTest(&ctx, request);
         v1::WatchTestResponse response;
         while (reader->Read(&response)) {
         }
         return reader->Finish().error_code();
       }},
      {"LeaseTest", Unary(&Stub::LeaseTest, lease)},
      {"Heartbeat", Unary(&Stub::Heartbeat)},
      {"ReportStep", Unary(&Stub::ReportStep)},
      {"ReportProgress", Unary(&Stub::ReportProgress)},
      {"CompleteTest", Unary(&Stub::CompleteTest)},
      {"ReleaseTest", Unary(&Stub::ReleaseTest)},
      {"AcceptBaseline", Unary(&Stub::AcceptBaseline)},
      {"ListRegressions", Unary(&Stub::ListRegressions)},
      {"GetCapacityTrend", Unary(&Stub::GetCapacityTrend)},
      {"PlanCapacity", Unary(&Stub::PlanCapacity)},
      {"SetAcceleratorPrice", Unary(&Stub::SetAcceleratorPrice)},
      {"ListAcceleratorPrices", Unary(&Stub::ListAcceleratorPrices)},
      {"CreateToken", Unary(&Stub::CreateToken)},
      {"RevokeToken", Unary(&Stub::RevokeToken)},
      {"ListTokens", Unary(&Stub::ListTokens)},
      {"SetTeamQuota", Unary(&Stub::SetTeamQuota)},
      {"GetTeamQuota", Unary(&Stub::GetTeamQuota)},
      {"SetSchedule", Unary(&Stub::SetSchedule)},
      {"ListSchedules", Unary(&Stub::ListSchedules)},
      {"DeleteSchedule", Unary(&Stub::DeleteSchedule)},
      {"AddWebhook", Unary(&Stub::AddWebhook)},
      {"ListWebhooks", Unary(&Stub::ListWebhooks)},
      {"DeleteWebhook", Unary(&Stub::DeleteWebhook)},
      {"ListWebhookDeliveries", Unary(&Stub::ListWebhookDeliveries)},
  };
}

class AuthTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tokens_ = std::make_unique<TokenRepository>(pool_.get());
    // Tokens stay cached for a long time here: revocation must still act at once (the
    // replica clears its cache when it revokes).
    authorizer_ = std::make_unique<Authorizer>(tokens_.get(), Clock::Real(),
                                               Authorizer::Options{.cache_ttl = absl::Hours(1)});
    teams_ = std::make_unique<TeamRepository>(pool_.get());
    service_ = std::make_unique<OrchestratorService>(models_.get(), tests_.get(), tokens_.get(),
                                                     nullptr, nullptr, teams_.get(),
                                                     OrchestratorService::Options());
    grpc_service_ = std::make_unique<OrchestratorGrpcService>(
        service_.get(), OrchestratorGrpcService::Options{.authorizer = authorizer_.get()},
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

  grpc::StatusCode CallAs(const std::string& authorization, const RpcCall& call) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    return call(*stub_, ctx);
  }

  // A call with the given bearer secret and a deadline.
  std::unique_ptr<grpc::ClientContext> As(const std::string& secret) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    ctx->AddMetadata("authorization", "Bearer " + secret);
    return ctx;
  }

  // A submitter token of `team`, created by the admin through the API.
  std::string SubmitterOf(const std::string& team) {
    v1::CreateTokenRequest create;
    create.set_name("submitter-" + team);
    create.set_role(v1::ROLE_SUBMITTER);
    create.set_team(team);
    v1::CreateTokenResponse created;
    grpc::Status status = stub_->CreateToken(As(secrets_[v1::ROLE_ADMIN]).get(), create, &created);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(created.token().team(), team);
    return created.secret();
  }

  std::unique_ptr<TokenRepository> tokens_;
  std::unique_ptr<TeamRepository> teams_;
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<OrchestratorGrpcService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Stub> stub_;
  std::map<v1::Role, std::string> secrets_;
};

TEST_F(AuthTest, EveryRpcTimesEveryRoleMissingAndWrongToken) {
  const std::map<std::string, RpcCall> rpcs = AllRpcs();
  ASSERT_EQ(rpcs.size(),
            static_cast<size_t>(google::protobuf::DescriptorPool::generated_pool()
                                    ->FindServiceByName("vanguard.v1.Orchestrator")
                                    ->method_count()));  // all covered
  for (const auto& [method, call] : rpcs) {
    EXPECT_EQ(CallAs("", call), grpc::StatusCode::UNAUTHENTICATED) << method << " without token";
    EXPECT_EQ(CallAs("Bearer not-a-token", call), grpc::StatusCode::UNAUTHENTICATED)
        << method << " with a wrong token";
    EXPECT_EQ(CallAs(secrets_[v1::ROLE_ADMIN], call), grpc::StatusCode::UNAUTHENTICATED)
        << method << " with the secret but no Bearer scheme";
    for (const auto& [role, secret] : secrets_) {
      const grpc::StatusCode code = CallAs("Bearer " + secret, call);
      if (RoleAllows(role, method)) {
        EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << method << " as " << RoleToDb(role);
        EXPECT_NE(code, grpc::StatusCode::PERMISSION_DENIED) << method << " as " << RoleToDb(role);
      } else {
        EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED) << method << " as " << RoleToDb(role);
      }
    }
  }
  // The matrix itself, as the issue states it.
  EXPECT_TRUE(RoleAllows(v1::ROLE_READER, "WatchTest"));
  EXPECT_FALSE(RoleAllows(v1::ROLE_READER, "SubmitTest"));
  EXPECT_TRUE(RoleAllows(v1::ROLE_SUBMITTER, "RegisterModel"));
  EXPECT_FALSE(RoleAllows(v1::ROLE_SUBMITTER, "LeaseTest"));
  EXPECT_TRUE(RoleAllows(v1::ROLE_WORKER, "GetModel"));
  EXPECT_FALSE(RoleAllows(v1::ROLE_WORKER, "ListTests"));
}

TEST_F(AuthTest, AdminCreatesUsesAndRevokesATokenThroughTheApi) {
  grpc::ClientContext create_ctx;
  create_ctx.AddMetadata("authorization", "Bearer " + secrets_[v1::ROLE_ADMIN]);
  v1::CreateTokenRequest create;
  create.set_name("ci");
  create.set_role(v1::ROLE_SUBMITTER);
  v1::CreateTokenResponse created;
  ASSERT_TRUE(stub_->CreateToken(&create_ctx, create, &created).ok());
  EXPECT_EQ(created.token().role(), v1::ROLE_SUBMITTER);
  const std::string bearer = "Bearer " + created.secret();

  const RpcCall list_tests = Unary(&Stub::ListTests);
  EXPECT_EQ(CallAs(bearer, list_tests), grpc::StatusCode::OK);

  // A second unrevoked token of the same name is refused.
  grpc::ClientContext again_ctx;
  again_ctx.AddMetadata("authorization", "Bearer " + secrets_[v1::ROLE_ADMIN]);
  EXPECT_EQ(stub_->CreateToken(&again_ctx, create, &created).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);

  grpc::ClientContext revoke_ctx;
  revoke_ctx.AddMetadata("authorization", "Bearer " + secrets_[v1::ROLE_ADMIN]);
  v1::RevokeTokenRequest revoke;
  revoke.set_name("ci");
  v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(stub_->RevokeToken(&revoke_ctx, revoke, &revoked).ok());
  EXPECT_TRUE(revoked.token().has_revoke_time());
  // Refused at once although the earlier answer was cached for an hour.
  EXPECT_EQ(CallAs(bearer, list_tests), grpc::StatusCode::UNAUTHENTICATED);

  grpc::ClientContext list_ctx;
  list_ctx.AddMetadata("authorization", "Bearer " + secrets_[v1::ROLE_ADMIN]);
  v1::ListTokensRequest list;
  list.set_include_revoked(true);
  v1::ListTokensResponse listed;
  ASSERT_TRUE(stub_->ListTokens(&list_ctx, list, &listed).ok());
  EXPECT_EQ(listed.tokens_size(), 5);  // four roles + the revoked "ci"
}

TEST_F(AuthTest, OnlyTheSecretsHashIsStored) {
  pqxx::result rows = Sql("SELECT encode(secret_sha256, 'hex') FROM api_tokens");
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& [role, secret] : secrets_) {
    for (const pqxx::row& row : rows)
      EXPECT_EQ(std::string(row[0].c_str()).find(secret), std::string::npos);
  }
  pqxx::result found =
      SqlParams("SELECT role FROM api_tokens WHERE secret_sha256 = sha256(convert_to($1, 'UTF8'))",
                secrets_[v1::ROLE_WORKER]);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_STREQ(found[0][0].c_str(), "worker");
}

TEST_F(AuthTest, BootstrapEnsureIsIdempotentAndRotates) {
  const std::string first = "bootstrap-secret-aaaaaaaaaaaa";
  absl::StatusOr<v1::Token> a = tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, first);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<v1::Token> again = tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, first);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id(), a->id());
  EXPECT_EQ(CallAs("Bearer " + first, Unary(&Stub::ListTokens)), grpc::StatusCode::OK);

  // A new bootstrap secret replaces the old one (after a restart with a rotated secret).
  authorizer_->ClearCache();
  const std::string second = "bootstrap-secret-bbbbbbbbbbbb";
  ASSERT_TRUE(tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, second).ok());
  authorizer_->ClearCache();
  EXPECT_EQ(CallAs("Bearer " + first, Unary(&Stub::ListTokens)), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallAs("Bearer " + second, Unary(&Stub::ListTokens)), grpc::StatusCode::OK);
}

// What an orchestrator's start does with its configured bootstrap secret (Ensure) after an
// admin revoked it, or after it was rotated away: it stays revoked, and nothing changes.
TEST_F(AuthTest, ARevokedBootstrapSecretStaysRevokedAcrossRestarts) {
  const RpcCall list_tokens = Unary(&Stub::ListTokens);
  const std::string first = "bootstrap-secret-aaaaaaaaaaaa";
  ASSERT_TRUE(tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, first).ok());
  ASSERT_EQ(CallAs("Bearer " + first, list_tokens), grpc::StatusCode::OK);

  // An admin revokes it (e.g. the secret leaked).
  v1::RevokeTokenRequest revoke;
  revoke.set_name("bootstrap-admin");
  v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(stub_->RevokeToken(As(secrets_[v1::ROLE_ADMIN]).get(), revoke, &revoked).ok());
  ASSERT_EQ(CallAs("Bearer " + first, list_tokens), grpc::StatusCode::UNAUTHENTICATED);

  // The next start still has the secret configured: it stays revoked and nothing changes.
  const auto snapshot = [&] {
    std::vector<std::string> rows;
    for (const pqxx::row& r :
         Sql("SELECT id, name, role, team, coalesce(revoked_at::text, 'valid') FROM api_tokens"
             " ORDER BY id")) {
      rows.push_back(absl::StrCat(r[0].c_str(), " ", r[1].c_str(), " ", r[2].c_str(), " ",
                                  r[3].c_str(), " ", r[4].c_str()));
    }
    return rows;
  };
  const std::vector<std::string> before = snapshot();
  authorizer_->ClearCache();  // a fresh process
  absl::StatusOr<v1::Token> restart = tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, first);
  ASSERT_TRUE(restart.ok()) << restart.status();
  EXPECT_TRUE(restart->has_revoke_time()) << "the caller is told the secret is revoked";
  EXPECT_EQ(restart->id(), revoked.token().id());
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(CallAs("Bearer " + first, list_tokens), grpc::StatusCode::UNAUTHENTICATED);

  // A new secret bootstraps an admin again; the revoked one stays refused.
  const std::string second = "bootstrap-secret-bbbbbbbbbbbb";
  absl::StatusOr<v1::Token> fresh = tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, second);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->has_revoke_time());
  authorizer_->ClearCache();
  EXPECT_EQ(CallAs("Bearer " + second, list_tokens), grpc::StatusCode::OK);
  EXPECT_EQ(CallAs("Bearer " + first, list_tokens), grpc::StatusCode::UNAUTHENTICATED);

  // Going back to the first secret (a rolled-back config) does not restore it, nor revoke
  // the second.
  restart = tokens_->Ensure("bootstrap-admin", v1::ROLE_ADMIN, first);
  ASSERT_TRUE(restart.ok()) << restart.status();
  EXPECT_TRUE(restart->has_revoke_time());
  authorizer_->ClearCache();
  EXPECT_EQ(CallAs("Bearer " + first, list_tokens), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallAs("Bearer " + second, list_tokens), grpc::StatusCode::OK);
}

// Tenancy through the real adapter: the token's team reaches the service, so another team's
// submitter is refused on every call that acts on a team's model or test, and only an admin
// sets quotas, which then hold.
TEST_F(AuthTest, ATokensTeamIsEnforcedOnEveryCallThatActsOnATeam) {
  const std::string vision = SubmitterOf("vision");
  const std::string speech = SubmitterOf("speech");
  v1::RegisterModelRequest register_model;
  *register_model.mutable_model() = ValidModel("resnet50", "v1");
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(stub_->RegisterModel(As(vision).get(), register_model, &registered).ok());
  EXPECT_EQ(registered.model().team(), "vision");

  register_model.mutable_model()->set_version("v2");
  grpc::Status status = stub_->RegisterModel(As(speech).get(), register_model, &registered);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("belongs to team vision"));
  v1::DeprecateModelRequest deprecate;
  deprecate.set_name("resnet50");
  deprecate.set_version("v1");
  v1::DeprecateModelResponse deprecated;
  EXPECT_EQ(stub_->DeprecateModel(As(speech).get(), deprecate, &deprecated).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec("resnet50");
  v1::SubmitTestResponse submitted;
  EXPECT_EQ(stub_->SubmitTest(As(speech).get(), submit, &submitted).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(stub_->SubmitTest(As(vision).get(), submit, &submitted).ok());
  EXPECT_EQ(submitted.test().team(), "vision");
  v1::CancelTestRequest cancel;
  cancel.set_id(submitted.test().id());
  v1::CancelTestResponse cancelled;
  EXPECT_EQ(stub_->CancelTest(As(speech).get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  // Quotas: set by an admin only, and then they hold.
  v1::SetTeamQuotaRequest set;
  set.set_team("vision");
  set.mutable_quota()->set_max_rate_qps(15);
  v1::SetTeamQuotaResponse quota;
  EXPECT_EQ(stub_->SetTeamQuota(As(vision).get(), set, &quota).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(stub_->SetTeamQuota(As(secrets_[v1::ROLE_ADMIN]).get(), set, &quota).ok());
  EXPECT_EQ(quota.quota().max_rate_qps(), 15);
  status = stub_->SubmitTest(As(vision).get(), submit, &submitted);  // rates 10 and 20
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_THAT(status.error_message(), ::testing::HasSubstr("max_rate_qps"));
  v1::GetTeamQuotaResponse own;
  ASSERT_TRUE(stub_->GetTeamQuota(As(vision).get(), v1::GetTeamQuotaRequest(), &own).ok());
  EXPECT_EQ(own.team(), "vision");
  EXPECT_EQ(own.quota().max_rate_qps(), 15);

  ASSERT_TRUE(stub_->CancelTest(As(vision).get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.test().state(), v1::TEST_STATE_CANCELLED);
}

Watch OpenWatch(Stub& stub, const std::string& secret, int64_t test_id) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  context->AddMetadata("authorization", "Bearer " + secret);
  v1::WatchTestRequest request;
  request.set_id(test_id);
  return ::vanguard::OpenWatch(stub, std::move(context), request);
}

double OpenWatchStreams(const OrchestratorMetrics& metrics) {
  for (const auto& family : metrics.registry()->Collect()) {
    if (family.name == "vanguard_orchestrator_watch_streams") return family.metric[0].gauge.value;
  }
  return -1;
}

TEST_F(AuthTest, WatchStreamsAreCappedPerTokenAndInAllAndEndingOneFreesItsPlace) {
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(stub_->RegisterModel(As(secrets_[v1::ROLE_ADMIN]).get(), reg, &registered).ok());
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stub_->SubmitTest(As(secrets_[v1::ROLE_ADMIN]).get(), submit, &submitted).ok());
  const int64_t id = submitted.test().id();

  OrchestratorMetrics metrics;
  OrchestratorGrpcService capped(service_.get(),
                                 {.watch_poll_interval = absl::Milliseconds(20),
                                  .authorizer = authorizer_.get(),
                                  .metrics = &metrics,
                                  .max_watch_streams = 3,
                                  .max_watch_streams_per_token = 2},
                                 Clock::Real());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&capped);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::Orchestrator::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  const std::string reader = secrets_[v1::ROLE_READER];

  std::vector<Watch> open;
  for (int i = 0; i < 2; ++i) {
    open.push_back(OpenWatch(*stub, reader, id));
    ASSERT_TRUE(open.back().reader != nullptr) << open.back().refused.error_message();
  }
  // The third from the same token is refused; another token's is admitted.
  Watch third = OpenWatch(*stub, reader, id);
  EXPECT_EQ(third.refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(third.refused.error_message(),
              ::testing::HasSubstr("--max_watch_streams_per_token=2"));
  open.push_back(OpenWatch(*stub, secrets_[v1::ROLE_SUBMITTER], id));
  ASSERT_TRUE(open.back().reader != nullptr) << open.back().refused.error_message();
  EXPECT_EQ(OpenWatchStreams(metrics), 3);
  // The replica's cap now refuses every token.
  Watch fourth = OpenWatch(*stub, secrets_[v1::ROLE_ADMIN], id);
  EXPECT_EQ(fourth.refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fourth.refused.error_message(), ::testing::HasSubstr("--max_watch_streams=3"));

  // A cancelled stream gives its place back once the server notices (its next poll).
  open[0].context->TryCancel();
  v1::WatchTestResponse update;
  while (open[0].reader->Read(&update)) {
  }
  EXPECT_EQ(open[0].reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (OpenWatchStreams(metrics) != 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(OpenWatchStreams(metrics), 2);
  Watch again = OpenWatch(*stub, reader, id);
  EXPECT_TRUE(again.reader != nullptr) << again.refused.error_message();
  EXPECT_EQ(OpenWatchStreams(metrics), 3);

  for (Watch* w : {&open[1], &open[2], &again}) {
    if (w->reader == nullptr) continue;
    w->context->TryCancel();
    while (w->reader->Read(&update)) {
    }
    w->reader->Finish();
  }
  capped.BeginShutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(OpenWatchStreams(metrics), 0);
}

}  // namespace
}  // namespace vanguard
