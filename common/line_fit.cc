// Least-squares line. See line_fit.h.
#include "common/line_fit.h"

#include <cmath>
#include <vector>

namespace vanguard {

std::optional<LineFit> FitLine(absl::Span<const double> x, absl::Span<const double> y) {
  return FitLine(x, y, std::vector<double>(x.size(), 1.0));
}

std::optional<LineFit> FitLine(absl::Span<const double> x, absl::Span<const double> y,
                               absl::Span<const double> w) {
  if (x.size() != y.size() || w.size() != x.size() || x.size() < 2) return std::nullopt;
  LineFit f;
  f.n = x.size();
  double total = 0;
  for (size_t i = 0; i < f.n; ++i) {
    if (!(w[i] > 0) || !std::isfinite(w[i])) return std::nullopt;
    total += w[i];
    f.mean_x += w[i] * x[i];
    f.mean_y += w[i] * y[i];
  }
  f.mean_x /= total;
  f.mean_y /= total;
  double sxy = 0;
  for (size_t i = 0; i < f.n; ++i) {
    f.sxx += w[i] * (x[i] - f.mean_x) * (x[i] - f.mean_x);
    f.syy += w[i] * (y[i] - f.mean_y) * (y[i] - f.mean_y);
    sxy += w[i] * (x[i] - f.mean_x) * (y[i] - f.mean_y);
  }
  if (!(f.sxx > 0)) return std::nullopt;
  f.slope = sxy / f.sxx;
  for (size_t i = 0; i < f.n; ++i) {
    const double r = y[i] - f.At(x[i]);
    f.residual += w[i] * r * r;
  }
  if (f.n >= 3) f.slope_se = std::sqrt(f.residual / (static_cast<double>(f.n) - 2) / f.sxx);
  return f;
}

}  // namespace vanguard
