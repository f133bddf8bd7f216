// Fuzzes CronExpression::Parse, which reads the cron expression a submitter gives SetSchedule
// (or a row written with SQL). Input: the expression.
//
// Contract checked: never throws or crashes; an error is INVALID_ARGUMENT; an accepted
// expression's next minute after a fixed time is a whole minute strictly after it and within
// 9 years (never InfiniteFuture), the next after that is later still, and its text() parses
// again to the same next minute.
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "orchestrator/cron_expression.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "cron_expression";

}  // namespace

int FuzzCronExpression(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<CronExpression> cron = CronExpression::Parse(text);
  if (!cron.ok()) {
    VANGUARD_FUZZ_CHECK(kName, cron.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  const absl::Time from = absl::FromUnixSeconds(1'796'300'000) + absl::Seconds(17);
  const absl::Time next = cron->NextAfter(from);
  VANGUARD_FUZZ_CHECK(kName, next > from && next < from + absl::Hours(24 * 366 * 9));
  VANGUARD_FUZZ_CHECK(kName, absl::ToUnixSeconds(next) % 60 == 0);
  VANGUARD_FUZZ_CHECK(kName, cron->NextAfter(next) > next);
  absl::StatusOr<CronExpression> again = CronExpression::Parse(cron->text());
  VANGUARD_FUZZ_CHECK(kName, again.ok() && again->NextAfter(from) == next);
  return 0;
}

}  // namespace vanguard::fuzz
