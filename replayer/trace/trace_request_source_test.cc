// Tests of the engine's trace RequestSource: requests carry the recorded bytes, offsets
// reproduce the recorded inter-arrival times (and scale exactly), shards partition the
// stream, looping keeps offsets increasing, and bad traces are rejected up front. With the
// trace's index, each shard gets exactly what it gets by streaming while decoding only its own
// records, and a record that disagrees with the index is DATA_LOSS.
#include "replayer/trace/trace_request_source.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replayer/trace/testing/file_bytes.h"

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
  // Seeking even for one shard (which SeekingPays would stream: the checks against the index
  // are the seeking shard's).
  auto factory = OpenTraceSourceFactory(path, {.loop = false, .reading = TraceReading::kSeek});
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

// What a source sends, one request per element: (offset us, body, headers), then the status
// that ended it (OK if `max_requests` were read).
struct Replay {
  std::vector<std::tuple<int64_t, std::string, std::string>> requests;
  absl::Status end;
};

Replay ReplayShard(TraceRequestSource& source, int max_requests) {
  Replay replay;
  OutgoingRequest request;
  for (int i = 0; i < max_requests; ++i) {
    replay.end = source.Next(&request);
    if (!replay.end.ok()) break;
    replay.requests.emplace_back(absl::ToInt64Microseconds(*request.trace_offset),
                                 std::string(request.body), std::string(request.headers));
  }
  return replay;
}

// The gaps of WriteGappedTrace's records for a trace of n: irregular, and record 1's ignored.
std::vector<uint64_t> IrregularGaps(int n) {
  std::vector<uint64_t> gaps;
  for (int i = 0; i < n; ++i) gaps.push_back(i == 0 ? 777 : 100 + (i * 7919) % 3000);
  return gaps;
}

using testing::ReadFileBytes;
using testing::WriteFileBytes;

TEST(TraceRequestSourceTest, WithTheIndexEveryShardSendsWhatItSendsByStreaming) {
  // Seeking for every S, even where SeekingPays would stream; 300 records are more than one
  // run of index entries holds for S < 4, so runs are read again mid-lap too.
  for (int records : {10, 300}) {
    const std::string path = TempPath(absl::StrCat("indexed_equivalence_", records));
    WriteGappedTrace(path, IrregularGaps(records));
    auto index = TraceIndex::Open(TraceIndexPath(path));
    ASSERT_TRUE(index.ok()) << index.status();
    auto summary = SummarizeTrace(path);
    ASSERT_TRUE(summary.ok());
    for (int shards : {1, 2, 3, 4, 7, 10, 13, 25}) {
      for (bool loop : {true, false}) {
        for (int shard = 0; shard < shards; ++shard) {
          auto streamed = TraceRequestSource::Open(path, *summary, shard, shards, {.loop = loop});
          auto indexed =
              TraceRequestSource::OpenIndexed(path, (*index)->summary(), shard, shards,
                                              {.loop = loop, .reading = TraceReading::kSeek});
          ASSERT_TRUE(streamed.ok() && indexed.ok()) << indexed.status();
          ASSERT_TRUE((*indexed)->indexed());
          // Three laps' worth and more: offsets across lap boundaries, and (not looping) the
          // end.
          const int requests = 3 * records / shards + 4;
          const Replay want = ReplayShard(**streamed, requests);
          const Replay got = ReplayShard(**indexed, requests);
          EXPECT_EQ(got.requests, want.requests)
              << "shard " << shard << " of " << shards << ", " << records << " records";
          EXPECT_EQ(got.end, want.end) << "shard " << shard << " of " << shards;
          EXPECT_EQ(got.requests.empty(), !loop && shard >= records);
        }
      }
    }
  }
}

TEST(TraceRequestSourceTest, ShardsSeekOnlyWhenTheRecordsTheySkipCostMoreThanTheSeek) {
  EXPECT_FALSE(SeekingPays(1, 64 << 20));  // one shard sends every record
  EXPECT_FALSE(SeekingPays(2, 100));
  EXPECT_TRUE(SeekingPays(2, 64 << 10));
  EXPECT_TRUE(SeekingPays(32, 100));
  EXPECT_TRUE(SeekingPays(1024, 20));

  // Records of about 100 bytes: one shard streams, 32 seek; either way can be forced.
  const std::string path = TempPath("chooser");
  WriteGappedTrace(path, IrregularGaps(64));
  auto index = TraceIndex::Open(TraceIndexPath(path));
  ASSERT_TRUE(index.ok());
  const TraceSummary summary = (*index)->summary();
  struct Case {
    int shards;
    TraceReading reading;
    bool seeks;
  };
  for (const Case& c :
       {Case{1, TraceReading::kChosen, false}, Case{32, TraceReading::kChosen, true},
        Case{1, TraceReading::kSeek, true}, Case{32, TraceReading::kStream, false}}) {
    auto source = TraceRequestSource::OpenIndexed(path, summary, 0, c.shards,
                                                  {.loop = false, .reading = c.reading});
    ASSERT_TRUE(source.ok()) << source.status();
    EXPECT_EQ((*source)->indexed(), c.seeks) << c.shards << " shards";
    EXPECT_EQ(ReplayShard(**source, 100).requests.size(), 64u / c.shards);
    EXPECT_EQ((*source)->records_decoded(), c.seeks ? 64 / c.shards : 64) << c.shards << " shards";
  }
}

