// Fuzzes the trace reader (TraceReader::FromBuffer) on a trace held in memory. Input: a
// trace file. It is read twice: as is, and with every record's CRC-32C made valid (a fuzzer
// cannot forge checksums, so without the second pass it would never reach the record
// decoder). A 64-byte read buffer sends every record over 60 bytes through the path that
// assembles large records.
//
// Contract checked: never throws, crashes or over-reads; errors are DATA_LOSS or
// INVALID_ARGUMENT and stick until Rewind; every record returned passes ValidateTraceRecord
// (limits; no CR, LF or NUL in method, path or headers) and survives a write/read round trip;
// a Rewind reads the same records again.
//
// The trace index (trace_index.h): if the input holds the index magic "VGTRIDX\n", the bytes
// from there on are the trace's index (the seeds `*_indexed` are a trace and its .idx
// concatenated). The index is parsed as is and again with both its checksums made valid;
// an index that validates has the layout's counts and strictly increasing offsets inside the
// trace, and every entry sends a seeking reader to a record that reads or is DATA_LOSS.
#include <string>
#include <string_view>
#include <vector>

#include "replayer/trace/trace_format.h"
#include "replayer/trace/trace_index.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "trace_reader";
constexpr int kMaxRecords = 10'000;

using replayer::TraceIndex;
using replayer::TraceIndexEntry;
using replayer::TraceReader;
using replayer::TraceRecord;

