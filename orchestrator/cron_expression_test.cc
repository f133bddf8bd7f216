// Tests of CronExpression: the next matching minute for hand-worked dates (2026-12-03 is a
// Thursday), Vixie cron's day-of-month OR day-of-week rule, macros, and refused input.
#include "orchestrator/cron_expression.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

absl::Time Utc(int y, int mo, int d, int h, int mi, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

absl::Time Next(const std::string& text, absl::Time after) {
  absl::StatusOr<CronExpression> cron = CronExpression::Parse(text);
  EXPECT_TRUE(cron.ok()) << text << ": " << cron.status();
  return cron.ok() ? cron->NextAfter(after) : absl::InfinitePast();
}

TEST(CronExpressionTest, WeekdaysAtHalfPastTwoSkipTheWeekend) {
  // Saturday 2026-12-05 10:00 -> Monday 2026-12-07 02:30.
  EXPECT_EQ(Next("30 2 * * 1-5", Utc(2026, 12, 5, 10, 0)), Utc(2026, 12, 7, 2, 30));
  // Thursday 01:00 -> the same day 02:30.
  EXPECT_EQ(Next("30 2 * * MON-FRI", Utc(2026, 12, 3, 1, 0)), Utc(2026, 12, 3, 2, 30));
}

TEST(CronExpressionTest, TheNextMinuteIsStrictlyAfter) {
  EXPECT_EQ(Next("*/15 * * * *", Utc(2026, 12, 3, 10, 7, 30)), Utc(2026, 12, 3, 10, 15));
  EXPECT_EQ(Next("*/15 * * * *", Utc(2026, 12, 3, 10, 15)), Utc(2026, 12, 3, 10, 30));
  EXPECT_EQ(Next("*/15 * * * *", Utc(2026, 12, 3, 23, 45, 1)), Utc(2026, 12, 4, 0, 0));
  EXPECT_EQ(Next("59 23 31 12 *", Utc(2026, 12, 31, 23, 59)), Utc(2027, 12, 31, 23, 59));
}

TEST(CronExpressionTest, ListsRangesStepsAndNames) {
  // Minutes 5, 20, 35, 50 from 5/15; hours 8 and 18.
  EXPECT_EQ(Next("5/15 8,18 * * *", Utc(2026, 12, 3, 8, 36)), Utc(2026, 12, 3, 8, 50));
  EXPECT_EQ(Next("5/15 8,18 * * *", Utc(2026, 12, 3, 8, 50)), Utc(2026, 12, 3, 18, 5));
  // Every other month from January, on the 1st: after 2026-12-03 comes 2027-01-01.
  EXPECT_EQ(Next("0 6 1 jan-dec/2 *", Utc(2026, 12, 3, 0, 0)), Utc(2027, 1, 1, 6, 0));
  EXPECT_EQ(Next("0 6 1 */2 *", Utc(2027, 1, 1, 6, 0)), Utc(2027, 3, 1, 6, 0));
  // 7 is Sunday, like 0: Thursday 2026-12-03 -> Sunday 2026-12-06.
  EXPECT_EQ(Next("0 0 * * 7", Utc(2026, 12, 3, 12, 0)), Utc(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("0 0 * * 0", Utc(2026, 12, 3, 12, 0)), Utc(2026, 12, 6, 0, 0));
}

TEST(CronExpressionTest, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // Fridays and the 13th: Friday 4th, Friday 11th, Sunday 13th, Friday 18th.
  const std::string text = "0 12 13 * FRI";
  EXPECT_EQ(Next(text, Utc(2026, 12, 3, 0, 0)), Utc(2026, 12, 4, 12, 0));
  EXPECT_EQ(Next(text, Utc(2026, 12, 4, 12, 0)), Utc(2026, 12, 11, 12, 0));
  EXPECT_EQ(Next(text, Utc(2026, 12, 11, 12, 0)), Utc(2026, 12, 13, 12, 0));
  EXPECT_EQ(Next(text, Utc(2026, 12, 13, 12, 0)), Utc(2026, 12, 18, 12, 0));
  // With one of them `*`, both must match: `*/31` is the 1st, and the next Friday the 1st is
  // 2027-01-01.
  EXPECT_EQ(Next("0 12 13 * *", Utc(2026, 12, 3, 0, 0)), Utc(2026, 12, 13, 12, 0));
  EXPECT_EQ(Next("0 12 */31 * FRI", Utc(2026, 12, 3, 0, 0)), Utc(2027, 1, 1, 12, 0));
}

TEST(CronExpressionTest, ADayOfMonthOnSomeWeekdaysOnlyWaitsForThem) {
  // The day of week starts with '*', so both fields must match (as in Vixie cron): the 1st of
  // a month on a Sunday, Tuesday, Thursday or Saturday. Such days come every few months.
  EXPECT_EQ(Next("0 0 1 * */2", Utc(2026, 12, 3, 0, 0)), Utc(2027, 4, 1, 0, 0));
  EXPECT_TRUE(CronExpression::Parse("0 0 13 * */5").ok());  // Friday the 13th, and Sundays'
}

TEST(CronExpressionTest, TheTwentyNinthOfFebruaryWaitsForALeapYear) {
  EXPECT_EQ(Next("0 0 29 2 *", Utc(2026, 3, 1, 0, 0)), Utc(2028, 2, 29, 0, 0));
  // 2100 is not a leap year: from 2096-03-01 the next is 2104-02-29, 8 years on.
  EXPECT_EQ(Next("0 0 29 2 *", Utc(2096, 3, 1, 0, 0)), Utc(2104, 2, 29, 0, 0));
}

TEST(CronExpressionTest, Macros) {
  EXPECT_EQ(Next("@daily", Utc(2026, 12, 3, 23, 59, 59)), Utc(2026, 12, 4, 0, 0));
  EXPECT_EQ(Next("@hourly", Utc(2026, 12, 3, 10, 0)), Utc(2026, 12, 3, 11, 0));
  EXPECT_EQ(Next("@weekly", Utc(2026, 12, 3, 10, 0)), Utc(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("@monthly", Utc(2026, 12, 3, 10, 0)), Utc(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("@yearly", Utc(2026, 12, 3, 10, 0)), Utc(2027, 1, 1, 0, 0));
  absl::StatusOr<CronExpression> cron = CronExpression::Parse("  @daily \t");
  ASSERT_TRUE(cron.ok());
  EXPECT_EQ(cron->text(), "@daily");
}

TEST(CronExpressionTest, ATimeZoneReadsTheFieldsOnItsWallClock) {
  const std::string berlin = "CRON_TZ=Europe/Berlin 30 2 * * *";
  // 02:30 in Berlin is 01:30 UTC in winter (CET) and 00:30 UTC in summer (CEST).
  EXPECT_EQ(Next(berlin, Utc(2026, 12, 3, 0, 0)), Utc(2026, 12, 3, 1, 30));
  EXPECT_EQ(Next(berlin, Utc(2026, 7, 1, 0, 0)), Utc(2026, 7, 1, 0, 30));
  EXPECT_EQ(Next("TZ=America/New_York @daily", Utc(2026, 12, 3, 12, 0)), Utc(2026, 12, 4, 5, 0));
  EXPECT_EQ(CronExpression::Parse(berlin)->time_zone(), "Europe/Berlin");
  EXPECT_EQ(CronExpression::Parse(berlin)->text(), berlin);
  EXPECT_EQ(CronExpression::Parse("30 2 * * *")->time_zone(), "");
}

TEST(CronExpressionTest, ATimeTheClocksSkipRunsAtTheChangeOneTheyRepeatRunsOnce) {
  const std::string berlin = "CRON_TZ=Europe/Berlin 30 2 * * *";
  // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not exist that day.
  EXPECT_EQ(Next(berlin, Utc(2026, 3, 28, 12, 0)), Utc(2026, 3, 29, 1, 0));
  EXPECT_EQ(Next(berlin, Utc(2026, 3, 29, 1, 0)), Utc(2026, 3, 30, 0, 30));
  // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 comes at 00:30 and 01:30 UTC.
  EXPECT_EQ(Next(berlin, Utc(2026, 10, 24, 12, 0)), Utc(2026, 10, 25, 0, 30));
  EXPECT_EQ(Next(berlin, Utc(2026, 10, 25, 0, 30)), Utc(2026, 10, 26, 1, 30));
  EXPECT_EQ(Next(berlin, Utc(2026, 10, 25, 1, 10)), Utc(2026, 10, 26, 1, 30));
}

TEST(CronExpressionTest, BadExpressionsNameTheFieldAndTheRule) {
  for (const char* zone :
       {"CRON_TZ=Mars/Olympus_Mons 0 0 * * *", "CRON_TZ=../../etc/passwd 0 0 * * *",
        "CRON_TZ=/etc/localtime 0 0 * * *", "CRON_TZ= 0 0 * * *"}) {
    absl::StatusOr<CronExpression> bad = CronExpression::Parse(zone);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << zone;
    EXPECT_THAT(bad.status().message(), HasSubstr("cron: time zone")) << zone;
  }
  EXPECT_THAT(CronExpression::Parse("CRON_TZ=UTC").status().message(),
              HasSubstr("nothing after the time zone"));
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"", "empty"},
      {"* * * *", "5 fields"},
      {"* * * * * *", "5 fields"},
      {"60 * * * *", "minute field: 60 is outside 0-59"},
      {"* 24 * * *", "hour field: 24 is outside 0-23"},
      {"* * 0 * *", "day of month field: 0 is outside 1-31"},
      {"* * * 13 *", "month field: 13 is outside 1-12"},
      {"* * * * 8", "day of week field: 8 is outside 0-7"},
      {"*/0 * * * *", "minute field: the step in '*/0' must be 1 to 60"},
      {"5-1 * * * *", "the range '5-1' ends before it starts"},
      {"1,,2 * * * *", "an empty item"},
      {"-1 * * * *", "is not a number"},
      {"+1 * * * *", "is not a number"},
      {"0 0 * * MON#2", "is not a number"},
      {"0 0 L * *", "is not a number"},
      {"0 0 * FOO *", "month field: 'FOO' is not a number from 1 to 12 or a name"},
      {"@reboot", "the macros are"},
      {"0 0 31 2 *", "no date matches"},
      {"0 0 30,31 2 *", "no date matches"},
      {"0 0 3 5 */8", "meet only up to 11 years apart"},
      {"0 0 29 2 */7", "years apart"},
      {std::string("0 0 * * \x01"), "printable ASCII"},
      {std::string(300, '*'), "at most 256 bytes"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CronExpression> cron = CronExpression::Parse(c.text);
    ASSERT_FALSE(cron.ok()) << c.text;
    EXPECT_EQ(cron.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(cron.status().message(), HasSubstr(c.message)) << c.text;
  }
  // February 29 exists; with a weekday restricted the day-of-week OR rule always matches.
  EXPECT_TRUE(CronExpression::Parse("0 0 29 2 *").ok());
  EXPECT_TRUE(CronExpression::Parse("0 0 31 2 MON").ok());
}

}  // namespace
}  // namespace vanguard
