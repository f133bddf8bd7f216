// Pool-adjacent-violators over rate-ordered tail ratios. See tail_pooling.h.
#include "worker/tail_pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace vanguard::worker {
namespace {

// Consecutive rate-ordered points sharing one fitted value.
struct Block {
  double weight = 0;
  double weighted_sum = 0;  // sum of weight * ratio
  double plain_sum = 0;     // sum of ratio, for blocks without weight
  int count = 0;
  size_t first = 0;  // position in rate order of the block's first point

  double value() const { return weight > 0 ? weighted_sum / weight : plain_sum / count; }
  void Absorb(const Block& o) {
    weight += o.weight;
    weighted_sum += o.weighted_sum;
    plain_sum += o.plain_sum;
    count += o.count;
  }
};

}  // namespace

std::vector<double> IsotonicTailFit(const std::vector<TailPoint>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return points[a].rate_qps < points[b].rate_qps; });
  // Equal rates are one point of the curve: all of them pooled before the order is enforced
  // (pooling them one by one into a block the order had already merged would drag the lower
  // rates of that block along with the later readings).
  std::vector<Block> by_rate;
  for (size_t k = 0; k < order.size(); ++k) {
    const TailPoint& p = points[order[k]];
    const double w = std::max(0.0, p.weight);
    const Block point{w, w * p.ratio, p.ratio, 1, k};
    if (!by_rate.empty() && points[order[k - 1]].rate_qps == p.rate_qps) {
      by_rate.back().Absorb(point);
    } else {
      by_rate.push_back(point);
    }
  }
  std::vector<Block> blocks;
  for (const Block& point : by_rate) {
    blocks.push_back(point);
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].value() > blocks.back().value()) {
      blocks[blocks.size() - 2].Absorb(blocks.back());
      blocks.pop_back();
    }
  }
  std::vector<double> fitted(points.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    const size_t end = b + 1 < blocks.size() ? blocks[b + 1].first : order.size();
    for (size_t k = blocks[b].first; k < end; ++k) fitted[order[k]] = blocks[b].value();
  }
  return fitted;
}

namespace {

// P(X >= count) for X ~ Poisson(mean).
double PoissonAtLeast(int count, double mean) {
  double below = 0, term = std::exp(-mean);
  for (int c = 0; c < count && term > 0; ++c) {  // past underflow the terms add nothing
    below += term;
    term *= mean / (c + 1);
  }
  return std::max(0.0, 1 - below);
}

}  // namespace

std::vector<bool> TooFewOverLimit(const std::vector<TailPoint>& points,
                                  const std::vector<double>& fitted) {
  std::vector<bool> too_few(points.size(), false);
  for (size_t k = 0; k < points.size(); ++k) {
    if (!(fitted[k] > 1)) continue;
    double expected = 0, observed = 0;  // requests over the limit: at the allowed share, read
    for (size_t j = 0; j < points.size(); ++j) {
      if (fitted[j] != fitted[k]) continue;
      const double w = std::max(0.0, points[j].weight);
      expected += w * points[j].allowed;
      observed += w * points[j].allowed * points[j].ratio;
    }
    if (expected >= kFewTailEvents) continue;
    const int count = static_cast<int>(std::lround(observed));
    too_few[k] = PoissonAtLeast(count, expected) >= kFewTailSignificance;
  }
  // Near a decided failure the curve is rising: there a reading's own count places the
  // crossing, few or not.
  double decided = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < points.size(); ++k) {
    if (fitted[k] > 1 && !too_few[k]) decided = std::min(decided, points[k].rate_qps);
  }
  for (size_t k = 0; k < points.size(); ++k) {
    if (points[k].rate_qps * kFewTailDistance >= decided) too_few[k] = false;
  }
  return too_few;
}

double TailCurve::At(double rate_qps) const {
  const double z = a + b * (rate_qps / center - 1);
  return (floor + (1 - floor) / (1 + std::exp(-z))) / kTailAllowedFraction;
}

double TailCurve::Crossing() const {
  // Where the logistic part adds the allowed share's excess over the floor.
  const double rise = (kTailAllowedFraction - floor) / (1 - floor);
  const double z = std::log(rise / (1 - rise));
  return center * (1 + (z - a) / b);
}

