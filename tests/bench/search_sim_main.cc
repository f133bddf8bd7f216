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
#include <atomic>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "tests/bench/verified_binary_search.h"
#include "tests/simulator/ground_truth.h"
#include "tests/simulator/model_generator.h"
#include "tests/simulator/profile.h"
#include "tests/simulator/slot_scheduler.h"
#include "tests/simulator/token_scheduler.h"
#include "worker/adaptive_strategy.h"
#include "worker/binary_search_strategy.h"
#include "worker/health_assessor.h"
#include "worker/measured_step_runner.h"
#include "worker/proto_time.h"
#include "worker/steady_state.h"
#include "worker/tail_confidence.h"
#include "worker/tail_pooling.h"
#include "worker/warmup_detector.h"

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
ABSL_FLAG(std::string, range, "saturation",
          "Profile searches: saturation ([saturation/20, 1.5 x saturation]), wide "
          "([min(5, truth/2), 20 x truth], what a new user types) or LO:HI in req/s (a "
          "generated model's range as --generated printed it)");
ABSL_FLAG(bool, cold, false,
          "Profile searches: the test starts when the model does (its warmup ahead), with the "
          "runner's first-step warmup phase");
ABSL_FLAG(int, generated, 0,
          "Instead of a profile: search N generated models (tests/simulator/model_generator.h), "
          "each cold at the start, within a user-style range, against its long-run truth");
ABSL_FLAG(int, gen_replications, vanguard::sim::GeneratorOptions().replications,
          "--generated: independent runs of the horizon pooled for each model's truth (the "
          "expected share of requests over the limit in a horizon, not one draw of it)");
ABSL_FLAG(uint64_t, gen_seed, 0, "--generated: the first model's seed; 0: from the clock");
ABSL_FLAG(double, horizon_s, 300, "--generated: the horizon the truth holds over, seconds");
ABSL_FLAG(int, threads, 2, "--generated: threads");
ABSL_FLAG(int, repeat_models, 20,
          "--generated: models searched 5 more times with other seeds for repeat_cv_pct");
ABSL_FLAG(int, repeat_verbose, 0,
          "--repeat_models with --threads=1: print every step of this repeat (1-5)");
ABSL_FLAG(int, truth_noise, 0,
          "--generated: instead of searching, compute each model's truth again from this many "
          "independent horizons (other arrival and model seeds) and print how far it lands "
          "from the model's truth: the error of a perfect search that verifies over that many "
          "horizons");
ABSL_FLAG(uint64_t, gen_min_judged_requests, vanguard::sim::GeneratorOptions().min_judged_requests,
          "--generated: judged requests at least, at each rate the truth evaluates (more "
          "horizons at low rates)");
ABSL_FLAG(bool, retruth, false,
          "--generated with --models_dir: compute each model's truth again with this "
          "binary's generator options where it was judged on fewer than "
          "--gen_min_judged_requests requests, drop models whose truth leaves the "
          "generator's capacity range, rewrite DIR/models.tsv (the old one kept as "
          "models.tsv.before_retruth), print how far each truth moved, and exit");
ABSL_FLAG(std::string, variants, "adaptive,binary,binary_verified",
          "--generated: comma-separated searches: adaptive, binary, binary_verified (binary "
          "search whose estimate is held over the horizon, searched again below a failed hold: "
          "tests/bench/verified_binary_search.h), and the ablations no_warmup, closed_loop, "
          "p99_only, template, no_batching_awareness");
ABSL_FLAG(std::string, write_profiles, "",
          "--generated: write the models to this directory (<name>.json profiles and "
          "models.tsv: name, truth, min_qps, max_qps, binding, description) and exit");
ABSL_FLAG(std::string, models_dir, "",
          "--generated: read the models --write_profiles wrote to this directory (models.tsv "
          "and the profiles) instead of drawing them; --generated caps how many");
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

// The step's tail evidence from its windows, as the runner reads it: the tail ratio's
// standard error by batch means over the windows (TailConfidenceOf), and whether the
// windows' mean latency rises through the part (SteadyStateDetector::Trending, the runner's
// LatencyRising).
void FillWindowEvidence(const std::vector<std::vector<double>>& windows, double limit_ms,
                        double allowed, StepOutcome* o) {
  std::vector<worker::TailUnit> units;
  std::deque<double> mean_ms;
  for (const std::vector<double>& w : windows) {
    if (w.empty()) continue;
    units.push_back({static_cast<int64_t>(w.size()),
                     std::count_if(w.begin(), w.end(), [&](double ms) { return ms > limit_ms; })});
    double sum = 0;
    for (double ms : w) sum += ms;
    mean_ms.push_back(sum / static_cast<double>(w.size()));
  }
  const worker::TailConfidence c = worker::TailConfidenceOf(units, allowed);
  o->tail_ratio_se = c.ratio_se;
  o->tail_units = c.units;
  o->backlog_rising =
      mean_ms.size() >= 4 && worker::SteadyStateDetector::Trending(
                                 mean_ms, worker::MeasuredStepRunner::kRisingLatencyDrift, true);
}

// How the virtual client and judge deviate from the runner's (the ablations).
struct ModelVariant {
  bool cold = false;            // the test starts when the model does (its warmup ahead)
  bool template_cost = false;   // every request costs the nominal (one template request)
  bool closed_loop = false;     // fixed concurrency ceil(rate * latency limit)
  bool p99_only = false;        // judged on p99 at the SLO's latency limit, nothing else
  bool window_evidence = true;  // tail_ratio_se by batch means and the backlog trend
};

// One continuous model timeline: steps run one after another, the queue draining between
// them as it does between two replayer calls.
class VirtualModel {
 public:
  VirtualModel(const Profile& profile, uint64_t seed, ModelVariant variant = {})
      : profile_(profile),
        variant_(variant),
        generative_(profile.mode == sim::ProfileMode::kGenerative),
        scheduler_(WithSeed(profile.batch, seed)),
        tokens_(WithSeed(profile.generative, seed)),
        arrivals_(seed * 7919 + 17),
        costs_(seed * 104723 + 5),
        assessor_(*worker::HealthAssessor::Create(SloOf(profile))) {
    // After the model's own warmup, unless the test starts with the model.
    now_ = variant.cold  ? absl::ZeroDuration()
           : generative_ ? profile.generative.perturbations.warmup
                         : profile.batch.perturbations.warmup;
  }

