// Unit tests of the least-squares line.
#include "common/line_fit.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(FitLineTest, AnExactLineHasNoResidualAndNoSlopeError) {
  const std::optional<LineFit> f = FitLine({1, 2, 3, 4}, {3, 5, 7, 9});  // y = 2x + 1
  ASSERT_TRUE(f);
  EXPECT_EQ(f->n, 4u);
  EXPECT_DOUBLE_EQ(f->slope, 2);
  EXPECT_DOUBLE_EQ(f->At(10), 21);
  EXPECT_DOUBLE_EQ(f->mean_x, 2.5);
  EXPECT_DOUBLE_EQ(f->sxx, 5);
  EXPECT_DOUBLE_EQ(f->syy, 20);
  EXPECT_NEAR(f->residual, 0, 1e-12);
  EXPECT_NEAR(f->slope_se, 0, 1e-12);
}

TEST(FitLineTest, TheSlopeErrorComesFromTheResiduals) {
  // y = 0, 1, 0, 1 at x = 0..3: slope 0.2, residuals -0.2, 0.6, -0.6, 0.2 (sum of squares
  // 0.8), sxx 5: se = sqrt(0.8 / 2 / 5).
  const std::optional<LineFit> f = FitLine({0, 1, 2, 3}, {0, 1, 0, 1});
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->slope, 0.2, 1e-12);
  EXPECT_NEAR(f->residual, 0.8, 1e-12);
  EXPECT_NEAR(f->slope_se, std::sqrt(0.08), 1e-12);
  // Two points: a slope, no error to tell.
  const std::optional<LineFit> two = FitLine({0, 1}, {0, 1});
  ASSERT_TRUE(two);
  EXPECT_EQ(two->slope_se, 0);
}

TEST(FitLineTest, NoLineThroughOneXOrMismatchedInput) {
  EXPECT_FALSE(FitLine({2, 2, 2}, {1, 2, 3}));
  EXPECT_FALSE(FitLine({1}, {1}));
  EXPECT_FALSE(FitLine({}, {}));
  EXPECT_FALSE(FitLine({1, 2}, {1}));
}

TEST(FitLineTest, AWeightCountsAPointThatManyTimes) {
  // Weight 2 on (2, 0) is the point twice: the same means, slope and sums of squares.
  const std::optional<LineFit> weighted = FitLine({0, 1, 2}, {0, 1, 0}, {1, 1, 2});
  const std::optional<LineFit> twice = FitLine({0, 1, 2, 2}, {0, 1, 0, 0});
  ASSERT_TRUE(weighted);
  ASSERT_TRUE(twice);
  EXPECT_NEAR(weighted->slope, twice->slope, 1e-12);
  EXPECT_NEAR(weighted->mean_x, twice->mean_x, 1e-12);
  EXPECT_NEAR(weighted->mean_y, twice->mean_y, 1e-12);
  EXPECT_NEAR(weighted->sxx, twice->sxx, 1e-12);
  EXPECT_NEAR(weighted->residual, twice->residual, 1e-12);
  // A heavy point pulls the line through itself.
  const std::optional<LineFit> heavy = FitLine({0, 1, 2}, {0, 1, 0}, {1e6, 1, 1e6});
  ASSERT_TRUE(heavy);
  EXPECT_NEAR(heavy->slope, 0, 1e-5);
  // Weights of 1 are the unweighted fit.
  const std::optional<LineFit> ones = FitLine({0, 1, 2, 3}, {0, 1, 0, 1}, {1, 1, 1, 1});
  ASSERT_TRUE(ones);
  EXPECT_NEAR(ones->slope_se, std::sqrt(0.08), 1e-12);
}

TEST(FitLineTest, NoWeightedLineWithABadWeight) {
  EXPECT_FALSE(FitLine({0, 1}, {0, 1}, {1, 0}));
  EXPECT_FALSE(FitLine({0, 1}, {0, 1}, {1, -1}));
  EXPECT_FALSE(FitLine({0, 1}, {0, 1}, {1, std::nan("")}));
  EXPECT_FALSE(FitLine({0, 1}, {0, 1}, {1}));
}

}  // namespace
}  // namespace vanguard
