// Cron expressions of test schedules; see cron_expression.h. Any thread.
#include "orchestrator/cron_expression.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace vanguard {
namespace {

struct FieldRule {
  const char* name;
  int min;
  int max;
  // Three-letter names for min, min+1, ... (months from JAN = 1, days from SUN = 0), or none.
  const std::vector<absl::string_view>* names;
};

const std::vector<absl::string_view> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const std::vector<absl::string_view> kDayNames = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// Day of week allows 7 (Sunday again); it is folded onto 0 after parsing.
const std::array<FieldRule, 5> kFields = {{{"minute", 0, 59, nullptr},
                                           {"hour", 0, 23, nullptr},
                                           {"day of month", 1, 31, nullptr},
                                           {"month", 1, 12, &kMonthNames},
                                           {"day of week", 0, 7, &kDayNames}}};

absl::Status FieldError(const FieldRule& field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("cron's ", field.name, " field: ", rule));
}

// A number (at most 2 digits) or, where the field has them, a three-letter name.
absl::StatusOr<int> ParseValue(absl::string_view text, const FieldRule& field) {
  if (field.names != nullptr) {
    for (size_t i = 0; i < field.names->size(); ++i) {
      if (absl::EqualsIgnoreCase(text, (*field.names)[i])) return field.min + static_cast<int>(i);
    }
  }
  if (text.empty() || text.size() > 2) {
    return FieldError(field, absl::StrCat("'", text, "' is not a number from ", field.min, " to ",
                                          field.max, field.names ? " or a name" : ""));
  }
  int value = 0;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) {
      return FieldError(field, absl::StrCat("'", text, "' is not a number from ", field.min, " to ",
                                            field.max, field.names ? " or a name" : ""));
    }
    value = value * 10 + (c - '0');
  }
  if (value < field.min || value > field.max) {
    return FieldError(field, absl::StrCat(value, " is outside ", field.min, "-", field.max));
  }
  return value;
}

// One list item: `*`, `N`, `N-M`, optionally `/STEP`. Sets its values' bits in `mask`.
absl::Status ParseItem(absl::string_view item, const FieldRule& field, uint64_t& mask) {
  std::vector<absl::string_view> parts = absl::StrSplit(item, absl::MaxSplits('/', 1));
  int step = 1;
  if (parts.size() == 2) {
    if (parts[1].empty() || parts[1].size() > 2 || !absl::ascii_isdigit(parts[1][0]) ||
        (parts[1].size() == 2 && !absl::ascii_isdigit(parts[1][1]))) {
      return FieldError(field, absl::StrCat("the step in '", item, "' is not a number"));
    }
    step =
        (parts[1].size() == 2 ? (parts[1][0] - '0') * 10 + (parts[1][1] - '0') : parts[1][0] - '0');
    if (step < 1 || step > field.max - field.min + 1) {
      return FieldError(
          field, absl::StrCat("the step in '", item, "' must be 1 to ", field.max - field.min + 1));
    }
  }
  int low = field.min;
  int high = field.max;
  if (parts[0] != "*") {
    std::vector<absl::string_view> range = absl::StrSplit(parts[0], absl::MaxSplits('-', 1));
    ASSIGN_OR_RETURN(low, ParseValue(range[0], field));
    high = parts.size() == 2 ? field.max : low;  // `N/STEP` runs to the field's end
    if (range.size() == 2) {
      ASSIGN_OR_RETURN(high, ParseValue(range[1], field));
      if (high < low) {
        return FieldError(field, absl::StrCat("the range '", parts[0], "' ends before it starts"));
      }
    }
  }
  for (int v = low; v <= high; v += step) mask |= uint64_t{1} << v;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ParseField(absl::string_view text, const FieldRule& field) {
  uint64_t mask = 0;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) return FieldError(field, "an empty item in its list");
    RETURN_IF_ERROR(ParseItem(item, field, mask));
  }
  return mask;
}

