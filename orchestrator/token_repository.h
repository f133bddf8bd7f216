// Bearer tokens for the gRPC API (table `api_tokens`, migrations/0002). A token has a name,
// a role, a team (migrations/0011: the team it acts for) and a random secret; only the secret's
// SHA-256 is stored, so the secret is shown once, when the token is created, and a database dump
// reveals no usable token.
//
//   TokenRepository tokens(pool);
//   ASSIGN_OR_RETURN(CreatedToken t, tokens.Create("ci", v1::ROLE_SUBMITTER, "vision"));
//   // hand t.secret to the client; it sends "authorization: Bearer <secret>"
//   ASSIGN_OR_RETURN(std::optional<TokenIdentity> who, tokens.IdentityOf(Sha256(secret)));
//
// Thread-safe (all state is in Postgres); any thread may call. Database errors map as in
// common/postgres.h.
#ifndef VANGUARD_ORCHESTRATOR_TOKEN_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_TOKEN_REPOSITORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

// SHA-256 digest (32 raw bytes) of `secret`.
std::string Sha256(std::string_view secret);
// A new random secret: "vgt_" + 43 URL-safe base64 characters (256 bits).
std::string NewTokenSecret();
// "reader", "submitter", "worker", "admin" as stored; "" for ROLE_UNSPECIFIED.
std::string RoleToDb(v1::Role role);
v1::Role RoleFromDb(std::string_view role);

// Who a valid bearer token is: its row in api_tokens. The id is what a lease is bound to
// (a name is freed by revocation and may be reused; an id never is).
struct TokenIdentity {
  int64_t id = 0;
  std::string name;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  std::string team = "default";  // the team it acts for (an admin acts on every team)
};

struct CreatedToken {
  v1::Token token;
  std::string secret;
};

class TokenRepository {
 public:
  explicit TokenRepository(PostgresPool* pool) : pool_(pool) {}

  // A new token with a fresh secret, acting for `team` (validated by the caller).
  // ALREADY_EXISTS when an unrevoked token has this name.
  absl::StatusOr<CreatedToken> Create(const std::string& name, v1::Role role,
                                      const std::string& team = "default");

  // Makes `secret` a valid token named `name` with `role`, unless it was revoked. Called by
  // the orchestrator's main at start to bootstrap an admin token from a file or the
  // environment. A new secret is stored under the name (team "default"), revoking the
  // unrevoked token of that name; a valid known secret takes the name and role (its team
  // stays as stored), revoking another unrevoked token of that name. A secret revoked
  // before (by RevokeToken, or rotated away by an earlier Ensure) stays revoked and nothing
  // changes: the returned token has revoke_time set, and the caller must say that the
  // configured secret does not authenticate. Revocation thus survives restarts.
  absl::StatusOr<v1::Token> Ensure(const std::string& name, v1::Role role,
                                   const std::string& secret);

  // Revokes the unrevoked token of this name. NOT_FOUND when there is none.
  absl::StatusOr<v1::Token> Revoke(const std::string& name);

  // Tokens by name (unrevoked first, then by creation).
  absl::StatusOr<std::vector<v1::Token>> List(bool include_revoked);

  // The unrevoked token whose secret hashes to `secret_sha256`; nullopt if none.
  absl::StatusOr<std::optional<TokenIdentity>> IdentityOf(const std::string& secret_sha256);

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_TOKEN_REPOSITORY_H_
