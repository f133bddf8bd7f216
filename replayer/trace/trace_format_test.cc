// Tests of the trace format: round trips, bounded-memory streaming, and clear errors (with
// byte offsets) on corrupt, truncated or foreign files.
#include "replayer/trace/trace_format.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

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

TraceRecord MakeRecord(int i, size_t payload_bytes = 0) {
  TraceRecord r;
  r.interarrival_us = 1000 + static_cast<uint64_t>(i) * 7;
  r.protocol = std::string(kTraceProtocolKServeV2Rest);
  r.model = absl::StrCat("model-", i % 3);
  r.method = "POST";
  r.path = absl::StrCat("/v2/models/", r.model, "/infer");
  r.headers = {{"Content-Type", "application/json"}, {"X-Request-Id", absl::StrCat("req-", i)}};
  r.payload = payload_bytes == 0 ? absl::StrCat("{\"i\":", i, "}")
                                 : std::string(payload_bytes, 'a' + i % 26);
  return r;
}

void WriteTrace(const std::string& path, const std::vector<TraceRecord>& records) {
  auto writer = TraceWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const TraceRecord& r : records) ASSERT_TRUE((*writer)->Append(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
}

std::string ReadFile(const std::string& path) { return testing::ReadFileBytes(path); }
void WriteFile(const std::string& path, const std::string& bytes) {
  testing::WriteFileBytes(path, bytes);
}

// Reads every record, returning them or the first error.
absl::StatusOr<std::vector<TraceRecord>> ReadAll(const std::string& path,
                                                 TraceReader::Options options = {}) {
  auto reader = TraceReader::Open(path, options);
  if (!reader.ok()) return reader.status();
  std::vector<TraceRecord> out;
  TraceRecord r;
  while (true) {
    absl::StatusOr<bool> got = (*reader)->Next(&r);
    if (!got.ok()) return got.status();
    if (!*got) return out;
    out.push_back(r);
  }
}

TEST(TraceFormatTest, RoundTripsEveryField) {
  std::string path = TempPath("roundtrip");
  std::vector<TraceRecord> records;
  for (int i = 0; i < 50; ++i) records.push_back(MakeRecord(i));
  records[3].payload = std::string("\0\x01\xff binary", 10);  // payload bytes are opaque
  records[4].headers.clear();
  records[5].method.clear();
  records[5].protocol = std::string(kTraceProtocolKServeV2Grpc);
  WriteTrace(path, records);
  auto read = ReadAll(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, records);
}

TEST(TraceFormatTest, RewindLoopsBackToTheFirstRecord) {
  std::string path = TempPath("rewind");
  WriteTrace(path, {MakeRecord(0), MakeRecord(1)});
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord r;
  for (int lap = 0; lap < 3; ++lap) {
    ASSERT_TRUE(*(*reader)->Next(&r));
    EXPECT_EQ(r, MakeRecord(0));
    ASSERT_TRUE(*(*reader)->Next(&r));
    EXPECT_EQ(r, MakeRecord(1));
    EXPECT_FALSE(*(*reader)->Next(&r));
    ASSERT_TRUE((*reader)->Rewind().ok());
  }
}

TEST(TraceFormatTest, StreamsATraceManyTimesLargerThanItsBufferWithBoundedMemory) {
  std::string path = TempPath("large");
  std::vector<TraceRecord> records;
  // ~4 MB of records through a 4 KiB buffer; one record (64 KiB) is bigger than the buffer.
  for (int i = 0; i < 2000; ++i) records.push_back(MakeRecord(i, 2000));
  records[777].payload = std::string(64 << 10, 'z');
  WriteTrace(path, records);
  ASSERT_GT(ReadFile(path).size(), 4u << 20);

  TraceReader::Options options;
  options.buffer_bytes = 4096;
  auto reader = TraceReader::Open(path, options);
  ASSERT_TRUE(reader.ok());
  TraceRecord r;
  int64_t n = 0;
  while (*(*reader)->Next(&r)) {
    ASSERT_EQ(r, records[n]) << "record " << n;
    ++n;
  }
  EXPECT_EQ(n, 2000);
  // Memory held: the buffer plus the largest record, not the file.
  EXPECT_LE((*reader)->peak_buffered_bytes(), 4096u + (64u << 10) + 4096u);
}

TEST(TraceFormatTest, ChecksumMismatchIsDataLossWithRecordAndOffset) {
  std::string path = TempPath("flip");
  WriteTrace(path, {MakeRecord(0), MakeRecord(1), MakeRecord(2)});
  std::string bytes = ReadFile(path);
  // Record 2 starts right after record 1; flip a payload byte inside record 2.
  std::string one;
  AppendFramedTraceRecord(MakeRecord(0), &one);
  size_t record2_offset = kTraceFileHeaderBytes + one.size();
  bytes[record2_offset + 20] ^= 0x5A;
  WriteFile(path, bytes);
  auto read = ReadAll(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status().message(),
              HasSubstr(absl::StrCat("record 2 at byte offset ", record2_offset)));
  EXPECT_THAT(read.status().message(), HasSubstr("checksum"));
}

TEST(TraceFormatTest, TruncatedTraceIsDataLossNamingTheOffset) {
  std::string path = TempPath("truncated");
  WriteTrace(path, {MakeRecord(0), MakeRecord(1)});
  std::string bytes = ReadFile(path);
  for (size_t cut = 1; cut < 30; ++cut) {  // cut the last record anywhere
    WriteFile(path, bytes.substr(0, bytes.size() - cut));
    auto read = ReadAll(path);
    ASSERT_FALSE(read.ok()) << "cut " << cut;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(read.status().message(), HasSubstr("record 2 at byte offset"));
    EXPECT_THAT(read.status().message(), HasSubstr("truncated"));
  }
}

TEST(TraceFormatTest, HugeCorruptLengthIsRejectedWithoutAllocating) {
  std::string path = TempPath("hugelen");
  std::string bytes(kTraceMagic);
  bytes += std::string("\x01\x00\x00\x00", 4);
  bytes += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9);  // ~2^63
  WriteFile(path, bytes);
  auto read = ReadAll(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status().message(), HasSubstr("byte offset 12"));
  EXPECT_THAT(read.status().message(), HasSubstr("exceeds the limit"));
}

