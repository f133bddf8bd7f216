// The strategy interface: decides which rate the next step runs at, and when the test is
// done, from the outcome of the previous step alone. Strategies are pure and deterministic
// (no I/O, no clock), so each one is unit-tested as a sequence of Next() calls.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy, CreateStrategy(test.spec()));
//   std::optional<StepOutcome> last;
//   while (true) {
//     Decision d = strategy->Next(last);
//     if (const auto* done = std::get_if<Done>(&d)) { Report(*done); break; }
//     last = RunAndJudge(std::get<RunStep>(d).rate_qps);
//   }
//
// Each strategy lives in its own file (sweep_strategy.h, ...) and is registered in
// CreateStrategy (strategy.cc). Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_STRATEGY_H_
#define VANGUARD_WORKER_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::worker {

// What the runner learned from one step, as the strategy sees it.
struct StepOutcome {
  double rate_qps = 0;  // the rate the strategy asked for
  bool passed = false;  // met the SLO (meaningless when !client_valid)
  // False when the load generator itself could not hold the schedule: the step says
  // nothing about the model and must not be judged.
  bool client_valid = true;
  double achieved_qps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double error_rate = 0;
  double health_score = 0;  // H; > 1.0 means overloaded
  vanguard::v1::HealthState health_state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
};

// Run the next step at this offered rate.
struct RunStep {
  double rate_qps = 0;
};

// The test is finished.
struct Done {
  double max_sustainable_qps = 0;
  // True when the estimate is bracketed by a pass and a failure as the strategy intends.
  bool converged = false;
  double confidence_low_qps = 0;
  double confidence_high_qps = 0;
  std::string summary;  // one line for humans: how the estimate was reached
};

using Decision = std::variant<RunStep, Done>;

class Strategy {
 public:
  virtual ~Strategy() = default;

  // `last` is empty on the first call, then the outcome of the step the previous call
  // asked for. Once Done is returned, every later call returns the same Done.
  virtual Decision Next(const std::optional<StepOutcome>& last) = 0;

  // Short name for logs, e.g. "sweep".
  virtual std::string name() const = 0;
};

// Builds the strategy a test spec asks for. INVALID_ARGUMENT (naming the field) when the
// spec has no strategy, one this worker does not know, or bad parameters.
absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(const vanguard::v1::TestSpec& spec);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_STRATEGY_H_
