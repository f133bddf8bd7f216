// Detects a model still warming up (JIT, autotuning, cache fill) at the start of a test: its
// latency falls, however slowly, until the model is warm. A falling latency is a drift like
// any other, but a linear decline over minutes moves little within the few windows the
// steady-state test looks at, so this detector compares spans of `span` (10 s) each.
//
//   WarmupDetector warmup({});
//   for (each settle window of the test's first step)
//     warmup.Add(start_since_test_start, window_length, p50_ms);
//   if (warmup.warm()) report(warmup.warmup());  // how long the model took to warm
//
// Once min_spans spans are complete, after each span the detector fits a least-squares line
// to the window latencies of the horizon (the last span and the lookback_spans before it):
// the latency is still falling when the fitted drop over the horizon, relative to the
// fitted level at its end, exceeds `tolerance` beyond noise (z standard errors of the drop,
// from the scatter about the line). warm() is the latest verdict: not falling, and the drop's
// upper bound (drop + z standard errors) below warm_tolerance, so that a noisy latency that
// shows no significant fall is not called warm (neither: no verdict yet). A rising
// latency (a cold model overloaded, a queue building) is not a warmup: it is warm as far as
// this detector goes (the steady-state test judges it; if it later falls, the detector says
// so). When warm, warmup() is the end of the last span before the horizon whose mean was
// above the horizon's mean by `tolerance` of it beyond noise; 0 when none was (warm from the
// start). The caller caps how long it waits (options.max_warmup: capped()).
//
// Pure: no clock, no I/O; times are what the caller passes. Called from one thread.
#ifndef VANGUARD_WORKER_WARMUP_DETECTOR_H_
#define VANGUARD_WORKER_WARMUP_DETECTOR_H_

#include <vector>

#include "absl/time/time.h"

namespace vanguard::worker {

struct WarmupDetectorOptions {
  absl::Duration span = absl::Seconds(10);
  // Spans grow to hold at least this many windows (long windows at low rates).
  int min_windows_per_span = 3;
  // Complete spans before the first verdict, and the spans before the last one the horizon
  // holds: a slow decline shows over a longer baseline than between neighbours (a warmup of
  // 180 s at 2x falls by under 3% per 10 s at first), at the price of confirming the end of
  // a warmup only once its last falling spans have left the horizon.
  int min_spans = 4;
  int lookback_spans = 4;
  // A fitted drop over the horizon beyond noise by more than this share of the level.
  double tolerance = 0.02;
  // Warm needs more than no evidence of a fall: the fitted drop's upper bound (drop + z
  // standard errors) must be below this share of the level, or the readings are too noisy
  // to tell and the caller keeps waiting (up to max_warmup).
  double warm_tolerance = 0.15;
  double z = 1.645;  // one-sided 95%
  // How long a caller should wait for a falling latency to stop falling.
  absl::Duration max_warmup = absl::Seconds(300);
};

class WarmupDetector {
 public:
  explicit WarmupDetector(WarmupDetectorOptions options) : options_(options) {}

  // Adds one window: its start (from the start of the test's load), its length and its
  // latency (p50 or mean, ms). Windows come in time order; a latency <= 0 (no completions) is
  // skipped. The span length is fixed by the first window's length.
  void Add(absl::Duration start, absl::Duration length, double latency_ms);

  // A verdict was reached and the latency no longer falls beyond noise.
  bool warm() const { return verdict_ && !falling_; }
  // A verdict was reached and the latency still falls.
  bool falling() const { return verdict_ && falling_; }
  // Still falling (or no verdict) after max_warmup of windows: waiting longer is not worth it.
  bool capped() const { return !warm() && observed_ >= options_.max_warmup; }
  // When warm: when the latency stopped falling (see the header), 0 when it never fell.
  // Otherwise: the time observed so far (a lower bound).
  absl::Duration warmup() const { return warm() ? warmup_end_ : observed_; }
  // Time covered by the windows added so far (the end of the last one).
  absl::Duration observed() const { return observed_; }
  // Windows needed, in time, before the first verdict.
  absl::Duration evidence_needed(absl::Duration window) const;

 private:
  struct Span {
    double sum = 0;
    double sum_squares = 0;
    int n = 0;
    double mean() const { return n > 0 ? sum / n : 0; }
    double variance_of_mean() const;
  };
  absl::Duration SpanLength(absl::Duration window) const;
  struct Window {
    double mid_s = 0;  // midpoint, seconds from the start
    double latency_ms = 0;
    size_t span = 0;
  };
  // Judges the horizon ending with complete span `last`.
  void Judge(size_t last);

  const WarmupDetectorOptions options_;
  absl::Duration span_ = absl::ZeroDuration();  // fixed by the first window
  std::vector<Span> spans_;
  std::vector<Window> windows_;  // with a latency, in order
  size_t complete_ = 0;          // spans_[0, complete_) are complete
  absl::Duration observed_ = absl::ZeroDuration();
  bool verdict_ = false;
  bool falling_ = false;
  absl::Duration warmup_end_ = absl::ZeroDuration();
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_WARMUP_DETECTOR_H_
