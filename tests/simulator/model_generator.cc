// Seeded random model servers and their long-run truth; see model_generator.h.
#include "tests/simulator/model_generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/simulator/ground_truth.h"

namespace vanguard::sim {
namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL) {}
  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  double LogUniform(double lo, double hi) { return std::exp(Uniform(std::log(lo), std::log(hi))); }
  int LogInt(int lo, int hi) {
    return std::clamp(static_cast<int>(std::floor(LogUniform(lo, hi + 1.0))), lo, hi);
  }
  bool Chance(double p) { return Uniform(0, 1) < p; }
  uint64_t Bits() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

// The model's structure and perturbations: a nominal batch cost inside [0.5, 500] ms, else
// nullopt (the caller draws again).
std::optional<Profile> DrawServer(Draw& d, std::string* what) {
  Profile p;
  SlotScheduler::Config& b = p.batch;
  const double saturation = d.LogUniform(2.5, 25000);
  b.slots = d.LogInt(1, 64);
  const bool batching = d.Chance(0.5);
  b.max_batch = batching ? d.LogInt(2, 64) : 1;
  b.max_queue_delay = batching ? absl::Microseconds(d.Uniform(0, 20000)) : absl::ZeroDuration();
  const double item_share = batching ? d.Uniform(0.02, 0.5) : 0;
  // A full batch's cost at the drawn saturation (seconds), split into base and per item.
  const double full = b.slots * b.max_batch / saturation;
  const double base = full * (1 - item_share);
  if (base < 0.0005 || base > 0.5) return std::nullopt;
  b.service_time = absl::Nanoseconds(base * 1e9);
  b.per_item_time = absl::Nanoseconds(full * item_share / b.max_batch * 1e9);
  Perturbations& q = b.perturbations;
  q.jitter_sigma = d.Uniform(0, 0.5);
  if (d.Chance(0.7)) {
    q.warmup = absl::Seconds(d.Uniform(5, 180));
    q.warmup_factor = d.Uniform(1.5, 6);
  }
  if (d.Chance(0.6)) {
    q.stall_rate_per_s = d.LogUniform(0.02, 1);
    const double longest = std::min(0.5, 0.08 / q.stall_rate_per_s);
    q.stall_duration = absl::Milliseconds(d.LogUniform(20, std::max(20.0, longest * 1000)));
  }
  if (d.Chance(0.2)) q.error_rate = d.Uniform(0, 0.005);
  p.cost_sigma = d.Chance(0.4) ? d.Uniform(0.2, 0.8) : 0;
  q.seed = d.Bits() % (uint64_t{1} << 62);
  *what = absl::StrFormat(
      "%d slot(s), %s, batch %.2f ms + %.3f ms/item, jitter %.2f, warmup %.0f s at %.1fx, "
      "stalls %.2f/s of %.0f ms, cost sigma %.2f, errors %.2f%%",
      b.slots,
      batching ? absl::StrFormat("batches of <= %d within %.1f ms", b.max_batch,
                                 absl::ToDoubleMilliseconds(b.max_queue_delay))
               : std::string("no batching"),
      base * 1e3, absl::ToDoubleMilliseconds(b.per_item_time), q.jitter_sigma,
      absl::ToDoubleSeconds(q.warmup), q.warmup_factor, q.stall_rate_per_s,
      absl::ToDoubleMilliseconds(q.stall_duration), p.cost_sigma, q.error_rate * 100);
  return p;
}

// The SLO: a latency percentile at a multiple of what the warm model shows at 5% of its
// saturation, or errors from shedding with a generous latency limit.
absl::Status DrawSlo(Draw& d, Profile* p, std::string* binding) {
  const double kind = d.Uniform(0, 1);
  Slo& slo = p->slo;
  slo.max_error_rate = 0.01;
  slo.latency_percentile = kind < 0.55 ? 99 : kind < 0.65 ? 90 : kind < 0.8 ? 50 : 99;
  *binding = kind < 0.8 ? absl::StrCat("p", slo.latency_percentile) : "errors";
  if (*binding == "errors") {
    p->batch.max_queue =
        static_cast<int64_t>(p->batch.slots * p->batch.max_batch * d.Uniform(1, 4)) + 1;
  }
  if (absl::Status s = FinalizeProfile(*p); !s.ok()) return s;
  GroundTruthOptions quick;
  quick.settle = absl::Seconds(5);
  quick.measure = absl::Seconds(60);
  quick.seed = d.Bits() % 1000000;
  slo.latency_limit = absl::Hours(1);
  absl::StatusOr<RateEvaluation> low = EvaluateRate(*p, slo, SaturationRps(*p) * 0.05, quick);
  if (!low.ok()) return low.status();
  const absl::Duration reference = low->latency_at_percentile;
  const double factor = *binding == "errors" ? d.Uniform(20, 50) : d.LogUniform(1.5, 6);
  slo.latency_limit = std::max(absl::Microseconds(100), reference * factor);
  return absl::OkStatus();
}

