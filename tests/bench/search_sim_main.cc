// Capacity searches in virtual time: the adaptive search and binary search driven against a
// profile's own discrete-event scheduler (the simulator's SlotScheduler, or TokenScheduler
// for generative profiles: one continuous timeline with its stalls and jitter), many seeds
// in seconds. What it leaves out: the network, the client and steady-state detection (each
// step is a lead at its rate and a measured part, stretched to request lifetimes as the
// runner does, judged on its percentile limits, errors and throughput, its windows scored by
// the worker's HealthAssessor). What it keeps: the sampling noise of short steps against a
// model whose tail is set by rare events, which is what decides how close a search can get.
// tests/bench/search_sim.sh runs it.
//
//   search_sim --profile=ranking --strategy=adaptive --seeds=50 [--truth=3022.7]
//   search_sim --profile=ranking --fixed_rate=2800 --seeds=1000   # one rate's step statistics
//
// One line per seed (estimate, error, steps, virtual time), then
// `profile=… strategy=… mae_pct=… bias_pct=… max_err_pct=… within_10_pct=… mean_time_s=…`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tests/simulator/ground_truth.h"
#include "tests/simulator/profile.h"
#include "tests/simulator/slot_scheduler.h"
#include "tests/simulator/token_scheduler.h"
#include "worker/adaptive_strategy.h"
#include "worker/binary_search_strategy.h"
#include "worker/health_assessor.h"
#include "worker/proto_time.h"
#include "worker/tail_pooling.h"

ABSL_FLAG(std::string, profile, "ranking", "A simulator profile (name or .json path)");
ABSL_FLAG(std::string, strategy, "adaptive", "adaptive or binary_search");
ABSL_FLAG(int, seeds, 50, "Searches to run (model and arrival seeds 1..N)");
ABSL_FLAG(int, first_seed, 1, "The first seed");
ABSL_FLAG(double, step_s, 3, "Measured part of a step, seconds");
ABSL_FLAG(double, lead_s, 2, "Lead at the step's rate before its measured part, seconds");
ABSL_FLAG(double, truth, 0,
          "The profile's true capacity (req/s); 0: computed here (60 s x 8 replications)");
ABSL_FLAG(bool, verbose, false, "Print every step");
ABSL_FLAG(bool, confirm_best, false,
          "adaptive: hold the best once before finishing (AdaptiveStrategy.confirm_best)");
ABSL_FLAG(std::string, lead_evidence, "none",
          "How a step's tail counts the last 2 s of its lead: none (the measured part only, as "
          "the runner does), worse (with the lead when that reads worse, the runner's old "
          "rule), pooled (always with it)");
ABSL_FLAG(double, fixed_rate, 0,
          "Instead of searching: run --seeds steps at this rate on one timeline and print the "
          "pooled tail ratio and the share of steps that fail");

namespace vanguard {
namespace {

using sim::Profile;
using sim::SlotScheduler;
using worker::Decision;
using worker::Done;
using worker::RunStep;
using worker::StepOutcome;
using worker::Strategy;

// One continuous model timeline: steps run one after another, the queue draining between
// them as it does between two replayer calls.
class VirtualModel {
 public:
  VirtualModel(const Profile& profile, uint64_t seed)
      : profile_(profile),
        generative_(profile.mode == sim::ProfileMode::kGenerative),
        scheduler_(WithSeed(profile.batch, seed)),
        tokens_(WithSeed(profile.generative, seed)),
        arrivals_(seed * 7919 + 17),
        assessor_(*worker::HealthAssessor::Create(SloOf(profile))) {
    // After the model's own warmup.
    now_ =
        generative_ ? profile.generative.perturbations.warmup : profile.batch.perturbations.warmup;
  }

  static v1::Slo SloOf(const Profile& profile) {
    v1::Slo slo;
    *slo.mutable_p99_latency() = worker::ToProtoDuration(profile.slo.latency_limit);
    if (profile.slo.ttft_limit != absl::InfiniteDuration()) {
      *slo.mutable_ttft_p99() = worker::ToProtoDuration(profile.slo.ttft_limit);
    }
    slo.set_max_error_rate(profile.slo.max_error_rate);
    return slo;
  }

