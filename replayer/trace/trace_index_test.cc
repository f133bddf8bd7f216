// Tests of the trace index: the writer's index round-trips and matches the trace, an existing
// trace can be indexed, a reader can seek to a record through it, and a corrupt index (bad
// checksums, offsets outside the trace, offsets going backwards, a cut trailer, absurd counts)
// is refused with an error naming the file and position, never a crash.
#include "replayer/trace/trace_index.h"

#include <unistd.h>

#include <string>
#include <vector>

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

using testing::ReadFileBytes;
using testing::WriteFileBytes;

TraceRecord MakeRecord(int i) {
  TraceRecord r;
  r.interarrival_us = i == 0 ? 0 : 500 + static_cast<uint64_t>(i % 7) * 300;
  r.protocol = std::string(kTraceProtocolKServeV2Rest);
  r.model = "m";
  r.method = "POST";
  r.path = "/v2/models/m/infer";
  r.payload = std::string(10 + i % 13, 'a' + i % 26);
  return r;
}

std::vector<TraceRecord> WriteTrace(const std::string& path, int records) {
  std::vector<TraceRecord> written;
  auto writer = TraceWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < records; ++i) {
    written.push_back(MakeRecord(i));
    EXPECT_TRUE((*writer)->Append(written.back()).ok());
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return written;
}

void PutFixed64At(std::string* bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) (*bytes)[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

void PutFixed32At(std::string* bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// `index` with both checksums recomputed, as a forger would: what is left to catch an edit
// is the index's own consistency.
std::string Reseal(std::string index) {
  const size_t trailer = index.size() - kTraceIndexTrailerBytes;
  PutFixed32At(&index, trailer + 32,
               TraceCrc32c(std::string_view(index).substr(kTraceIndexHeaderBytes,
                                                          trailer - kTraceIndexHeaderBytes)));
  const uint32_t crc =
      TraceCrc32cExtend(TraceCrc32c(std::string_view(index).substr(0, kTraceIndexHeaderBytes)),
                        std::string_view(index).substr(trailer, kTraceIndexTrailerBytes - 4));
  PutFixed32At(&index, index.size() - 4, crc);
  return index;
}

absl::Status OpenAndValidate(std::string bytes) {
  auto index = TraceIndex::FromBuffer("t.vtr.idx", std::move(bytes));
  if (!index.ok()) return index.status();
  return (*index)->Validate();
}

TEST(TraceIndexTest, TheWritersIndexGivesEveryRecordsOffsetAndArrival) {
  const std::string path = TempPath("index_round_trip");
  const std::vector<TraceRecord> records = WriteTrace(path, 50);
  auto index = TraceIndex::Open(TraceIndexPath(path));
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_TRUE((*index)->Validate().ok());
  auto summary = SummarizeTrace(path);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ((*index)->records(), summary->records);
  EXPECT_EQ((*index)->summary().span_us, summary->span_us);
  EXPECT_EQ((*index)->summary().payload_bytes, summary->payload_bytes);
  EXPECT_EQ((*index)->trace_bytes(), ReadFileBytes(path).size());

  std::vector<TraceIndexEntry> entries(records.size());
  ASSERT_TRUE((*index)->ReadEntries(0, 50, entries.data()).ok());
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  uint64_t arrival = 0;
  TraceRecord record;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(entries[i].record_offset, (*reader)->offset()) << i;
    ASSERT_TRUE(*(*reader)->Next(&record));
    if (i > 0) arrival += record.interarrival_us;
    EXPECT_EQ(entries[i].arrival_us, arrival) << i;
  }
  TraceIndexEntry past;
  EXPECT_EQ((*index)->ReadEntries(50, 1, &past).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*index)->ReadEntries(-1, 1, &past).code(), absl::StatusCode::kOutOfRange);
}

