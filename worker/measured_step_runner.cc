// Warmup, steady state, per-window health and judging of one step. See
// measured_step_runner.h.
#include "worker/measured_step_runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/histogram.h"
#include "worker/proto_time.h"
#include "worker/tail_confidence.h"
#include "worker/tail_pooling.h"

namespace vanguard::worker {
namespace {

double LimitMs(const google::protobuf::Duration& d) {
  return absl::ToDoubleMilliseconds(FromProtoDuration(d));
}

// `d` rounded up to a whole number of `unit`s.
absl::Duration RoundUp(absl::Duration d, absl::Duration unit) {
  return unit * std::ceil(absl::FDivDuration(d, unit));
}

bool Cancelled(const CancellationToken* cancel) {
  return cancel != nullptr && cancel->IsCancelled();
}

// Means of the gauges over the measured windows (one scrape each; a failed scrape is a
// missing sample).
struct GaugeMeans {
  int windows = 0;
  int queue_samples = 0, gpu_samples = 0, memory_samples = 0;
  double queue = 0, gpu = 0, memory = 0;
};

GaugeMeans MeanGauges(const std::vector<GaugeReading>& readings) {
  GaugeMeans m;
  m.windows = static_cast<int>(readings.size());
  for (const GaugeReading& g : readings) {
    if (g.memory_bytes) {
      ++m.memory_samples;
      m.memory += *g.memory_bytes;
    }
    if (g.queue_depth) {
      ++m.queue_samples;
      m.queue += *g.queue_depth;
    }
    if (g.gpu_utilization) {
      ++m.gpu_samples;
      m.gpu += *g.gpu_utilization;
    }
  }
  if (m.queue_samples > 0) m.queue /= m.queue_samples;
  if (m.gpu_samples > 0) m.gpu /= m.gpu_samples;
  if (m.memory_samples > 0) m.memory /= m.memory_samples;
  return m;
}

// The percentile limits whose tails are judged: p99 latency, TTFT and inter-token, and the
// p50 latency (its tail is the share over the limit against the half a median allows).
enum TailSource {
  kLatencyTail = 0,
  kTtftTail = 1,
  kInterTokenTail = 2,
  kP50Tail = 3,
  kTailSources = 4
};
// The fraction of requests each source's limit lets exceed it.
constexpr double kTailAllowed[kTailSources] = {kTailAllowedFraction, kTailAllowedFraction,
                                               kTailAllowedFraction, 0.5};

}  // namespace

MeasuredStepRunner::MeasuredStepRunner(ReplayerClient* executor, StepJudge* judge,
                                       HealthAssessor* assessor, MetricsCollector* collector,
                                       vanguard::v1::Slo slo, MeasuredStepOptions options,
                                       ReplicaGaugeCollector* replica_gauges)
    : executor_(executor),
      judge_(judge),
      assessor_(assessor),
      collector_(collector),
      replica_gauges_(replica_gauges),
      slo_(std::move(slo)),
      options_(options) {}

double MeasuredStepRunner::Goodput(const vanguard::v1::StepResult& r, double p99_limit_ms) {
  if (r.scheduled() <= 0) return 0;
  if (r.good() > 0 || r.goodput() > 0) return r.goodput();
  absl::StatusOr<LatencyHistogram> h = LatencyHistogram::Deserialize(r.latency_histogram());
  if (!h.ok() || h->count() == 0) return 0;
  // The largest percentile at or under the limit, by bisection on the percentile.
  const double limit_us = p99_limit_ms * 1000;
  if (h->Percentile(100) <= limit_us) {
    return std::min(1.0, static_cast<double>(r.completed()) / static_cast<double>(r.scheduled()));
  }
  double lo = 0, hi = 100;
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    (h->Percentile(mid) <= limit_us ? lo : hi) = mid;
  }
  return std::min(
      1.0, lo / 100 * static_cast<double>(r.completed()) / static_cast<double>(r.scheduled()));
}

MeasuredStepRunner::TailExceedance MeasuredStepRunner::TailOf(const std::string& histogram,
                                                              double limit_ms, double allowed) {
  if (limit_ms <= 0 || histogram.empty() || !(allowed > 0)) return {};
  absl::StatusOr<LatencyHistogram> h = LatencyHistogram::Deserialize(histogram);
  if (!h.ok() || h->count() == 0) return {};
  return {static_cast<double>(h->CountAbove(limit_ms * 1000)) / static_cast<double>(h->count()) /
              allowed,
          h->count()};
}

