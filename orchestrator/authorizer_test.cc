// Unit tests of the role matrix, of bearer-header parsing, and of the token cache and lookup
// budget under a flood of unknown secrets (a counting fake lookup, a FakeClock; no database).
#include "orchestrator/authorizer.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
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

// A token table in memory that counts its lookups.
class CountingTokens {
 public:
  void Add(const std::string& secret, v1::Role role) {
    by_hash_[Sha256(secret)] = TokenIdentity{
        .id = static_cast<int64_t>(by_hash_.size() + 1), .name = secret, .role = role};
  }
  void Revoke(const std::string& secret) { by_hash_.erase(Sha256(secret)); }
  Authorizer::IdentityLookup Lookup() {
    return [this](const std::string& hash) -> absl::StatusOr<std::optional<TokenIdentity>> {
      ++lookups;
      auto it = by_hash_.find(hash);
      if (it == by_hash_.end()) return std::nullopt;
      return it->second;
    };
  }
  int lookups = 0;

 private:
  std::map<std::string, TokenIdentity> by_hash_;
};

std::string Bearer(const std::string& secret) { return absl::StrCat("Bearer ", secret); }

TEST(AuthorizerTest, AFloodOfUnknownSecretsCostsAtMostTheLookupBudget) {
  FakeClock clock;
  CountingTokens tokens;
  tokens.Add("valid-worker", v1::ROLE_WORKER);
  Authorizer authorizer(tokens.Lookup(), &clock,
                        {.cache_ttl = absl::Seconds(10),
                         .max_cached = 1000,
                         .unknown_lookups_per_second = 50,
                         .unknown_lookup_burst = 100});
  ASSERT_TRUE(authorizer.Check(Bearer("valid-worker"), "Heartbeat").ok());
  ASSERT_EQ(tokens.lookups, 1);

  int unauthenticated = 0, unavailable = 0;
  for (int i = 0; i < 20000; ++i) {
    if (i % 2000 == 0) {
      // The valid token keeps authenticating from the cache, without a lookup.
      absl::StatusOr<TokenIdentity> valid = authorizer.Check(Bearer("valid-worker"), "Heartbeat");
      ASSERT_TRUE(valid.ok()) << i << ": " << valid.status();
      EXPECT_EQ(valid->role, v1::ROLE_WORKER);
    }
    if (i % 1000 == 0) clock.Advance(absl::Milliseconds(100));  // 2 s in all
    absl::Status s = authorizer.Check(Bearer(absl::StrCat("guess-", i)), "GetTest").status();
    if (absl::IsUnauthenticated(s)) ++unauthenticated;
    if (absl::IsUnavailable(s)) {
      ++unavailable;
      EXPECT_THAT(s.message(),
                  ::testing::AllOf(::testing::HasSubstr("retry in"),
                                   ::testing::HasSubstr("--auth_unknown_lookups_per_second")));
    }
  }
  // The burst, plus 50/s over the 2 s the flood took (the first advance is before any guess).
  EXPECT_LE(tokens.lookups, 1 + 100 + 100);
  EXPECT_GE(tokens.lookups, 1 + 100);
  EXPECT_EQ(unauthenticated, tokens.lookups - 1);
  EXPECT_EQ(unauthenticated + unavailable, 20000);

  // After the flood, still within its TTL: no new lookup.
  const int before = tokens.lookups;
  EXPECT_TRUE(authorizer.Check(Bearer("valid-worker"), "Heartbeat").ok());
  EXPECT_EQ(tokens.lookups, before);
}

TEST(AuthorizerTest, AKnownValidTokenIsRecheckedOutsideTheBudgetWhenItsEntryExpires) {
  FakeClock clock;
  CountingTokens tokens;
  tokens.Add("valid-worker", v1::ROLE_WORKER);
  Authorizer authorizer(
      tokens.Lookup(), &clock,
      {.cache_ttl = absl::Seconds(2), .unknown_lookups_per_second = 1, .unknown_lookup_burst = 2});
  ASSERT_TRUE(authorizer.Check(Bearer("valid-worker"), "Heartbeat").ok());
  for (int i = 0; i < 10; ++i) (void)authorizer.Check(Bearer(absl::StrCat("guess-", i)), "GetTest");
  EXPECT_TRUE(absl::IsUnavailable(authorizer.Check(Bearer("another-guess"), "GetTest").status()));
  clock.Advance(absl::Seconds(3));  // the valid entry has expired; the bucket is refilled...
  for (int i = 10; i < 20; ++i)
    (void)authorizer.Check(Bearer(absl::StrCat("guess-", i)), "GetTest");
  // ...and the guesses have spent it.
  EXPECT_TRUE(absl::IsUnavailable(authorizer.Check(Bearer("yet-another"), "GetTest").status()));
  const int before = tokens.lookups;
  EXPECT_TRUE(authorizer.Check(Bearer("valid-worker"), "Heartbeat").ok());
  EXPECT_EQ(tokens.lookups, before + 1);  // re-checked: a revocation elsewhere would show
  tokens.Revoke("valid-worker");
  clock.Advance(absl::Seconds(3));
  EXPECT_TRUE(
      absl::IsUnauthenticated(authorizer.Check(Bearer("valid-worker"), "Heartbeat").status()));
}

TEST(AuthorizerTest, UnknownSecretsNeverEvictValidTokens) {
  FakeClock clock;
  CountingTokens tokens;
  for (int i = 0; i < 5; ++i) tokens.Add(absl::StrCat("valid-", i), v1::ROLE_READER);
  Authorizer authorizer(tokens.Lookup(), &clock,
                        {.cache_ttl = absl::Hours(1),
                         .max_cached = 8,
                         .unknown_lookups_per_second = 1e9,
                         .unknown_lookup_burst = 1e9});
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(authorizer.Check(Bearer(absl::StrCat("valid-", i)), "GetTest").ok());
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(absl::IsUnauthenticated(
        authorizer.Check(Bearer(absl::StrCat("guess-", i)), "GetTest").status()));
  }
  const int before = tokens.lookups;
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(authorizer.Check(Bearer(absl::StrCat("valid-", i)), "GetTest").ok());
  EXPECT_EQ(tokens.lookups, before);  // all five still cached
  // The unknown cache keeps its newest 8: the latest guess is answered without a lookup,
  // the first one is looked up again.
  EXPECT_FALSE(authorizer.Check(Bearer("guess-999"), "GetTest").ok());
  EXPECT_EQ(tokens.lookups, before);
  EXPECT_FALSE(authorizer.Check(Bearer("guess-0"), "GetTest").ok());
  EXPECT_EQ(tokens.lookups, before + 1);
}

TEST(TokenAnswerCacheTest, AFullCacheDropsTheEntryStoredLongestAgo) {
  TokenAnswerCache cache(2);
  cache.Store("a", {std::nullopt, absl::Seconds(1)});
  cache.Store("b", {std::nullopt, absl::Seconds(2)});
  cache.Store("a", {std::nullopt, absl::Seconds(3)});  // refreshed: now the newest
  cache.Store("c", {std::nullopt, absl::Seconds(4)});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("b"), nullptr);
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.Find("a")->expires, absl::Seconds(3));
  EXPECT_NE(cache.Find("c"), nullptr);
  cache.Erase("a");
  EXPECT_EQ(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.size(), 1u);
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
