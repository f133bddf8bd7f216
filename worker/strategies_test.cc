// Unit tests of the binary search, adaptive, ladder, direct-controller and stability
// strategies, each driven in virtual time by a model predictor with a known capacity.
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "worker/adaptive_strategy.h"
#include "worker/binary_search_strategy.h"
#include "worker/direct_controller_strategy.h"
#include "worker/ladder_strategy.h"
#include "worker/stability_strategy.h"
#include "worker/strategy.h"

namespace vanguard::worker {
namespace {

using vanguard::v1::HealthState;

// A predictor whose p99 grows as load nears `capacity` and which fails above it.
StepOutcome ModelPredictor(double rate, double capacity) {
  StepOutcome o;
  o.rate_qps = rate;
  const double load = rate / capacity;
  o.passed = load <= 1.0;
  o.achieved_qps = std::min(rate, capacity);
  o.p99_ms = 10 * load;
  o.health_score = load;
  o.limit_ratio = load;
  o.health_state = load < 0.6    ? vanguard::v1::HEALTH_STATE_HEALTHY
                   : load < 0.8  ? vanguard::v1::HEALTH_STATE_WARN
                   : load < 0.95 ? vanguard::v1::HEALTH_STATE_UNHEALTHY
                   : load <= 1.0 ? vanguard::v1::HEALTH_STATE_CRITICAL
                                 : vanguard::v1::HEALTH_STATE_OVERLOADED;
  o.window_state = o.health_state;
  o.goodput = o.passed ? 1.0 : 0.8;
  o.queue_samples_fraction = 1.0;
  o.queue_mean = o.passed ? 0.1 : 5.0;
  return o;
}

// ModelPredictor's step with a tail reading: `tail_ratio` of the allowed share over its p99
// limit, from `samples` requests. It fails on the tail when the ratio is over 1, and on
// something else (errors, say) when ModelPredictor fails it or !other_checks_held.
StepOutcome WithTail(double rate, double capacity, double tail_ratio, int64_t samples = 3000,
                     bool other_checks_held = true) {
  StepOutcome o = ModelPredictor(rate, capacity);
  o.tail_samples = samples;
  o.tail_ratio = tail_ratio;
  o.passed_apart_from_tail = o.passed && other_checks_held;
  o.passed = o.passed_apart_from_tail && tail_ratio <= 1;
  return o;
}

struct StrategyRun {
  Done done;
  std::vector<double> rates;
  std::vector<double> holds;  // RunStep::hold of each step
};

// Runs the strategy to its end against a predictor of each step (rate and hold).
StrategyRun DriveSteps(Strategy& strategy,
                       const std::function<StepOutcome(const RunStep&)>& predictor,
                       int limit = 200) {
  StrategyRun run;
  std::optional<StepOutcome> last;
  for (int i = 0; i < limit; ++i) {
    Decision d = strategy.Next(last);
    if (auto* done = std::get_if<Done>(&d)) {
      run.done = *done;
      return run;
    }
    const RunStep step = std::get<RunStep>(d);
    run.rates.push_back(step.rate_qps);
    run.holds.push_back(step.hold);
    last = predictor(step);
  }
  ADD_FAILURE() << "strategy did not finish in " << limit << " steps";
  return run;
}

StrategyRun Drive(Strategy& strategy, const std::function<StepOutcome(double)>& predictor,
                  int limit = 200) {
  return DriveSteps(
      strategy, [&](const RunStep& step) { return predictor(step.rate_qps); }, limit);
}

// The rates of the steps run as confirmation holds.
std::vector<double> HoldRates(const StrategyRun& run) {
  std::vector<double> rates;
  for (size_t i = 0; i < run.rates.size(); ++i) {
    if (run.holds[i] > 1) rates.push_back(run.rates[i]);
  }
  return rates;
}

// ---------------------------------------------------------------- binary search

TEST(BinarySearchStrategyTest, BracketsCapacityWithinToleranceInLogSteps) {
  vanguard::v1::BinarySearchStrategy c;
  c.set_min_qps(10);
  c.set_max_qps(1010);
  c.set_tolerance_qps(5);
  auto s = BinarySearchStrategy::Create(c);
  ASSERT_TRUE(s.ok()) << s.status();
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 437); });
  EXPECT_TRUE(run.done.converged);
  EXPECT_LE(run.done.max_sustainable_qps, 437);
  EXPECT_GE(run.done.max_sustainable_qps, 437 - 5);
  EXPECT_LE(run.done.confidence_low_qps, 437);
  EXPECT_GT(run.done.confidence_high_qps, 437);
  EXPECT_LE(run.done.confidence_high_qps - run.done.confidence_low_qps, 5);
  // The lower end, then ceil(log2(1000 / 5)) = 8 halvings.
  EXPECT_LE(run.rates.size(), 9u);
  EXPECT_DOUBLE_EQ(run.rates[0], 10);
  EXPECT_DOUBLE_EQ(run.rates[1], 510);
}

TEST(BinarySearchStrategyTest, EverythingFailingEstimatesZeroUnconverged) {
  vanguard::v1::BinarySearchStrategy c;
  c.set_min_qps(10);
  c.set_max_qps(100);
  auto s = BinarySearchStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 1); });
  EXPECT_FALSE(run.done.converged);
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
  // min_qps is measured first; when it fails there is nothing to search.
  ASSERT_EQ(run.rates.size(), 1u);
  EXPECT_DOUBLE_EQ(run.rates[0], 10);
  EXPECT_NE(run.done.summary.find("no rate passed"), std::string::npos) << run.done.summary;
}

TEST(BinarySearchStrategyTest, InvalidClientIsRerunThenCountsAsFailure) {
  vanguard::v1::BinarySearchStrategy c;
  c.set_min_qps(10);
  c.set_max_qps(100);
  auto s = BinarySearchStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  // The client cannot hold any schedule above 30 req/s.
  StrategyRun run = Drive(**s, [](double r) {
    StepOutcome o = ModelPredictor(r, 80);
    o.client_valid = r <= 30;
    return o;
  });
  ASSERT_GE(run.rates.size(), 4u);
  EXPECT_DOUBLE_EQ(run.rates[0], 10);
  EXPECT_DOUBLE_EQ(run.rates[1], 55);
  EXPECT_DOUBLE_EQ(run.rates[2], 55);     // rerun once
  EXPECT_LT(run.rates[3], run.rates[1]);  // invalid twice: treated as a failure
  EXPECT_LE(run.done.max_sustainable_qps, 30);
}

TEST(AdaptiveStrategyTest, InvalidClientTwiceIsAFailureNotTheEnd) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(900);
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  // The client cannot hold the schedule above 500: the search settles below it.
  StrategyRun run = Drive(**s, [](double r) {
    StepOutcome o = ModelPredictor(r, 700);
    if (r > 500) o.client_valid = false;
    return o;
  });
  EXPECT_LE(run.done.max_sustainable_qps, 500);
  EXPECT_GE(run.done.max_sustainable_qps, 450);
  EXPECT_NE(run.done.summary.find("load generator was invalid"), std::string::npos)
      << run.done.summary;
}

TEST(BinarySearchStrategyTest, RejectsBadRange) {
  vanguard::v1::BinarySearchStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(10);
  auto s = BinarySearchStrategy::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("binary_search.max_qps"), std::string::npos);
}

// ---------------------------------------------------------------- adaptive

