// SummarizeLatency, LoadImbalance; see step_figures.h.
#include "common/step_figures.h"

#include <algorithm>

namespace vanguard {

v1::LatencySummary SummarizeLatency(const LatencyHistogram& h) {
  v1::LatencySummary summary;
  if (h.count() == 0) return summary;
  summary.set_p50_ms(h.Percentile(50.0) / 1000.0);
  summary.set_p90_ms(h.Percentile(90.0) / 1000.0);
  summary.set_p99_ms(h.Percentile(99.0) / 1000.0);
  summary.set_p999_ms(h.Percentile(99.9) / 1000.0);
  summary.set_max_ms(static_cast<double>(h.max()) / 1000.0);
  summary.set_mean_ms(h.mean() / 1000.0);
  return summary;
}

double LoadImbalance(absl::Span<const int64_t> dispatched) {
  if (dispatched.size() < 2) return 0;
  int64_t total = 0;
  int64_t largest = 0;
  for (int64_t d : dispatched) {
    total += d;
    largest = std::max(largest, d);
  }
  if (total <= 0) return 0;
  const double mean = static_cast<double>(total) / static_cast<double>(dispatched.size());
  return static_cast<double>(largest) / mean;
}

}  // namespace vanguard
