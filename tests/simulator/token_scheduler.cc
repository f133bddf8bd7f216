// Continuous-batching model of a generative predictor; see token_scheduler.h. Called from one
// strand (server) or one thread (ground truth).
#include "tests/simulator/token_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace vanguard::sim {
namespace {

absl::Status ValidateDistribution(const OutputLengthDistribution& d) {
  if (d.min < 1 || d.max < d.min || d.max > 1000000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output_tokens: need 1 <= min <= max <= 1000000, got min=", d.min, " max=", d.max));
  }
  if (!(d.mean > 0 && d.mean <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_tokens.mean must be in (0, 1e6], got ", d.mean));
  }
  if (!(d.sigma >= 0 && d.sigma <= 5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_tokens.sigma must be in [0, 5], got ", d.sigma));
  }
  return absl::OkStatus();
}

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

absl::Status TokenScheduler::Validate(const Config& c) {
  if (c.slots < 1 || c.slots > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("slots must be in [1, 4096], got ", c.slots));
  }
  if (c.max_seqs < 1 || c.max_seqs > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_seqs must be in [1, 100000], got ", c.max_seqs));
  }
  if (c.token_base <= absl::ZeroDuration() || c.token_base > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token_base must be in (0, 1h], got ", absl::FormatDuration(c.token_base)));
  }
  if (c.token_per_seq < absl::ZeroDuration() || c.token_per_seq > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("token_per_seq must be in [0, 1h], got ",
                                                   absl::FormatDuration(c.token_per_seq)));
  }
  if (c.prefill_per_token < absl::ZeroDuration() || c.prefill_per_token > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("prefill_per_token must be in [0, 1h], got ",
                                                   absl::FormatDuration(c.prefill_per_token)));
  }
  if (c.prompt_tokens < 0 || c.prompt_tokens > 10000000) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt_tokens must be in [0, 1e7], got ", c.prompt_tokens));
  }
  if (c.max_queue < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queue must be >= 0 (0 = unlimited), got ", c.max_queue));
  }
  if (c.kv_cache_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv_cache_tokens must be >= 0, got ", c.kv_cache_tokens));
  }
  if (absl::Status status = ValidateDistribution(c.output_tokens); !status.ok()) return status;
  return ValidatePerturbations(c.perturbations);
}

absl::StatusOr<TokenScheduler> TokenScheduler::Create(const Config& config) {
  if (absl::Status status = Validate(config); !status.ok()) return status;
  return TokenScheduler(config);
}

TokenScheduler::TokenScheduler(const Config& config)
    : config_(config),
      service_model_(config.perturbations),
      length_rng_(config.perturbations.seed * 0x9E3779B97F4A7C15ull + 4) {
  if (absl::Status status = Validate(config); !status.ok()) {
    std::cerr << "TokenScheduler: " << status << "\n";
    std::abort();
  }
  engines_.resize(config_.slots);
  kv_capacity_ = config_.kv_cache_tokens > 0
                     ? config_.kv_cache_tokens
                     : static_cast<int64_t>(config_.slots) * config_.max_seqs *
                           (config_.prompt_tokens + config_.output_tokens.max);
  kv_capacity_ = std::max<int64_t>(kv_capacity_, 1);
}

double TokenScheduler::MeanOutputTokens(const OutputLengthDistribution& d) {
  switch (d.kind) {
    case OutputLengthDistribution::Kind::kConstant:
      return std::clamp<double>(std::lround(d.mean), d.min, d.max);
    case OutputLengthDistribution::Kind::kUniform:
      return (static_cast<double>(d.min) + d.max) / 2;
    case OutputLengthDistribution::Kind::kLognormal:
      break;
  }
  if (d.sigma == 0) return std::clamp<double>(std::lround(d.mean), d.min, d.max);
  const double mu = std::log(d.mean) - d.sigma * d.sigma / 2;
  auto below = [&](double x) {  // P(X < x)
    return x <= 0 ? 0.0 : NormalCdf((std::log(x) - mu) / d.sigma);
  };
  double mean = 0;
  for (int k = d.min; k <= d.max; ++k) {
    const double lo = k == d.min ? 0.0 : below(k - 0.5);
    const double hi = k == d.max ? 1.0 : below(k + 0.5);
    mean += k * (hi - lo);
  }
  return mean;
}

int TokenScheduler::DrawOutputTokens(int max_tokens) {
  const OutputLengthDistribution& d = config_.output_tokens;
  int64_t tokens = 0;
  switch (d.kind) {
    case OutputLengthDistribution::Kind::kConstant:
      tokens = std::lround(d.mean);
      break;
    case OutputLengthDistribution::Kind::kUniform:
      tokens = std::uniform_int_distribution<int>(d.min, d.max)(length_rng_);
      break;
    case OutputLengthDistribution::Kind::kLognormal: {
      const double mu = std::log(d.mean) - d.sigma * d.sigma / 2;
      tokens = std::llround(std::min(std::exp(mu + d.sigma * normal_(length_rng_)), 1e9));
      break;
    }
  }
  tokens = std::clamp<int64_t>(tokens, d.min, d.max);
  if (max_tokens > 0) tokens = std::min<int64_t>(tokens, max_tokens);
  return static_cast<int>(tokens);
}

