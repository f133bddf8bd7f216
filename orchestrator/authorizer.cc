// Bearer-token authorization; see authorizer.h. gRPC server threads call it.
#include "orchestrator/authorizer.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vanguard {
namespace {

bool IsReaderMethod(std::string_view method) {
  return method == "GetModel" || method == "ListModels" || method == "GetTest" ||
         method == "ListTests" || method == "WatchTest" || method == "ListRegressions" ||
         method == "GetCapacityTrend" || method == "PlanCapacity" || method == "GetTeamQuota";
}

bool IsSubmitterMethod(std::string_view method) {
  return IsReaderMethod(method) || method == "SubmitTest" || method == "CancelTest" ||
         method == "RegisterModel" || method == "DeprecateModel" || method == "AcceptBaseline" ||
         method == "SetSchedule" || method == "ListSchedules" || method == "DeleteSchedule" ||
         method == "AddWebhook" || method == "ListWebhooks" || method == "DeleteWebhook";
}

bool IsWorkerMethod(std::string_view method) {
  return method == "LeaseTest" || method == "Heartbeat" || method == "ReportStep" ||
         method == "ReportProgress" || method == "CompleteTest" || method == "ReleaseTest" ||
         method == "GetModel" || method == "GetTest";
}

std::string RoleName(v1::Role role) { return RoleToDb(role); }

}  // namespace

bool RoleAllows(v1::Role role, std::string_view method) {
  switch (role) {
    case v1::ROLE_ADMIN:
      return true;
    case v1::ROLE_SUBMITTER:
      return IsSubmitterMethod(method);
    case v1::ROLE_READER:
      return IsReaderMethod(method);
    case v1::ROLE_WORKER:
      return IsWorkerMethod(method);
    default:
      return false;
  }
}

absl::StatusOr<TokenIdentity> Authorizer::Authenticate(std::string_view authorization) {
  absl::string_view value =
      absl::StripAsciiWhitespace(absl::string_view(authorization.data(), authorization.size()));
  if (value.empty()) {
    return absl::UnauthenticatedError(
        "missing bearer token: send metadata \"authorization: Bearer <token>\" "
        "(the vanguard CLI and worker read $VANGUARD_TOKEN)");
  }
  if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
    return absl::UnauthenticatedError("authorization metadata must be \"Bearer <token>\"");
  }
  value.remove_prefix(7);
  value = absl::StripLeadingAsciiWhitespace(value);
  if (value.empty()) return absl::UnauthenticatedError("empty bearer token");

  const std::string hash = Sha256(std::string_view(value.data(), value.size()));
  const absl::Time now = clock_->Now();
  std::optional<TokenIdentity> token;
  bool cached = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(hash);
    if (it != cache_.end() && it->second.expires > now) {
      token = it->second.token;
      cached = true;
    }
  }
  if (!cached) {
    absl::StatusOr<std::optional<TokenIdentity>> looked_up = tokens_->IdentityOf(hash);
    if (!looked_up.ok()) {
      return absl::Status(looked_up.status().code(), absl::StrCat("cannot check the bearer token: ",
                                                                  looked_up.status().message()));
    }
    token = *looked_up;
    absl::MutexLock lock(&mu_);
    if (cache_.size() >= options_.max_cached) cache_.clear();
    cache_[hash] = Cached{token, now + options_.cache_ttl};
  }
  if (!token.has_value()) return absl::UnauthenticatedError("unknown or revoked bearer token");
  return *std::move(token);
}

absl::StatusOr<TokenIdentity> Authorizer::Check(std::string_view authorization,
                                                std::string_view method) {
  absl::StatusOr<TokenIdentity> token = Authenticate(authorization);
  if (!token.ok()) return token.status();
  if (!RoleAllows(token->role, method)) {
    return absl::PermissionDeniedError(
        absl::StrCat("role ", RoleName(token->role), " may not call ", std::string(method)));
  }
  return token;
}

void Authorizer::ClearCache() {
  absl::MutexLock lock(&mu_);
  cache_.clear();
}

}  // namespace vanguard
