// Drift test over a sliding window. See steady_state.h.
#include "worker/steady_state.h"

#include <cmath>
#include <optional>
#include <vector>

#include "common/line_fit.h"

namespace vanguard::worker {

namespace {

// The least-squares drift of a series over its span, relative to its mean (signed), and the
// standard error of that estimate.
struct Drift {
  double relative = 0;
  double standard_error = 0;
};

Drift DriftOf(const std::deque<double>& v) {
  std::vector<double> index(v.size());
  for (size_t i = 0; i < v.size(); ++i) index[i] = static_cast<double>(i);
  const std::vector<double> values(v.begin(), v.end());
  const std::optional<LineFit> fit = FitLine(index, values);
  if (!fit || fit->mean_y == 0) return {};
  const double n = static_cast<double>(v.size());
  Drift d;
  d.relative = fit->slope * (n - 1) / std::abs(fit->mean_y);
  d.standard_error = fit->slope_se * (n - 1) / std::abs(fit->mean_y);
  return d;
}

// One-sided 90% quantile of Student's t with `df` degrees of freedom.
double T90(size_t df) {
  static constexpr double kTable[] = {3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415,
                                      1.397, 1.383, 1.372, 1.363, 1.356, 1.350, 1.345,
                                      1.341, 1.337, 1.333, 1.330, 1.328, 1.325};
  constexpr size_t kRows = sizeof(kTable) / sizeof(kTable[0]);
  if (df == 0) return 0;
  return df <= kRows ? kTable[df - 1] : 1.282 + (1.325 - 1.282) * 20.0 / static_cast<double>(df);
}

}  // namespace

double SteadyStateDetector::RelativeDrift(const std::deque<double>& v) {
  return std::abs(DriftOf(v).relative);
}

bool SteadyStateDetector::Trending(const std::deque<double>& v, double tolerance,
                                   bool rising_only) {
  const Drift d = DriftOf(v);
  const double drift = rising_only ? d.relative : std::abs(d.relative);
  const size_t df = v.size() >= 3 ? v.size() - 2 : 0;
  return drift - T90(df) * d.standard_error > tolerance;
}

bool SteadyStateDetector::Add(double latency_ms, double throughput_ratio) {
  latency_.push_back(latency_ms);
  throughput_.push_back(throughput_ratio);
  const size_t k = static_cast<size_t>(options_.windows < 2 ? 2 : options_.windows);
  while (latency_.size() > k) latency_.pop_front();
  while (throughput_.size() > k) throughput_.pop_front();
  if (latency_.size() < k) return steady_ = false;
  steady_ = !Trending(latency_, options_.max_latency_drift) &&
            !Trending(throughput_, options_.max_throughput_drift);
  return steady_;
}

void SteadyStateDetector::Reset() {
  latency_.clear();
  throughput_.clear();
  steady_ = false;
}

}  // namespace vanguard::worker
