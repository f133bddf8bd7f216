// Tenancy against a real PostgreSQL ($VANGUARD_TEST_PG), through OrchestratorService's plain
// methods with the Caller the gRPC adapter would pass: a model name and its tests belong to
// a team; a submitter acts on its own team's only, an admin on every team; request_id is per
// team; each team quota refuses with the code and the limit's name; rows from before the
// migration belong to "default". auth_test.cc checks the same through real gRPC and tokens.
#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/capacity_repository.h"
#include "orchestrator/team_repository.h"
#include "orchestrator/tenancy.h"
#include "orchestrator/token_repository.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

Caller As(v1::Role role, const std::string& team, int64_t id = 100) {
  return TokenIdentity{.id = id, .name = team + "-token", .role = role, .team = team};
}

class TenancyTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    tokens_ = std::make_unique<TokenRepository>(pool_.get());
    teams_ = std::make_unique<TeamRepository>(pool_.get());
    capacity_ = std::make_unique<CapacityRepository>(pool_.get());
    service_ = std::make_unique<OrchestratorService>(models_.get(), tests_.get(), tokens_.get(),
                                                     nullptr, capacity_.get(), teams_.get(),
                                                     OrchestratorService::Options());
    ASSERT_TRUE(Register("resnet50", "v1", vision_).ok());
    ASSERT_TRUE(Register("whisper", "v1", speech_).ok());
  }

  absl::StatusOr<v1::RegisterModelResponse> Register(const std::string& name,
                                                     const std::string& version,
                                                     const Caller& caller) {
    v1::RegisterModelRequest request;
    *request.mutable_model() = ValidModel(name, version);
    return service_->RegisterModel(request, caller);
  }

  absl::StatusOr<v1::SubmitTestResponse> Submit(const std::string& model, const Caller& caller,
                                                const std::string& request_id = "") {
    v1::SubmitTestRequest request;
    *request.mutable_spec() = ValidSpec(model);
    request.set_request_id(request_id);
    return service_->SubmitTest(request, caller);
  }

  absl::StatusOr<v1::SubmitTestResponse> SubmitSpec(const v1::TestSpec& spec,
                                                    const Caller& caller) {
    v1::SubmitTestRequest request;
    *request.mutable_spec() = spec;
    return service_->SubmitTest(request, caller);
  }

  void SetQuota(const std::string& team, const v1::TeamQuota& quota) {
    v1::SetTeamQuotaRequest request;
    request.set_team(team);
    *request.mutable_quota() = quota;
    absl::StatusOr<v1::SetTeamQuotaResponse> set = service_->SetTeamQuota(request);
    ASSERT_TRUE(set.ok()) << set.status();
  }

  static void ExpectDenied(const absl::Status& status, const std::string& message) {
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(message)) << status;
  }

  const Caller vision_ = As(v1::ROLE_SUBMITTER, "vision", 1);
  const Caller speech_ = As(v1::ROLE_SUBMITTER, "speech", 2);
  const Caller admin_ = As(v1::ROLE_ADMIN, "default", 3);
  std::unique_ptr<TokenRepository> tokens_;
  std::unique_ptr<TeamRepository> teams_;
  std::unique_ptr<CapacityRepository> capacity_;
};

TEST_F(TenancyTest, AModelNameBelongsToTheTeamThatFirstRegisteredIt) {
  absl::StatusOr<v1::GetModelResponse> got = service_->GetModel([] {
    v1::GetModelRequest r;
    r.set_name("resnet50");
    return r;
  }());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->model().team(), "vision");

  // Another team may not add a version to it, nor deprecate one; nothing is stored.
  ExpectDenied(Register("resnet50", "v2", speech_).status(),
               "model resnet50 belongs to team vision; this token acts for team speech");
  EXPECT_EQ(SqlParams("SELECT count(*) FROM models WHERE name = $1", "resnet50")[0][0].as<int>(),
            1);
  v1::DeprecateModelRequest deprecate;
  deprecate.set_name("resnet50");
  deprecate.set_version("v1");
  ExpectDenied(service_->DeprecateModel(deprecate, speech_).status(), "belongs to team vision");

  // Its own team and an admin may.
  absl::StatusOr<v1::RegisterModelResponse> v2 = Register("resnet50", "v2", vision_);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->model().team(), "vision");
  ASSERT_TRUE(Register("resnet50", "v3", admin_).ok());
  EXPECT_TRUE(service_->DeprecateModel(deprecate, vision_).ok());
}

