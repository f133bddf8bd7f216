// Seeded random model servers nobody tuned a search to: a test bed for capacity searches.
// Each seed draws a batch-serving model (SlotScheduler) from wide, documented ranges, an SLO
// that binds on a latency percentile or on errors, the model's long-run capacity over the
// sustained horizon (the discrete-event ground truth, warm and in steady state), and a range
// a user might type around it.
//
//   ASSIGN_OR_RETURN(GeneratedModel m, GenerateModel(/*seed=*/1234));
//   m.profile;      // runs in SlotScheduler / the simulated predictor
//   m.truth_rps;    // the highest Poisson rate that holds the SLO over options.horizon
//                   // (judged on options.replications horizons pooled)
//   m.min_qps, m.max_qps;   // min in [truth/200, truth/2], max in [1.2, 20] x truth
//
// The ranges (docs/strategies.md, "The model generator"):
//   slots 1-64 (log-uniform); batching on for half the models: max batch 2-64, queue delay
//   0-20 ms, per-item share of a full batch's cost 2-50%; a nominal batch cost 0.5-500 ms,
//   set from a saturation drawn log-uniform in [2.5, 25000] req/s; jitter sigma 0-0.5;
//   warmup 0-180 s at 1.5-6x for 70% of models; stalls of every executor for 60%: 0.02-1 per
//   second of 20-500 ms, at most 8% of the time stalled; content-dependent cost (lognormal,
//   log-sd 0.2-0.8, median 1) for 40%; served errors 0-0.5% for 20%;
//   the SLO binds on p99 (55%), p90 (10%), p50 (15%) at 1.5-6x the latency at 5% of
//   saturation, or on errors (20%): a queue limit sheds load past 1-4 full batches per slot
//   and the latency limit is generous. A draw whose truth falls outside [2, 20000] req/s is
//   drawn again (deterministically from the seed).
// Not covered: generative (token) models, SLOs on achieved rate, co-location.
//
// Pure functions of their arguments; any thread. Cost: the ground truth's bisection and its
// elasticity, about 14 evaluations of replications * (settle + horizon) * rate requests.
#ifndef VANGUARD_TESTS_SIMULATOR_MODEL_GENERATOR_H_
#define VANGUARD_TESTS_SIMULATOR_MODEL_GENERATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/simulator/profile.h"

namespace vanguard::sim {

struct GeneratorOptions {
  // The horizon the truth holds over, and the settling before it.
  absl::Duration horizon = absl::Minutes(5);
  absl::Duration settle = absl::Seconds(30);
  // Independent runs of the horizon whose requests are pooled for the truth: the SLO must
  // hold on the share of requests over the limit a horizon has on average, not in one draw
  // of it (one draw of a model with rare stalls lands 10-20% either side, and by more where
  // the share over the limit hardly grows with the rate).
  int replications = 4;
  // And at least this many judged requests at each rate the truth evaluates (more horizons
  // at low rates; GroundTruthOptions::min_judged_requests): the yardstick's own noise stays
  // well below the errors it judges at every capacity, not only at high ones.
  uint64_t min_judged_requests = 500000;
  double min_capacity_rps = 2;
  double max_capacity_rps = 20000;
};

struct GeneratedModel {
  uint64_t seed = 0;
  Profile profile;          // named "gen-<seed>"
  std::string description;  // one line: what was drawn
  std::string binding;      // "p99", "p90", "p50" or "errors"
  double saturation_rps = 0;
  double truth_rps = 0;  // the long-run capacity (warm, steady, over options.horizon)
  double min_qps = 0;    // a user-style range around the truth
  double max_qps = 0;
  // How well the SLO defines the truth: TruthElasticity below.
  double elasticity = 0;
};

// The elasticity of the SLO's binding share over the limit (LimitShareRatio) with the rate
// around the truth: log(ratio at 1.25 x truth / ratio at 0.8 x truth) / log(1.5625), each
// on options.replications horizons pooled; infinity when nothing is over the limit at 0.8 x.
// A queue near saturation is steep (10 and more); a share set by rate-independent episodes
// (stalls, served errors) is flat: below kFlatTailElasticity the capacity is ill-conditioned,
// as a horizon's own noise in the share moves the crossing by a large factor. INVALID_ARGUMENT
// as GenerateModel's options. Cost: two evaluations of the truth's bisection.
inline constexpr double kFlatTailElasticity = 1;
absl::StatusOr<double> TruthElasticity(const Profile& profile, double truth_rps,
                                       const GeneratorOptions& options = {});

// INVALID_ARGUMENT for options out of range; INTERNAL if no draw in 50 landed in the
// capacity range (not expected).
absl::StatusOr<GeneratedModel> GenerateModel(uint64_t seed, const GeneratorOptions& options = {});

// Computes `model`'s saturation, truth and elasticity again with `options` (the drawn server,
// SLO and range unchanged): models written under other options judged on this yardstick.
// Errors as GenerateModel's.
absl::Status RecomputeTruth(GeneratedModel& model, const GeneratorOptions& options = {});

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_MODEL_GENERATOR_H_
