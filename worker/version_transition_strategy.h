// Version transition: the highest rate at which a rolling update of a model served by N >= 2
// replicas keeps the SLO (seed 002's snapshot transitions; vanguard.v1.VersionTransitionStrategy).
// Each trial at a rate r is 1 + N steps:
//  1. before the transition: r over every endpoint, a normal step (warmup, steady state,
//     judged), so each trial starts from a warm fleet;
//  2. one restart per endpoint, in Model.endpoints order: the runner POSTs that endpoint's
//     restart URL (RunStep::restart), then r goes on over every endpoint for per_replica,
//     measured as is from its first request (RunStep::as_is) while the restarted replica
//     comes back cold.
// A restart's windows are read like a replica loss's (ReplicaLossStrategy::ReadLoss): a window
// breaks the SLO when its p99 is over the model's limit, its error rate over max_error_rate,
// or it scheduled requests and none completed; the recovery is the time from the restart to
// the start of the run of good windows that ends the step. A restart holds when it recovered
// within max_recovery. The transition stops at the first restart that does not hold (a
// rolling update halts there). A trial holds iff the warm fleet passed step 1 and every
// restart held; the trial's merged figures are over every restart's windows.
// The search is RateBisection (rate_bisection.h): the first trial at min_qps
// (a failure there ends the test: "the rolling update is not safe even at min_qps"), then
// midpoints of the bracket [highest held, lowest failed] until it is within tolerance or
// max_trials is spent. A step whose load generator was not valid is run again once; invalid
// again, the trial fails.
//
//   ASSIGN_OR_RETURN(auto transition,
//                    VersionTransitionStrategy::Create(spec.version_transition(), context));
//
// Result: max_sustainable_qps 0 (not the model's capacity), Done::version_transition with the
// safe rate and every trial's per-restart and merged figures; converged when a held and a
// failed trial bracket the safe rate within tolerance; the confidence interval is that bracket.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_VERSION_TRANSITION_STRATEGY_H_
#define VANGUARD_WORKER_VERSION_TRANSITION_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/rate_bisection.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class VersionTransitionStrategy : public Strategy {
 public:
  static constexpr double kDefaultRelativeTolerance = RateBisection::kDefaultRelativeTolerance;
  static constexpr int kMaxTrials = RateBisection::kMaxTrials;
  static constexpr double kDefaultPerReplicaS = 10;

  // INVALID_ARGUMENT naming the field ("version_transition.restart_urls ...") for bad
  // parameters: min_qps <= 0, max_qps <= min_qps, a negative tolerance or max_trials out of
  // [0, 12], fewer than two endpoints in context.endpoints, restart_urls not one per endpoint
  // or with an empty URL, per_replica <= 0 or max_recovery outside [0, per_replica).
  static absl::StatusOr<std::unique_ptr<VersionTransitionStrategy>> Create(
      const vanguard::v1::VersionTransitionStrategy& config, const StrategyContext& context);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "version_transition"; }

 private:
  VersionTransitionStrategy(const vanguard::v1::VersionTransitionStrategy& config,
                            const StrategyContext& context, double per_replica_s,
                            double max_recovery_s);

  // The step that starts a trial at `rate`, or the restart of endpoint `index` during it.
  RunStep BeforeStep(double rate) const;
  RunStep RestartStep(double rate, int index) const;
  // The step the trial in flight asks for now.
  RunStep CurrentStep() const;
  // Take the outcome of the step in flight; true when the current trial is over.
  bool TakeBefore(const StepOutcome& outcome);
  bool TakeRestart(const StepOutcome& outcome);
  // Moves the bracket by the finished trial; the next decision (a trial, or Done).
  Decision AfterTrial();
  Decision Finish(bool converged, const std::string& why);

  const vanguard::v1::VersionTransitionStrategy config_;
  const StrategyContext context_;
  const double per_replica_s_;
  const double max_recovery_s_;

  RateBisection search_;
  double full_fleet_held_ = 0;
  std::vector<vanguard::v1::VersionTransitionTrial> trials_;
  vanguard::v1::VersionTransitionTrial trial_;  // the trial in flight
  int restart_index_ = -1;  // the endpoint restarting in the step in flight; -1: before step
  // The trial's restart windows merged so far: failed and scheduled requests.
  double merged_failed_ = 0;
  double merged_scheduled_ = 0;
  bool rerun_ = false;  // the step in flight reruns an invalid one
  bool started_ = false;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_VERSION_TRANSITION_STRATEGY_H_
