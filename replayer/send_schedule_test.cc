#include "replayer/send_schedule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

std::vector<absl::Duration> Drain(SendSchedule& schedule, int limit = 10'000'000) {
  std::vector<absl::Duration> out;
  while (static_cast<int>(out.size()) < limit) {
    std::optional<absl::Duration> at = schedule.Next();
    if (!at) break;
    out.push_back(*at);
  }
  return out;
}

TEST(SendScheduleTest, ConstantIntendedTimesAreExactMultiplesOfTheInterval) {
  auto schedule = SendSchedule::Create(v1::SCHEDULE_CONSTANT, 200.0, 0, absl::Seconds(1));
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  std::vector<absl::Duration> times = Drain(*schedule);
  ASSERT_EQ(times.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(times[i], absl::Milliseconds(5) * i) << i;
  EXPECT_EQ(schedule->Peek(), absl::InfiniteDuration());
  EXPECT_FALSE(schedule->Next().has_value());
  EXPECT_EQ(schedule->issued(), 200);
}

TEST(SendScheduleTest, ConstantDoesNotDriftWithNonIntegerIntervals) {
  // 1/3 s has no exact representation; every third request must still land on a second.
  auto schedule = SendSchedule::Create(v1::SCHEDULE_CONSTANT, 3.0, 0, absl::Seconds(1000));
  ASSERT_TRUE(schedule.ok());
  std::vector<absl::Duration> times = Drain(*schedule);
  ASSERT_EQ(times.size(), 3000u);
  EXPECT_EQ(times[1], absl::Nanoseconds(333'333'333));
  EXPECT_EQ(times[2], absl::Nanoseconds(666'666'667));
  EXPECT_EQ(times[3], absl::Seconds(1));
  EXPECT_EQ(times[2997], absl::Seconds(999));
  EXPECT_EQ(times[2999], absl::Seconds(999) + absl::Nanoseconds(666'666'667));
}

TEST(SendScheduleTest, UnspecifiedMeansConstant) {
  auto schedule = SendSchedule::Create(v1::SCHEDULE_UNSPECIFIED, 10.0, 0, absl::Seconds(1));
  ASSERT_TRUE(schedule.ok());
  std::vector<absl::Duration> times = Drain(*schedule);
  ASSERT_EQ(times.size(), 10u);
  EXPECT_EQ(times[7], absl::Milliseconds(700));
}

TEST(SendScheduleTest, PeekShowsTheNextIntendedTimeWithoutConsumingIt) {
  auto schedule = SendSchedule::Create(v1::SCHEDULE_CONSTANT, 100.0, 0, absl::Seconds(1));
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(schedule->Peek(), absl::ZeroDuration());
  EXPECT_EQ(schedule->Next(), absl::ZeroDuration());
  EXPECT_EQ(schedule->Peek(), absl::Milliseconds(10));
  EXPECT_EQ(schedule->Peek(), absl::Milliseconds(10));
  EXPECT_EQ(schedule->Next(), absl::Milliseconds(10));
}

TEST(SendScheduleTest, PoissonIsReproducibleForASeed) {
  auto a = SendSchedule::Create(v1::SCHEDULE_POISSON, 500.0, 42, absl::Seconds(20));
  auto b = SendSchedule::Create(v1::SCHEDULE_POISSON, 500.0, 42, absl::Seconds(20));
  auto c = SendSchedule::Create(v1::SCHEDULE_POISSON, 500.0, 43, absl::Seconds(20));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<absl::Duration> ta = Drain(*a), tb = Drain(*b), tc = Drain(*c);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  ASSERT_FALSE(ta.empty());
  for (size_t i = 1; i < ta.size(); ++i) ASSERT_GE(ta[i], ta[i - 1]);
  EXPECT_LT(ta.back(), absl::Seconds(20));
}

TEST(SendScheduleTest, PoissonGapsAreExponentialWithMeanOneOverRate) {
  constexpr int kDraws = 100'000;
  constexpr double kRate = 1000.0;
  auto schedule = SendSchedule::Create(v1::SCHEDULE_POISSON, kRate, 7, absl::Hours(1));
  ASSERT_TRUE(schedule.ok());
  std::vector<absl::Duration> times = Drain(*schedule, kDraws + 1);
  ASSERT_EQ(times.size(), static_cast<size_t>(kDraws + 1));
  double sum = absl::ToDoubleSeconds(times[0]), sum_sq = sum * sum;
  for (int i = 1; i <= kDraws; ++i) {
    double gap = absl::ToDoubleSeconds(times[i] - times[i - 1]);
    sum += gap;
    sum_sq += gap * gap;
  }
  double n = kDraws + 1;
  double mean = sum / n;
  double stddev = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 1.0 / kRate, 0.02 / kRate);
  // An exponential's standard deviation equals its mean (a constant schedule's is 0).
  EXPECT_NEAR(stddev / mean, 1.0, 0.03);
}

