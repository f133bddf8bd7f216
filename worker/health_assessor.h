// The weighted health engine: H = sum_i w_i * m_i / t_i over the model's SLO metrics, mapped
// to five states, with hysteresis across windows.
//
//   ASSIGN_OR_RETURN(HealthAssessor assessor, HealthAssessor::Create(model.slo()));
//   for (const WindowSignals& w : windows) {
//     WindowAssessment a = assessor.Observe(w);   // a.score, a.raw_state, a.state
//   }
//   int spikes = assessor.spikes();                 // windows that breached alone
//
// Score. Each metric whose limit the SLO sets gives a ratio r_i = m_i / t_i (1.0 exactly at
// the limit): p99 latency, error rate, achieved/offered shortfall (against the allowed
// shortfall 1 - min_achieved_ratio), GPU utilization, queue depth, TTFT p99, inter-token
// p99. H = sum w_i * r_i with the weights from the registry (Slo.weights; 0 means the
// default below) normalised over the metrics present, so H is comparable between models.
// The state comes from max(H, max_i r_i): a breach of any single limit is never averaged
// away by healthy metrics, while several metrics nearing their limits together raise the
// state before any one of them breaches.
//   H < 0.6 HEALTHY, < 0.8 WARN, < 0.95 UNHEALTHY, <= 1.0 CRITICAL, > 1.0 OVERLOADED.
//
// Hysteresis. The assessed state escalates only after `escalate_after` (2) consecutive
// windows whose raw state is worse than it (to the better of those windows' states), and
// recovers only after `recover_after` (3) consecutive better windows (to the worst of
// them): fast to detect degradation, slow to believe recovery, no flapping.
//
// Spikes. A window breaches when some metric exceeds its limit (max r_i > 1); a spike is a
// breaching window whose neighbours both did not breach.
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_HEALTH_ASSESSOR_H_
#define VANGUARD_WORKER_HEALTH_ASSESSOR_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/test.pb.h"
#include "worker/health_scorer.h"

namespace vanguard::worker {

// One window's measurements; gauges and stream metrics are optional.
struct WindowSignals {
  double p99_ms = 0;
  double error_rate = 0;  // (errors + timeouts) / scheduled
  double offered_qps = 0;
  double achieved_qps = 0;
  std::optional<double> gpu_utilization;  // 0..1
  std::optional<double> queue_depth;
  std::optional<double> ttft_p99_ms;
  std::optional<double> inter_token_p99_ms;
};

struct WindowAssessment {
  double score = 0;  // H
  double worst_ratio = 0;
  std::string worst_metric;
  vanguard::v1::HealthState raw_state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  vanguard::v1::HealthState state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;  // with hysteresis
  bool breached = false;
};

struct HealthAssessorOptions {
  int escalate_after = 2;
  int recover_after = 3;
  // Ablation ("single-metric SLO"): score the p99 latency alone.
  bool p99_only = false;
};

// Default weights, before normalisation over the metrics present.
struct DefaultHealthWeights {
  static constexpr double kP99Latency = 0.35;
  static constexpr double kErrorRate = 0.2;
  static constexpr double kAchievedShortfall = 0.15;
  static constexpr double kGpuUtilization = 0.05;
  static constexpr double kQueueDepth = 0.1;
  static constexpr double kTtft = 0.1;
  static constexpr double kInterToken = 0.05;
};

// Weighted-sum scorer over named signals ("p99", "p50", "error_rate", "achieved", "gpu",
// "queue", "ttft", "inter_token"); usable wherever a HealthScorer is (e.g. StepJudge).
// HealthScore.score is H; the state follows max(H, worst ratio) as described above.
class WeightedHealthScorer : public HealthScorer {
 public:
  explicit WeightedHealthScorer(const vanguard::v1::HealthWeights& weights);
  HealthScore Score(const std::vector<HealthSignal>& signals) override;
  double WeightOf(const std::string& metric) const;

 private:
  vanguard::v1::HealthWeights weights_;
};

class HealthAssessor {
 public:
  // INVALID_ARGUMENT naming the field for negative or non-finite weights or limits, or an
  // SLO without p99_latency.
  static absl::StatusOr<HealthAssessor> Create(const vanguard::v1::Slo& slo,
                                               HealthAssessorOptions options = {});

  // The signals `w` gives under this SLO (metrics without a limit are left out).
  std::vector<HealthSignal> Signals(const WindowSignals& w) const;

  // Scores one window and advances the hysteresis state machine.
  WindowAssessment Observe(const WindowSignals& w);

  // Forgets every window (a new step starts from HEALTHY).
  void Reset();

  vanguard::v1::HealthState state() const { return state_; }
  // The worst hysteresis state since Reset().
  vanguard::v1::HealthState worst_state() const { return worst_state_; }
  // Windows that breached while both neighbours did not (the last window counts when its
  // predecessor did not breach).
  int spikes() const;
  int windows() const { return static_cast<int>(breaches_.size()); }

 private:
  HealthAssessor(const vanguard::v1::Slo& slo, HealthAssessorOptions options);

  vanguard::v1::Slo slo_;
  HealthAssessorOptions options_;
  WeightedHealthScorer scorer_;
  double min_achieved_ratio_;

  vanguard::v1::HealthState state_ = vanguard::v1::HEALTH_STATE_HEALTHY;
  vanguard::v1::HealthState worst_state_ = vanguard::v1::HEALTH_STATE_HEALTHY;
  int worse_run_ = 0;
  vanguard::v1::HealthState worse_run_min_ = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  int better_run_ = 0;
  vanguard::v1::HealthState better_run_max_ = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
  std::vector<bool> breaches_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_HEALTH_ASSESSOR_H_
