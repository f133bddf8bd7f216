// Ladder calibration (seed 003, section 10): measures lambda_max by walking a ladder of
// arrival rates, twice, and publishes lambda_max, lambda_r and the survivor rate.
//
//   vanguard::v1::LadderStrategy config;  // every field has a default
//   ASSIGN_OR_RETURN(auto ladder, LadderStrategy::Create(config));
//
// Semantics:
//  - a ramp starts at start_qps (2) and doubles the rate until a step fails (coarse), then
//    climbs from the last passing rate in steps of fine_step_fraction (10%) of it until a
//    step fails again (fine); the ramp's lambda_max is its highest passing rate;
//  - a step passes iff goodput >= min_goodput (0.99), the queue-gauge mean <= max_queue_mean
//    (1.0) and the client-validity gate is clean. The queue mean counts only when at least
//    min_queue_sample_fraction (90%) of the expected samples landed; otherwise the step is
//    not judged and the procedure stops (unconverged). A step without a goodput figure
//    falls back to the SLO verdict;
//  - two ramps; if their lambda_max differ by more than ramp_disagreement (10%) of the
//    larger, a third ramp decides by median, else lambda_max is the lower of the two;
//  - the result carries lambda_max (the estimate), lambda_r = reserve_fraction (0.65) *
//    lambda_max, the survivor rate 2 * lambda_r, each ramp's lambda_max, and the CI
//    [lambda_max, the deciding ramp's first failure above it].
//  - a coarse ramp that reaches max_qps without failing ends the ramp there (unconverged).
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_LADDER_STRATEGY_H_
#define VANGUARD_WORKER_LADDER_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class LadderStrategy : public Strategy {
 public:
  // INVALID_ARGUMENT naming the field ("ladder.fine_step_fraction ...") for bad parameters.
  static absl::StatusOr<std::unique_ptr<LadderStrategy>> Create(
      const vanguard::v1::LadderStrategy& config);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "ladder"; }

  // Whether `outcome` passes the ladder's step rule; `why` gets the reason in words. Empty
  // optional: the step cannot be judged (too few queue samples).
  std::optional<bool> StepPasses(const StepOutcome& outcome, std::string* why) const;

 private:
  struct Ramp {
    bool fine = false;
    std::optional<double> last_pass;
    std::optional<double> first_failure;  // above last_pass
    double increment = 0;
    bool exhausted = false;  // reached max_qps without failing
  };

  explicit LadderStrategy(const vanguard::v1::LadderStrategy& config) : config_(config) {}

  Decision StartRamp();
  // About how many steps a whole ramp takes to a lambda_max of `lambda` (coarse doublings
  // from start_qps to the first failure, then fine steps up to the next).
  int RampSteps(double lambda) const;
  Decision Conclude();
  Decision Stop(const std::string& why);

  vanguard::v1::LadderStrategy config_;  // defaults filled in
  std::vector<Ramp> ramps_;
  double current_ = 0;
  int steps_ = 0;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_LADDER_STRATEGY_H_
