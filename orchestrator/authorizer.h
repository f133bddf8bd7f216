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
// ListRegressions, GetCapacityTrend, PlanCapacity, GetTeamQuota; submitter: reader's +
// SubmitTest, CancelTest, RegisterModel, DeprecateModel, AcceptBaseline, SetSchedule,
// ListSchedules, DeleteSchedule, AddWebhook, ListWebhooks, DeleteWebhook (on its team's models,
// tests, schedules and webhooks: the service checks the team, see orchestrator_service.h
// "Tenancy"); worker:
// LeaseTest, Heartbeat, ReportStep, ReportProgress, CompleteTest, ReleaseTest, GetModel,
// GetTest; admin: every method on every team, including CreateToken, RevokeToken,
// ListTokens and SetTeamQuota.
//
// Lookups are cached by secret hash for cache_ttl (positive and negative answers), so the
// hot worker path costs no database round trip; a revocation through this replica clears
// the cache at once, one through another replica takes effect within cache_ttl.
// Thread-safe; gRPC server threads call Check.
#ifndef VANGUARD_ORCHESTRATOR_AUTHORIZER_H_
#define VANGUARD_ORCHESTRATOR_AUTHORIZER_H_

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

class Authorizer {
 public:
  struct Options {
    absl::Duration cache_ttl = absl::Seconds(2);
    size_t max_cached = 10000;
  };

  Authorizer(TokenRepository* tokens, Clock* clock) : Authorizer(tokens, clock, Options()) {}
  Authorizer(TokenRepository* tokens, Clock* clock, Options options)
      : tokens_(tokens), clock_(clock), options_(options) {}

  // The caller's token from the "authorization" metadata value ("Bearer <secret>").
  // UNAUTHENTICATED when missing, malformed, unknown or revoked; UNAVAILABLE when the
  // database cannot be asked.
  absl::StatusOr<TokenIdentity> Authenticate(std::string_view authorization);

  // Authenticate, then PERMISSION_DENIED unless the token's role may call `method`.
  absl::StatusOr<TokenIdentity> Check(std::string_view authorization, std::string_view method);

  // Forgets every cached answer (after a revocation).
  void ClearCache();

 private:
  struct Cached {
    std::optional<TokenIdentity> token;  // nullopt: no such (unrevoked) token
    absl::Time expires;
  };

  TokenRepository* tokens_;
  Clock* clock_;
  const Options options_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Cached> cache_ ABSL_GUARDED_BY(mu_);  // by secret hash
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_AUTHORIZER_H_