TEST(AdaptiveStrategyTest, ConvergesConservativelyNearCapacity) {
  for (double capacity : {137.0, 437.0, 911.0, 1890.0}) {
    vanguard::v1::AdaptiveStrategy c;
    c.set_min_qps(50);
    c.set_max_qps(2000);
    auto s = AdaptiveStrategy::Create(c);
    ASSERT_TRUE(s.ok()) << s.status();
    StrategyRun run = Drive(**s, [&](double r) { return ModelPredictor(r, capacity); });
    EXPECT_TRUE(run.done.converged) << capacity << ": " << run.done.summary;
    EXPECT_LE(run.done.max_sustainable_qps, capacity) << capacity;
    EXPECT_GE(run.done.max_sustainable_qps, 0.95 * capacity) << capacity << run.done.summary;
    EXPECT_LE(run.rates.size(), 20u);
  }
}

// ModelPredictor's step, judged on `limit_ratio` instead (passes at or below 1).
StepOutcome WithLimitRatio(double rate, double capacity, double limit_ratio) {
  StepOutcome o = ModelPredictor(rate, capacity);
  o.limit_ratio = limit_ratio;
  o.passed = limit_ratio <= 1;
  return o;
}

// An adaptive search over [min_qps, max_qps], default parameters otherwise.
std::unique_ptr<Strategy> Adaptive(double min_qps = 50, double max_qps = 2000, int max_steps = 0,
                                   bool confirm_best = false) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(min_qps);
  c.set_max_qps(max_qps);
  c.set_max_steps(max_steps);
  c.set_confirm_best(confirm_best);
  auto s = AdaptiveStrategy::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// A cliff: the binding metric over its limit grows exponentially with the rate.
StepOutcome CliffPredictor(double rate, double capacity) {
  return WithLimitRatio(rate, capacity, std::exp(4 * (rate / capacity - 1)));
}

TEST(AdaptiveStrategyTest, BestsClimbingByDampedStepsAreNotConvergence) {
  // Passes near the limit are CRITICAL (the step is damped to 1/8) and say nothing about how
  // far the limit is (no limit ratio): after the failure at 300 the bests climb 250, 256,
  // 262, 269, ... in steps under 2.5%, every one a pass. Their coefficient of variation falls
  // under epsilon long before the limit (290) is reached; only a failure among them means
  // the bests have stopped moving.
  auto s = Adaptive(100, 500);
  ASSERT_TRUE(s);
  StrategyRun run = Drive(*s, [](double r) {
    StepOutcome o;
    o.rate_qps = r;
    o.passed = r < 290;
    o.achieved_qps = r;
    o.health_state = r >= 290   ? vanguard::v1::HEALTH_STATE_OVERLOADED
                     : r >= 240 ? vanguard::v1::HEALTH_STATE_CRITICAL
                                : vanguard::v1::HEALTH_STATE_HEALTHY;
    o.window_state = o.health_state;
    return o;
  });
  EXPECT_TRUE(run.done.converged);
  EXPECT_GT(run.done.max_sustainable_qps, 0.95 * 290) << run.done.summary;
  EXPECT_LT(run.done.max_sustainable_qps, 290);
}

TEST(AdaptiveStrategyTest, AStallAtMinQpsIsMeasuredAgainBeforeTheTestIsGivenUp) {
  // The first step (at min_qps) catches a stall: 2.6% of its requests over the limit. Calm
  // steps at the same rate bring the pooled tail under the limit (two: (2.6 + 0.1 + 0.1) / 3),
  // and the search goes on; a tail that stays over it ends the test after four.
  for (bool persistent : {false, true}) {
    auto s = Adaptive();
    ASSERT_TRUE(s);
    int step = 0;
    StrategyRun run = Drive(*s, [&](double r) {
      return WithTail(r, 800, step++ == 0 || persistent ? 2.6 : 0.1, 1000);
    });
    ASSERT_GE(run.rates.size(), 4u);
    for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(run.rates[i], 50);
    if (persistent) {
      EXPECT_EQ(run.rates.size(), 4u);
      EXPECT_DOUBLE_EQ(run.rates[3], 50);
      EXPECT_EQ(run.done.max_sustainable_qps, 0);
    } else {
      EXPECT_GT(run.rates[3], 50);
      EXPECT_TRUE(run.done.converged);
      EXPECT_NEAR(run.done.max_sustainable_qps, 800, 0.05 * 800);
    }
  }
  // A failure of anything else at min_qps ends the test at once.
  auto s = Adaptive();
  StrategyRun run = Drive(*s, [](double r) { return ModelPredictor(r, 40); });
  EXPECT_EQ(run.rates.size(), 1u);
}

TEST(AdaptiveStrategyTest, AConvergedSearchFinishesWithoutAHoldUnlessAskedFor) {
  auto s = Adaptive();
  ASSERT_TRUE(s);
  StrategyRun run = Drive(*s, [](double r) { return WithTail(r, 800, r <= 800 ? 0.5 : 3); });
  ASSERT_TRUE(run.done.converged) << run.done.summary;
  EXPECT_TRUE(HoldRates(run).empty()) << ::testing::PrintToString(run.rates);
  EXPECT_EQ(run.done.summary.find("confirmation hold"), std::string::npos) << run.done.summary;
}

TEST(AdaptiveStrategyTest, AConvergedSearchHoldsItsBestOnceBeforeFinishing) {
  auto s = Adaptive(50, 2000, 0, /*confirm_best=*/true);
  ASSERT_TRUE(s);
  StrategyRun run = Drive(*s, [](double r) { return WithTail(r, 800, r <= 800 ? 0.5 : 3); });
  ASSERT_TRUE(run.done.converged) << run.done.summary;
  // One hold, the last step (it held: the search finished on it), at the best pass.
  EXPECT_EQ(HoldRates(run), std::vector<double>{run.done.best_pass_qps});
  EXPECT_EQ(run.holds.back(), AdaptiveStrategy::kConfirmationHold);
  EXPECT_NE(run.done.summary.find("1 confirmation hold"), std::string::npos) << run.done.summary;
  EXPECT_NE(
      run.done.summary.find(absl::StrFormat("the last at %g qps held", run.done.best_pass_qps)),
      std::string::npos)
      << run.done.summary;
}

TEST(AdaptiveStrategyTest, AHoldLastsUntilItsTailCanBeJudged) {
  // At the limit a p99 lets 1% of the requests over it: the hold runs until 20 of them would
  // be, 2000 requests, however few a step measures; at least two steps, at most ten.
  for (const auto& [per_step, hold] :
       std::vector<std::pair<int64_t, double>>{{3000, AdaptiveStrategy::kConfirmationHold},
                                               {250, 8},
                                               {100, AdaptiveStrategy::kMaxHold}}) {
    auto s = Adaptive(50, 2000, 0, /*confirm_best=*/true);
    ASSERT_TRUE(s);
    StrategyRun run =
        Drive(*s, [&](double r) { return WithTail(r, 800, r <= 800 ? 0.5 : 3, per_step); });
    ASSERT_TRUE(run.done.converged) << run.done.summary;
    ASSERT_EQ(HoldRates(run).size(), 1u) << per_step;
    EXPECT_DOUBLE_EQ(run.holds.back(), hold) << per_step;
    EXPECT_NE(run.done.summary.find(absl::StrFormat("of %gx a step", hold)), std::string::npos)
        << run.done.summary;
  }
}

