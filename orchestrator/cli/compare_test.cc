// Tests of compare.h on hand-computed examples: intervals as results state them, the verdict
// for disjoint, touching and overlapping intervals, and latency interpolated between steps.
#include "orchestrator/cli/compare.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;

v1::TestResult Result(double estimate, double low, double high, bool at_least = false) {
  v1::TestResult result;
  result.set_max_sustainable_qps(estimate);
  result.set_confidence_low_qps(low);
  result.set_confidence_high_qps(high);
  result.set_at_least(at_least);
  return result;
}

TEST(IntervalOfTest, ReadsTheResultsBracket) {
  const CapacityInterval sweep = IntervalOf(Result(200, 200, 300));
  EXPECT_TRUE(sweep.stated);
  EXPECT_EQ(sweep.low, 200);
  EXPECT_EQ(sweep.high, 300);
  EXPECT_TRUE(sweep.Contains(200));
  EXPECT_TRUE(sweep.Contains(299.9));
  EXPECT_FALSE(sweep.Contains(300));  // 300 failed

  // Adaptive "at least": the top of the range held; no upper end (high is 0 in the result).
  const CapacityInterval at_least = IntervalOf(Result(500, 500, 0, true));
  EXPECT_TRUE(at_least.stated);
  EXPECT_EQ(at_least.low, 500);
  EXPECT_TRUE(std::isinf(at_least.high));

  // No interval at all: a point that tells nothing about the noise.
  const CapacityInterval bare = IntervalOf(Result(100, 0, 0));
  EXPECT_FALSE(bare.stated);
  EXPECT_EQ(bare.low, 100);
  EXPECT_EQ(bare.high, 100);
  EXPECT_TRUE(bare.Contains(100));

  // A sweep whose lowest rate failed: capacity in [0, 50).
  const CapacityInterval below = IntervalOf(Result(0, 0, 50));
  EXPECT_TRUE(below.stated);
  EXPECT_EQ(below.high, 50);
}

TEST(CompareCapacityTest, DisjointIntervalsAreBeyondTheNoise) {
  // A: capacity in [200, 300), B: in [300, 400). They only touch at 300, which A failed.
  const CapacityComparison c = CompareCapacity(Result(200, 200, 300), Result(300, 300, 400));
  ASSERT_TRUE(c.change_pct.has_value());
  EXPECT_DOUBLE_EQ(*c.change_pct, 50.0);  // (300 - 200) / 200
  EXPECT_TRUE(c.beyond_intervals);
  EXPECT_EQ(c.verdict, "B is higher by 50.0% \u2014 beyond both tests' confidence intervals");
}

TEST(CompareCapacityTest, LowerAndBeyondAnAtLeastResult) {
  // A held the top of its range (at least 500); B's capacity is in [400, 450): 20% lower.
  const CapacityComparison c = CompareCapacity(Result(500, 500, 0, true), Result(400, 400, 450));
  EXPECT_DOUBLE_EQ(*c.change_pct, -20.0);
  EXPECT_TRUE(c.beyond_intervals);
  EXPECT_EQ(c.verdict, "B is lower by 20.0% \u2014 beyond both tests' confidence intervals");
}

TEST(CompareCapacityTest, OverlappingIntervalsAreWithinTheNoise) {
  // A in [200, 300), B in [250, 350): B's estimate is 25% higher, but 250..300 is in both.
  CapacityComparison c = CompareCapacity(Result(200, 200, 300), Result(250, 250, 350));
  EXPECT_DOUBLE_EQ(*c.change_pct, 25.0);
  EXPECT_FALSE(c.beyond_intervals);
  EXPECT_EQ(c.verdict, "within the noise: B is 25.0% higher, but the confidence intervals overlap");

  // A in [194, 200), B in [180, 195): B 7.2% lower ((180 - 194) / 194), overlapping at 194.
  c = CompareCapacity(Result(194, 194, 200), Result(180, 180, 195));
  EXPECT_NEAR(*c.change_pct, -7.216, 0.001);
  EXPECT_FALSE(c.beyond_intervals);
  EXPECT_THAT(c.verdict, HasSubstr("within the noise: B is 7.2% lower"));

  // Two points at the same rate overlap; the same estimate is no difference.
  c = CompareCapacity(Result(100, 100, 100), Result(100, 100, 100));
  EXPECT_FALSE(c.beyond_intervals);
  EXPECT_EQ(c.verdict, "within the noise: both estimates are the same");
}

TEST(CompareCapacityTest, WithoutAnIntervalTheNoiseIsUnknown) {
  const CapacityComparison c = CompareCapacity(Result(100, 0, 0), Result(80, 80, 90));
  EXPECT_DOUBLE_EQ(*c.change_pct, -20.0);
  EXPECT_FALSE(c.beyond_intervals);
  EXPECT_EQ(c.verdict,
            "B is lower by 20.0%, but test A states no confidence interval: whether that is "
            "beyond the noise is unknown");
}

