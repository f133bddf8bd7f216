// Batch means over a step's windows. See tail_confidence.h.
#include "worker/tail_confidence.h"

#include <algorithm>
#include <cmath>

#include "absl/status/statusor.h"
#include "common/histogram.h"

namespace vanguard::worker {
namespace {

// Standard error of the pooled share `p` over `batches` (ratio estimator).
double BatchStandardError(const std::vector<TailUnit>& batches, double p) {
  const double m = static_cast<double>(batches.size());
  if (batches.size() < 2) return 0;
  double samples = 0, scatter = 0;
  for (const TailUnit& b : batches) {
    samples += static_cast<double>(b.samples);
    const double residual = static_cast<double>(b.over) - p * static_cast<double>(b.samples);
    scatter += residual * residual;
  }
  const double mean_samples = samples / m;
  return std::sqrt(scatter / (m * (m - 1))) / mean_samples;
}

// `windows` merged into batches of `size` consecutive ones, the leftover into the last.
std::vector<TailUnit> Batches(const std::vector<TailUnit>& windows, size_t size) {
  std::vector<TailUnit> batches;
  const size_t full = windows.size() / size;
  for (size_t i = 0; i < windows.size(); ++i) {
    const size_t b = std::min(i / size, full - 1);
    if (batches.size() <= b) batches.emplace_back();
    batches[b].samples += windows[i].samples;
    batches[b].over += windows[i].over;
  }
  return batches;
}

}  // namespace

TailUnit TailUnitOf(const std::string& histogram, double limit_ms) {
  if (limit_ms <= 0 || histogram.empty()) return {};
  absl::StatusOr<LatencyHistogram> h = LatencyHistogram::Deserialize(histogram);
  if (!h.ok()) return {};
  return {h->count(), h->CountAbove(limit_ms * 1000)};
}

TailConfidence TailConfidenceOf(const std::vector<TailUnit>& windows, double allowed_fraction,
                                int min_units) {
  std::vector<TailUnit> units;
  TailConfidence c;
  int64_t over = 0;
  for (const TailUnit& w : windows) {
    if (w.samples <= 0) continue;
    units.push_back({w.samples, std::clamp<int64_t>(w.over, 0, w.samples)});
    c.samples += w.samples;
    over += units.back().over;
  }
  c.units = static_cast<int>(units.size());
  if (c.samples == 0 || allowed_fraction <= 0) return c;
  const double p = static_cast<double>(over) / static_cast<double>(c.samples);
  c.ratio = p / allowed_fraction;
  if (units.size() < 2 || over == 0) return c;
  double se = BatchStandardError(units, p);
  for (size_t size = 2; units.size() / size >= static_cast<size_t>(std::max(2, min_units));
       size *= 2) {
    const std::vector<TailUnit> batches = Batches(units, size);
    const double s = BatchStandardError(batches, p);
    if (s > se) {
      se = s;
      c.units = static_cast<int>(batches.size());
    }
  }
  c.ratio_se = se / allowed_fraction;
  return c;
}

}  // namespace vanguard::worker