TEST(AdaptiveStrategyTest, TheEstimateIsTheBestPassLessItsResolution) {
  // Steps of 3000 requests resolve a rate to epsilon (2%: their arrivals scatter by 1.8%),
  // steps of 300 to 1 / sqrt(300) = 5.8%: the estimate is the best pass less that much, and
  // the confidence interval runs from the estimate to the lowest failure.
  for (const auto& [per_step, resolution] : std::vector<std::pair<int64_t, double>>{
           {3000, AdaptiveStrategy::kDefaultConvergenceCv}, {300, 1 / std::sqrt(300.0)}}) {
    auto s = Adaptive();
    ASSERT_TRUE(s);
    StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
      const auto n = static_cast<int64_t>(static_cast<double>(per_step) * step.hold);
      return WithTail(step.rate_qps, 2000, step.rate_qps <= 800 ? 0.5 : 3, n);
    });
    ASSERT_TRUE(run.done.converged) << run.done.summary;
    EXPECT_LE(run.done.best_pass_qps, 800) << run.done.summary;
    EXPECT_GT(run.done.best_pass_qps, (1 - resolution) * 800) << run.done.summary;
    EXPECT_NEAR(run.done.max_sustainable_qps, run.done.best_pass_qps * (1 - resolution), 1e-6)
        << per_step;
    EXPECT_DOUBLE_EQ(run.done.confidence_low_qps, run.done.max_sustainable_qps);
    EXPECT_GT(run.done.confidence_high_qps, 800);
    EXPECT_NE(run.done.summary.find("less its resolution"), std::string::npos) << run.done.summary;
  }
  // Without a failure above it (max_qps holds the SLO) the best is the estimate.
  auto s = Adaptive(100, 500);
  ASSERT_TRUE(s);
  StrategyRun run = Drive(*s, [](double r) { return WithTail(r, 2000, 0.5); });
  EXPECT_FALSE(run.done.converged) << run.done.summary;
  EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 500) << run.done.summary;
  EXPECT_DOUBLE_EQ(run.done.best_pass_qps, 500);
  EXPECT_EQ(run.done.summary.find("less its resolution"), std::string::npos) << run.done.summary;
}

TEST(AdaptiveStrategyTest,
     AHeldRateStandsForTheBestWhenTheBestMovesAboveItByLessThanAStepResolves) {
  // Steps of 300 requests (an LLM) resolve a rate to about 6%. Calm up to 990, a marginal
  // reading (1.1 of allowed) up to 1010, overloaded above; a long hold reads calm. Where the
  // hold's calm reading moves the pooled best above the held rate by less than that, the held
  // rate stands for the best (the estimate is taken from it): only it was run long enough to
  // claim.
  auto s = Adaptive(50, 2000, 0, /*confirm_best=*/true);
  ASSERT_TRUE(s);
  StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
    const double r = step.rate_qps;
    const double tail = step.hold > 1 ? 0 : r <= 990 ? 0.5 : r <= 1010 ? 1.1 : 3;
    return WithTail(r, 2000, tail, static_cast<int64_t>(300 * step.hold));
  });
  ASSERT_TRUE(run.done.converged) << run.done.summary;
  ASSERT_EQ(HoldRates(run).size(), 1u) << run.done.summary;
  EXPECT_DOUBLE_EQ(run.done.best_pass_qps, HoldRates(run)[0]) << run.done.summary;
}

TEST(AdaptiveStrategyTest, NoConvergenceWhileTheLowestFailureIsFarAboveTheBest) {
  // A search of the ranking profile in virtual time (tests/bench/search_sim, seed 33; its
  // capacity ~3000 is set by 30 ms stalls): a stall fails the climb's step at 1495.5, the
  // steps below and the hold at 1492 pass (1495.5, measured again first, meets a stall again
  // here), the pooled verdicts then let 1495.5 pass, the climb
  // meets a stall again at 2806 and passes 3463. Bests 1461.7, 1492.1, 1495.5 stay put and
  // the pooled curve crosses just above them, but with the lowest failure at 3463 the limit
  // may be anywhere up there: the search goes on (it ended at 1495.5, -50%, without the rule).
  struct Reading {
    double rate, tail;
    int64_t requests;
    vanguard::v1::HealthState health, window;
    double limit_ratio;
    int spikes;
  };
  using vanguard::v1::HEALTH_STATE_CRITICAL;
  using vanguard::v1::HEALTH_STATE_HEALTHY;
  using vanguard::v1::HEALTH_STATE_OVERLOADED;
  using vanguard::v1::HEALTH_STATE_UNHEALTHY;
  using vanguard::v1::HEALTH_STATE_WARN;
  const std::vector<Reading> trace = {
      {181.3, 0, 545, HEALTH_STATE_HEALTHY, HEALTH_STATE_HEALTHY, 0.449, 0},
      {1495.5, 1.78, 4552, HEALTH_STATE_OVERLOADED, HEALTH_STATE_WARN, 1.166, 0},
      {1282.8, 0, 3926, HEALTH_STATE_HEALTHY, HEALTH_STATE_HEALTHY, 0.556, 0},
      {1461.7, 0, 4383, HEALTH_STATE_HEALTHY, HEALTH_STATE_HEALTHY, 0.575, 0},
      {1492.1, 0, 4422, HEALTH_STATE_HEALTHY, HEALTH_STATE_HEALTHY, 0.583, 0},
      // Measured again (its ratio jumps far above the curve below), it meets a stall again.
      {1495.5, 1.78, 4552, HEALTH_STATE_OVERLOADED, HEALTH_STATE_WARN, 1.166, 0},
      {1492.1, 0, 13524, HEALTH_STATE_HEALTHY, HEALTH_STATE_HEALTHY, 0.575, 0},
      {2806.4, 1.84, 8308, HEALTH_STATE_OVERLOADED, HEALTH_STATE_WARN, 1.141, 1},
      {3463.5, 0.30, 10380, HEALTH_STATE_CRITICAL, HEALTH_STATE_UNHEALTHY, 0.956, 1},
  };
  auto s = Adaptive(181.274, 5438.2, 0, /*confirm_best=*/true);
  ASSERT_TRUE(s);
  size_t i = 0;
  StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
    StepOutcome o;
    if (i < trace.size()) {
      const Reading& r = trace[i++];
      EXPECT_NEAR(step.rate_qps, r.rate, 0.002 * r.rate) << "step " << i;  // ratios rounded
      o.tail_ratio = r.tail;
      o.tail_samples = r.requests;
      o.health_state = r.health;
      o.window_state = r.window;
      o.limit_ratio = r.limit_ratio;
      o.spikes = r.spikes;
    } else {  // then calm up to 3000, overloaded above
      const bool calm = step.rate_qps <= 3000;
      o.tail_ratio = calm ? 0 : 3;
      o.tail_samples = static_cast<int64_t>(3 * step.rate_qps * step.hold);
      o.health_state = calm ? HEALTH_STATE_UNHEALTHY : HEALTH_STATE_OVERLOADED;
      o.window_state = o.health_state;
      o.limit_ratio = calm ? 0.85 : 1.3;
    }
    o.passed_apart_from_tail = true;
    o.passed = o.tail_ratio <= 1;
    o.achieved_qps = o.offered_qps = step.rate_qps;
    return o;
  });
  EXPECT_GT(run.rates.size(), trace.size()) << run.done.summary;
  EXPECT_GT(run.done.max_sustainable_qps, 0.9 * 3000) << run.done.summary;
}

