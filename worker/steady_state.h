// Steady-state detection: after the fixed warmup, a step is measured only once latency and
// throughput stop drifting.
//
//   SteadyStateDetector detector({});
//   for (each window) if (detector.Add(p50_ms, achieved_qps / offered_qps)) break;  // steady
//
// Over the last `windows` (5) samples, the least-squares slope of each series, times the
// span (windows - 1) and relative to the series mean, must be within its tolerance: latency
// (p50, which a few slow requests do not swing) 20%, throughput as achieved/offered 10%.
// A linear fit rather than first-vs-last keeps one noisy window from deciding, and a drift
// counts only when it exceeds the tolerance beyond its own sampling noise (Trending: by
// more than a one-sided 90% t quantile of its standard error, from the scatter about the
// line). Near a model's capacity the p50 of half-second windows scatters by +-20% with
// the queue, and on stationary runs at 95% of capacity 19-23% of 4-window spans drifted by
// more than 20% on their fit alone (3.5% with the noise margin; tests/bench/steady.sh);
// every such false alarm cost a step its measured part and more settling. A slow decline
// (a model warming up over minutes) drifts little within one short span relative to its
// level and passes this test: the test's first step also asks a WarmupDetector
// (warmup_detector.h), whose spans are 10 s long. The caller caps
// how long it waits (see MeasuredStepRunner).
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_STEADY_STATE_H_
#define VANGUARD_WORKER_STEADY_STATE_H_

#include <deque>

namespace vanguard::worker {

struct SteadyStateOptions {
  int windows = 5;
  double max_latency_drift = 0.2;
  double max_throughput_drift = 0.1;
};

class SteadyStateDetector {
 public:
  explicit SteadyStateDetector(SteadyStateOptions options) : options_(options) {}

  // Adds one window; true when the last `windows` windows are steady.
  bool Add(double latency_ms, double throughput_ratio);
  bool steady() const { return steady_; }
  void Reset();

  // Relative drift over the span of `values`: slope * (n - 1) / |mean|; 0 when mean is 0.
  static double RelativeDrift(const std::deque<double>& values);
  // Whether `values` drift by more than `tolerance` (relative, as above) beyond sampling
  // noise: the drift less a one-sided 90% t quantile (n - 2 degrees of freedom) of its
  // standard error (from the residuals about the fitted line; no margin with fewer than
  // three values) exceeds the tolerance. `rising_only` counts upward drifts only.
  static bool Trending(const std::deque<double>& values, double tolerance,
                       bool rising_only = false);

 private:
  SteadyStateOptions options_;
  std::deque<double> latency_;
  std::deque<double> throughput_;
  bool steady_ = false;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STEADY_STATE_H_
