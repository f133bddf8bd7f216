// A cron-like schedule for test schedules (TestSchedule.cron): the five fields of crontab(5),
// read in UTC or in the time zone a `CRON_TZ=` prefix names, and the next minute they match.
//
//   ASSIGN_OR_RETURN(CronExpression cron, CronExpression::Parse("30 2 * * 1-5"));
//   absl::Time next = cron.NextAfter(clock->Now());   // the next weekday 02:30 UTC
//   cron = *CronExpression::Parse("CRON_TZ=Europe/Berlin 30 2 * * 1-5");  // 02:30 in Berlin
//
// Fields, in order: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or JAN-DEC),
// day of week (0-7 or SUN-SAT; 0 and 7 are Sunday). Each field is a comma-separated list of
// `*`, `N`, `N-M`, each optionally `/STEP` (`N/STEP` is N to the field's end). Names are
// case-insensitive. Macros: @yearly (@annually), @monthly, @weekly, @daily (@midnight),
// @hourly. As in Vixie cron, when both day of month and day of week are restricted (neither
// starts with `*`) a day matches if either does; otherwise both must. Not supported: seconds,
// years, `L`, `W`, `#`, `?`, @reboot.
//
// Time zone: `CRON_TZ=Zone ` (or `TZ=Zone `) before the fields or macro reads them as the
// wall clock of the IANA zone (tzdata on the orchestrator's host); without it, UTC. When the
// clocks go forward, a time they skip runs at the change; when they go back, a time they
// repeat runs at its first occurrence only.
//
// Parse reads a user's text (SetSchedule, or a row written with SQL): any malformed input is
// INVALID_ARGUMENT naming the field and the rule, never a crash; so is an expression no date
// matches (`0 0 31 2 *`) or whose days meet more than 8 years apart (`0 0 3 5 */8`: a day of
// month and a weekday that must both match, the 3rd of May on a Sunday). A parsed expression is
// immutable; any thread may use it.
#ifndef VANGUARD_ORCHESTRATOR_CRON_EXPRESSION_H_
#define VANGUARD_ORCHESTRATOR_CRON_EXPRESSION_H_

#include <bitset>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace vanguard {

class CronExpression {
 public:
  static constexpr size_t kMaxBytes = 256;

  static absl::StatusOr<CronExpression> Parse(absl::string_view text);

  // The first whole minute (of the expression's zone) strictly after `after` that the
  // expression matches, with the rules above for the changes of the clocks. Always within 8
  // years of `after` (a 29 February can be 8 years away), never InfiniteFuture for a parsed
  // expression.
  absl::Time NextAfter(absl::Time after) const;

  // The text as given, without surrounding whitespace.
  const std::string& text() const { return text_; }
  // The CRON_TZ zone's name; empty: UTC.
  const std::string& time_zone() const { return zone_name_; }

 private:
  CronExpression() = default;
  bool DayMatches(absl::CivilDay day) const;
  // The first local minute at or after `start` that the fields match; nullopt past 9 years.
  std::optional<absl::CivilMinute> NextMatchingMinute(absl::CivilMinute start) const;
  bool AnyDayInAnyMonth() const;
  // The most days between two matching days (of the fields' days, months and weekdays); Parse
  // refuses more than kMaxDayGap.
  int LongestDayGap() const;
  static constexpr int kMaxDayGap = 366 * 8;

  std::string text_;
  absl::TimeZone zone_ = absl::UTCTimeZone();
  std::string zone_name_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // bits 1-31
  std::bitset<13> months_;         // bits 1-12
  std::bitset<7> days_of_week_;    // 0 = Sunday
  bool day_of_month_restricted_ = false;
  bool day_of_week_restricted_ = false;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_CRON_EXPRESSION_H_