namespace {

// A reading in the neighbourhood: its position around the curve's center, the fraction of its
// requests over the limit and its weight (requests).
struct Near {
  double x = 0;         // rate / center - 1 (the rate itself until Centered)
  double fraction = 0;  // over the limit, clamped to [0, 1]
  double weight = 0;
};

// The readings in [low_qps, high_qps] that can fix a curve above `floor`, centered on their
// weighted mean rate (c.center); nullopt when they cannot (see FitTailCurve's contract).
struct Neighbourhood {
  std::vector<Near> near;   // fractions over the floor, rescaled to [0, 1]
  double floor = 0;         // TailCurve::floor
  double over = 0;          // weighted fraction over the limit above the floor
  double weight = 0;        // total weight
  double sqrt_weights = 0;  // sum of sqrt(weight)
  double x_span = 0;        // largest |x| of a point
  double center = 0;
};

// The readings in [low_qps, high_qps], with their fractions over the limit.
std::vector<Near> ReadingsIn(const std::vector<TailPoint>& points, double low_qps,
                             double high_qps) {
  std::vector<Near> near;
  for (const TailPoint& p : points) {
    if (p.rate_qps < low_qps || p.rate_qps > high_qps || p.weight <= 0 || p.ratio < 0) continue;
    near.push_back({p.rate_qps, std::min(1.0, p.ratio * kTailAllowedFraction), p.weight});
  }
  return near;
}

std::optional<Neighbourhood> CollectNeighbourhood(const std::vector<Near>& readings, double floor) {
  Neighbourhood h;
  h.floor = floor;
  std::set<double> rates;
  double weighted_rate = 0;
  bool on_slope = false;
  for (Near n : readings) {
    n.fraction = std::max(0.0, (n.fraction - floor) / (1 - floor));
    h.near.push_back(n);
    rates.insert(n.x);
    h.over += n.weight * n.fraction;
    h.weight += n.weight;
    h.sqrt_weights += std::sqrt(n.weight);
    weighted_rate += n.weight * n.x;
    // A reading on the slope (some but not all requests over the limit): with none and all
    // only, any step between them fits, and nothing says where between them the limit is.
    on_slope = on_slope || (n.fraction > 0 && n.fraction < 1);
  }
  if (h.near.size() < 3 || rates.size() < 2 || h.over <= 0 || h.over >= h.weight || !on_slope) {
    return std::nullopt;
  }
  h.center = weighted_rate / h.weight;
  for (Near& n : h.near) {
    n.x = n.x / h.center - 1;
    h.x_span = std::max(h.x_span, std::abs(n.x));
  }
  return h;
}

// The fit with the slope held at max_b: Newton steps on the first score equation alone. Only
// for readings that rise with the rate (a falling neighbourhood has no crossing).
std::optional<TailCurve> FitAtSlope(const Neighbourhood& h, double max_b) {
  double rise = 0;
  for (const Near& n : h.near) rise += n.weight * n.x * (n.fraction - h.over / h.weight);
  if (!(rise > 0)) return std::nullopt;
  TailCurve capped{h.center, std::log(h.over / (h.weight - h.over)), max_b, h.floor};
  for (int iter = 0; iter < 200; ++iter) {
    double g0 = 0, h00 = 0;
    for (const Near& n : h.near) {
      const double mu = 1 / (1 + std::exp(-(capped.a + capped.b * n.x)));
      g0 += n.weight * (n.fraction - mu);
      h00 += n.weight * mu * (1 - mu);
    }
    if (!(h00 > 0) || !std::isfinite(h00)) return std::nullopt;
    const double da = std::clamp(g0 / h00, -2.0, 2.0);
    capped.a += da;
    if (!std::isfinite(capped.a)) return std::nullopt;
    if (std::abs(da) < 1e-9) return capped;
  }
  return std::nullopt;
}

// How the unconstrained fit ended.
enum class FitEnd { kConverged, kNotRising, kPastMaxSlope };

// Starts flat at the pooled fraction, then Newton steps on the score equations
//   sum w (fraction - mu) = 0,  sum w x (fraction - mu) = 0,
// damped so a step never moves the log-odds by more than 2 anywhere in the neighbourhood.
// kPastMaxSlope also when the steps diverge (separated readings) or fail to converge.
FitEnd FitUnconstrained(const Neighbourhood& h, double max_b, TailCurve* c) {
  *c = TailCurve{h.center, std::log(h.over / (h.weight - h.over)), 0, h.floor};
  for (int iter = 0; iter < 200; ++iter) {
    double g0 = 0, g1 = 0, h00 = 0, h01 = 0, h11 = 0;
    for (const Near& n : h.near) {
      const double mu = 1 / (1 + std::exp(-(c->a + c->b * n.x)));
      const double v = n.weight * mu * (1 - mu);
      g0 += n.weight * (n.fraction - mu);
      g1 += n.weight * n.x * (n.fraction - mu);
      h00 += v;
      h01 += v * n.x;
      h11 += v * n.x * n.x;
    }
    const double det = h00 * h11 - h01 * h01;
    if (!(det > 0) || !std::isfinite(det)) break;
    double da = (h11 * g0 - h01 * g1) / det;
    double db = (h00 * g1 - h01 * g0) / det;
    const double largest = std::abs(da) + std::abs(db) * h.x_span;
    if (largest > 2) {
      da *= 2 / largest;
      db *= 2 / largest;
    }
    c->a += da;
    c->b += db;
    if (!std::isfinite(c->a) || !std::isfinite(c->b)) break;
    if (std::abs(da) < 1e-9 && std::abs(db) < 1e-9) {
      if (c->b <= 0) return FitEnd::kNotRising;
      return c->b > max_b ? FitEnd::kPastMaxSlope : FitEnd::kConverged;
    }
  }
  return FitEnd::kPastMaxSlope;
}

// The curve over one floor; nullopt as FitTailCurve's contract says.
std::optional<TailCurve> FitAboveFloor(const std::vector<Near>& readings, double floor) {
  const std::optional<Neighbourhood> h = CollectNeighbourhood(readings, floor);
  if (!h) return std::nullopt;
  // The steepest curve the readings can show (see kCliffLogitSlope): the relative scatter of
  // a step's arrivals, 1 / sqrt(requests), averaged over the requests.
  const double max_b = kCliffLogitSlope * h->weight / h->sqrt_weights;
  // The log-likelihood is concave, so when the unconstrained fit runs past max_b (or off to a
  // vertical cliff: separated readings) the best curve within the cap has b = max_b.
  TailCurve c;
  switch (FitUnconstrained(*h, max_b, &c)) {
    case FitEnd::kConverged:
      return c;
    case FitEnd::kNotRising:
      return std::nullopt;
    case FitEnd::kPastMaxSlope:
      break;
  }
  return FitAtSlope(*h, max_b);
}

// The binomial quasi-log-likelihood of the readings (fractions over the limit) under a curve.
double LogLikelihood(const std::vector<Near>& readings, const TailCurve& c) {
  double ll = 0;
  for (const Near& n : readings) {
    const double mu = std::clamp(c.At(n.x) * kTailAllowedFraction, 1e-12, 1 - 1e-12);
    ll += n.weight * (n.fraction * std::log(mu) + (1 - n.fraction) * std::log(1 - mu));
  }
  return ll;
}

}  // namespace

