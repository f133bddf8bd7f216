// Unit tests of the role matrix and of bearer-header parsing (no database: malformed
// headers are rejected before any lookup).
#include "orchestrator/authorizer.h"

#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(RoleAllowsTest, ReaderOnlyReads) {
  for (const char* m : {"GetModel", "ListModels", "GetTest", "ListTests", "WatchTest"}) {
    EXPECT_TRUE(RoleAllows(v1::ROLE_READER, m)) << m;
  }
  for (const char* m : {"SubmitTest", "CancelTest", "RegisterModel", "DeprecateModel", "LeaseTest",
                        "Heartbeat", "ReportStep", "ReportProgress", "CompleteTest", "ReleaseTest",
                        "CreateToken", "RevokeToken", "ListTokens"}) {
    EXPECT_FALSE(RoleAllows(v1::ROLE_READER, m)) << m;
  }
}

TEST(RoleAllowsTest, SubmitterSubmitsButDoesNotWorkOrAdminister) {
  for (const char* m :
       {"SubmitTest", "CancelTest", "RegisterModel", "DeprecateModel", "GetTest", "WatchTest"}) {
    EXPECT_TRUE(RoleAllows(v1::ROLE_SUBMITTER, m)) << m;
  }
  for (const char* m : {"LeaseTest", "Heartbeat", "ReportStep", "ReportProgress", "CompleteTest",
                        "ReleaseTest", "CreateToken"}) {
    EXPECT_FALSE(RoleAllows(v1::ROLE_SUBMITTER, m)) << m;
  }
}

TEST(RoleAllowsTest, ReadersPlanSubmittersAcceptBaselinesWorkersNeither) {
  for (const char* m : {"ListRegressions", "GetCapacityTrend", "PlanCapacity"}) {
    EXPECT_TRUE(RoleAllows(v1::ROLE_READER, m)) << m;
    EXPECT_TRUE(RoleAllows(v1::ROLE_SUBMITTER, m)) << m;
    EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, m)) << m;
    EXPECT_FALSE(RoleAllows(v1::ROLE_WORKER, m)) << m;
  }
  EXPECT_FALSE(RoleAllows(v1::ROLE_READER, "AcceptBaseline"));
  EXPECT_TRUE(RoleAllows(v1::ROLE_SUBMITTER, "AcceptBaseline"));
  EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, "AcceptBaseline"));
  EXPECT_FALSE(RoleAllows(v1::ROLE_WORKER, "AcceptBaseline"));
}

TEST(RoleAllowsTest, WorkerRunsTestsAndReadsWhatItNeeds) {
  for (const char* m : {"LeaseTest", "Heartbeat", "ReportStep", "ReportProgress", "CompleteTest",
                        "ReleaseTest", "GetModel", "GetTest"}) {
    EXPECT_TRUE(RoleAllows(v1::ROLE_WORKER, m)) << m;
  }
  for (const char* m : {"SubmitTest", "CancelTest", "ListTests", "RegisterModel", "ListTokens"}) {
    EXPECT_FALSE(RoleAllows(v1::ROLE_WORKER, m)) << m;
  }
}

TEST(RoleAllowsTest, AdminMayDoEverythingUnspecifiedNothing) {
  for (const char* m : {"CreateToken", "RevokeToken", "ListTokens", "LeaseTest", "SubmitTest"}) {
    EXPECT_TRUE(RoleAllows(v1::ROLE_ADMIN, m)) << m;
    EXPECT_FALSE(RoleAllows(v1::ROLE_UNSPECIFIED, m)) << m;
  }
}

TEST(AuthorizerTest, MissingOrMalformedHeaderIsUnauthenticated) {
  Authorizer authorizer(nullptr, Clock::Real());  // never reaches the repository
  for (const char* header : {"", "   ", "Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "token"}) {
    absl::Status s = authorizer.Check(header, "GetTest").status();
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << "'" << header << "': " << s;
  }
}

TEST(TokenSecretTest, SecretsAreLongRandomAndHashTo32Bytes) {
  const std::string a = NewTokenSecret();
  const std::string b = NewTokenSecret();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("vgt_", 0), 0u);
  EXPECT_GE(a.size(), 40u);
  EXPECT_EQ(Sha256(a).size(), 32u);
  EXPECT_NE(Sha256(a), Sha256(b));
  EXPECT_EQ(Sha256(a), Sha256(a));
}

}  // namespace
}  // namespace vanguard