bool MeasuredStepRunner::LatencyRising(const std::vector<vanguard::v1::StepWindow>& windows,
                                       size_t first) {
  std::deque<double> mean_ms;
  for (size_t i = first; i < windows.size(); ++i) {
    if (windows[i].warmup() || windows[i].completed() == 0) continue;
    mean_ms.push_back(windows[i].latency().mean_ms());
  }
  return mean_ms.size() >= 4 &&
         SteadyStateDetector::Trending(mean_ms, kRisingLatencyDrift, /*rising_only=*/true);
}

WindowSignals MeasuredStepRunner::SignalsOf(const vanguard::v1::WindowMetrics& w,
                                            const GaugeReading& gauges) const {
  WindowSignals s;
  s.p99_ms = w.latency().p99_ms();
  s.error_rate = w.scheduled() > 0 ? std::clamp(static_cast<double>(w.errors() + w.timeouts()) /
                                                    static_cast<double>(w.scheduled()),
                                                0.0, 1.0)
                                   : 0;
  s.offered_qps = w.offered_qps();
  s.achieved_qps = w.achieved_qps();
  if (options_.closed_loop) s.offered_qps = s.achieved_qps;  // nothing is offered
  s.gpu_utilization = gauges.gpu_utilization;
  s.queue_depth = gauges.queue_depth;
  if (w.has_ttft() && w.ttft().p99_ms() > 0) s.ttft_p99_ms = w.ttft().p99_ms();
  if (w.has_inter_chunk() && w.inter_chunk().p99_ms() > 0) {
    s.inter_token_p99_ms = w.inter_chunk().p99_ms();
  }
  return s;
}

vanguard::v1::StepWindow MeasuredStepRunner::RecordWindow(const vanguard::v1::WindowMetrics& w,
                                                          bool settle, absl::Time start,
                                                          GaugeReading* gauges_out) {
  vanguard::v1::StepWindow out;
  out.set_warmup(settle || w.warmup());
  *out.mutable_start_time() = ToProtoTimestamp(start);
  out.set_offered_qps(w.offered_qps());
  out.set_achieved_qps(w.achieved_qps());
  *out.mutable_latency() = w.latency();
  out.set_scheduled(w.scheduled());
  out.set_sent(w.sent());
  out.set_completed(w.completed());
  out.set_errors(w.errors());
  out.set_timeouts(w.timeouts());
  out.set_dropped(w.dropped());
  out.set_censored(w.censored());
  *out.mutable_ttft() = w.ttft();
  *out.mutable_inter_token() = w.inter_chunk();
  GaugeReading gauges;
  if (collector_ != nullptr) gauges = collector_->Scrape();
  if (gauges.gpu_utilization) out.set_gpu_utilization(*gauges.gpu_utilization);
  if (gauges.queue_depth) out.set_queue_depth(*gauges.queue_depth);
  if (gauges.replicas) out.set_replicas(*gauges.replicas);
  if (!out.warmup()) {
    const WindowSignals s = SignalsOf(w, gauges);
    const WindowAssessment a = assessor_->Observe(s);
    out.set_health_score(a.score);
    out.set_health_state(a.state);
  }
  *gauges_out = gauges;
  return out;
}

