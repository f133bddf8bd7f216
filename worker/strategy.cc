// CreateStrategy: maps a TestSpec's strategy oneof to its implementation. A new strategy
// adds its own file and one case here.
#include "worker/strategy.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/adaptive_strategy.h"
#include "worker/autoscale_strategy.h"
#include "worker/binary_search_strategy.h"
#include "worker/direct_controller_strategy.h"
#include "worker/ladder_strategy.h"
#include "worker/proto_time.h"
#include "worker/replica_loss_strategy.h"
#include "worker/stability_strategy.h"
#include "worker/sweep_strategy.h"
#include "worker/version_transition_strategy.h"

namespace vanguard::worker {
namespace {

template <typename T>
absl::StatusOr<std::unique_ptr<Strategy>> Upcast(absl::StatusOr<std::unique_ptr<T>> s) {
  if (!s.ok()) return s.status();
  return std::unique_ptr<Strategy>(std::move(*s));
}

}  // namespace

double CoefficientOfVariation(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  if (mean == 0) return 0;
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean);
  var /= static_cast<double>(values.size());
  return std::sqrt(var) / std::abs(mean);
}

std::vector<ShapeWindow> ShapeWindowsOf(
    const google::protobuf::RepeatedPtrField<vanguard::v1::StepWindow>& windows, absl::Time began) {
  std::vector<ShapeWindow> out;
  for (const vanguard::v1::StepWindow& w : windows) {
    if (w.warmup()) continue;
    ShapeWindow s;
    s.seconds = absl::ToDoubleSeconds(FromProtoDuration(w.duration()));
    s.p99_ms = w.latency().p99_ms();
    s.scheduled = w.scheduled();
    s.completed = w.completed();
    s.error_rate =
        w.scheduled() > 0 ? static_cast<double>(w.errors() + w.timeouts()) / w.scheduled() : 0;
    if (w.has_replicas()) s.replicas = w.replicas();
    if (w.has_start_time()) {
      s.scraped_at_s = absl::ToDoubleSeconds(FromProtoTimestamp(w.start_time()) - began);
    }
    out.push_back(s);
  }
  return out;
}

PooledSteps PoolSteps(const std::vector<StepOutcome>& steps) {
  PooledSteps pooled;
  double over = 0;  // requests over the tail limits, in allowed units
  for (const StepOutcome& o : steps) {
    if (o.tail_samples > 0) {
      over += o.tail_ratio * static_cast<double>(o.tail_samples);
      pooled.samples += o.tail_samples;
      if (!o.passed && o.passed_apart_from_tail) {
        ++pooled.tail_only;
        continue;
      }
    }
    pooled.other_failures += o.passed ? 0 : 1;
  }
  if (pooled.samples > 0) pooled.ratio = over / static_cast<double>(pooled.samples);
  return pooled;
}

absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(const vanguard::v1::TestSpec& spec,
                                                         const StrategyContext& context) {
  switch (spec.strategy_case()) {
    case vanguard::v1::TestSpec::kSweep:
      return Upcast(SweepStrategy::Create(spec.sweep()));
    case vanguard::v1::TestSpec::kBinarySearch:
      return Upcast(BinarySearchStrategy::Create(spec.binary_search()));
    case vanguard::v1::TestSpec::kAdaptive:
      // The horizon the estimate claims and its final hold backs (empty: 5 minutes).
      return Upcast(AdaptiveStrategy::Create(
          spec.adaptive(), spec.has_sustain_horizon()
                               ? absl::ToDoubleSeconds(FromProtoDuration(spec.sustain_horizon()))
                               : AdaptiveStrategy::kDefaultHorizonS));
    case vanguard::v1::TestSpec::kLadder:
      return Upcast(LadderStrategy::Create(spec.ladder()));
    case vanguard::v1::TestSpec::kStability:
      return Upcast(StabilityStrategy::Create(spec.stability()));
    case vanguard::v1::TestSpec::kDirectController: {
      const vanguard::v1::DirectControllerStrategy& dc = spec.direct_controller();
      double target;
      if (dc.source_case() == vanguard::v1::DirectControllerStrategy::kTargetQps) {
        target = dc.target_qps();
      } else if (dc.source_case() == vanguard::v1::DirectControllerStrategy::SOURCE_NOT_SET) {
        return absl::InvalidArgumentError(
            "direct_controller.source: set json_url, prometheus_url or target_qps");
      } else if (context.controller_target_qps) {
        target = *context.controller_target_qps;
      } else {
        return absl::FailedPreconditionError(
            "direct_controller: the autoscaler's target rate was not fetched");
      }
      return Upcast(DirectControllerStrategy::Create(dc, target));
    }
    case vanguard::v1::TestSpec::kAutoscale:
      return Upcast(AutoscaleStrategy::Create(spec.autoscale(), context));
    case vanguard::v1::TestSpec::kReplicaLoss:
      return Upcast(ReplicaLossStrategy::Create(spec.replica_loss(), context));
    case vanguard::v1::TestSpec::kVersionTransition:
      return Upcast(VersionTransitionStrategy::Create(spec.version_transition(), context));
    case vanguard::v1::TestSpec::STRATEGY_NOT_SET:
      return absl::InvalidArgumentError("spec.strategy: no strategy set (e.g. spec.sweep)");
  }
  return absl::InvalidArgumentError(absl::StrCat("spec.strategy: strategy ",
                                                 static_cast<int>(spec.strategy_case()),
                                                 " is not known to this worker"));
}

}  // namespace vanguard::worker