TEST_F(TenancyTest, OnlyAnAdminRegistersANewNameForAnotherTeam) {
  v1::RegisterModelRequest request;
  *request.mutable_model() = ValidModel("bert", "v1");
  request.set_team("speech");
  ExpectDenied(service_->RegisterModel(request, vision_).status(), "team speech");
  absl::StatusOr<v1::RegisterModelResponse> by_admin = service_->RegisterModel(request, admin_);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status();
  EXPECT_EQ(by_admin->model().team(), "speech");
}

TEST_F(TenancyTest, ASubmitterTestsAndCancelsItsOwnTeamsOnly) {
  ExpectDenied(Submit("whisper", vision_).status(), "model whisper belongs to team speech");
  absl::StatusOr<v1::SubmitTestResponse> submitted = Submit("resnet50", vision_);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_EQ(submitted->test().team(), "vision");

  v1::CancelTestRequest cancel;
  cancel.set_id(submitted->test().id());
  ExpectDenied(service_->CancelTest(cancel, speech_).status(),
               absl::StrCat("test ", submitted->test().id(), " belongs to team vision"));
  absl::StatusOr<v1::GetTestResponse> still = service_->GetTest([&] {
    v1::GetTestRequest r;
    r.set_id(submitted->test().id());
    return r;
  }());
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->test().state(), v1::TEST_STATE_QUEUED);
  EXPECT_FALSE(still->test().cancel_requested());

  absl::StatusOr<v1::CancelTestResponse> by_admin = service_->CancelTest(cancel, admin_);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status();
  EXPECT_EQ(by_admin->test().state(), v1::TEST_STATE_CANCELLED);
}

TEST_F(TenancyTest, OnlyTheTestsTeamAcceptsItAsABaseline) {
  absl::StatusOr<v1::SubmitTestResponse> submitted = Submit("resnet50", vision_);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  v1::AcceptBaselineRequest accept;
  accept.set_test_id(submitted->test().id());
  ExpectDenied(service_->AcceptBaseline(accept, speech_).status(), "belongs to team vision");
  // Its own team gets past the team check (and is refused because the test did not succeed).
  EXPECT_EQ(service_->AcceptBaseline(accept, vision_).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(TenancyTest, AnAdminSubmitsToAnyTeamAndTheTestIsTheModelsTeams) {
  absl::StatusOr<v1::SubmitTestResponse> submitted = Submit("whisper", admin_);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_EQ(submitted->test().team(), "speech");
  v1::CancelTestRequest cancel;
  cancel.set_id(submitted->test().id());
  EXPECT_TRUE(service_->CancelTest(cancel, speech_).ok());
}

TEST_F(TenancyTest, RequestIdIsUniquePerTeam) {
  absl::StatusOr<v1::SubmitTestResponse> a = Submit("resnet50", vision_, "ci-42");
  absl::StatusOr<v1::SubmitTestResponse> b = Submit("whisper", speech_, "ci-42");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->test().id(), b->test().id()) << "another team's equal request_id is another test";
  EXPECT_EQ(b->test().model().name(), "whisper");
  absl::StatusOr<v1::SubmitTestResponse> again = Submit("resnet50", vision_, "ci-42");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->test().id(), a->test().id()) << "same team, same id: the first test";
}