namespace {

// What the limits beyond the judge's read: the scraped gauges (means over the measured
// windows) and, for streams, TTFT and inter-token p99 over the whole measured part; each feeds
// the limit ratio and a breach fails the step. The tail is the worst p99 tail (over the
// measured part only; see "Tail evidence") and which quantity it is.
struct LimitReading {
  double limit_ratio = 0;
  std::vector<std::string> breaches;
  bool other_breach = false;  // a breach of a limit that is not a p99 tail
  MeasuredStepRunner::TailExceedance tail;
  TailSource tail_source = kLatencyTail;
};

LimitReading ReadLimits(const vanguard::v1::Slo& slo, const vanguard::v1::StepResult& result,
                        const GaugeMeans& gauges, double judged_worst_ratio,
                        const double (&tail_limit_ms)[kTailSources]) {
  const double ttft_limit_ms = tail_limit_ms[kTtftTail];
  const double inter_limit_ms = tail_limit_ms[kInterTokenTail];
  struct Limit {
    bool applies;
    double measured;
    double limit;
    std::string breach;
    const std::string* histogram;  // the samples behind a p99 limit; null for gauges
    TailSource source;
  };
  const Limit limits[] = {
      {slo.max_queue_depth() > 0 && gauges.queue_samples > 0, gauges.queue, slo.max_queue_depth(),
       absl::StrFormat("queue mean %.2f > %g", gauges.queue, slo.max_queue_depth()), nullptr,
       kLatencyTail},
      {slo.max_gpu_utilization() > 0 && gauges.gpu_samples > 0, gauges.gpu,
       slo.max_gpu_utilization(),
       absl::StrFormat("GPU utilization %.2f > %g", gauges.gpu, slo.max_gpu_utilization()), nullptr,
       kLatencyTail},
      {ttft_limit_ms > 0 && result.has_ttft(), result.ttft().p99_ms(), ttft_limit_ms,
       absl::StrFormat("TTFT p99 %.1f ms > %g ms", result.ttft().p99_ms(), ttft_limit_ms),
       &result.ttft_histogram(), kTtftTail},
      {inter_limit_ms > 0 && result.has_inter_chunk(), result.inter_chunk().p99_ms(),
       inter_limit_ms,
       absl::StrFormat("inter-token p99 %.1f ms > %g ms", result.inter_chunk().p99_ms(),
                       inter_limit_ms),
       &result.inter_chunk_histogram(), kInterTokenTail},
  };
  LimitReading r;
  r.limit_ratio = judged_worst_ratio;
  r.tail = MeasuredStepRunner::TailOf(result.latency_histogram(), tail_limit_ms[kLatencyTail]);
  // The judge checked the p50 limit itself (a breach fails the step there); its tail is the
  // evidence the strategies pool when it is the worse one.
  if (const MeasuredStepRunner::TailExceedance p50 = MeasuredStepRunner::TailOf(
          result.latency_histogram(), tail_limit_ms[kP50Tail], kTailAllowed[kP50Tail]);
      p50.samples > 0 && p50.ratio > r.tail.ratio) {
    r.tail = p50;
    r.tail_source = kP50Tail;
  }
  for (const Limit& l : limits) {
    if (!l.applies) continue;
    r.limit_ratio = std::max(r.limit_ratio, l.measured / l.limit);
    if (l.measured > l.limit) {
      r.breaches.push_back(l.breach);
      if (l.histogram == nullptr) r.other_breach = true;
    }
    if (l.histogram != nullptr) {
      const MeasuredStepRunner::TailExceedance t =
          MeasuredStepRunner::TailOf(*l.histogram, l.limit);
      if (t.samples > 0 && t.ratio > r.tail.ratio) {
        r.tail = t;
        r.tail_source = l.source;
      }
    }
  }
  return r;
}

}  // namespace

// One Run's state: the plan (Plan), the detectors, and what has been recorded so far.
struct MeasuredStepRunner::StepRun {
  StepRun(vanguard::v1::RunStepRequest r, bool first, CancellationToken* c,
          const std::function<void(const vanguard::v1::StepWindow&)>& w, double h)
      : request(std::move(r)), first_step(first), cancel(c), on_window(w), hold(h) {}

  vanguard::v1::RunStepRequest request;
  const bool first_step;
  CancellationToken* const cancel;
  const std::function<void(const vanguard::v1::StepWindow&)>& on_window;
  const double hold;

  // The plan.
  double rate = 0;
  double p99_limit_ms = 0;
  absl::Duration warmup;    // the request's fixed warmup
  absl::Duration window;    // every call's window length (zero: the replayer's default)
  absl::Duration measured;  // the measured part
  absl::Duration lead;      // the first call's lead
  absl::Duration cap;       // settle cap (SettleCap may extend it on the first step)
  absl::Duration span;      // the drift test's span, leading a measured call after settling
  bool settled = false;     // steady-state detection runs (see the header)
  SteadyStateOptions steady;

  std::optional<SteadyStateDetector> detector;
  std::optional<WarmupDetector> model_warmup;  // the first step, detection on
  absl::Duration watched;                      // settle time fed to model_warmup
  // Latency of the current span, to tell a backlog draining (falling: wait) from a rate the
  // predictor cannot carry (rising while overloaded: settling would only hit the cap).
  std::deque<double> recent_p50;

  GaugeReading gauges;  // the last scrape
  std::vector<GaugeReading> measured_gauges;
  // Per measured window of the latest call: every replica's scrape (replica_gauges_ set).
  std::vector<std::vector<ReplicaScrape>> measured_replica_gauges;
  // Per measured window of the latest call: samples and those over each tail limit.
  std::vector<TailUnit> tail_units[kTailSources];
  std::vector<TailUnit> error_units;  // per measured window: scheduled, errors + timeouts
  double tail_limit_ms[kTailSources] = {0, 0, 0, 0};

  bool steady_at_start = false;
  size_t first_measured = 0;
  bool overloaded_and_rising = false;
  int64_t failures_before = 0;
  absl::StatusOr<ExecutedStep> executed = absl::UnknownError("not run");
  MeasuredStep out;
};