TEST(TraceRequestSourceTest, WithTheIndexAShardDecodesOnlyItsOwnRecords) {
  const std::string path = TempPath("indexed_reads");
  constexpr int kRecords = 400;
  constexpr int kShards = 16;  // of records of about 100 bytes: SeekingPays
  WriteGappedTrace(path, IrregularGaps(kRecords));
  const uint64_t trace_bytes = ReadFileBytes(path).size();
  auto summary = SummarizeTrace(path);
  ASSERT_TRUE(summary.ok());
  auto streamed = TraceRequestSource::Open(path, *summary, 1, kShards, {.loop = false});
  auto indexed = TraceRequestSource::OpenIndexed(path, *summary, 1, kShards, {.loop = false});
  ASSERT_TRUE(streamed.ok() && indexed.ok());
  ASSERT_TRUE((*indexed)->indexed());
  EXPECT_EQ(ReplayShard(**streamed, kRecords / kShards).requests.size(), kRecords / kShards);
  EXPECT_EQ(ReplayShard(**indexed, kRecords / kShards).requests.size(), kRecords / kShards);
  // Streaming decodes every record up to the shard's last (record 386 of 400); the index
  // sends the shard to its 25 records and nothing else, a sixteenth of the bytes.
  EXPECT_EQ((*streamed)->records_decoded(), kRecords - kShards + 2);
  EXPECT_EQ((*indexed)->records_decoded(), kRecords / kShards);
  EXPECT_GE((*streamed)->bytes_read(), trace_bytes - 1000);
  EXPECT_LT((*indexed)->bytes_read(), trace_bytes * 8 / 100);
  EXPECT_GT((*indexed)->bytes_read(), trace_bytes / 20);
}

// The figure docs/scale.md quotes: records decoded and bytes read per shard of S = 8 with and
// without the index, each shard sending each of its records once. On a generated trace of
// 8000 records, or on the indexed trace VANGUARD_TRACE_FIGURE names (e.g. one made by
// tests/bench/make_trace.py and indexed by `vanguard-replayer trace index`).
TEST(TraceRequestSourceTest, RecordsDecodedPerShardOfEightWithAndWithoutTheIndex) {
  constexpr int kShards = 8;
  std::string path = TempPath("indexed_figure");
  if (const char* given = std::getenv("VANGUARD_TRACE_FIGURE"); given != nullptr) {
    path = given;
  } else {
    WriteGappedTrace(path, IrregularGaps(8000));
  }
  auto summary = SummarizeTrace(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const int64_t records = summary->records;
  int64_t streamed_max = 0;
  int64_t indexed_max = 0;
  uint64_t streamed_bytes = 0;
  uint64_t indexed_bytes = 0;
  for (int shard = 0; shard < kShards; ++shard) {
    auto streamed = TraceRequestSource::Open(path, *summary, shard, kShards, {.loop = false});
    // Seeking (SeekingPays would stream 8 shards of these ~100-byte records).
    auto indexed = TraceRequestSource::OpenIndexed(path, *summary, shard, kShards,
                                                   {.loop = false, .reading = TraceReading::kSeek});
    ASSERT_TRUE(streamed.ok() && indexed.ok()) << indexed.status();
    const size_t own = static_cast<size_t>((records - shard + kShards - 1) / kShards);
    ASSERT_EQ(ReplayShard(**streamed, own).requests.size(), own);
    ASSERT_EQ(ReplayShard(**indexed, own).requests.size(), own);
    EXPECT_EQ((*indexed)->records_decoded(), static_cast<int64_t>(own));
    streamed_max = std::max(streamed_max, (*streamed)->records_decoded());
    indexed_max = std::max(indexed_max, (*indexed)->records_decoded());
    streamed_bytes = std::max(streamed_bytes, (*streamed)->bytes_read());
    indexed_bytes = std::max(indexed_bytes, (*indexed)->bytes_read());
  }
  std::printf(
      "trace of %lld records, S=8: records decoded per shard (max) %lld streaming, %lld "
      "with the index; bytes read per shard (max) %llu streaming, %llu with the index\n",
      static_cast<long long>(records), static_cast<long long>(streamed_max),
      static_cast<long long>(indexed_max), static_cast<unsigned long long>(streamed_bytes),
      static_cast<unsigned long long>(indexed_bytes));
  EXPECT_GT(streamed_max, records - kShards);
}

TEST(TraceRequestSourceTest, TheFactoryReadsThroughTheIndexWhenThereIsOne) {
  const std::string path = TempPath("factory_index");
  WriteGappedTrace(path, IrregularGaps(40));
  for (bool with_index : {true, false}) {
    if (!with_index) {
      ASSERT_EQ(::unlink(TraceIndexPath(path).c_str()), 0);
    }
    auto factory = OpenTraceSourceFactory(path, {.loop = false});
    ASSERT_TRUE(factory.ok()) << factory.status();
    // 16 shards of records of about 100 bytes: SeekingPays.
    auto source = (*factory)(2, 16);
    ASSERT_TRUE(source.ok());
    auto* trace = dynamic_cast<TraceRequestSource*>(source->get());
    ASSERT_NE(trace, nullptr);
    EXPECT_EQ(trace->indexed(), with_index);
    EXPECT_EQ(ReplayShard(*trace, 100).requests.size(), 3u);
    EXPECT_EQ(trace->records_decoded(), with_index ? 3 : 40);
  }
}

TEST(TraceRequestSourceTest, AnIndexOfAnotherTraceOrACorruptOneIsRejectedBeforeTheStep) {
  const std::string path = TempPath("stale_index");
  WriteGappedTrace(path, IrregularGaps(6));
  const std::string index_bytes = ReadFileBytes(TraceIndexPath(path));
  // The trace grows (a record appended by a recorder still running): the index is stale.
  WriteGappedTrace(path, IrregularGaps(7));
  WriteFileBytes(TraceIndexPath(path), index_bytes);
  auto stale = OpenTraceSourceFactory(path);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stale.status().message(), HasSubstr("describes a trace of"));
  EXPECT_THAT(stale.status().message(), HasSubstr("vanguard-replayer trace index"));

  std::string corrupt = index_bytes;
  corrupt[kTraceIndexHeaderBytes + 3] ^= 0x40;
  WriteFileBytes(TraceIndexPath(path), corrupt);
  auto bad = OpenTraceSourceFactory(path);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("trace_path: "));
  EXPECT_THAT(bad.status().message(), HasSubstr(".idx: byte offset"));
}

