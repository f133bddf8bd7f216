// Direct controller integration: verifies that the rate a production autoscaler targets
// holds the SLO. The rate is fetched by the runner (see controller_rate_source.h) before the
// strategy is built; the strategy runs one step at it and, with headroom_fraction > 0, one
// more at rate * (1 + headroom) to show how much margin the autoscaler leaves.
//
//   ASSIGN_OR_RETURN(auto direct, DirectControllerStrategy::Create(config, /*target=*/420));
//
// A p99 limit is a long-run share (1% of requests over it), and one short step reads it from
// a few thousand requests: a stall landing there fails it though the long run absorbs it. A
// step that fails on its tail alone is therefore followed by kTailJudgingSteps - 1 more at the same
// rate, and the rate is judged on all of them together (tail ratios pooled by requests, every
// other check held in each; see PoolSteps).
//
// Result: the highest verified rate (0 when the target itself fails the SLO), converged
// when the target was judged, CI [highest pass, lowest failure (or the highest rate run)].
// A step whose client was not valid is rerun once.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_DIRECT_CONTROLLER_STRATEGY_H_
#define VANGUARD_WORKER_DIRECT_CONTROLLER_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class DirectControllerStrategy : public Strategy {
 public:
  // INVALID_ARGUMENT naming the field for a non-positive target or bad headroom.
  static absl::StatusOr<std::unique_ptr<DirectControllerStrategy>> Create(
      const vanguard::v1::DirectControllerStrategy& config, double target_qps);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "direct_controller"; }

 private:
  explicit DirectControllerStrategy(std::vector<double> rates) : rates_(std::move(rates)) {}
  Decision Conclude(const std::string& note);

  const std::vector<double> rates_;  // target, then target * (1 + headroom)
  size_t current_ = 0;
  bool started_ = false;
  bool retried_invalid_client_ = false;
  std::vector<StepOutcome> at_rate_;  // the judged steps at rates_[current_]
  std::string tail_note_;             // what pooling across steps decided, for the summary
  std::optional<double> highest_pass_;
  std::optional<double> lowest_failure_;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_DIRECT_CONTROLLER_STRATEGY_H_
