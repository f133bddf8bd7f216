// Autoscaler validation: drives a load shape (spike, ramp, a day compressed in time, or a
// recorded trace's rate per bucket, trace_shape.h; see vanguard.v1.AutoscaleStrategy)
// against an autoscaled deployment, one step per phase of the shape, each measured as is
// (from its first request: what the deployment does while it scales is the point), and
// reports from the steps' windows (ShapeWindow):
//  - violation_seconds: the length of the windows that broke the SLO (p99 latency or error
//    rate over the model's limit, or requests scheduled and none completed);
//  - scale_up_lag: for every rise of the replicas needed, ceil(planned rate /
//    replica_capacity_qps), the time from the start of the window where it rose to the first
//    reading of the replica gauge that reached it (0 when the last reading before the rise
//    already did); the longest such lag. A rise never met makes the lag the time from it to
//    the end of the run, a lower bound (reached = false);
//  - over- and under-provisioned replica-seconds: (replicas - needed) * window length summed
//    where positive, and (needed - replicas) where positive, the replicas of a window being
//    the last reading at or before its end (else the first reading).
// The gauge is read when a window is reported, which behind a backlog is well after the
// window's end (its requests must end first): readings are placed at the time they were taken
// (ShapeWindow::scraped_at_s), not at their window's.
// Time is the steps' measured time laid end to end (the short pauses between phases, where
// no load is offered, are not counted). The resolution of the lag is one window.
//
//   ASSIGN_OR_RETURN(auto autoscale, AutoscaleStrategy::Create(config, context));
//
// Result: max_sustainable_qps 0 (not a capacity estimate), Done::autoscale with the findings,
// converged when every phase's client held its schedule, the replica gauge was scraped and
// every rise was met.
//
// Pure and deterministic; called from the test runner's thread only.
#ifndef VANGUARD_WORKER_AUTOSCALE_STRATEGY_H_
#define VANGUARD_WORKER_AUTOSCALE_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"
#include "worker/strategy.h"

namespace vanguard::worker {

class AutoscaleStrategy : public Strategy {
 public:
  // One phase of the shape: `duration_s` from `start_qps`, linearly to `end_qps`.
  struct Phase {
    double start_qps = 0;
    double end_qps = 0;
    double duration_s = 0;
  };
  // A window of the run with the rate the shape planned for its middle and when its gauge
  // reading was taken, in seconds on the run's time line (its end when not known).
  struct PlannedWindow {
    ShapeWindow window;
    double planned_qps = 0;
    double reading_at_s = 0;
  };

  // INVALID_ARGUMENT naming the field ("autoscale.replica_capacity_qps ...") for bad
  // parameters: base_qps <= 0, peak_qps < base_qps, replica_capacity_qps <= 0, a negative
  // duration, a diurnal period or segments out of range, trace_rates that TracePhases
  // refuses or that are given with another shape.
  static absl::StatusOr<std::unique_ptr<AutoscaleStrategy>> Create(
      const vanguard::v1::AutoscaleStrategy& config, const StrategyContext& context);

  Decision Next(const std::optional<StepOutcome>& last) override;
  std::optional<int> StepsLeft() const override;
  std::string name() const override { return "autoscale"; }

  const std::vector<Phase>& phases() const { return phases_; }

  // The findings over `windows` in time order (see the header comment).
  static AutoscaleFindings Analyze(const std::vector<PlannedWindow>& windows,
                                   double replica_capacity_qps, double p99_limit_ms,
                                   double max_error_rate);

  static constexpr int kMaxSegments = 1000;

 private:
  AutoscaleStrategy(const vanguard::v1::AutoscaleStrategy& config, const StrategyContext& context,
                    std::vector<Phase> phases);

  // The windows of phase `index`'s outcome, each with the rate planned for its middle.
  void Collect(int index, const StepOutcome& outcome);
  Done Conclude() const;

  vanguard::v1::AutoscaleStrategy config_;
  StrategyContext context_;
  std::vector<Phase> phases_;
  int next_phase_ = 0;
  std::vector<PlannedWindow> windows_;
  int invalid_phases_ = 0;
  double elapsed_s_ = 0;  // the phases collected so far, laid end to end
  std::optional<Done> done_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_AUTOSCALE_STRATEGY_H_
