// Binary search for the highest passing rate in [min_qps, max_qps].
//
//   vanguard::v1::BinarySearchStrategy config;
//   config.set_min_qps(10); config.set_max_qps(1000);
//   ASSIGN_OR_RETURN(auto search, BinarySearchStrategy::Create(config));
//
// Semantics:
//  - the first step runs at min_qps: it checks the bracket's lower end, which the search
//    otherwise assumes, and it is where a cold model warms up (the test's first step settles
//    the model's own warmup; at a midpoint rate a model still warming up fails, and the
//    whole search lands low); if it fails the search stops ("no rate passed");
//  - the bracket starts as [min_qps, max_qps]; each step runs at its midpoint, a pass raises
//    the lower end, a failure lowers the upper end;
//  - stops when upper - lower <= tolerance (tolerance_qps, or 2% of the upper end when 0),
//    or after max_steps (0: enough for the tolerance plus the first step, at most 30):
//    O(log2(range/eps)) steps;
//  - estimate: the highest passing rate (0 when none passed), CI [highest pass, lowest
//    failure]; converged when both ends were observed and the bracket is within tolerance;
//  - a step whose client was not valid is rerun once; invalid again, it counts as a failure
//    (a rate whose load cannot even be generated on schedule is not claimed).
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_BINARY_SEARCH_STRATEGY_H_
#define VANGUARD_WORKER_BINARY_SEARCH_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class BinarySearchStrategy : public Strategy {
 public:
  static constexpr double kDefaultRelativeTolerance = 0.02;
  static constexpr int kMaxSteps = 30;

  // INVALID_ARGUMENT naming the field ("binary_search.max_qps ...") for bad parameters.
  static absl::StatusOr<std::unique_ptr<BinarySearchStrategy>> Create(
      const vanguard::v1::BinarySearchStrategy& config);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "binary_search"; }

 private:
  BinarySearchStrategy(const vanguard::v1::BinarySearchStrategy& config, int max_steps)
      : config_(config), max_steps_(max_steps), low_(config.min_qps()), high_(config.max_qps()) {}

  double Tolerance() const;
  Decision Finish(bool converged, const std::string& why);

  const vanguard::v1::BinarySearchStrategy config_;
  const int max_steps_;
  double low_;   // highest rate known (or assumed) to pass
  double high_;  // lowest rate known (or assumed) to fail
  std::optional<double> highest_pass_;
  std::optional<double> lowest_failure_;
  std::optional<double> current_;
  int steps_ = 0;
  bool retried_invalid_client_ = false;
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_BINARY_SEARCH_STRATEGY_H_