absl::StatusOr<MeasuredStep> MeasuredStepRunner::Run(
    vanguard::v1::RunStepRequest request, bool first_step, CancellationToken* cancel,
    const std::function<void(const vanguard::v1::StepWindow&)>& on_window, double hold) {
  StepRun run(std::move(request), first_step, cancel, on_window, hold);
  Plan(run);
  if (absl::Status s = DrainBacklog(run); !s.ok()) return s;
  assessor_->Reset();
  run.executed = MeasureCall(run, run.lead, /*watch_overload=*/true);
  if (!run.executed.ok()) return run.executed.status();
  if (run.settled) run.out.settle_time += run.lead;
  if (absl::Status s = SettleThenMeasure(run); !s.ok()) return s;
  run.out.steady = run.settled && Steady(run);
  run.out.overloaded_while_settling = run.overloaded_and_rising;
  if (run.out.steady && !run.recent_p50.empty()) {
    double p50_sum = 0;
    for (double p50 : run.recent_p50) p50_sum += p50;
    request_lifetime_ = absl::Microseconds(1000 * p50_sum / run.recent_p50.size());
  }
  JudgeCall(run);
  if (absl::Status s = RemeasureIfRising(run); !s.ok()) return s;
  JudgeOutcome(run);
  if (run.out.drain_time > absl::ZeroDuration()) {
    absl::StrAppend(&run.out.judgement.verdict, " (first drained the previous step's backlog: ",
                    absl::FormatDuration(run.out.drain_time), " of probes)");
  }
  backlog_left_ = run.out.executed.result.timeouts() > 0;
  if (run.out.judgement.passed && run.out.outcome.p50_ms > 0 &&
      (lowest_passing_p50_ms_ <= 0 || run.out.outcome.p50_ms < lowest_passing_p50_ms_)) {
    lowest_passing_p50_ms_ = run.out.outcome.p50_ms;
  }
  if (run.model_warmup) {
    run.out.model_warming = run.model_warmup->falling();
    run.out.model_warmup = run.model_warmup->warm() || run.model_warmup->falling()
                               ? run.model_warmup->warmup()
                               : absl::ZeroDuration();
  }
  if (collector_ != nullptr) {
    run.out.scrape_failures = collector_->scrape_failures() - run.failures_before;
  }
  return std::move(run.out);
}

absl::StatusOr<MeasuredStep> MeasuredStepRunner::RunAsIs(
    vanguard::v1::RunStepRequest request, CancellationToken* cancel,
    const std::function<void(const vanguard::v1::StepWindow&)>& on_window) {
  const absl::Duration requested = FromProtoDuration(request.duration());
  StepRun run(std::move(request), /*first_step=*/false, cancel, on_window, /*hold=*/1);
  Plan(run);
  // Undo what Plan adds for a search's step: the shape's phase is what it is.
  run.settled = false;
  run.model_warmup.reset();
  run.window = options_.window > absl::ZeroDuration() ? options_.window : absl::Seconds(1);
  run.measured = RoundUp(requested, run.window);
  *run.request.mutable_window() = ToProtoDuration(run.window);
  *run.request.mutable_duration() = ToProtoDuration(run.measured);
  assessor_->Reset();
  // The windows' record times (RecordWindow) are on this clock.
  const absl::Time began = absl::Now();
  run.executed = MeasureCall(run, absl::ZeroDuration(), /*watch_overload=*/false);
  if (!run.executed.ok()) return run.executed.status();
  JudgeCall(run);
  JudgeOutcome(run);
  for (vanguard::v1::StepWindow& w : run.out.windows) {
    *w.mutable_duration() = ToProtoDuration(run.window);
  }
  google::protobuf::RepeatedPtrField<vanguard::v1::StepWindow> windows(run.out.windows.begin(),
                                                                       run.out.windows.end());
  run.out.outcome.windows = ShapeWindowsOf(windows, began);
  if (collector_ != nullptr) {
    run.out.scrape_failures = collector_->scrape_failures() - run.failures_before;
  }
  return std::move(run.out);
}