TEST(AdaptiveStrategyTest, AFailureThatJumpsFarAboveTheCurveBelowIsMeasuredAgain) {
  // search_sim's ranking seed 33 without a hold: a 30 ms stall fails the climb's step at
  // 1495.5 (limit ratio 1.166) while the steps below read a flat 0.45-0.58; the bracket closes
  // at [1492.1, 1495.5], a jump no smooth curve makes over 0.2%. The failure is measured
  // once more before the search ends on it; calm there, the climb goes on (calm up to 3000
  // from then on, overloaded above). The search ended at 1462, -51%, without the re-check.
  const std::vector<std::pair<double, double>> trace = {
      {181.3, 0.449}, {1495.5, 1.166}, {1282.8, 0.556}, {1461.7, 0.575}, {1492.1, 0.583}};
  auto s = Adaptive(181.274, 5438.2);
  ASSERT_TRUE(s);
  size_t i = 0;
  StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
    StepOutcome o;
    const bool scripted = i < trace.size();
    const double ratio = scripted ? trace[i].second : step.rate_qps <= 3000 ? 0.85 : 1.3;
    if (scripted) EXPECT_NEAR(step.rate_qps, trace[i].first, 0.002 * trace[i].first) << i;
    ++i;
    const bool stall = ratio > 1 && scripted;
    o.limit_ratio = ratio;
    o.tail_ratio = stall ? 1.78 : ratio > 1 ? 3 : 0;
    o.tail_samples = static_cast<int64_t>(3 * step.rate_qps);
    o.health_state =
        ratio > 1 ? vanguard::v1::HEALTH_STATE_OVERLOADED : vanguard::v1::HEALTH_STATE_HEALTHY;
    o.window_state = stall ? vanguard::v1::HEALTH_STATE_WARN : o.health_state;
    o.passed_apart_from_tail = true;
    o.passed = o.tail_ratio <= 1;
    o.achieved_qps = o.offered_qps = step.rate_qps;
    return o;
  });
  ASSERT_GT(run.rates.size(), trace.size());
  EXPECT_NEAR(run.rates[trace.size()], 1495.5, 0.2) << ::testing::PrintToString(run.rates);
  EXPECT_EQ(run.holds[trace.size()], 1);  // a step like any other, not a hold
  EXPECT_GT(run.done.best_pass_qps, 0.9 * 3000) << run.done.summary;
  EXPECT_LE(run.done.best_pass_qps, 3000) << run.done.summary;
  EXPECT_NE(run.done.summary.find("measured again"), std::string::npos) << run.done.summary;
}

TEST(AdaptiveStrategyTest, AnEstimateIsNoFinerThanItsStepsCanResolve) {
  // Calm up to a cliff at 1000, then 30% of the requests over the limit (a congestion episode,
  // a stall). The arrivals of a step of 300 requests scatter by 6%, so those steps cannot tell
  // a cliff from a curve rising over several percent, and a calm step just below the first
  // failure proves little: the estimate stays several percent below the cliff. Steps of 20000
  // requests resolve it to about 1%.
  struct Case {
    int64_t requests;
    double low, high;  // the estimate's bounds, as fractions of the cliff
  };
  for (const Case& c : {Case{300, 0.88, 0.975}, Case{20000, 0.975, 1.0}}) {
    auto s = Adaptive();
    ASSERT_TRUE(s);
    StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
      const auto n = static_cast<int64_t>(static_cast<double>(c.requests) * step.hold);
      return WithTail(step.rate_qps, 2000, step.rate_qps <= 1000 ? 0 : 30, n);
    });
    EXPECT_TRUE(run.done.converged) << run.done.summary;
    EXPECT_GE(run.done.best_pass_qps, c.low * 1000) << c.requests << ": " << run.done.summary;
    EXPECT_LT(run.done.best_pass_qps, c.high * 1000) << c.requests << ": " << run.done.summary;
  }
}

TEST(AdaptiveStrategyTest, ABracketIsNoNarrowerThanItsStepsCanResolve) {
  // The same smooth tail curve, read by steps of 300 requests (an LLM: arrivals scatter by
  // 5.8%) and of 20000: the first search stops once its bracket is within that scatter
  // instead of spending steps on noise; the second brackets to epsilon (2%).
  const auto search = [](int64_t requests) {
    auto s = Adaptive();
    EXPECT_TRUE(s);
    return DriveSteps(*s, [&](const RunStep& step) {
      const auto n = static_cast<int64_t>(static_cast<double>(requests) * step.hold);
      const double tail = std::exp(12 * (step.rate_qps / 1000 - 1));
      StepOutcome o = WithTail(step.rate_qps, 2000, tail, n);
      o.limit_ratio = std::pow(tail, 0.25);  // the p99 over its limit, rising more slowly
      return o;
    });
  };
  const StrategyRun slow = search(300), fast = search(20000);
  for (const StrategyRun* run : {&slow, &fast}) {
    EXPECT_TRUE(run->done.converged) << run->done.summary;
    EXPECT_LE(run->done.max_sustainable_qps, 1000) << run->done.summary;
  }
  // The bracket the search closed: from its best pass to the lowest failure.
  EXPECT_LE(slow.done.confidence_high_qps - slow.done.best_pass_qps,
            slow.done.best_pass_qps / std::sqrt(300.0));
  EXPECT_LE(fast.done.confidence_high_qps - fast.done.best_pass_qps,
            0.02 * fast.done.best_pass_qps);
  EXPECT_LT(slow.rates.size(), fast.rates.size())
      << ::testing::PrintToString(slow.rates) << " vs " << ::testing::PrintToString(fast.rates);
}

TEST(AdaptiveStrategyTest, AHoldTakesBackABestThatOnlyLuckyShortStepsPassed) {
  // Short steps near the limit usually miss the rare events that set the long-run tail and
  // read half of it; a hold three steps long reads it in full. The long-run tail ratio is
  // exp(8 (rate / 800 - 1)): short steps alone would pass up to 800 (1 + ln 2 / 8) = 869.
  for (double capacity : {800.0, 1300.0}) {
    auto s = Adaptive(50, 2000, 0, /*confirm_best=*/true);
    ASSERT_TRUE(s);
    const auto truth = [&](double r) { return std::exp(8 * (r / capacity - 1)); };
    StrategyRun run = DriveSteps(*s, [&](const RunStep& step) {
      const bool hold = step.hold > 1;
      return WithTail(step.rate_qps, 2 * capacity,
                      hold ? truth(step.rate_qps) : 0.5 * truth(step.rate_qps), hold ? 9000 : 3000);
    });
    const Done& done = run.done;
    const std::vector<double> hold_rates = HoldRates(run);
    ASSERT_TRUE(done.converged) << done.summary;
    // The first hold, at the best the short steps found, reads over the limit.
    ASSERT_FALSE(hold_rates.empty());
    EXPECT_GT(truth(hold_rates.front()), 1) << ::testing::PrintToString(hold_rates);
    EXPECT_LE(hold_rates.size(), static_cast<size_t>(AdaptiveStrategy::kMaxConfirmations));
    // The estimate comes down below where short steps alone would have put it (+8.7%); the
    // search goes on from the failed hold with short steps again, so part of the way.
    EXPECT_LT(done.max_sustainable_qps, hold_rates.front()) << done.summary;
    EXPECT_LT(done.max_sustainable_qps, 1.06 * capacity) << done.summary;
    EXPECT_NE(done.summary.find("confirmation hold"), std::string::npos) << done.summary;
  }
}

