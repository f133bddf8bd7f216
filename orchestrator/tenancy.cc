// Tenancy rules; see tenancy.h. Any thread may call.
#include "orchestrator/tenancy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/strategy_rules.h"
#include "orchestrator/validation.h"

namespace vanguard {
namespace {

constexpr absl::Duration kDefaultSustainHorizon = absl::Minutes(5);
constexpr absl::Duration kMaxQuotaDuration = absl::Hours(24 * 365);
constexpr int32_t kMaxQuotaConcurrentTests = 100'000;

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

absl::Status ValidateQuotaDuration(bool has, const google::protobuf::Duration& d,
                                   absl::string_view field) {
  if (!has) return absl::OkStatus();
  RETURN_IF_ERROR(ValidateDuration(d, field, DurationRule::kPositive));
  if (FromProtoDuration(d) > kMaxQuotaDuration) return Invalid(field, "must be at most 365 days");
  return absl::OkStatus();
}

absl::Status ValidateCeiling(bool has, int32_t value, absl::string_view field) {
  if (has && (value < kMinPriority || value > kMaxPriority)) {
    return Invalid(field, absl::StrCat("must be from ", kMinPriority, " to ", kMaxPriority));
  }
  return absl::OkStatus();
}

absl::Status Exhausted(absl::string_view team, absl::string_view limit, absl::string_view what) {
  return absl::ResourceExhaustedError(
      absl::StrCat("team ", team, "'s quota ", limit, " refuses this test: ", what));
}

}  // namespace

TeamLimits TeamLimits::From(const v1::TeamQuota& quota) {
  TeamLimits limits;
  if (quota.has_max_rate_qps()) limits.max_rate_qps = quota.max_rate_qps();
  if (quota.has_max_step_duration()) {
    limits.max_step_duration = FromProtoDuration(quota.max_step_duration());
  }
  if (quota.has_max_test_duration()) {
    limits.max_test_duration = FromProtoDuration(quota.max_test_duration());
  }
  if (quota.has_max_concurrent_tests()) limits.max_concurrent_tests = quota.max_concurrent_tests();
  if (quota.has_max_submitter_priority()) {
    limits.max_submitter_priority = quota.max_submitter_priority();
  }
  if (quota.has_max_admin_priority()) limits.max_admin_priority = quota.max_admin_priority();
  return limits;
}

v1::TeamQuota TeamLimits::ToProto() const {
  v1::TeamQuota quota;
  quota.set_max_rate_qps(max_rate_qps);
  *quota.mutable_max_step_duration() = ToProtoDuration(max_step_duration);
  *quota.mutable_max_test_duration() = ToProtoDuration(max_test_duration);
  quota.set_max_concurrent_tests(max_concurrent_tests);
  quota.set_max_submitter_priority(max_submitter_priority);
  quota.set_max_admin_priority(max_admin_priority);
  return quota;
}

absl::Status ValidateTeamQuota(const v1::TeamQuota& quota) {
  if (quota.has_max_rate_qps() &&
      !(quota.max_rate_qps() > 0 && quota.max_rate_qps() <= kMaxRateQps)) {
    return Invalid("quota.max_rate_qps", absl::StrCat("must be > 0 and <= ", kMaxRateQps));
  }
  RETURN_IF_ERROR(ValidateQuotaDuration(quota.has_max_step_duration(), quota.max_step_duration(),
                                        "quota.max_step_duration"));
  RETURN_IF_ERROR(ValidateQuotaDuration(quota.has_max_test_duration(), quota.max_test_duration(),
                                        "quota.max_test_duration"));
  if (quota.has_max_concurrent_tests() &&
      (quota.max_concurrent_tests() < 1 ||
       quota.max_concurrent_tests() > kMaxQuotaConcurrentTests)) {
    return Invalid("quota.max_concurrent_tests",
                   absl::StrCat("must be from 1 to ", kMaxQuotaConcurrentTests));
  }
  RETURN_IF_ERROR(ValidateCeiling(quota.has_max_submitter_priority(),
                                  quota.max_submitter_priority(), "quota.max_submitter_priority"));
  return ValidateCeiling(quota.has_max_admin_priority(), quota.max_admin_priority(),
                         "quota.max_admin_priority");
}

absl::Status MayActOn(absl::string_view caller_team, v1::Role role, absl::string_view owner_team,
                      absl::string_view what) {
  if (role == v1::ROLE_ADMIN || caller_team == owner_team) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(what, " belongs to team ", owner_team,
                                                  "; this token acts for team ", caller_team));
}

double HighestRateQps(const v1::TestSpec& spec) {
  const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
  return rules != nullptr ? rules->highest_rate_qps(spec) : 0;
}

int64_t MostSteps(const v1::TestSpec& spec) {
  const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
  return rules != nullptr ? rules->most_steps(spec) : 0;
}

absl::Duration LongestTestDuration(const v1::TestSpec& spec) {
  const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
  if (rules == nullptr) return absl::ZeroDuration();
  if (rules->longest_duration != nullptr) return rules->longest_duration(spec);
  const absl::Duration step =
      FromProtoDuration(spec.step_warmup()) + FromProtoDuration(spec.step_duration());
  absl::Duration longest = step * MostSteps(spec);
  if (rules->holds_estimate) {
    const absl::Duration horizon = FromProtoDuration(spec.sustain_horizon());
    longest += horizon > absl::ZeroDuration() ? horizon : kDefaultSustainHorizon;
  }
  return longest;
}

absl::Status CheckTestQuota(const TeamLimits& limits, absl::string_view team, v1::Role role,
                            const v1::TestSpec& spec) {
  const bool admin = role == v1::ROLE_ADMIN || role == v1::ROLE_UNSPECIFIED;
  const int32_t ceiling = admin ? limits.max_admin_priority : limits.max_submitter_priority;
  if (spec.priority() > ceiling) {
    return absl::PermissionDeniedError(absl::StrCat(
        "team ", team, "'s quota ", admin ? "max_admin_priority" : "max_submitter_priority", " is ",
        ceiling, ": spec.priority ", spec.priority(), " is above it"));
  }
  const double rate = HighestRateQps(spec);
  if (rate > limits.max_rate_qps) {
    return Exhausted(
        team, "max_rate_qps",
        absl::StrCat("it may offer ", rate, " requests/s, the limit is ", limits.max_rate_qps));
  }
  const absl::Duration step =
      FromProtoDuration(spec.step_warmup()) + FromProtoDuration(spec.step_duration());
  if (step > limits.max_step_duration) {
    return Exhausted(
        team, "max_step_duration",
        absl::StrCat("a step (step_warmup + step_duration) lasts ", absl::FormatDuration(step),
                     ", the limit is ", absl::FormatDuration(limits.max_step_duration)));
  }
  const absl::Duration longest = LongestTestDuration(spec);
  if (longest > limits.max_test_duration) {
    return Exhausted(
        team, "max_test_duration",
        absl::StrCat("it may run ", absl::FormatDuration(longest), " (", MostSteps(spec),
                     " steps of ", absl::FormatDuration(step), "), the limit is ",
                     absl::FormatDuration(limits.max_test_duration)));
  }
  return absl::OkStatus();
}

}  // namespace vanguard