void MeasuredStepRunner::Plan(StepRun& run) const {
  vanguard::v1::RunStepRequest& request = run.request;
  run.rate = request.rate_qps();
  run.p99_limit_ms = LimitMs(slo_.p99_latency());
  if (options_.closed_loop) {
    request.set_concurrency(
        std::max(1, static_cast<int>(std::ceil(run.rate * run.p99_limit_ms / 1000.0))));
    request.set_rate_qps(0);  // a closed loop has no rate
    request.set_schedule(vanguard::v1::SCHEDULE_UNSPECIFIED);
  }
  run.warmup = FromProtoDuration(request.warmup());
  // Every window holds a request lifetime and, at low rates, min_requests_per_window
  // arrivals: whole 100 ms, at most max_window.
  run.window = options_.window;
  if (run.window > absl::ZeroDuration()) {
    absl::Duration wanted = request_lifetime_;
    if (run.rate > 0) {
      wanted = std::max(wanted, absl::Seconds(options_.min_requests_per_window / run.rate));
    }
    if (wanted > run.window) {
      run.window = std::min(RoundUp(wanted, absl::Milliseconds(100)),
                            std::max(options_.max_window, options_.window));
    }
    *request.mutable_window() = ToProtoDuration(run.window);
  }
  run.failures_before = collector_ != nullptr ? collector_->scrape_failures() : 0;

  // At least measured_lifetimes request lifetimes measured (see the header), in whole
  // windows: a part shorter than its window would close none.
  const absl::Duration requested = FromProtoDuration(request.duration());
  const absl::Duration lifetimes = request_lifetime_ * options_.measured_lifetimes;
  run.measured = requested;
  if (lifetimes > requested) {
    run.measured = std::min(lifetimes, std::max(options_.max_measured, requested));
  }
  if (run.rate > 0 && options_.min_measured_requests > 0) {
    const absl::Duration arrivals = absl::Seconds(options_.min_measured_requests / run.rate);
    run.measured = std::max(run.measured, std::min(arrivals, options_.max_measured));
  }
  if (run.hold > 1) run.measured *= run.hold;
  if (run.window > absl::ZeroDuration()) run.measured = RoundUp(run.measured, run.window);
  *request.mutable_duration() = ToProtoDuration(run.measured);

  // Settling (see the header). Every measured call carries its own settle span as warmup:
  // between two replayer calls the arrivals pause while the last responses come back, so the
  // predictor's queue drains, and a part measured in a call of its own would start from an
  // empty queue however long the settling before it was.
  run.settled =
      options_.fixed_warmup && options_.steady_state_detection && run.warmup > absl::ZeroDuration();
  run.steady = options_.steady;
  run.span = run.window * run.steady.windows;
  run.detector.emplace(run.steady);
  if (run.first_step && run.settled && options_.detect_model_warmup) {
    run.model_warmup.emplace(options_.model_warmup);
  }
  run.lead = run.warmup;  // detection off: the replayer runs the fixed warmup inside
  if (!options_.fixed_warmup) run.lead = absl::ZeroDuration();
  if (run.settled) {
    // A queue near capacity takes many request lifetimes to build up to its steady level, and
    // a median latency that does not drift says nothing about the tail building: the first
    // settle span lasts settle_lifetimes of them too (see the header).
    const absl::Duration settle_lifetimes = request_lifetime_ * options_.settle_lifetimes;
    run.lead = std::max({run.warmup, run.span,
                         std::min(RoundUp(settle_lifetimes, run.window),
                                  std::max(options_.max_settle, run.warmup))});
    // The model's warmup needs its evidence before a verdict: the first call's lead.
    if (run.model_warmup) {
      run.lead = std::max(run.lead,
                          run.model_warmup->evidence_needed(
                              run.window > absl::ZeroDuration() ? run.window : absl::Seconds(1)));
    }
  }
  run.cap =
      std::max(run.first_step ? options_.max_initial_settle : options_.max_settle, run.warmup);
  for (std::vector<TailUnit>& units : run.tail_units) units.clear();
  run.tail_limit_ms[kLatencyTail] = run.p99_limit_ms;
  run.tail_limit_ms[kTtftTail] = LimitMs(slo_.ttft_p99());
  run.tail_limit_ms[kInterTokenTail] = LimitMs(slo_.inter_token_p99());
  run.tail_limit_ms[kP50Tail] = LimitMs(slo_.p50_latency());
}

void MeasuredStepRunner::Watch(StepRun& run, const vanguard::v1::StepWindow& w) const {
  const double p50_ms = w.latency().p50_ms();
  const double ratio = w.offered_qps() > 0 ? w.achieved_qps() / w.offered_qps() : 1.0;
  run.detector->Add(p50_ms, options_.closed_loop ? 1.0 : ratio);
  run.recent_p50.push_back(p50_ms);
  while (static_cast<int>(run.recent_p50.size()) > run.steady.windows) run.recent_p50.pop_front();
  if (run.model_warmup) {
    const absl::Duration length = run.window > absl::ZeroDuration() ? run.window : absl::Seconds(1);
    run.model_warmup->Add(run.watched, length, w.completed() > 0 ? p50_ms : 0);
    run.watched += length;
  }
}

void MeasuredStepRunner::SettleWindow(StepRun& run, const vanguard::v1::WindowMetrics& w) {
  run.out.windows.push_back(RecordWindow(w, /*settle=*/true, absl::Now(), &run.gauges));
  Watch(run, run.out.windows.back());
  assessor_->Observe(SignalsOf(w, run.gauges));
  if (run.on_window) run.on_window(run.out.windows.back());
}

