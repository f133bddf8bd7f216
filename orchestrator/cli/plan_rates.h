// Replicas over time from a recorded traffic trace, for `vanguard plan --rates=FILE`: the
// trace's request rate per bucket (`vanguard-replayer rates --trace=traffic.vtr`, CSV
// start_s,duration_s,qps) against the per-hardware capacities PlanCapacity returned.
//
//   ASSIGN_OR_RETURN(std::vector<RatePoint> rates, ParseRates(csv_text));
//   out << RenderRatesTable(plan, rates);
//
// For each hardware with a measured capacity mu per replica, as `plan --profile` does over a
// day (plan_profile.h), but over the trace's own span (no wrap):
//   replicas(t)        = ceil(qps(t) * (1 + headroom) / mu) + survive_loss
//   replica-hours      = sum of replicas(t) * duration(t) / 3600
//   accelerator-hours  = replica-hours * accelerator_count (when the count is registered)
//   cost               = replica-hours * price of a replica-hour (when priced)
// The CLI reads the rates, not the trace: the trace format belongs to the replayer
// (CONVENTIONS.md rule 15), which turns a trace into rates. Pure functions; main()'s thread.
#ifndef VANGUARD_ORCHESTRATOR_CLI_PLAN_RATES_H_
#define VANGUARD_ORCHESTRATOR_CLI_PLAN_RATES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard::cli {

struct RatePoint {
  double start_s = 0;     // >= 0, from the trace's first request
  double duration_s = 0;  // > 0
  double qps = 0;         // >= 0
};

// Lines "START_S,DURATION_S,QPS"; an optional header line (a first line whose fields are not
// numbers), blank lines and lines starting with '#' are skipped. INVALID_ARGUMENT naming
// --rates and the line for a bad field, a bucket that starts before the previous one ended,
// more than 1,000,000 lines, or no line at all.
absl::StatusOr<std::vector<RatePoint>> ParseRates(absl::string_view csv);

// The highest rate (the peak `plan` sizes for when --peak_qps is not given).
double RatesPeak(const std::vector<RatePoint>& rates);

// Per measured hardware: the fewest and most replicas over the trace, replica-hours,
// accelerator-hours and cost ("-" where not known), with the span the rates cover.
std::string RenderRatesTable(const v1::PlanCapacityResponse& plan,
                             const std::vector<RatePoint>& rates);
// CSV: start_s, duration_s, qps, then one replicas column per measured hardware, a row per
// bucket; then rows replica_hours, accelerator_hours and cost.
std::string RenderRatesCsv(const v1::PlanCapacityResponse& plan,
                           const std::vector<RatePoint>& rates);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_PLAN_RATES_H_