TEST(TraceIndexTest, IndexingAnExistingTraceWritesTheSameIndexAsTheWriter) {
  const std::string path = TempPath("index_existing");
  WriteTrace(path, 20);
  const std::string by_writer = ReadFileBytes(TraceIndexPath(path));
  ASSERT_EQ(::unlink(TraceIndexPath(path).c_str()), 0);
  auto summary = WriteTraceIndex(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->records, 20);
  EXPECT_EQ(ReadFileBytes(TraceIndexPath(path)), by_writer);
  EXPECT_EQ(::access(absl::StrCat(TraceIndexPath(path), ".tmp").c_str(), F_OK), -1);

  // A corrupt trace is not indexed, and no half-written index is left behind.
  const std::string bad = TempPath("index_bad_trace");
  WriteFileBytes(bad, ReadFileBytes(path).substr(0, 100));
  ::unlink(TraceIndexPath(bad).c_str());
  EXPECT_EQ(WriteTraceIndex(bad).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(::access(TraceIndexPath(bad).c_str(), F_OK), -1);
  EXPECT_EQ(::access(absl::StrCat(TraceIndexPath(bad), ".tmp").c_str(), F_OK), -1);
}

TEST(TraceIndexTest, RewritingATraceRemovesItsOldIndexUntilClose) {
  const std::string path = TempPath("index_rewrite");
  WriteTrace(path, 5);
  auto writer = TraceWriter::Create(path);
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(TraceIndex::Open(TraceIndexPath(path)).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE((*writer)->Append(MakeRecord(0)).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto index = TraceIndex::Open(TraceIndexPath(path));
  ASSERT_TRUE(index.ok());
  EXPECT_EQ((*index)->records(), 1);
}

TEST(TraceIndexTest, ASeekingReaderReadsOnlyTheRecordItIsSentTo) {
  const std::string path = TempPath("index_seek");
  const std::vector<TraceRecord> records = WriteTrace(path, 30);
  auto index = TraceIndex::Open(TraceIndexPath(path));
  ASSERT_TRUE(index.ok());
  TraceIndexEntry entries[2];
  ASSERT_TRUE((*index)->ReadEntries(17, 2, entries).ok());
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  const uint64_t header_bytes = (*reader)->bytes_read();
  EXPECT_EQ(header_bytes, kTraceFileHeaderBytes);
  const size_t record_bytes = entries[1].record_offset - entries[0].record_offset;
  ASSERT_TRUE((*reader)->Seek(entries[0].record_offset, 17, record_bytes).ok());
  TraceRecord record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(record, records[17]);
  EXPECT_EQ((*reader)->offset(), entries[1].record_offset);
  EXPECT_EQ((*reader)->bytes_read() - header_bytes, record_bytes);
  EXPECT_EQ((*reader)->records_decoded(), 1);
  EXPECT_EQ((*reader)->Seek(3, 0, 10).code(), absl::StatusCode::kInvalidArgument);

  // An error after a seek names the record the index sent it to.
  std::string bytes = ReadFileBytes(path);
  bytes[entries[0].record_offset + 3] ^= 0x20;
  auto memory = TraceReader::FromBuffer("t.vtr", bytes, {});
  ASSERT_TRUE(memory.ok());
  ASSERT_TRUE((*memory)->Seek(entries[0].record_offset, 17, record_bytes).ok());
  absl::StatusOr<bool> got = (*memory)->Next(&record);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(),
              HasSubstr(absl::StrCat("record 18 at byte offset ", entries[0].record_offset)));
}

TEST(TraceIndexTest, BadChecksumsAreDataLossNamingTheFileAndOffset) {
  const std::string path = TempPath("index_crc");
  WriteTrace(path, 10);
  const std::string good = ReadFileBytes(TraceIndexPath(path));
  ASSERT_TRUE(OpenAndValidate(good).ok());

  std::string entry_flipped = good;
  entry_flipped[kTraceIndexHeaderBytes + 5 * kTraceIndexEntryBytes + 9] ^= 0x01;
  absl::Status status = OpenAndValidate(entry_flipped);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("t.vtr.idx: byte offset"));

  std::string trailer_flipped = good;
  trailer_flipped[good.size() - kTraceIndexTrailerBytes + 8] ^= 0x01;
  status = OpenAndValidate(trailer_flipped);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("trailer checksum mismatch"));
}

