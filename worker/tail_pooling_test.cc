// Unit tests of the pooled (isotonic) tail fit.
#include "worker/tail_pooling.h"

#include <cmath>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(IsotonicTailFitTest, OrderedReadingsAreKept) {
  EXPECT_THAT(IsotonicTailFit({{100, 0.1, 10}, {300, 2.0, 10}, {200, 0.5, 10}}),
              ElementsAre(DoubleEq(0.1), DoubleEq(2.0), DoubleEq(0.5)));
  EXPECT_THAT(IsotonicTailFit({}), IsEmpty());
}

TEST(IsotonicTailFitTest, ViolatorsArePooledByWeight) {
  // 200 reads worse than 300: both take their weighted mean (3*1000 + 1*3000) / 4000.
  EXPECT_THAT(IsotonicTailFit({{100, 0.2, 1000}, {200, 3.0, 1000}, {300, 1.0, 3000}}),
              ElementsAre(DoubleEq(0.2), DoubleEq(1.5), DoubleEq(1.5)));
}

TEST(IsotonicTailFitTest, PoolingCascadesBackwards) {
  // 400 pulls 300 down to 1.6 / 3, below 200's reading, so 200 joins the block too.
  EXPECT_THAT(IsotonicTailFit({{100, 0.1, 1}, {200, 1.0, 1}, {300, 1.2, 1}, {400, 0.2, 2}}),
              ElementsAre(DoubleEq(0.1), DoubleEq(0.65), DoubleEq(0.65), DoubleEq(0.65)));
}

TEST(IsotonicTailFitTest, EqualRatesAreOnePoint) {
  // Two readings at 200 in order already are still pooled: one rate, one value.
  EXPECT_THAT(IsotonicTailFit({{200, 0.5, 1}, {200, 1.5, 3}, {100, 0.1, 1}}),
              ElementsAre(DoubleEq(1.25), DoubleEq(1.25), DoubleEq(0.1)));
}

TEST(IsotonicTailFitTest, EqualRatesArePooledBeforeTheOrderIsEnforced) {
  // A calm short step at 690 (0 over 2000 requests) and a long hold there (8.72, 6000): one
  // point at 6.54, above the 0.07 at 560, which stays its own. Taken one at a time, the calm
  // reading would first pool 560 with itself and the hold would then drag 560 up to 4.9.
  EXPECT_THAT(IsotonicTailFit({{560, 0.07, 2700}, {690, 0, 2000}, {690, 8.72, 6000}}),
              ElementsAre(DoubleEq(0.07), DoubleEq(6.54), DoubleEq(6.54)));
}

TEST(TooFewOverLimitTest, AFewRequestsOverTheLimitAreNotAFailureUnlessSignificant) {
  // 3 requests over the limit in 174 read 1.72 of the 1% allowed: 1.74 expected, and 3 or
  // more come by chance a quarter of the time. 20 in 174 (ratio 11.5) do not.
  const std::vector<TailPoint> chance = {{0.33, 1.72, 174}};
  EXPECT_THAT(TooFewOverLimit(chance, IsotonicTailFit(chance)), ElementsAre(true));
  const std::vector<TailPoint> real = {{0.33, 11.5, 174}};
  EXPECT_THAT(TooFewOverLimit(real, IsotonicTailFit(real)), ElementsAre(false));
  // Passing points are never marked; a block is judged on its pooled count (two points of
  // 174 at ratio 1.72: 6 over, 3.5 expected, p = 0.14).
  const std::vector<TailPoint> pooled = {{1, 0.5, 1000}, {2, 1.72, 174}, {3, 1.72, 174}};
  EXPECT_THAT(TooFewOverLimit(pooled, IsotonicTailFit(pooled)), ElementsAre(false, true, true));
}

TEST(TooFewOverLimitTest, NearADecidedFailureAReadingsOwnCountDecides) {
  // 20 over the limit in 174 at 15 req/s is a decided failure; at 10 req/s (within a factor
  // of 2 below it) 3 in 174 is the curve rising and fails; at 5 req/s it is chance.
  const std::vector<TailPoint> near = {{10, 1.72, 174}, {15, 11.5, 174}};
  EXPECT_THAT(TooFewOverLimit(near, IsotonicTailFit(near)), ElementsAre(false, false));
  const std::vector<TailPoint> far = {{5, 1.72, 174}, {15, 11.5, 174}};
  EXPECT_THAT(TooFewOverLimit(far, IsotonicTailFit(far)), ElementsAre(true, false));
}

