#include "tests/bench/verified_binary_search.h"

#include <variant>
#include <vector>

#include "gtest/gtest.h"

namespace vanguard::bench {
namespace {

using worker::Decision;
using worker::Done;
using worker::RunStep;
using worker::StepOutcome;

struct Step {
  double rate;
  double hold;
  bool verification;
};

// Runs the search against a model whose short steps pass up to `short_capacity` and whose
// holds pass up to `held_capacity` (a model that looks better in a short step than over the
// horizon), with 10 s parts and a 300 s horizon.
Done Search(double short_capacity, double held_capacity, std::vector<Step>* steps, int* holds) {
  VerifiedBinarySearch search(
      10, 1000, [](double) { return 10.0; }, 300);
  std::optional<StepOutcome> last;
  for (int i = 0; i < 200; ++i) {
    const Decision d = search.Next(last);
    if (const Done* done = std::get_if<Done>(&d)) {
      *holds = search.holds();
      return *done;
    }
    const RunStep& step = std::get<RunStep>(d);
    steps->push_back({step.rate_qps, step.hold, step.verification});
    StepOutcome o;
    o.client_valid = true;
    o.passed = step.rate_qps <= (step.verification ? held_capacity : short_capacity);
    last = o;
  }
  ADD_FAILURE() << "the search did not end";
  return {};
}

TEST(VerifiedBinarySearchTest, AHoldThatHoldsEndsTheSearchAtTheBinaryEstimate) {
  std::vector<Step> steps;
  int holds = 0;
  const Done done = Search(400, 400, &steps, &holds);
  ASSERT_FALSE(steps.empty());
  EXPECT_DOUBLE_EQ(steps.front().rate, 10);  // binary search checks the lower end first
  const Step& hold = steps.back();
  EXPECT_TRUE(hold.verification);
  EXPECT_DOUBLE_EQ(hold.hold, 30);  // 300 s in 10 s parts
  EXPECT_EQ(holds, 1);
  EXPECT_TRUE(done.converged);
  EXPECT_DOUBLE_EQ(done.max_sustainable_qps, hold.rate);
  EXPECT_LE(done.max_sustainable_qps, 400);
  EXPECT_GE(done.max_sustainable_qps, 400 * 0.97);
}

TEST(VerifiedBinarySearchTest, AFailedHoldSearchesAgainBelowItWithoutRemeasuringTheLowerEnd) {
  std::vector<Step> steps;
  int holds = 0;
  // Binary search ends at 396.7 (bracket [396.7, 404.5]); held, 396.7 fails. Searched
  // again in [381.25, 396.7] (381.25 passed before), 389.0 passes and is held.
  const Done done = Search(400, 395, &steps, &holds);
  EXPECT_TRUE(done.converged);
  EXPECT_DOUBLE_EQ(done.max_sustainable_qps, 388.984375);  // (381.25 + 396.71875) / 2
  EXPECT_EQ(holds, 2);
  int lower_end_checks = 0;
  double first_hold = 0;
  for (const Step& s : steps) {
    if (s.verification && first_hold == 0) first_hold = s.rate;
    lower_end_checks += s.rate == 10 ? 1 : 0;
  }
  EXPECT_DOUBLE_EQ(first_hold, 396.71875);  // the short steps' estimate, which did not hold
  EXPECT_EQ(lower_end_checks, 1);           // only the first search measured its lower end
  bool after_first_hold = false;
  for (const Step& s : steps) {
    if (after_first_hold && s.rate >= first_hold) {
      ADD_FAILURE() << "stepped at " << s.rate << ", not below the failed hold " << first_hold;
    }
    after_first_hold = after_first_hold || s.verification;
  }
}

TEST(VerifiedBinarySearchTest, HoldsThatNeverHoldEndUnconvergedBelowTheLowestFailedOne) {
  // Short steps pass up to 400, holds only up to 300: every search below a failed hold lands
  // on short passes again, which do not hold.
  std::vector<Step> steps;
  int holds = 0;
  const Done done = Search(400, 300, &steps, &holds);
  EXPECT_FALSE(done.converged);
  EXPECT_LE(holds, VerifiedBinarySearch::kMaxHolds);
  double lowest_failed = 1e9;
  for (const Step& s : steps) {
    if (s.verification) lowest_failed = std::min(lowest_failed, s.rate);
  }
  EXPECT_LT(done.max_sustainable_qps, lowest_failed);
  EXPECT_DOUBLE_EQ(done.confidence_high_qps, lowest_failed);
}

}  // namespace
}  // namespace vanguard::bench
