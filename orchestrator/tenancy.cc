// Tenancy rules; see tenancy.h. Any thread may call.
#include "orchestrator/tenancy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/validation.h"

namespace vanguard {
namespace {

// The worker's defaults where a strategy leaves a count unset (test.proto).
constexpr int64_t kDefaultSearchSteps = 30;    // binary search (test.proto)
constexpr int64_t kDefaultAdaptiveSteps = 50;  // worker/adaptive_strategy.h kDefaultMaxSteps
// The worker's replica-loss defaults (worker/replica_loss_strategy.h): the most trials, and
// the loss part's length.
constexpr int64_t kMaxReplicaLossTrials = 12;
constexpr absl::Duration kDefaultReplicaLossAfterLoss = absl::Seconds(20);

int64_t ReplicaLossTrials(const v1::ReplicaLossStrategy& r) {
  return r.max_trials() > 0 ? r.max_trials() : kMaxReplicaLossTrials;
}
// The worker's version-transition defaults (worker/version_transition_strategy.h).
constexpr int64_t kMaxVersionTransitionTrials = 12;
constexpr absl::Duration kDefaultVersionTransitionPerReplica = absl::Seconds(10);

int64_t VersionTransitionTrials(const v1::VersionTransitionStrategy& v) {
  return v.max_trials() > 0 ? v.max_trials() : kMaxVersionTransitionTrials;
}
constexpr int64_t kDefaultStabilitySegments = 10;
// An autoscale test's defaults, as vanguard.v1.AutoscaleStrategy documents them.
constexpr int64_t kDefaultAutoscaleSegments = 12;

// How long an autoscale test's shape lasts (its phases' durations, defaults filled in).
absl::Duration AutoscaleShapeDuration(const v1::AutoscaleStrategy& a) {
  auto or_default = [](const google::protobuf::Duration& d, absl::Duration fallback) {
    const absl::Duration given = FromProtoDuration(d);
    return given == absl::ZeroDuration() ? fallback : given;
  };
  if (a.shape() == v1::LOAD_SHAPE_DIURNAL || a.shape() == v1::LOAD_SHAPE_TRACE) {
    return or_default(a.period(), absl::Seconds(120));
  }
  absl::Duration total = or_default(a.base_duration(), absl::Seconds(10)) +
                         or_default(a.peak_duration(), absl::Seconds(30)) +
                         or_default(a.after_duration(), absl::Seconds(10));
  if (a.shape() == v1::LOAD_SHAPE_RAMP) total += or_default(a.ramp_duration(), absl::Seconds(30));
  return total;
}
constexpr double kDefaultLadderStartQps = 2;
constexpr double kDefaultLadderFineStep = 0.1;
constexpr double kDefaultLadderMaxQps = 1'000'000;
constexpr int64_t kLadderRamps = 3;
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

// Steps of one ladder ramp: doubling from start to max, then fine steps over one doubling.
int64_t LadderRampSteps(const v1::LadderStrategy& ladder) {
  const double start = ladder.start_qps() > 0 ? ladder.start_qps() : kDefaultLadderStartQps;
  const double max = ladder.max_qps() > 0 ? ladder.max_qps() : kDefaultLadderMaxQps;
  const double fine =
      ladder.fine_step_fraction() > 0 ? ladder.fine_step_fraction() : kDefaultLadderFineStep;
  const int64_t coarse =
      max > start ? static_cast<int64_t>(std::ceil(std::log2(max / start))) + 1 : 1;
  const int64_t fine_steps = static_cast<int64_t>(std::ceil(std::log(2.0) / std::log1p(fine))) + 1;
  return coarse + fine_steps;
}

bool HoldsItsEstimate(const v1::TestSpec& spec) {
  return spec.has_binary_search() || spec.has_adaptive() || spec.has_ladder();
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
  switch (spec.strategy_case()) {
    case v1::TestSpec::kSweep: {
      double highest = spec.sweep().max_qps();
      for (double rate : spec.sweep().rates_qps()) highest = std::max(highest, rate);
      return highest;
    }
    case v1::TestSpec::kBinarySearch:
      return spec.binary_search().max_qps();
    case v1::TestSpec::kAdaptive:
      return std::max(spec.adaptive().min_qps(), spec.adaptive().max_qps());
    case v1::TestSpec::kLadder:
      return spec.ladder().max_qps() > 0 ? spec.ladder().max_qps() : kDefaultLadderMaxQps;
    case v1::TestSpec::kDirectController:
      return spec.direct_controller().target_qps() *
             (1 + spec.direct_controller().headroom_fraction());
    case v1::TestSpec::kStability:
      return spec.stability().rate_qps();
    case v1::TestSpec::kAutoscale:
      return std::max(spec.autoscale().base_qps(), spec.autoscale().peak_qps());
    case v1::TestSpec::kReplicaLoss:
      return spec.replica_loss().max_qps();
    case v1::TestSpec::kVersionTransition:
      return spec.version_transition().max_qps();
    default:
      return 0;
  }
}

int64_t MostSteps(const v1::TestSpec& spec) {
  switch (spec.strategy_case()) {
    case v1::TestSpec::kSweep:
      return spec.sweep().rates_qps_size() > 0 ? spec.sweep().rates_qps_size()
                                               : spec.sweep().steps();
    case v1::TestSpec::kBinarySearch:
      return spec.binary_search().max_steps() > 0 ? spec.binary_search().max_steps()
                                                  : kDefaultSearchSteps;
    case v1::TestSpec::kAdaptive:
      return spec.adaptive().max_steps() > 0 ? spec.adaptive().max_steps() : kDefaultAdaptiveSteps;
    case v1::TestSpec::kLadder:
      return kLadderRamps * LadderRampSteps(spec.ladder());
    case v1::TestSpec::kDirectController:
      return spec.direct_controller().headroom_fraction() > 0 ? 2 : 1;
    case v1::TestSpec::kStability:
      return spec.stability().segments() > 0 ? spec.stability().segments()
                                             : kDefaultStabilitySegments;
    case v1::TestSpec::kAutoscale:
      if (spec.autoscale().shape() == v1::LOAD_SHAPE_DIURNAL) {
        return spec.autoscale().segments() > 0 ? spec.autoscale().segments()
                                               : kDefaultAutoscaleSegments;
      }
      if (spec.autoscale().shape() == v1::LOAD_SHAPE_TRACE) {  // a bucket a step at most
        return spec.autoscale().trace_rates_size();
      }
      return spec.autoscale().shape() == v1::LOAD_SHAPE_RAMP ? 4 : 3;
    case v1::TestSpec::kReplicaLoss:  // a step before the loss and one after, per trial
      return 2 * ReplicaLossTrials(spec.replica_loss());
    case v1::TestSpec::kVersionTransition:  // a warm step and one per restart, per trial
      return (1 + spec.version_transition().restart_urls_size()) *
             VersionTransitionTrials(spec.version_transition());
    default:
      return 0;
  }
}

absl::Duration LongestTestDuration(const v1::TestSpec& spec) {
  // An autoscale test's phases have their own lengths (no warmup).
  if (spec.has_autoscale()) return AutoscaleShapeDuration(spec.autoscale());
  if (spec.has_replica_loss()) {
    // Per trial: a step over the whole fleet, then the loss part (as is, after_loss long).
    const v1::ReplicaLossStrategy& r = spec.replica_loss();
    const absl::Duration after =
        r.has_after_loss() ? FromProtoDuration(r.after_loss()) : kDefaultReplicaLossAfterLoss;
    return ReplicaLossTrials(r) * (FromProtoDuration(spec.step_warmup()) +
                                   FromProtoDuration(spec.step_duration()) + after);
  }
  if (spec.has_version_transition()) {
    // Per trial: a step over the warm fleet, then one part (as is) per restarted replica.
    const v1::VersionTransitionStrategy& v = spec.version_transition();
    const absl::Duration part = v.has_per_replica() ? FromProtoDuration(v.per_replica())
                                                    : kDefaultVersionTransitionPerReplica;
    return VersionTransitionTrials(v) *
           (FromProtoDuration(spec.step_warmup()) + FromProtoDuration(spec.step_duration()) +
            v.restart_urls_size() * part);
  }
  const absl::Duration step =
      FromProtoDuration(spec.step_warmup()) + FromProtoDuration(spec.step_duration());
  absl::Duration longest = step * MostSteps(spec);
  if (HoldsItsEstimate(spec)) {
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
