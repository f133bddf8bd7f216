// Tests of the engine's trace RequestSource: requests carry the recorded bytes, offsets
// reproduce the recorded inter-arrival times (and scale exactly), shards partition the
// stream, looping keeps offsets increasing, and bad traces are rejected up front.
#include "replayer/trace/trace_request_source.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using ::testing::HasSubstr;

std::string TempPath(absl::string_view name) {
  return absl::StrCat(::testing::TempDir(), "/", name, ".", getpid(), ".vtr");
}

// A trace with irregular recorded gaps: record i has gap gaps[i].
std::vector<TraceRecord> WriteGappedTrace(const std::string& path,
                                          const std::vector<uint64_t>& gaps) {
  std::vector<TraceRecord> records;
  auto writer = TraceWriter::Create(path);
  EXPECT_TRUE(writer.ok());
  for (size_t i = 0; i < gaps.size(); ++i) {
    TraceRecord r;
    r.interarrival_us = gaps[i];
    r.protocol = "kserve_v2_rest";
    r.model = "m";
    r.method = "POST";
    r.path = "/v2/models/m/infer";
    r.headers = {{"Content-Type", "application/json"}, {"X-Seq", absl::StrCat(i)}};
    r.payload = absl::StrCat("{\"seq\":", i, "}");
    EXPECT_TRUE((*writer)->Append(r).ok());
    records.push_back(r);
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return records;
}

TEST(TraceRequestSourceTest, ReplayReproducesRecordedInterArrivalsScaledToTheTargetRate) {
  std::string path = TempPath("gaps");
  std::vector<uint64_t> gaps = {999, 10'000, 30'000, 5'000, 55'000, 1'000, 19'000};
  WriteGappedTrace(path, gaps);
  auto factory = OpenTraceSourceFactory(path, {.loop = false});
  ASSERT_TRUE(factory.ok()) << factory.status();
  auto source = (*factory)(0, 1);
  ASSERT_TRUE(source.ok());
  // 6 gaps over 120 ms: recorded at 50 req/s.
  EXPECT_DOUBLE_EQ((*source)->recorded_rate_qps(), 50.0);

  OutgoingRequest request;
  std::vector<absl::Duration> offsets;
  for (size_t i = 0; i < gaps.size(); ++i) {
    ASSERT_TRUE((*source)->Next(&request).ok());
    EXPECT_EQ(request.body, absl::StrCat("{\"seq\":", i, "}"));
    EXPECT_EQ(request.headers,
              absl::StrCat("Content-Type: application/json\r\nX-Seq: ", i, "\r\n"));
    EXPECT_EQ(request.path, "/v2/models/m/infer");
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.model, "m");
    ASSERT_TRUE(request.trace_offset.has_value());
    offsets.push_back(*request.trace_offset);
  }
  EXPECT_EQ((*source)->Next(&request).code(), absl::StatusCode::kOutOfRange);

  // Replayed at 200 req/s (4x the recorded rate) with the engine's SCHEDULE_TRACE rule
  // (intended = offset * recorded / target), every gap is the recorded gap / 4.
  double scale = (*source)->recorded_rate_qps() / 200.0;
  for (size_t i = 1; i < gaps.size(); ++i) {
    absl::Duration scaled_gap = (offsets[i] - offsets[i - 1]) * scale;
    EXPECT_EQ(offsets[i] - offsets[i - 1], absl::Microseconds(gaps[i]));
    EXPECT_EQ(scaled_gap, absl::Microseconds(gaps[i]) / 4) << "gap " << i;
  }
  EXPECT_EQ(offsets.front(), absl::ZeroDuration());
}

TEST(TraceRequestSourceTest, ShardsPartitionTheStreamKeepingWholeStreamOffsets) {
  std::string path = TempPath("shards");
  std::vector<uint64_t> gaps(10, 1000);
  WriteGappedTrace(path, gaps);
  auto factory = OpenTraceSourceFactory(path, {.loop = false});
  ASSERT_TRUE(factory.ok());
  std::vector<std::string> bodies;
  for (int shard = 0; shard < 3; ++shard) {
    auto source = (*factory)(shard, 3);
    ASSERT_TRUE(source.ok());
    OutgoingRequest request;
    for (int i = shard; i < 10; i += 3) {
      ASSERT_TRUE((*source)->Next(&request).ok());
      EXPECT_EQ(request.body, absl::StrCat("{\"seq\":", i, "}"));
      EXPECT_EQ(*request.trace_offset, absl::Milliseconds(i));
    }
    EXPECT_EQ((*source)->Next(&request).code(), absl::StatusCode::kOutOfRange);
  }
  EXPECT_EQ((*factory)(3, 3).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TraceRequestSourceTest, LoopingRepeatsTheTraceWithIncreasingOffsets) {
  std::string path = TempPath("loop");
  WriteGappedTrace(path, {0, 2000, 4000});  // mean gap 3 ms
  auto factory = OpenTraceSourceFactory(path);
  ASSERT_TRUE(factory.ok());
  auto source = (*factory)(0, 1);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  std::vector<int64_t> offsets_ms;
  std::vector<std::string> bodies;
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE((*source)->Next(&request).ok());
    offsets_ms.push_back(absl::ToInt64Milliseconds(*request.trace_offset));
    bodies.emplace_back(request.body);
  }
  EXPECT_EQ(offsets_ms, (std::vector<int64_t>{0, 2, 6, 9, 11, 15, 18}));
  EXPECT_EQ(bodies[3], bodies[0]);
  EXPECT_EQ(bodies[6], bodies[0]);
}

TEST(TraceRequestSourceTest, BadTracesAreRejectedBeforeTheStepNamingTracePath) {
  auto missing = OpenTraceSourceFactory(TempPath("missing"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("trace_path"));

  std::string path = TempPath("corrupt");
  WriteGappedTrace(path, {0, 1000, 1000, 1000});
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7e');
  }
  auto corrupt = OpenTraceSourceFactory(path);
  EXPECT_EQ(corrupt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(corrupt.status().message(), HasSubstr("record 4 at byte offset"));

  std::string empty = TempPath("empty");
  WriteGappedTrace(empty, {});
  EXPECT_THAT(OpenTraceSourceFactory(empty).status().message(), HasSubstr("no requests"));
}

}  // namespace
}  // namespace vanguard::replayer