std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

std::string TraceHeader() { return std::string(kTraceMagic) + std::string("\x01\x00\x00\x00", 4); }

TEST(TraceFormatTest, ALengthNearTwoToThe64IsRejectedNotWrappedAround) {
  // body_length + 4 wraps to 0..3 for these: an addition-style bounds check let them through.
  for (uint64_t back : {1, 2, 3, 4, 5, 100}) {
    const uint64_t length = ~uint64_t{0} - (back - 1);
    std::string path = TempPath("wraplen");
    WriteFile(path, TraceHeader() + Varint(length) + std::string(32, 'x'));
    auto read = ReadAll(path);
    ASSERT_FALSE(read.ok()) << length;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << length;
    EXPECT_THAT(read.status().message(), HasSubstr("exceeds the limit")) << length;
  }
}

TEST(TraceFormatTest, LineBreaksInTheRequestLinesAreRefusedWhenTheTraceIsLoaded) {
  struct Case {
    const char* field;
    void (*set)(TraceRecord*, const std::string&);
  };
  const Case cases[] = {
      {"method", [](TraceRecord* r, const std::string& v) { r->method = v; }},
      {"path", [](TraceRecord* r, const std::string& v) { r->path = v; }},
      {"header 2 name", [](TraceRecord* r, const std::string& v) { r->headers[1].first = v; }},
      {"header 1 value", [](TraceRecord* r, const std::string& v) { r->headers[0].second = v; }},
  };
  for (const Case& c : cases) {
    for (const std::string& bad : {std::string("a\r\nInjected: 1"), std::string("a\nb"),
                                   std::string("a\rb"), std::string("a\0b", 3)}) {
      TraceRecord record = MakeRecord(1);
      c.set(&record, bad);
      // Framed by hand: the writer refuses such records.
      std::string bytes = TraceHeader();
      AppendFramedTraceRecord(MakeRecord(0), &bytes);
      AppendFramedTraceRecord(record, &bytes);
      std::string path = TempPath("crlf");
      WriteFile(path, bytes);
      absl::StatusOr<TraceSummary> summary = SummarizeTrace(path);
      ASSERT_FALSE(summary.ok()) << c.field;
      EXPECT_THAT(summary.status().message(), HasSubstr("record 2 at byte offset")) << c.field;
      EXPECT_THAT(summary.status().message(), HasSubstr(c.field));
      EXPECT_THAT(summary.status().message(), HasSubstr("CR, LF or NUL"));

      auto writer = TraceWriter::Create(TempPath("crlf-writer"));
      ASSERT_TRUE(writer.ok());
      absl::Status appended = (*writer)->Append(record);
      EXPECT_EQ(appended.code(), absl::StatusCode::kInvalidArgument) << c.field;
      EXPECT_THAT(appended.message(), HasSubstr(c.field));
    }
  }
  // The payload is opaque bytes: line breaks there are data.
  TraceRecord record = MakeRecord(0);
  record.payload = "line 1\r\nline 2\0";
  std::string path = TempPath("crlf-payload");
  WriteTrace(path, {record});
  EXPECT_TRUE(SummarizeTrace(path).ok());
}