TEST(TooFewOverLimitTest, TheCountIsOfTheShareTheLimitAllows) {
  // Errors at twice a 5% max_error_rate in 180 requests: 18 errors where 9 are allowed is a
  // block expecting enough to be decided by its fit. Read at a p99's 1%, the same ratio would
  // be 3.6 requests against 1.8 expected, too few to tell.
  const std::vector<TailPoint> errors = {{60, 2, 180, 0.05}};
  EXPECT_THAT(TooFewOverLimit(errors, IsotonicTailFit(errors)), ElementsAre(false));
  const std::vector<TailPoint> as_p99 = {{60, 2, 180}};
  EXPECT_THAT(TooFewOverLimit(as_p99, IsotonicTailFit(as_p99)), ElementsAre(true));
}

TEST(IsotonicTailFitTest, WeightlessPointsDoNotMoveOthers) {
  EXPECT_THAT(IsotonicTailFit({{100, 0.4, 0}, {200, 0.3, 100}}),
              ElementsAre(DoubleEq(0.3), DoubleEq(0.3)));
}

TEST(FitTailCurveTest, PlacesTheCrossingOnASteepCliff) {
  // Calm below the cliff, 55% of the requests over the limit just past it: the curve
  // crosses between 680 (0.19% over) and 729, not below the calm readings.
  const std::vector<TailPoint> points = {
      {560, 0, 1700}, {648, 0, 1950}, {680, 0.19, 2100}, {729, 55, 2200}, {823, 80, 2400}};
  const std::optional<TailCurve> c = FitTailCurve(points, 500, 729);
  ASSERT_TRUE(c.has_value());
  EXPECT_GT(c->Crossing(), 680);
  EXPECT_LT(c->Crossing(), 729);
  EXPECT_LT(c->At(729), 100);
}

TEST(FitTailCurveTest, RecoversAnExponentialCurveAndItsCrossing) {
  std::vector<TailPoint> points;
  for (double rate : {800.0, 900.0, 1000.0, 1100.0}) {
    points.push_back({rate, std::exp(5 * (rate / 1000 - 1)), 2000});
  }
  const std::optional<TailCurve> c = FitTailCurve(points, 0, 1e9);
  ASSERT_TRUE(c.has_value());
  // Below 2% over the limit the logistic curve is the exponential to within 2%.
  EXPECT_NEAR(c->Crossing(), 1000, 2);
  EXPECT_NEAR(c->At(1100), std::exp(0.5), 0.02 * std::exp(0.5));
}

TEST(FitTailCurveTest, KeepsTheNeighbourhoodsTotalOverTheLimit) {
  // Calm steps read half the true curve; the one in four with a stall reads 2.5 times it
  // (mean: the true curve). The fit matches the total, so it crosses near the truth (1000),
  // where the calm readings alone would put it 14% higher.
  std::vector<TailPoint> points;
  const double rates[] = {900, 940, 980, 1020, 1060, 1100, 960, 1040};
  for (int i = 0; i < 8; ++i) {
    const double truth = std::exp(5 * (rates[i] / 1000 - 1));
    points.push_back({rates[i], (i % 4 == 1 ? 2.5 : 0.5) * truth, 3000});
  }
  const std::optional<TailCurve> c = FitTailCurve(points, 0, 1e9);
  ASSERT_TRUE(c.has_value());
  EXPECT_NEAR(c->Crossing(), 1000, 30);
  double fitted_total = 0, measured_total = 0;
  for (const TailPoint& p : points) {
    fitted_total += p.weight * c->At(p.rate_qps);
    measured_total += p.weight * p.ratio;
  }
  EXPECT_NEAR(fitted_total, measured_total, 1e-6 * measured_total);
}

TEST(FitTailCurveTest, NoCurveSteeperThanTheReadingsCanShow) {
  // An LLM's short steps near its limit: calm up to 33.33 req/s, then one step 0.25% higher
  // met a congestion episode (30% over the limit). Unbounded, the fit is a vertical cliff
  // between the two and 33.33 passes. The steepest curve ~300-request steps can show puts
  // the crossing 2.5-7% below the episode instead.
  const std::vector<TailPoint> points = {
      {29.2, 0, 181}, {32.56, 0, 253}, {32.68, 0, 328}, {33.33, 0, 264}, {33.42, 30, 350}};
  const std::optional<TailCurve> c = FitTailCurve(points, 0, 33.42);
  ASSERT_TRUE(c.has_value());
  EXPECT_LT(c->Crossing(), 0.975 * 33.42);
  EXPECT_GT(c->Crossing(), 0.93 * 33.42);
  EXPECT_GT(c->At(33.33), 1);
  double sqrt_sum = 0, weight = 0;
  for (const TailPoint& p : points) {
    sqrt_sum += std::sqrt(p.weight);
    weight += p.weight;
  }
  EXPECT_NEAR(c->b, kCliffLogitSlope * weight / sqrt_sum, 1e-6);
  // A reading half-way to the limit at 617 among steps of ~2000 requests: the crossing lies
  // just above it, where the steepest curve reaches the limit.
  const std::optional<TailCurve> near_cliff =
      FitTailCurve({{560, 0, 1729}, {617, 0.5, 1870}, {823, 100, 2433}}, 0, 1000);
  ASSERT_TRUE(near_cliff.has_value());
  EXPECT_GT(near_cliff->Crossing(), 617);
  EXPECT_LT(near_cliff->Crossing(), 640);
}

TEST(FitTailCurveTest, AFloorOfTailEventsUnderACliffStaysUnderTheCrossing) {
  // Stalls put 0.35-0.46 of the allowed share over the limit at every rate up to 7292 req/s
  // (~20,000 requests a step), and the model saturates before 9660. A logistic curve without
  // the floor had to bend down through the calm readings and crossed the limit at 7260, so
  // 7292 failed and the search ended 10% below the capacity (8030).
  const std::vector<TailPoint> points = {
      {6521, 0.41, 19569}, {6954, 0.41, 21129}, {6867, 0.46, 20673}, {7027, 0.35, 21217},
      {7170, 0.40, 21637}, {7292, 0.38, 21819}, {9660, 100, 28713},  {9660, 100, 28915}};
  const std::optional<TailCurve> c = FitTailCurve(points, 0.8 * 7292, 9660);
  ASSERT_TRUE(c.has_value());
  EXPECT_GT(c->floor, 0.002);
  EXPECT_GT(c->Crossing(), 7292);
  EXPECT_LT(c->Crossing(), 9660);
  for (const TailPoint& p : points) {
    if (p.rate_qps < 9000) EXPECT_LT(c->At(p.rate_qps), 1) << p.rate_qps;
  }
}

TEST(FitTailCurveTest, NoCurveWhenTheNeighbourhoodCannotFixOne) {
  // Too few points in the range.
  EXPECT_FALSE(FitTailCurve({{100, 0.5, 10}, {200, 2, 10}, {300, 4, 10}}, 150, 1000));
  // One distinct rate.
  EXPECT_FALSE(FitTailCurve({{100, 0.5, 10}, {100, 2, 10}, {100, 4, 10}}, 0, 1000));
  // Nothing over the limit anywhere.
  EXPECT_FALSE(FitTailCurve({{100, 0, 10}, {200, 0, 10}, {300, 0, 10}}, 0, 1000));
  // None and all over the limit only: no slope to place a crossing on.
  EXPECT_FALSE(FitTailCurve({{560, 0, 1729}, {617, 0, 1870}, {823, 100, 2433}}, 0, 1000));
  // Falling with the rate, gently or as a cliff.
  EXPECT_FALSE(FitTailCurve({{100, 2, 10}, {200, 1, 10}, {300, 0.5, 10}}, 0, 1000));
  EXPECT_FALSE(FitTailCurve({{100, 100, 1000}, {101, 0.5, 1000}, {102, 0, 1000}}, 0, 1000));
}

}  // namespace
}  // namespace vanguard::worker