absl::StatusOr<absl::string_view> ExpandMacro(absl::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@hourly") return "0 * * * *";
  return absl::InvalidArgumentError(
      "cron: the macros are @yearly, @annually, @monthly, @weekly, @daily, @midnight and "
      "@hourly");
}

template <size_t N>
std::bitset<N> Bits(uint64_t mask) {
  return std::bitset<N>(mask & ((N >= 64) ? ~uint64_t{0} : ((uint64_t{1} << N) - 1)));
}

int DaysInMonth(int month) {  // the most a month can have (29 for February)
  constexpr std::array<int, 13> kDays = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return kDays[month];
}

// A `CRON_TZ=Zone ` or `TZ=Zone ` prefix: the zone's name (empty: none) and the rest.
// INVALID_ARGUMENT for a name that is not an IANA-style name (only letters, digits, and
// `/_+-`, no `..`: the name becomes a path under the zoneinfo directory) or not installed.
absl::Status SplitTimeZone(absl::string_view& text, absl::TimeZone& zone, std::string& name) {
  absl::string_view rest = text;
  if (!absl::ConsumePrefix(&rest, "CRON_TZ=") && !absl::ConsumePrefix(&rest, "TZ=")) {
    return absl::OkStatus();
  }
  const size_t end = rest.find_first_of(" \t");
  const absl::string_view zone_name = rest.substr(0, end);
  const bool well_formed = !zone_name.empty() && zone_name.size() <= 64 && zone_name[0] != '/' &&
                           !absl::StrContains(zone_name, "..") &&
                           std::all_of(zone_name.begin(), zone_name.end(), [](char c) {
                             return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                                    c == '/' || c == '_' || c == '+' || c == '-';
                           });
  if (!well_formed || !absl::LoadTimeZone(std::string(zone_name), &zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cron: time zone \"", zone_name,
                     "\" is not known (an IANA name such as Europe/Berlin or America/New_York)"));
  }
  name = std::string(zone_name);
  text = absl::StripLeadingAsciiWhitespace(rest.substr(zone_name.size()));
  if (text.empty()) return absl::InvalidArgumentError("cron: nothing after the time zone");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CronExpression> CronExpression::Parse(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return absl::InvalidArgumentError("cron: the expression is empty");
  if (text.size() > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cron: at most ", kMaxBytes, " bytes"));
  }
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      return absl::InvalidArgumentError("cron: only printable ASCII characters and spaces");
    }
  }
  CronExpression cron;
  cron.text_ = std::string(text);
  absl::string_view fields_text = text;
  RETURN_IF_ERROR(SplitTimeZone(fields_text, cron.zone_, cron.zone_name_));
  if (fields_text[0] == '@') {
    ASSIGN_OR_RETURN(fields_text, ExpandMacro(fields_text));
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(fields_text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() != kFields.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cron: 5 fields (minute hour day-of-month month day-of-week, e.g. '30 2 * * 1-5'), got ",
        fields.size()));
  }
  std::array<uint64_t, 5> masks{};
  for (size_t i = 0; i < kFields.size(); ++i) {
    ASSIGN_OR_RETURN(masks[i], ParseField(fields[i], kFields[i]));
  }
  if (masks[4] & (uint64_t{1} << 7)) masks[4] = (masks[4] | 1) & 0x7f;  // 7 is Sunday
  cron.minutes_ = Bits<60>(masks[0]);
  cron.hours_ = Bits<24>(masks[1]);
  cron.days_of_month_ = Bits<32>(masks[2]);
  cron.months_ = Bits<13>(masks[3]);
  cron.days_of_week_ = Bits<7>(masks[4]);
  cron.day_of_month_restricted_ = fields[2][0] != '*';
  cron.day_of_week_restricted_ = fields[4][0] != '*';
  if (!cron.AnyDayInAnyMonth()) {
    return absl::InvalidArgumentError(
        "cron: no date matches (the days of month given do not occur in the months given)");
  }
  if (const int gap = cron.LongestDayGap(); gap > kMaxDayGap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cron: the days of month and of week given must both match (one field starts with "
        "'*'), and they meet only up to ",
        gap / 365, " years apart; at most ", kMaxDayGap / 366,
        " years may pass between two matching days (list the days of week, or use '*')"));
  }
  return cron;
}