TEST(TraceFormatTest, ASpanPastTheLimitIsDataLoss) {
  std::vector<TraceRecord> records = {MakeRecord(0), MakeRecord(1), MakeRecord(2)};
  records[1].interarrival_us = uint64_t{1} << 63;
  records[2].interarrival_us = uint64_t{1} << 63;  // the sum wraps to 0
  std::string path = TempPath("span");
  WriteTrace(path, records);
  absl::StatusOr<TraceSummary> summary = SummarizeTrace(path);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(summary.status().message(), HasSubstr("record 2"));
}

TEST(TraceFormatTest, GarbageAfterTheLastRecordIsReported) {
  std::string path = TempPath("garbage");
  WriteTrace(path, {MakeRecord(0)});
  WriteFile(path, ReadFile(path) + "not a record at all, just text appended by mistake");
  auto read = ReadAll(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status().message(), HasSubstr("record 2"));

  // The error is sticky (the position is lost) until Rewind starts over.
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceRecord r;
  EXPECT_TRUE(*(*reader)->Next(&r));
  absl::Status first = (*reader)->Next(&r).status();
  EXPECT_EQ((*reader)->Next(&r).status(), first);
  ASSERT_TRUE((*reader)->Rewind().ok());
  EXPECT_TRUE(*(*reader)->Next(&r));
}

TEST(TraceFormatTest, EveryFlippedByteAndEveryTruncationGivesAClearErrorNeverACrash) {
  std::string path = TempPath("fuzz");
  std::vector<TraceRecord> records = {MakeRecord(0), MakeRecord(1, 40)};
  WriteTrace(path, records);
  const std::string good = ReadFile(path);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {0x01, 0xFF}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      WriteFile(path, bad);
      auto read = ReadAll(path);
      // A flip is never silently accepted as different data.
      if (read.ok()) {
        EXPECT_EQ(*read, records) << "byte " << i;
        continue;
      }
      EXPECT_TRUE(read.status().code() == absl::StatusCode::kDataLoss ||
                  read.status().code() == absl::StatusCode::kInvalidArgument)
          << "byte " << i << ": " << read.status();
      if (i >= kTraceFileHeaderBytes) {
        EXPECT_THAT(read.status().message(), HasSubstr("byte offset")) << "byte " << i;
      }
    }
  }
  for (size_t length = 0; length < good.size(); ++length) {
    WriteFile(path, good.substr(0, length));
    auto read = ReadAll(path);
    bool at_record_boundary = false;
    std::string prefix;
    size_t boundary = kTraceFileHeaderBytes;
    for (size_t r = 0; r <= records.size(); ++r) {
      if (length == boundary) at_record_boundary = true;
      if (r < records.size()) {
        prefix.clear();
        AppendFramedTraceRecord(records[r], &prefix);
        boundary += prefix.size();
      }
    }
    // Cut exactly between records: a shorter valid trace. Anywhere else: an error.
    EXPECT_EQ(read.ok(), at_record_boundary) << "length " << length << ": " << read.status();
  }
}

