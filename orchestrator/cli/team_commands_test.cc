// Tests of `vanguard team set-quota` and `team get-quota` (and `tokens create --team`) against
// the generated MockOrchestratorStub: what each sends, that a limit left out stays unset in
// the request (the stored value is kept), what they print, and usage errors.
#include "orchestrator/cli/team_commands.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/testing/command_test.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;

v1::TeamQuota InForce() {
  v1::TeamQuota quota;
  quota.set_max_rate_qps(500);
  quota.mutable_max_step_duration()->set_seconds(3600);
  quota.mutable_max_test_duration()->set_seconds(86400);
  quota.set_max_concurrent_tests(10);
  quota.set_max_submitter_priority(200);
  quota.set_max_admin_priority(1000);
  return quota;
}

class TeamCommandsTest : public CommandTest {};

TEST_F(TeamCommandsTest, SetQuotaSendsOnlyTheLimitsGivenAndPrintsTheQuotaInForce) {
  v1::SetTeamQuotaRequest sent;
  EXPECT_CALL(stub_, SetTeamQuota(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::SetTeamQuotaRequest& request,
                           v1::SetTeamQuotaResponse* response) {
        sent = request;
        response->set_team(request.team());
        *response->mutable_quota() = InForce();
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"team", "set-quota"}, {{"team", "vision"},
                                               {"max_rate_qps", "500"},
                                               {"max_step_duration", "1h"},
                                               {"max_concurrent_tests", "10"}}),
            kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.team(), "vision");
  EXPECT_EQ(sent.quota().max_rate_qps(), 500);
  EXPECT_EQ(sent.quota().max_step_duration().seconds(), 3600);
  EXPECT_EQ(sent.quota().max_concurrent_tests(), 10);
  EXPECT_FALSE(sent.quota().has_max_test_duration());
  EXPECT_FALSE(sent.quota().has_max_submitter_priority());
  EXPECT_FALSE(sent.quota().has_max_admin_priority());
  EXPECT_THAT(out_.str(), HasSubstr("TEAM    MAX_RATE_QPS  MAX_STEP  MAX_TEST  MAX_CONCURRENT"));
  EXPECT_THAT(out_.str(), HasSubstr("vision           500        1h       24h              10"));
}

TEST_F(TeamCommandsTest, SetQuotaNeedsATeamAndALimit) {
  EXPECT_EQ(RunCommand({"team", "set-quota"}, {{"max_rate_qps", "5"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--team"));
  EXPECT_EQ(RunCommand({"team", "set-quota"}, {{"team", "vision"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("at least one --max_* flag"));
  EXPECT_EQ(RunCommand({"team", "set-quota"}, {{"team", "vision"}, {"max_concurrent_tests", "0"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--max_concurrent_tests"));
}

TEST_F(TeamCommandsTest, GetQuotaDefaultsToTheTokensTeamAndPrintsJson) {
  v1::GetTeamQuotaRequest sent;
  EXPECT_CALL(stub_, GetTeamQuota(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::GetTeamQuotaRequest& request,
                           v1::GetTeamQuotaResponse* response) {
        sent = request;
        response->set_team("vision");
        *response->mutable_quota() = InForce();
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"team", "get-quota"}, {{"output", "json"}}), kExitOk) << err_.str();
  EXPECT_EQ(sent.team(), "");
  EXPECT_THAT(out_.str(), HasSubstr("\"max_concurrent_tests\": 10"));
  EXPECT_THAT(out_.str(), HasSubstr("\"team\": \"vision\""));
}

TEST_F(TeamCommandsTest, TokensCreateSendsTheTeam) {
  v1::CreateTokenRequest sent;
  EXPECT_CALL(stub_, CreateToken(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::CreateTokenRequest& request,
                           v1::CreateTokenResponse* response) {
        sent = request;
        response->set_secret("vgt_x");
        return grpc::Status::OK;
      }));
  EXPECT_EQ(
      RunCommand({"tokens", "create"}, {{"name", "ci"}, {"role", "submitter"}, {"team", "vision"}}),
      kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.team(), "vision");
  EXPECT_EQ(sent.role(), v1::ROLE_SUBMITTER);
}

}  // namespace
}  // namespace vanguard::cli
