// Sweep decisions, driven as a user would see them: which rates run, in what order, and
// what estimate the test ends with.
#include "worker/sweep_strategy.h"

#include <functional>
#include <optional>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/strategy.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct SweepRun {
  std::vector<double> rates_run;
  Done done;
};

// Drives `strategy` to Done, answering each step with `outcome_for(rate, attempt_at_rate)`.
SweepRun Drive(Strategy& strategy,
               const std::function<StepOutcome(double rate, int attempt_at_rate)>& outcome_for) {
  SweepRun run;
  std::optional<StepOutcome> last;
  for (int guard = 0; guard < 100; ++guard) {
    Decision d = strategy.Next(last);
    if (auto* done = std::get_if<Done>(&d)) {
      run.done = *done;
      return run;
    }
    const double rate = std::get<RunStep>(d).rate_qps;
    int attempt_at_rate = 0;
    for (double r : run.rates_run) attempt_at_rate += (r == rate);
    run.rates_run.push_back(rate);
    last = outcome_for(rate, attempt_at_rate);
  }
  ADD_FAILURE() << "sweep did not finish";
  return run;
}

StepOutcome Outcome(double rate, bool passed, bool client_valid = true) {
  StepOutcome o;
  o.rate_qps = rate;
  o.passed = passed;
  o.client_valid = client_valid;
  return o;
}

// A model that sustains up to `capacity` qps.
std::function<StepOutcome(double, int)> Capacity(double capacity) {
  return [capacity](double rate, int) { return Outcome(rate, rate <= capacity); };
}

vanguard::v1::SweepStrategy MinMax(double min, double max, int steps, int stop_after = 0) {
  vanguard::v1::SweepStrategy s;
  s.set_min_qps(min);
  s.set_max_qps(max);
  s.set_steps(steps);
  s.set_stop_after_failures(stop_after);
  return s;
}

std::unique_ptr<SweepStrategy> MustCreate(const vanguard::v1::SweepStrategy& config) {
  auto s = SweepStrategy::Create(config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(SweepStrategyTest, ExpandsMinMaxIntoEqualSteps) {
  auto sweep = MustCreate(MinMax(100, 500, 5));
  EXPECT_THAT(sweep->rates(), ElementsAre(100, 200, 300, 400, 500));
}

TEST(SweepStrategyTest, OneStepRunsOnlyMin) {
  auto sweep = MustCreate(MinMax(150, 900, 1));
  EXPECT_THAT(sweep->rates(), ElementsAre(150));
  SweepRun run = Drive(*sweep, Capacity(1000));
  EXPECT_THAT(run.rates_run, ElementsAre(150));
}

TEST(SweepStrategyTest, RunsListedRatesAscendingWithoutDuplicates) {
  vanguard::v1::SweepStrategy config;
  for (double r : {300.0, 100.0, 200.0, 100.0}) config.add_rates_qps(r);
  auto sweep = MustCreate(config);
  SweepRun run = Drive(*sweep, Capacity(1000));
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300));
}

TEST(SweepStrategyTest, StopsAtFirstFailureWithHighestPassingRate) {
  auto sweep = MustCreate(MinMax(100, 500, 5));
  SweepRun run = Drive(*sweep, Capacity(250));
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300));
  EXPECT_EQ(run.done.max_sustainable_qps, 200);
  EXPECT_TRUE(run.done.converged);
  EXPECT_EQ(run.done.confidence_low_qps, 200);
  EXPECT_EQ(run.done.confidence_high_qps, 300);
  EXPECT_THAT(run.done.summary, HasSubstr("200"));
}

TEST(SweepStrategyTest, StopAfterTwoFailuresNeedsTwoConsecutiveFailures) {
  auto sweep = MustCreate(MinMax(100, 700, 7, /*stop_after=*/2));
  // 300 fails, 400 passes again (noise), 500 and 600 fail: stop there, 700 never runs.
  SweepRun run =
      Drive(*sweep, [](double rate, int) { return Outcome(rate, rate <= 200 || rate == 400); });
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300, 400, 500, 600));
  // The estimate stays below the first failure.
  EXPECT_EQ(run.done.max_sustainable_qps, 200);
  EXPECT_EQ(run.done.confidence_high_qps, 300);
  EXPECT_TRUE(run.done.converged);
  EXPECT_THAT(run.done.summary, HasSubstr("400"));
}

TEST(SweepStrategyTest, StopAfterTwoFailuresStopsOnTheSecondConsecutiveFailure) {
  auto sweep = MustCreate(MinMax(100, 600, 6, /*stop_after=*/2));
  SweepRun run = Drive(*sweep, Capacity(250));
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300, 400));
  EXPECT_EQ(run.done.max_sustainable_qps, 200);
}

TEST(SweepStrategyTest, AllPassEstimatesMaxButNotConverged) {
  auto sweep = MustCreate(MinMax(100, 500, 5));
  SweepRun run = Drive(*sweep, Capacity(10'000));
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300, 400, 500));
  EXPECT_EQ(run.done.max_sustainable_qps, 500);
  EXPECT_FALSE(run.done.converged);
  EXPECT_THAT(run.done.summary, HasSubstr("capacity above the sweep's max_qps"));
}

