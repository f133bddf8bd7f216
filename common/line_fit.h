// The least-squares line through points (x, y), with the standard error of its slope from
// the residuals: the one fit behind the worker's trend tests (steady state, warmup) and the
// adaptive search's line through its failed holds.
//
//   std::optional<LineFit> fit = FitLine({0, 1, 2, 3}, {10, 9, 8.5, 7});
//   if (fit) fit->At(4);  // the line extended to x = 4
//
// Pure; any thread.
#ifndef VANGUARD_COMMON_LINE_FIT_H_
#define VANGUARD_COMMON_LINE_FIT_H_

#include <cstddef>
#include <optional>

#include "absl/types/span.h"

namespace vanguard {

struct LineFit {
  size_t n = 0;
  double mean_x = 0;
  double mean_y = 0;
  double slope = 0;
  double sxx = 0;       // sum of (x - mean_x)^2
  double syy = 0;       // sum of (y - mean_y)^2
  double residual = 0;  // sum of squared residuals about the line
  double slope_se = 0;  // sqrt(residual / (n - 2) / sxx); 0 with fewer than 3 points

  double At(double x) const { return mean_y + slope * (x - mean_x); }
};

// nullopt when x and y differ in size, there are fewer than 2 points, or every x is the same.
std::optional<LineFit> FitLine(absl::Span<const double> x, absl::Span<const double> y);

// The weighted least-squares line: point i counts w[i] times (e.g. 1 / the variance of y[i]).
// The means, sums of squares and residual are weighted; slope_se assumes the weights are
// relative (it scales them by the residuals). nullopt as above, or when w differs in size or
// a weight is not positive and finite. Weights of 1 give FitLine(x, y).
std::optional<LineFit> FitLine(absl::Span<const double> x, absl::Span<const double> y,
                               absl::Span<const double> w);

}  // namespace vanguard

#endif  // VANGUARD_COMMON_LINE_FIT_H_
