// Health of one step from its SLO metrics: the score H and the HealthState it maps to.
//
// Each checked metric is turned into a signal measured/limit, where 1.0 sits exactly on
// the SLO limit. This scorer takes H = max over the signals (the worst metric decides)
// and has no memory. The weighted engine with hysteresis (H = sum w_i * m_i / t_i,
// escalate after 2 bad windows, recover after 3) replaces it behind the same interface.
//
//   MaxRatioHealthScorer scorer;
//   HealthScore h = scorer.Score({{"p99", 80.0, 100.0}, {"error_rate", 0.001, 0.01}});
//   // h.score == 0.8, h.state == HEALTH_STATE_UNHEALTHY, h.worst_metric == "p99"
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_HEALTH_SCORER_H_
#define VANGUARD_WORKER_HEALTH_SCORER_H_

#include <string>
#include <vector>

#include "vanguard/v1/test.pb.h"

namespace vanguard::worker {

// One metric against its limit; ratio() == 1.0 exactly at the limit.
struct HealthSignal {
  std::string metric;
  double measured = 0;
  double limit = 0;  // > 0
  double ratio() const { return limit > 0 ? measured / limit : 0; }
};

struct HealthScore {
  double score = 0;  // H
  std::string worst_metric;
  // The largest measured / limit over the signals: 1.0 exactly at the binding SLO limit,
  // whatever the weights (the adaptive search interpolates on it).
  double worst_ratio = 0;
  vanguard::v1::HealthState state = vanguard::v1::HEALTH_STATE_UNSPECIFIED;
};

// H < 0.6 HEALTHY, < 0.8 WARN, < 0.95 UNHEALTHY, <= 1.0 CRITICAL, > 1.0 OVERLOADED.
vanguard::v1::HealthState HealthStateForScore(double score);

class HealthScorer {
 public:
  virtual ~HealthScorer() = default;
  // No signals: score 0, state UNSPECIFIED (nothing was measured).
  virtual HealthScore Score(const std::vector<HealthSignal>& signals) = 0;
};

// H = max_i measured_i / limit_i.
class MaxRatioHealthScorer : public HealthScorer {
 public:
  HealthScore Score(const std::vector<HealthSignal>& signals) override;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_HEALTH_SCORER_H_