std::optional<TailCurve> FitTailCurve(const std::vector<TailPoint>& points, double low_qps,
                                      double high_qps) {
  const std::vector<Near> readings = ReadingsIn(points, low_qps, high_qps);
  if (readings.empty()) return std::nullopt;
  double lowest = 1;
  for (const Near& n : readings) lowest = std::min(lowest, n.fraction);
  // The floor is profiled: kFloorCandidates levels above none up to the lowest reading (none
  // when that is at the allowed share or above: no floor under a crossing); the most likely
  // curve with a floor replaces the one without only when it is more likely by
  // kFloorLogLikelihoodGain.
  const int candidates = lowest < kTailAllowedFraction ? kFloorCandidates : 0;
  std::optional<TailCurve> best = FitAboveFloor(readings, 0);
  double best_ll = best ? LogLikelihood(readings, *best) + kFloorLogLikelihoodGain
                        : -std::numeric_limits<double>::infinity();
  for (int k = 1; k <= candidates; ++k) {
    const std::optional<TailCurve> c = FitAboveFloor(readings, lowest * k / kFloorCandidates);
    if (!c) continue;
    if (const double ll = LogLikelihood(readings, *c); ll > best_ll) {
      best = c;
      best_ll = ll;
    }
  }
  return best;
}

}  // namespace vanguard::worker