int CronExpression::LongestDayGap() const {
  // Both fields restricted: either matches, so some day of every week does. Every weekday: the
  // days of month in the months given alone decide (AnyDayInAnyMonth; a 29 February is 8 years
  // away at most).
  if ((day_of_month_restricted_ && day_of_week_restricted_) || days_of_week_.all()) return 0;
  // A day of month on some weekdays only: the weekdays of the calendar repeat every 400 years
  // (146097 days, a whole number of weeks), so one cycle, wrapped around, has every gap.
  constexpr int kCycleDays = 146097;
  const absl::CivilDay start(2000, 1, 1);
  int first = -1, last = -1, longest = 0;
  for (int i = 0; i < kCycleDays; ++i) {
    if (!DayMatches(start + i)) continue;
    if (first < 0) first = i;
    if (last >= 0) longest = std::max(longest, i - last);
    last = i;
  }
  if (first < 0) return kCycleDays;
  return std::max(longest, first + kCycleDays - last);
}

bool CronExpression::AnyDayInAnyMonth() const {
  if (day_of_week_restricted_) return true;  // every week has every weekday
  for (int month = 1; month <= 12; ++month) {
    if (!months_[month]) continue;
    for (int day = 1; day <= DaysInMonth(month); ++day) {
      if (days_of_month_[day]) return true;
    }
  }
  return false;
}

bool CronExpression::DayMatches(absl::CivilDay day) const {
  if (!months_[day.month()]) return false;
  const bool dom = days_of_month_[day.day()];
  // absl's Weekday counts from Monday = 0; cron's from Sunday = 0.
  const bool dow = days_of_week_[(static_cast<int>(absl::GetWeekday(day)) + 1) % 7];
  if (day_of_month_restricted_ && day_of_week_restricted_) return dom || dow;
  return dom && dow;
}

absl::Time CronExpression::NextAfter(absl::Time after) const {
  absl::CivilMinute from = absl::ToCivilMinute(after, zone_) + 1;
  // A repeated hour (clocks set back) can put a few hundred matching local minutes before
  // `after`; a day of minutes is more than any zone repeats.
  for (int tries = 0; tries <= 24 * 60; ++tries) {
    const std::optional<absl::CivilMinute> local = NextMatchingMinute(from);
    if (!local.has_value()) break;
    const absl::TimeZone::TimeInfo info = zone_.At(*local);
    // A minute skipped by a change of the clocks runs at the change; one the change repeats
    // runs at its first occurrence only.
    const absl::Time at = info.kind == absl::TimeZone::TimeInfo::SKIPPED ? info.trans : info.pre;
    if (at > after) return at;
    from = *local + 1;
  }
  return absl::InfiniteFuture();  // cannot happen: Parse refused expressions no date matches
}

std::optional<absl::CivilMinute> CronExpression::NextMatchingMinute(absl::CivilMinute start) const {
  const absl::CivilDay first_day(start);
  for (absl::CivilDay day = first_day; day - first_day <= 366 * 9; ++day) {
    if (!DayMatches(day)) continue;
    const int first_hour = day == first_day ? start.hour() : 0;
    for (int hour = first_hour; hour < 24; ++hour) {
      if (!hours_[hour]) continue;
      const int first_minute = day == first_day && hour == start.hour() ? start.minute() : 0;
      for (int minute = first_minute; minute < 60; ++minute) {
        if (minutes_[minute]) {
          return absl::CivilMinute(day.year(), day.month(), day.day(), hour, minute);
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace vanguard
