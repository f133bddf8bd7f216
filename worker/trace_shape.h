// The phases of an autoscale test's LOAD_SHAPE_TRACE: a recorded trace's request rate per
// bucket (AutoscaleStrategy.trace_rates, which `vanguard-replayer rates --trace=FILE
// --output=json` prints from the trace) compressed in time and scaled in rate, so a day of
// production traffic becomes a few minutes of load with the same rises and falls.
//
//   ASSIGN_OR_RETURN(std::vector<AutoscaleStrategy::Phase> phases, TracePhases(config));
//
// - Time: the buckets' span is compressed into `period` (empty: 120 s); each bucket lasts
//   duration * period / span, and must last at least kMinTracePhaseS (one window) then.
// - Rate: each bucket's qps times peak_qps / (the busiest bucket's qps), raised to base_qps
//   where lower (a quiet bucket, or a gap with no request: the replayer cannot send at 0).
// - One constant-rate phase per bucket; neighbours at the same rate become one phase.
// The worker does not read the trace: the trace format belongs to the replayer (rule 15),
// which is also where the trace's payloads are replayed from (TestSpec.trace), if given.
//
// Errors: INVALID_ARGUMENT naming the field and the rule ("autoscale.trace_rates[3].start
// ...") for no buckets, more than AutoscaleStrategy::kMaxSegments, a bucket that does not
// start where the one before it ended, a duration <= 0, a rate that is negative or not
// finite, every bucket at 0 qps, or a period that leaves a bucket shorter than a window.
// Base and peak rates are AutoscaleStrategy::Create's to check. Pure; any thread.
#ifndef VANGUARD_WORKER_TRACE_SHAPE_H_
#define VANGUARD_WORKER_TRACE_SHAPE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/autoscale_strategy.h"

namespace vanguard::worker {

// The shortest a compressed bucket may last: one window of an as-is step.
inline constexpr double kMinTracePhaseS = 0.5;

absl::StatusOr<std::vector<AutoscaleStrategy::Phase>> TracePhases(
    const vanguard::v1::AutoscaleStrategy& config);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_TRACE_SHAPE_H_
