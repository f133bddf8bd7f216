// Bearer-token authorization of every Orchestrator RPC: who is calling (the token: its id,
// name, role and team) and whether that role may call the method.
//
//   Authorizer authorizer(&tokens, Clock::Real());
//   absl::StatusOr<TokenIdentity> caller = authorizer.Check(authorization_value, "SubmitTest");
//   // UNAUTHENTICATED: no "Bearer <secret>", or an unknown/revoked secret
//   // PERMISSION_DENIED: the token's role may not call this method
//   // ok: caller->id is who holds the leases this caller takes (see TestRepository)
//
// Role matrix (RoleAllows): reader: GetModel, ListModels, GetTest, ListTests, WatchTest,
// ListRegressions, GetCapacityTrend, PlanCapacity, GetTeamQuota, ListAcceleratorPrices; submitter:
// reader's + SubmitTest, CancelTest, RegisterModel, DeprecateModel, AcceptBaseline, SetSchedule,
// ListSchedules, DeleteSchedule, AddWebhook, ListWebhooks, DeleteWebhook (on its team's models,
// tests, schedules and webhooks: the service checks the team, see orchestrator_service.h
// "Tenancy"); worker:
// LeaseTest, Heartbeat, ReportStep, ReportProgress, CompleteTest, ReleaseTest, GetModel,
// GetTest; admin: every method on every team, including CreateToken, RevokeToken,
// ListTokens, SetTeamQuota and SetAcceleratorPrice.
//
// Lookups are cached by secret hash for cache_ttl, so the hot worker path costs no database
// round trip; a revocation through this replica clears the cache at once, one through
// another replica takes effect within cache_ttl.
//
// A flood of unknown secrets (guesses, a misconfigured client) is bounded two ways:
//  - Valid and unknown answers are cached apart, each holding at most max_cached entries
//    and dropping the one stored longest ago (with one TTL for all, the first to expire)
//    when full; unknown secrets can never push a valid token's entry out.
//  - A database lookup of a secret not known to be valid takes a token from one bucket
//    shared by every caller (unknown_lookups_per_second, unknown_lookup_burst); with the
//    bucket empty the call is UNAVAILABLE with a retry hint and nothing is looked up. A
//    secret cached as valid is answered from the cache, and re-checked when its entry has
//    expired, without the bucket: valid tokens keep working through a flood.
// Thread-safe; gRPC server threads call Check.
#ifndef VANGUARD_ORCHESTRATOR_AUTHORIZER_H_
#define VANGUARD_ORCHESTRATOR_AUTHORIZER_H_

#include <functional>
#include <list>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "orchestrator/token_repository.h"

namespace vanguard {

// Whether `role` may call Orchestrator method `method` (e.g. "LeaseTest").
bool RoleAllows(v1::Role role, std::string_view method);

// Answers by secret hash, at most `capacity` of them: storing into a full cache drops the
// entry stored (or refreshed) longest ago. Not thread-safe; Authorizer guards it.
class TokenAnswerCache {
 public:
  struct Answer {
    std::optional<TokenIdentity> token;  // nullopt: no such (unrevoked) token
    absl::Duration expires;              // on the clock's Monotonic() scale
  };

  explicit TokenAnswerCache(size_t capacity) : capacity_(capacity) {}

  // The answer stored for `secret_sha256`, expired or not; nullptr when none.
  const Answer* Find(const std::string& secret_sha256) const;
  void Store(const std::string& secret_sha256, Answer answer);
  void Erase(const std::string& secret_sha256);
  void Clear();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Answer answer;
    std::list<std::string>::iterator position;
  };
  const size_t capacity_;
  std::list<std::string> order_;  // oldest first
  absl::flat_hash_map<std::string, Entry> entries_;
};

class Authorizer {
 public:
  struct Options {
    absl::Duration cache_ttl = absl::Seconds(2);
    // Entries per cache: valid tokens, and (apart) unknown or revoked secrets.
    size_t max_cached = 10000;
    // The shared budget of database lookups of secrets not cached as valid.
    double unknown_lookups_per_second = 100;
    double unknown_lookup_burst = 200;
  };
  // The unrevoked token whose secret hashes to the argument; nullopt if none.
  using IdentityLookup =
      std::function<absl::StatusOr<std::optional<TokenIdentity>>(const std::string& secret_sha256)>;

  Authorizer(TokenRepository* tokens, Clock* clock) : Authorizer(tokens, clock, Options()) {}
  Authorizer(TokenRepository* tokens, Clock* clock, Options options);
  Authorizer(IdentityLookup lookup, Clock* clock, Options options);

  // The caller's token from the "authorization" metadata value ("Bearer <secret>").
  // UNAUTHENTICATED when missing, malformed, unknown or revoked; UNAVAILABLE when the
  // database cannot be asked, or when the secret is not cached and the lookup budget is
  // spent (the message says when to retry).
  absl::StatusOr<TokenIdentity> Authenticate(std::string_view authorization);

  // Authenticate, then PERMISSION_DENIED unless the token's role may call `method`.
  absl::StatusOr<TokenIdentity> Check(std::string_view authorization, std::string_view method);

  // Forgets every cached answer (after a revocation).
  void ClearCache();

 private:
  enum class Cached { kValid, kUnknown, kKnownValidExpired, kNone };

  // What the caches say of `secret_sha256` at `now`; *token set for kValid.
  Cached FromCache(const std::string& secret_sha256, absl::Duration now,
                   std::optional<TokenIdentity>* token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes one lookup from the shared bucket; UNAVAILABLE with a retry hint when empty.
  absl::Status TakeLookup(absl::Duration now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Looks `secret_sha256` up in the database and caches the answer.
  absl::StatusOr<std::optional<TokenIdentity>> LookUp(const std::string& secret_sha256,
                                                      absl::Duration now);

  IdentityLookup lookup_;
  Clock* clock_;
  const Options options_;
  absl::Mutex mu_;
  TokenAnswerCache valid_ ABSL_GUARDED_BY(mu_);
  TokenAnswerCache unknown_ ABSL_GUARDED_BY(mu_);
  double bucket_ ABSL_GUARDED_BY(mu_);  // lookups left
  absl::Duration bucket_filled_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_AUTHORIZER_H_