void MeasuredStepRunner::Demote(StepRun& run, size_t first) const {
  for (size_t i = first; i < run.out.windows.size(); ++i) {
    vanguard::v1::StepWindow& w = run.out.windows[i];
    w.set_warmup(true);
    w.clear_health_score();
    w.clear_health_state();
    Watch(run, w);
  }
}

bool MeasuredStepRunner::Steady(const StepRun& run) const {
  return run.detector->steady() && (!run.model_warmup || run.model_warmup->warm());
}

absl::Duration MeasuredStepRunner::SettleCap(const StepRun& run) const {
  if (run.model_warmup && !run.model_warmup->warm()) {
    return std::max(run.cap, options_.model_warmup.max_warmup);
  }
  return run.cap;
}

bool MeasuredStepRunner::OverloadedRising(const StepRun& run) const {
  // Not on the test's first step: a model still warming up (JIT, autotuning) is overloaded
  // at a rate it carries once warm, and waiting (up to the cap) is the point.
  return !run.first_step && assessor_->state() == vanguard::v1::HEALTH_STATE_OVERLOADED &&
         static_cast<int>(run.recent_p50.size()) == run.steady.windows &&
         run.recent_p50.back() >= run.recent_p50.front();
}

absl::StatusOr<ExecutedStep> MeasuredStepRunner::MeasureCall(StepRun& run, absl::Duration lead,
                                                             bool watch_overload) {
  vanguard::v1::RunStepRequest call = run.request;
  *call.mutable_warmup() = ToProtoDuration(lead);
  if (lead > absl::ZeroDuration()) assessor_->Reset();
  run.measured_gauges.clear();
  run.measured_replica_gauges.clear();
  for (std::vector<TailUnit>& units : run.tail_units) units.clear();
  run.error_units.clear();
  bool measuring = false;
  run.steady_at_start = Steady(run);
  run.first_measured = run.out.windows.size();
  absl::StatusOr<ExecutedStep> executed =
      executor_->Execute(call, run.cancel, [&](const vanguard::v1::WindowMetrics& w) {
        if (w.warmup() && run.settled) {
          SettleWindow(run, w);
          return;
        }
        if (!measuring && !w.warmup()) {
          measuring = true;
          run.steady_at_start = Steady(run);
          if (watch_overload) run.overloaded_and_rising = run.settled && OverloadedRising(run);
          run.first_measured = run.out.windows.size();
          assessor_->Reset();
        }
        run.out.windows.push_back(RecordWindow(w, /*settle=*/false, absl::Now(), &run.gauges));
        if (!w.warmup()) {
          run.measured_gauges.push_back(run.gauges);
          if (replica_gauges_ != nullptr) {
            run.measured_replica_gauges.push_back(replica_gauges_->ScrapeAll());
          }
          run.tail_units[kLatencyTail].push_back(
              TailUnitOf(w.latency_histogram(), run.tail_limit_ms[kLatencyTail]));
          run.tail_units[kTtftTail].push_back(
              TailUnitOf(w.ttft_histogram(), run.tail_limit_ms[kTtftTail]));
          run.tail_units[kInterTokenTail].push_back(
              TailUnitOf(w.inter_chunk_histogram(), run.tail_limit_ms[kInterTokenTail]));
          run.tail_units[kP50Tail].push_back(
              TailUnitOf(w.latency_histogram(), run.tail_limit_ms[kP50Tail]));
          run.error_units.push_back({w.scheduled(), w.errors() + w.timeouts()});
        }
        if (run.on_window) run.on_window(run.out.windows.back());
      });
  if (executed.ok() && !measuring) run.steady_at_start = Steady(run);
  return executed;
}