  // The runner stretches a slow model's step (see MeasuredStepRunner): its measured part to
  // 10 request lifetimes (at most 60 s), its lead to 10 of them (at most 30 s), its windows
  // to one lifetime and 10 arrivals (at most 5 s). Fast models keep what was asked.
  absl::Duration Lead(absl::Duration lead) const {
    return std::max(lead, std::min(lifetime_ * 10, absl::Seconds(30)));
  }
  absl::Duration Measured(absl::Duration measured) const {
    return std::max(measured, std::min(lifetime_ * 10, absl::Seconds(60)));
  }

  StepOutcome Run(double rate, absl::Duration lead, absl::Duration measured) {
    const absl::Duration start = now_;
    const absl::Duration judged_from = start + lead, end = start + lead + measured;
    std::exponential_distribution<double> gap(rate);
    std::vector<SlotScheduler::Completion> done;
    std::vector<sim::TokenScheduler::TokenEvent> events;
    std::vector<double> latency_ms, ttft_ms, lead_ms, lead_ttft_ms;
    // Windows of one lifetime and 10 arrivals, whole 100 ms, at most 5 s.
    absl::Duration window = std::max({kWindow, lifetime_, absl::Seconds(10 / rate)});
    window = std::min(
        absl::Milliseconds(100) * std::ceil(absl::FDivDuration(window, absl::Milliseconds(100))),
        absl::Seconds(5));
    // Latencies (TTFT for streams) by arrival in the part's windows, for the health.
    std::vector<std::vector<double>> windows(
        static_cast<size_t>(std::ceil(absl::FDivDuration(measured, window))));
    int64_t scheduled = 0, rejected = 0, failed = 0;
    const auto judged = [&](absl::Duration arrival) {
      return arrival >= judged_from && arrival < end;
    };
    const auto window_of = [&](absl::Duration arrival) -> std::vector<double>& {
      return windows[std::min(windows.size() - 1,
                              static_cast<size_t>((arrival - judged_from) / window))];
    };
    const absl::Duration lead_from = judged_from - std::min(lead, kLeadSpan);
    const auto collect = [&] {
      for (const SlotScheduler::Completion& c : done) {
        if (!c.failed && c.arrival >= lead_from && c.arrival < judged_from) {
          lead_ms.push_back(absl::ToDoubleMilliseconds(c.finish - c.arrival));
        }
        if (!judged(c.arrival)) continue;
        if (c.failed) {
          ++failed;
          continue;
        }
        latency_ms.push_back(absl::ToDoubleMilliseconds(c.finish - c.arrival));
        window_of(c.arrival).push_back(latency_ms.back());
      }
      done.clear();
      for (const sim::TokenScheduler::TokenEvent& e : events) {
        if (e.failed) {
          if (!judged(e.arrival)) continue;
          ++failed;
          continue;
        }
        const double ms = absl::ToDoubleMilliseconds(e.time - e.arrival);
        if (e.token_index == 1 && e.arrival >= lead_from && e.arrival < judged_from) {
          lead_ttft_ms.push_back(ms);
        }
        if (e.last && e.arrival >= lead_from && e.arrival < judged_from) lead_ms.push_back(ms);
        if (!judged(e.arrival)) continue;
        if (e.token_index == 1) {
          ttft_ms.push_back(ms);
          window_of(e.arrival).push_back(ms);
        }
        if (e.last) latency_ms.push_back(ms);
      }
      events.clear();
    };
    absl::Duration t = start;
    for (uint64_t id = next_id_;; ++id) {
      t += absl::Seconds(gap(arrivals_));
      if (t >= end) {
        next_id_ = id;
        break;
      }
      const bool rejected_here =
          generative_
              ? tokens_.Arrive(id, t, 0, &events) == sim::TokenScheduler::Admission::kRejected
              : scheduler_.Arrive(id, t, &done) == SlotScheduler::Admission::kRejected;
      if (judged(t)) {
        ++scheduled;
        rejected += rejected_here ? 1 : 0;
      }
      collect();
    }
    // The step's requests run to completion (the replayer's call waits for them), and the
    // next step starts after the last of them: its arrivals must not land in the past of the
    // model's clock, where the scheduler would stamp them all at once (a burst no schedule
    // sent).
    absl::Duration drained = end;
    for (;;) {
      const std::optional<absl::Duration> next =
          generative_ ? tokens_.NextEventTime() : scheduler_.NextEventTime();
      if (!next) break;
      drained = std::max(drained, *next);
      if (generative_) {
        tokens_.AdvanceTo(*next, &events);
      } else {
        scheduler_.AdvanceTo(*next, &done);
      }
      collect();
    }
    now_ = std::max(drained, now_) + absl::Milliseconds(500);

    StepOutcome o;
    o.rate_qps = rate;
    const double seconds = absl::ToDoubleSeconds(measured);
    o.offered_qps = static_cast<double>(scheduled) / seconds;
    // Every request is run to completion, so an overload shows as latency (as in the ground
    // truth), never as a shortfall of throughput.
    o.achieved_qps = static_cast<double>(latency_ms.size()) / seconds;
    o.error_rate = scheduled > 0 ? static_cast<double>(rejected + failed) / scheduled : 1;
    const double percentile = profile_.slo.latency_percentile;
    const double allowed = (100 - percentile) / 100;
    // A percentile limit over samples: the percentile and the tail ratio (share over the
    // limit / the share allowed).
    struct Tail {
      double at_percentile = 1e9, ratio = 0;
    };
    const auto tail_of = [&](std::vector<double>& ms, absl::Duration limit) {
      Tail tail;
      if (limit == absl::InfiniteDuration()) return Tail{0, 0};  // not judged
      std::sort(ms.begin(), ms.end());
      if (ms.empty()) {
        tail.ratio = 1 / allowed;
        return tail;
      }
      const size_t rank = static_cast<size_t>(std::ceil(percentile / 100 * ms.size()));
      tail.at_percentile = ms[std::clamp<size_t>(rank, 1, ms.size()) - 1];
      const double limit_ms = absl::ToDoubleMilliseconds(limit);
      tail.ratio =
          static_cast<double>(ms.end() - std::upper_bound(ms.begin(), ms.end(), limit_ms)) /
          static_cast<double>(ms.size()) / allowed;
      tail.at_percentile /= limit_ms;  // as a share of the limit
      return tail;
    };
    const Tail latency = tail_of(latency_ms, profile_.slo.latency_limit);
    const Tail ttft = tail_of(ttft_ms, profile_.slo.ttft_limit);
    // The tail with the lead: the same samples and the lead's.
    const auto with_lead = [&](const std::vector<double>& part, const std::vector<double>& lead,
                               absl::Duration limit) {
      std::vector<double> all = part;
      all.insert(all.end(), lead.begin(), lead.end());
      return std::pair<double, size_t>{tail_of(all, limit).ratio, all.size()};
    };
    const auto [latency_with_lead, n_with_lead] =
        with_lead(latency_ms, lead_ms, profile_.slo.latency_limit);
    const double ttft_with_lead = with_lead(ttft_ms, lead_ttft_ms, profile_.slo.ttft_limit).first;
    o.p50_ms = latency_ms.empty() ? 0 : latency_ms[latency_ms.size() / 2];
    o.p99_ms = latency.at_percentile * absl::ToDoubleMilliseconds(profile_.slo.latency_limit);
    o.tail_samples = static_cast<int64_t>(latency_ms.size());
    o.tail_ratio = std::max(latency.ratio, ttft.ratio);
    const double pooled = std::max(latency_with_lead, ttft_with_lead);
    const std::string evidence = absl::GetFlag(FLAGS_lead_evidence);
    if (evidence == "pooled" || (evidence == "worse" && pooled > o.tail_ratio)) {
      o.tail_ratio = pooled;
      o.tail_samples = static_cast<int64_t>(n_with_lead);
    }
    const bool errors_ok = o.error_rate <= profile_.slo.max_error_rate;
    const bool throughput_ok = o.achieved_qps >= 0.99 * o.offered_qps * (1 - o.error_rate);
    o.passed_apart_from_tail = errors_ok && throughput_ok;
    const double worst_percentile = std::max(latency.at_percentile, ttft.at_percentile);
    o.passed = o.passed_apart_from_tail && worst_percentile <= 1;
    o.limit_ratio = std::max(worst_percentile, o.error_rate / profile_.slo.max_error_rate);
    if (o.passed && o.p50_ms > 0) lifetime_ = absl::Milliseconds(o.p50_ms);
    if (!throughput_ok) o.limit_ratio = std::max(o.limit_ratio, 1.01);
    o.health_score = o.limit_ratio;
    o.health_state = o.limit_ratio < 0.6    ? v1::HEALTH_STATE_HEALTHY
                     : o.limit_ratio < 0.8  ? v1::HEALTH_STATE_WARN
                     : o.limit_ratio < 0.95 ? v1::HEALTH_STATE_UNHEALTHY
                     : o.limit_ratio <= 1.0 ? v1::HEALTH_STATE_CRITICAL
                                            : v1::HEALTH_STATE_OVERLOADED;
    // The per-window hysteresis and its isolated spikes, as the runner scores them.
    assessor_.Reset();
    for (std::vector<double>& w : windows) {
      if (w.empty()) continue;
      std::sort(w.begin(), w.end());
      worker::WindowSignals signals;
      const size_t rank = static_cast<size_t>(std::ceil(percentile / 100 * w.size()));
      (generative_ ? signals.ttft_p99_ms.emplace() : signals.p99_ms) =
          w[std::clamp<size_t>(rank, 1, w.size()) - 1];
      signals.offered_qps = signals.achieved_qps = w.size() / absl::ToDoubleSeconds(kWindow);
      assessor_.Observe(signals);
    }
    o.window_state = assessor_.worst_state();
    o.spikes = assessor_.spikes();
    return o;
  }