TEST(TraceFormatTest, ForeignFilesAndVersionsAreInvalidArgument) {
  std::string path = TempPath("foreign");
  WriteFile(path, "{\"timestamp\": 1}\n");
  auto reader = TraceReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("not a Vanguard trace"));

  WriteFile(path, std::string(kTraceMagic) + std::string("\x02\x00\x00\x00", 4));
  reader = TraceReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("unsupported trace format version 2"));

  WriteFile(path, std::string(kTraceMagic) + "\x01");
  reader = TraceReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);

  EXPECT_EQ(TraceReader::Open(TempPath("does-not-exist")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(TraceFormatTest, ABufferReadsLikeTheFileItHolds) {
  std::string path = TempPath("buffer");
  std::vector<TraceRecord> records = {MakeRecord(0), MakeRecord(1, 300), MakeRecord(2)};
  WriteTrace(path, records);
  TraceReader::Options options;
  options.buffer_bytes = 64;  // record 2 is larger than the buffer
  auto reader = TraceReader::FromBuffer("in-memory", ReadFile(path), options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  TraceRecord r;
  for (int lap = 0; lap < 2; ++lap) {
    for (const TraceRecord& expected : records) {
      absl::StatusOr<bool> got = (*reader)->Next(&r);
      ASSERT_TRUE(got.ok() && *got) << got.status();
      EXPECT_EQ(r, expected);
    }
    EXPECT_FALSE(*(*reader)->Next(&r));
    ASSERT_TRUE((*reader)->Rewind().ok());
  }

  std::string bytes = ReadFile(path);
  bytes.resize(bytes.size() - 3);
  reader = TraceReader::FromBuffer("in-memory", bytes, options);
  ASSERT_TRUE(reader.ok());
  absl::Status error;
  while (true) {
    absl::StatusOr<bool> got = (*reader)->Next(&r);
    if (!got.ok()) {
      error = got.status();
      break;
    }
    ASSERT_TRUE(*got) << "a truncated buffer ended cleanly";
  }
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(error.message(), HasSubstr("in-memory: record 3"));
  EXPECT_EQ(TraceReader::FromBuffer("x", "not a trace", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TraceFormatTest, WriterRejectsRecordsBeyondTheLimitsNamingTheField) {
  auto writer = TraceWriter::Create(TempPath("limits"));
  ASSERT_TRUE(writer.ok());
  TraceRecord r = MakeRecord(0);
  r.model = std::string(kMaxTraceFieldBytes + 1, 'm');
  absl::Status s = (*writer)->Append(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("model"));
  r = MakeRecord(0);
  r.headers.resize(kMaxTraceHeaders + 1);
  EXPECT_THAT((*writer)->Append(r).message(), HasSubstr("headers"));
}

TEST(TraceFormatTest, SummaryGivesTheRecordedRate) {
  std::string path = TempPath("summary");
  std::vector<TraceRecord> records;
  for (int i = 0; i < 11; ++i) {
    TraceRecord r = MakeRecord(i);
    r.interarrival_us = i == 0 ? 123456 : 20'000;  // the first gap is ignored
    records.push_back(r);
  }
  WriteTrace(path, records);
  auto summary = SummarizeTrace(path);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->records, 11);
  EXPECT_EQ(summary->span_us, 200'000u);
  EXPECT_DOUBLE_EQ(summary->recorded_rate_qps(), 50.0);
}

}  // namespace
}  // namespace vanguard::replayer
