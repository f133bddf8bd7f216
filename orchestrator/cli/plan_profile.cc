// Replicas over a day from a daily profile; see plan_profile.h.
#include "orchestrator/cli/plan_profile.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "orchestrator/cli/formats.h"
#include "orchestrator/cli/planning_commands.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

constexpr double kDaySeconds = 86400;

absl::Status LineError(int line, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--profile: line ", line, ": ", problem));
}

// HH:MM, HH:MM:SS or plain seconds since midnight.
std::optional<double> ParseTimeOfDay(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() > 3) return std::nullopt;
  double seconds = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    double v = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(parts[i]), &v) || !std::isfinite(v) || v < 0 ||
        (i > 0 && v >= 60)) {
      return std::nullopt;
    }
    seconds = parts.size() == 1 ? v : seconds * 60 + v;
  }
  if (parts.size() == 2) seconds *= 60;  // HH:MM
  return seconds;
}

// The measured plans: the columns of the tables.
std::vector<const v1::ReplicaPlan*> Measured(const v1::PlanCapacityResponse& plan) {
  std::vector<const v1::ReplicaPlan*> out;
  for (const v1::ReplicaPlan& p : plan.plans()) {
    if (p.test_id() != 0 && p.capacity_qps() > 0) out.push_back(&p);
  }
  return out;
}

std::string TimeText(double second_of_day) {
  const int64_t s = static_cast<int64_t>(std::llround(second_of_day));
  return s % 60 == 0 ? absl::StrFormat("%02d:%02d", s / 3600, s / 60 % 60)
                     : absl::StrFormat("%02d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

// Replica-hours, accelerator-hours (< 0: count unknown) and cost per day (< 0: unpriced) of
// one hardware over the profile.
struct DayTotals {
  double replica_hours = 0;
  double accelerator_hours = -1;
  double cost = -1;
};

DayTotals TotalsOf(const v1::PlanCapacityResponse& plan, const v1::ReplicaPlan& p,
                   const std::vector<ProfilePoint>& profile) {
  DayTotals t;
  const std::vector<double> hours = PointHours(profile);
  for (size_t i = 0; i < profile.size(); ++i) {
    t.replica_hours += static_cast<double>(PlanReplicasAt(plan, p, profile[i].qps)) * hours[i];
  }
  const HardwareHours h = HoursOf(p, t.replica_hours);
  t.accelerator_hours = h.accelerator_hours;
  t.cost = h.cost;
  return t;
}

}  // namespace

absl::StatusOr<std::vector<ProfilePoint>> ParseDailyProfile(absl::string_view csv) {
  std::vector<ProfilePoint> points;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() != 2) return LineError(line_number, "expected TIME,QPS");
    double qps = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(fields[1]), &qps)) {
      if (points.empty() && line_number == 1) continue;  // a header
      return LineError(line_number, "QPS is not a number");
    }
    if (!std::isfinite(qps) || qps < 0) return LineError(line_number, "QPS must be >= 0");
    std::optional<double> t = ParseTimeOfDay(absl::StripAsciiWhitespace(fields[0]));
    if (!t || *t >= kDaySeconds) {
      return LineError(line_number, "TIME must be HH:MM, HH:MM:SS or seconds within the day");
    }
    if (!points.empty() && *t <= points.back().second_of_day) {
      return LineError(line_number, "times must increase");
    }
    points.push_back({*t, qps});
  }
  if (points.empty()) return absl::InvalidArgumentError("--profile: no TIME,QPS line");
  return points;
}

HardwareHours HoursOf(const v1::ReplicaPlan& p, double replica_hours) {
  HardwareHours h;
  if (p.hardware().accelerator_count() > 0) {
    h.accelerator_hours = replica_hours * p.hardware().accelerator_count();
  }
  if (p.has_cost_per_million_requests()) {
    // The price of a replica-hour: a replica serves capacity_qps * 3600 requests an hour.
    h.cost = replica_hours * p.cost_per_million_requests() * p.capacity_qps() * 3600 / 1e6;
  }
  return h;
}

std::vector<double> PointHours(const std::vector<ProfilePoint>& profile) {
  std::vector<double> hours(profile.size());
  for (size_t i = 0; i < profile.size(); ++i) {
    const double end = i + 1 < profile.size() ? profile[i + 1].second_of_day
                                              : profile.front().second_of_day + kDaySeconds;
    hours[i] = (end - profile[i].second_of_day) / 3600;
  }
  return hours;
}

