// Drift test over a sliding window. See steady_state.h.
#include "worker/steady_state.h"

#include <cmath>

namespace vanguard::worker {

double SteadyStateDetector::RelativeDrift(const std::deque<double>& v) {
  const double n = static_cast<double>(v.size());
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= n;
  if (mean == 0) return 0;
  const double x_mean = (n - 1) / 2;
  double num = 0, den = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    num += (static_cast<double>(i) - x_mean) * (v[i] - mean);
    den += (static_cast<double>(i) - x_mean) * (static_cast<double>(i) - x_mean);
  }
  return std::abs(num / den * (n - 1) / mean);
}

bool SteadyStateDetector::Add(double latency_ms, double throughput_ratio) {
  latency_.push_back(latency_ms);
  throughput_.push_back(throughput_ratio);
  const size_t k = static_cast<size_t>(options_.windows < 2 ? 2 : options_.windows);
  const size_t keep = options_.compare_blocks ? 2 * k : k;
  while (latency_.size() > keep) latency_.pop_front();
  while (throughput_.size() > k) throughput_.pop_front();
  if (latency_.size() < keep) return steady_ = false;
  const std::deque<double> last(latency_.end() - static_cast<long>(k), latency_.end());
  steady_ = RelativeDrift(last) <= options_.max_latency_drift &&
            RelativeDrift(throughput_) <= options_.max_throughput_drift;
  if (steady_ && options_.compare_blocks) {
    double before = 0, after = 0;
    for (size_t i = 0; i < k; ++i) {
      before += latency_[i];
      after += latency_[k + i];
    }
    steady_ = after > 0 && std::abs(before - after) / after <= options_.max_latency_drift / 2;
  }
  return steady_;
}

void SteadyStateDetector::Reset() {
  latency_.clear();
  throughput_.clear();
  steady_ = false;
}

}  // namespace vanguard::worker