TEST(AdaptiveStrategyTest, AHoldMustPassOnItsOwn) {
  // Short steps pass up to 900 (tail 0.1 of allowed, 3000 requests); the hold at the best reads
  // 1.1 over 9000 requests. Pooled with the short step at its rate it would pass (0.85); on its
  // own it does not, and the rate is no longer the estimate.
  auto s = Adaptive(50, 2000, 0, /*confirm_best=*/true);
  ASSERT_TRUE(s);
  StrategyRun run = DriveSteps(*s, [](const RunStep& step) {
    return step.hold > 1 ? WithTail(step.rate_qps, 2000, 1.1, 9000)
                         : WithTail(step.rate_qps, 2000, step.rate_qps <= 900 ? 0.1 : 5);
  });
  const Done& done = run.done;
  const std::vector<double> holds = HoldRates(run);
  ASSERT_EQ(holds.size(), 1u) << "one hold at most";
  EXPECT_LE(holds[0], 900);
  EXPECT_GT(done.max_sustainable_qps, 0);
  EXPECT_LT(done.max_sustainable_qps, holds[0]) << done.summary;
  EXPECT_DOUBLE_EQ(done.confidence_high_qps, holds[0]) << done.summary;
  EXPECT_NE(done.summary.find("did not hold"), std::string::npos) << done.summary;
}

TEST(AdaptiveStrategyTest, FeedbackPlacementClosesTheBracketInFewerSteps) {
  for (double capacity : {437.0, 911.0, 1633.0}) {
    auto with = Adaptive();
    auto without = Adaptive();
    ASSERT_TRUE(with && without);
    StrategyRun fed = Drive(*with, [&](double r) { return CliffPredictor(r, capacity); });
    StrategyRun blind = Drive(*without, [&](double r) {
      StepOutcome o = CliffPredictor(r, capacity);
      o.limit_ratio = 0;  // no feedback: the paper's fixed moves
      return o;
    });
    EXPECT_TRUE(fed.done.converged) << capacity << ": " << fed.done.summary;
    EXPECT_LE(fed.done.best_pass_qps, capacity) << capacity;
    EXPECT_GE(fed.done.best_pass_qps, 0.98 * capacity) << capacity;
    // After the first failure, the prediction (exact for this model) closes the bracket in
    // at most two more steps.
    size_t first_failure = 0;
    while (fed.rates[first_failure] <= capacity) ++first_failure;
    EXPECT_LE(fed.rates.size() - first_failure - 1, 2u)
        << capacity << ": " << ::testing::PrintToString(fed.rates);
    EXPECT_LT(fed.rates.size(), blind.rates.size()) << capacity;
    EXPECT_GE(blind.done.max_sustainable_qps, 0.95 * capacity) << capacity;
  }
}

// A limit ratio whose log is concave below capacity (tiny far below, creeping up to 1) and
// steep above: interpolating log(ratio) from a pass far below lands next to the failure each
// time.
StepOutcome BentPredictor(double rate, double capacity) {
  const double x = rate / capacity;
  return WithLimitRatio(rate, capacity, std::exp(x < 1 ? -10 * std::sqrt(1 - x) : 5 * (x - 1)));
}

TEST(AdaptiveStrategyTest, FeedbackPlacementDoesNotCrawlFromOneEnd) {
  for (double capacity : {437.0, 911.0, 1633.0}) {
    auto s = Adaptive();
    ASSERT_TRUE(s);
    StrategyRun run = Drive(*s, [&](double r) { return BentPredictor(r, capacity); });
    EXPECT_TRUE(run.done.converged) << capacity << ": " << run.done.summary;
    EXPECT_LE(run.done.max_sustainable_qps, capacity);
    EXPECT_GE(run.done.max_sustainable_qps, 0.97 * capacity);
    size_t first_failure = 0;
    while (run.rates[first_failure] <= capacity) ++first_failure;
    // Failures in a row after the first: from the second in a row on, the pass's weight is
    // halved each time (Illinois) and the prediction leaves the failing end.
    size_t in_a_row = 0, longest = 0;
    for (size_t i = first_failure; i < run.rates.size(); ++i) {
      in_a_row = run.rates[i] > capacity ? in_a_row + 1 : 0;
      longest = std::max(longest, in_a_row);
    }
    EXPECT_LE(longest, 3u) << capacity << ": " << ::testing::PrintToString(run.rates);
    EXPECT_LE(run.rates.size() - first_failure, 7u)
        << capacity << ": " << ::testing::PrintToString(run.rates);
  }
}

TEST(AdaptiveStrategyTest, APassThatReadNoTailIsPlacedByItsLimitRatio) {
  // The readings of an end-to-end search of the embedding profile (capacity 4400 req/s, p99
  // limit 5 ms): the passes read no request over the limit, the failure at 4781 read 31 times
  // the allowed share. The pooled fit gives the pass at 4170 a tiny tail ratio, whose log
  // kept every prediction next to the failure (4748, 4666, 4584, 4479, 4373: five failures
  // in a row). Its step could not have read a ratio that small, so the p99 ratios (3.4 ms and
  // 11.7 ms over 5 ms) place the next step instead, near where the p99 reaches its limit.
  struct Reading {
    double tail;
    int64_t requests;
    double p99_ms;
    HealthState state;
  };
  auto s = Adaptive(250, 7500);
  ASSERT_TRUE(s);
  Decision d = s->Next(std::nullopt);
  for (const Reading& r : {Reading{0, 731, 1.3, vanguard::v1::HEALTH_STATE_HEALTHY},
                           Reading{0, 6115, 1.7, vanguard::v1::HEALTH_STATE_HEALTHY},
                           Reading{0, 11622, 3.1, vanguard::v1::HEALTH_STATE_WARN},
                           Reading{31.14, 14400, 11.7, vanguard::v1::HEALTH_STATE_OVERLOADED},
                           Reading{0, 12263, 3.4, vanguard::v1::HEALTH_STATE_WARN}}) {
    ASSERT_TRUE(std::holds_alternative<RunStep>(d));
    StepOutcome o;
    o.rate_qps = std::get<RunStep>(d).rate_qps;
    o.achieved_qps = o.offered_qps = o.rate_qps;
    o.p99_ms = r.p99_ms;
    o.limit_ratio = r.p99_ms / 5;
    o.tail_ratio = r.tail;
    o.tail_samples = r.requests;
    o.passed_apart_from_tail = true;
    o.passed = r.tail <= 1;
    o.health_state = o.window_state = r.state;
    d = s->Next(o);
  }
  ASSERT_TRUE(std::holds_alternative<RunStep>(d));
  const double next = std::get<RunStep>(d).rate_qps;
  EXPECT_GT(next, 4300);
  EXPECT_LT(next, 4500);
}