TEST_F(TenancyTest, EachQuotaRefusesWithItsCodeAndName) {
  v1::TeamQuota quota;
  quota.set_max_rate_qps(15);
  quota.mutable_max_step_duration()->set_seconds(20);
  quota.mutable_max_test_duration()->set_seconds(60);
  quota.set_max_submitter_priority(5);
  SetQuota("vision", quota);

  v1::TestSpec spec = ValidSpec();  // rates 10 and 20, 5 s steps, 7 s warmup from the model
  absl::Status status = SubmitSpec(spec, vision_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("team vision's quota max_rate_qps"));

  spec.mutable_sweep()->set_rates_qps(1, 15);
  spec.mutable_step_duration()->set_seconds(14);  // 21 s with the warmup
  status = SubmitSpec(spec, vision_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_step_duration"));

  spec.mutable_step_duration()->set_seconds(13);  // 20 s steps
  spec.mutable_sweep()->add_rates_qps(15);
  spec.mutable_sweep()->add_rates_qps(15);
  spec.mutable_sweep()->add_rates_qps(15);  // 4 x 20 s > 60 s
  status = SubmitSpec(spec, vision_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_test_duration"));

  spec.mutable_sweep()->mutable_rates_qps()->Truncate(3);
  spec.set_priority(6);
  ExpectDenied(SubmitSpec(spec, vision_).status(), "max_submitter_priority");
  spec.set_priority(5);
  EXPECT_TRUE(SubmitSpec(spec, vision_).ok());
  spec.set_priority(6);
  EXPECT_TRUE(SubmitSpec(spec, admin_).ok()) << "the admin ceiling is the default 1000";
  // Another team keeps the defaults.
  v1::TestSpec theirs = ValidSpec("whisper");
  theirs.mutable_sweep()->set_rates_qps(1, 5000);
  EXPECT_TRUE(SubmitSpec(theirs, speech_).ok());
  EXPECT_EQ(Sql("SELECT count(*) FROM tests")[0][0].as<int>(), 3) << "refusals store nothing";
}

TEST_F(TenancyTest, ConcurrentTestsAreCountedPerTeamAndARepeatIsNotRefused) {
  v1::TeamQuota quota;
  quota.set_max_concurrent_tests(2);
  SetQuota("vision", quota);
  ASSERT_TRUE(Submit("resnet50", vision_, "a").ok());
  ASSERT_TRUE(Submit("resnet50", vision_, "b").ok());
  absl::Status third = Submit("resnet50", vision_, "c").status();
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted) << third;
  EXPECT_THAT(std::string(third.message()),
              HasSubstr("team vision's quota max_concurrent_tests refuses this test: the team has "
                        "2 tests queued or running, the limit is 2"));
  EXPECT_TRUE(Submit("resnet50", vision_, "a").ok()) << "a repeat queues nothing";
  EXPECT_TRUE(Submit("whisper", speech_).ok()) << "another team's count is its own";

  // A finished test no longer counts.
  v1::CancelTestRequest cancel;
  cancel.set_id(Sql("SELECT min(id) FROM tests WHERE team = 'vision'")[0][0].as<int64_t>());
  ASSERT_TRUE(service_->CancelTest(cancel, vision_).ok());
  EXPECT_TRUE(Submit("resnet50", vision_, "c").ok());
}

TEST_F(TenancyTest, ConcurrentSubmitsCannotPassTheCountTogether) {
  v1::TeamQuota quota;
  quota.set_max_concurrent_tests(1);
  SetQuota("vision", quota);
  constexpr int kSubmitters = 4;
  std::atomic<int> accepted{0};
  std::atomic<int> exhausted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSubmitters; ++i) {
    threads.emplace_back([&, i] {
      absl::Status s = Submit("resnet50", vision_, absl::StrCat("r", i)).status();
      if (s.ok()) ++accepted;
      if (absl::IsResourceExhausted(s)) ++exhausted;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(exhausted.load(), kSubmitters - 1);
}

TEST_F(TenancyTest, QuotaRpcsMergeSetFieldsAndAnswerEveryField) {
  v1::TeamQuota quota;
  quota.set_max_rate_qps(100);
  SetQuota("vision", quota);
  quota.Clear();
  quota.set_max_concurrent_tests(7);
  SetQuota("vision", quota);
  v1::GetTeamQuotaRequest get;  // empty: the caller's team
  absl::StatusOr<v1::GetTeamQuotaResponse> got = service_->GetTeamQuota(get, vision_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->team(), "vision");
  EXPECT_EQ(got->quota().max_rate_qps(), 100) << "kept";
  EXPECT_EQ(got->quota().max_concurrent_tests(), 7);
  EXPECT_EQ(got->quota().max_submitter_priority(), TeamLimits().max_submitter_priority);
  EXPECT_EQ(got->quota().max_test_duration().seconds(), 24 * 3600);

  v1::SetTeamQuotaRequest bad;
  bad.set_team("vision");
  bad.mutable_quota()->set_max_rate_qps(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(service_->SetTeamQuota(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.set_team("no spaces");
  bad.mutable_quota()->set_max_rate_qps(1);
  EXPECT_EQ(service_->SetTeamQuota(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TenancyTest, TokensHaveATeamDefaultingToDefault) {
  v1::CreateTokenRequest create;
  create.set_name("ci");
  create.set_role(v1::ROLE_SUBMITTER);
  absl::StatusOr<v1::CreateTokenResponse> plain = service_->CreateToken(create);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->token().team(), "default");
  create.set_name("ci-vision");
  create.set_team("vision");
  absl::StatusOr<v1::CreateTokenResponse> vision = service_->CreateToken(create);
  ASSERT_TRUE(vision.ok()) << vision.status();
  EXPECT_EQ(vision->token().team(), "vision");
  absl::StatusOr<std::optional<TokenIdentity>> who = tokens_->IdentityOf(Sha256(vision->secret()));
  ASSERT_TRUE(who.ok() && who->has_value());
  EXPECT_EQ((*who)->team, "vision");
  create.set_name("bad");
  create.set_team("a/b");
  EXPECT_EQ(service_->CreateToken(create).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard
