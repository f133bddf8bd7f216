// A log-linear latency histogram (HDR-style) over integer microseconds, 1 us to 10 min.
//
// Values below 128 us are exact; above, each power of two is split into 128 equal
// buckets, so a reported percentile is within 0.4% of a value that was recorded. Counts
// are exact 64-bit integers, merging two histograms is exact (the same as recording all
// values into one), and the sparse serialization is a few hundred bytes for a typical step.
// Percentiles are never averaged: merge the histograms, then read the percentile.
//
//   LatencyHistogram h;
//   h.Record(1250);                 // 1.25 ms
//   double p99_us = h.Percentile(99.0);
//   std::string wire = h.Serialize();
//   absl::StatusOr<LatencyHistogram> back = LatencyHistogram::Deserialize(wire);
//
// Not thread-safe: one histogram per thread, merged at the end.
#ifndef VANGUARD_COMMON_HISTOGRAM_H_
#define VANGUARD_COMMON_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vanguard {

class LatencyHistogram {
 public:
  static constexpr int64_t kMaxValueUs = 600'000'000;  // 10 minutes
  static constexpr int kSubBuckets = 128;

  LatencyHistogram();

  // Records one value in microseconds; values below 1 count as 1, above the max as the max.
  void Record(int64_t value_us) { RecordN(value_us, 1); }
  void RecordN(int64_t value_us, int64_t n);
  void Merge(const LatencyHistogram& other);
  void Reset();

  int64_t count() const { return count_; }
  int64_t min() const { return count_ ? min_ : 0; }
  int64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }

  // Nearest-rank percentile (p in [0, 100]) in microseconds; 0 when empty. The result is
  // the midpoint of the bucket holding the rank, clamped to [min, max].
  double Percentile(double p) const;

  // Values above `value_us`, each bucket taken at the value Percentile reports for it (so
  // Percentile(p) > v exactly when more than (100 - p)% of the values are above v, up to
  // rank rounding).
  int64_t CountAbove(double value_us) const;

  std::string Serialize() const;
  static absl::StatusOr<LatencyHistogram> Deserialize(std::string_view data);

  bool operator==(const LatencyHistogram& o) const;

 private:
  static int BucketIndex(int64_t v);
  static int64_t BucketLow(int index);
  static int64_t BucketWidth(int index);
  static int NumBuckets();

  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  int64_t sum_ = 0;
};

}  // namespace vanguard

#endif  // VANGUARD_COMMON_HISTOGRAM_H_
