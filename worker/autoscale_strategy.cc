// Autoscaler validation over a load shape; see autoscale_strategy.h.
#include "worker/autoscale_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "worker/proto_time.h"
#include "worker/trace_shape.h"

namespace vanguard::worker {
namespace {

constexpr double kDefaultBaseS = 10, kDefaultPeakS = 30, kDefaultAfterS = 10;
constexpr double kDefaultRampS = 30, kDefaultPeriodS = 120;
constexpr int kDefaultSegments = 12;

double SecondsOr(const google::protobuf::Duration& d, double fallback) {
  const double s = absl::ToDoubleSeconds(FromProtoDuration(d));
  return s == 0 ? fallback : s;
}

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("autoscale.", field, " ", rule));
}

// The phases of the shape `config` names, defaults filled in; phases of no length dropped.
std::vector<AutoscaleStrategy::Phase> PlanPhases(const vanguard::v1::AutoscaleStrategy& c) {
  const double base = c.base_qps(), peak = c.peak_qps();
  std::vector<AutoscaleStrategy::Phase> phases;
  if (c.shape() == vanguard::v1::LOAD_SHAPE_DIURNAL) {
    const int n = c.segments() > 0 ? c.segments() : kDefaultSegments;
    const double period = SecondsOr(c.period(), kDefaultPeriodS);
    // Night (base) at the start, midday (peak) half way: a raised cosine.
    auto rate = [&](int i) { return base + (peak - base) * (1 - std::cos(2 * M_PI * i / n)) / 2; };
    for (int i = 0; i < n; ++i) phases.push_back({rate(i), rate(i + 1), period / n});
  } else {
    phases.push_back({base, base, SecondsOr(c.base_duration(), kDefaultBaseS)});
    if (c.shape() == vanguard::v1::LOAD_SHAPE_RAMP) {
      phases.push_back({base, peak, SecondsOr(c.ramp_duration(), kDefaultRampS)});
    }
    phases.push_back({peak, peak, SecondsOr(c.peak_duration(), kDefaultPeakS)});
    phases.push_back({base, base, SecondsOr(c.after_duration(), kDefaultAfterS)});
  }
  std::erase_if(phases, [](const AutoscaleStrategy::Phase& p) { return p.duration_s <= 0; });
  return phases;
}

bool Violated(const ShapeWindow& w, double p99_limit_ms, double max_error_rate) {
  if (w.scheduled > 0 && w.completed == 0) return true;
  if (p99_limit_ms > 0 && w.p99_ms > p99_limit_ms) return true;
  return max_error_rate > 0 && w.error_rate > max_error_rate;
}

