// The orchestrator's table of test strategies; see strategy_rules.h. Any thread may call.
#include "orchestrator/strategy_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/validation.h"

namespace vanguard {
namespace {

// The worker's defaults where a strategy leaves a count or a length unset (test.proto and
// each strategy's header in worker/).
constexpr int64_t kDefaultSearchSteps = 30;    // binary search (test.proto)
constexpr int64_t kDefaultAdaptiveSteps = 50;  // worker/adaptive_strategy.h kDefaultMaxSteps
constexpr int64_t kDefaultStabilitySegments = 10;
constexpr int64_t kDefaultAutoscaleSegments = 12;  // vanguard.v1.AutoscaleStrategy
constexpr double kDefaultLadderStartQps = 2;
constexpr double kDefaultLadderFineStep = 0.1;
constexpr double kDefaultLadderMaxQps = 1'000'000;
constexpr int64_t kLadderRamps = 3;
// worker/replica_loss_strategy.h: the most trials, and the loss part's length.
constexpr int64_t kMaxReplicaLossTrials = 12;
constexpr absl::Duration kDefaultReplicaLossAfterLoss = absl::Seconds(20);
// worker/version_transition_strategy.h.
constexpr int64_t kMaxVersionTransitionTrials = 12;
constexpr absl::Duration kDefaultVersionTransitionPerReplica = absl::Seconds(10);

absl::Duration StepLength(const v1::TestSpec& spec) {
  return FromProtoDuration(spec.step_warmup()) + FromProtoDuration(spec.step_duration());
}

// --- sweep ---

absl::Status CheckSweep(const v1::TestSpec& spec) {
  const v1::SweepStrategy& sweep = spec.sweep();
  const bool has_range = sweep.min_qps() != 0 || sweep.max_qps() != 0 || sweep.steps() != 0;
  if (sweep.rates_qps_size() > 0) {
    if (has_range) {
      return InvalidField("spec.sweep", "set either rates_qps or min_qps/max_qps/steps, not both");
    }
    for (int i = 0; i < sweep.rates_qps_size(); ++i) {
      const double rate = sweep.rates_qps(i);
      if (!std::isfinite(rate) || rate <= 0) {
        return InvalidField(absl::StrCat("spec.sweep.rates_qps[", i, "]"), "must be > 0");
      }
    }
  } else {
    if (!std::isfinite(sweep.min_qps()) || !std::isfinite(sweep.max_qps()) ||
        sweep.min_qps() <= 0 || sweep.min_qps() >= sweep.max_qps()) {
      return InvalidField("spec.sweep", "min_qps must be > 0 and < max_qps (or list rates_qps)");
    }
    if (sweep.steps() < 2 || sweep.steps() > 1000) {
      return InvalidField("spec.sweep.steps",
                          "must be between 2 and 1000 when min_qps/max_qps are used");
    }
  }
  if (sweep.stop_after_failures() < 0) {
    return InvalidField("spec.sweep.stop_after_failures", "must be >= 0");
  }
  return absl::OkStatus();
}

absl::Status SweepBounds(const v1::TestSpec& spec) {
  const v1::SweepStrategy& s = spec.sweep();
  if (s.rates_qps_size() > kMaxSweepRates) {
    return InvalidField("spec.sweep.rates_qps",
                        absl::StrCat("must list at most ", kMaxSweepRates, " rates"));
  }
  for (int i = 0; i < s.rates_qps_size(); ++i) {
    RETURN_IF_ERROR(ValidateRate(s.rates_qps(i), absl::StrCat("spec.sweep.rates_qps[", i, "]")));
  }
  return ValidateBounds({{s.min_qps(), "spec.sweep.min_qps"}, {s.max_qps(), "spec.sweep.max_qps"}},
                        {{s.steps(), "spec.sweep.steps"},
                         {s.stop_after_failures(), "spec.sweep.stop_after_failures"}},
                        {});
}

double SweepHighestRate(const v1::TestSpec& spec) {
  double highest = spec.sweep().max_qps();
  for (double rate : spec.sweep().rates_qps()) highest = std::max(highest, rate);
  return highest;
}

int64_t SweepSteps(const v1::TestSpec& spec) {
  return spec.sweep().rates_qps_size() > 0 ? spec.sweep().rates_qps_size() : spec.sweep().steps();
}

// --- binary search ---

absl::Status BinarySearchBounds(const v1::TestSpec& spec) {
  const v1::BinarySearchStrategy& s = spec.binary_search();
  return ValidateBounds({{s.min_qps(), "spec.binary_search.min_qps"},
                         {s.max_qps(), "spec.binary_search.max_qps"},
                         {s.tolerance_qps(), "spec.binary_search.tolerance_qps"}},
                        {{s.max_steps(), "spec.binary_search.max_steps"}}, {});
}

double BinarySearchHighestRate(const v1::TestSpec& spec) { return spec.binary_search().max_qps(); }

int64_t BinarySearchSteps(const v1::TestSpec& spec) {
  return spec.binary_search().max_steps() > 0 ? spec.binary_search().max_steps()
                                              : kDefaultSearchSteps;
}

// --- adaptive ---

absl::Status AdaptiveBounds(const v1::TestSpec& spec) {
  const v1::AdaptiveStrategy& s = spec.adaptive();
  return ValidateBounds(
      {{s.min_qps(), "spec.adaptive.min_qps"}, {s.max_qps(), "spec.adaptive.max_qps"}},
      {{s.max_steps(), "spec.adaptive.max_steps"},
       {s.spike_tolerance(), "spec.adaptive.spike_tolerance"}},
      {{s.damping(), "spec.adaptive.damping"},
       {s.convergence_cv(), "spec.adaptive.convergence_cv"}});
}

double AdaptiveHighestRate(const v1::TestSpec& spec) {
  return std::max(spec.adaptive().min_qps(), spec.adaptive().max_qps());
}

int64_t AdaptiveSteps(const v1::TestSpec& spec) {
  return spec.adaptive().max_steps() > 0 ? spec.adaptive().max_steps() : kDefaultAdaptiveSteps;
}

// --- ladder ---

absl::Status LadderBounds(const v1::TestSpec& spec) {
  const v1::LadderStrategy& s = spec.ladder();
  return ValidateBounds(
      {{s.start_qps(), "spec.ladder.start_qps"}, {s.max_qps(), "spec.ladder.max_qps"}}, {},
      {{s.fine_step_fraction(), "spec.ladder.fine_step_fraction"},
       {s.min_goodput(), "spec.ladder.min_goodput"},
       {s.max_queue_mean(), "spec.ladder.max_queue_mean"},
       {s.min_queue_sample_fraction(), "spec.ladder.min_queue_sample_fraction"},
       {s.ramp_disagreement(), "spec.ladder.ramp_disagreement"},
       {s.reserve_fraction(), "spec.ladder.reserve_fraction"}});
}

double LadderHighestRate(const v1::TestSpec& spec) {
  return spec.ladder().max_qps() > 0 ? spec.ladder().max_qps() : kDefaultLadderMaxQps;
}

// Per ramp: doubling from start to max, then fine steps over one doubling.
int64_t LadderSteps(const v1::TestSpec& spec) {
  const v1::LadderStrategy& ladder = spec.ladder();
  const double start = ladder.start_qps() > 0 ? ladder.start_qps() : kDefaultLadderStartQps;
  const double max = ladder.max_qps() > 0 ? ladder.max_qps() : kDefaultLadderMaxQps;
  const double fine =
      ladder.fine_step_fraction() > 0 ? ladder.fine_step_fraction() : kDefaultLadderFineStep;
  const int64_t coarse =
      max > start ? static_cast<int64_t>(std::ceil(std::log2(max / start))) + 1 : 1;
  const int64_t fine_steps = static_cast<int64_t>(std::ceil(std::log(2.0) / std::log1p(fine))) + 1;
  return kLadderRamps * (coarse + fine_steps);
}

// --- direct controller ---

absl::Status DirectControllerBounds(const v1::TestSpec& spec) {
  const v1::DirectControllerStrategy& s = spec.direct_controller();
  if (s.json_url().size() > kMaxEndpointBytes || s.prometheus_url().size() > kMaxEndpointBytes ||
      s.json_field().size() > kMaxNameLength) {
    return InvalidField("spec.direct_controller",
                        absl::StrCat("URLs must be at most ", kMaxEndpointBytes,
                                     " bytes and json_field at most ", kMaxNameLength));
  }
  return ValidateBounds({{s.target_qps(), "spec.direct_controller.target_qps"}}, {},
                        {{s.headroom_fraction(), "spec.direct_controller.headroom_fraction"}});
}

std::vector<StrategyTarget> DirectControllerTargets(const v1::TestSpec& spec) {
  const v1::DirectControllerStrategy& c = spec.direct_controller();
  if (c.source_case() == v1::DirectControllerStrategy::kJsonUrl) {
    return {{c.json_url(), "spec.direct_controller.json_url"}};
  }
  if (c.source_case() == v1::DirectControllerStrategy::kPrometheusUrl) {
    return {{c.prometheus_url(), "spec.direct_controller.prometheus_url"}};
  }
  return {};
}

double DirectControllerHighestRate(const v1::TestSpec& spec) {
  return spec.direct_controller().target_qps() * (1 + spec.direct_controller().headroom_fraction());
}

int64_t DirectControllerSteps(const v1::TestSpec& spec) {
  return spec.direct_controller().headroom_fraction() > 0 ? 2 : 1;
}

// --- stability ---

absl::Status StabilityBounds(const v1::TestSpec& spec) {
  const v1::StabilityStrategy& s = spec.stability();
  return ValidateBounds({{s.rate_qps(), "spec.stability.rate_qps"}},
                        {{s.segments(), "spec.stability.segments"}},
                        {{s.max_latency_growth(), "spec.stability.max_latency_growth"},
                         {s.max_error_creep(), "spec.stability.max_error_creep"},
                         {s.max_throughput_decay(), "spec.stability.max_throughput_decay"},
                         {s.max_memory_growth(), "spec.stability.max_memory_growth"}});
}

double StabilityHighestRate(const v1::TestSpec& spec) { return spec.stability().rate_qps(); }

int64_t StabilitySteps(const v1::TestSpec& spec) {
  return spec.stability().segments() > 0 ? spec.stability().segments() : kDefaultStabilitySegments;
}

// --- autoscale ---

// A trace shape's buckets: given with LOAD_SHAPE_TRACE and only then, within the global bounds
// (their order and the period are the worker's TracePhases' to check).
absl::Status ValidateTraceRates(const v1::AutoscaleStrategy& s) {
  const bool trace = s.shape() == v1::LOAD_SHAPE_TRACE;
  if (trace && s.trace_rates_size() == 0) {
    return InvalidField("spec.autoscale.trace_rates",
                        "must list the trace's buckets for LOAD_SHAPE_TRACE (vanguard-replayer "
                        "rates --trace=FILE --output=json)");
  }
  if (!trace && s.trace_rates_size() > 0) {
    return InvalidField("spec.autoscale.trace_rates", "is for LOAD_SHAPE_TRACE only");
  }
  if (s.trace_rates_size() > kMaxStrategySteps) {
    return InvalidField("spec.autoscale.trace_rates",
                        absl::StrCat("must list at most ", kMaxStrategySteps, " buckets"));
  }
  for (int i = 0; i < s.trace_rates_size(); ++i) {
    const std::string field = absl::StrCat("spec.autoscale.trace_rates[", i, "]");
    RETURN_IF_ERROR(ValidateRate(s.trace_rates(i).qps(), absl::StrCat(field, ".qps")));
    RETURN_IF_ERROR(ValidateDuration(s.trace_rates(i).start(), absl::StrCat(field, ".start"),
                                     DurationRule::kNonNegative));
    RETURN_IF_ERROR(ValidateDuration(s.trace_rates(i).duration(), absl::StrCat(field, ".duration"),
                                     DurationRule::kPositive));
  }
  return absl::OkStatus();
}

absl::Status AutoscaleBounds(const v1::TestSpec& spec) {
  const v1::AutoscaleStrategy& s = spec.autoscale();
  RETURN_IF_ERROR(ValidateTraceRates(s));
  return ValidateBounds({{s.base_qps(), "spec.autoscale.base_qps"},
                         {s.peak_qps(), "spec.autoscale.peak_qps"},
                         {s.replica_capacity_qps(), "spec.autoscale.replica_capacity_qps"}},
                        {{s.segments(), "spec.autoscale.segments"}}, {});
}

double AutoscaleHighestRate(const v1::TestSpec& spec) {
  return std::max(spec.autoscale().base_qps(), spec.autoscale().peak_qps());
}

int64_t AutoscaleSteps(const v1::TestSpec& spec) {
  const v1::AutoscaleStrategy& a = spec.autoscale();
  if (a.shape() == v1::LOAD_SHAPE_DIURNAL) {
    return a.segments() > 0 ? a.segments() : kDefaultAutoscaleSegments;
  }
  if (a.shape() == v1::LOAD_SHAPE_TRACE) return a.trace_rates_size();  // a bucket a step at most
  return a.shape() == v1::LOAD_SHAPE_RAMP ? 4 : 3;
}

// Its shape's phases (defaults filled in), no warmup.
absl::Duration AutoscaleDuration(const v1::TestSpec& spec) {
  const v1::AutoscaleStrategy& a = spec.autoscale();
  auto or_default = [](const google::protobuf::Duration& d, absl::Duration fallback) {
    const absl::Duration given = FromProtoDuration(d);
    return given == absl::ZeroDuration() ? fallback : given;
  };
  if (a.shape() == v1::LOAD_SHAPE_DIURNAL || a.shape() == v1::LOAD_SHAPE_TRACE) {
    return or_default(a.period(), absl::Seconds(120));
  }
  absl::Duration total = or_default(a.base_duration(), absl::Seconds(10)) +
                         or_default(a.peak_duration(), absl::Seconds(30)) +
                         or_default(a.after_duration(), absl::Seconds(10));
  if (a.shape() == v1::LOAD_SHAPE_RAMP) total += or_default(a.ramp_duration(), absl::Seconds(30));
  return total;
}

// --- replica loss ---

// Rates, the removal URL, the loss part's durations (the model's endpoints are the worker's
// to count).
absl::Status CheckReplicaLoss(const v1::TestSpec& spec) {
  const v1::ReplicaLossStrategy& r = spec.replica_loss();
  if (!(r.min_qps() > 0)) return InvalidField("spec.replica_loss.min_qps", "must be > 0");
  if (!(r.max_qps() > r.min_qps())) {
    return InvalidField("spec.replica_loss.max_qps", "must be > min_qps");
  }
  if (r.remove_url().empty()) {
    return InvalidField("spec.replica_loss.remove_url",
                        "is required: the URL the worker POSTs to take a replica away");
  }
  RETURN_IF_ERROR(
      ValidateDuration(r.after_loss(), "spec.replica_loss.after_loss", DurationRule::kNonNegative));
  RETURN_IF_ERROR(ValidateDuration(r.max_recovery(), "spec.replica_loss.max_recovery",
                                   DurationRule::kNonNegative));
  if (r.removed_endpoint().size() > kMaxEndpointBytes) {
    return InvalidField("spec.replica_loss.removed_endpoint",
                        absl::StrCat("must be at most ", kMaxEndpointBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ReplicaLossBounds(const v1::TestSpec& spec) {
  const v1::ReplicaLossStrategy& s = spec.replica_loss();
  return ValidateBounds({{s.min_qps(), "spec.replica_loss.min_qps"},
                         {s.max_qps(), "spec.replica_loss.max_qps"},
                         {s.tolerance_qps(), "spec.replica_loss.tolerance_qps"}},
                        {{s.max_trials(), "spec.replica_loss.max_trials"}}, {});
}

std::vector<StrategyTarget> ReplicaLossTargets(const v1::TestSpec& spec) {
  const v1::ReplicaLossStrategy& loss = spec.replica_loss();
  std::vector<StrategyTarget> targets = {{loss.remove_url(), "spec.replica_loss.remove_url"}};
  if (!loss.restore_url().empty()) {
    targets.push_back({loss.restore_url(), "spec.replica_loss.restore_url"});
  }
  return targets;
}

double ReplicaLossHighestRate(const v1::TestSpec& spec) { return spec.replica_loss().max_qps(); }

int64_t ReplicaLossTrials(const v1::ReplicaLossStrategy& r) {
  return r.max_trials() > 0 ? r.max_trials() : kMaxReplicaLossTrials;
}

int64_t ReplicaLossSteps(const v1::TestSpec& spec) {  // a step before the loss and one after
  return 2 * ReplicaLossTrials(spec.replica_loss());
}

// Per trial: a step over the whole fleet, then the loss part (as is, after_loss long).
absl::Duration ReplicaLossDuration(const v1::TestSpec& spec) {
  const v1::ReplicaLossStrategy& r = spec.replica_loss();
  const absl::Duration after =
      r.has_after_loss() ? FromProtoDuration(r.after_loss()) : kDefaultReplicaLossAfterLoss;
  return ReplicaLossTrials(r) * (StepLength(spec) + after);
}

// --- version transition ---

// Rates, the restart URLs, durations (one restart URL per endpoint is the worker's to check).
absl::Status CheckVersionTransition(const v1::TestSpec& spec) {
  const v1::VersionTransitionStrategy& v = spec.version_transition();
  if (!(v.min_qps() > 0)) return InvalidField("spec.version_transition.min_qps", "must be > 0");
  if (!(v.max_qps() > v.min_qps())) {
    return InvalidField("spec.version_transition.max_qps", "must be > min_qps");
  }
  if (v.restart_urls().empty()) {
    return InvalidField("spec.version_transition.restart_urls",
                        "is required: one URL per endpoint of the model, POSTed to switch that "
                        "replica to the new version");
  }
  if (v.restart_urls_size() > kMaxEndpoints) {
    return InvalidField(
        "spec.version_transition.restart_urls",
        absl::StrCat("must list at most ", kMaxEndpoints, " URLs (one per endpoint)"));
  }
  for (int i = 0; i < v.restart_urls_size(); ++i) {
    if (v.restart_urls(i).empty() || v.restart_urls(i).size() > kMaxEndpointBytes) {
      return InvalidField(absl::StrCat("spec.version_transition.restart_urls[", i, "]"),
                          absl::StrCat("must be 1 to ", kMaxEndpointBytes, " bytes"));
    }
  }
  RETURN_IF_ERROR(ValidateDuration(v.per_replica(), "spec.version_transition.per_replica",
                                   DurationRule::kNonNegative));
  return ValidateDuration(v.max_recovery(), "spec.version_transition.max_recovery",
                          DurationRule::kNonNegative);
}

absl::Status VersionTransitionBounds(const v1::TestSpec& spec) {
  const v1::VersionTransitionStrategy& s = spec.version_transition();
  return ValidateBounds({{s.min_qps(), "spec.version_transition.min_qps"},
                         {s.max_qps(), "spec.version_transition.max_qps"},
                         {s.tolerance_qps(), "spec.version_transition.tolerance_qps"}},
                        {{s.max_trials(), "spec.version_transition.max_trials"}}, {});
}

std::vector<StrategyTarget> VersionTransitionTargets(const v1::TestSpec& spec) {
  std::vector<StrategyTarget> targets;
  const v1::VersionTransitionStrategy& v = spec.version_transition();
  for (int i = 0; i < v.restart_urls_size(); ++i) {
    targets.push_back(
        {v.restart_urls(i), absl::StrCat("spec.version_transition.restart_urls[", i, "]")});
  }
  return targets;
}

double VersionTransitionHighestRate(const v1::TestSpec& spec) {
  return spec.version_transition().max_qps();
}

int64_t VersionTransitionTrials(const v1::VersionTransitionStrategy& v) {
  return v.max_trials() > 0 ? v.max_trials() : kMaxVersionTransitionTrials;
}

int64_t VersionTransitionSteps(const v1::TestSpec& spec) {  // a warm step, one per restart
  const v1::VersionTransitionStrategy& v = spec.version_transition();
  return (1 + v.restart_urls_size()) * VersionTransitionTrials(v);
}

// Per trial: a step over the warm fleet, then one part (as is) per restarted replica.
absl::Duration VersionTransitionDuration(const v1::TestSpec& spec) {
  const v1::VersionTransitionStrategy& v = spec.version_transition();
  const absl::Duration part = v.has_per_replica() ? FromProtoDuration(v.per_replica())
                                                  : kDefaultVersionTransitionPerReplica;
  return VersionTransitionTrials(v) * (StepLength(spec) + v.restart_urls_size() * part);
}

// --- the table ---

constexpr StrategyRules kRules[] = {
    {v1::TestSpec::kSweep, CheckSweep, SweepBounds, nullptr, SweepHighestRate, SweepSteps, nullptr,
     false},
    {v1::TestSpec::kBinarySearch, nullptr, BinarySearchBounds, nullptr, BinarySearchHighestRate,
     BinarySearchSteps, nullptr, true},
    {v1::TestSpec::kAdaptive, nullptr, AdaptiveBounds, nullptr, AdaptiveHighestRate, AdaptiveSteps,
     nullptr, true},
    {v1::TestSpec::kLadder, nullptr, LadderBounds, nullptr, LadderHighestRate, LadderSteps, nullptr,
     true},
    {v1::TestSpec::kDirectController, nullptr, DirectControllerBounds, DirectControllerTargets,
     DirectControllerHighestRate, DirectControllerSteps, nullptr, false},
    {v1::TestSpec::kStability, nullptr, StabilityBounds, nullptr, StabilityHighestRate,
     StabilitySteps, nullptr, false},
    {v1::TestSpec::kAutoscale, nullptr, AutoscaleBounds, nullptr, AutoscaleHighestRate,
     AutoscaleSteps, AutoscaleDuration, false},
    {v1::TestSpec::kReplicaLoss, CheckReplicaLoss, ReplicaLossBounds, ReplicaLossTargets,
     ReplicaLossHighestRate, ReplicaLossSteps, ReplicaLossDuration, false},
    {v1::TestSpec::kVersionTransition, CheckVersionTransition, VersionTransitionBounds,
     VersionTransitionTargets, VersionTransitionHighestRate, VersionTransitionSteps,
     VersionTransitionDuration, false},
};

}  // namespace

const StrategyRules* StrategyRulesFor(v1::TestSpec::StrategyCase strategy) {
  for (const StrategyRules& rules : kRules) {
    if (rules.strategy == strategy) return &rules;
  }
  return nullptr;
}

}  // namespace vanguard
