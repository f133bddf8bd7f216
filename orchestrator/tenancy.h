// Tenancy rules: which team a caller may act on, and what a team's quota allows a test to
// ask for. Pure functions over protos; the service (orchestrator_service.h) applies them,
// TeamRepository (team_repository.h) stores the quotas.
//
//   RETURN_IF_ERROR(MayActOn(caller_team, caller_role, model.team(), "model resnet50"));
//   TeamLimits limits = TeamLimits::From(stored_quota);  // defaults for unset fields
//   RETURN_IF_ERROR(CheckTestQuota(limits, "vision", v1::ROLE_SUBMITTER, spec));
//
// Codes: PERMISSION_DENIED for another team's object and for a priority above the role's
// ceiling; RESOURCE_EXHAUSTED for a rate, step or test duration above the team's limit.
// Each message names the team and the limit (the quota field's name) it broke. The quota
// on concurrent tests is counted where tests are stored (TestRepository::Submit).
// Any thread may call.
#ifndef VANGUARD_ORCHESTRATOR_TENANCY_H_
#define VANGUARD_ORCHESTRATOR_TENANCY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

// The team of rows from before tenancy, and of tokens created without one.
inline constexpr char kDefaultTeam[] = "default";

// A team's limits with every default filled in.
struct TeamLimits {
  double max_rate_qps = 1'000'000;
  absl::Duration max_step_duration = absl::Hours(1);
  absl::Duration max_test_duration = absl::Hours(24);
  int32_t max_concurrent_tests = 100;
  int32_t max_submitter_priority = 200;  // the CLI's "oncall" class
  int32_t max_admin_priority = 1000;     // validation's kMaxPriority

  // The stored quota's fields where set, the defaults above elsewhere.
  static TeamLimits From(const v1::TeamQuota& quota);
  // Every field set (GetTeamQuota's answer).
  v1::TeamQuota ToProto() const;
};

// A quota an admin sets: each set field within the global bounds of validation.h (rate in
// (0, kMaxRateQps], durations > 0 and at most a year, concurrent tests in [1, 100000],
// ceilings in [kMinPriority, kMaxPriority]). INVALID_ARGUMENT naming "quota.<field>".
absl::Status ValidateTeamQuota(const v1::TeamQuota& quota);

// OK when a caller of `role` acting for `caller_team` may act on an object of
// `owner_team`: an admin on every team, anyone else on its own team only. `what` names
// the object in the PERMISSION_DENIED message (e.g. "test 42").
absl::Status MayActOn(absl::string_view caller_team, v1::Role role, absl::string_view owner_team,
                      absl::string_view what);

// The highest rate `spec` may offer, as far as the spec says (a direct controller's fetched
// rate is not known before the worker fetches it; a ladder without max_qps climbs to
// 1,000,000).
double HighestRateQps(const v1::TestSpec& spec);

// The most steps `spec`'s strategy may take (its max_steps, list of rates, segments, or the
// worker's defaults for them; for the ladder, its two ramps and the deciding third from
// start_qps to max_qps, coarse and fine).
int64_t MostSteps(const v1::TestSpec& spec);

// Each of these three reads the strategy's entry in orchestrator/strategy_rules.h.
// How long `spec` may run at most: MostSteps * (step_warmup + step_duration), plus
// sustain_horizon (empty: 5 minutes) for the searches that hold their estimate (binary
// search, adaptive, ladder); for an autoscale test, its shape's phases (their own lengths,
// defaults as AutoscaleStrategy documents them); for a replica-loss test, each trial's step
// plus its after_loss (default 20 s), max_trials (default 12) times; for a version-transition
// test, each trial's step plus one per_replica (default 10 s) per restart URL, max_trials
// (default 12) times. `spec` has the service's defaults applied.
absl::Duration LongestTestDuration(const v1::TestSpec& spec);

// `spec` (defaults applied) against `limits` for a caller of `role` (the admin ceiling
// applies to admins and to callers without auth, the submitter ceiling to everyone else):
// PERMISSION_DENIED for spec.priority above the ceiling ("max_submitter_priority" /
// "max_admin_priority"); RESOURCE_EXHAUSTED for HighestRateQps above max_rate_qps, a step
// (warmup + duration) above max_step_duration, LongestTestDuration above max_test_duration.
absl::Status CheckTestQuota(const TeamLimits& limits, absl::string_view team, v1::Role role,
                            const v1::TestSpec& spec);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_TENANCY_H_