GroundTruthOptions LongRun(const GeneratorOptions& options, uint64_t seed) {
  GroundTruthOptions long_run;
  long_run.settle = options.settle;
  long_run.measure = options.horizon;
  long_run.replications = options.replications;
  long_run.min_judged_requests = options.min_judged_requests;
  long_run.seed = seed;
  return long_run;
}

absl::Status CheckOptions(const GeneratorOptions& options) {
  if (options.horizon <= absl::ZeroDuration() || options.horizon > absl::Hours(4) ||
      options.settle < absl::ZeroDuration() || options.replications < 1 ||
      !(options.min_capacity_rps > 0) || !(options.max_capacity_rps > options.min_capacity_rps)) {
    return absl::InvalidArgumentError(
        "generator options: horizon in (0, 4h], settle >= 0, replications >= 1, "
        "0 < min_capacity_rps < max_capacity_rps");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> TruthElasticity(const Profile& profile, double truth_rps,
                                       const GeneratorOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (!(truth_rps > 0)) return absl::InvalidArgumentError("truth_rps must be > 0");
  constexpr double kBelow = 0.8, kAbove = 1.25;
  const GroundTruthOptions long_run =
      LongRun(options, profile.batch.perturbations.seed % 1000000 + 17);
  absl::StatusOr<RateEvaluation> below =
      EvaluateRate(profile, profile.slo, truth_rps * kBelow, long_run);
  if (!below.ok()) return below.status();
  absl::StatusOr<RateEvaluation> above =
      EvaluateRate(profile, profile.slo, truth_rps * kAbove, long_run);
  if (!above.ok()) return above.status();
  const double low = LimitShareRatio(*below, profile.slo);
  const double high = LimitShareRatio(*above, profile.slo);
  if (low <= 0) return std::numeric_limits<double>::infinity();
  return std::log(std::max(high, 1e-9) / low) / std::log(kAbove / kBelow);
}

absl::StatusOr<GeneratedModel> GenerateModel(uint64_t seed, const GeneratorOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  Draw d(seed);
  for (int attempt = 0; attempt < 50; ++attempt) {
    GeneratedModel m;
    m.seed = seed;
    std::optional<Profile> profile = DrawServer(d, &m.description);
    if (!profile) continue;
    m.profile = *std::move(profile);
    m.profile.name = absl::StrCat("gen-", seed);
    if (absl::Status s = DrawSlo(d, &m.profile, &m.binding); !s.ok()) return s;
    m.profile.description = m.description;
    const GroundTruthOptions long_run = LongRun(options, d.Bits() % 1000000);
    absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(m.profile, m.profile.slo, long_run);
    if (!truth.ok()) return truth.status();
    m.saturation_rps = truth->saturation_rps;
    m.truth_rps = truth->max_sustainable_rps;
    if (m.truth_rps < options.min_capacity_rps || m.truth_rps > options.max_capacity_rps) continue;
    m.min_qps = m.truth_rps * d.LogUniform(1.0 / 200, 0.5);
    m.max_qps = m.truth_rps * d.LogUniform(1.2, 20);
    absl::StatusOr<double> elasticity = TruthElasticity(m.profile, m.truth_rps, options);
    if (!elasticity.ok()) return elasticity.status();
    m.elasticity = *elasticity;
    absl::StrAppendFormat(&m.description, "; SLO %s <= %.2f ms; truth %.2f req/s", m.binding,
                          absl::ToDoubleMilliseconds(m.profile.slo.latency_limit), m.truth_rps);
    return m;
  }
  return absl::InternalError(absl::StrCat("seed ", seed, ": no draw landed in the capacity range"));
}

absl::Status RecomputeTruth(GeneratedModel& model, const GeneratorOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  const GroundTruthOptions long_run = LongRun(options, model.seed % 1000000);
  absl::StatusOr<GroundTruth> truth =
      ComputeGroundTruth(model.profile, model.profile.slo, long_run);
  if (!truth.ok()) return truth.status();
  model.saturation_rps = truth->saturation_rps;
  model.truth_rps = truth->max_sustainable_rps;
  absl::StatusOr<double> elasticity = TruthElasticity(model.profile, model.truth_rps, options);
  if (!elasticity.ok()) return elasticity.status();
  model.elasticity = *elasticity;
  return absl::OkStatus();
}

}  // namespace vanguard::sim
