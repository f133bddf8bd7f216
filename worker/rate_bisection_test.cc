// The fleet strategies' rate search as a sequence of Record() calls (no I/O, no clock).
#include "worker/rate_bisection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;
using Ending = RateBisection::Ending;

TEST(RateBisectionTest, StartsAtMinAndBisectsTheBracketOfHeldAndFailed) {
  RateBisection search(100, 900, 10, 0);
  EXPECT_EQ(search.first_rate(), 100);
  RateBisection::Verdict v = search.Record(100, /*held=*/true);
  ASSERT_EQ(v.ending, Ending::kNone);
  EXPECT_EQ(v.next_rate, 500);  // [100 held, 900 assumed failed]
  v = search.Record(500, /*held=*/false);
  ASSERT_EQ(v.ending, Ending::kNone);
  EXPECT_EQ(v.next_rate, 300);
  v = search.Record(300, /*held=*/true);
  ASSERT_EQ(v.ending, Ending::kNone);
  EXPECT_EQ(v.next_rate, 400);
  EXPECT_EQ(search.highest_held(), 300);
  EXPECT_EQ(search.lowest_failed(), 500);
  EXPECT_EQ(search.trials(), 3);
}

TEST(RateBisectionTest, AFailureAtTheFirstRateEndsWithNothingHeld) {
  RateBisection search(100, 900, 10, 0);
  EXPECT_EQ(search.Record(100, false).ending, Ending::kNothingHeld);
  EXPECT_FALSE(search.highest_held().has_value());
  EXPECT_EQ(search.high(), 100);
  EXPECT_EQ(search.Describe(Ending::kNothingHeld), "");
}

TEST(RateBisectionTest, ConvergesWhenAHeldAndAFailedTrialAreWithinTheTolerance) {
  RateBisection search(100, 200, 30, 0);
  ASSERT_EQ(search.Record(100, true).next_rate, 150);
  RateBisection::Verdict v = search.Record(150, false);
  ASSERT_EQ(v.next_rate, 125);
  v = search.Record(125, true);  // [125, 150]: 25 <= 30
  EXPECT_EQ(v.ending, Ending::kConverged);
  EXPECT_EQ(search.Describe(v.ending), "converged");
}

TEST(RateBisectionTest, HoldingUpToMaxWithoutAFailureIsNotConverged) {
  RateBisection search(100, 200, 30, 0);
  ASSERT_EQ(search.Record(100, true).next_rate, 150);
  ASSERT_EQ(search.Record(150, true).next_rate, 175);
  const RateBisection::Verdict v = search.Record(175, true);  // [175, 200 assumed]
  EXPECT_EQ(v.ending, Ending::kNoTrialFailed);
  EXPECT_FALSE(search.lowest_failed().has_value());
  EXPECT_EQ(search.high(), 200);
  EXPECT_THAT(search.Describe(v.ending), HasSubstr("max_qps is assumed"));
}

TEST(RateBisectionTest, StopsWhenTheTrialBudgetIsSpent) {
  RateBisection search(100, 900, 1, 2);
  EXPECT_EQ(search.max_trials(), 2);
  ASSERT_EQ(search.Record(100, true).ending, Ending::kNone);
  const RateBisection::Verdict v = search.Record(500, false);
  EXPECT_EQ(v.ending, Ending::kBudgetSpent);
  EXPECT_EQ(search.Describe(v.ending), "budget of 2 trials spent");
}

TEST(RateBisectionTest, DefaultsAreFivePercentOfMaxAndEnoughTrialsForIt) {
  RateBisection search(100, 900, 0, 0);
  EXPECT_DOUBLE_EQ(search.tolerance(), 45);
  // 800 / 45 needs ceil(log2(17.8)) = 5 halvings after the first trial.
  EXPECT_EQ(search.max_trials(), 6);
  EXPECT_EQ(RateBisection(1, 1e9, 1, 0).max_trials(), RateBisection::kMaxTrials);
}

TEST(RateBisectionTest, TrialsLeftShrinkWithTheBracket) {
  RateBisection search(100, 900, 100, 0);  // 800 / 100: 3 halvings
  EXPECT_EQ(search.TrialsLeftAfterCurrent(), 2);
  search.Record(100, true);  // [100, 900]
  EXPECT_EQ(search.TrialsLeftAfterCurrent(), 2);
  search.Record(500, false);  // [100, 500]: 2 halvings
  EXPECT_EQ(search.TrialsLeftAfterCurrent(), 1);
  search.Record(300, true);  // [300, 500]: 1 halving
  EXPECT_EQ(search.TrialsLeftAfterCurrent(), 0);
}

TEST(RateBisectionTest, ValidateRatesNamesTheFieldUnderThePrefix) {
  EXPECT_TRUE(RateBisection::ValidateRates("x", 1, 2, 0, 0).ok());
  EXPECT_THAT(RateBisection::ValidateRates("replica_loss", 0, 2, 0, 0).message(),
              HasSubstr("replica_loss.min_qps must be > 0"));
  EXPECT_THAT(RateBisection::ValidateRates("x", 2, 2, 0, 0).message(),
              HasSubstr("x.max_qps must be > min_qps"));
  EXPECT_THAT(RateBisection::ValidateRates("x", 1, 1.0 / 0.0, 0, 0).message(),
              HasSubstr("x.max_qps"));
  EXPECT_THAT(RateBisection::ValidateRates("x", 1, 2, -1, 0).message(),
              HasSubstr("x.tolerance_qps must be >= 0"));
  EXPECT_THAT(RateBisection::ValidateRates("x", 1, 2, 0, 13).message(),
              HasSubstr("x.max_trials must be from 0 to 12"));
  EXPECT_EQ(RateBisection::ValidateRates("x", 1, 2, 0, -1).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::worker
