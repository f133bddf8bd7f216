// Named model profiles for the simulated predictor: one small JSON file per model class
// (tests/simulator/profiles/*.json, embedded into the binary at build time) that sets every
// scheduling parameter and a documented SLO, so a capacity test has a known right answer.
//
//   ASSIGN_OR_RETURN(Profile profile, LoadProfile("vision"));        // or a path to a .json
//   SlotScheduler scheduler(profile.batch);                          // profile.mode == kBatch
//   double saturation = SaturationRps(profile);
//
// File format (every key optional; unknown keys are INVALID_ARGUMENT; times in ms, warmup in s):
//   {"name": "vision", "description": "...", "mode": "batch" | "generative",
//    "slots": 2, "base_ms": 6, "per_item_ms": 2, "max_batch": 8, "max_queue_delay_ms": 2,
//    "max_queue": 256, "jitter_sigma": 0.1, "warmup_factor": 4, "warmup_s": 20,
//    "stall_rate_per_s": 0.1, "stall_ms": 50, "colocation": 0, "error_rate": 0, "seed": 1,
//    "generative": {"max_seqs": 16, "token_base_ms": 8, "token_per_seq_ms": 0.25,
//                   "prefill_ms_per_token": 0.04, "prompt_tokens": 128, "kv_cache_tokens": 0,
//                   "output_tokens": {"distribution": "constant" | "uniform" | "lognormal",
//                                     "mean": 64, "sigma": 0.5, "min": 1, "max": 256}},
//    "slo": {"latency_percentile": 99, "latency_ms": 100, "max_error_rate": 0.01,
//            "ttft_ms": 1500},
//    "cost_sigma": 0, "nominal_elements": 0}
// Defaults are the legacy command line's: 4 slots of 10 ms, no batching, no perturbations.
// Pure functions; any thread.
#ifndef VANGUARD_TESTS_SIMULATOR_PROFILE_H_
#define VANGUARD_TESTS_SIMULATOR_PROFILE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tests/simulator/slot_scheduler.h"
#include "tests/simulator/token_scheduler.h"

namespace vanguard::sim {

// What "meets its SLO" means for a profile.
struct Slo {
  // The latency percentile judged (99 = p99), over requests that succeeded, from arrival to
  // the last byte (for streams: the last token).
  double latency_percentile = 99;
  absl::Duration latency_limit = absl::Milliseconds(100);
  // (rejected + failed) / scheduled may not exceed this.
  double max_error_rate = 0.01;
  // Generative only: the same percentile of time to first token; infinite = not judged.
  absl::Duration ttft_limit = absl::InfiniteDuration();
};

enum class ProfileMode { kBatch, kGenerative };

struct Profile {
  std::string name = "default";
  std::string description;
  ProfileMode mode = ProfileMode::kBatch;
  // Batch mode's scheduler. Its slots, max_queue and perturbations also apply in generative
  // mode (copied into `generative` by Finalize).
  SlotScheduler::Config batch;
  TokenScheduler::Config generative;
  Slo slo;
  // Batch mode: what requests carry varies (sequence lengths, tensor sizes), and so does
  // their cost: a recorded request's cost relative to the nominal one (SlotScheduler::Arrive)
  // is lognormal with median 1 and this log-sd, clamped to [1/kMaxCost, kMaxCost]. 0: every
  // request costs the nominal (the legacy behaviour). JSON key "cost_sigma".
  double cost_sigma = 0;
  // Batch mode, the served model (SimPredictorServer): how many tensor elements a nominal
  // request carries. A KServe v2 request's cost is the number of elements in all its input
  // tensors over this, clamped like DrawCost's (ContentCost), so a recorded size mix and a
  // single template request load the model differently. 0: every request costs 1 whatever
  // it carries (the legacy behaviour). JSON key "nominal_elements".
  int64_t nominal_elements = 0;
};

inline constexpr double kMaxCost = 16;

// The cost of a request carrying `elements` tensor elements (summed over its inputs):
// elements / nominal_elements clamped to [1/kMaxCost, kMaxCost]; 1 when nominal_elements is 0.
inline double ContentCost(const Profile& profile, int64_t elements) {
  if (profile.nominal_elements <= 0) return 1;
  return std::clamp(static_cast<double>(elements) / static_cast<double>(profile.nominal_elements),
                    1 / kMaxCost, kMaxCost);
}

// Draws one request's cost from the profile's mix (1 when cost_sigma is 0).
template <typename Rng>
double DrawCost(const Profile& profile, Rng& rng) {
  if (profile.cost_sigma <= 0) return 1;
  std::normal_distribution<double> log_cost(0, profile.cost_sigma);
  return std::clamp(std::exp(log_cost(rng)), 1 / kMaxCost, kMaxCost);
}

// Parses a profile file's text. INVALID_ARGUMENT naming the key on bad JSON, unknown keys,
// wrong types or values out of range.
absl::StatusOr<Profile> ParseProfileJson(absl::string_view text);

// A batch profile as the JSON ParseProfileJson reads back to the same profile (times to the
// nanosecond). Generative profiles' token settings are not written (UNIMPLEMENTED).
absl::StatusOr<std::string> BatchProfileToJson(const Profile& profile);

// A name from NamedProfiles() or a path to a JSON file (anything containing '/' or ending in
// ".json"). NOT_FOUND listing the names for an unknown name; the parse errors otherwise.
absl::StatusOr<Profile> LoadProfile(absl::string_view name_or_path);

// The profiles shipped in tests/simulator/profiles/: embedding, ranking, vision,
// nlp_encoder, llm.
std::vector<std::string> NamedProfiles();

// Copies the shared fields (slots, max_queue, perturbations) from `batch` into `generative`
// and validates the scheduler config of the profile's mode. Call after changing fields.
absl::Status FinalizeProfile(Profile& profile);

// Requests per second at saturation after warmup, from the profile's mode's scheduler.
double SaturationRps(const Profile& profile);

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_PROFILE_H_