 private:
  static constexpr absl::Duration kWindow = absl::Milliseconds(500);
  // The lead's steady span the runner may count in a step's tail (4 windows).
  static constexpr absl::Duration kLeadSpan = absl::Seconds(2);

  template <typename Config>
  static Config WithSeed(Config c, uint64_t seed) {
    c.perturbations.seed = seed;
    return c;
  }

  const Profile& profile_;
  const bool generative_;
  SlotScheduler scheduler_;
  sim::TokenScheduler tokens_;
  absl::Duration lifetime_ = absl::ZeroDuration();  // p50 latency of the last passing step
  std::mt19937_64 arrivals_;
  absl::Duration now_;
  uint64_t next_id_ = 0;
  worker::HealthAssessor assessor_;
};

std::unique_ptr<Strategy> MakeStrategy(const std::string& name, double lo, double hi) {
  if (name == "adaptive") {
    v1::AdaptiveStrategy c;
    c.set_min_qps(lo);
    c.set_max_qps(hi);
    c.set_confirm_best(absl::GetFlag(FLAGS_confirm_best));
    return *worker::AdaptiveStrategy::Create(c);
  }
  if (name == "binary_search") {
    v1::BinarySearchStrategy c;
    c.set_min_qps(lo);
    c.set_max_qps(hi);
    return *worker::BinarySearchStrategy::Create(c);
  }
  return nullptr;
}

int Main() {
  absl::StatusOr<Profile> profile = sim::LoadProfile(absl::GetFlag(FLAGS_profile));
  if (!profile.ok()) {
    std::fprintf(stderr, "%s\n", std::string(profile.status().message()).c_str());
    return 2;
  }
  const std::string strategy = absl::GetFlag(FLAGS_strategy);
  if (MakeStrategy(strategy, 1, 2) == nullptr) {
    std::fprintf(stderr, "--strategy must be adaptive or binary_search\n");
    return 2;
  }
  sim::GroundTruthOptions long_run;
  long_run.measure = absl::Seconds(60);
  long_run.replications = 8;
  absl::StatusOr<sim::GroundTruth> gt = sim::ComputeGroundTruth(*profile, profile->slo, long_run);
  if (!gt.ok()) {
    std::fprintf(stderr, "%s\n", std::string(gt.status().message()).c_str());
    return 2;
  }
  double truth = absl::GetFlag(FLAGS_truth);
  if (truth <= 0) truth = gt->max_sustainable_rps;
  const double lo = gt->saturation_rps / 20, hi = gt->saturation_rps * 1.5;
  const absl::Duration lead = absl::Seconds(absl::GetFlag(FLAGS_lead_s));
  const absl::Duration step = absl::Seconds(absl::GetFlag(FLAGS_step_s));
  if (const double rate = absl::GetFlag(FLAGS_fixed_rate); rate > 0) {
    VirtualModel model(*profile, static_cast<uint64_t>(absl::GetFlag(FLAGS_first_seed)));
    double over = 0, requests = 0;
    int failed = 0;
    const int steps = absl::GetFlag(FLAGS_seeds);
    for (int i = 0; i < steps; ++i) {
      const StepOutcome o = model.Run(rate, model.Lead(lead), model.Measured(step));
      over += o.tail_ratio * static_cast<double>(o.tail_samples);
      requests += static_cast<double>(o.tail_samples);
      failed += o.passed ? 0 : 1;
    }
    std::printf("rate=%g steps=%d pooled_tail_ratio=%.3f failed_pct=%.1f\n", rate, steps,
                over / requests, 100.0 * failed / steps);
    return 0;
  }
  std::printf("profile %s: truth %.1f req/s, range [%.1f, %.1f], %s\n", profile->name.c_str(),
              truth, lo, hi, strategy.c_str());
  double abs_sum = 0, signed_sum = 0, worst = 0, time_sum = 0;
  int within = 0;
  const int seeds = absl::GetFlag(FLAGS_seeds);
  for (int seed = absl::GetFlag(FLAGS_first_seed); seed < absl::GetFlag(FLAGS_first_seed) + seeds;
       ++seed) {
    VirtualModel model(*profile, static_cast<uint64_t>(seed));
    std::unique_ptr<Strategy> search = MakeStrategy(strategy, lo, hi);
    std::optional<StepOutcome> last;
    double seconds = 0;
    int steps = 0;
    Done done;
    for (;;) {
      const Decision d = search->Next(last);
      if (const Done* finished = std::get_if<Done>(&d)) {
        done = *finished;
        break;
      }
      const RunStep& run = std::get<RunStep>(d);
      const absl::Duration step_lead = model.Lead(lead);
      const absl::Duration measured = model.Measured(step) * run.hold;
      last = model.Run(run.rate_qps, step_lead, measured);
      seconds += absl::ToDoubleSeconds(step_lead + measured);
      ++steps;
      if (absl::GetFlag(FLAGS_verbose)) {
        std::printf(
            "  step %d: %.1f%s -> p99 %.1f ms (%.3f of the limit), tail %.2f of %lld, %s/%s, "
            "%d spike(s), %s\n",
            steps, run.rate_qps, run.hold > 1 ? absl::StrCat(" (hold ", run.hold, ")").c_str() : "",
            last->p99_ms, last->limit_ratio, last->tail_ratio,
            static_cast<long long>(last->tail_samples),
            v1::HealthState_Name(last->health_state).c_str(),
            v1::HealthState_Name(last->window_state).c_str(), last->spikes,
            last->passed ? "pass" : "FAIL");
      }
    }
    const double err = 100 * (done.max_sustainable_qps - truth) / truth;
    abs_sum += std::abs(err);
    signed_sum += err;
    worst = std::max(worst, std::abs(err));
    within += std::abs(err) <= 10 ? 1 : 0;
    time_sum += seconds;
    std::printf("seed %d: %.1f req/s (%+.2f%%), %d steps, %.0f s: %s\n", seed,
                done.max_sustainable_qps, err, steps, seconds, done.summary.c_str());
  }
  std::printf(
      "profile=%s strategy=%s seeds=%d truth=%.1f mae_pct=%.2f bias_pct=%.2f max_err_pct=%.2f "
      "within_10_pct=%.0f mean_time_s=%.1f\n",
      profile->name.c_str(), strategy.c_str(), seeds, truth, abs_sum / seeds, signed_sum / seeds,
      worst, 100.0 * within / seeds, time_sum / seeds);
  return 0;
}

}  // namespace
}  // namespace vanguard

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs capacity searches against a simulated batch profile in virtual time.\n"
      "  search_sim --profile=ranking --strategy=adaptive --seeds=50");
  absl::ParseCommandLine(argc, argv);
  return vanguard::Main();
}