absl::Status MeasuredStepRunner::DrainBacklog(StepRun& run) {
  // Before any pass there is no latency to drain to, and a model that has answered nothing
  // in time yet may never: no drain.
  if (!backlog_left_ || options_.max_drain <= absl::ZeroDuration() || lowest_passing_p50_ms_ <= 0) {
    return absl::OkStatus();
  }
  backlog_left_ = false;
  const double rate = std::min(run.rate, std::max(kDrainMinQps, kDrainShare * run.rate));
  if (!(rate > 0)) return absl::OkStatus();
  vanguard::v1::RunStepRequest probe = run.request;
  probe.set_rate_qps(rate);
  probe.set_concurrency(0);
  *probe.mutable_warmup() = ToProtoDuration(absl::ZeroDuration());
  *probe.mutable_duration() = ToProtoDuration(std::clamp(
      absl::Seconds(kDrainProbeRequests / rate), options_.settle_chunk, options_.max_window * 4));
  probe.set_seed(run.request.seed() ^ 0xd7a1dd7a1dULL);
  while (run.out.drain_time < options_.max_drain && !Cancelled(run.cancel)) {
    probe.set_seed(probe.seed() + 1);
    absl::StatusOr<ExecutedStep> s = executor_->Execute(probe, run.cancel, nullptr);
    if (!s.ok()) return s.status();
    run.out.drain_time += FromProtoDuration(probe.duration());
    const vanguard::v1::StepResult& r = s->result;
    if (r.completed() > 0 && r.timeouts() == 0 &&
        r.latency().p50_ms() <= kDrainedP50 * lowest_passing_p50_ms_) {
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status MeasuredStepRunner::SettleThenMeasure(StepRun& run) {
  // Not steady when the measured part began: that part was more settling. Settle on in
  // chunks of their own until steady (or the cap, or an overload that only grows), then
  // measure once more behind one continuous span. After a rate change, not when that part
  // would take the settling to its cap: what still drifts then is the queue at the new rate,
  // and the second call would start from a drained queue behind a shorter lead than the
  // first had (a slow model's step, a long hold): it could only be less settled. (On the
  // test's first step the model's own warmup may be what drifts, and time cures that.)
  const bool budget_left = run.first_step || run.out.settle_time + run.measured < run.cap;
  if (!run.settled || run.steady_at_start || run.overloaded_and_rising || !budget_left ||
      run.out.settle_time >= SettleCap(run) || Cancelled(run.cancel)) {
    return absl::OkStatus();
  }
  Demote(run, run.first_measured);
  run.out.settle_time += run.measured;
  vanguard::v1::RunStepRequest chunk = run.request;
  *chunk.mutable_warmup() = ToProtoDuration(absl::ZeroDuration());
  chunk.set_seed(run.request.seed() ^ 0x5e771e5e771eULL);
  while (!Steady(run) && run.out.settle_time < SettleCap(run)) {
    if ((run.overloaded_and_rising = OverloadedRising(run))) break;
    *chunk.mutable_duration() =
        ToProtoDuration(std::min(options_.settle_chunk, SettleCap(run) - run.out.settle_time));
    chunk.set_seed(chunk.seed() + 1);
    absl::StatusOr<ExecutedStep> s = executor_->Execute(
        chunk, run.cancel, [&](const vanguard::v1::WindowMetrics& w) { SettleWindow(run, w); });
    if (!s.ok()) return s.status();
    run.out.settle_time += FromProtoDuration(chunk.duration());
  }
  run.request.set_seed(run.request.seed() + 1);
  run.executed = MeasureCall(run, run.span, /*watch_overload=*/false);
  if (!run.executed.ok()) return run.executed.status();
  run.out.settle_time += run.span;
  return absl::OkStatus();
}

void MeasuredStepRunner::JudgeCall(StepRun& run) {
  run.out.executed = std::move(*run.executed);
  run.out.judgement =
      judge_->Judge(run.out.executed.result,
                    options_.closed_loop ? run.out.executed.result.achieved_qps() : run.rate);
}

absl::Status MeasuredStepRunner::RemeasureIfRising(StepRun& run) {
  // A pass close to the limit whose latency still climbs through the measured part is a
  // queue still building (near capacity it takes far longer than the settle cap to reach its
  // level): measure once more behind a continuous lead as long as everything so far, and
  // judge that. Not a hold (hold > 1): its part is several parts long, so its later windows
  // already saw the queue build about as long as a re-measure's lead would let it.
  if (!run.settled || !options_.remeasure_rising_near_limit || run.hold > 1 ||
      !run.out.judgement.passed ||
      run.out.judgement.health.state < vanguard::v1::HEALTH_STATE_UNHEALTHY ||
      Cancelled(run.cancel) || !LatencyRising(run.out.windows, run.first_measured)) {
    return absl::OkStatus();
  }
  Demote(run, run.first_measured);
  const absl::Duration again = std::min(run.lead + run.measured, std::max(run.cap, run.lead));
  run.out.settle_time += run.measured + again;
  run.out.remeasured = true;
  run.request.set_seed(run.request.seed() + 2);
  run.executed = MeasureCall(run, again, /*watch_overload=*/false);
  if (!run.executed.ok()) return run.executed.status();
  JudgeCall(run);
  return absl::OkStatus();
}

void MeasuredStepRunner::ErrorsAsTail(const StepRun& run, const vanguard::v1::StepResult& result,
                                      StepOutcome* o) const {
  const double allowed = slo_.max_error_rate();
  if (!(allowed > 0) || !run.out.judgement.client_valid || result.scheduled() <= 0) return;
  const double ratio = o->error_rate / allowed;
  if (ratio <= o->tail_ratio) return;
  o->tail_ratio = ratio;
  o->tail_samples = result.scheduled();
  o->tail_allowed = allowed;
  const TailConfidence confidence = TailConfidenceOf(run.error_units, allowed);
  o->tail_ratio_se = confidence.ratio_se;
  o->tail_units = confidence.units;
}

bool MeasuredStepRunner::BacklogRising(const StepRun& run) {
  std::deque<double> queue;
  for (const GaugeReading& g : run.measured_gauges) {
    if (g.queue_depth) queue.push_back(*g.queue_depth);
  }
  if (queue.size() >= 4) {
    double mean = 0;
    for (double q : queue) mean += q;
    mean /= static_cast<double>(queue.size());
    return SteadyStateDetector::Trending(queue, kRisingLatencyDrift, /*rising_only=*/true) &&
           SteadyStateDetector::RelativeDrift(queue) * std::abs(mean) >= kRisingQueueDepth;
  }
  return LatencyRising(run.out.windows, run.first_measured);
}

void MeasuredStepRunner::JudgeOutcome(StepRun& run) {
  MeasuredStep& out = run.out;
  if (replica_gauges_ != nullptr) {
    AttachReplicaGauges(replica_gauges_->endpoints(), run.measured_replica_gauges,
                        &out.executed.result);
  }
  // Closed loop: the step is reported at the rate the strategy asked for (the knob the
  // concurrency was derived from); the request keeps the concurrency it ran with.
  out.executed.request.set_rate_qps(run.rate);
  // What the caller sees as the step's request: the measured part, plus the warmup it had.
  if (run.settled) *out.executed.request.mutable_warmup() = ToProtoDuration(out.settle_time);
  const vanguard::v1::StepResult& result = out.executed.result;
  if (out.judgement.passed && result.latency().p50_ms() > 0) {
    request_lifetime_ = absl::Microseconds(1000 * result.latency().p50_ms());
  }

  const GaugeMeans gauges = MeanGauges(run.measured_gauges);
  const LimitReading limits =
      ReadLimits(slo_, result, gauges, out.judgement.health.worst_ratio, run.tail_limit_ms);
  const std::vector<std::string>& gauge_breaches = limits.breaches;
  const TailExceedance& tail = limits.tail;
  if (!gauge_breaches.empty() && out.judgement.client_valid) {
    out.judgement.verdict =
        out.judgement.passed
            ? absl::StrJoin(gauge_breaches, "; ")
            : absl::StrCat(out.judgement.verdict, "; ", absl::StrJoin(gauge_breaches, "; "));
    out.judgement.passed = false;
  }
  if (tail.samples > 0 && out.judgement.client_valid) {
    // What the pooled verdicts work from: the share of the requests over the tail limits,
    // relative to what the limit allows (1% for a p99, half for a p50).
    absl::StrAppend(&out.judgement.verdict, absl::StrFormat(" (tail %.2f of allowed, %d requests)",
                                                            tail.ratio, tail.samples));
  }

  StepOutcome& o = out.outcome;
  o.rate_qps = run.rate;
  o.passed = out.judgement.passed;
  o.client_valid = out.judgement.client_valid;
  o.achieved_qps = result.achieved_qps();
  o.offered_qps = out.judgement.offered_qps;
  o.p50_ms = result.latency().p50_ms();
  o.p99_ms = result.latency().p99_ms();
  o.error_rate = out.judgement.error_rate;
  o.health_score = out.judgement.health.score;
  o.limit_ratio = limits.limit_ratio;
  o.tail_ratio = tail.ratio;
  o.tail_samples = tail.samples;
  o.tail_allowed = kTailAllowed[limits.tail_source];
  const TailConfidence confidence =
      TailConfidenceOf(run.tail_units[limits.tail_source], o.tail_allowed);
  o.tail_ratio_se = confidence.ratio_se;
  o.tail_units = confidence.units;
  o.backlog_rising = BacklogRising(run);
  // With an error limit, errors are a share of requests over what the SLO allows, like a
  // p99 tail: pooled across steps and judged with their uncertainty (ErrorsAsTail).
  o.passed_apart_from_tail =
      (slo_.max_error_rate() > 0 ? out.judgement.passed_apart_from_tails
                                 : out.judgement.passed_apart_from_latency_tails) &&
      !limits.other_breach;
  ErrorsAsTail(run, result, &o);
  o.health_state = out.judgement.health.state;
  if (assessor_->windows() > 0) {
    o.window_state = assessor_->worst_state();
    o.spikes = assessor_->spikes();
  }
  o.goodput = Goodput(result, run.p99_limit_ms);
  o.queue_mean = gauges.queue;
  o.queue_samples_fraction =
      gauges.windows > 0 ? static_cast<double>(gauges.queue_samples) / gauges.windows : 0;
  if (gauges.memory_samples > 0) o.memory_bytes = gauges.memory;
}

}  // namespace vanguard::worker
