// Pooled tail verdicts across the steps of one test.
//
// A p99 limit holds over the long run when at most 1% of the requests exceed it. A short step
// estimates that fraction from a few thousand requests, and near the limit a step's own
// estimate is noisy: a rare disturbance (a stall, a GC pause) lands in one 3 s step and not in
// the next, and a step at a lower rate can read worse than one above it. The fraction over
// the limit only grows with the rate, so the steps of a test can lend each other their
// requests: the weighted isotonic (non-decreasing in rate) least-squares fit of the steps'
// tail ratios (fraction over the limit / allowed fraction) is the maximum-likelihood estimate
// of a non-decreasing exceedance curve, and pools exactly the steps whose own readings
// contradict the order. A disturbance then counts with the weight of the requests it hit, in
// the neighbourhood where it landed, instead of deciding one step alone.
//
//   std::vector<TailPoint> points = {{1000, 0.4, 3000}, {1100, 1.6, 3300}, {1050, 2.0, 3150}};
//   std::vector<double> fitted = IsotonicTailFit(points);  // same order as points
//
// Pure; no state.
#ifndef VANGUARD_WORKER_TAIL_POOLING_H_
#define VANGUARD_WORKER_TAIL_POOLING_H_

#include <optional>
#include <vector>

namespace vanguard::worker {

// The fraction of requests a p99 limit lets exceed it; tail ratios are fractions over it.
inline constexpr double kTailAllowedFraction = 0.01;

struct TailPoint {
  double rate_qps = 0;
  double ratio = 0;   // fraction of requests over the limit / the fraction allowed
  double weight = 0;  // requests measured; points with weight <= 0 are fitted but add nothing
  // The fraction the limit behind `ratio` allows: 1% for a p99, half for a p50, the SLO's
  // max_error_rate when errors made the ratio.
  double allowed = kTailAllowedFraction;
};

// The fitted ratio of every point, in the order given. Points at the same rate share one
// value. Empty input: empty output.
std::vector<double> IsotonicTailFit(const std::vector<TailPoint>& points);

// Which points fitted over the limit (fitted > 1, from IsotonicTailFit) are over it by too
// few requests to tell. A pooled block (the points sharing one fitted value) that expects
// fewer than kFewTailEvents requests over the limit at the allowed share can read over it by
// chance: three requests over a p99 limit in 174 read 1.7 times the allowed share, and at a
// fiftieth of the capacity that made the lowest failure of a search. Such a block's count
// must be significant (at kFewTailSignificance, Poisson with the allowed share's mean);
// otherwise its points are marked true here. Blocks expecting more are always decided by
// their fit, and so is every point within kFewTailDistance below the lowest decided failure:
// there the curve is rising to the limit and a reading's own count, few or not, is the best
// placement of the crossing (a significance test there would push every low-rate search above
// its crossing). Same order as points; points and fitted of the same size.
std::vector<bool> TooFewOverLimit(const std::vector<TailPoint>& points,
                                  const std::vector<double>& fitted);
inline constexpr double kFewTailEvents = 5;
inline constexpr double kFewTailSignificance = 0.05;
inline constexpr double kFewTailDistance = 2;  // a factor in rate

// A local dose-response curve of the fraction of requests over the limit, above a floor the
// load does not move (stalls, errors, jitter that exceed the limit at any rate):
// fraction(rate) = floor + (1 - floor) / (1 + exp(-(a + b * (rate / center - 1)))), as a
// tail ratio.
struct TailCurve {
  double center = 0;
  double a = 0;
  double b = 0;
  double floor = 0;
  double At(double rate_qps) const;  // tail ratio (fraction / kTailAllowedFraction)
  // The rate where the curve reaches the allowed fraction (tail ratio 1).
  double Crossing() const;
};

// Isotonic pooling only merges readings that contradict the order; a disturbance that lands
// in the highest step of a neighbourhood is never shared with the calm steps below it. Near a
// capacity cliff the fraction over the limit grows roughly exponentially with the rate and
// saturates at 1 when the model is overloaded, so the steps in [low_qps, high_qps] are fitted
// with a logistic curve in the rate (a dose-response fit: binomial quasi-likelihood with the
// requests as weights, by Newton's method). The fit matches the neighbourhood's total count
// over the limit, so a disturbance counts with its long-run weight wherever it landed.
//
// The curve is never steeper than the readings can show. A step's arrivals are a Poisson
// sample: the rate it actually offered scatters by 1 / sqrt(requests) around the one asked
// for, so even a model with a perfect cliff reads, against the asked rate, a curve blurred by
// that scatter, whose log-odds rise at the 1% level by at most kCliffLogitSlope per unit of
// relative scatter. Without that bound a calm step and one that met a rare episode (a stall,
// an LLM's sequence slots filling up) a fraction of a percent apart fit a vertical cliff
// between them, and the calm one passes however far over the limit the other read; within it,
// a reading far over the limit pulls the crossing below it by the distance the steepest
// possible curve needs to fall back to the limit.
//
// A logistic curve alone falls to no requests over the limit below its crossing, so with a
// floor (stalls putting a share over the limit at every rate, then a cliff) it bends down
// through the calm readings and crosses the limit below the highest of them, which passed on
// thousands of requests. The floor lies between none and the lowest fraction a reading in the
// neighbourhood read (below the allowed share), at the most likely of kFloorCandidates levels,
// and only when that curve's log-likelihood exceeds the curve's without a floor by
// kFloorLogLikelihoodGain: the floor is one more parameter, and the requests of a step are not
// independent trials (a stall holds many at once), so the usual chi-square margin of about 2
// per parameter would take floors the readings do not show.
//
// nullopt when the neighbourhood cannot fix the curve: fewer than three points or two
// distinct rates, no request over the limit, no reading with some but not all requests over
// the limit (readings of none and all only place no crossing between them), or a curve that
// does not rise with the rate.
std::optional<TailCurve> FitTailCurve(const std::vector<TailPoint>& points, double low_qps,
                                      double high_qps);
inline constexpr int kFloorCandidates = 10;
inline constexpr double kFloorLogLikelihoodGain = 10;

// d logit(p) / dz of the normal distribution where p = 1% (phi(z) / (p (1 - p)), z = -2.326):
// the log-odds slope, per standard deviation of the rate, of a perfect cliff blurred by the
// scatter of the offered rate, at the share a p99 limit allows.
inline constexpr double kCliffLogitSlope = 2.69;

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_TAIL_POOLING_H_