int64_t ReplicasAt(double qps, double headroom, int32_t survive_loss, double capacity_qps) {
  // The tolerance keeps 120 * 1.3 / 52 (= 3 in exact arithmetic) from rounding up to 4, as
  // vanguard_plan's numeric arithmetic does.
  const double needed = qps * (1 + headroom) / capacity_qps;
  return static_cast<int64_t>(std::ceil(needed * (1 - 1e-12))) + survive_loss;
}

int64_t PlanReplicasAt(const v1::PlanCapacityResponse& plan, const v1::ReplicaPlan& p, double qps) {
  const double effective =
      p.effective_capacity_qps() > 0 ? p.effective_capacity_qps() : p.capacity_qps();
  const double survivor = p.survivor_capacity_qps() > 0 ? p.survivor_capacity_qps() : effective;
  const int64_t carrying = ReplicasAt(qps, plan.headroom(), 0, effective);
  if (plan.survive_loss() == 0) return carrying;
  return std::max(carrying, ReplicasAt(qps, plan.headroom(), plan.survive_loss(), survivor));
}

double ProfilePeak(const std::vector<ProfilePoint>& profile) {
  double peak = 0;
  for (const ProfilePoint& p : profile) peak = std::max(peak, p.qps);
  return peak;
}

std::string RenderProfileTable(const v1::PlanCapacityResponse& plan,
                               const std::vector<ProfilePoint>& profile) {
  const std::vector<const v1::ReplicaPlan*> measured = Measured(plan);
  std::string out = absl::StrFormat(
      "replicas over the day: ceil(qps * (1 + %g%%) / capacity per replica) + %d, each rate "
      "held until the next time\n",
      plan.headroom() * 100, plan.survive_loss());
  if (measured.empty()) return absl::StrCat(out, "no hardware has a measured capacity\n");
  std::vector<TextTable::Column> columns = {{"TIME", Align::kLeft}, {"QPS", Align::kRight}};
  for (const v1::ReplicaPlan* p : measured) {
    columns.push_back({HardwareText(p->hardware()), Align::kRight});
  }
  TextTable table(columns);
  for (const ProfilePoint& point : profile) {
    std::vector<std::string> row = {TimeText(point.second_of_day), FormatQps(point.qps)};
    for (const v1::ReplicaPlan* p : measured) {
      row.push_back(absl::StrCat(PlanReplicasAt(plan, *p, point.qps)));
    }
    table.AddRow(std::move(row));
  }
  std::vector<std::string> replica_hours = {"replica-hours", ""};
  std::vector<std::string> accelerator_hours = {"accelerator-hours", ""};
  std::vector<std::string> cost = {"cost per day", ""};
  for (const v1::ReplicaPlan* p : measured) {
    const DayTotals t = TotalsOf(plan, *p, profile);
    replica_hours.push_back(absl::StrFormat("%.2f", t.replica_hours));
    accelerator_hours.push_back(
        t.accelerator_hours >= 0 ? absl::StrFormat("%.2f", t.accelerator_hours) : "-");
    cost.push_back(t.cost >= 0 ? absl::StrFormat("%.2f", t.cost) : "-");
  }
  table.AddRow(std::move(replica_hours));
  table.AddRow(std::move(accelerator_hours));
  table.AddRow(std::move(cost));
  return absl::StrCat(out, table.Render());
}

std::string RenderProfileCsv(const v1::PlanCapacityResponse& plan,
                             const std::vector<ProfilePoint>& profile) {
  const std::vector<const v1::ReplicaPlan*> measured = Measured(plan);
  std::vector<std::string> header = {"time_s", "qps"};
  for (const v1::ReplicaPlan* p : measured) header.push_back(HardwareText(p->hardware()));
  std::string out = CsvLine(header);
  for (const ProfilePoint& point : profile) {
    std::vector<std::string> row = {CsvNumber(point.second_of_day), CsvNumber(point.qps)};
    for (const v1::ReplicaPlan* p : measured) {
      row.push_back(absl::StrCat(PlanReplicasAt(plan, *p, point.qps)));
    }
    absl::StrAppend(&out, CsvLine(row));
  }
  std::vector<std::string> totals[3] = {
      {"replica_hours", ""}, {"accelerator_hours", ""}, {"cost_per_day", ""}};
  for (const v1::ReplicaPlan* p : measured) {
    const DayTotals t = TotalsOf(plan, *p, profile);
    totals[0].push_back(CsvNumber(t.replica_hours));
    totals[1].push_back(t.accelerator_hours >= 0 ? CsvNumber(t.accelerator_hours) : "");
    totals[2].push_back(t.cost >= 0 ? CsvNumber(t.cost) : "");
  }
  for (const std::vector<std::string>& row : totals) absl::StrAppend(&out, CsvLine(row));
  return out;
}

}  // namespace vanguard::cli
