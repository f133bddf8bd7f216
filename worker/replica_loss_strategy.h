// Replica loss: the survivor capacity of a model served by N >= 2 replicas (seed 003 section
// 10; vanguard.v1.ReplicaLossStrategy). Each trial at a rate r is two steps:
//  1. before the loss: r over every endpoint, a normal step (warmup, steady state, judged);
//  2. the loss: the runner POSTs remove_url (RunStep::removal), then r goes on over the N - 1
//     survivors for after_loss, measured as is from its first request (RunStep::as_is): the
//     survivors' windows (ShapeWindow) as they absorb the lost replica's share. After it the
//     runner POSTs restore_url when the spec sets one (else the fleet must heal itself before
//     the next trial).
// A window breaks the SLO when its p99 is over the model's limit, its error rate over the
// model's max_error_rate, or it scheduled requests and none completed (autoscale's rule).
// Recovery (ReadLoss): the time from the loss to the start of the run of good windows that
// ends the step; "never" (recovered = false) when the last window breaks the SLO.
// A trial holds iff the whole fleet passed step 1 and the survivors recovered within
// max_recovery; a fleet that fails step 1 fails the trial without a loss (the survivors of a
// fleet that cannot carry r cannot either).
// The search is RateBisection (rate_bisection.h): the first trial at min_qps (a
// failure there ends the test: "survivors do not hold even min_qps"), then midpoints of the
// bracket [highest held, lowest failed] until it is within tolerance or max_trials is spent.
// A step whose load generator was not valid is run again once; invalid again, the trial
// fails (a rate whose load cannot be generated on schedule is not claimed).
//
//   ASSIGN_OR_RETURN(auto loss, ReplicaLossStrategy::Create(spec.replica_loss(), context));
//
// Result: max_sustainable_qps 0 (a fleet's capacity with one replica lost is not the model's),
// Done::replica_loss with the survivor capacity, every trial's before/after figures and
// recovery; converged when a held and a failed trial bracket the capacity within tolerance;
// the confidence interval is that bracket.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_REPLICA_LOSS_STRATEGY_H_
#define VANGUARD_WORKER_REPLICA_LOSS_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/rate_bisection.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class ReplicaLossStrategy : public Strategy {
 public:
  static constexpr double kDefaultRelativeTolerance = RateBisection::kDefaultRelativeTolerance;
  static constexpr int kMaxTrials = RateBisection::kMaxTrials;
  static constexpr double kDefaultAfterLossS = 20;

  // What the survivors' windows after a loss say (see the header comment).
  struct LossReading {
    bool recovered = false;
    double recovery_s = 0;    // when !recovered: the whole loss part (a lower bound)
    double p99_ms = 0;        // largest window p99 after recovery (all windows if never)
    double peak_p99_ms = 0;   // largest window p99 after the loss
    double error_rate = 0;    // (errors + timeouts) / scheduled over every window
    double achieved_qps = 0;  // completed / seconds over every window
  };

  // INVALID_ARGUMENT naming the field ("replica_loss.remove_url ...") for bad parameters:
  // min_qps <= 0, max_qps <= min_qps, a negative tolerance or max_trials, no remove_url,
  // fewer than two endpoints in context.endpoints, a removed_endpoint the model does not
  // list, after_loss < 0 or max_recovery outside [0, after_loss).
  static absl::StatusOr<std::unique_ptr<ReplicaLossStrategy>> Create(
      const vanguard::v1::ReplicaLossStrategy& config, const StrategyContext& context);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "replica_loss"; }

  // The reading of a loss part's windows, in time order. Limits of 0 are not checked.
  static LossReading ReadLoss(const std::vector<ShapeWindow>& windows, double p99_limit_ms,
                              double max_error_rate);

 private:
  ReplicaLossStrategy(const vanguard::v1::ReplicaLossStrategy& config,
                      const StrategyContext& context, double after_loss_s, double max_recovery_s,
                      std::string removed_endpoint);

  // The step that starts a trial at `rate` (before the loss), or the loss part of it.
  RunStep BeforeStep(double rate) const;
  RunStep LossStep(double rate) const;
  // Takes the outcome of the step in flight; true when the current trial is over.
  bool TakeBefore(const StepOutcome& outcome);
  bool TakeLoss(const StepOutcome& outcome);
  // Moves the bracket by the finished trial; the next decision (a trial, or Done).
  Decision AfterTrial();
  Decision Finish(bool converged, const std::string& why);

  const vanguard::v1::ReplicaLossStrategy config_;
  const StrategyContext context_;
  const double after_loss_s_;
  const double max_recovery_s_;
  const std::string removed_endpoint_;

  RateBisection search_;
  double full_fleet_held_ = 0;
  std::vector<vanguard::v1::ReplicaLossTrial> trials_;
  vanguard::v1::ReplicaLossTrial trial_;  // the trial in flight
  bool in_loss_ = false;                  // the step in flight is the loss part
  bool rerun_ = false;                    // the step in flight reruns an invalid one
  bool started_ = false;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_REPLICA_LOSS_STRATEGY_H_
