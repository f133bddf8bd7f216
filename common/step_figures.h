// Figures the API reports about a step, computed from what a step counted: the latency
// percentiles (LatencySummary, in ms) read from a microsecond histogram, and the load
// imbalance over endpoints. The replayer reports a step through these functions, and the
// worker reports a step merged from several replayers through the same ones, so both say the
// same thing about the same counts.
//
//   LatencyHistogram merged = ...;  // Merge()d, never averaged
//   v1::LatencySummary summary = SummarizeLatency(merged);
//   double imbalance = LoadImbalance({120, 80, 100});  // 1.2
//
// Pure; any thread.
#ifndef VANGUARD_COMMON_STEP_FIGURES_H_
#define VANGUARD_COMMON_STEP_FIGURES_H_

#include <cstdint>

#include "absl/types/span.h"
#include "common/histogram.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

// p50/p90/p99/p99.9/max/mean in ms; all zero for an empty histogram.
v1::LatencySummary SummarizeLatency(const LatencyHistogram& histogram_us);

// Largest / mean of the endpoints' dispatched counts (1.0 = even); 0 with fewer than two
// endpoints or nothing dispatched.
double LoadImbalance(absl::Span<const int64_t> dispatched);

}  // namespace vanguard

#endif  // VANGUARD_COMMON_STEP_FIGURES_H_