TEST(SendScheduleTest, RejectsBadParameters) {
  EXPECT_EQ(SendSchedule::Create(v1::SCHEDULE_CONSTANT, 0.0, 0, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SendSchedule::Create(v1::SCHEDULE_CONSTANT, -5.0, 0, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      SendSchedule::Create(v1::SCHEDULE_POISSON, std::nan(""), 0, absl::Seconds(1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      SendSchedule::Create(v1::SCHEDULE_CONSTANT, 10.0, 0, absl::ZeroDuration()).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SendSchedule::Create(static_cast<v1::Schedule>(99), 10.0, 0, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Kolmogorov-Smirnov statistic of `gaps` (seconds) against Exp(rate).
double KolmogorovSmirnovExponential(std::vector<double> gaps, double rate) {
  std::sort(gaps.begin(), gaps.end());
  double n = static_cast<double>(gaps.size());
  double d = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    double cdf = 1.0 - std::exp(-rate * gaps[i]);
    d = std::max({d, (i + 1) / n - cdf, cdf - i / n});
  }
  return d;
}

std::vector<double> Gaps(const std::vector<absl::Duration>& times) {
  std::vector<double> gaps;
  double previous = 0;
  for (absl::Duration t : times) {
    gaps.push_back(absl::ToDoubleSeconds(t) - previous);
    previous = absl::ToDoubleSeconds(t);
  }
  return gaps;
}

TEST(SendScheduleTest, PoissonInterArrivalsPassAKolmogorovSmirnovTest) {
  constexpr double kRate = 500.0;
  constexpr int kDraws = 20'000;
  // Critical value of the one-sample KS test at alpha = 0.01.
  const double critical = 1.628 / std::sqrt(static_cast<double>(kDraws));
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto schedule = SendSchedule::Create(v1::SCHEDULE_POISSON, kRate, seed, absl::Hours(1));
    ASSERT_TRUE(schedule.ok());
    double d = KolmogorovSmirnovExponential(Gaps(Drain(*schedule, kDraws)), kRate);
    EXPECT_LT(d, critical) << "seed " << seed;
  }
  // The test has teeth: a constant schedule at the same rate is rejected outright, and so is
  // a Poisson stream at the wrong rate.
  auto constant = SendSchedule::Create(v1::SCHEDULE_CONSTANT, kRate, 0, absl::Hours(1));
  EXPECT_GT(KolmogorovSmirnovExponential(Gaps(Drain(*constant, kDraws)), kRate), 10 * critical);
  auto wrong = SendSchedule::Create(v1::SCHEDULE_POISSON, kRate * 1.1, 1, absl::Hours(1));
  EXPECT_GT(KolmogorovSmirnovExponential(Gaps(Drain(*wrong, kDraws)), kRate), critical);
}

TEST(SendScheduleTest, ShardedPoissonStreamsAreIndependentAndTogetherKeepTheRate) {
  constexpr double kRate = 1000.0;
  std::vector<absl::Duration> all;
  std::vector<std::vector<absl::Duration>> shards;
  for (int shard = 0; shard < 4; ++shard) {
    ScheduleSpec spec;
    spec.kind = v1::SCHEDULE_POISSON;
    spec.rate_qps = kRate;
    spec.seed = 9;
    spec.end = absl::Seconds(20);
    spec.shard = shard;
    spec.shards = 4;
    auto schedule = SendSchedule::Create(spec);
    ASSERT_TRUE(schedule.ok());
    shards.push_back(Drain(*schedule));
    all.insert(all.end(), shards.back().begin(), shards.back().end());
  }
  EXPECT_NE(shards[0], shards[1]);  // not the same stream four times
  EXPECT_NEAR(static_cast<double>(all.size()), kRate * 20, 4 * std::sqrt(kRate * 20));
  // The superposition is again Poisson at the full rate.
  std::sort(all.begin(), all.end());
  EXPECT_LT(KolmogorovSmirnovExponential(Gaps(all), kRate), 1.628 / std::sqrt(all.size()));
}

TEST(SendScheduleTest, ShardsOfAConstantScheduleInterleaveIntoTheWholeSchedule) {
  std::vector<absl::Duration> merged;
  for (int shard = 0; shard < 3; ++shard) {
    ScheduleSpec spec;
    spec.rate_qps = 300;
    spec.end = absl::Seconds(1);
    spec.shard = shard;
    spec.shards = 3;
    auto schedule = SendSchedule::Create(spec);
    ASSERT_TRUE(schedule.ok());
    std::vector<absl::Duration> times = Drain(*schedule);
    EXPECT_EQ(times.size(), 100u);
    merged.insert(merged.end(), times.begin(), times.end());
  }
  std::sort(merged.begin(), merged.end());
  auto whole = SendSchedule::Create(v1::SCHEDULE_CONSTANT, 300, 0, absl::Seconds(1));
  EXPECT_EQ(merged, Drain(*whole));
}

TEST(SendScheduleTest, RampRisesLinearlyFromTheStartRateToTheEndRate) {
  ScheduleSpec spec;
  spec.kind = v1::SCHEDULE_RAMP;
  spec.rate_qps = 100;
  spec.ramp_end_qps = 300;
  spec.end = absl::Seconds(2);
  auto schedule = SendSchedule::Create(spec);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  std::vector<absl::Duration> times = Drain(*schedule);
  // Expected count r0 T + (r1 - r0) T / 2 = 200 + 200 = 400; by 1 s: 100 + 50 = 150.
  EXPECT_EQ(times.size(), 400u);
  int64_t first_second = std::count_if(times.begin(), times.end(),
                                       [](absl::Duration t) { return t < absl::Seconds(1); });
  EXPECT_EQ(first_second, 150);
  // Gaps shrink: 1/100 s at the start, about 1/300 s at the end.
  EXPECT_NEAR(absl::ToDoubleSeconds(times[1] - times[0]), 0.01, 0.0005);
  EXPECT_NEAR(absl::ToDoubleSeconds(times[399] - times[398]), 1.0 / 300, 0.0002);
  for (size_t i = 1; i < times.size(); ++i) ASSERT_GT(times[i], times[i - 1]);
}

TEST(SendScheduleTest, AFallingRampEndsAtTheEndRate) {
  ScheduleSpec spec;
  spec.kind = v1::SCHEDULE_RAMP;
  spec.rate_qps = 300;
  spec.ramp_end_qps = 100;
  spec.end = absl::Seconds(2);
  auto schedule = SendSchedule::Create(spec);
  ASSERT_TRUE(schedule.ok());
  std::vector<absl::Duration> times = Drain(*schedule);
  EXPECT_EQ(times.size(), 400u);
  EXPECT_NEAR(absl::ToDoubleSeconds(times[399] - times[398]), 0.01, 0.0005);
}

TEST(SendScheduleTest, RampAndShardsAreValidated) {
  ScheduleSpec spec;
  spec.kind = v1::SCHEDULE_RAMP;
  spec.rate_qps = 100;
  spec.end = absl::Seconds(1);
  EXPECT_EQ(SendSchedule::Create(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.ramp_end_qps = 10;
  spec.shard = 2;
  spec.shards = 2;
  EXPECT_EQ(SendSchedule::Create(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.shard = 0;
  spec.kind = v1::SCHEDULE_TRACE;
  EXPECT_EQ(SendSchedule::Create(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::replayer