  absl::Duration now() const { return now_; }

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
  // 10 request lifetimes and to kMinMeasuredRequests arrivals (each at most 60 s), its lead
  // to 10 lifetimes (at most 30 s), its windows to one lifetime and 10 arrivals (at most
  // 5 s). Fast models keep what was asked.
  absl::Duration Lead(absl::Duration lead) const {
    return std::max(lead, std::min(lifetime_ * 10, absl::Seconds(30)));
  }
  absl::Duration Measured(absl::Duration measured, double rate) const {
    return std::max({measured, std::min(lifetime_ * 10, absl::Seconds(60)),
                     std::min(absl::Seconds(kMinMeasuredRequests / rate), absl::Seconds(60))});
  }
  static constexpr double kMinMeasuredRequests = 200;

  // Runs one step: `lead` at the rate, then the measured part. `window_p50` (nullable) gets
  // each measured window's median latency (0 for an empty one) and `window_length` their
  // length.
  StepOutcome Run(double rate, absl::Duration lead, absl::Duration measured,
                  std::vector<double>* window_p50 = nullptr,
                  absl::Duration* window_length = nullptr) {
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
    const auto window_index = [&](absl::Duration arrival) {
      return std::min(windows.size() - 1, static_cast<size_t>((arrival - judged_from) / window));
    };
    const auto window_of = [&](absl::Duration arrival) -> std::vector<double>& {
      return windows[window_index(arrival)];
    };
    // Per window: arrivals and errors (rejected or failed), the error check's units.
    std::vector<worker::TailUnit> window_errors(windows.size());
    const absl::Duration lead_from = judged_from - std::min(lead, kLeadSpan);
    const auto collect = [&] {
      for (const SlotScheduler::Completion& c : done) {
        if (!c.failed && c.arrival >= lead_from && c.arrival < judged_from) {
          lead_ms.push_back(absl::ToDoubleMilliseconds(c.finish - c.arrival));
        }
        if (!judged(c.arrival)) continue;
        if (c.failed) {
          ++failed;
          ++window_errors[window_index(c.arrival)].over;
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
    const auto arrive = [&](uint64_t id, absl::Duration t) {
      const bool rejected_here =
          generative_
              ? tokens_.Arrive(id, t, 0, &events) == sim::TokenScheduler::Admission::kRejected
              : scheduler_.Arrive(id, t, &done,
                                  variant_.template_cost ? 1.0 : sim::DrawCost(profile_, costs_)) ==
                    SlotScheduler::Admission::kRejected;
      if (judged(t)) {
        ++scheduled;
        rejected += rejected_here ? 1 : 0;
        worker::TailUnit& unit = window_errors[window_index(t)];
        ++unit.samples;
        unit.over += rejected_here ? 1 : 0;
      }
      return rejected_here;
    };
    if (variant_.closed_loop && !generative_) {
      RunClosedLoop(rate, start, end, arrive, done, collect);
    } else {
      absl::Duration t = start;
      for (uint64_t id = next_id_;; ++id) {
        t += absl::Seconds(gap(arrivals_));
        if (t >= end) {
          next_id_ = id;
          break;
        }
        arrive(id, t);
        collect();
      }
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
    const double percentile = variant_.p99_only ? 99 : profile_.slo.latency_percentile;
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
    o.tail_allowed = allowed;
    const double pooled = std::max(latency_with_lead, ttft_with_lead);
    const std::string evidence = absl::GetFlag(FLAGS_lead_evidence);
    if (evidence == "pooled" || (evidence == "worse" && pooled > o.tail_ratio)) {
      o.tail_ratio = pooled;
      o.tail_samples = static_cast<int64_t>(n_with_lead);
    }
    const bool errors_ok = variant_.p99_only || o.error_rate <= profile_.slo.max_error_rate;
    const bool throughput_ok = o.achieved_qps >= 0.99 * o.offered_qps * (1 - o.error_rate);
    // Errors are a per-request check with an allowed share too (max_error_rate), as the
    // runner reads them: the tail ratio is the worse of the two shares over what they allow,
    // so pooled and sequential verdicts see an error rate set by rare episodes as well.
    const bool errors_as_tail = !variant_.p99_only && profile_.slo.max_error_rate > 0;
    const double error_ratio = errors_as_tail ? o.error_rate / profile_.slo.max_error_rate : 0;
    const bool errors_bind = errors_as_tail && error_ratio > o.tail_ratio;
    if (errors_bind) {
      o.tail_ratio = error_ratio;
      o.tail_samples = scheduled;
      o.tail_allowed = profile_.slo.max_error_rate;
    }
    o.passed_apart_from_tail = (errors_as_tail || errors_ok) && throughput_ok;
    const double worst_percentile = std::max(latency.at_percentile, ttft.at_percentile);
    o.passed = o.passed_apart_from_tail && errors_ok && worst_percentile <= 1;
    o.limit_ratio = std::max(worst_percentile,
                             variant_.p99_only ? 0.0 : o.error_rate / profile_.slo.max_error_rate);
    if (variant_.window_evidence && !generative_) {
      FillWindowEvidence(windows, absl::ToDoubleMilliseconds(profile_.slo.latency_limit), allowed,
                         &o);
      if (errors_bind) {
        const worker::TailConfidence c =
            worker::TailConfidenceOf(window_errors, profile_.slo.max_error_rate);
        o.tail_ratio_se = c.ratio_se;
        o.tail_units = c.units;
      }
    }
    if (o.passed && o.p50_ms > 0) lifetime_ = absl::Milliseconds(o.p50_ms);
    if (!throughput_ok) o.limit_ratio = std::max(o.limit_ratio, 1.01);
    o.health_score = o.limit_ratio;
    o.health_state = o.limit_ratio < 0.6    ? v1::HEALTH_STATE_HEALTHY
                     : o.limit_ratio < 0.8  ? v1::HEALTH_STATE_WARN
                     : o.limit_ratio < 0.95 ? v1::HEALTH_STATE_UNHEALTHY
                     : o.limit_ratio <= 1.0 ? v1::HEALTH_STATE_CRITICAL
                                            : v1::HEALTH_STATE_OVERLOADED;
    if (window_length != nullptr) *window_length = window;
    if (window_p50 != nullptr) {
      for (std::vector<double>& w : windows) {
        std::sort(w.begin(), w.end());
        window_p50->push_back(w.empty() ? 0 : w[w.size() / 2]);
      }
    }
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
  // Closed loop: n = ceil(rate * latency limit) requests outstanding from `start`, each
  // completion sending the next at once (a rejected one retries 1 ms later); no sends from
  // `end` on.
  template <typename Arrive, typename Collect>
  void RunClosedLoop(double rate, absl::Duration start, absl::Duration end, Arrive& arrive,
                     std::vector<SlotScheduler::Completion>& done, Collect& collect) {
    const int n = std::max(
        1, static_cast<int>(std::ceil(rate * absl::ToDoubleSeconds(profile_.slo.latency_limit))));
    std::priority_queue<absl::Duration, std::vector<absl::Duration>, std::greater<>> sends;
    for (int i = 0; i < n; ++i) sends.push(start);
    const auto resend = [&] {
      for (const SlotScheduler::Completion& c : done) sends.push(c.finish);
    };
    for (;;) {
      const std::optional<absl::Duration> next = scheduler_.NextEventTime();
      if (!sends.empty() && (!next || sends.top() <= *next)) {
        const absl::Duration t = sends.top();
        sends.pop();
        if (t >= end) break;
        if (arrive(next_id_++, t)) sends.push(t + absl::Milliseconds(1));
        resend();
        collect();
      } else if (next) {
        scheduler_.AdvanceTo(*next, &done);
        resend();
        collect();
      } else {
        break;
      }
    }
  }

  static constexpr absl::Duration kWindow = absl::Milliseconds(500);
  // The lead's steady span the runner may count in a step's tail (4 windows).
  static constexpr absl::Duration kLeadSpan = absl::Seconds(2);

  template <typename Config>
  static Config WithSeed(Config c, uint64_t seed) {
    c.perturbations.seed = seed;
    return c;
  }

  const Profile& profile_;
  const ModelVariant variant_;
  const bool generative_;
  SlotScheduler scheduler_;
  sim::TokenScheduler tokens_;
  absl::Duration lifetime_ = absl::ZeroDuration();  // p50 latency of the last passing step
  std::mt19937_64 arrivals_;
  std::mt19937_64 costs_;
  absl::Duration now_;
  uint64_t next_id_ = 0;
  worker::HealthAssessor assessor_;
};

// The search `name` over [lo, hi]; `part_seconds(rate)` is one step's measured seconds at
// `rate` (verified binary search's holds cover the horizon in such parts).
std::unique_ptr<Strategy> MakeStrategy(const std::string& name, double lo, double hi,
                                       std::function<double(double)> part_seconds = nullptr) {
  // The search holds its estimate over the horizon its truth holds over (--horizon_s), as a
  // test submitted with --sustain_horizon does.
  const double horizon_s = absl::GetFlag(FLAGS_horizon_s);
  if (name == "adaptive") {
    v1::AdaptiveStrategy c;
    c.set_min_qps(lo);
    c.set_max_qps(hi);
    c.set_confirm_best(absl::GetFlag(FLAGS_confirm_best));
    return *worker::AdaptiveStrategy::Create(c, horizon_s);
  }
  if (name == "verified_binary_search") {
    return std::make_unique<bench::VerifiedBinarySearch>(lo, hi, std::move(part_seconds),
                                                         horizon_s);
  }
  if (name == "binary_search") {
    v1::BinarySearchStrategy c;
    c.set_min_qps(lo);
    c.set_max_qps(hi);
    return *worker::BinarySearchStrategy::Create(c);
  }
  return nullptr;
}

// --- Held-out models (--generated=N) ------------------------------------------------------

// One search against one virtual model: the decisions, the steps, the virtual time.
struct SearchRun {
  Done done;
  double seconds = 0;
  int steps = 0;
  // Seconds of the final verification: the trailing steps the strategy marked as verifying
  // its estimate at one rate (the hold that ended the search; not the holds of a hold search
  // before it, which binary search is not given).
  double final_verification_s = 0;
  double final_verification_rate = 0;
  double warmup_s = 0;     // the first-step warmup phase
  double verifying_s = 0;  // every step marked as verifying, the final verification's too
  int verifying_steps = 0;
  std::vector<std::pair<double, double>> achieved;  // (rate, achieved) of every step
};

// The first step's warmup phase, as the runner has it: chunks of 10 s at the search's first
// rate, every window's median fed to the worker's WarmupDetector, until it finds the model
// warm or waited its cap. Returns the seconds it ran.
double WarmUpAt(VirtualModel& model, double rate) {
  worker::WarmupDetector detector({});
  absl::Duration watched;
  while (!detector.warm() && !detector.capped()) {
    std::vector<double> p50;
    absl::Duration window;
    model.Run(rate, absl::ZeroDuration(), absl::Seconds(10), &p50, &window);
    for (double ms : p50) {
      detector.Add(watched, window, ms);
      watched += window;
    }
  }
  return absl::ToDoubleSeconds(watched);
}

SearchRun RunSearch(VirtualModel& model, Strategy& search, absl::Duration lead, absl::Duration step,
                    bool warmup_phase, bool verbose) {
  SearchRun run;
  std::optional<StepOutcome> last;
  for (;;) {
    const Decision d = search.Next(last);
    if (const Done* finished = std::get_if<Done>(&d)) {
      run.done = *finished;
      return run;
    }
    const RunStep& next = std::get<RunStep>(d);
    if (warmup_phase && run.steps == 0) {
      run.warmup_s = WarmUpAt(model, next.rate_qps);
      run.seconds += run.warmup_s;
      if (verbose) std::printf("    warmup phase at %.2f: %.0f s\n", next.rate_qps, run.warmup_s);
    }
    const absl::Duration step_lead = lead == absl::ZeroDuration() ? lead : model.Lead(lead);
    const absl::Duration measured = model.Measured(step, next.rate_qps) * next.hold;
    last = model.Run(next.rate_qps, step_lead, measured);
    run.seconds += absl::ToDoubleSeconds(step_lead + measured);
    const bool same_hold = next.verification && next.rate_qps == run.final_verification_rate;
    const double step_s = absl::ToDoubleSeconds(step_lead + measured);
    run.final_verification_s =
        (same_hold ? run.final_verification_s : 0) + (next.verification ? step_s : 0);
    run.final_verification_rate = next.verification ? next.rate_qps : 0;
    run.verifying_s += next.verification ? step_s : 0;
    run.verifying_steps += next.verification ? 1 : 0;
    run.achieved.emplace_back(next.rate_qps, last->achieved_qps);
    ++run.steps;
    if (verbose) {
      std::printf(
          "    step %d: %.2f%s%s, %.0f s -> p99 %.1f ms (%.3f of the limit), tail %.2f+-%.2f of "
          "%lld (%d units)%s, %s\n",
          run.steps, next.rate_qps,
          next.hold > 1 ? absl::StrCat(" (hold ", next.hold, ")").c_str() : "",
          next.verification ? " verifying" : "", step_s, last->p99_ms, last->limit_ratio,
          last->tail_ratio, last->tail_ratio_se, static_cast<long long>(last->tail_samples),
          last->tail_units, last->backlog_rising ? " backlog rising" : "",
          last->passed ? "pass" : "FAIL");
    }
  }
}

// What one variant of the search is: the strategy and the client/judge deviations.
struct SearchVariant {
  std::string name;      // printed: adaptive, binary, ablation_<x>
  std::string strategy;  // adaptive or binary_search
  ModelVariant model;
  bool warmup_phase = true;  // the first step's warmup phase and each step's lead
};

std::vector<SearchVariant> Variants(const std::string& list) {
  std::vector<SearchVariant> out;
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    SearchVariant v{std::string(name), "adaptive", {.cold = true}};
    if (name == "binary") {
      v.strategy = "binary_search";
    } else if (name == "binary_verified") {
      v.strategy = "verified_binary_search";
    } else if (name == "no_warmup") {
      v.warmup_phase = false;
    } else if (name == "closed_loop") {
      v.model.closed_loop = true;
    } else if (name == "p99_only") {
      v.model.p99_only = true;
    } else if (name == "template") {
      v.model.template_cost = true;
    } else if (name == "no_batching_awareness") {
      v.model.window_evidence = false;
    } else if (name != "adaptive") {
      std::fprintf(stderr, "unknown variant %s\n", std::string(name).c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

// The estimate a variant reports: a closed loop offers no rate, so its estimate is the
// throughput its best pass achieved, less the share the search took off the best.
// Why a search ended, from its summary ("adaptive: <why> after N steps; ...").
std::string WhyEnded(const Done& done) {
  absl::string_view why = done.summary;
  if (const size_t colon = why.find(": "); colon != absl::string_view::npos) {
    why.remove_prefix(colon + 2);
  }
  return std::string(why.substr(0, why.find(" after ")));
}

// Whether the model's SLO hardly defines its capacity (sim::kFlatTailElasticity).
bool FlatTail(const sim::GeneratedModel& m) {
  return m.elasticity >= 0 && m.elasticity < sim::kFlatTailElasticity;
}

double EstimateOf(const SearchVariant& v, const SearchRun& run) {
  if (!v.model.closed_loop || run.done.best_pass_qps <= 0) return run.done.max_sustainable_qps;
  for (const auto& [rate, achieved] : run.achieved) {
    if (rate == run.done.best_pass_qps) {
      return achieved * run.done.max_sustainable_qps / run.done.best_pass_qps;
    }
  }
  return run.done.max_sustainable_qps;
}

// Runs f(i) for i in [0, n) on `threads` threads.
template <typename F>
void ParallelFor(int n, int threads, F f) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) f(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

struct Agreement {
  double mae = 0, bias = 0, p95 = 0, over5 = 0, loa_low = 0, loa_high = 0, r2 = 0, max_abs = 0;
};

// Errors in percent of the truth; r2 of log(estimate) on log(truth).
Agreement Agree(const std::vector<double>& estimates, const std::vector<double>& truths) {
  Agreement a;
  std::vector<double> errors, abs_errors;
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < estimates.size(); ++i) {
    const double e = 100 * (estimates[i] - truths[i]) / truths[i];
    errors.push_back(e);
    abs_errors.push_back(std::abs(e));
    a.over5 += e > 5 ? 1 : 0;
    const double x = std::log(truths[i]), y = std::log(std::max(estimates[i], 1e-6));
    sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
  }
  const double n = static_cast<double>(errors.size());
  if (n == 0) return a;
  for (double e : errors) a.bias += e / n;
  for (double e : abs_errors) a.mae += e / n;
  double var = 0;
  for (double e : errors) var += (e - a.bias) * (e - a.bias) / std::max(1.0, n - 1);
  a.loa_low = a.bias - 1.96 * std::sqrt(var);
  a.loa_high = a.bias + 1.96 * std::sqrt(var);
  std::sort(abs_errors.begin(), abs_errors.end());
  a.p95 = abs_errors[std::min(abs_errors.size() - 1, static_cast<size_t>(std::ceil(0.95 * n)) - 1)];
  a.max_abs = abs_errors.back();
  a.over5 = 100 * a.over5 / n;
  const double cov = sxy - sx * sy / n, vx = sxx - sx * sx / n, vy = syy - sy * sy / n;
  a.r2 = vx > 0 && vy > 0 ? cov * cov / (vx * vy) : 0;
  return a;
}

// Writes each model as DIR/<name>.json (a profile the simulated predictor loads) and one
// line per model to DIR/models.tsv: name, truth_rps, min_qps, max_qps, binding, description,
// elasticity (sim::TruthElasticity).
int WriteProfiles(const std::vector<sim::GeneratedModel>& models, const std::string& dir) {
  std::FILE* index = std::fopen((dir + "/models.tsv").c_str(), "w");
  if (index == nullptr) {
    std::fprintf(stderr, "cannot write %s/models.tsv\n", dir.c_str());
    return 1;
  }
  for (const sim::GeneratedModel& m : models) {
    absl::StatusOr<std::string> json = sim::BatchProfileToJson(m.profile);
    std::FILE* f = std::fopen((dir + "/" + m.profile.name + ".json").c_str(), "w");
    if (!json.ok() || f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", m.profile.name.c_str());
      return 1;
    }
    std::fputs(json->c_str(), f);
    std::fclose(f);
    std::fprintf(index, "%s\t%.17g\t%.17g\t%.17g\t%s\t%s\t%.6g\n", m.profile.name.c_str(),
                 m.truth_rps, m.min_qps, m.max_qps, m.binding.c_str(), m.description.c_str(),
                 m.elasticity);
  }
  std::fclose(index);
  return 0;
}

// The models WriteProfiles wrote to `dir`, at most `n` of them (fewer when the index is
// shorter); the seed of each is the number in its name ("gen-<seed>"). An index written
// before the elasticity column has its models' elasticity computed here (`options`).

absl::StatusOr<std::vector<sim::GeneratedModel>> ReadModels(const std::string& dir, int n,
                                                            const sim::GeneratorOptions& options,
                                                            int threads) {
  std::ifstream index(dir + "/models.tsv");
  if (!index) return absl::NotFoundError(absl::StrCat("cannot read ", dir, "/models.tsv"));
  std::vector<sim::GeneratedModel> models;
  std::string line;
  while (static_cast<int>(models.size()) < n && std::getline(index, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    sim::GeneratedModel m;
    if (f.size() < 6 || !absl::StartsWith(f[0], "gen-") ||
        !absl::SimpleAtoi(f[0].substr(4), &m.seed) || !absl::SimpleAtod(f[1], &m.truth_rps) ||
        !absl::SimpleAtod(f[2], &m.min_qps) || !absl::SimpleAtod(f[3], &m.max_qps)) {
      return absl::InvalidArgumentError(absl::StrCat(dir, "/models.tsv: bad line: ", line));
    }
    absl::StatusOr<Profile> profile = sim::LoadProfile(absl::StrCat(dir, "/", f[0], ".json"));
    if (!profile.ok()) return profile.status();
    m.profile = *std::move(profile);
    m.binding = f[4];
    m.description = f[5];
    if (f.size() < 7 || !absl::SimpleAtod(f[6], &m.elasticity)) m.elasticity = -1;
    models.push_back(std::move(m));
  }
  std::atomic<bool> failed = false;
  ParallelFor(static_cast<int>(models.size()), threads, [&](int i) {
    sim::GeneratedModel& m = models[i];
    if (m.elasticity >= 0) return;
    absl::StatusOr<double> e = sim::TruthElasticity(m.profile, m.truth_rps, options);
    if (e.ok()) m.elasticity = *e;
    failed = failed || !e.ok();
  });
  if (failed) return absl::InternalError(absl::StrCat(dir, ": cannot evaluate an elasticity"));
  return models;
}

// Each model's truth computed again from `horizons` independent horizons, against the
// model's own truth: how far a search that verified perfectly over that many horizons would
// land. Prints a line per model and the agreement (all models, and without flat tails).
int PrintTruthNoise(const std::vector<sim::GeneratedModel>& models,
                    const sim::GeneratorOptions& options, int horizons, int threads) {
  const int n = static_cast<int>(models.size());
  std::vector<double> again(n), truths(n);
  std::atomic<bool> failed = false;
  ParallelFor(n, threads, [&](int i) {
    sim::GroundTruthOptions o;
    o.settle = options.settle;
    o.measure = options.horizon;
    o.replications = horizons;
    o.seed = (models[i].seed * 7919 + 104729) % 1000000;
    Profile profile = models[i].profile;
    profile.batch.perturbations.seed += 1000003;  // the model's own randomness drawn again
    absl::StatusOr<sim::GroundTruth> t = sim::ComputeGroundTruth(profile, profile.slo, o);
    failed = failed || !t.ok();
    again[i] = t.ok() ? t->max_sustainable_rps : 0;
    truths[i] = models[i].truth_rps;
    std::printf("  truth again %s: truth %.2f, from %d horizon(s) %.2f (%+.1f%%)%s\n",
                models[i].profile.name.c_str(), truths[i], horizons, again[i],
                100 * (again[i] - truths[i]) / truths[i],
                FlatTail(models[i]) ? " (flat tail)" : "");
  });
  if (failed) return 1;
  std::vector<double> kept_again, kept_truths;
  for (int i = 0; i < n; ++i) {
    if (FlatTail(models[i])) continue;
    kept_again.push_back(again[i]);
    kept_truths.push_back(truths[i]);
  }
  const Agreement a = Agree(again, truths);
  const Agreement c = kept_truths.empty() ? Agreement{} : Agree(kept_again, kept_truths);
  std::printf(
      "truth_noise_horizons=%d truth_noise_mae_pct=%.2f truth_noise_p95_abs_err_pct=%.2f "
      "truth_noise_over5_pct=%.1f truth_noise_conditioned_mae_pct=%.2f "
      "truth_noise_conditioned_p95_abs_err_pct=%.2f truth_noise_conditioned_over5_pct=%.1f "
      "models=%d\n",
      horizons, a.mae, a.p95, a.over5, c.mae, c.p95, c.over5, n);
  return 0;
}

// --retruth: each model's truth from `options`, models.tsv rewritten (the old one kept).
int Retruth(std::vector<sim::GeneratedModel>& models, const sim::GeneratorOptions& options,
            const std::string& dir, int threads) {
  std::vector<double> before;
  for (const sim::GeneratedModel& m : models) before.push_back(m.truth_rps);
  std::atomic<bool> failed = false;
  // A truth already judged on options.min_judged_requests at its rate is kept: computing it
  // again would only draw it anew on the same yardstick.
  const double judged_per_rps = absl::ToDoubleSeconds(options.horizon) * options.replications;
  ParallelFor(static_cast<int>(models.size()), threads, [&](int i) {
    if (models[i].truth_rps * judged_per_rps >= options.min_judged_requests) return;
    failed = failed || !sim::RecomputeTruth(models[i], options).ok();
  });
  if (failed) {
    std::fprintf(stderr, "%s: cannot compute a truth again\n", dir.c_str());
    return 1;
  }
  for (size_t i = 0; i < models.size(); ++i) {
    std::printf("  retruth %s: %.2f -> %.2f (%+.1f%%)%s\n", models[i].profile.name.c_str(),
                before[i], models[i].truth_rps, 100 * (models[i].truth_rps / before[i] - 1),
                FlatTail(models[i]) ? " (flat tail)" : "");
  }
  const Agreement a = Agree(before, [&] {
    std::vector<double> t;
    for (const sim::GeneratedModel& m : models) t.push_back(m.truth_rps);
    return t;
  }());
  std::printf("retruth_models=%zu old_vs_new_mae_pct=%.2f old_vs_new_p95_abs_err_pct=%.2f\n",
              models.size(), a.mae, a.p95);
  if (std::rename((dir + "/models.tsv").c_str(), (dir + "/models.tsv.before_retruth").c_str()) !=
      0) {
    std::fprintf(stderr, "cannot keep %s/models.tsv\n", dir.c_str());
    return 1;
  }
  // A truth now outside the generator's capacity range is dropped, as GenerateModel would
  // have drawn again instead (a flat tail near the limit at every rate can land there).
  std::vector<sim::GeneratedModel> kept;
  for (sim::GeneratedModel& m : models) {
    if (m.truth_rps >= options.min_capacity_rps && m.truth_rps <= options.max_capacity_rps) {
      kept.push_back(std::move(m));
    } else {
      std::printf("  retruth dropped %s: truth %.3g req/s outside [%g, %g]\n",
                  m.profile.name.c_str(), m.truth_rps, options.min_capacity_rps,
                  options.max_capacity_rps);
    }
  }
  return WriteProfiles(kept, dir);
}

// The models to search: read from --models_dir, else generated from seed0 on.
absl::StatusOr<std::vector<sim::GeneratedModel>> LoadModels(int n, uint64_t seed0,
                                                            const sim::GeneratorOptions& options,
                                                            int threads) {
  if (const std::string dir = absl::GetFlag(FLAGS_models_dir); !dir.empty()) {
    return ReadModels(dir, n, options, threads);
  }
  std::vector<sim::GeneratedModel> models(n);
  ParallelFor(n, threads, [&](int i) {
    absl::StatusOr<sim::GeneratedModel> m = sim::GenerateModel(seed0 + i, options);
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", std::string(m.status().message()).c_str());
      std::exit(1);
    }
    models[i] = *std::move(m);
  });
  return models;
}

// One line per model of a variant's searches (every variant's with --verbose).
void PrintModelLine(const SearchVariant& v, const sim::GeneratedModel& m, const SearchRun& run,
                    double estimate) {
  std::printf(
      "  %s %s: truth %.2f, range [%.2f, %.2f], estimate %.2f (%+.1f%%), %d steps, "
      "%.0f s (holds %.0f s, final %.0f s)%s%s\n",
      v.name.c_str(), m.profile.name.c_str(), m.truth_rps, m.min_qps, m.max_qps, estimate,
      100 * (estimate - m.truth_rps) / m.truth_rps, run.steps, run.seconds,
      run.verifying_s - run.final_verification_s, run.final_verification_s,
      run.done.at_least    ? " (at least)"
      : run.done.converged ? ""
                           : absl::StrCat(" (unconverged: ", WhyEnded(run.done), ")").c_str(),
      FlatTail(m) ? absl::StrFormat(" (flat tail: elasticity %.2f)", m.elasticity).c_str() : "");
}

// The final line's figures of one variant: the held-out ones for adaptive (with the same
// figures without the flat tails, whose SLO hardly defines a capacity), binary's MAE, or an
// ablation's.
void AppendVariantFigures(const SearchVariant& v, const std::vector<sim::GeneratedModel>& models,
                          const std::vector<double>& estimates, const Agreement& a,
                          std::string* line) {
  if (v.name == "binary" || v.name == "binary_verified") {
    absl::StrAppendFormat(line, "%s_mae_pct=%.2f %s_over5_pct=%.1f ", v.name, a.mae, v.name,
                          a.over5);
    return;
  }
  if (v.name != "adaptive") {
    absl::StrAppendFormat(line, "ablation_%s_mae_pct=%.2f ", v.name, a.mae);
    return;
  }
  absl::StrAppendFormat(line,
                        "heldout_mae_pct=%.2f heldout_p95_abs_err_pct=%.2f "
                        "heldout_over5_pct=%.1f heldout_bias_pct=%.2f heldout_loa_low_pct=%.1f "
                        "heldout_loa_high_pct=%.1f heldout_r2=%.3f ",
                        a.mae, a.p95, a.over5, a.bias, a.loa_low, a.loa_high, a.r2);
  std::vector<double> kept_estimates, kept_truths;
  for (size_t i = 0; i < models.size(); ++i) {
    if (FlatTail(models[i])) continue;
    kept_estimates.push_back(estimates[i]);
    kept_truths.push_back(models[i].truth_rps);
  }
  if (kept_truths.empty()) return;
  const Agreement c = Agree(kept_estimates, kept_truths);
  const double flat = static_cast<double>(models.size() - kept_truths.size());
  absl::StrAppendFormat(line,
                        "heldout_flat_tail_pct=%.1f heldout_conditioned_mae_pct=%.2f "
                        "heldout_conditioned_p95_abs_err_pct=%.2f "
                        "heldout_conditioned_over5_pct=%.1f ",
                        100.0 * flat / static_cast<double>(models.size()), c.mae, c.p95, c.over5);
}

// Runs one variant's search on every model, prints its lines and appends its figures.
std::vector<SearchRun> RunVariant(const SearchVariant& v,
                                  const std::vector<sim::GeneratedModel>& models, int threads,
                                  std::string* line) {
  const int n = static_cast<int>(models.size());
  const bool verbose = absl::GetFlag(FLAGS_verbose);
  const absl::Duration lead = absl::Seconds(absl::GetFlag(FLAGS_lead_s));
  const absl::Duration step = absl::Seconds(absl::GetFlag(FLAGS_step_s));
  std::vector<SearchRun> out(n);
  ParallelFor(n, threads, [&](int i) {
    const sim::GeneratedModel& m = models[i];
    VirtualModel model(m.profile, m.seed, v.model);
    std::unique_ptr<Strategy> search = MakeStrategy(
        v.strategy, m.min_qps, m.max_qps,
        [&model, step](double rate) { return absl::ToDoubleSeconds(model.Measured(step, rate)); });
    out[i] = RunSearch(model, *search, v.warmup_phase ? lead : absl::ZeroDuration(), step,
                       v.warmup_phase, verbose && threads == 1);
  });
  std::vector<double> estimates, truths;
  double seconds = 0, warmup = 0, verifying = 0, final_verification = 0;
  for (int i = 0; i < n; ++i) {
    estimates.push_back(EstimateOf(v, out[i]));
    truths.push_back(models[i].truth_rps);
    seconds += out[i].seconds;
    warmup += out[i].warmup_s;
    verifying += out[i].verifying_s;
    final_verification += out[i].final_verification_s;
    if (verbose || v.name == "adaptive") {
      PrintModelLine(v, models[i], out[i], estimates[i]);
      if (verbose) {
        std::printf("    %s\n    %s\n", models[i].description.c_str(), out[i].done.summary.c_str());
      }
    }
  }
  const Agreement a = Agree(estimates, truths);
  std::printf(
      "variant=%s models=%d mae_pct=%.2f bias_pct=%.2f p95_abs_err_pct=%.2f "
      "over5_pct=%.1f loa=[%.1f, %.1f] r2=%.3f max_abs_err_pct=%.1f time_s=%.0f\n",
      v.name.c_str(), n, a.mae, a.bias, a.p95, a.over5, a.loa_low, a.loa_high, a.r2, a.max_abs,
      seconds);
  std::printf(
      "variant=%s time_s: warmup %.0f, search steps %.0f, holds before the final %.0f, final "
      "verification %.0f\n",
      v.name.c_str(), warmup, seconds - warmup - verifying, verifying - final_verification,
      final_verification);
  AppendVariantFigures(v, models, estimates, a, line);
  return out;
}

// repeat_cv_pct: the first `repeats` models searched 5 more times with other seeds.
void AppendRepeatCv(const std::vector<sim::GeneratedModel>& models, int repeats, int threads,
                    std::string* line) {
  const absl::Duration lead = absl::Seconds(absl::GetFlag(FLAGS_lead_s));
  const absl::Duration step = absl::Seconds(absl::GetFlag(FLAGS_step_s));
  std::vector<double> cvs(repeats);
  ParallelFor(repeats, threads, [&](int i) {
    std::vector<double> estimates;
    for (int r = 1; r <= 5; ++r) {
      VirtualModel model(models[i].profile, models[i].seed * 31 + r, {.cold = true});
      std::unique_ptr<Strategy> search =
          MakeStrategy("adaptive", models[i].min_qps, models[i].max_qps);
      estimates.push_back(RunSearch(model, *search, lead, step, true,
                                    threads == 1 && r == absl::GetFlag(FLAGS_repeat_verbose))
                              .done.max_sustainable_qps);
    }
    cvs[i] = worker::CoefficientOfVariation(estimates);
    std::printf(
        "  repeat %s: truth %.2f, estimates %s: cv %.1f%%%s\n", models[i].profile.name.c_str(),
        models[i].truth_rps,
        absl::StrJoin(estimates, " ",
                      [](std::string* out, double e) { absl::StrAppendFormat(out, "%.2f", e); })
            .c_str(),
        100 * cvs[i], FlatTail(models[i]) ? " (flat tail)" : "");
  });
  double mean = 0, conditioned = 0;
  int kept = 0;
  for (int i = 0; i < repeats; ++i) {
    mean += 100 * cvs[i] / repeats;
    if (FlatTail(models[i])) continue;
    conditioned += 100 * cvs[i];
    ++kept;
  }
  absl::StrAppendFormat(line, "repeat_cv_pct=%.2f ", mean);
  if (kept > 0) absl::StrAppendFormat(line, "repeat_conditioned_cv_pct=%.2f ", conditioned / kept);
}

// heldout_time_vs_binary: the adaptive search's time over binary search's given the same
// final verification (binary_verified: each of its holds charged the seconds of the adaptive
// search's final verification on that model, or its own hold's where the adaptive search
// ended without one). time_vs_binary_one_hold: over plain binary search plus one such
// charge, as if its estimate always held.
void AppendTimeVsBinary(const std::map<std::string, std::vector<SearchRun>>& runs, int n,
                        std::string* line) {
  if (!runs.count("adaptive")) return;
  double adaptive = 0, verified = 0, one_hold = 0;
  int holds = 0;
  for (int i = 0; i < n; ++i) {
    const SearchRun& a = runs.at("adaptive")[i];
    adaptive += a.seconds;
    if (runs.count("binary")) one_hold += runs.at("binary")[i].seconds + a.final_verification_s;
    if (runs.count("binary_verified")) {
      const SearchRun& b = runs.at("binary_verified")[i];
      const double own_hold_s = b.verifying_steps > 0 ? b.verifying_s / b.verifying_steps : 0;
      const double charge = a.final_verification_s > 0 ? a.final_verification_s : own_hold_s;
      verified += b.seconds - b.verifying_s + b.verifying_steps * charge;
      holds += b.verifying_steps;
    }
  }
  if (verified > 0) {
    absl::StrAppendFormat(line, "heldout_time_vs_binary=%.2f binary_verified_holds_mean=%.2f ",
                          adaptive / verified, static_cast<double>(holds) / n);
  }
  if (one_hold > 0)
    absl::StrAppendFormat(line, "time_vs_binary_one_hold=%.2f ", adaptive / one_hold);
}

int RunGenerated() {
  uint64_t seed0 = absl::GetFlag(FLAGS_gen_seed);
  if (seed0 == 0) seed0 = static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()) % 1000000000);
  const int threads = absl::GetFlag(FLAGS_threads);
  if (absl::GetFlag(FLAGS_models_dir).empty()) {
    std::printf("held-out models: %d from gen_seed=%llu, horizon %.0f s\n",
                absl::GetFlag(FLAGS_generated), static_cast<unsigned long long>(seed0),
                absl::GetFlag(FLAGS_horizon_s));
  }
  sim::GeneratorOptions options;
  options.horizon = absl::Seconds(absl::GetFlag(FLAGS_horizon_s));
  options.replications = absl::GetFlag(FLAGS_gen_replications);
  options.min_judged_requests = absl::GetFlag(FLAGS_gen_min_judged_requests);
  absl::StatusOr<std::vector<sim::GeneratedModel>> loaded =
      LoadModels(absl::GetFlag(FLAGS_generated), seed0, options, threads);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  std::vector<sim::GeneratedModel>& models = *loaded;
  const int n = static_cast<int>(models.size());
  if (!absl::GetFlag(FLAGS_models_dir).empty() && n > 0) {
    // The draw's seed is its first model's (WriteProfiles names each "gen-<seed0 + i>"), not
    // the flag's or the clock's: the final line names the models it ran.
    seed0 = models[0].seed;
    for (const sim::GeneratedModel& m : models) seed0 = std::min(seed0, m.seed);
    std::printf("held-out models: %d read from %s (gen_seed=%llu), horizon %.0f s\n", n,
                absl::GetFlag(FLAGS_models_dir).c_str(), static_cast<unsigned long long>(seed0),
                absl::GetFlag(FLAGS_horizon_s));
  }
  if (const std::string dir = absl::GetFlag(FLAGS_models_dir);
      !dir.empty() && absl::GetFlag(FLAGS_retruth)) {
    return Retruth(models, options, dir, threads);
  }
  if (const std::string dir = absl::GetFlag(FLAGS_write_profiles); !dir.empty()) {
    return WriteProfiles(models, dir);
  }
  if (const int horizons = absl::GetFlag(FLAGS_truth_noise); horizons > 0) {
    return PrintTruthNoise(models, options, horizons, threads);
  }
  std::string line;
  std::map<std::string, std::vector<SearchRun>> runs;
  for (const SearchVariant& v : Variants(absl::GetFlag(FLAGS_variants))) {
    runs[v.name] = RunVariant(v, models, threads, &line);
  }
  AppendTimeVsBinary(runs, n, &line);
  if (const int repeats = std::min(n, absl::GetFlag(FLAGS_repeat_models)); repeats > 0) {
    AppendRepeatCv(models, repeats, threads, &line);
  }
  std::printf("%sgen_seed=%llu models=%d\n", line.c_str(), static_cast<unsigned long long>(seed0),
              n);
  return 0;
}

int Main() {
  if (absl::GetFlag(FLAGS_generated) > 0) return RunGenerated();
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
  // The range: the accuracy benchmark's [saturation / 20, 1.5 x saturation], or a new user's
  // wide one: min 5 req/s (at most half the truth), max 20 x the truth.
  const std::string range = absl::GetFlag(FLAGS_range);
  const bool wide = range == "wide";
  double lo = wide ? std::min(5.0, truth / 2) : gt->saturation_rps / 20;
  double hi = wide ? truth * 20 : gt->saturation_rps * 1.5;
  if (range != "wide" && range != "saturation") {
    const std::vector<std::string> parts = absl::StrSplit(range, ':');
    if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &lo) || !absl::SimpleAtod(parts[1], &hi) ||
        !(lo > 0) || !(hi > lo)) {
      std::fprintf(stderr, "--range must be saturation, wide or LO:HI with 0 < LO < HI\n");
      return 2;
    }
  }
  const absl::Duration lead = absl::Seconds(absl::GetFlag(FLAGS_lead_s));
  const absl::Duration step = absl::Seconds(absl::GetFlag(FLAGS_step_s));
  if (const double rate = absl::GetFlag(FLAGS_fixed_rate); rate > 0) {
    VirtualModel model(*profile, static_cast<uint64_t>(absl::GetFlag(FLAGS_first_seed)),
                       {.cold = absl::GetFlag(FLAGS_cold)});
    double over = 0, requests = 0;
    int failed = 0;
    const int steps = absl::GetFlag(FLAGS_seeds);
    for (int i = 0; i < steps; ++i) {
      const StepOutcome o = model.Run(rate, model.Lead(lead), model.Measured(step, rate));
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
    const bool cold = absl::GetFlag(FLAGS_cold);
    VirtualModel model(*profile, static_cast<uint64_t>(seed), {.cold = cold});
    std::unique_ptr<Strategy> search = MakeStrategy(strategy, lo, hi);
    const SearchRun run =
        RunSearch(model, *search, lead, step, /*warmup_phase=*/cold, absl::GetFlag(FLAGS_verbose));
    const Done& done = run.done;
    const double seconds = run.seconds;
    const int steps = run.steps;
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
