#include "replayer/send_schedule.h"

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

}  // namespace
}  // namespace vanguard::replayer
