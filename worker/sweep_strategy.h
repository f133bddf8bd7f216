// Multi-rate sweep: runs a fixed list of rates in ascending order and reports the highest
// rate that passed below the first failure.
//
//   vanguard::v1::SweepStrategy config;
//   config.set_min_qps(100); config.set_max_qps(500); config.set_steps(5);
//   ASSIGN_OR_RETURN(auto sweep, SweepStrategy::Create(config));  // 100 200 300 400 500
//
// Semantics:
//  - rates: `rates_qps` sorted ascending (duplicates dropped), or min_qps..max_qps in
//    `steps` equal steps (steps == 1: just min_qps);
//  - stops after `stop_after_failures` consecutive failed steps (0: 1), or when the rates
//    run out;
//  - a step whose client was not valid is not judged: it is run once more, and a second
//    invalid run stops the sweep unconverged;
//  - estimate: the highest passing rate below the first failure, with the confidence
//    interval [that rate, first failure]. A sweep whose lowest rate fails estimates 0, one
//    where every rate passes estimates its max rate; neither is converged.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_SWEEP_STRATEGY_H_
#define VANGUARD_WORKER_SWEEP_STRATEGY_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class SweepStrategy : public Strategy {
 public:
  // Upper bound on the number of rates, so a typo cannot queue a week of steps.
  static constexpr int kMaxRates = 1000;

  // INVALID_ARGUMENT naming the field ("sweep.min_qps ...") for bad parameters.
  static absl::StatusOr<std::unique_ptr<SweepStrategy>> Create(
      const vanguard::v1::SweepStrategy& config);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "sweep"; }

  // The rates this sweep will run, ascending.
  const std::vector<double>& rates() const { return rates_; }
  int stop_after_failures() const { return stop_after_failures_; }

 private:
  SweepStrategy(std::vector<double> rates, int stop_after_failures)
      : rates_(std::move(rates)), stop_after_failures_(stop_after_failures) {}

  // The Done for a sweep that ran to its end (failure limit reached or rates exhausted).
  Done Conclude() const;
  Decision Finish(Done done);

  const std::vector<double> rates_;
  const int stop_after_failures_;

  bool started_ = false;
  size_t current_ = 0;  // index into rates_ of the step asked for last
  bool retried_invalid_client_ = false;
  int consecutive_failures_ = 0;
  std::optional<double> highest_pass_before_first_failure_;
  std::optional<double> first_failure_;
  std::vector<double> passes_after_first_failure_;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_SWEEP_STRATEGY_H_
