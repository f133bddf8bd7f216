#include "common/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace vanguard {
namespace {

double ExactPercentile(std::vector<int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  int64_t rank = static_cast<int64_t>(std::ceil(p / 100.0 * v.size()));
  rank = std::clamp<int64_t>(rank, 1, v.size());
  return static_cast<double>(v[rank - 1]);
}

TEST(LatencyHistogramTest, PercentilesWithinOnePercentOfExactSort) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(5000.0), 1.2);
  LatencyHistogram h;
  std::vector<int64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    int64_t v =
        std::clamp<int64_t>(static_cast<int64_t>(dist(rng)), 1, LatencyHistogram::kMaxValueUs);
    values.push_back(v);
    h.Record(v);
  }
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    double exact = ExactPercentile(values, p);
    EXPECT_NEAR(h.Percentile(p), exact, exact * 0.01) << "p" << p;
  }
  EXPECT_EQ(h.count(), 200'000);
  EXPECT_EQ(h.max(), *std::max_element(values.begin(), values.end()));
}

TEST(LatencyHistogramTest, CountAboveAgreesWithExactCountAndPercentile) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(std::log(20000.0), 0.6);
  LatencyHistogram h;
  std::vector<int64_t> values;
  for (int i = 0; i < 100'000; ++i) {
    const int64_t v = static_cast<int64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.Record(v);
  }
  for (double limit : {5000.0, 20000.0, 60000.0, 120000.0}) {
    const auto exact = std::count_if(values.begin(), values.end(),
                                     [&](int64_t v) { return static_cast<double>(v) > limit; });
    // Bucket resolution is under 1% of the value: only values within it may differ.
    const auto near = std::count_if(values.begin(), values.end(), [&](int64_t v) {
      return std::abs(static_cast<double>(v) - limit) <= limit * 0.01;
    });
    EXPECT_NEAR(static_cast<double>(h.CountAbove(limit)), static_cast<double>(exact),
                static_cast<double>(near) + 1)
        << limit;
  }
  // Consistent with Percentile: p99 above v iff more than 1% of the values are above v.
  const double p99 = h.Percentile(99);
  EXPECT_LE(h.CountAbove(p99), h.count() / 100);
  EXPECT_GT(h.CountAbove(p99 * 0.98), h.count() / 100);
  EXPECT_EQ(h.CountAbove(static_cast<double>(h.max())), 0);
  EXPECT_EQ(LatencyHistogram().CountAbove(0), 0);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(50), 50);
  EXPECT_EQ(h.Percentile(99), 99);
  EXPECT_EQ(h.Percentile(100), 100);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> dist(1, 3'000'000);
  LatencyHistogram all, a, b;
  for (int i = 0; i < 50'000; ++i) {
    int64_t v = dist(rng);
    all.Record(v);
    (i % 3 == 0 ? a : b).Record(v);
  }
  a.Merge(b);
  EXPECT_TRUE(a == all);
  EXPECT_EQ(a.Percentile(99.9), all.Percentile(99.9));
}

TEST(LatencyHistogramTest, SerializationRoundTrips) {
  LatencyHistogram h;
  for (int64_t v : {1, 5, 130, 4000, 4001, 250'000, 599'999'999}) h.Record(v);
  std::string wire = h.Serialize();
  EXPECT_LT(wire.size(), 64u);
  auto back = LatencyHistogram::Deserialize(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == h);
}

TEST(LatencyHistogramTest, RejectsCorruptInput) {
  LatencyHistogram h;
  h.Record(1000);
  std::string wire = h.Serialize();
  EXPECT_FALSE(LatencyHistogram::Deserialize(wire.substr(0, wire.size() - 1)).ok());
  std::string bad_version = wire;
  bad_version[0] = 9;
  EXPECT_FALSE(LatencyHistogram::Deserialize(bad_version).ok());
  std::string garbage(40, '\xff');
  garbage[0] = 1;
  EXPECT_FALSE(LatencyHistogram::Deserialize(garbage).ok());
}

TEST(LatencyHistogramTest, ClampsOutOfRangeValues) {
  LatencyHistogram h;
  h.Record(0);
  h.Record(-5);
  h.Record(int64_t{1} << 40);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), LatencyHistogram::kMaxValueUs);
  EXPECT_EQ(h.count(), 3);
}

TEST(LatencyHistogramTest, EmptyHistogramReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.Percentile(99), 0);
  EXPECT_EQ(h.mean(), 0);
  auto back = LatencyHistogram::Deserialize(h.Serialize());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->count(), 0);
}

}  // namespace
}  // namespace vanguard
