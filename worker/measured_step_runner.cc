// Warmup, steady state, per-window health and judging of one step. See
// measured_step_runner.h.
#include "worker/measured_step_runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/histogram.h"
#include "worker/proto_time.h"
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

}  // namespace

MeasuredStepRunner::MeasuredStepRunner(StepExecutor* executor, StepJudge* judge,
                                       HealthAssessor* assessor, MetricsCollector* collector,
                                       vanguard::v1::Slo slo, MeasuredStepOptions options)
    : executor_(executor),
      judge_(judge),
      assessor_(assessor),
      collector_(collector),
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
                                                              double limit_ms) {
  if (limit_ms <= 0 || histogram.empty()) return {};
  absl::StatusOr<LatencyHistogram> h = LatencyHistogram::Deserialize(histogram);
  if (!h.ok() || h->count() == 0) return {};
  return {static_cast<double>(h->CountAbove(limit_ms * 1000)) / static_cast<double>(h->count()) /
              kTailAllowedFraction,
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
  if (!out.warmup()) {
    const WindowSignals s = SignalsOf(w, gauges);
    const WindowAssessment a = assessor_->Observe(s);
    out.set_health_score(a.score);
    out.set_health_state(a.state);
  }
  *gauges_out = gauges;
  return out;
}

absl::StatusOr<MeasuredStep> MeasuredStepRunner::Run(
    vanguard::v1::RunStepRequest request, bool first_step, CancellationToken* cancel,
    const std::function<void(const vanguard::v1::StepWindow&)>& on_window, double hold) {
  MeasuredStep out;
  const double rate = request.rate_qps();
  const double p99_limit_ms = LimitMs(slo_.p99_latency());
  if (options_.closed_loop) {
    request.set_concurrency(std::max(1, static_cast<int>(std::ceil(rate * p99_limit_ms / 1000.0))));
    request.set_rate_qps(0);  // a closed loop has no rate
    request.set_schedule(vanguard::v1::SCHEDULE_UNSPECIFIED);
  }
  const absl::Duration warmup = FromProtoDuration(request.warmup());
  // Every window holds a request lifetime and, at low rates, min_requests_per_window
  // arrivals: whole 100 ms, at most max_window.
  absl::Duration window = options_.window;
  if (window > absl::ZeroDuration()) {
    absl::Duration wanted = request_lifetime_;
    if (rate > 0) {
      wanted = std::max(wanted, absl::Seconds(options_.min_requests_per_window / rate));
    }
    if (wanted > window) {
      window = std::min(RoundUp(wanted, absl::Milliseconds(100)),
                        std::max(options_.max_window, options_.window));
    }
  }
  if (window > absl::ZeroDuration()) *request.mutable_window() = ToProtoDuration(window);
  const int64_t failures_before = collector_ != nullptr ? collector_->scrape_failures() : 0;
  std::vector<GaugeReading> measured_gauges;
  GaugeReading gauges;

  // At least measured_lifetimes request lifetimes measured (see the header), in whole
  // windows: a part shorter than its window would close none.
  const absl::Duration requested = FromProtoDuration(request.duration());
  const absl::Duration lifetimes = request_lifetime_ * options_.measured_lifetimes;
  absl::Duration measured_duration = requested;
  if (lifetimes > requested) {
    measured_duration = std::min(lifetimes, std::max(options_.max_measured, requested));
  }
  if (hold > 1) measured_duration *= hold;
  if (window > absl::ZeroDuration()) measured_duration = RoundUp(measured_duration, window);
  *request.mutable_duration() = ToProtoDuration(measured_duration);

  // Settling (see the header). Every measured call carries its own settle span as warmup:
  // between two replayer calls the arrivals pause while the last responses come back, so the
  // predictor's queue drains, and a part measured in a call of its own would start from an
  // empty queue however long the settling before it was.
  const bool settled =
      options_.fixed_warmup && options_.steady_state_detection && warmup > absl::ZeroDuration();
  SteadyStateOptions steady = options_.steady;
  if (first_step) {
    steady.compare_blocks = true;
    // The same span in time however long the windows are.
    steady.windows =
        std::max(steady.windows, static_cast<int>(std::ceil(absl::FDivDuration(
                                     options_.window * options_.first_step_windows, window))));
  }
  const absl::Duration span = window * steady.windows;
  SteadyStateDetector detector(steady);
  // Latency of the current span, to tell a backlog draining (falling: wait) from a rate the
  // predictor cannot carry (rising while overloaded: settling would only hit the cap).
  std::deque<double> recent_p50;
  // One settle window's latency and throughput into the detector and the recent span.
  const auto watch = [&](double p50_ms, double offered_qps, double achieved_qps) {
    const double ratio = offered_qps > 0 ? achieved_qps / offered_qps : 1.0;
    detector.Add(p50_ms, options_.closed_loop ? 1.0 : ratio);
    recent_p50.push_back(p50_ms);
    while (static_cast<int>(recent_p50.size()) > steady.windows) recent_p50.pop_front();
  };
  const auto settle_window = [&](const vanguard::v1::WindowMetrics& w) {
    out.windows.push_back(RecordWindow(w, /*settle=*/true, absl::Now(), &gauges));
    watch(w.latency().p50_ms(), w.offered_qps(), w.achieved_qps());
    assessor_->Observe(SignalsOf(w, gauges));
    if (on_window) on_window(out.windows.back());
  };
  const auto remember_lifetime = [&] {
    double p50_sum = 0;
    for (double p50 : recent_p50) p50_sum += p50;
    if (!recent_p50.empty()) {
      request_lifetime_ = absl::Microseconds(1000 * p50_sum / recent_p50.size());
    }
  };
  const auto overloaded_rising = [&] {
    // Not on the test's first step: a model still warming up (JIT, autotuning) is
    // overloaded at a rate it carries once warm, and waiting (up to the cap) is the point.
    return !first_step && assessor_->state() == vanguard::v1::HEALTH_STATE_OVERLOADED &&
           static_cast<int>(recent_p50.size()) == steady.windows &&
           recent_p50.back() >= recent_p50.front();
  };
  bool overloaded_and_rising = false;
  // One measured call: `lead` of warmup at the step's rate (settle windows, fed to the
  // detector), then the measured part. Sets *steady_at_start to whether the detector was
  // steady when the measured part began (and, watching, overloaded_and_rising to whether
  // the settle windows showed an overload that only grows).
  const auto measure = [&](absl::Duration lead, bool watch_overload, bool* steady_at_start,
                           size_t* first_measured) -> absl::StatusOr<ExecutedStep> {
    vanguard::v1::RunStepRequest call = request;
    *call.mutable_warmup() = ToProtoDuration(lead);
    if (lead > absl::ZeroDuration()) assessor_->Reset();
    measured_gauges.clear();
    bool measuring = false;
    *steady_at_start = detector.steady();
    *first_measured = out.windows.size();
    absl::StatusOr<ExecutedStep> executed =
        executor_->Execute(call, cancel, [&](const vanguard::v1::WindowMetrics& w) {
          if (w.warmup() && settled) {
            settle_window(w);
            return;
          }
          if (!measuring && !w.warmup()) {
            measuring = true;
            *steady_at_start = detector.steady();
            if (watch_overload) overloaded_and_rising = settled && overloaded_rising();
            *first_measured = out.windows.size();
            assessor_->Reset();
          }
          out.windows.push_back(RecordWindow(w, /*settle=*/false, absl::Now(), &gauges));
          if (!w.warmup()) measured_gauges.push_back(gauges);
          if (on_window) on_window(out.windows.back());
        });
    if (executed.ok() && !measuring) *steady_at_start = detector.steady();
    return executed;
  };
  // The measured windows from `first` on become settle windows (fed to the detector).
  const auto demote = [&](size_t first) {
    for (size_t i = first; i < out.windows.size(); ++i) {
      vanguard::v1::StepWindow& w = out.windows[i];
      w.set_warmup(true);
      w.clear_health_score();
      w.clear_health_state();
      watch(w.latency().p50_ms(), w.offered_qps(), w.achieved_qps());
    }
  };

  absl::Duration lead = warmup;  // detection off: the replayer runs the fixed warmup inside
  if (!options_.fixed_warmup) lead = absl::ZeroDuration();
  if (settled) {
    // A queue near capacity takes many request lifetimes to build up to its steady level, and
    // a median latency that does not drift says nothing about the tail building: the first
    // settle span lasts settle_lifetimes of them too (see the header).
    const absl::Duration settle_lifetimes = request_lifetime_ * options_.settle_lifetimes;
    lead = std::max(
        {warmup, span,
         std::min(RoundUp(settle_lifetimes, window), std::max(options_.max_settle, warmup))});
  }
  const absl::Duration cap =
      std::max(first_step ? options_.max_initial_settle : options_.max_settle, warmup);
  assessor_->Reset();
  bool steady_at_start = false;
  size_t first_measured = 0;
  absl::StatusOr<ExecutedStep> executed =
      measure(lead, /*watch_overload=*/true, &steady_at_start, &first_measured);
  if (!executed.ok()) return executed.status();
  if (settled) out.settle_time += lead;
  // Not steady when the measured part began: that part was more settling. Settle on in
  // chunks of their own until steady (or the cap, or an overload that only grows), then
  // measure once more behind one continuous span. After a rate change, not when that part
  // would take the settling to its cap: what still drifts then is the queue at the new rate,
  // and the second call would start from a drained queue behind a shorter lead than the
  // first had (a slow model's step, a long hold): it could only be less settled. (On the
  // test's first step the model's own warmup may be what drifts, and time cures that.)
  const bool budget_left = first_step || out.settle_time + measured_duration < cap;
  if (settled && !steady_at_start && !overloaded_and_rising && budget_left &&
      out.settle_time < cap && (cancel == nullptr || !cancel->IsCancelled())) {
    demote(first_measured);
    out.settle_time += measured_duration;
    vanguard::v1::RunStepRequest chunk = request;
    *chunk.mutable_warmup() = ToProtoDuration(absl::ZeroDuration());
    chunk.set_seed(request.seed() ^ 0x5e771e5e771eULL);
    while (!detector.steady() && out.settle_time < cap) {
      if ((overloaded_and_rising = overloaded_rising())) break;
      *chunk.mutable_duration() =
          ToProtoDuration(std::min(options_.settle_chunk, cap - out.settle_time));
      chunk.set_seed(chunk.seed() + 1);
      absl::StatusOr<ExecutedStep> s = executor_->Execute(chunk, cancel, settle_window);
      if (!s.ok()) return s.status();
      out.settle_time += FromProtoDuration(chunk.duration());
    }
    request.set_seed(request.seed() + 1);
    executed = measure(span, /*watch_overload=*/false, &steady_at_start, &first_measured);
    if (!executed.ok()) return executed.status();
    out.settle_time += span;
  }
  out.steady = settled && detector.steady();
  out.overloaded_while_settling = overloaded_and_rising;
  if (out.steady) remember_lifetime();
  out.executed = std::move(*executed);
  out.judgement = judge_->Judge(out.executed.result,
                                options_.closed_loop ? out.executed.result.achieved_qps() : rate);
  // A pass close to the limit whose latency still climbs through the measured part is a
  // queue still building (near capacity it takes far longer than the settle cap to reach its
  // level): measure once more behind a continuous lead as long as everything so far, and
  // judge that. Not a hold (hold > 1): its part is several parts long, so its later windows
  // already saw the queue build about as long as a re-measure's lead would let it.
  if (settled && options_.remeasure_rising_near_limit && hold <= 1 && out.judgement.passed &&
      out.judgement.health.state >= vanguard::v1::HEALTH_STATE_UNHEALTHY &&
      (cancel == nullptr || !cancel->IsCancelled()) && LatencyRising(out.windows, first_measured)) {
    demote(first_measured);
    const absl::Duration again = std::min(lead + measured_duration, std::max(cap, lead));
    out.settle_time += measured_duration + again;
    out.remeasured = true;
    request.set_seed(request.seed() + 2);
    executed = measure(again, /*watch_overload=*/false, &steady_at_start, &first_measured);
    if (!executed.ok()) return executed.status();
    out.executed = std::move(*executed);
    out.judgement = judge_->Judge(out.executed.result,
                                  options_.closed_loop ? out.executed.result.achieved_qps() : rate);
  }
  // Closed loop: the step is reported at the rate the strategy asked for (the knob the
  // concurrency was derived from); the request keeps the concurrency it ran with.
  out.executed.request.set_rate_qps(rate);
  // What the caller sees as the step's request: the measured part, plus the warmup it had.
  if (settled) *out.executed.request.mutable_warmup() = ToProtoDuration(out.settle_time);
  const vanguard::v1::StepResult& result = out.executed.result;
  if (out.judgement.passed && result.latency().p50_ms() > 0) {
    request_lifetime_ = absl::Microseconds(1000 * result.latency().p50_ms());
  }

  // Gauges over the measured windows (one scrape each; a failed scrape is a missing sample).
  const int measured = static_cast<int>(measured_gauges.size());
  int queue_samples = 0, gpu_samples = 0, memory_samples = 0;
  double queue_sum = 0, gpu_sum = 0, memory_sum = 0;
  for (const GaugeReading& g : measured_gauges) {
    if (g.memory_bytes) {
      ++memory_samples;
      memory_sum += *g.memory_bytes;
    }
    if (g.queue_depth) {
      ++queue_samples;
      queue_sum += *g.queue_depth;
    }
    if (g.gpu_utilization) {
      ++gpu_samples;
      gpu_sum += *g.gpu_utilization;
    }
  }
  const double queue_mean = queue_samples > 0 ? queue_sum / queue_samples : 0;
  const double gpu_mean = gpu_samples > 0 ? gpu_sum / gpu_samples : 0;
  // The limits beyond the judge's: scraped gauges (means over the measured windows) and, for
  // streams, TTFT and inter-token p99 over the whole measured part. Each feeds the step's
  // limit ratio; a breach fails the step.
  const double ttft_limit_ms = LimitMs(slo_.ttft_p99());
  const double inter_limit_ms = LimitMs(slo_.inter_token_p99());
  struct Limit {
    bool applies;
    double measured;
    double limit;
    std::string breach;
    const std::string* histogram;  // the samples behind a p99 limit; null for gauges
  };
  const Limit limits[] = {
      {slo_.max_queue_depth() > 0 && queue_samples > 0, queue_mean, slo_.max_queue_depth(),
       absl::StrFormat("queue mean %.2f > %g", queue_mean, slo_.max_queue_depth()), nullptr},
      {slo_.max_gpu_utilization() > 0 && gpu_samples > 0, gpu_mean, slo_.max_gpu_utilization(),
       absl::StrFormat("GPU utilization %.2f > %g", gpu_mean, slo_.max_gpu_utilization()), nullptr},
      {ttft_limit_ms > 0 && result.has_ttft(), result.ttft().p99_ms(), ttft_limit_ms,
       absl::StrFormat("TTFT p99 %.1f ms > %g ms", result.ttft().p99_ms(), ttft_limit_ms),
       &result.ttft_histogram()},
      {inter_limit_ms > 0 && result.has_inter_chunk(), result.inter_chunk().p99_ms(),
       inter_limit_ms,
       absl::StrFormat("inter-token p99 %.1f ms > %g ms", result.inter_chunk().p99_ms(),
                       inter_limit_ms),
       &result.inter_chunk_histogram()},
  };
  std::vector<std::string> gauge_breaches;
  double limit_ratio = out.judgement.health.worst_ratio;
  bool other_breach = false;  // a breach of a limit that is not a p99 tail
  // The tail of the p99 limits, over the measured part only (see "Tail evidence").
  TailExceedance tail = TailOf(result.latency_histogram(), p99_limit_ms);
  for (const Limit& l : limits) {
    if (!l.applies) continue;
    limit_ratio = std::max(limit_ratio, l.measured / l.limit);
    if (l.measured > l.limit) {
      gauge_breaches.push_back(l.breach);
      if (l.histogram == nullptr) other_breach = true;
    }
    if (l.histogram != nullptr) {
      const TailExceedance t = TailOf(*l.histogram, l.limit);
      if (t.samples > 0 && t.ratio > tail.ratio) tail = t;
    }
  }
  if (!gauge_breaches.empty() && out.judgement.client_valid) {
    out.judgement.verdict =
        out.judgement.passed
            ? absl::StrJoin(gauge_breaches, "; ")
            : absl::StrCat(out.judgement.verdict, "; ", absl::StrJoin(gauge_breaches, "; "));
    out.judgement.passed = false;
  }

  if (tail.samples > 0 && out.judgement.client_valid) {
    // What the pooled verdicts work from: the share of the requests over the tail limits,
    // relative to the 1% a p99 allows.
    absl::StrAppend(&out.judgement.verdict, absl::StrFormat(" (tail %.2f of allowed, %d requests)",
                                                            tail.ratio, tail.samples));
  }
  StepOutcome& o = out.outcome;
  o.rate_qps = rate;
  o.passed = out.judgement.passed;
  o.client_valid = out.judgement.client_valid;
  o.achieved_qps = result.achieved_qps();
  o.offered_qps = out.judgement.offered_qps;
  o.p50_ms = result.latency().p50_ms();
  o.p99_ms = result.latency().p99_ms();
  o.error_rate = out.judgement.error_rate;
  o.health_score = out.judgement.health.score;
  o.limit_ratio = limit_ratio;
  o.tail_ratio = tail.ratio;
  o.tail_samples = tail.samples;
  o.passed_apart_from_tail = out.judgement.passed_apart_from_p99 && !other_breach;
  o.health_state = out.judgement.health.state;
  if (assessor_->windows() > 0) {
    o.window_state = assessor_->worst_state();
    o.spikes = assessor_->spikes();
  }
  o.goodput = Goodput(result, p99_limit_ms);
  o.queue_mean = queue_mean;
  o.queue_samples_fraction = measured > 0 ? static_cast<double>(queue_samples) / measured : 0;
  if (memory_samples > 0) o.memory_bytes = memory_sum / memory_samples;
  if (collector_ != nullptr) out.scrape_failures = collector_->scrape_failures() - failures_before;
  return out;
}

}  // namespace vanguard::worker