TEST(TraceIndexTest, EntriesThatDisagreeWithTheTraceAreRefusedEvenWithValidChecksums) {
  const std::string path = TempPath("index_forged");
  WriteTrace(path, 10);
  const std::string good = ReadFileBytes(TraceIndexPath(path));
  const size_t entry5 = kTraceIndexHeaderBytes + 5 * kTraceIndexEntryBytes;

  std::string past_eof = good;
  PutFixed64At(&past_eof, entry5, 1'000'000);
  absl::Status status = OpenAndValidate(Reseal(past_eof));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("entry 6: record offset 1000000 is outside"));

  std::string backwards = good;
  PutFixed64At(&backwards, entry5, kTraceFileHeaderBytes + 1);
  status = OpenAndValidate(Reseal(backwards));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("entry 6: record or arrival offset goes backwards"));

  std::string late_arrival = good;
  PutFixed64At(&late_arrival, entry5 + 8, uint64_t{1} << 62);
  status = OpenAndValidate(Reseal(late_arrival));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("past the span"));

  std::string first_moved = good;
  PutFixed64At(&first_moved, kTraceIndexHeaderBytes, kTraceFileHeaderBytes + 1);
  EXPECT_THAT(OpenAndValidate(Reseal(first_moved)).message(), HasSubstr("entry 1"));
}

TEST(TraceIndexTest, AbsurdCountsAndCutTrailersAreRefusedWithoutAllocating) {
  const std::string path = TempPath("index_counts");
  WriteTrace(path, 10);
  const std::string good = ReadFileBytes(TraceIndexPath(path));
  const size_t trailer = good.size() - kTraceIndexTrailerBytes;
  for (uint64_t count : {uint64_t{11}, uint64_t{1} << 60, ~uint64_t{0}, uint64_t{0}}) {
    std::string huge = good;
    PutFixed64At(&huge, trailer, count);
    absl::Status status = OpenAndValidate(Reseal(huge));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << count;
    EXPECT_THAT(status.message(), HasSubstr("does not match")) << count;
  }
  std::string cut = good.substr(0, good.size() - 7);
  EXPECT_EQ(OpenAndValidate(cut).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(OpenAndValidate(good.substr(0, 20)).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(OpenAndValidate("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenAndValidate("VGTRACE\nnot an index at all, a trace").code(),
            absl::StatusCode::kInvalidArgument);
  std::string version = good;
  version[8] = 2;
  EXPECT_THAT(OpenAndValidate(version).message(), HasSubstr("unsupported trace index version"));
}

TEST(TraceIndexTest, EveryFlippedByteAndEveryTruncationIsRefusedNeverACrash) {
  const std::string path = TempPath("index_every_byte");
  WriteTrace(path, 4);
  const std::string good = ReadFileBytes(TraceIndexPath(path));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string flipped = good;
    flipped[i] ^= 0x10;
    absl::Status status = OpenAndValidate(flipped);
    EXPECT_FALSE(status.ok()) << "byte " << i;
    EXPECT_TRUE(status.code() == absl::StatusCode::kDataLoss ||
                status.code() == absl::StatusCode::kInvalidArgument)
        << status;
  }
  for (size_t size = 0; size < good.size(); ++size) {
    EXPECT_FALSE(OpenAndValidate(good.substr(0, size)).ok()) << "size " << size;
  }
}

TEST(TraceIndexTest, AMissingIndexIsNotFound) {
  EXPECT_EQ(TraceIndex::Open(TempPath("no_such_index")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace vanguard::replayer