// Parses a varint at `pos` of `bytes`; false if it is incomplete or over 10 bytes.
bool ReadVarint(const std::string& bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int i = 0; i < 10 && *pos < bytes.size(); ++i) {
    const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// `bytes` with the stored checksum of each whole record replaced by the right one.
std::string WithValidChecksums(std::string bytes) {
  size_t pos = replayer::kTraceFileHeaderBytes;
  uint64_t length = 0;
  while (pos < bytes.size() && ReadVarint(bytes, &pos, &length)) {
    if (bytes.size() - pos < 4 || length > bytes.size() - pos - 4) break;
    const uint32_t crc = replayer::TraceCrc32c(std::string_view(bytes).substr(pos, length));
    pos += length;
    for (int i = 0; i < 4; ++i) bytes[pos + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
    pos += 4;
  }
  return bytes;
}

void CheckRecord(const TraceRecord& record) {
  VANGUARD_FUZZ_CHECK(kName, replayer::ValidateTraceRecord(record).ok());
  std::string framed;
  replayer::AppendFramedTraceRecord(record, &framed);
  size_t pos = 0;
  uint64_t length = 0;
  VANGUARD_FUZZ_CHECK(kName, ReadVarint(framed, &pos, &length));
  VANGUARD_FUZZ_CHECK(kName, framed.size() == pos + length + 4);
  TraceRecord again;
  VANGUARD_FUZZ_CHECK(
      kName,
      replayer::DecodeTraceRecordBody(std::string_view(framed).substr(pos, length), &again).ok());
  VANGUARD_FUZZ_CHECK(kName, again == record);
}

// Reads to the end or the first error; returns how many records were read.
int ReadAll(TraceReader& reader, absl::Status* error) {
  TraceRecord record;
  int records = 0;
  while (records < kMaxRecords) {
    absl::StatusOr<bool> got = reader.Next(&record);
    if (!got.ok()) {
      *error = got.status();
      VANGUARD_FUZZ_CHECK(kName, got.status().code() == absl::StatusCode::kDataLoss);
      VANGUARD_FUZZ_CHECK(kName, reader.Next(&record).status() == got.status());  // sticky
      break;
    }
    if (!*got) break;
    CheckRecord(record);
    ++records;
  }
  return records;
}

void ReadTrace(std::string bytes) {
  TraceReader::Options options;
  options.buffer_bytes = 64;
  options.max_record_bytes = 1 << 20;  // the limit's logic, without 65 MiB allocations
  absl::StatusOr<std::unique_ptr<TraceReader>> reader =
      TraceReader::FromBuffer("fuzz.vtr", std::move(bytes), options);
  if (!reader.ok()) {
    VANGUARD_FUZZ_CHECK(kName, reader.status().code() == absl::StatusCode::kInvalidArgument ||
                                   reader.status().code() == absl::StatusCode::kDataLoss);
    return;
  }
  absl::Status first_error;
  const int first = ReadAll(**reader, &first_error);
  VANGUARD_FUZZ_CHECK(kName, (*reader)->Rewind().ok());
  absl::Status second_error;
  VANGUARD_FUZZ_CHECK(kName, ReadAll(**reader, &second_error) == first);
  VANGUARD_FUZZ_CHECK(kName, second_error == first_error);
}

void PutFixed32At(std::string* bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// `index` with its entries' and its trailer's CRC-32C made valid (when it is long enough to
// have both).
std::string WithValidIndexChecksums(std::string index) {
  using replayer::kTraceIndexHeaderBytes;
  using replayer::kTraceIndexTrailerBytes;
  if (index.size() < kTraceIndexHeaderBytes + kTraceIndexTrailerBytes) return index;
  const std::string_view view(index);
  const size_t trailer = index.size() - kTraceIndexTrailerBytes;
  PutFixed32At(
      &index, trailer + 32,
      replayer::TraceCrc32c(view.substr(kTraceIndexHeaderBytes, trailer - kTraceIndexHeaderBytes)));
  PutFixed32At(&index, index.size() - 4,
               replayer::TraceCrc32cExtend(replayer::TraceCrc32c(view.substr(0, 12)),
                                           view.substr(trailer, kTraceIndexTrailerBytes - 4)));
  return index;
}

// Sends a seeking reader over `trace` to every entry of a validated `index`.
void SeekEveryEntry(const std::string& trace, TraceIndex& index) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader =
      TraceReader::FromBuffer("fuzz.vtr", trace, {.buffer_bytes = 64, .max_record_bytes = 1 << 20});
  if (!reader.ok()) return;
  TraceIndexEntry entries[2];
  TraceRecord record;
  for (int64_t i = 0; i < index.records() && i < kMaxRecords; ++i) {
    const int64_t count = i + 1 < index.records() ? 2 : 1;
    VANGUARD_FUZZ_CHECK(kName, index.ReadEntries(i, count, entries).ok());
    const uint64_t end = count == 2 ? entries[1].record_offset : index.trace_bytes();
    VANGUARD_FUZZ_CHECK(kName, end > entries[0].record_offset);
    VANGUARD_FUZZ_CHECK(
        kName, (*reader)->Seek(entries[0].record_offset, i, end - entries[0].record_offset).ok());
    absl::StatusOr<bool> got = (*reader)->Next(&record);
    if (!got.ok()) {
      VANGUARD_FUZZ_CHECK(kName, got.status().code() == absl::StatusCode::kDataLoss);
    } else if (*got) {
      CheckRecord(record);
    }
  }
  VANGUARD_FUZZ_CHECK(kName, index.ReadEntries(index.records(), 1, entries).code() ==
                                 absl::StatusCode::kOutOfRange);
}

void ReadIndex(const std::string& trace, std::string bytes) {
  const uint64_t size = bytes.size();
  absl::StatusOr<std::unique_ptr<TraceIndex>> index =
      TraceIndex::FromBuffer("fuzz.vtr.idx", std::move(bytes));
  if (!index.ok()) {
    VANGUARD_FUZZ_CHECK(kName, index.status().code() == absl::StatusCode::kInvalidArgument ||
                                   index.status().code() == absl::StatusCode::kDataLoss);
    return;
  }
  VANGUARD_FUZZ_CHECK(
      kName,
      size == replayer::kTraceIndexHeaderBytes + replayer::kTraceIndexTrailerBytes +
                  static_cast<uint64_t>((*index)->records()) * replayer::kTraceIndexEntryBytes);
  const absl::Status valid = (*index)->Validate();
  if (!valid.ok()) {
    VANGUARD_FUZZ_CHECK(kName, valid.code() == absl::StatusCode::kDataLoss);
    return;
  }
  SeekEveryEntry(trace, **index);
}

}  // namespace

int FuzzTraceReader(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t index_at = bytes.find(replayer::kTraceIndexMagic);
  if (index_at != std::string::npos) {
    std::string index = bytes.substr(index_at);
    bytes.resize(index_at);
    ReadIndex(bytes, index);
    ReadIndex(bytes, WithValidIndexChecksums(std::move(index)));
  }
  ReadTrace(bytes);
  ReadTrace(WithValidChecksums(std::move(bytes)));
  return 0;
}

}  // namespace vanguard::fuzz
