// What makes a simulated model's service time differ from its nominal cost: lognormal jitter,
// a warmup period right after start, co-location with a neighbour that steals capacity,
// latency spikes (stalls of every executor) arriving as a Poisson process, and random errors.
// Shared by the batch (SlotScheduler) and generative (TokenScheduler) models.
//
// Pure and deterministic given the seed: time is an input (virtual time since the model
// started), so the same sequence of calls yields the same answers in the server and in the
// discrete-event ground truth.
//
//   ServiceTimeModel model({.jitter_sigma = 0.1, .warmup_factor = 3, .warmup = absl::Seconds(10)});
//   absl::Duration work = model.Work(nominal, start);     // jittered, warmup, co-location
//   absl::Duration finish = model.FinishAfter(start, work);  // paused by stalls
//
// Not thread-safe; its scheduler's caller serialises calls.
#ifndef VANGUARD_TESTS_SIMULATOR_SERVICE_TIME_MODEL_H_
#define VANGUARD_TESTS_SIMULATOR_SERVICE_TIME_MODEL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace vanguard::sim {

struct Perturbations {
  // Service time is multiplied by exp(N(-sigma^2/2, sigma)): mean 1, so capacity is unchanged.
  double jitter_sigma = 0;
  // Service time at virtual time t is multiplied by 1 + (warmup_factor - 1) * (1 - t/warmup)
  // for t < warmup (JIT, cache loading): a linear decay to 1. Restart starts it over.
  double warmup_factor = 1;
  absl::Duration warmup = absl::ZeroDuration();
  // Stalls of every executor (GC, page faults, a noisy neighbour's burst): start times form a
  // Poisson process of this rate; each lasts stall_duration. Work makes no progress in a stall.
  double stall_rate_per_s = 0;
  absl::Duration stall_duration = absl::ZeroDuration();
  // Fraction of capacity stolen by a co-located model: service time / (1 - colocation).
  double colocation = 0;
  // Probability that a served request fails (HTTP 500 / gRPC INTERNAL) after its service.
  double error_rate = 0;
  uint64_t seed = 1;
};

// INVALID_ARGUMENT naming the field when a value is out of range.
absl::Status ValidatePerturbations(const Perturbations& perturbations);

class ServiceTimeModel {
 public:
  // Crashes on an invalid config: validate with ValidatePerturbations first.
  explicit ServiceTimeModel(const Perturbations& perturbations);

  // The multiplier warmup applies at virtual time t (>= 1, 1 after the warmup period).
  double WarmupFactor(absl::Duration t) const;
  // Work needed for a job of nominal cost `nominal` starting at `start`: nominal times jitter,
  // warmup factor and 1/(1 - colocation). Draws one jitter sample.
  absl::Duration Work(absl::Duration nominal, absl::Duration start);
  // When `work` begun at `start` is done, given that stalls pause progress. Calls must come
  // with non-decreasing `start` (stalls ending before it are forgotten).
  absl::Duration FinishAfter(absl::Duration start, absl::Duration work);
  // Whether the next served request fails (draws from the error process).
  bool NextFails();

  // Adds a stall of `length` beginning at `at` (an operator's fault injection).
  void InjectStall(absl::Duration at, absl::Duration length);
  // Changes the co-located neighbour's share from now on; [0, 0.95].
  void SetColocation(double colocation);
  // A new version starting cold at `at` (a rolling update's restart): from then on the
  // warmup is `factor` (clamped to [1, 1000]) decaying linearly to 1 over `warmup` (clamped to
  // [0, 24h]), as after the model's start, with t measured from `at`.
  void Restart(absl::Duration at, double factor, absl::Duration warmup);

  // Fraction of time not covered by a Poisson stall: exp(-rate * duration).
  double StallFreeFraction() const;
  const Perturbations& perturbations() const { return perturbations_; }

 private:
  struct Stall {
    absl::Duration start;
    absl::Duration end;
  };
  // Makes sure every Poisson stall starting at or before `until` is in stalls_.
  void GenerateStallsUntil(absl::Duration until);
  void AddStall(Stall stall);

  Perturbations perturbations_;
  absl::Duration warmup_origin_ = absl::ZeroDuration();  // when the warmup began (Restart)
  std::mt19937_64 jitter_rng_;
  std::mt19937_64 stall_rng_;
  std::mt19937_64 error_rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  absl::Duration next_poisson_stall_;  // start of the next stall not yet in stalls_
  std::vector<Stall> stalls_;          // sorted, non-overlapping
  size_t first_live_stall_ = 0;        // stalls_[i] for i < this ended before the last start
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_SERVICE_TIME_MODEL_H_