TEST(CompareCapacityTest, NoPercentageFromAZeroReference) {
  const CapacityComparison c = CompareCapacity(Result(0, 0, 50), Result(120, 120, 150));
  EXPECT_FALSE(c.change_pct.has_value());
  EXPECT_TRUE(c.beyond_intervals);  // [0, 50) and [120, 150)
  EXPECT_THAT(c.verdict, HasSubstr("A found no sustainable rate (B: 120.0 qps)"));
}

v1::Step Step(int index, double rate, double p50, double p90, double p99, double max,
              int attempt = 1) {
  v1::Step step;
  step.set_index(index);
  step.set_attempt(attempt);
  step.set_target_qps(rate);
  step.mutable_latency()->set_p50_ms(p50);
  step.mutable_latency()->set_p90_ms(p90);
  step.mutable_latency()->set_p99_ms(p99);
  step.mutable_latency()->set_max_ms(max);
  return step;
}

TEST(LatencyAtCommonRateTest, InterpolatesTheTestWithoutAStepAtTheRate) {
  v1::Test a;
  *a.add_steps() = Step(0, 100, 5, 8, 10, 20);
  *a.add_steps() = Step(1, 200, 6, 12, 20, 40);
  *a.add_steps() = Step(2, 300, 10, 30, 40, 90);
  v1::Test b;
  *b.add_steps() = Step(0, 150, 4, 7, 12, 15);
  *b.add_steps() = Step(1, 250, 9, 20, 30, 60);
  // The highest rate both measured: min(300, 250) = 250. A has no step there: halfway between
  // 200 and 300, so p99 = 20 + 0.5 * (40 - 20) = 30, p50 = 8, p90 = 21, max = 65.
  const std::optional<LatencyAtRate> at = LatencyAtCommonRate(a, b);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->rate_qps, 250);
  EXPECT_TRUE(at->a.Interpolated());
  EXPECT_EQ(at->a.below_qps, 200);
  EXPECT_EQ(at->a.above_qps, 300);
  EXPECT_DOUBLE_EQ(at->a.p50_ms, 8);
  EXPECT_DOUBLE_EQ(at->a.p90_ms, 21);
  EXPECT_DOUBLE_EQ(at->a.p99_ms, 30);
  EXPECT_DOUBLE_EQ(at->a.max_ms, 65);
  EXPECT_FALSE(at->b.Interpolated());
  EXPECT_DOUBLE_EQ(at->b.p99_ms, 30);
  EXPECT_DOUBLE_EQ(at->b.max_ms, 60);
}

TEST(LatencyAtCommonRateTest, UnevenSpacingAndTheLatestStepAtARate) {
  v1::Test a;
  *a.add_steps() = Step(0, 100, 5, 8, 10, 20);
  *a.add_steps() = Step(1, 400, 20, 50, 70, 100);
  *a.add_steps() = Step(2, 400, 25, 55, 80, 120);  // the rate measured again: this one counts
  v1::Step interrupted = Step(3, 500, 1, 1, 1, 1);
  interrupted.set_interrupted(true);
  *a.add_steps() = interrupted;  // never judged: not part of the range
  v1::Test b;
  *b.add_steps() = Step(0, 175, 9, 9, 9, 9);
  *b.add_steps() = Step(1, 175, 3, 3, 3, 3, /*attempt=*/0);  // an older attempt's step
  // Common rate min(400, 175) = 175: A a quarter of the way from 100 to 400:
  // p99 = 10 + 0.25 * (80 - 10) = 27.5.
  const std::optional<LatencyAtRate> at = LatencyAtCommonRate(a, b);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->rate_qps, 175);
  EXPECT_DOUBLE_EQ(at->a.p99_ms, 27.5);
  EXPECT_DOUBLE_EQ(at->a.max_ms, 45);  // 20 + 0.25 * (120 - 20)
  EXPECT_DOUBLE_EQ(at->b.p99_ms, 9);
}

TEST(LatencyAtCommonRateTest, NoCommonRangeOrNoSteps) {
  v1::Test low;
  *low.add_steps() = Step(0, 100, 1, 1, 1, 1);
  *low.add_steps() = Step(1, 200, 1, 1, 1, 1);
  v1::Test high;
  *high.add_steps() = Step(0, 300, 1, 1, 1, 1);
  EXPECT_FALSE(LatencyAtCommonRate(low, high).has_value());
  EXPECT_FALSE(LatencyAtCommonRate(low, v1::Test()).has_value());
  // A single shared rate at the edge of both ranges is enough.
  *high.add_steps() = Step(1, 200, 2, 2, 2, 2);
  const std::optional<LatencyAtRate> at = LatencyAtCommonRate(low, high);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->rate_qps, 200);
  EXPECT_FALSE(at->a.Interpolated());
  EXPECT_FALSE(at->b.Interpolated());
}

}  // namespace
}  // namespace vanguard::cli