double TokenScheduler::SaturationRps() const {
  const double n = config_.max_seqs;
  const double seconds_per_request =
      MeanOutputTokens(config_.output_tokens) *
          absl::ToDoubleSeconds(config_.token_base + config_.token_per_seq * n) / n +
      absl::ToDoubleSeconds(config_.prefill_per_token * config_.prompt_tokens);
  return config_.slots / seconds_per_request * (1.0 - service_model_.perturbations().colocation) *
         service_model_.StallFreeFraction();
}

double TokenScheduler::KvCacheUsage() const {
  return std::min(1.0, static_cast<double>(kv_used_) / kv_capacity_);
}

double TokenScheduler::Utilization() const {
  return static_cast<double>(stats_.busy_slots) / config_.slots;
}

void TokenScheduler::StartIteration(Engine& engine, absl::Duration t) {
  const bool was_busy = !engine.running.empty() || engine.iteration_end != absl::InfiniteDuration();
  int joined = 0;
  while (static_cast<int>(engine.running.size()) < config_.max_seqs && !waiting_.empty()) {
    Sequence sequence = waiting_.front();
    waiting_.pop_front();
    --stats_.waiting;
    ++stats_.running;
    stats_.total_queue_time += t - sequence.arrival;
    kv_used_ += config_.prompt_tokens;
    engine.running.push_back(sequence);
    ++joined;
  }
  if (engine.running.empty()) {
    engine.iteration_end = absl::InfiniteDuration();
    if (was_busy) --stats_.busy_slots;
    return;
  }
  if (!was_busy) ++stats_.busy_slots;
  const int64_t n = static_cast<int64_t>(engine.running.size());
  const absl::Duration nominal = config_.token_base + config_.token_per_seq * n +
                                 config_.prefill_per_token * (config_.prompt_tokens * joined);
  engine.iteration_end = service_model_.FinishAfter(t, service_model_.Work(nominal, t));
}

void TokenScheduler::FinishIteration(Engine& engine, std::vector<TokenEvent>* events) {
  ++stats_.iterations;
  const absl::Duration t = engine.iteration_end;
  size_t kept = 0;
  for (size_t i = 0; i < engine.running.size(); ++i) {
    Sequence& sequence = engine.running[i];
    TokenEvent event{sequence.request_id, t, sequence.arrival, 0, sequence.output_tokens};
    bool done;
    if (sequence.failed) {
      event.failed = true;
      done = true;
      ++stats_.failed;
    } else {
      ++sequence.generated;
      ++kv_used_;
      ++stats_.tokens;
      event.token_index = sequence.generated;
      done = sequence.generated >= sequence.output_tokens;
    }
    event.last = done;
    events->push_back(event);
    if (done) {
      ++stats_.completed;
      --stats_.running;
      kv_used_ -= config_.prompt_tokens + sequence.generated;
    } else {
      engine.running[kept++] = sequence;
    }
  }
  engine.running.resize(kept);
}

void TokenScheduler::AdvanceTo(absl::Duration now, std::vector<TokenEvent>* events) {
  now = std::max(now, time_);
  while (true) {
    Engine* next = nullptr;
    for (Engine& engine : engines_) {
      if (next == nullptr || engine.iteration_end < next->iteration_end) next = &engine;
    }
    if (next == nullptr || next->iteration_end > now) break;
    time_ = std::max(time_, next->iteration_end);
    FinishIteration(*next, events);
    StartIteration(*next, time_);
  }
  time_ = now;
}

TokenScheduler::Admission TokenScheduler::Arrive(uint64_t request_id, absl::Duration now,
                                                 int max_tokens, std::vector<TokenEvent>* events) {
  AdvanceTo(now, events);
  ++stats_.arrived;
  const Sequence sequence{request_id, time_, DrawOutputTokens(max_tokens), 0,
                          service_model_.NextFails()};
  for (Engine& engine : engines_) {
    if (engine.iteration_end == absl::InfiniteDuration()) {
      // An idle engine implies an empty queue: it would have taken the waiting requests.
      waiting_.push_back(sequence);
      ++stats_.waiting;
      StartIteration(engine, time_);
      return Admission::kStarted;
    }
  }
  if (config_.max_queue > 0 && stats_.waiting >= config_.max_queue) {
    ++stats_.rejected;
    return Admission::kRejected;
  }
  waiting_.push_back(sequence);
  ++stats_.waiting;
  return Admission::kQueued;
}

std::optional<absl::Duration> TokenScheduler::NextEventTime() const {
  absl::Duration next = absl::InfiniteDuration();
  for (const Engine& engine : engines_) next = std::min(next, engine.iteration_end);
  if (next == absl::InfiniteDuration()) return std::nullopt;
  return next;
}

void TokenScheduler::InjectStall(absl::Duration now, absl::Duration length,
                                 std::vector<TokenEvent>* events) {
  AdvanceTo(now, events);
  if (length <= absl::ZeroDuration()) return;
  service_model_.InjectStall(time_, length);
  for (Engine& engine : engines_) {
    if (engine.iteration_end != absl::InfiniteDuration()) engine.iteration_end += length;
  }
}

}  // namespace vanguard::sim
