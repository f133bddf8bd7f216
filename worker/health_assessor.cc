// Weighted health score with hysteresis. See health_assessor.h.
#include "worker/health_assessor.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

double Ms(const google::protobuf::Duration& d) {
  return absl::ToDoubleMilliseconds(FromProtoDuration(d));
}

double OrDefault(double v, double d) { return v > 0 ? v : d; }

}  // namespace

WeightedHealthScorer::WeightedHealthScorer(const vanguard::v1::HealthWeights& weights)
    : weights_(weights) {}

double WeightedHealthScorer::WeightOf(const std::string& metric) const {
  using W = DefaultHealthWeights;
  if (metric == "p99" || metric == "p50") return OrDefault(weights_.p99_latency(), W::kP99Latency);
  if (metric == "error_rate") return OrDefault(weights_.error_rate(), W::kErrorRate);
  if (metric == "achieved") return OrDefault(weights_.achieved_shortfall(), W::kAchievedShortfall);
  if (metric == "gpu") return OrDefault(weights_.gpu_utilization(), W::kGpuUtilization);
  if (metric == "queue") return OrDefault(weights_.queue_depth(), W::kQueueDepth);
  if (metric == "ttft") return OrDefault(weights_.ttft(), W::kTtft);
  if (metric == "inter_token") return OrDefault(weights_.inter_token(), W::kInterToken);
  return 0.1;
}

HealthScore WeightedHealthScorer::Score(const std::vector<HealthSignal>& signals) {
  HealthScore result;
  if (signals.empty()) return result;
  double weighted = 0, total_weight = 0, worst = -1;
  for (const HealthSignal& s : signals) {
    const double w = WeightOf(s.metric);
    const double r = s.ratio();
    weighted += w * r;
    total_weight += w;
    if (r > worst) {
      worst = r;
      result.worst_metric = s.metric;
    }
  }
  result.score = total_weight > 0 ? weighted / total_weight : 0;
  result.worst_ratio = std::max(worst, 0.0);
  result.state = HealthStateForScore(std::max(result.score, worst));
  return result;
}

absl::StatusOr<HealthAssessor> HealthAssessor::Create(const vanguard::v1::Slo& slo,
                                                      HealthAssessorOptions options) {
  if (Ms(slo.p99_latency()) <= 0) {
    return absl::InvalidArgumentError("model.slo.p99_latency must be > 0");
  }
  const vanguard::v1::HealthWeights& w = slo.weights();
  for (auto [v, name] :
       {std::pair{w.p99_latency(), "p99_latency"}, std::pair{w.error_rate(), "error_rate"},
        std::pair{w.achieved_shortfall(), "achieved_shortfall"},
        std::pair{w.gpu_utilization(), "gpu_utilization"},
        std::pair{w.queue_depth(), "queue_depth"}, std::pair{w.ttft(), "ttft"},
        std::pair{w.inter_token(), "inter_token"}}) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.slo.weights.", name, " must be >= 0, got ", v));
    }
  }
  for (auto [v, name] : {std::pair{slo.max_gpu_utilization(), "max_gpu_utilization"},
                         std::pair{slo.max_queue_depth(), "max_queue_depth"},
                         std::pair{slo.max_error_rate(), "max_error_rate"}}) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat("model.slo.", name, " must be >= 0, got ", v));
    }
  }
  if (options.escalate_after < 1 || options.recover_after < 1) {
    return absl::InvalidArgumentError("hysteresis window counts must be >= 1");
  }
  return HealthAssessor(slo, options);
}

HealthAssessor::HealthAssessor(const vanguard::v1::Slo& slo, HealthAssessorOptions options)
    : slo_(slo),
      options_(options),
      scorer_(slo.weights()),
      min_achieved_ratio_(slo.min_achieved_ratio() > 0 ? slo.min_achieved_ratio() : 0.99) {}

std::vector<HealthSignal> HealthAssessor::Signals(const WindowSignals& w) const {
  std::vector<HealthSignal> signals;
  signals.push_back({"p99", w.p99_ms, Ms(slo_.p99_latency())});
  if (options_.p99_only) return signals;
  if (slo_.max_error_rate() > 0)
    signals.push_back({"error_rate", w.error_rate, slo_.max_error_rate()});
  const double allowed_shortfall = 1.0 - min_achieved_ratio_;
  if (allowed_shortfall > 0 && w.offered_qps > 0) {
    signals.push_back(
        {"achieved", std::max(0.0, 1.0 - w.achieved_qps / w.offered_qps), allowed_shortfall});
  }
  if (slo_.max_gpu_utilization() > 0 && w.gpu_utilization) {
    signals.push_back({"gpu", *w.gpu_utilization, slo_.max_gpu_utilization()});
  }
  if (slo_.max_queue_depth() > 0 && w.queue_depth) {
    signals.push_back({"queue", *w.queue_depth, slo_.max_queue_depth()});
  }
  if (Ms(slo_.ttft_p99()) > 0 && w.ttft_p99_ms) {
    signals.push_back({"ttft", *w.ttft_p99_ms, Ms(slo_.ttft_p99())});
  }
  if (Ms(slo_.inter_token_p99()) > 0 && w.inter_token_p99_ms) {
    signals.push_back({"inter_token", *w.inter_token_p99_ms, Ms(slo_.inter_token_p99())});
  }
  return signals;
}

WindowAssessment HealthAssessor::Observe(const WindowSignals& w) {
  const std::vector<HealthSignal> signals = Signals(w);
  const HealthScore h = scorer_.Score(signals);
  WindowAssessment a;
  a.score = h.score;
  a.worst_metric = h.worst_metric;
  for (const HealthSignal& s : signals) a.worst_ratio = std::max(a.worst_ratio, s.ratio());
  a.raw_state = h.state;
  a.breached = a.worst_ratio > 1.0;
  breaches_.push_back(a.breached);

  if (a.raw_state > state_) {
    better_run_ = 0;
    worse_run_min_ = worse_run_ == 0 ? a.raw_state : std::min(worse_run_min_, a.raw_state);
    if (++worse_run_ >= options_.escalate_after) {
      state_ = worse_run_min_;
      worse_run_ = 0;
    }
  } else if (a.raw_state < state_) {
    worse_run_ = 0;
    better_run_max_ = better_run_ == 0 ? a.raw_state : std::max(better_run_max_, a.raw_state);
    if (++better_run_ >= options_.recover_after) {
      state_ = better_run_max_;
      better_run_ = 0;
    }
  } else {
    worse_run_ = 0;
    better_run_ = 0;
  }
  worst_state_ = std::max(worst_state_, state_);
  a.state = state_;
  return a;
}

void HealthAssessor::Reset() {
  state_ = worst_state_ = vanguard::v1::HEALTH_STATE_HEALTHY;
  worse_run_ = better_run_ = 0;
  breaches_.clear();
}

int HealthAssessor::spikes() const {
  int spikes = 0;
  for (size_t i = 0; i < breaches_.size(); ++i) {
    if (!breaches_[i]) continue;
    const bool before = i > 0 && breaches_[i - 1];
    const bool after = i + 1 < breaches_.size() && breaches_[i + 1];
    if (!before && !after) ++spikes;
  }
  return spikes;
}

}  // namespace vanguard::worker