const char* ShapeName(vanguard::v1::LoadShape shape) {
  switch (shape) {
    case vanguard::v1::LOAD_SHAPE_RAMP:
      return "ramp";
    case vanguard::v1::LOAD_SHAPE_DIURNAL:
      return "diurnal";
    case vanguard::v1::LOAD_SHAPE_TRACE:
      return "trace";
    default:
      return "spike";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<AutoscaleStrategy>> AutoscaleStrategy::Create(
    const vanguard::v1::AutoscaleStrategy& config, const StrategyContext& context) {
  if (!(config.base_qps() > 0) || !std::isfinite(config.base_qps())) {
    return Invalid("base_qps", "must be > 0");
  }
  if (!(config.peak_qps() >= config.base_qps()) || !std::isfinite(config.peak_qps())) {
    return Invalid("peak_qps", "must be >= base_qps");
  }
  if (!(config.replica_capacity_qps() > 0) || !std::isfinite(config.replica_capacity_qps())) {
    return Invalid("replica_capacity_qps", "must be > 0 (what one replica carries at the SLO)");
  }
  for (const auto& [d, field] : {std::pair{&config.base_duration(), "base_duration"},
                                 {&config.peak_duration(), "peak_duration"},
                                 {&config.after_duration(), "after_duration"},
                                 {&config.ramp_duration(), "ramp_duration"},
                                 {&config.period(), "period"}}) {
    if (FromProtoDuration(*d) < absl::ZeroDuration()) return Invalid(field, "must be >= 0");
  }
  if (config.segments() < 0 || config.segments() > kMaxSegments) {
    return Invalid("segments", absl::StrCat("must be from 0 to ", kMaxSegments));
  }
  std::vector<Phase> phases;
  if (config.shape() == vanguard::v1::LOAD_SHAPE_TRACE) {
    absl::StatusOr<std::vector<Phase>> traced = TracePhases(config);
    if (!traced.ok()) return traced.status();
    phases = *std::move(traced);
  } else if (config.trace_rates_size() > 0) {
    return Invalid("trace_rates", "is for LOAD_SHAPE_TRACE only");
  } else {
    phases = PlanPhases(config);
  }
  if (phases.empty()) return Invalid("shape", "has no phase of any length");
  return std::unique_ptr<AutoscaleStrategy>(
      new AutoscaleStrategy(config, context, std::move(phases)));
}

AutoscaleStrategy::AutoscaleStrategy(const vanguard::v1::AutoscaleStrategy& config,
                                     const StrategyContext& context, std::vector<Phase> phases)
    : config_(config), context_(context), phases_(std::move(phases)) {}

Decision AutoscaleStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (last && next_phase_ > 0) Collect(next_phase_ - 1, *last);
  if (next_phase_ >= static_cast<int>(phases_.size())) {
    done_ = Conclude();
    return *done_;
  }
  const Phase& phase = phases_[next_phase_++];
  RunStep step;
  step.rate_qps = phase.start_qps;
  step.as_is = true;
  step.duration_s = phase.duration_s;
  if (phase.end_qps != phase.start_qps) step.ramp_end_qps = phase.end_qps;
  return step;
}

std::optional<int> AutoscaleStrategy::StepsLeft() const {
  if (done_) return 0;
  return static_cast<int>(phases_.size()) - next_phase_;
}

void AutoscaleStrategy::Collect(int index, const StepOutcome& outcome) {
  const Phase& phase = phases_[index];
  if (!outcome.client_valid) ++invalid_phases_;
  double t = 0;
  for (const ShapeWindow& w : outcome.windows) {
    const double middle = std::min(t + w.seconds / 2, phase.duration_s);
    const double along = phase.duration_s > 0 ? middle / phase.duration_s : 0;
    t += w.seconds;
    windows_.push_back({w, phase.start_qps + (phase.end_qps - phase.start_qps) * along,
                        elapsed_s_ + (w.scraped_at_s >= 0 ? w.scraped_at_s : t)});
  }
  elapsed_s_ += t;
}

AutoscaleFindings AutoscaleStrategy::Analyze(const std::vector<PlannedWindow>& windows,
                                             double replica_capacity_qps, double p99_limit_ms,
                                             double max_error_rate) {
  AutoscaleFindings f;
  // The gauge's readings in the order they were taken.
  std::vector<std::pair<double, double>> readings;  // (time, replicas)
  for (const PlannedWindow& w : windows) {
    if (w.window.replicas >= 0) readings.emplace_back(w.reading_at_s, w.window.replicas);
  }
  std::stable_sort(readings.begin(), readings.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  f.replica_samples = static_cast<int>(readings.size());
  for (const auto& r : readings) f.peak_replicas = std::max(f.peak_replicas, r.second);
  // The replicas at `t`: the last reading at or before it, else the first.
  auto replicas_at = [&](double t) {
    auto after = std::upper_bound(readings.begin(), readings.end(), t,
                                  [](double v, const auto& r) { return v < r.first; });
    return after == readings.begin() ? after->second : std::prev(after)->second;
  };
  const size_t n = windows.size();
  std::vector<double> needed(n), start(n);
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    const ShapeWindow& w = windows[i].window;
    needed[i] = std::ceil(windows[i].planned_qps / replica_capacity_qps - 1e-9);
    start[i] = t;
    t += w.seconds;
    if (Violated(w, p99_limit_ms, max_error_rate)) f.violation_seconds += w.seconds;
    if (readings.empty()) continue;
    const double r = replicas_at(t);
    f.replica_seconds += r * w.seconds;
    f.overprovisioned_replica_seconds += std::max(0.0, r - needed[i]) * w.seconds;
    f.underprovisioned_replica_seconds += std::max(0.0, needed[i] - r) * w.seconds;
  }
  f.measured_seconds = t;
  f.reached = !readings.empty();
  if (!f.reached) return f;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && needed[i] <= needed[i - 1]) continue;  // not a rise
    if (replicas_at(start[i]) >= needed[i]) continue;   // already there
    auto met = std::find_if(readings.begin(), readings.end(), [&](const auto& r) {
      return r.first >= start[i] && r.second >= needed[i];
    });
    if (met == readings.end()) f.reached = false;
    const double at = met != readings.end() ? met->first : std::max(t, readings.back().first);
    f.scale_up_lag_s = std::max(f.scale_up_lag_s, at - start[i]);
  }
  return f;
}

Done AutoscaleStrategy::Conclude() const {
  Done done;
  const AutoscaleFindings f = Analyze(windows_, config_.replica_capacity_qps(), context_.slo_p99_ms,
                                      context_.slo_max_error_rate);
  done.autoscale = f;
  done.converged = invalid_phases_ == 0 && f.reached;
  done.summary = absl::StrFormat("%s %g -> %g qps over %.1f s: SLO broken for %.1f s",
                                 ShapeName(config_.shape()), config_.base_qps(), config_.peak_qps(),
                                 f.measured_seconds, f.violation_seconds);
  if (f.replica_samples == 0) {
    absl::StrAppend(&done.summary,
                    "; no replica gauge scraped (vanguard_sim_replicas, "
                    "kube_deployment_status_replicas_available or the model's metrics.replicas "
                    "label): lag and provisioning unknown");
  } else {
    absl::StrAppend(
        &done.summary,
        absl::StrFormat("; scale-up lag %s%.1f s; over-provisioned %.1f replica-s (%.4f "
                        "replica-h), under-provisioned %.1f replica-s; peak %g replicas",
                        f.reached ? "" : "at least ", f.scale_up_lag_s,
                        f.overprovisioned_replica_seconds, f.overprovisioned_replica_seconds / 3600,
                        f.underprovisioned_replica_seconds, f.peak_replicas));
  }
  if (invalid_phases_ > 0) {
    absl::StrAppend(&done.summary, "; the load generator could not hold its schedule in ",
                    invalid_phases_, " phase(s)");
  }
  return done;
}

}  // namespace vanguard::worker
