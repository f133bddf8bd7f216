// The true capacity of a simulated predictor profile, by discrete-event simulation of the
// very scheduler the server runs (SlotScheduler / TokenScheduler), driven in virtual time by
// open-loop arrivals. Deterministic given the profile's seed and options.seed.
//
//   ASSIGN_OR_RETURN(Profile profile, LoadProfile("vision"));
//   ASSIGN_OR_RETURN(GroundTruth truth, ComputeGroundTruth(profile, profile.slo));
//   truth.max_sustainable_rps;   // highest offered rate that still meets the SLO
//   truth.saturation_rps;        // what the model serves flat out
//
// "Meets the SLO" at a rate: of the requests scheduled in the judged window, (rejected +
// failed) / scheduled <= slo.max_error_rate, and the slo.latency_percentile of the latency
// (arrival to response; for streams to the last token) of those that succeeded is
// <= slo.latency_limit (and, when set, the same percentile of time to first token is
// <= slo.ttft_limit). Requests still in service when arrivals stop are run to completion,
// so an overloaded queue shows up as latency. The model's warmup is over before arrivals
// begin (steady-state capacity); the first `settle` seconds of arrivals are not judged.
//
// Pure functions; any thread (each call owns its schedulers). Cost: about one scheduler
// event per request, ~10 evaluations of (settle + measure) * rate requests each.
#ifndef VANGUARD_TESTS_SIMULATOR_GROUND_TRUTH_H_
#define VANGUARD_TESTS_SIMULATOR_GROUND_TRUTH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/simulator/profile.h"

namespace vanguard::sim {

enum class ArrivalProcess { kPoisson, kConstant };

struct GroundTruthOptions {
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  // Arrivals in the first `settle` are served but not judged (queues settle at a new rate).
  absl::Duration settle = absl::Seconds(5);
  // Arrivals in the following `measure` are judged.
  absl::Duration measure = absl::Seconds(30);
  // Seed of the arrival process (the model's own randomness uses the profile's seed).
  uint64_t seed = 1;
  // Bisection stops when (high - low) / high < this.
  double relative_tolerance = 0.005;
  // Independent runs per evaluated rate (arrival seeds seed, seed+1, ...; model seeds the
  // profile's + i), judged on their pooled requests: more replications, less seed-to-seed
  // spread of the answer, proportionally more CPU.
  int replications = 4;
  // More replications at a rate whose `replications` horizons would judge fewer arrivals
  // than this (at most 1000 in all): a low rate's percentile is then read from as many
  // requests as a high rate's, not from a few thousand. 0: exactly `replications`.
  uint64_t min_judged_requests = 0;
  // Fixed latency outside the model added to every request (network, HTTP, client), for
  // comparing with what a client measures; 0 = the model's own latency.
  absl::Duration added_latency = absl::ZeroDuration();
};

struct RateEvaluation {
  double offered_rps = 0;
  uint64_t scheduled = 0;  // judged arrivals
  uint64_t succeeded = 0;
  uint64_t rejected = 0;
  uint64_t failed = 0;
  double error_rate = 0;                 // (rejected + failed) / scheduled
  double achieved_rps = 0;               // succeeded / measure
  absl::Duration latency_at_percentile;  // of succeeded requests; infinite if none
  absl::Duration ttft_at_percentile;     // generative only; zero otherwise
  // Succeeded requests whose latency exceeds slo.latency_limit.
  uint64_t over_limit = 0;
  bool meets_slo = false;
};

// How far the evaluation is from its SLO's limits, as the largest of the share of succeeded
// requests over the latency limit divided by the share the percentile allows, and the error
// rate divided by slo.max_error_rate: > 1 fails. (TTFT is not counted.)
double LimitShareRatio(const RateEvaluation& eval, const Slo& slo);

// INVALID_ARGUMENT when rate <= 0 or not finite, settle < 0, measure <= 0, or the SLO's
// percentile is outside (0, 100].
absl::StatusOr<RateEvaluation> EvaluateRate(const Profile& profile, const Slo& slo, double rate,
                                            const GroundTruthOptions& options = {});

struct GroundTruth {
  double saturation_rps = 0;
  // The highest rate found to meet the SLO (within relative_tolerance); 0 if even a rate of
  // saturation * tolerance fails.
  double max_sustainable_rps = 0;
  RateEvaluation at_max;  // evaluation at max_sustainable_rps
  int evaluations = 0;
};

// Bisection on the offered rate between 0 and a failing rate above saturation.
absl::StatusOr<GroundTruth> ComputeGroundTruth(const Profile& profile, const Slo& slo,
                                               const GroundTruthOptions& options = {});

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_GROUND_TRUTH_H_
