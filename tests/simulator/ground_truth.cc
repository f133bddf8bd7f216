// Discrete-event ground truth for simulated predictor profiles; see ground_truth.h.
#include "tests/simulator/ground_truth.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vanguard::sim {
namespace {

// Open-loop arrival times: the same uniform stream at every rate, so evaluations at nearby
// rates see the same pattern, only scaled (common random numbers make bisection stable).
class ArrivalClock {
 public:
  ArrivalClock(ArrivalProcess process, double rate, uint64_t seed, absl::Duration start)
      : process_(process), rate_(rate), rng_(seed), next_(start) {}
  absl::Duration Next() {
    const absl::Duration now = next_;
    const double gap =
        process_ == ArrivalProcess::kConstant ? 1.0 / rate_ : exponential_(rng_) / rate_;
    next_ += absl::Nanoseconds(gap * 1e9);
    return now;
  }

 private:
  ArrivalProcess process_;
  double rate_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exponential_{1.0};
  absl::Duration next_;
};

absl::Duration Percentile(std::vector<int64_t>& nanos, double percentile) {
  if (nanos.empty()) return absl::InfiniteDuration();
  size_t rank = static_cast<size_t>(std::ceil(percentile / 100.0 * nanos.size()));
  rank = std::clamp<size_t>(rank, 1, nanos.size()) - 1;
  std::nth_element(nanos.begin(), nanos.begin() + rank, nanos.end());
  return absl::Nanoseconds(nanos[rank]);
}

struct Window {
  absl::Duration judged_from;
  absl::Duration arrivals_end;
  bool Judged(absl::Duration arrival) const {
    return arrival >= judged_from && arrival < arrivals_end;
  }
};

// What one or more replications at a rate observed, before judging.
struct Observations {
  RateEvaluation counts;  // scheduled, rejected, failed
  std::vector<int64_t> latencies;
  std::vector<int64_t> ttfts;
};

// The replications EvaluateRate runs at `rate`: options.replications, or more when those
// would judge fewer than options.min_judged_requests arrivals (at most 1000).
int ReplicationsAt(double rate, const GroundTruthOptions& options) {
  const double per_horizon = rate * absl::ToDoubleSeconds(options.measure);
  const double wanted = std::ceil(static_cast<double>(options.min_judged_requests) / per_horizon);
  return static_cast<int>(std::clamp(wanted, static_cast<double>(options.replications), 1000.0));
}

void Judge(const Slo& slo, const GroundTruthOptions& options, int replications,
           std::vector<int64_t>& latencies, std::vector<int64_t>* ttfts, RateEvaluation* result) {
  result->succeeded = latencies.size();
  result->error_rate =
      result->scheduled == 0
          ? 1.0
          : static_cast<double>(result->rejected + result->failed) / result->scheduled;
  result->achieved_rps =
      result->succeeded / absl::ToDoubleSeconds(options.measure) / std::max(1, replications);
  result->latency_at_percentile = Percentile(latencies, slo.latency_percentile);
  const int64_t limit_ns = absl::ToInt64Nanoseconds(slo.latency_limit);
  result->over_limit = static_cast<uint64_t>(
      std::count_if(latencies.begin(), latencies.end(), [&](int64_t ns) { return ns > limit_ns; }));
  bool ttft_ok = true;
  if (ttfts != nullptr) {
    result->ttft_at_percentile = Percentile(*ttfts, slo.latency_percentile);
    ttft_ok = result->ttft_at_percentile <= slo.ttft_limit;
  }
  result->meets_slo = result->scheduled > 0 && result->error_rate <= slo.max_error_rate &&
                      result->latency_at_percentile <= slo.latency_limit && ttft_ok;
}

void ObserveBatch(const Profile& profile, double rate, const GroundTruthOptions& options,
                  uint64_t arrival_seed, Observations* observations) {
  SlotScheduler scheduler(profile.batch);
  const absl::Duration start = profile.batch.perturbations.warmup;
  const Window window{start + options.settle, start + options.settle + options.measure};
  ArrivalClock clock(options.arrival, rate, arrival_seed, start);
  std::mt19937_64 costs(arrival_seed * 104729 + 3);
  RateEvaluation& result = observations->counts;
  std::vector<int64_t>& latencies = observations->latencies;
  std::vector<SlotScheduler::Completion> done;
  auto collect = [&] {
    for (const SlotScheduler::Completion& c : done) {
      if (!window.Judged(c.arrival)) continue;
      if (c.failed) {
        ++result.failed;
      } else {
        latencies.push_back(absl::ToInt64Nanoseconds(c.finish - c.arrival + options.added_latency));
      }
    }
    done.clear();
  };
  for (uint64_t id = 0;; ++id) {
    const absl::Duration arrival = clock.Next();
    if (arrival >= window.arrivals_end) break;
    const SlotScheduler::Admission admission =
        scheduler.Arrive(id, arrival, &done, DrawCost(profile, costs));
    if (window.Judged(arrival)) {
      ++result.scheduled;
      if (admission == SlotScheduler::Admission::kRejected) ++result.rejected;
    }
    collect();
  }
  while (std::optional<absl::Duration> next = scheduler.NextEventTime()) {
    scheduler.AdvanceTo(*next, &done);
    collect();
  }
}

void ObserveGenerative(const Profile& profile, double rate, const GroundTruthOptions& options,
                       uint64_t arrival_seed, Observations* observations) {
  TokenScheduler scheduler(profile.generative);
  const absl::Duration start = profile.generative.perturbations.warmup;
  const Window window{start + options.settle, start + options.settle + options.measure};
  ArrivalClock clock(options.arrival, rate, arrival_seed, start);
  RateEvaluation& result = observations->counts;
  std::vector<int64_t>& latencies = observations->latencies;
  std::vector<int64_t>& ttfts = observations->ttfts;
  std::vector<TokenScheduler::TokenEvent> events;
  auto collect = [&] {
    for (const TokenScheduler::TokenEvent& e : events) {
      if (!window.Judged(e.arrival)) continue;
      if (e.failed) {
        ++result.failed;
        continue;
      }
      const absl::Duration latency = e.time - e.arrival + options.added_latency;
      if (e.token_index == 1) ttfts.push_back(absl::ToInt64Nanoseconds(latency));
      if (e.last) latencies.push_back(absl::ToInt64Nanoseconds(latency));
    }
    events.clear();
  };
  for (uint64_t id = 0;; ++id) {
    const absl::Duration arrival = clock.Next();
    if (arrival >= window.arrivals_end) break;
    const TokenScheduler::Admission admission =
        scheduler.Arrive(id, arrival, /*max_tokens=*/0, &events);
    if (window.Judged(arrival)) {
      ++result.scheduled;
      if (admission == TokenScheduler::Admission::kRejected) ++result.rejected;
    }
    collect();
  }
  while (std::optional<absl::Duration> next = scheduler.NextEventTime()) {
    scheduler.AdvanceTo(*next, &events);
    collect();
  }
}

}  // namespace

