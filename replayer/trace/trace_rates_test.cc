// Tests of BucketTraceRates / TraceRatesCsv / RunRates on traces written here with known
// inter-arrival times, checked against hand-counted buckets.
#include "replayer/trace/trace_rates.h"

#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "replayer/trace/trace_commands.h"
#include "replayer/trace/trace_format.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::replayer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A trace of `n` requests of `model` every `gap_us` after the one before (the first `first_us`
// after the previous record), appended to `writer`.
void Append(TraceWriter& writer, int n, uint64_t first_us, uint64_t gap_us,
            const std::string& model = "llama") {
  for (int i = 0; i < n; ++i) {
    TraceRecord r;
    r.interarrival_us = i == 0 ? first_us : gap_us;
    r.protocol = std::string(kTraceProtocolOpenAiCompletions);
    r.model = model;
    r.method = "POST";
    r.path = "/v1/completions";
    r.payload = "{}";
    ASSERT_TRUE(writer.Append(r).ok());
  }
}

// 10 req/s for a minute (600 requests at 0, 0.1, ... 59.9 s), 20 req/s the next (1200 at
// 60.0 ... 119.95 s), 5 req/s the third (300 at 120.0 ... 179.8 s); and 30 requests of another
// model in the second minute.
std::string ThreeMinutes() {
  const std::string path = ::testing::TempDir() + "/three_minutes.vtr";
  absl::StatusOr<std::unique_ptr<TraceWriter>> writer = TraceWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status();
  Append(**writer, 600, 0, 100'000);
  Append(**writer, 600, 100'000, 50'000);
  Append(**writer, 30, 0, 0, "other");  // at 89.95 s
  Append(**writer, 600, 50'000, 50'000);
  Append(**writer, 300, 50'000, 200'000);
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

TEST(TraceRatesTest, CountsEachBucketsArrivalsOverItsWidth) {
  const std::string path = ThreeMinutes();
  absl::StatusOr<TraceRates> rates = BucketTraceRates(path, absl::Minutes(1), "llama");
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_THAT(rates->counts, ElementsAre(600, 1200, 300));
  EXPECT_EQ(rates->records, 2130);
  EXPECT_EQ(rates->counted, 2100);
  EXPECT_EQ(rates->span_us, 179'800'000u);
  EXPECT_EQ(TraceRatesCsv(*rates), "start_s,duration_s,qps\n0,60,10\n60,60,20\n120,60,5\n");

  // Every model, in 2-minute buckets: (600 + 1200 + 30) / 120 s and 300 / 120 s.
  rates = BucketTraceRates(path, absl::Minutes(2), "");
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_THAT(rates->counts, ElementsAre(1830, 300));
  EXPECT_EQ(TraceRatesCsv(*rates), "start_s,duration_s,qps\n0,120,15.25\n120,120,2.5\n");
}

TEST(TraceRatesTest, AsJsonTheBucketsAreAnAutoscaleTestsTraceShape) {
  std::ostringstream out;
  ASSERT_TRUE(
      RunRates(ThreeMinutes(), absl::Minutes(1), "llama", out, RatesFormat::kAutoscaleJson).ok());
  EXPECT_EQ(out.str(),
            "{\"shape\":\"LOAD_SHAPE_TRACE\",\"trace_rates\":["
            "{\"start\":\"0s\",\"duration\":\"60s\",\"qps\":10},"
            "{\"start\":\"60s\",\"duration\":\"60s\",\"qps\":20},"
            "{\"start\":\"120s\",\"duration\":\"60s\",\"qps\":5}]}\n");
  // What a spec's "autoscale" object reads back.
  vanguard::v1::AutoscaleStrategy shape;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &shape).ok());
  EXPECT_EQ(shape.shape(), vanguard::v1::LOAD_SHAPE_TRACE);
  ASSERT_EQ(shape.trace_rates_size(), 3);
  EXPECT_EQ(shape.trace_rates(2).start().seconds(), 120);
  EXPECT_EQ(shape.trace_rates(2).duration().seconds(), 60);
  EXPECT_EQ(shape.trace_rates(1).qps(), 20);

  // Buckets of a fraction of a second keep it: 1.5 s, 3 requests = 2 req/s.
  TraceRates half;
  half.bucket = absl::Milliseconds(1500);
  half.counts = {3, 0};
  EXPECT_EQ(TraceRatesAutoscaleJson(half),
            "{\"shape\":\"LOAD_SHAPE_TRACE\",\"trace_rates\":["
            "{\"start\":\"0s\",\"duration\":\"1.500s\",\"qps\":2},"
            "{\"start\":\"1.500s\",\"duration\":\"1.500s\"}]}\n");  // qps 0: omitted
}

TEST(TraceRatesTest, RunRatesPrintsTheCsvAndRefusesWhatItCannotBucket) {
  const std::string path = ThreeMinutes();
  std::ostringstream out;
  ASSERT_TRUE(RunRates(path, absl::Minutes(1), "llama", out).ok());
  EXPECT_EQ(out.str(), "start_s,duration_s,qps\n0,60,10\n60,60,20\n120,60,5\n");

  std::ostringstream unused;
  absl::Status status = RunRates(path, absl::Minutes(1), "mistral", unused);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no request of model \"mistral\""));
  EXPECT_EQ(RunRates("", absl::Minutes(1), "", unused).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunRates(path, absl::Milliseconds(500), "", unused).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunRates(path, absl::Hours(25), "", unused).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunRates(::testing::TempDir() + "/missing.vtr", absl::Minutes(1), "", unused).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(unused.str().empty());
}

TEST(TraceRatesTest, ASpanOfMoreBucketsThanTheLimitIsRefused) {
  const std::string path = ::testing::TempDir() + "/long_span.vtr";
  absl::StatusOr<std::unique_ptr<TraceWriter>> writer = TraceWriter::Create(path);
  ASSERT_TRUE(writer.ok());
  Append(**writer, 2, 0, uint64_t{kMaxRateBuckets} * 1'000'000);  // a million seconds apart
  ASSERT_TRUE((*writer)->Close().ok());
  absl::StatusOr<TraceRates> rates = BucketTraceRates(path, absl::Seconds(1), "");
  EXPECT_EQ(rates.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(rates.status().message(), HasSubstr("use a longer --bucket"));
  EXPECT_TRUE(BucketTraceRates(path, absl::Minutes(1), "").ok());
}

}  // namespace
}  // namespace vanguard::replayer
