// A recorded trace's request rate over time, for capacity planning: `vanguard-replayer rates
// --trace=FILE [--bucket=5m] [--model=M]` prints it as CSV that `vanguard plan --rates=FILE`
// (replicas over time, accelerator-hours) and a planner's SQL read (docs/planning.md 4b);
// with --output=json, as the autoscale strategy's trace shape (vanguard.v1.AutoscaleStrategy,
// LOAD_SHAPE_TRACE, its trace_rates) that a test spec drives against an autoscaler.
//
//   ASSIGN_OR_RETURN(TraceRates rates, BucketTraceRates("traffic.vtr", absl::Minutes(5), ""));
//   std::cout << TraceRatesCsv(rates);
//   // start_s,duration_s,qps
//   // 0,300,41.5
//
// A request arrives at the sum of the inter-arrival times up to it (the first at 0); bucket k
// holds the arrivals in [k * bucket, (k + 1) * bucket), and its rate is their count over the
// whole bucket, the last bucket included (the recording is rounded up to whole buckets).
// Streams the trace through TraceReader (bounded memory); errors are the reader's (NOT_FOUND,
// INVALID_ARGUMENT, DATA_LOSS naming the file and record), INVALID_ARGUMENT for a bucket
// outside 1 s to 24 h, and OUT_OF_RANGE when the span would need more than kMaxRateBuckets.
// Pure functions; any thread.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_RATES_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_RATES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::replayer {

inline constexpr int64_t kMaxRateBuckets = 1'000'000;

struct TraceRates {
  absl::Duration bucket;
  std::vector<int64_t> counts;  // arrivals per bucket, from 0
  int64_t records = 0;          // records in the trace
  int64_t counted = 0;          // of them, those of the model asked for (all when none)
  uint64_t span_us = 0;         // the last arrival's time
};

// `model` empty: every record; else only records whose model is `model` (the others still
// advance time).
absl::StatusOr<TraceRates> BucketTraceRates(const std::string& path, absl::Duration bucket,
                                            std::string_view model);

// "start_s,duration_s,qps" and one line per bucket (numbers in shortest round-trip form).
std::string TraceRatesCsv(const TraceRates& rates);

// The same buckets as a vanguard.v1.AutoscaleStrategy in protobuf's JSON mapping (proto field
// names), one line: {"shape":"LOAD_SHAPE_TRACE","trace_rates":[{"start":"0s",
// "duration":"60s","qps":10},...]}, for a test spec's "autoscale" (base_qps, peak_qps,
// replica_capacity_qps and period are the spec writer's to add).
std::string TraceRatesAutoscaleJson(const TraceRates& rates);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_RATES_H_