// What shard `shard` of `shards` sends (up to 10 requests, not looping) through the factory,
// seeking even where SeekingPays would stream: the checks against the index are a seeking
// shard's.
Replay ReplaySeekingShard(const std::string& path, int shard, int shards) {
  auto factory = OpenTraceSourceFactory(path, {.loop = false, .reading = TraceReading::kSeek});
  EXPECT_TRUE(factory.ok()) << factory.status();
  if (!factory.ok()) return {.end = factory.status()};
  auto source = (*factory)(shard, shards);
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) return {.end = source.status()};
  return ReplayShard(*dynamic_cast<TraceRequestSource*>(source->get()), 10);
}

TEST(TraceRequestSourceTest, WithTheIndexABadRecordIsDataLossForTheShardThatReadsIt) {
  // Same sizes, a different gap in the middle: the index passes every up-front check (size,
  // first and last records) but not the shard that reads record 3.
  const std::string path = TempPath("index_gap_mismatch");
  std::vector<uint64_t> gaps = {0, 1000, 1000, 1000, 1000, 1000};
  WriteGappedTrace(path, gaps);
  const std::string index_bytes = ReadFileBytes(TraceIndexPath(path));
  gaps[2] = 2000;  // same varint length
  WriteGappedTrace(path, gaps);
  WriteFileBytes(TraceIndexPath(path), index_bytes);
  const Replay replay = ReplaySeekingShard(path, 0, 1);
  EXPECT_EQ(replay.requests.size(), 2u);
  EXPECT_EQ(replay.end.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(replay.end.message(), HasSubstr("record 3 at byte offset"));
  EXPECT_THAT(replay.end.message(),
              HasSubstr("inter-arrival time is 2000 us, the index says 1000"));

  // A flipped payload byte in the middle: the factory does not read it, the shard does.
  const std::string flipped = TempPath("index_flipped_record");
  WriteGappedTrace(flipped, {0, 1000, 1000, 1000, 1000, 1000});
  TraceIndexEntry entry;
  auto index = TraceIndex::Open(TraceIndexPath(flipped));
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE((*index)->ReadEntries(3, 1, &entry).ok());
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(entry.record_offset) + 20);
    f.put('#');
  }
  const Replay bad = ReplaySeekingShard(flipped, 1, 2);
  EXPECT_EQ(bad.requests.size(), 1u);
  EXPECT_EQ(bad.end.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.end.message(),
              HasSubstr(absl::StrCat("record 4 at byte offset ", entry.record_offset,
                                     ": checksum mismatch")));
}

}  // namespace
}  // namespace vanguard::replayer
