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
#include <string>
#include <string_view>

#include "replayer/trace/trace_format.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "trace_reader";
constexpr int kMaxRecords = 10'000;

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

}  // namespace

int FuzzTraceReader(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  ReadTrace(bytes);
  ReadTrace(WithValidChecksums(std::move(bytes)));
  return 0;
}

}  // namespace vanguard::fuzz
