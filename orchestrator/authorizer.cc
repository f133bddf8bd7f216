// Bearer-token authorization; see authorizer.h. gRPC server threads call it.
#include "orchestrator/authorizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vanguard {
namespace {

bool IsReaderMethod(std::string_view method) {
  return method == "GetModel" || method == "ListModels" || method == "GetTest" ||
         method == "ListTests" || method == "WatchTest" || method == "ListRegressions" ||
         method == "GetCapacityTrend" || method == "PlanCapacity" || method == "GetTeamQuota" ||
         method == "ListAcceleratorPrices";
}

bool IsSubmitterMethod(std::string_view method) {
  return IsReaderMethod(method) || method == "SubmitTest" || method == "CancelTest" ||
         method == "RegisterModel" || method == "DeprecateModel" || method == "AcceptBaseline" ||
         method == "SetSchedule" || method == "ListSchedules" || method == "DeleteSchedule" ||
         method == "AddWebhook" || method == "ListWebhooks" || method == "DeleteWebhook" ||
         method == "ListWebhookDeliveries";
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

const TokenAnswerCache::Answer* TokenAnswerCache::Find(const std::string& secret_sha256) const {
  auto it = entries_.find(secret_sha256);
  return it == entries_.end() ? nullptr : &it->second.answer;
}

void TokenAnswerCache::Store(const std::string& secret_sha256, Answer answer) {
  if (auto it = entries_.find(secret_sha256); it != entries_.end()) {
    it->second.answer = std::move(answer);
    order_.splice(order_.end(), order_, it->second.position);
    return;
  }
  if (capacity_ == 0) return;
  while (entries_.size() >= capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(secret_sha256);
  entries_.emplace(secret_sha256, Entry{std::move(answer), std::prev(order_.end())});
}

void TokenAnswerCache::Erase(const std::string& secret_sha256) {
  auto it = entries_.find(secret_sha256);
  if (it == entries_.end()) return;
  order_.erase(it->second.position);
  entries_.erase(it);
}

void TokenAnswerCache::Clear() {
  entries_.clear();
  order_.clear();
}

Authorizer::Authorizer(TokenRepository* tokens, Clock* clock, Options options)
    : Authorizer(
          [tokens](const std::string& secret_sha256) { return tokens->IdentityOf(secret_sha256); },
          clock, options) {}

Authorizer::Authorizer(IdentityLookup lookup, Clock* clock, Options options)
    : lookup_(std::move(lookup)),
      clock_(clock),
      options_(options),
      valid_(options.max_cached),
      unknown_(options.max_cached),
      bucket_(options.unknown_lookup_burst),
      bucket_filled_at_(clock->Monotonic()) {}

Authorizer::Cached Authorizer::FromCache(const std::string& secret_sha256, absl::Duration now,
                                         std::optional<TokenIdentity>* token) {
  if (const TokenAnswerCache::Answer* valid = valid_.Find(secret_sha256)) {
    if (valid->expires <= now) return Cached::kKnownValidExpired;
    *token = valid->token;
    return Cached::kValid;
  }
  const TokenAnswerCache::Answer* unknown = unknown_.Find(secret_sha256);
  if (unknown != nullptr && unknown->expires > now) return Cached::kUnknown;
  return Cached::kNone;
}

absl::Status Authorizer::TakeLookup(absl::Duration now) {
  const double rate = options_.unknown_lookups_per_second;
  if (now > bucket_filled_at_) {
    bucket_ = std::min(options_.unknown_lookup_burst,
                       bucket_ + absl::ToDoubleSeconds(now - bucket_filled_at_) * rate);
    bucket_filled_at_ = now;
  }
  if (bucket_ >= 1) {
    bucket_ -= 1;
    return absl::OkStatus();
  }
  const double wait_ms = rate > 0 ? std::ceil((1 - bucket_) / rate * 1000) : 1000;
  return absl::UnavailableError(
      absl::StrCat("too many lookups of uncached bearer tokens (the orchestrator's "
                   "--auth_unknown_lookups_per_second=",
                   rate, ", --auth_unknown_lookup_burst=", options_.unknown_lookup_burst,
                   "); retry in ", wait_ms, " ms"));
}

absl::StatusOr<std::optional<TokenIdentity>> Authorizer::LookUp(const std::string& secret_sha256,
                                                                absl::Duration now) {
  absl::StatusOr<std::optional<TokenIdentity>> looked_up = lookup_(secret_sha256);
  if (!looked_up.ok()) {
    return absl::Status(looked_up.status().code(), absl::StrCat("cannot check the bearer token: ",
                                                                looked_up.status().message()));
  }
  const TokenAnswerCache::Answer answer{*looked_up, now + options_.cache_ttl};
  absl::MutexLock lock(&mu_);
  if (looked_up->has_value()) {
    unknown_.Erase(secret_sha256);
    valid_.Store(secret_sha256, answer);
  } else {
    valid_.Erase(secret_sha256);
    unknown_.Store(secret_sha256, answer);
  }
  return looked_up;
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
  const absl::Duration now = clock_->Monotonic();
  std::optional<TokenIdentity> token;
  {
    absl::MutexLock lock(&mu_);
    switch (FromCache(hash, now, &token)) {
      case Cached::kValid:
        return *std::move(token);
      case Cached::kUnknown:
        return absl::UnauthenticatedError("unknown or revoked bearer token");
      case Cached::kKnownValidExpired:
        break;  // re-checked outside the budget: it was valid
      case Cached::kNone:
        if (absl::Status s = TakeLookup(now); !s.ok()) return s;
        break;
    }
  }
  absl::StatusOr<std::optional<TokenIdentity>> looked_up = LookUp(hash, now);
  if (!looked_up.ok()) return looked_up.status();
  if (!looked_up->has_value()) return absl::UnauthenticatedError("unknown or revoked bearer token");
  return **std::move(looked_up);
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
  valid_.Clear();
  unknown_.Clear();
}

}  // namespace vanguard
