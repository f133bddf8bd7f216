#include "common/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace vanguard {
namespace {

constexpr uint8_t kFormatVersion = 1;
constexpr int kLinearBits = 7;  // log2(kSubBuckets)

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace

int LatencyHistogram::BucketIndex(int64_t v) {
  if (v < kSubBuckets) return static_cast<int>(v);
  int exponent = std::bit_width(static_cast<uint64_t>(v)) - 1;  // >= kLinearBits
  int shift = exponent - kLinearBits;
  int sub = static_cast<int>(v >> shift) - kSubBuckets;
  return kSubBuckets + shift * kSubBuckets + sub;
}

int64_t LatencyHistogram::BucketLow(int index) {
  if (index < kSubBuckets) return index;
  int shift = (index - kSubBuckets) / kSubBuckets;
  int sub = (index - kSubBuckets) % kSubBuckets;
  return static_cast<int64_t>(kSubBuckets + sub) << shift;
}

int64_t LatencyHistogram::BucketWidth(int index) {
  if (index < kSubBuckets) return 1;
  return int64_t{1} << ((index - kSubBuckets) / kSubBuckets);
}

int LatencyHistogram::NumBuckets() { return BucketIndex(kMaxValueUs) + 1; }

LatencyHistogram::LatencyHistogram() : counts_(NumBuckets(), 0) {}

void LatencyHistogram::RecordN(int64_t v, int64_t n) {
  if (n <= 0) return;
  v = std::clamp<int64_t>(v, 1, kMaxValueUs);
  counts_[BucketIndex(v)] += n;
  if (count_ == 0 || v < min_) min_ = v;
  if (v > max_) max_ = v;
  count_ += n;
  sum_ += v * n;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void LatencyHistogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = min_ = max_ = sum_ = 0;
}

double LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0.0;
  p = std::clamp(p, 0.0, 100.0);
  int64_t rank = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      int idx = static_cast<int>(i);
      double mid =
          static_cast<double>(BucketLow(idx)) + static_cast<double>(BucketWidth(idx) - 1) / 2.0;
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

int64_t LatencyHistogram::CountAbove(double value_us) const {
  int64_t above = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    const int idx = static_cast<int>(i);
    const double mid =
        static_cast<double>(BucketLow(idx)) + static_cast<double>(BucketWidth(idx) - 1) / 2.0;
    if (std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_)) > value_us) {
      above += counts_[i];
    }
  }
  return above;
}

std::string LatencyHistogram::Serialize() const {
  std::string out;
  out.push_back(static_cast<char>(kFormatVersion));
  PutVarint(&out, static_cast<uint64_t>(count_));
  PutVarint(&out, static_cast<uint64_t>(min_));
  PutVarint(&out, static_cast<uint64_t>(max_));
  PutVarint(&out, static_cast<uint64_t>(sum_));
  // Sparse: (gap since previous non-empty bucket, count) pairs.
  int prev = -1;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    PutVarint(&out, static_cast<uint64_t>(static_cast<int>(i) - prev));
    PutVarint(&out, static_cast<uint64_t>(counts_[i]));
    prev = static_cast<int>(i);
  }
  return out;
}

absl::StatusOr<LatencyHistogram> LatencyHistogram::Deserialize(std::string_view data) {
  if (data.empty()) return LatencyHistogram();
  if (static_cast<uint8_t>(data.front()) != kFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("histogram: unknown format version ", static_cast<int>(data.front())));
  }
  data.remove_prefix(1);
  LatencyHistogram h;
  uint64_t count, min, max, sum;
  if (!GetVarint(&data, &count) || !GetVarint(&data, &min) || !GetVarint(&data, &max) ||
      !GetVarint(&data, &sum)) {
    return absl::InvalidArgumentError("histogram: truncated header");
  }
  int64_t total = 0;
  int idx = -1;
  while (!data.empty()) {
    uint64_t gap, n;
    if (!GetVarint(&data, &gap) || !GetVarint(&data, &n)) {
      return absl::InvalidArgumentError("histogram: truncated bucket");
    }
    if (gap == 0 || gap > static_cast<uint64_t>(NumBuckets()) ||
        idx + static_cast<int64_t>(gap) >= NumBuckets()) {
      return absl::InvalidArgumentError("histogram: bucket index out of range");
    }
    idx += static_cast<int>(gap);
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - total)) {
      return absl::InvalidArgumentError("histogram: count overflow");
    }
    h.counts_[idx] = static_cast<int64_t>(n);
    total += static_cast<int64_t>(n);
  }
  if (static_cast<uint64_t>(total) != count) {
    return absl::InvalidArgumentError("histogram: bucket counts do not add up to the total");
  }
  h.count_ = total;
  h.min_ = static_cast<int64_t>(min);
  h.max_ = static_cast<int64_t>(max);
  h.sum_ = static_cast<int64_t>(sum);
  return h;
}

bool LatencyHistogram::operator==(const LatencyHistogram& o) const {
  return count_ == o.count_ && min() == o.min() && max_ == o.max_ && sum_ == o.sum_ &&
         counts_ == o.counts_;
}

}  // namespace vanguard
