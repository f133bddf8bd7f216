// Capacity and latency comparison of two tests; see compare.h.
#include "orchestrator/cli/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vanguard::cli {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// "B is higher by 50.0%", "B is 3.0% lower".
std::string Difference(double change_pct, bool as_by) {
  const char* direction = change_pct > 0 ? "higher" : "lower";
  return as_by ? absl::StrFormat("B is %s by %.1f%%", direction, std::fabs(change_pct))
               : absl::StrFormat("B is %.1f%% %s", std::fabs(change_pct), direction);
}

std::string Verdict(const CapacityComparison& c) {
  if (!c.change_pct.has_value()) {
    return absl::StrFormat("no percentage: A found no sustainable rate (B: %.1f qps)",
                           c.b.estimate);
  }
  if (*c.change_pct == 0) {
    return "within the noise: both estimates are the same";
  }
  if (!c.a.stated || !c.b.stated) {
    return absl::StrCat(Difference(*c.change_pct, true), ", but test ", c.a.stated ? "B" : "A",
                        " states no confidence interval: whether that is beyond the noise is "
                        "unknown");
  }
  if (c.beyond_intervals) {
    return absl::StrCat(Difference(*c.change_pct, true),
                        " \u2014 beyond both tests' confidence intervals");
  }
  return absl::StrCat("within the noise: ", Difference(*c.change_pct, false),
                      ", but the confidence intervals overlap");
}

struct Point {
  double rate = 0;
  const v1::LatencySummary* latency = nullptr;
};

// The test's measured rates in increasing order, one point per rate (its latest step).
std::vector<Point> MeasuredPoints(const v1::Test& test) {
  std::map<double, const v1::Step*> latest;
  for (const v1::Step& step : test.steps()) {
    if (step.interrupted() || !(step.target_qps() > 0)) continue;
    const v1::Step*& kept = latest[step.target_qps()];
    if (kept == nullptr || std::make_pair(step.attempt(), step.index()) >=
                               std::make_pair(kept->attempt(), kept->index())) {
      kept = &step;
    }
  }
  std::vector<Point> points;
  for (const auto& [rate, step] : latest) points.push_back({rate, &step->latency()});
  return points;
}

double Lerp(double y0, double y1, double t) { return y0 + (y1 - y0) * t; }

// `rate` must lie within the points' range.
LatencyEstimate EstimateAt(const std::vector<Point>& points, double rate) {
  auto above = std::lower_bound(points.begin(), points.end(), rate,
                                [](const Point& p, double r) { return p.rate < r; });
  LatencyEstimate estimate;
  if (above->rate == rate) {
    estimate = {above->latency->p50_ms(),
                above->latency->p90_ms(),
                above->latency->p99_ms(),
                above->latency->max_ms(),
                rate,
                rate};
    return estimate;
  }
  const Point& below = *(above - 1);
  const double t = (rate - below.rate) / (above->rate - below.rate);
  const v1::LatencySummary& lo = *below.latency;
  const v1::LatencySummary& hi = *above->latency;
  estimate = {Lerp(lo.p50_ms(), hi.p50_ms(), t),
              Lerp(lo.p90_ms(), hi.p90_ms(), t),
              Lerp(lo.p99_ms(), hi.p99_ms(), t),
              Lerp(lo.max_ms(), hi.max_ms(), t),
              below.rate,
              above->rate};
  return estimate;
}

}  // namespace

bool CapacityInterval::Contains(double qps) const {
  return qps >= low && (qps < high || (qps == high && low == high));
}

CapacityInterval IntervalOf(const v1::TestResult& result) {
  CapacityInterval interval;
  interval.estimate = result.max_sustainable_qps();
  interval.at_least = result.at_least();
  const double low = result.confidence_low_qps();
  const double high = result.confidence_high_qps();
  interval.stated = interval.at_least || low > 0 || high > 0;
  if (!interval.stated) {
    interval.low = interval.high = interval.estimate;
  } else if (interval.at_least) {
    interval.low = low > 0 ? low : interval.estimate;
    interval.high = kUnbounded;
  } else {
    interval.low = low;
    interval.high = high > 0 ? std::max(high, low) : kUnbounded;
  }
  return interval;
}

bool Overlap(const CapacityInterval& a, const CapacityInterval& b) {
  const double low = std::max(a.low, b.low);
  const double high = std::min(a.high, b.high);
  if (low != high) return low < high;
  return a.Contains(low) && b.Contains(low);
}

CapacityComparison CompareCapacity(const v1::TestResult& a, const v1::TestResult& b) {
  CapacityComparison c;
  c.a = IntervalOf(a);
  c.b = IntervalOf(b);
  if (c.a.estimate > 0) c.change_pct = (c.b.estimate - c.a.estimate) / c.a.estimate * 100;
  c.beyond_intervals = c.a.stated && c.b.stated && !Overlap(c.a, c.b);
  c.verdict = Verdict(c);
  return c;
}

std::optional<LatencyAtRate> LatencyAtCommonRate(const v1::Test& a, const v1::Test& b) {
  const std::vector<Point> points_a = MeasuredPoints(a);
  const std::vector<Point> points_b = MeasuredPoints(b);
  if (points_a.empty() || points_b.empty()) return std::nullopt;
  const double rate = std::min(points_a.back().rate, points_b.back().rate);
  if (rate < std::max(points_a.front().rate, points_b.front().rate)) return std::nullopt;
  return LatencyAtRate{rate, EstimateAt(points_a, rate), EstimateAt(points_b, rate)};
}

}  // namespace vanguard::cli
