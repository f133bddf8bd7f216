// Least-squares line. See line_fit.h.
#include "common/line_fit.h"

#include <cmath>

namespace vanguard {

std::optional<LineFit> FitLine(absl::Span<const double> x, absl::Span<const double> y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  LineFit f;
  f.n = x.size();
  const double n = static_cast<double>(f.n);
  for (size_t i = 0; i < f.n; ++i) {
    f.mean_x += x[i];
    f.mean_y += y[i];
  }
  f.mean_x /= n;
  f.mean_y /= n;
  double sxy = 0;
  for (size_t i = 0; i < f.n; ++i) {
    f.sxx += (x[i] - f.mean_x) * (x[i] - f.mean_x);
    f.syy += (y[i] - f.mean_y) * (y[i] - f.mean_y);
    sxy += (x[i] - f.mean_x) * (y[i] - f.mean_y);
  }
  if (!(f.sxx > 0)) return std::nullopt;
  f.slope = sxy / f.sxx;
  for (size_t i = 0; i < f.n; ++i) {
    const double r = y[i] - f.At(x[i]);
    f.residual += r * r;
  }
  if (f.n >= 3) f.slope_se = std::sqrt(f.residual / (n - 2) / f.sxx);
  return f;
}

}  // namespace vanguard
