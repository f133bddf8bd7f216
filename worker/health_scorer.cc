// The memoryless max-ratio health score. See health_scorer.h.
#include "worker/health_scorer.h"

namespace vanguard::worker {

vanguard::v1::HealthState HealthStateForScore(double score) {
  if (score < 0.6) return vanguard::v1::HEALTH_STATE_HEALTHY;
  if (score < 0.8) return vanguard::v1::HEALTH_STATE_WARN;
  if (score < 0.95) return vanguard::v1::HEALTH_STATE_UNHEALTHY;
  if (score <= 1.0) return vanguard::v1::HEALTH_STATE_CRITICAL;
  return vanguard::v1::HEALTH_STATE_OVERLOADED;
}

HealthScore MaxRatioHealthScorer::Score(const std::vector<HealthSignal>& signals) {
  HealthScore result;
  if (signals.empty()) return result;
  bool first = true;
  for (const HealthSignal& signal : signals) {
    const double ratio = signal.ratio();
    if (first || ratio > result.score) {
      result.score = ratio;
      result.worst_metric = signal.metric;
      first = false;
    }
  }
  result.worst_ratio = result.score;
  result.state = HealthStateForScore(result.score);
  return result;
}

}  // namespace vanguard::worker
