// Replicas over a recorded trace's span; see plan_rates.h.
#include "orchestrator/cli/plan_rates.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "orchestrator/cli/formats.h"
#include "orchestrator/cli/plan_profile.h"
#include "orchestrator/cli/planning_commands.h"
#include "orchestrator/cli/render.h"

namespace vanguard::cli {
namespace {

constexpr size_t kMaxRatePoints = 1'000'000;

absl::Status LineError(int line, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--rates: line ", line, ": ", problem));
}

std::vector<const v1::ReplicaPlan*> Measured(const v1::PlanCapacityResponse& plan) {
  std::vector<const v1::ReplicaPlan*> out;
  for (const v1::ReplicaPlan& p : plan.plans()) {
    if (p.test_id() != 0 && p.capacity_qps() > 0) out.push_back(&p);
  }
  return out;
}

// One hardware over the trace; accelerator_hours and cost < 0 when not known.
struct SpanTotals {
  int64_t min_replicas = std::numeric_limits<int64_t>::max();
  int64_t max_replicas = 0;
  double replica_hours = 0;
  double accelerator_hours = -1;
  double cost = -1;
};

SpanTotals TotalsOf(const v1::PlanCapacityResponse& plan, const v1::ReplicaPlan& p,
                    const std::vector<RatePoint>& rates) {
  SpanTotals t;
  for (const RatePoint& r : rates) {
    const int64_t replicas = PlanReplicasAt(plan, p, r.qps);
    t.min_replicas = std::min(t.min_replicas, replicas);
    t.max_replicas = std::max(t.max_replicas, replicas);
    t.replica_hours += static_cast<double>(replicas) * r.duration_s / 3600;
  }
  const HardwareHours h = HoursOf(p, t.replica_hours);
  t.accelerator_hours = h.accelerator_hours;
  t.cost = h.cost;
  return t;
}

std::string Hours(double seconds) { return absl::StrFormat("%.2f h", seconds / 3600); }

}  // namespace

absl::StatusOr<std::vector<RatePoint>> ParseRates(absl::string_view csv) {
  std::vector<RatePoint> rates;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() != 3) return LineError(line_number, "expected START_S,DURATION_S,QPS");
    double v[3] = {0, 0, 0};
    bool numbers = true;
    for (int i = 0; i < 3; ++i) {
      numbers &= absl::SimpleAtod(absl::StripAsciiWhitespace(fields[i]), &v[i]);
    }
    if (!numbers) {
      if (rates.empty() && line_number == 1) continue;  // a header
      return LineError(line_number, "START_S, DURATION_S and QPS must be numbers");
    }
    const RatePoint point{v[0], v[1], v[2]};
    if (!std::isfinite(point.start_s) || point.start_s < 0) {
      return LineError(line_number, "START_S must be a finite number of seconds >= 0");
    }
    if (!std::isfinite(point.duration_s) || point.duration_s <= 0) {
      return LineError(line_number, "DURATION_S must be a finite number of seconds > 0");
    }
    if (!std::isfinite(point.qps) || point.qps < 0) {
      return LineError(line_number, "QPS must be a finite rate >= 0");
    }
    if (!rates.empty() && point.start_s < rates.back().start_s + rates.back().duration_s) {
      return LineError(line_number, "a bucket starts before the previous one ended");
    }
    if (rates.size() == kMaxRatePoints) {
      return LineError(line_number, absl::StrCat("more than ", kMaxRatePoints, " buckets"));
    }
    rates.push_back(point);
  }
  if (rates.empty()) return absl::InvalidArgumentError("--rates: no START_S,DURATION_S,QPS line");
  return rates;
}

double RatesPeak(const std::vector<RatePoint>& rates) {
  double peak = 0;
  for (const RatePoint& r : rates) peak = std::max(peak, r.qps);
  return peak;
}

std::string RenderRatesTable(const v1::PlanCapacityResponse& plan,
                             const std::vector<RatePoint>& rates) {
  double covered_s = 0;
  for (const RatePoint& r : rates) covered_s += r.duration_s;
  std::string out = absl::StrFormat(
      "replicas over the trace: %d buckets covering %s (peak %s qps); ceil(qps * (1 + %g%%) / "
      "capacity per replica) + %d in each\n",
      rates.size(), Hours(covered_s), FormatQps(RatesPeak(rates)), plan.headroom() * 100,
      plan.survive_loss());
  const std::vector<const v1::ReplicaPlan*> measured = Measured(plan);
  if (measured.empty()) return absl::StrCat(out, "no hardware has a measured capacity\n");
  TextTable table({{"HARDWARE", Align::kLeft},
                   {"MIN REPLICAS", Align::kRight},
                   {"MAX REPLICAS", Align::kRight},
                   {"REPLICA-HOURS", Align::kRight},
                   {"ACCELERATOR-HOURS", Align::kRight},
                   {"COST", Align::kRight}});
  for (const v1::ReplicaPlan* p : measured) {
    const SpanTotals t = TotalsOf(plan, *p, rates);
    table.AddRow({HardwareText(p->hardware()), absl::StrCat(t.min_replicas),
                  absl::StrCat(t.max_replicas), absl::StrFormat("%.2f", t.replica_hours),
                  t.accelerator_hours >= 0 ? absl::StrFormat("%.2f", t.accelerator_hours) : "-",
                  t.cost >= 0 ? absl::StrFormat("%.2f", t.cost) : "-"});
  }
  return absl::StrCat(out, table.Render(), "every bucket's replicas: --output=csv\n");
}

std::string RenderRatesCsv(const v1::PlanCapacityResponse& plan,
                           const std::vector<RatePoint>& rates) {
  const std::vector<const v1::ReplicaPlan*> measured = Measured(plan);
  std::vector<std::string> header = {"start_s", "duration_s", "qps"};
  for (const v1::ReplicaPlan* p : measured) header.push_back(HardwareText(p->hardware()));
  std::string out = CsvLine(header);
  for (const RatePoint& r : rates) {
    std::vector<std::string> row = {CsvNumber(r.start_s), CsvNumber(r.duration_s),
                                    CsvNumber(r.qps)};
    for (const v1::ReplicaPlan* p : measured)
      row.push_back(absl::StrCat(PlanReplicasAt(plan, *p, r.qps)));
    absl::StrAppend(&out, CsvLine(row));
  }
  std::vector<std::string> totals[3] = {
      {"replica_hours", "", ""}, {"accelerator_hours", "", ""}, {"cost", "", ""}};
  for (const v1::ReplicaPlan* p : measured) {
    const SpanTotals t = TotalsOf(plan, *p, rates);
    totals[0].push_back(CsvNumber(t.replica_hours));
    totals[1].push_back(t.accelerator_hours >= 0 ? CsvNumber(t.accelerator_hours) : "");
    totals[2].push_back(t.cost >= 0 ? CsvNumber(t.cost) : "");
  }
  for (const std::vector<std::string>& row : totals) absl::StrAppend(&out, CsvLine(row));
  return out;
}

}  // namespace vanguard::cli