TEST(AdaptiveStrategyTest, FirstStepsFollowAlgorithmOne) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(500);  // step = 100
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  Strategy& a = **s;
  auto outcome = [](double rate, bool passed, HealthState h, int spikes = 0,
                    HealthState window = vanguard::v1::HEALTH_STATE_UNSPECIFIED) {
    StepOutcome o;
    o.rate_qps = rate;
    o.passed = passed;
    o.health_state = h;
    o.spikes = spikes;
    o.window_state = window;
    return o;
  };
  EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(std::nullopt)).rate_qps, 100);
  // Healthy: up by the full step.
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(outcome(100, true, vanguard::v1::HEALTH_STATE_HEALTHY))).rate_qps,
      200);
  // Warn: dampen (alpha = 0.5) and up.
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(outcome(200, true, vanguard::v1::HEALTH_STATE_WARN))).rate_qps, 250);
  // A failure made of two isolated spikes is noise: up by step * alpha, best unchanged.
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(outcome(250, false, vanguard::v1::HEALTH_STATE_OVERLOADED, 2,
                                       vanguard::v1::HEALTH_STATE_WARN)))
          .rate_qps,
      275);
  // A sustained failure backs off (never below the best, 200) and dampens.
  const double next =
      std::get<RunStep>(a.Next(outcome(275, false, vanguard::v1::HEALTH_STATE_OVERLOADED, 0,
                                       vanguard::v1::HEALTH_STATE_OVERLOADED)))
          .rate_qps;
  EXPECT_DOUBLE_EQ(next, 225);  // 275 - 50 = 225 (> best 200), step now 25
}

TEST(AdaptiveStrategyTest, SustainedHealthUndoesAnEarlyDampening) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(8100);  // step 2000
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  Strategy& a = **s;
  auto passed = [](double rate, HealthState h) {
    StepOutcome o;
    o.rate_qps = rate;
    o.passed = true;
    o.health_state = h;
    return o;
  };
  a.Next(std::nullopt);
  // A noisy first step scores CRITICAL: alpha^3 = 1/8 of the step.
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(passed(100, vanguard::v1::HEALTH_STATE_CRITICAL))).rate_qps, 350);
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(passed(350, vanguard::v1::HEALTH_STATE_HEALTHY))).rate_qps, 600);
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(passed(600, vanguard::v1::HEALTH_STATE_HEALTHY))).rate_qps, 850);
  // The third healthy pass in a row doubles the step back: 850 + 500.
  EXPECT_DOUBLE_EQ(
      std::get<RunStep>(a.Next(passed(850, vanguard::v1::HEALTH_STATE_HEALTHY))).rate_qps, 1350);
}

TEST(AdaptiveStrategyTest, TooManySpikesAreAFailure) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(500);
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  Strategy& a = **s;
  a.Next(std::nullopt);
  StepOutcome o;
  o.rate_qps = 100;
  o.passed = true;
  o.health_state = vanguard::v1::HEALTH_STATE_HEALTHY;
  EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(o)).rate_qps, 200);
  o.rate_qps = 200;
  o.passed = false;
  o.health_state = vanguard::v1::HEALTH_STATE_OVERLOADED;
  o.window_state = vanguard::v1::HEALTH_STATE_WARN;
  o.spikes = 3;  // > tau = 2
  // Back off: 200 - 100 = 100 <= best, so best + damped step.
  EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(o)).rate_qps, 150);
}

TEST(AdaptiveStrategyTest, NoiseNeverBecomesTheEstimate) {
  // Every step above 300 fails through one isolated spike: the estimate stays at what passed.
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(100);
  c.set_max_qps(900);
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) {
    StepOutcome o = ModelPredictor(r, 1000);
    if (r > 300) {
      o.passed = false;
      o.spikes = 1;
      o.window_state = vanguard::v1::HEALTH_STATE_HEALTHY;
    }
    return o;
  });
  EXPECT_LE(run.done.max_sustainable_qps, 300);
}

// A model whose long-run tail ratio is exp(6 (rate / capacity - 1)) (1.0 at capacity), made
// of two parts as with a predictor that stalls now and then: calm steps read half of it, and
// every fifth step a stall lands in the step and it reads three times it (one isolated spike
// window), so the long-run mean over steps is the true ratio. Each step measured 3000
// requests.
// A model whose long-run tail ratio is exp(6 (rate / capacity - 1)) (1.0 at capacity), made
// of two parts as with a predictor that stalls now and then: calm steps read half of it, and
// one step in five (those with step % 5 == phase) a stall lands in the step and it reads
// three times it (one isolated spike window), so the long-run mean is the true ratio.
StepOutcome StallingPredictor(double rate, double capacity, int step, int phase, bool report_tail) {
  StepOutcome o = ModelPredictor(rate, capacity);
  const double truth = std::exp(6 * (rate / capacity - 1));
  const bool stall = step % 5 == phase;
  // At most every request over the limit: 100 times the 1% allowed.
  const double measured = std::min(100.0, stall ? 3 * truth : 0.5 * truth);
  o.passed = measured <= 1;
  o.limit_ratio = std::pow(measured, 0.25);  // p99 over its limit grows more slowly
  o.health_state =
      o.passed ? vanguard::v1::HEALTH_STATE_UNHEALTHY : vanguard::v1::HEALTH_STATE_OVERLOADED;
  o.window_state = stall ? vanguard::v1::HEALTH_STATE_WARN : o.health_state;
  o.spikes = stall ? 1 : 0;
  if (report_tail) {
    o.tail_ratio = measured;
    o.tail_samples = 3000;  // requests measured
    o.passed_apart_from_tail = true;
  }
  return o;
}

TEST(AdaptiveStrategyTest, PooledTailsTakeRareStallsAtTheirLongRunWeight) {
  // Over every placement of the stalls and three capacities: the mean error of the estimate.
  double error_sum[2] = {0, 0}, abs_error_sum[2] = {0, 0};
  int runs = 0;
  for (double capacity : {437.0, 911.0, 1633.0}) {
    for (int phase = 0; phase < 5; ++phase) {
      ++runs;
      for (bool pooled : {false, true}) {
        auto s = Adaptive();
        ASSERT_TRUE(s);
        int step = 0;
        StrategyRun run = Drive(
            *s, [&](double r) { return StallingPredictor(r, capacity, step++, phase, pooled); });
        EXPECT_LE(run.rates.size(), 20u) << capacity << " phase " << phase;
        // The search's best pass (the estimate takes the resolution off it as well).
        const double error = run.done.best_pass_qps / capacity - 1;
        error_sum[pooled] += error;
        abs_error_sum[pooled] += std::abs(error);
        // Judged step by step, a stall is a spike (noise) and calm steps pass up to where
        // half the true ratio reaches 1: 11.5% above capacity.
        if (!pooled) {
          EXPECT_GT(error, 0.05) << capacity << " phase " << phase;
        }
        // Pooled, a run whose neighbourhood of the limit saw no stall at all can still land
        // there; never further.
        if (pooled) {
          EXPECT_LT(std::abs(error), 0.115) << capacity << " phase " << phase;
        }
      }
    }
  }
  EXPECT_GT(error_sum[0] / runs, 0.09);
  EXPECT_LT(abs_error_sum[1] / runs, 0.05);
  EXPECT_LT(error_sum[1] / runs, 0.03);
  EXPECT_LT(abs_error_sum[1], abs_error_sum[0] / 2);
}

