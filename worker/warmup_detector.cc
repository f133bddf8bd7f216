// Cold-start detection over spans of windows. See warmup_detector.h.
#include "worker/warmup_detector.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "common/line_fit.h"

namespace vanguard::worker {

double WarmupDetector::Span::variance_of_mean() const {
  if (n < 2) return 0;
  const double m = mean();
  const double variance = std::max(0.0, (sum_squares - n * m * m) / (n - 1));
  return variance / n;
}

absl::Duration WarmupDetector::SpanLength(absl::Duration window) const {
  absl::Duration span = std::max(options_.span, window * options_.min_windows_per_span);
  if (window > absl::ZeroDuration()) span = window * std::ceil(absl::FDivDuration(span, window));
  return span > absl::ZeroDuration() ? span : absl::Seconds(10);
}

absl::Duration WarmupDetector::evidence_needed(absl::Duration window) const {
  return SpanLength(window) * std::max(2, options_.min_spans);
}

void WarmupDetector::Add(absl::Duration start, absl::Duration length, double latency_ms) {
  if (span_ == absl::ZeroDuration()) span_ = SpanLength(length);
  observed_ = std::max(observed_, start + length);
  const absl::Duration mid = start + length / 2;
  const size_t index =
      static_cast<size_t>(std::max(0.0, std::floor(absl::FDivDuration(mid, span_))));
  const size_t complete = static_cast<size_t>(std::floor(absl::FDivDuration(observed_, span_)));
  if (spans_.size() < std::max(index + 1, complete)) spans_.resize(std::max(index + 1, complete));
  if (latency_ms > 0 && std::isfinite(latency_ms)) {
    Span& s = spans_[index];
    s.sum += latency_ms;
    s.sum_squares += latency_ms * latency_ms;
    ++s.n;
    windows_.push_back({absl::ToDoubleSeconds(mid), latency_ms, index});
  }
  while (complete_ < complete) Judge(complete_++);
}

void WarmupDetector::Judge(size_t last) {
  if (last + 1 < static_cast<size_t>(std::max(2, options_.min_spans))) return;
  const size_t lookback = static_cast<size_t>(std::max(1, options_.lookback_spans));
  const size_t first = last > lookback ? last - lookback : 0;
  // Least-squares line through the horizon's windows.
  std::vector<double> mid_s, latency_ms;
  for (const Window& w : windows_) {
    if (w.span < first || w.span > last) continue;
    mid_s.push_back(w.mid_s);
    latency_ms.push_back(w.latency_ms);
  }
  if (mid_s.size() < 4 || spans_[last].n < 2) return;  // no verdict, or keep the previous one
  const std::optional<LineFit> fit = FitLine(mid_s, latency_ms);
  if (!fit) return;
  const double n = static_cast<double>(fit->n);
  const double slope = fit->slope;
  const double horizon_s = absl::ToDoubleSeconds(span_) * static_cast<double>(last + 1 - first);
  const double end_s = absl::ToDoubleSeconds(span_) * static_cast<double>(last + 1);
  const double y_mean = fit->mean_y;
  double level = fit->At(end_s);
  if (level <= 0) level = y_mean;
  const double drop = -slope * horizon_s / level;
  const double drop_se = fit->slope_se * horizon_s / level;
  falling_ = drop - options_.z * drop_se > options_.tolerance;
  // Neither falling nor shown flat: no verdict (a noisy latency hides a slow warmup).
  verdict_ = falling_ || drop + options_.z * drop_se <= options_.warm_tolerance;
  if (!verdict_ || falling_) return;
  // Warm: when did it stop falling? The last span before the horizon above its level.
  const double level_variance = fit->syy / (n - 1) / n;
  warmup_end_ = absl::ZeroDuration();
  for (size_t i = 0; i < first; ++i) {
    const Span& s = spans_[i];
    if (s.n < 2) continue;
    const double noise = options_.z * std::sqrt(s.variance_of_mean() + level_variance);
    if (s.mean() - y_mean - noise > options_.tolerance * y_mean) {
      warmup_end_ = span_ * static_cast<double>(i + 1);
    }
  }
}

}  // namespace vanguard::worker
