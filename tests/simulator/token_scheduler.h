// The simulated predictor's generative (LLM) model as a pure discrete-event simulation of
// continuous batching, as vLLM does it: each of `slots` engines runs iterations; in every
// iteration each running sequence gets one token, and an iteration over n sequences takes
// `token_base + token_per_seq * n` (+ `prefill_per_token * prompt_tokens` for each sequence
// that joined in it), perturbed by a ServiceTimeModel. So a sequence's token rate falls as
// more sequences share its engine. Waiting requests join at iteration boundaries, up to
// `max_seqs` per engine; arrivals that find `max_queue` waiting are rejected. Each request's
// output length is drawn from `output_tokens` (capped by the request's max_tokens).
//
//   TokenScheduler scheduler(config);
//   std::vector<TokenScheduler::TokenEvent> events;
//   scheduler.Arrive(/*request_id=*/7, now, /*max_tokens=*/0, &events);
//   scheduler.AdvanceTo(later, &events);   // one event per token; the last has `last` set
//   std::optional<absl::Duration> wake = scheduler.NextEventTime();
//
// Time is an input (virtual time since the model started), never read from a clock.
// Not thread-safe: the server calls it from one strand only.
#ifndef VANGUARD_TESTS_SIMULATOR_TOKEN_SCHEDULER_H_
#define VANGUARD_TESTS_SIMULATOR_TOKEN_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/simulator/service_time_model.h"

namespace vanguard::sim {

struct OutputLengthDistribution {
  enum class Kind { kConstant, kUniform, kLognormal };
  Kind kind = Kind::kConstant;
  // kConstant: round(mean). kUniform: integers in [min, max]. kLognormal: round of a lognormal
  // with this mean and log-space sigma, clamped to [min, max].
  double mean = 64;
  double sigma = 0.5;
  int min = 1;
  int max = 256;
};

class TokenScheduler {
 public:
  struct Config {
    int slots = 1;
    int max_seqs = 16;
    absl::Duration token_base = absl::Milliseconds(8);
    absl::Duration token_per_seq = absl::Microseconds(250);
    absl::Duration prefill_per_token = absl::Microseconds(40);
    int prompt_tokens = 128;
    OutputLengthDistribution output_tokens;
    // Waiting requests beyond which arrivals are rejected; 0 means unlimited.
    int64_t max_queue = 0;
    // KV cache size in tokens for vllm:kv_cache_usage_perc; 0 means
    // slots * max_seqs * (prompt_tokens + output_tokens.max).
    int64_t kv_cache_tokens = 0;
    Perturbations perturbations;
  };

  enum class Admission { kStarted, kQueued, kRejected };

  struct TokenEvent {
    uint64_t request_id = 0;
    absl::Duration time;     // when the token is out
    absl::Duration arrival;  // of its request
    int token_index = 0;     // 1-based
    int output_tokens = 0;   // tokens this request will produce in all
    bool last = false;       // the request is done (its final token, or its failure)
    bool failed = false;     // the request fails here (error_rate), producing no token
  };

  struct Stats {
    uint64_t arrived = 0;
    uint64_t rejected = 0;
    uint64_t completed = 0;  // including failed
    uint64_t failed = 0;
    uint64_t tokens = 0;
    uint64_t iterations = 0;
    absl::Duration total_queue_time;  // arrival to joining an engine, over admitted requests
    int64_t waiting = 0;
    int64_t running = 0;
    int64_t busy_slots = 0;
  };

  static absl::Status Validate(const Config& config);
  static absl::StatusOr<TokenScheduler> Create(const Config& config);
  // Prefer Create; crashes on an invalid config.
  explicit TokenScheduler(const Config& config);

  void AdvanceTo(absl::Duration now, std::vector<TokenEvent>* events);
  // max_tokens caps this request's output length; 0 means no cap.
  Admission Arrive(uint64_t request_id, absl::Duration now, int max_tokens,
                   std::vector<TokenEvent>* events);
  std::optional<absl::Duration> NextEventTime() const;
  void InjectStall(absl::Duration now, absl::Duration length, std::vector<TokenEvent>* events);
  void SetColocation(double colocation) { service_model_.SetColocation(colocation); }
  // A new version cold from `at` (ServiceTimeModel::Restart): engine iterations starting from
  // then on take `factor` times longer, decaying to 1 over `warmup`.
  void Restart(absl::Duration at, double factor, absl::Duration warmup) {
    service_model_.Restart(at, factor, warmup);
  }

  const Stats& stats() const { return stats_; }
  const Config& config() const { return config_; }
  double WarmupFactor(absl::Duration t) const { return service_model_.WarmupFactor(t); }
  // Tokens held by running sequences (prompt + generated) / kv_cache_tokens, in [0, 1].
  double KvCacheUsage() const;
  // Busy engines / slots now.
  double Utilization() const;
  // Exact mean of the output length distribution.
  static double MeanOutputTokens(const OutputLengthDistribution& distribution);
  // Requests per second at saturation after warmup (every engine running max_seqs):
  // slots / (E[L] * (token_base + token_per_seq * max_seqs) / max_seqs
  //          + prefill_per_token * prompt_tokens) * (1 - colocation) * stall-free fraction.
  double SaturationRps() const;

 private:
  struct Sequence {
    uint64_t request_id;
    absl::Duration arrival;
    int output_tokens;
    int generated;
    bool failed;
  };
  struct Engine {
    std::vector<Sequence> running;
    absl::Duration iteration_end = absl::InfiniteDuration();
  };

  int DrawOutputTokens(int max_tokens);
  // Moves waiting requests into `engine` (up to max_seqs) and starts its next iteration at t.
  void StartIteration(Engine& engine, absl::Duration t);
  void FinishIteration(Engine& engine, std::vector<TokenEvent>* events);

  Config config_;
  ServiceTimeModel service_model_;
  std::mt19937_64 length_rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  Stats stats_;
  absl::Duration time_;
  int64_t kv_capacity_ = 1;
  int64_t kv_used_ = 0;
  std::vector<Engine> engines_;
  std::deque<Sequence> waiting_;
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_TOKEN_SCHEDULER_H_