TEST(AdaptiveStrategyTest, StepsWithoutTailSamplesKeepTheirOwnVerdict) {
  // A pass whose tail ratio says otherwise, with no samples behind it: its verdict stands.
  auto s = Adaptive(100, 500);
  ASSERT_TRUE(s);
  Strategy& a = *s;
  a.Next(std::nullopt);
  StepOutcome o = ModelPredictor(100, 1000);
  o.tail_ratio = 5;
  o.tail_samples = 0;
  EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(o)).rate_qps, 200);  // passed: up by the step
}

TEST(AdaptiveStrategyTest, ACalmPassAboveAStallIsNotTheBest) {
  // 200 fails through one stall window (a spike: noise, the search moves on up); 250 reads
  // calm and passes on its own. The tail cannot shrink with the rate, so pooled both read
  // (3.0 + 0.5) / 2 = 1.75: 250 fails, and the best stays at 100.
  for (bool report_tail : {false, true}) {
    auto s = Adaptive(100, 500, /*max_steps=*/3);
    ASSERT_TRUE(s);
    Strategy& a = *s;
    a.Next(std::nullopt);
    auto step = [&](double rate, double tail, int spikes) {
      StepOutcome o = ModelPredictor(rate, 1000);
      o.passed = tail <= 1;
      o.spikes = spikes;
      if (spikes > 0) o.window_state = vanguard::v1::HEALTH_STATE_WARN;
      if (report_tail) {
        o.tail_ratio = tail;
        o.tail_samples = 1000;
        o.passed_apart_from_tail = true;
      }
      return o;
    };
    EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(step(100, 0.1, 0))).rate_qps, 200);
    EXPECT_DOUBLE_EQ(std::get<RunStep>(a.Next(step(200, 3.0, 1))).rate_qps, 250);
    const Decision d = a.Next(step(250, 0.5, 0));
    ASSERT_TRUE(std::holds_alternative<Done>(d));
    // Judged alone (no tail samples), the calm step is the best.
    EXPECT_DOUBLE_EQ(std::get<Done>(d).best_pass_qps, report_tail ? 100 : 250);
  }
}

TEST(AdaptiveStrategyTest, RejectsBadDamping) {
  vanguard::v1::AdaptiveStrategy c;
  c.set_min_qps(1);
  c.set_max_qps(10);
  c.set_damping(1.5);
  auto s = AdaptiveStrategy::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("adaptive.damping"), std::string::npos);
}

TEST(CoefficientOfVariationTest, MatchesDefinition) {
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({5, 5, 5}), 0);
  EXPECT_NEAR(CoefficientOfVariation({1, 2, 3}), std::sqrt(2.0 / 3.0) / 2, 1e-12);
  EXPECT_EQ(CoefficientOfVariation({7}), 0);
}

// ---------------------------------------------------------------- ladder

TEST(LadderStrategyTest, CoarseThenFineAndPublishesReserveAndSurvivor) {
  auto s = LadderStrategy::Create({});
  ASSERT_TRUE(s.ok()) << s.status();
  // Seed 003: passes up to 4.8 rps, fails at 5.2 (and at 8).
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 5.0); });
  const std::vector<double> one_ramp = {2, 4, 8, 4.4, 4.8, 5.2};
  ASSERT_EQ(run.rates.size(), 2 * one_ramp.size());
  for (size_t i = 0; i < run.rates.size(); ++i) {
    EXPECT_NEAR(run.rates[i], one_ramp[i % one_ramp.size()], 1e-9) << i;
  }
  EXPECT_NEAR(run.done.max_sustainable_qps, 4.8, 1e-9);
  EXPECT_NEAR(run.done.reserve_qps, 3.12, 1e-9);
  EXPECT_NEAR(run.done.survivor_qps, 6.24, 1e-9);
  EXPECT_TRUE(run.done.converged);
  EXPECT_NEAR(run.done.confidence_high_qps, 5.2, 1e-9);
  EXPECT_EQ(run.done.ramp_max_qps.size(), 2u);
}

TEST(LadderStrategyTest, DisagreeingRampsGetAThirdDecidedByMedian) {
  auto s = LadderStrategy::Create({});
  ASSERT_TRUE(s.ok());
  int ramp = 0;
  int steps_in_ramp = 0;
  const double capacity[] = {5.0, 9.0, 7.0};
  // A ramp ends after its fine ramp fails; count ramps by the rate dropping back to 2.
  StrategyRun run = Drive(**s, [&](double r) {
    if (r == 2 && steps_in_ramp > 0) ++ramp;
    ++steps_in_ramp;
    return ModelPredictor(r, capacity[std::min(ramp, 2)]);
  });
  ASSERT_EQ(run.done.ramp_max_qps.size(), 3u);
  EXPECT_NEAR(run.done.ramp_max_qps[0], 4.8, 1e-9);
  EXPECT_NEAR(run.done.ramp_max_qps[1], 8.8, 1e-9);
  EXPECT_NEAR(run.done.ramp_max_qps[2], 6.8, 1e-9);
  EXPECT_NEAR(run.done.max_sustainable_qps, 6.8, 1e-9);
}

TEST(LadderStrategyTest, StepRuleUsesGoodputQueueAndClientGate) {
  auto s = LadderStrategy::Create({});
  ASSERT_TRUE(s.ok());
  StepOutcome o = ModelPredictor(1, 10);
  std::string why;
  EXPECT_EQ((*s)->StepPasses(o, &why), std::optional<bool>(true));
  o.goodput = 0.985;
  EXPECT_EQ((*s)->StepPasses(o, &why), std::optional<bool>(false));
  EXPECT_NE(why.find("goodput"), std::string::npos);
  o.goodput = 0.995;
  o.queue_mean = 1.2;
  EXPECT_EQ((*s)->StepPasses(o, &why), std::optional<bool>(false));
  EXPECT_NE(why.find("queue"), std::string::npos);
  o.queue_mean = 0.5;
  o.client_valid = false;
  EXPECT_EQ((*s)->StepPasses(o, &why), std::optional<bool>(false));
  o.client_valid = true;
  o.queue_samples_fraction = 0.85;
  EXPECT_EQ((*s)->StepPasses(o, &why), std::nullopt);
  EXPECT_NE(why.find("not judged"), std::string::npos);
}

TEST(LadderStrategyTest, TooFewQueueSamplesStopsTheProcedure) {
  auto s = LadderStrategy::Create({});
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) {
    StepOutcome o = ModelPredictor(r, 100);
    if (r >= 8) o.queue_samples_fraction = 0.5;
    return o;
  });
  EXPECT_FALSE(run.done.converged);
  EXPECT_EQ(run.rates.size(), 3u);
  EXPECT_NE(run.done.summary.find("not judged"), std::string::npos);
}

// ---------------------------------------------------------------- direct controller

TEST(DirectControllerStrategyTest, VerifiesTargetAndHeadroom) {
  vanguard::v1::DirectControllerStrategy c;
  c.set_headroom_fraction(0.2);
  auto s = DirectControllerStrategy::Create(c, 400);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 450); });
  ASSERT_EQ(run.rates.size(), 2u);
  EXPECT_DOUBLE_EQ(run.rates[1], 480);
  EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 400);
  EXPECT_DOUBLE_EQ(run.done.confidence_high_qps, 480);
  EXPECT_NE(run.done.summary.find("holds"), std::string::npos);
}

TEST(DirectControllerStrategyTest, TargetThatFailsEstimatesZero) {
  auto s = DirectControllerStrategy::Create({}, 500);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 450); });
  EXPECT_EQ(run.rates.size(), 1u);
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
  EXPECT_NE(run.done.summary.find("does NOT hold"), std::string::npos);
}

