// Constant-rate stability with drift flags. See stability_strategy.h.
#include "worker/stability_strategy.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vanguard::worker {
namespace {

// Mean of `field` over outcomes [begin, end) for which it is known (>= 0); nullopt if none.
std::optional<double> Mean(const std::vector<StepOutcome>& v, size_t begin, size_t end,
                           const std::function<double(const StepOutcome&)>& field) {
  double sum = 0;
  int n = 0;
  for (size_t i = begin; i < end; ++i) {
    const double x = field(v[i]);
    if (x < 0) continue;
    sum += x;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StabilityStrategy>> StabilityStrategy::Create(
    const vanguard::v1::StabilityStrategy& config) {
  vanguard::v1::StabilityStrategy c = config;
  if (!std::isfinite(c.rate_qps()) || c.rate_qps() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("stability.rate_qps must be > 0, got ", c.rate_qps()));
  }
  if (c.segments() < 0 || c.segments() > kMaxSegments) {
    return absl::InvalidArgumentError(
        absl::StrCat("stability.segments must be in [0, ", kMaxSegments, "], got ", c.segments()));
  }
  for (auto [value, field] : {std::pair{c.max_latency_growth(), "max_latency_growth"},
                              std::pair{c.max_error_creep(), "max_error_creep"},
                              std::pair{c.max_throughput_decay(), "max_throughput_decay"},
                              std::pair{c.max_memory_growth(), "max_memory_growth"}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("stability.", field, " must be >= 0, got ", value));
    }
  }
  if (c.segments() == 0) c.set_segments(10);
  if (c.segments() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stability.segments must be >= 3 to compare the first and last third, got ", c.segments()));
  }
  if (c.max_latency_growth() == 0) c.set_max_latency_growth(0.2);
  if (c.max_error_creep() == 0) c.set_max_error_creep(0.005);
  if (c.max_throughput_decay() == 0) c.set_max_throughput_decay(0.05);
  if (c.max_memory_growth() == 0) c.set_max_memory_growth(0.1);
  return std::unique_ptr<StabilityStrategy>(new StabilityStrategy(c));
}

std::optional<int> StabilityStrategy::StepsLeft() const {
  if (done_) return 0;
  if (!started_) return std::nullopt;
  return std::max(0, config_.segments() - static_cast<int>(segments_.size()) - invalid_ - 1);
}

std::vector<std::string> StabilityStrategy::DriftFlags(const std::vector<StepOutcome>& s) const {
  std::vector<std::string> flags;
  if (s.size() < 3) return flags;
  const size_t third = s.size() / 3;
  const size_t last_begin = s.size() - third;
  auto compare = [&](const std::function<double(const StepOutcome&)>& field)
      -> std::optional<std::pair<double, double>> {
    std::optional<double> first = Mean(s, 0, third, field);
    std::optional<double> last = Mean(s, last_begin, s.size(), field);
    if (!first || !last) return std::nullopt;
    return std::pair{*first, *last};
  };
  if (auto p = compare([](const StepOutcome& o) { return o.p99_ms; }); p && p->first > 0) {
    const double growth = p->second / p->first - 1;
    if (growth > config_.max_latency_growth()) {
      flags.push_back(absl::StrFormat("latency trend: p99 %.1f -> %.1f ms (+%.0f%% > %g%%)",
                                      p->first, p->second, growth * 100,
                                      config_.max_latency_growth() * 100));
    }
  }
  if (auto p = compare([](const StepOutcome& o) { return o.error_rate; })) {
    const double creep = p->second - p->first;
    if (creep > config_.max_error_creep()) {
      flags.push_back(absl::StrFormat("error creep: %.2f%% -> %.2f%% (> %g points)", p->first * 100,
                                      p->second * 100, config_.max_error_creep() * 100));
    }
  }
  // Against what each segment offered when known: a Poisson segment of a few hundred
  // arrivals offers several percent more or less than the rate by chance alone.
  const bool offered_known =
      std::all_of(s.begin(), s.end(), [](const StepOutcome& o) { return o.offered_qps > 0; });
  if (auto p = compare([&](const StepOutcome& o) {
        return offered_known ? o.achieved_qps / o.offered_qps : o.achieved_qps;
      });
      p && p->first > 0) {
    const double decay = 1 - p->second / p->first;
    if (decay > config_.max_throughput_decay()) {
      flags.push_back(
          offered_known
              ? absl::StrFormat(
                    "throughput decay: achieved %.1f%% -> %.1f%% of offered (-%.0f%% > %g%%)",
                    p->first * 100, p->second * 100, decay * 100,
                    config_.max_throughput_decay() * 100)
              : absl::StrFormat("throughput decay: %.1f -> %.1f qps (-%.0f%% > %g%%)", p->first,
                                p->second, decay * 100, config_.max_throughput_decay() * 100));
    }
  }
  if (auto p = compare([](const StepOutcome& o) { return o.memory_bytes; }); p && p->first > 0) {
    const double growth = p->second / p->first - 1;
    if (growth > config_.max_memory_growth()) {
      flags.push_back(absl::StrFormat("memory growth: %.0f -> %.0f bytes (+%.0f%% > %g%%)",
                                      p->first, p->second, growth * 100,
                                      config_.max_memory_growth() * 100));
    }
  }
  return flags;
}

Decision StabilityStrategy::Conclude() {
  Done done;
  // A segment whose only breach is its latency tail is judged with the whole run: the p99 of
  // hours at one rate is over all of its requests, and a stall that lands in one short
  // segment fails that segment alone though the long run absorbs it.
  const PooledSteps pooled = PoolSteps(segments_);
  done.drift_flags = DriftFlags(segments_);
  const bool stable = pooled.held() && done.drift_flags.empty() && invalid_ == 0;
  done.max_sustainable_qps = stable ? config_.rate_qps() : 0;
  done.converged = invalid_ == 0;
  done.confidence_low_qps = done.max_sustainable_qps;
  done.confidence_high_qps = config_.rate_qps();
  done.summary = absl::StrFormat(
      "stability at %g qps over %d segments: %s; %d failed segment(s)%s%s", config_.rate_qps(),
      static_cast<int>(segments_.size()), stable ? "stable" : "NOT stable", pooled.other_failures,
      pooled.samples > 0
          ? absl::StrFormat("; tail over the whole run %.2f of allowed (%s)%s", pooled.ratio,
                            pooled.ratio <= 1 ? "held" : "BREACHED",
                            pooled.tail_only > 0
                                ? absl::StrFormat(", %d segment(s) over it alone", pooled.tail_only)
                                : std::string())
          : std::string(),
      done.drift_flags.empty() ? std::string()
                               : absl::StrCat("; ", absl::StrJoin(done.drift_flags, "; ")));
  if (invalid_ > 0) absl::StrAppend(&done.summary, "; ", invalid_, " segment(s) not judged");
  done_ = done;
  return done;
}

Decision StabilityStrategy::Next(const std::optional<StepOutcome>& last) {
  if (done_) return *done_;
  if (started_ && last) {
    if (last->client_valid) {
      segments_.push_back(*last);
    } else {
      ++invalid_;
    }
  }
  started_ = true;
  if (static_cast<int>(segments_.size()) + invalid_ >= config_.segments()) return Conclude();
  return RunStep{config_.rate_qps()};
}

}  // namespace vanguard::worker