absl::StatusOr<RateEvaluation> EvaluateRate(const Profile& profile, const Slo& slo, double rate,
                                            const GroundTruthOptions& options) {
  if (!(rate > 0) || !std::isfinite(rate) || rate > 1e8) {
    return absl::InvalidArgumentError(absl::StrCat("rate must be in (0, 1e8], got ", rate));
  }
  if (options.settle < absl::ZeroDuration() || options.measure <= absl::ZeroDuration() ||
      options.measure == absl::InfiniteDuration() || options.settle == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("settle must be >= 0 and measure > 0, both finite");
  }
  if (!(slo.latency_percentile > 0 && slo.latency_percentile <= 100)) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo.latency_percentile must be in (0, 100], got ", slo.latency_percentile));
  }
  if (options.added_latency < absl::ZeroDuration() || options.added_latency > absl::Hours(1)) {
    return absl::InvalidArgumentError("added_latency must be in [0, 1h]");
  }
  if (options.replications < 1 || options.replications > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("replications must be in [1, 1000], got ", options.replications));
  }
  Profile checked = profile;
  if (absl::Status status = FinalizeProfile(checked); !status.ok()) return status;
  const bool generative = checked.mode == ProfileMode::kGenerative;
  const int replications = ReplicationsAt(rate, options);
  Observations observations;
  observations.latencies.reserve(
      static_cast<size_t>(rate * absl::ToDoubleSeconds(options.measure) * replications * 1.1));
  for (int i = 0; i < replications; ++i) {
    Profile replica = checked;
    replica.batch.perturbations.seed += i;
    if (absl::Status status = FinalizeProfile(replica); !status.ok()) return status;
    if (generative) {
      ObserveGenerative(replica, rate, options, options.seed + i, &observations);
    } else {
      ObserveBatch(replica, rate, options, options.seed + i, &observations);
    }
  }
  RateEvaluation result = observations.counts;
  result.offered_rps = rate;
  Judge(slo, options, replications, observations.latencies,
        generative ? &observations.ttfts : nullptr, &result);
  return result;
}

absl::StatusOr<GroundTruth> ComputeGroundTruth(const Profile& profile, const Slo& slo,
                                               const GroundTruthOptions& options) {
  if (!(options.relative_tolerance > 0 && options.relative_tolerance < 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("relative_tolerance must be in (0, 0.5), got ", options.relative_tolerance));
  }
  Profile checked = profile;
  if (absl::Status status = FinalizeProfile(checked); !status.ok()) return status;
  GroundTruth truth;
  truth.saturation_rps = SaturationRps(checked);
  double low = 0;
  double high = truth.saturation_rps * 1.25;
  RateEvaluation at_low;
  // A generous latency limit can hold a little above saturation for a finite window; find a
  // rate that fails first.
  for (int i = 0;; ++i) {
    absl::StatusOr<RateEvaluation> eval = EvaluateRate(checked, slo, high, options);
    if (!eval.ok()) return eval.status();
    ++truth.evaluations;
    if (!eval->meets_slo) break;
    low = high;
    at_low = *eval;
    if (i == 4) {
      truth.max_sustainable_rps = low;
      truth.at_max = at_low;
      return truth;
    }
    high *= 2;
  }
  while (high - low > options.relative_tolerance * high) {
    const double mid = (low + high) / 2;
    absl::StatusOr<RateEvaluation> eval = EvaluateRate(checked, slo, mid, options);
    if (!eval.ok()) return eval.status();
    ++truth.evaluations;
    if (eval->meets_slo) {
      low = mid;
      at_low = *eval;
    } else {
      high = mid;
    }
  }
  truth.max_sustainable_rps = low;
  truth.at_max = at_low;
  return truth;
}

double LimitShareRatio(const RateEvaluation& eval, const Slo& slo) {
  const double allowed = 1 - slo.latency_percentile / 100;
  const double latency = eval.succeeded == 0 ? 0
                         : allowed > 0
                             ? static_cast<double>(eval.over_limit) / eval.succeeded / allowed
                             : (eval.over_limit > 0 ? 1e9 : 0);
  const double errors = slo.max_error_rate > 0 ? eval.error_rate / slo.max_error_rate
                                               : (eval.error_rate > 0 ? 1e9 : 0);
  return std::max(latency, errors);
}

}  // namespace vanguard::sim
