// Two capacity tests compared, A the reference and B the candidate: their capacities with
// the confidence intervals their results state, whether B's difference is beyond both
// intervals or within the noise, and latency percentiles at the highest offered rate both
// tests measured (interpolated between steps where a test has no step at that rate).
//
//   CapacityComparison c = CompareCapacity(a.result(), b.result());
//   // c.verdict == "B is higher by 50.0% — beyond both tests' confidence intervals"
//   std::optional<LatencyAtRate> latency = LatencyAtCommonRate(a, b);
//   // latency->rate_qps == 250, latency->a.Interpolated() == true
//
// A result's interval is [confidence_low_qps, confidence_high_qps): the capacity held at the
// low end and failed at the high end. An "at least" result, or one whose high end is 0, has no
// upper end. Pure functions; any thread may call them.
#ifndef VANGUARD_ORCHESTRATOR_CLI_COMPARE_H_
#define VANGUARD_ORCHESTRATOR_CLI_COMPARE_H_

#include <optional>
#include <string>

#include "vanguard/v1/test.pb.h"

namespace vanguard::cli {

// What a result claims about the capacity.
struct CapacityInterval {
  double estimate = 0;  // max_sustainable_qps
  bool at_least = false;
  // The result states an interval (or is "at least"); false: low == high == estimate, and no
  // difference can be told from the noise.
  bool stated = false;
  double low = 0;
  double high = 0;  // +infinity when there is no upper end

  // Whether `qps` lies in [low, high) (in [low, high] for a single point).
  bool Contains(double qps) const;
};

CapacityInterval IntervalOf(const v1::TestResult& result);

// Whether two intervals share a rate.
bool Overlap(const CapacityInterval& a, const CapacityInterval& b);

struct CapacityComparison {
  CapacityInterval a;
  CapacityInterval b;
  // (B - A) / A * 100; nullopt when A's estimate is not positive.
  std::optional<double> change_pct;
  // Both intervals stated and disjoint: the difference is more than either test's noise.
  bool beyond_intervals = false;
  // One line: "B is lower by 12.0% — beyond both tests' confidence intervals", "within the
  // noise: B is 3.0% higher, but the confidence intervals overlap", ...
  std::string verdict;
};

CapacityComparison CompareCapacity(const v1::TestResult& a, const v1::TestResult& b);

// One test's latency at a rate: measured at a step of that rate, or interpolated linearly
// between the steps just below and just above it.
struct LatencyEstimate {
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  double below_qps = 0;  // the step at or below the rate
  double above_qps = 0;  // the step at or above the rate (== below_qps when measured there)

  bool Interpolated() const { return below_qps != above_qps; }
};

struct LatencyAtRate {
  double rate_qps = 0;  // the highest offered rate inside both tests' measured ranges
  LatencyEstimate a;
  LatencyEstimate b;
};

// Steps that were interrupted are left out; where a test measured one rate more than once,
// its latest step (highest attempt, then index) counts. nullopt when a test has no step or
// the two tests' ranges of offered rates do not overlap.
std::optional<LatencyAtRate> LatencyAtCommonRate(const v1::Test& a, const v1::Test& b);

}  // namespace vanguard::cli

#endif  // VANGUARD_ORCHESTRATOR_CLI_COMPARE_H_
