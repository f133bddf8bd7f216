// Replicas over a day for `vanguard plan --profile=FILE`: a daily traffic profile (CSV of
// time,qps) against the per-hardware capacities PlanCapacity returned.
//
//   ASSIGN_OR_RETURN(std::vector<ProfilePoint> day, ParseDailyProfile(csv_text));
//   out << RenderProfileTable(plan, day);
//
// Each point's rate holds from its time to the next point's; the last one's until the first
// one's time on the next day (the profile wraps), so the points cover 24 hours. For each
// hardware with a measured capacity mu per replica:
//   replicas(t)        = PlanReplicasAt(qps(t)): ceil(qps(t) * (1 + headroom) / mu) +
//                        survive_loss, with the plan's co-location and survivor factors
//   replica-hours      = sum of replicas(t) * hours the point holds
//   accelerator-hours  = replica-hours * accelerator_count (when the count is registered)
//   cost per day       = replica-hours * price of a replica-hour, the price recovered from
//                        cost_per_million_requests * mu * 3600 / 1e6 (when priced).
// Pure functions; called from main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_PLAN_PROFILE_H_
#define VANGUARD_ORCHESTRATOR_CLI_PLAN_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

struct ProfilePoint {
  double second_of_day = 0;  // [0, 86400)
  double qps = 0;            // >= 0
};

// Lines "TIME,QPS": TIME is HH:MM, HH:MM:SS or seconds since midnight, QPS a rate >= 0; an
// optional header line (a first line whose rate is not a number), blank lines and lines
// starting with '#' are skipped. INVALID_ARGUMENT naming --profile and the line for a bad
// field, times out of order or out of the day, or no point at all.
absl::StatusOr<std::vector<ProfilePoint>> ParseDailyProfile(absl::string_view csv);

// How long each point holds, in hours (see above); same order as `profile`.
std::vector<double> PointHours(const std::vector<ProfilePoint>& profile);

// Accelerator-hours (< 0: the count is not registered) and cost (< 0: unpriced) of
// `replica_hours` of hardware `p`, as in the header comment above.
struct HardwareHours {
  double accelerator_hours = -1;
  double cost = -1;
};
HardwareHours HoursOf(const v1::ReplicaPlan& p, double replica_hours);

// ceil(qps * (1 + headroom) / capacity_qps) + survive_loss.
int64_t ReplicasAt(double qps, double headroom, int32_t survive_loss, double capacity_qps);

// Replicas hardware `p` of `plan` needs at `qps`, as vanguard_plan sizes them at the peak:
// with its effective and survivor capacities (co-location and survivor factors),
//   max(ceil(qps * (1 + headroom) / effective), ceil(qps * (1 + headroom) / survivor) + loss)
// (the first term alone without a loss to survive); a response without them (an older
// orchestrator) sizes on capacity_qps.
int64_t PlanReplicasAt(const v1::PlanCapacityResponse& plan, const v1::ReplicaPlan& p, double qps);

// The highest rate of the profile (the peak `plan` sizes for).
double ProfilePeak(const std::vector<ProfilePoint>& profile);

// One row per point (time, rate, replicas per measured hardware), then replica-hours,
// accelerator-hours and cost per day per hardware ("-" where not known).
std::string RenderProfileTable(const v1::PlanCapacityResponse& plan,
                               const std::vector<ProfilePoint>& profile);
// The same as CSV: time_s, qps, then one replicas column per measured hardware; then the
// totals as rows named replica_hours, accelerator_hours and cost_per_day.
std::string RenderProfileCsv(const v1::PlanCapacityResponse& plan,
                             const std::vector<ProfilePoint>& profile);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_PLAN_PROFILE_H_