// Steps at 400 qps with 3000 requests each whose tail ratios are `tails` in turn; a step
// fails on its tail alone when its ratio is over 1.
StrategyRun DriveTails(std::vector<double> tails) {
  auto s = DirectControllerStrategy::Create({}, 400);
  EXPECT_TRUE(s.ok());
  size_t i = 0;
  return Drive(**s, [&](double r) { return WithTail(r, 450, tails[i++ % tails.size()]); });
}

TEST(DirectControllerStrategyTest, AStepFailingOnItsTailAloneIsJudgedWithMoreOfTheSameRate) {
  // A stall in the first step (2.5 of allowed); three calm steps after it: 0.8 over all four.
  StrategyRun run = DriveTails({2.5, 0.2, 0.3, 0.2});
  ASSERT_EQ(run.rates.size(), 4u);
  for (double r : run.rates) EXPECT_DOUBLE_EQ(r, 400);
  EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 400);
  EXPECT_NE(run.done.summary.find("tail over 4 steps was 0.80"), std::string::npos)
      << run.done.summary;
  // A tail that stays over the limit fails the target.
  run = DriveTails({2.5, 1.2, 0.9, 1.4});
  EXPECT_EQ(run.rates.size(), 4u);
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
  // A pass is never stretched, and a failure of anything else is not re-judged.
  run = DriveTails({0.5});
  EXPECT_EQ(run.rates.size(), 1u);
  auto s = DirectControllerStrategy::Create({}, 400);
  ASSERT_TRUE(s.ok());
  run = Drive(**s, [](double r) { return WithTail(r, 450, 2, 3000, /*other_checks_held=*/false); });
  EXPECT_EQ(run.rates.size(), 1u);
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
}

TEST(DirectControllerStrategyTest, FactoryNeedsTheFetchedRateForAUrl) {
  vanguard::v1::TestSpec spec;
  spec.mutable_direct_controller()->set_json_url("http://autoscaler/target");
  EXPECT_TRUE(absl::IsFailedPrecondition(CreateStrategy(spec).status()));
  StrategyContext context;
  context.controller_target_qps = 120;
  auto s = CreateStrategy(spec, context);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(std::get<RunStep>((*s)->Next(std::nullopt)).rate_qps, 120);
}

// ---------------------------------------------------------------- stability

TEST(StabilityStrategyTest, StableRunHoldsTheRate) {
  vanguard::v1::StabilityStrategy c;
  c.set_rate_qps(300);
  c.set_segments(6);
  auto s = StabilityStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) {
    StepOutcome o = ModelPredictor(r, 500);
    o.memory_bytes = 1e9;
    return o;
  });
  EXPECT_EQ(run.rates.size(), 6u);
  EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 300);
  EXPECT_TRUE(run.done.drift_flags.empty());
}

TEST(StabilityStrategyTest, FlagsLatencyErrorThroughputAndMemoryDrift) {
  vanguard::v1::StabilityStrategy c;
  c.set_rate_qps(300);
  c.set_segments(9);
  auto s = StabilityStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  int i = 0;
  StrategyRun run = Drive(**s, [&](double r) {
    StepOutcome o = ModelPredictor(r, 500);
    o.p99_ms = 10 + 2 * i;                  // 10 -> 26 ms
    o.error_rate = 0.002 * i;               // 0 -> 1.6%
    o.achieved_qps = 300 - 5 * i;           // 300 -> 260
    o.memory_bytes = 1e9 * (1 + 0.05 * i);  // +40%
    ++i;
    return o;
  });
  ASSERT_EQ(run.done.drift_flags.size(), 4u) << run.done.summary;
  EXPECT_NE(run.done.drift_flags[0].find("latency trend"), std::string::npos);
  EXPECT_NE(run.done.drift_flags[1].find("error creep"), std::string::npos);
  EXPECT_NE(run.done.drift_flags[2].find("throughput decay"), std::string::npos);
  EXPECT_NE(run.done.drift_flags[3].find("memory growth"), std::string::npos);
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
}

TEST(StabilityStrategyTest, TheTailIsJudgedOverTheWholeRun) {
  vanguard::v1::StabilityStrategy c;
  c.set_rate_qps(300);
  c.set_segments(6);
  // One segment in six meets a stall: 2.5x the allowed share over its p99 limit, the others
  // 0.4x. Over the run: (2.5 + 5 x 0.4) / 6 = 0.75 of allowed: held.
  for (double calm : {0.4, 0.8}) {
    auto s = StabilityStrategy::Create(c);
    ASSERT_TRUE(s.ok());
    int i = 0;
    StrategyRun run = Drive(**s, [&](double r) { return WithTail(r, 500, i++ == 2 ? 2.5 : calm); });
    if (calm == 0.4) {
      EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 300) << run.done.summary;
      EXPECT_NE(run.done.summary.find("1 segment(s) over it alone"), std::string::npos);
    } else {
      // (2.5 + 5 x 0.8) / 6 = 1.08: the run's tail is over the limit.
      EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 0) << run.done.summary;
      EXPECT_NE(run.done.summary.find("BREACHED"), std::string::npos) << run.done.summary;
    }
  }
  // A segment failing anything but its tail still fails the run.
  auto s = StabilityStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  int i = 0;
  StrategyRun run = Drive(**s, [&](double r) {
    return WithTail(r, 500, 0.1, 3000, /*other_checks_held=*/i++ != 3);  // e.g. errors
  });
  EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 0) << run.done.summary;
}

TEST(StabilityStrategyTest, ThroughputIsJudgedAgainstWhatEachSegmentOffered) {
  vanguard::v1::StabilityStrategy c;
  c.set_rate_qps(30);
  c.set_segments(6);
  // Poisson segments of ~200 arrivals: offered 32, 31, 30, 29, 28, 27 req/s by chance, all
  // served. Achieved alone falls 12%; against what was offered it does not fall at all.
  for (bool decaying : {false, true}) {
    auto s = StabilityStrategy::Create(c);
    ASSERT_TRUE(s.ok());
    int i = 0;
    StrategyRun run = Drive(**s, [&](double r) {
      StepOutcome o = ModelPredictor(r, 500);
      o.offered_qps = 32 - i;
      o.achieved_qps = o.offered_qps * (decaying ? 1 - 0.03 * i : 1.0);
      ++i;
      return o;
    });
    if (decaying) {
      ASSERT_EQ(run.done.drift_flags.size(), 1u) << run.done.summary;
      EXPECT_NE(run.done.drift_flags[0].find("of offered"), std::string::npos);
    } else {
      EXPECT_TRUE(run.done.drift_flags.empty()) << run.done.summary;
      EXPECT_DOUBLE_EQ(run.done.max_sustainable_qps, 30);
    }
  }
}

TEST(StabilityStrategyTest, MemoryNotScrapedIsNotFlagged) {
  vanguard::v1::StabilityStrategy c;
  c.set_rate_qps(300);
  c.set_segments(3);
  auto s = StabilityStrategy::Create(c);
  ASSERT_TRUE(s.ok());
  StrategyRun run = Drive(**s, [](double r) { return ModelPredictor(r, 500); });  // memory_bytes -1
  EXPECT_TRUE(run.done.drift_flags.empty());
}

}  // namespace
}  // namespace vanguard::worker
