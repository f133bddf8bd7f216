// Constant-rate stability: holds one rate for `segments` steps (hours in production, each
// step one segment) and flags drift between the first and the last third of the run:
//  - latency trend: p99 of the last third / first third - 1 > max_latency_growth (20%);
//  - error creep: error rate of the last third - first third > max_error_creep (0.5 points);
//  - throughput decay: 1 - achieved/offered of the last third / first third >
//    max_throughput_decay (5%) (achieved alone when the offered rate is not known);
//  - memory growth: the predictor's memory gauge, last third / first third - 1 >
//    max_memory_growth (10%), when the gauge was scraped in both thirds.
// A segment that fails its SLO is itself a finding: the run continues (drift is what it
// watches for) and the summary counts the failed segments. The p99 limits are judged over the
// whole run: a segment whose only breach is its latency tail (a stall landing in a short
// segment) does not fail the run by itself; the share of all the run's requests over the
// limits does (StepOutcome.tail_ratio pooled by requests, at most 1).
//
//   vanguard::v1::StabilityStrategy config;
//   config.set_rate_qps(400); config.set_segments(12);
//   ASSIGN_OR_RETURN(auto stability, StabilityStrategy::Create(config));
//
// Result: the rate as the estimate when every segment held its other checks, the run's tail
// held and nothing drifted (0 otherwise), converged when every segment was judged, drift_flags
// naming what drifted.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_STABILITY_STRATEGY_H_
#define VANGUARD_WORKER_STABILITY_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class StabilityStrategy : public Strategy {
 public:
  static constexpr int kMaxSegments = 10'000;

  // INVALID_ARGUMENT naming the field ("stability.rate_qps ...") for bad parameters.
  static absl::StatusOr<std::unique_ptr<StabilityStrategy>> Create(
      const vanguard::v1::StabilityStrategy& config);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "stability"; }

  // The drift checks that fire for these segment outcomes (exposed for tests).
  std::vector<std::string> DriftFlags(const std::vector<StepOutcome>& segments) const;

 private:
  explicit StabilityStrategy(const vanguard::v1::StabilityStrategy& config) : config_(config) {}

  Decision Conclude();

  vanguard::v1::StabilityStrategy config_;  // defaults filled in
  std::vector<StepOutcome> segments_;
  int invalid_ = 0;
  bool started_ = false;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STABILITY_STRATEGY_H_
