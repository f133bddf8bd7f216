// Bearer token storage; see token_repository.h. Any thread may call.
#include "orchestrator/token_repository.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"

namespace vanguard {
namespace {

constexpr char kTokenColumns[] =
    " id, name, role, team, (extract(epoch FROM created_at) * 1000000)::bigint AS created_us,"
    " (extract(epoch FROM revoked_at) * 1000000)::bigint AS revoked_us ";

v1::Token TokenFromRow(const pqxx::row& row) {
  v1::Token token;
  token.set_id(row["id"].as<int64_t>());
  token.set_name(row["name"].c_str());
  token.set_role(RoleFromDb(row["role"].c_str()));
  token.set_team(row["team"].c_str());
  *token.mutable_create_time() = TimestampFromMicros(row["created_us"].as<int64_t>());
  if (!row["revoked_us"].is_null()) {
    *token.mutable_revoke_time() = TimestampFromMicros(row["revoked_us"].as<int64_t>());
  }
  return token;
}

}  // namespace

std::string Sha256(std::string_view secret) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

std::string NewTokenSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // Without a working CSPRNG no secret is safe to hand out; this cannot happen on Linux.
    std::abort();
  }
  std::string encoded;
  absl::WebSafeBase64Escape(absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)),
                            &encoded);
  return absl::StrCat("vgt_", encoded);
}

std::string RoleToDb(v1::Role role) {
  switch (role) {
    case v1::ROLE_READER:
      return "reader";
    case v1::ROLE_SUBMITTER:
      return "submitter";
    case v1::ROLE_WORKER:
      return "worker";
    case v1::ROLE_ADMIN:
      return "admin";
    default:
      return "";
  }
}

v1::Role RoleFromDb(std::string_view role) {
  if (role == "reader") return v1::ROLE_READER;
  if (role == "submitter") return v1::ROLE_SUBMITTER;
  if (role == "worker") return v1::ROLE_WORKER;
  if (role == "admin") return v1::ROLE_ADMIN;
  return v1::ROLE_UNSPECIFIED;
}

absl::StatusOr<CreatedToken> TokenRepository::Create(const std::string& name, v1::Role role,
                                                     const std::string& team) {
  CreatedToken created;
  created.secret = NewTokenSecret();
  const pqxx::binarystring hash(Sha256(created.secret));
  absl::StatusOr<v1::Token> token =
      pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::Token> {
        pqxx::nontransaction txn(conn);
        return TokenFromRow(txn.exec_params1(absl::StrCat("INSERT INTO api_tokens (name, role,"
                                                          " secret_sha256, team)"
                                                          " VALUES ($1, $2, $3, $4) RETURNING",
                                                          kTokenColumns),
                                             name, RoleToDb(role), hash, team));
      });
  if (absl::IsAlreadyExists(token.status())) {
    return absl::AlreadyExistsError(
        absl::StrCat("token name \"", name, "\" is in use; revoke it first or pick another"));
  }
  if (!token.ok()) return token.status();
  created.token = *std::move(token);
  return created;
}

absl::StatusOr<v1::Token> TokenRepository::Ensure(const std::string& name, v1::Role role,
                                                  const std::string& secret) {
  const pqxx::binarystring hash(Sha256(secret));
  return pool_->Transact([&](pqxx::work& txn) -> absl::StatusOr<v1::Token> {
    // Serialize concurrent bootstraps of several replicas.
    txn.exec("LOCK TABLE api_tokens IN SHARE ROW EXCLUSIVE MODE");
    pqxx::result same = txn.exec_params(
        absl::StrCat("SELECT", kTokenColumns, " FROM api_tokens WHERE secret_sha256 = $1"), hash);
    if (!same.empty() && !same[0]["revoked_us"].is_null()) {
      // Revoked by an admin (or rotated away): a revocation outlives restarts. Nothing
      // changes; the caller sees revoke_time and warns.
      return TokenFromRow(same[0]);
    }
    if (!same.empty()) {
      // The secret is known and valid: make it the token of this name and role.
      txn.exec_params(
          "UPDATE api_tokens SET revoked_at = now()"
          " WHERE name = $1 AND revoked_at IS NULL AND secret_sha256 <> $2",
          name, hash);
      return TokenFromRow(txn.exec_params1(absl::StrCat("UPDATE api_tokens SET name = $2, role = $3"
                                                        " WHERE secret_sha256 = $1 RETURNING",
                                                        kTokenColumns),
                                           hash, name, RoleToDb(role)));
    }
    txn.exec_params(
        "UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL", name);
    return TokenFromRow(txn.exec_params1(
        absl::StrCat("INSERT INTO api_tokens (name, role, secret_sha256) VALUES ($1, $2, $3)"
                     " RETURNING",
                     kTokenColumns),
        name, RoleToDb(role), hash));
  });
}

absl::StatusOr<v1::Token> TokenRepository::Revoke(const std::string& name) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<v1::Token> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        txn.exec_params(absl::StrCat("UPDATE api_tokens SET revoked_at = now()"
                                     " WHERE name = $1 AND revoked_at IS NULL RETURNING",
                                     kTokenColumns),
                        name);
    if (rows.empty()) {
      return absl::NotFoundError(absl::StrCat("no unrevoked token named \"", name, "\""));
    }
    return TokenFromRow(rows[0]);
  });
}

absl::StatusOr<std::vector<v1::Token>> TokenRepository::List(bool include_revoked) {
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::vector<v1::Token>> {
    pqxx::nontransaction txn(conn);
    pqxx::result rows =
        txn.exec_params(absl::StrCat("SELECT", kTokenColumns,
                                     " FROM api_tokens WHERE $1::boolean OR revoked_at IS NULL"
                                     " ORDER BY name, revoked_at IS NOT NULL, created_at, id"),
                        include_revoked);
    std::vector<v1::Token> tokens;
    for (const pqxx::row& row : rows) tokens.push_back(TokenFromRow(row));
    return tokens;
  });
}

absl::StatusOr<std::optional<TokenIdentity>> TokenRepository::IdentityOf(
    const std::string& secret_sha256) {
  const pqxx::binarystring hash(secret_sha256);
  return pool_->Run([&](pqxx::connection& conn) -> absl::StatusOr<std::optional<TokenIdentity>> {
    conn.prepare("vanguard_token_identity",
                 "SELECT id, name, role, team FROM api_tokens"
                 " WHERE secret_sha256 = $1 AND revoked_at IS NULL");
    pqxx::nontransaction txn(conn);
    pqxx::result rows = txn.exec_prepared("vanguard_token_identity", hash);
    if (rows.empty()) return std::optional<TokenIdentity>();
    return std::optional<TokenIdentity>(TokenIdentity{.id = rows[0]["id"].as<int64_t>(),
                                                      .name = rows[0]["name"].c_str(),
                                                      .role = RoleFromDb(rows[0]["role"].c_str()),
                                                      .team = rows[0]["team"].c_str()});
  });
}

}  // namespace vanguard
