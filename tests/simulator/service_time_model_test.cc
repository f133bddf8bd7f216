// Unit tests of the service-time perturbations: warmup, co-location, jitter and stalls.
#include "tests/simulator/service_time_model.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

absl::Duration Ms(double ms) { return absl::Microseconds(ms * 1000); }

TEST(ServiceTimeModelTest, WithoutPerturbationsWorkIsTheNominalCost) {
  ServiceTimeModel model({});
  EXPECT_EQ(model.Work(Ms(10), Ms(0)), Ms(10));
  EXPECT_EQ(model.FinishAfter(Ms(5), Ms(10)), Ms(15));
  EXPECT_FALSE(model.NextFails());
  EXPECT_DOUBLE_EQ(model.StallFreeFraction(), 1.0);
}

TEST(ServiceTimeModelTest, CoLocationStretchesWorkAndCanChangeAtRunTime) {
  ServiceTimeModel model({.colocation = 0.5});
  EXPECT_EQ(model.Work(Ms(10), Ms(0)), Ms(20));
  model.SetColocation(0.0);
  EXPECT_EQ(model.Work(Ms(10), Ms(0)), Ms(10));
  model.SetColocation(7);  // clamped
  EXPECT_EQ(model.Work(Ms(10), Ms(0)), Ms(200));
}

TEST(ServiceTimeModelTest, RestartStartsTheWarmupOverFromItsTime) {
  ServiceTimeModel model({.warmup_factor = 2, .warmup = absl::Seconds(1)});
  EXPECT_EQ(model.Work(Ms(10), absl::Seconds(5)), Ms(10));  // warm long since
  model.Restart(absl::Seconds(10), 4, absl::Seconds(2));    // a new version, cold at 10 s
  EXPECT_DOUBLE_EQ(model.WarmupFactor(absl::Seconds(10)), 4.0);
  EXPECT_DOUBLE_EQ(model.WarmupFactor(absl::Seconds(11)), 2.5);  // halfway: 1 + 3 * 0.5
  EXPECT_DOUBLE_EQ(model.WarmupFactor(absl::Seconds(12)), 1.0);
  EXPECT_EQ(model.Work(Ms(10), absl::Seconds(10)), Ms(40));
  EXPECT_EQ(model.Work(Ms(10), absl::Seconds(13)), Ms(10));
  model.Restart(absl::Seconds(20), 0.5, absl::Seconds(1));  // a factor below 1 is clamped
  EXPECT_DOUBLE_EQ(model.WarmupFactor(absl::Seconds(20)), 1.0);
}

TEST(ServiceTimeModelTest, JitterHasMeanOne) {
  ServiceTimeModel model({.jitter_sigma = 0.5, .seed = 3});
  double total = 0;
  constexpr int kSamples = 200000;
  for (int i = 0; i < kSamples; ++i) total += absl::ToDoubleMilliseconds(model.Work(Ms(1), Ms(0)));
  EXPECT_NEAR(total / kSamples, 1.0, 0.01);
}

TEST(ServiceTimeModelTest, StallsPauseWorkInProgressAndMerge) {
  ServiceTimeModel model({});
  model.InjectStall(Ms(10), Ms(5));   // [10, 15)
  model.InjectStall(Ms(12), Ms(10));  // [12, 22): merges into [10, 22)
  model.InjectStall(Ms(30), Ms(5));   // [30, 35)
  // 8 ms of work from t=5: 5 ms before the stall, 3 after it ends at 22.
  EXPECT_EQ(model.FinishAfter(Ms(5), Ms(8)), Ms(25));
  // Work begun inside a stall starts when it ends; then crosses the next one.
  EXPECT_EQ(model.FinishAfter(Ms(11), Ms(10)), Ms(37));
  // After every stall: untouched.
  EXPECT_EQ(model.FinishAfter(Ms(40), Ms(3)), Ms(43));
}

TEST(ServiceTimeModelTest, PoissonStallsCoverTheExpectedFractionOfTime) {
  ServiceTimeModel model({.stall_rate_per_s = 5, .stall_duration = Ms(40), .seed = 9});
  EXPECT_NEAR(model.StallFreeFraction(), std::exp(-0.2), 1e-12);
  // Chain 1 ms jobs back to back for 1000 s of work: elapsed / work = 1 / stall-free fraction.
  absl::Duration t;
  for (int i = 0; i < 1000000; ++i) t = model.FinishAfter(t, Ms(1));
  EXPECT_NEAR(absl::ToDoubleSeconds(t) / 1000.0, 1 / std::exp(-0.2), 0.01);
}

TEST(ServiceTimeModelTest, ValidationNamesTheField) {
  EXPECT_THAT(ValidatePerturbations({.stall_rate_per_s = -1}).message(),
              ::testing::HasSubstr("stall_rate_per_s"));
  EXPECT_THAT(ValidatePerturbations({.warmup = -absl::Seconds(1)}).message(),
              ::testing::HasSubstr("warmup"));
  EXPECT_TRUE(ValidatePerturbations({}).ok());
}

}  // namespace
}  // namespace vanguard::sim