TEST(SweepStrategyTest, LowestRateFailingEstimatesZero) {
  auto sweep = MustCreate(MinMax(100, 500, 5));
  SweepRun run = Drive(*sweep, Capacity(50));
  EXPECT_THAT(run.rates_run, ElementsAre(100));
  EXPECT_EQ(run.done.max_sustainable_qps, 0);
  EXPECT_FALSE(run.done.converged);
  EXPECT_EQ(run.done.confidence_high_qps, 100);
  EXPECT_THAT(run.done.summary, HasSubstr("lowest rate"));
}

TEST(SweepStrategyTest, LastRateFailingConcludesConverged) {
  auto sweep = MustCreate(MinMax(100, 300, 3, /*stop_after=*/3));
  SweepRun run = Drive(*sweep, Capacity(250));
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 300));
  EXPECT_EQ(run.done.max_sustainable_qps, 200);
  EXPECT_TRUE(run.done.converged);
}

TEST(SweepStrategyTest, InvalidClientStepIsRetriedOnceAndNotJudged) {
  auto sweep = MustCreate(MinMax(100, 400, 4));
  // The first run at 200 has an invalid client and a "failed" judgement that must not
  // count; the retry passes.
  SweepRun run = Drive(*sweep, [](double rate, int attempt_at_rate) {
    if (rate == 200 && attempt_at_rate == 0) return Outcome(rate, false, /*client_valid=*/false);
    return Outcome(rate, rate <= 300);
  });
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 200, 300, 400));
  EXPECT_EQ(run.done.max_sustainable_qps, 300);
  EXPECT_TRUE(run.done.converged);
}

TEST(SweepStrategyTest, InvalidClientTwiceStopsUnconverged) {
  auto sweep = MustCreate(MinMax(100, 400, 4));
  SweepRun run = Drive(
      *sweep, [](double rate, int) { return Outcome(rate, true, /*client_valid=*/rate != 200); });
  EXPECT_THAT(run.rates_run, ElementsAre(100, 200, 200));
  EXPECT_FALSE(run.done.converged);
  EXPECT_EQ(run.done.max_sustainable_qps, 100);
  EXPECT_THAT(run.done.summary, HasSubstr("not valid"));
}

TEST(SweepStrategyTest, KeepsAnsweringDoneAfterDone) {
  auto sweep = MustCreate(MinMax(100, 200, 2));
  SweepRun run = Drive(*sweep, Capacity(150));
  Decision again = sweep->Next(Outcome(999, true));
  ASSERT_TRUE(std::holds_alternative<Done>(again));
  EXPECT_EQ(std::get<Done>(again).max_sustainable_qps, run.done.max_sustainable_qps);
}

TEST(SweepStrategyTest, RejectsBadSpecsNamingTheField) {
  struct Case {
    vanguard::v1::SweepStrategy config;
    const char* field;
  };
  vanguard::v1::SweepStrategy negative_rate;
  negative_rate.add_rates_qps(100);
  negative_rate.add_rates_qps(-5);
  vanguard::v1::SweepStrategy nan_rate;
  nan_rate.add_rates_qps(std::nan(""));
  vanguard::v1::SweepStrategy both = MinMax(100, 200, 2);
  both.add_rates_qps(150);
  std::vector<Case> cases = {
      {vanguard::v1::SweepStrategy(), "sweep"},
      {MinMax(0, 500, 5), "sweep.min_qps"},
      {MinMax(-1, 500, 5), "sweep.min_qps"},
      {MinMax(100, 50, 5), "sweep.max_qps"},
      {MinMax(100, 500, 0), "sweep.steps"},
      {MinMax(100, 500, -3), "sweep.steps"},
      {MinMax(100, 500, 5, -1), "sweep.stop_after_failures"},
      {negative_rate, "sweep.rates_qps[1]"},
      {nan_rate, "sweep.rates_qps[0]"},
      {both, "not both"},
  };
  for (const Case& c : cases) {
    auto s = SweepStrategy::Create(c.config);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.field));
  }
}

TEST(CreateStrategyTest, BuildsSweepFromSpec) {
  vanguard::v1::TestSpec spec;
  *spec.mutable_sweep() = MinMax(100, 300, 3);
  auto strategy = CreateStrategy(spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->name(), "sweep");
  Decision first = (*strategy)->Next(std::nullopt);
  ASSERT_TRUE(std::holds_alternative<RunStep>(first));
  EXPECT_EQ(std::get<RunStep>(first).rate_qps, 100);
}

TEST(CreateStrategyTest, RejectsSpecWithoutStrategy) {
  auto strategy = CreateStrategy(vanguard::v1::TestSpec());
  EXPECT_EQ(strategy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(strategy.status().message()), HasSubstr("spec.strategy"));
}

TEST(CreateStrategyTest, RejectsBadSweepParameters) {
  vanguard::v1::TestSpec spec;
  *spec.mutable_sweep() = MinMax(100, 50, 3);
  EXPECT_EQ(CreateStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::worker
