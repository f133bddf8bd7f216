// TailConfidenceOf: binomial-like errors for independent windows, a stall reads uncertain,
// correlated neighbours are caught by batching.
#include "worker/tail_confidence.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/histogram.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

constexpr double kAllowed = 0.01;

// `n` windows of `per_window` requests, each over the limit with probability p.
std::vector<TailUnit> Independent(int n, int per_window, double p, std::mt19937& rng) {
  std::binomial_distribution<int64_t> over(per_window, p);
  std::vector<TailUnit> windows;
  for (int i = 0; i < n; ++i) windows.push_back({per_window, over(rng)});
  return windows;
}

TEST(TailConfidenceTest, IndependentWindowsReadLikeIndependentRequests) {
  // 20 windows of 100 requests, 2% over: the binomial standard error of the share is
  // sqrt(p (1 - p) / 2000), 0.31 in tail-ratio units; batch means agree on average.
  std::mt19937 rng(7);
  const double binomial = std::sqrt(0.02 * 0.98 / 2000) / kAllowed;
  double sum = 0;
  constexpr int kRuns = 300;
  for (int run = 0; run < kRuns; ++run) {
    const TailConfidence c = TailConfidenceOf(Independent(20, 100, 0.02, rng), kAllowed);
    EXPECT_EQ(c.samples, 2000);
    EXPECT_GE(c.units, 10);
    sum += c.ratio_se;
  }
  EXPECT_GT(sum / kRuns, 0.85 * binomial);
  EXPECT_LT(sum / kRuns, 1.25 * binomial);
}

TEST(TailConfidenceTest, AStallInOneWindowIsFarLessCertainThanTheSameCountSpread) {
  std::vector<TailUnit> stall(20, TailUnit{100, 0});
  stall[7].over = 40;  // every slow request of the step held by one stall
  std::mt19937 rng(11);
  const TailConfidence spread = TailConfidenceOf(Independent(20, 100, 0.02, rng), kAllowed);
  const TailConfidence stalled = TailConfidenceOf(stall, kAllowed);
  EXPECT_DOUBLE_EQ(stalled.ratio, 2.0);
  EXPECT_EQ(stalled.units, 20);
  // 19 windows at 0 and one at 40 of 100: sqrt((38^2 + 19 * 2^2) / (20 * 19)) / 100 = 0.02.
  EXPECT_NEAR(stalled.ratio_se, 2.0, 1e-9);
  EXPECT_GT(stalled.ratio_se, 4 * spread.ratio_se);
}

TEST(TailConfidenceTest, CorrelatedNeighboursAreCaughtByBatching) {
  // Slow requests come in runs of four windows (a queue draining after each stall): window
  // by window the scatter looks smaller than batch by batch.
  std::vector<TailUnit> windows(64, TailUnit{100, 0});
  for (int start : {3, 30, 50}) {
    for (int i = start; i < start + 4; ++i) windows[i].over = 5;
  }
  const TailConfidence c = TailConfidenceOf(windows, kAllowed);
  // By single windows only (min_units above the windows: no batching).
  const TailConfidence single = TailConfidenceOf(windows, kAllowed, /*min_units=*/64);
  EXPECT_EQ(single.units, 64);
  EXPECT_GT(c.ratio_se, 1.5 * single.ratio_se);
  EXPECT_LT(c.units, 64);
  EXPECT_GE(c.units, 8);
}

TEST(TailConfidenceTest, EdgeCases) {
  EXPECT_EQ(TailConfidenceOf({}, kAllowed).units, 0);
  const TailConfidence one = TailConfidenceOf({{100, 3}}, kAllowed);
  EXPECT_DOUBLE_EQ(one.ratio, 3.0);
  EXPECT_EQ(one.units, 1);
  EXPECT_EQ(one.ratio_se, 0);
  const TailConfidence none = TailConfidenceOf({{100, 0}, {0, 0}, {100, 0}}, kAllowed);
  EXPECT_EQ(none.units, 2);  // the empty window is not a unit
  EXPECT_EQ(none.ratio, 0);
  EXPECT_EQ(none.ratio_se, 0);
}

TEST(TailConfidenceTest, UnitsFromHistograms) {
  LatencyHistogram h;
  h.RecordN(10'000, 97);
  h.RecordN(300'000, 3);
  const TailUnit u = TailUnitOf(h.Serialize(), 100);
  EXPECT_EQ(u.samples, 100);
  EXPECT_EQ(u.over, 3);
  EXPECT_EQ(TailUnitOf("", 100).samples, 0);
  EXPECT_EQ(TailUnitOf("garbage", 100).samples, 0);
  EXPECT_EQ(TailUnitOf(h.Serialize(), 0).samples, 0);
}

}  // namespace
}  // namespace vanguard::worker
