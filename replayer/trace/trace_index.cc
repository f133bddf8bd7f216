// Writing and reading the trace index (see trace_index.h and docs/trace-format.md).
#include "replayer/trace/trace_index.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace vanguard::replayer {
namespace {

// Entries Validate reads at once (64 KiB), and a temporary index's write batch.
constexpr size_t kEntriesPerRead = 4096;
// Entries ReadEntries reads at once (on the event loop's stack: 1 KiB).
constexpr size_t kEntriesPerPread = 64;

// The low `bytes` bytes of `value`, little-endian.
void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}
void PutFixed64(uint64_t value, std::string* out) { PutLittleEndian(value, 8, out); }

uint64_t GetLittleEndian(const char* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  return value;
}
uint64_t GetFixed64(const char* data) { return GetLittleEndian(data, 8); }

void PutEntry(const TraceIndexEntry& entry, std::string* out) {
  PutFixed64(entry.record_offset, out);
  PutFixed64(entry.arrival_us, out);
}

TraceIndexEntry GetEntry(const char* bytes) {
  return {.record_offset = GetFixed64(bytes), .arrival_us = GetFixed64(bytes + 8)};
}

std::string IndexHeader() {
  std::string header(kTraceIndexMagic);
  PutLittleEndian(kTraceIndexVersion, 4, &header);
  return header;
}

// The trailer without its last field: the CRC-32C of the header and these bytes.
std::string TrailerFields(const TraceSummary& summary, uint64_t trace_bytes, uint32_t entries_crc) {
  std::string fields;
  PutFixed64(static_cast<uint64_t>(summary.records), &fields);
  PutFixed64(summary.span_us, &fields);
  PutFixed64(summary.payload_bytes, &fields);
  PutFixed64(trace_bytes, &fields);
  PutLittleEndian(entries_crc, 4, &fields);
  return fields;
}

uint32_t TrailerCrc(std::string_view fields) {
  return TraceCrc32cExtend(TraceCrc32c(IndexHeader()), fields);
}

}  // namespace

std::string TraceIndexPath(const std::string& trace_path) {
  return absl::StrCat(trace_path, ".idx");
}

// ---- TraceIndexWriter ----

TraceIndexWriter::TraceIndexWriter(std::string trace_path, std::string index_path,
                                   std::string temp_path, std::FILE* file)
    : trace_path_(std::move(trace_path)),
      index_path_(std::move(index_path)),
      temp_path_(std::move(temp_path)),
      file_(file) {}

TraceIndexWriter::~TraceIndexWriter() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  ::unlink(temp_path_.c_str());
}

absl::StatusOr<std::unique_ptr<TraceIndexWriter>> TraceIndexWriter::Create(std::string trace_path) {
  std::string index_path = TraceIndexPath(trace_path);
  std::string temp_path = absl::StrCat(index_path, ".tmp");
  std::FILE* file = std::fopen(temp_path.c_str(), "wb");
  if (file == nullptr)
    return TraceFileError(errno, absl::StrCat("cannot create trace index ", temp_path));
  std::unique_ptr<TraceIndexWriter> writer(new TraceIndexWriter(
      std::move(trace_path), std::move(index_path), std::move(temp_path), file));
  writer->pending_ = IndexHeader();
  return writer;
}

absl::Status TraceIndexWriter::Add(uint64_t record_offset, const TraceRecord& record) {
  if (file_ == nullptr) return absl::FailedPreconditionError("trace index writer is finished");
  if (!span_error_.ok()) return span_error_;
  span_error_ = AddToTraceSummary(trace_path_, record, &summary_);
  RETURN_IF_ERROR(span_error_);
  const size_t before = pending_.size();
  PutEntry({.record_offset = record_offset, .arrival_us = summary_.span_us}, &pending_);
  entries_crc_ = TraceCrc32cExtend(entries_crc_, std::string_view(pending_).substr(before));
  if (pending_.size() >= kEntriesPerRead * kTraceIndexEntryBytes) return WritePending();
  return absl::OkStatus();
}

absl::Status TraceIndexWriter::WritePending() {
  if (std::fwrite(pending_.data(), 1, pending_.size(), file_) != pending_.size()) {
    return TraceFileError(errno, absl::StrCat("cannot write trace index ", temp_path_));
  }
  pending_.clear();
  return absl::OkStatus();
}

absl::Status TraceIndexWriter::Finish(uint64_t trace_bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError("trace index writer is finished");
  if (!span_error_.ok()) {
    std::fclose(file_);
    file_ = nullptr;
    ::unlink(temp_path_.c_str());
    return span_error_;
  }
  const std::string fields = TrailerFields(summary_, trace_bytes, entries_crc_);
  pending_.append(fields);
  PutLittleEndian(TrailerCrc(fields), 4, &pending_);
  absl::Status written = WritePending();
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (written.ok() && closed != 0)
    written = TraceFileError(errno, absl::StrCat("cannot close trace index ", temp_path_));
  if (written.ok() && std::rename(temp_path_.c_str(), index_path_.c_str()) != 0)
    written =
        TraceFileError(errno, absl::StrCat("cannot rename ", temp_path_, " to ", index_path_));
  if (!written.ok()) ::unlink(temp_path_.c_str());
  return written;
}

absl::StatusOr<TraceSummary> WriteTraceIndex(const std::string& trace_path) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(trace_path));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceIndexWriter> index, TraceIndexWriter::Create(trace_path));
  TraceRecord record;
  while (true) {
    const uint64_t offset = reader->offset();
    ASSIGN_OR_RETURN(bool got, reader->Next(&record));
    if (!got) break;
    RETURN_IF_ERROR(index->Add(offset, record));
  }
  RETURN_IF_ERROR(index->Finish(reader->offset()));
  return index->summary();
}

// ---- TraceIndex ----

TraceIndex::TraceIndex(std::string path, int fd, std::string memory)
    : path_(std::move(path)), fd_(fd), memory_(std::move(memory)) {}

TraceIndex::~TraceIndex() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::unique_ptr<TraceIndex>> TraceIndex::Open(const std::string& index_path) {
  int fd = ::open(index_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return TraceFileError(errno, absl::StrCat("cannot open trace index ", index_path));
  std::unique_ptr<TraceIndex> index(new TraceIndex(index_path, fd, ""));
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return TraceFileError(errno, absl::StrCat("cannot stat trace index ", index_path));
  RETURN_IF_ERROR(index->ReadHeaderAndTrailer(static_cast<uint64_t>(st.st_size)));
  return index;
}

absl::StatusOr<std::unique_ptr<TraceIndex>> TraceIndex::FromBuffer(std::string name,
                                                                   std::string bytes) {
  const uint64_t size = bytes.size();
  std::unique_ptr<TraceIndex> index(new TraceIndex(std::move(name), -1, std::move(bytes)));
  RETURN_IF_ERROR(index->ReadHeaderAndTrailer(size));
  return index;
}

absl::Status TraceIndex::ReadAt(uint64_t offset, size_t n, char* dst) {
  if (fd_ < 0) {
    if (offset > memory_.size() || n > memory_.size() - offset)
      return Corrupt(offset, absl::StrCat("truncated: needs ", n, " bytes"));
    std::memcpy(dst, memory_.data() + offset, n);
    return absl::OkStatus();
  }
  size_t have = 0;
  while (have < n) {
    ssize_t got = ::pread(fd_, dst + have, n - have, static_cast<off_t>(offset + have));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return TraceFileError(errno, absl::StrCat("cannot read trace index ", path_));
    if (got == 0) return Corrupt(offset, absl::StrCat("truncated: needs ", n, " bytes"));
    have += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::Status TraceIndex::Corrupt(uint64_t offset, absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(path_, ": byte offset ", offset, ": ", what));
}

absl::Status TraceIndex::ReadHeaderAndTrailer(uint64_t file_bytes) {
  char header[kTraceIndexHeaderBytes];
  const size_t header_bytes = std::min<uint64_t>(file_bytes, kTraceIndexHeaderBytes);
  RETURN_IF_ERROR(ReadAt(0, header_bytes, header));
  if (header_bytes < kTraceIndexMagic.size() ||
      std::string_view(header, kTraceIndexMagic.size()) != kTraceIndexMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_,
                     " is not a Vanguard trace index: bad magic at byte offset 0 (expected "
                     "\"VGTRIDX\\n\")"));
  }
  if (file_bytes < kTraceIndexHeaderBytes + kTraceIndexTrailerBytes) {
    return Corrupt(
        0, absl::StrCat("truncated: ", file_bytes, " bytes, shorter than a header (",
                        kTraceIndexHeaderBytes, ") and a trailer (", kTraceIndexTrailerBytes, ")"));
  }
  if (std::string_view(header, kTraceIndexHeaderBytes) != IndexHeader()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": unsupported trace index version at byte offset 8 (this reader supports version ",
        kTraceIndexVersion, ")"));
  }
  const uint64_t trailer_offset = file_bytes - kTraceIndexTrailerBytes;
  char trailer[kTraceIndexTrailerBytes];
  RETURN_IF_ERROR(ReadAt(trailer_offset, kTraceIndexTrailerBytes, trailer));
  const std::string_view fields(trailer, kTraceIndexTrailerBytes - 4);
  if (GetLittleEndian(trailer + fields.size(), 4) != TrailerCrc(fields)) {
    return Corrupt(trailer_offset, "trailer checksum mismatch (truncated or not an index?)");
  }
  const uint64_t records = GetFixed64(trailer);
  // Division, not multiplication: a corrupt count near 2^64 must not wrap around.
  const uint64_t entry_bytes = trailer_offset - kTraceIndexHeaderBytes;
  if (entry_bytes % kTraceIndexEntryBytes != 0 || records != entry_bytes / kTraceIndexEntryBytes) {
    return Corrupt(trailer_offset, absl::StrCat("record count ", records, " does not match the ",
                                                entry_bytes, " bytes of entries"));
  }
  summary_.records = static_cast<int64_t>(records);
  summary_.span_us = GetFixed64(trailer + 8);
  summary_.payload_bytes = GetFixed64(trailer + 16);
  trace_bytes_ = GetFixed64(trailer + 24);
  entries_crc_ = static_cast<uint32_t>(GetLittleEndian(trailer + 32, 4));
  if (summary_.span_us > kMaxTraceSpanUs) {
    return Corrupt(trailer_offset + 8,
                   absl::StrCat("span ", summary_.span_us, " us exceeds ", kMaxTraceSpanUs, " us"));
  }
  if (trace_bytes_ < kTraceFileHeaderBytes) {
    return Corrupt(trailer_offset + 24,
                   absl::StrCat("trace size ", trace_bytes_, " is shorter than a trace header"));
  }
  return absl::OkStatus();
}

absl::Status TraceIndex::CheckEntry(int64_t i, const TraceIndexEntry& entry) const {
  const uint64_t at = kTraceIndexHeaderBytes + static_cast<uint64_t>(i) * kTraceIndexEntryBytes;
  if (entry.record_offset < kTraceFileHeaderBytes || entry.record_offset >= trace_bytes_) {
    return Corrupt(at, absl::StrCat("entry ", i + 1, ": record offset ", entry.record_offset,
                                    " is outside the trace's records [", kTraceFileHeaderBytes,
                                    ", ", trace_bytes_, ")"));
  }
  if (entry.arrival_us > summary_.span_us) {
    return Corrupt(at, absl::StrCat("entry ", i + 1, ": arrival offset ", entry.arrival_us,
                                    " us is past the span, ", summary_.span_us, " us"));
  }
  return absl::OkStatus();
}

absl::Status TraceIndex::CheckRange(int64_t first, int64_t count) const {
  if (first < 0 || count < 0 || first > records() || count > records() - first) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": entries ", first + 1, "..", first + count,
                                              " are not all among its ", records()));
  }
  return absl::OkStatus();
}

absl::Status TraceIndex::ReadEntryRun(int64_t first, int64_t count, char* bytes) {
  RETURN_IF_ERROR(CheckRange(first, count));
  return ReadAt(kTraceIndexHeaderBytes + static_cast<uint64_t>(first) * kTraceIndexEntryBytes,
                static_cast<size_t>(count) * kTraceIndexEntryBytes, bytes);
}

absl::StatusOr<TraceIndexEntry> TraceIndex::Entry(int64_t i, const char* bytes) const {
  const TraceIndexEntry entry = GetEntry(bytes);
  RETURN_IF_ERROR(CheckEntry(i, entry));
  return entry;
}

absl::Status TraceIndex::ReadEntries(int64_t first, int64_t count, TraceIndexEntry* out) {
  RETURN_IF_ERROR(CheckRange(first, count));
  char bytes[kEntriesPerPread * kTraceIndexEntryBytes];
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min<int64_t>(count - done, kEntriesPerPread);
    RETURN_IF_ERROR(ReadEntryRun(first + done, n, bytes));
    for (int64_t k = 0; k < n; ++k) {
      ASSIGN_OR_RETURN(out[done + k], Entry(first + done + k, bytes + k * kTraceIndexEntryBytes));
    }
    done += n;
  }
  return absl::OkStatus();
}

absl::Status TraceIndex::Validate() {
  std::vector<char> bytes(kEntriesPerRead * kTraceIndexEntryBytes);
  uint32_t crc = 0;
  TraceIndexEntry previous;
  for (int64_t i = 0; i < records();) {
    const int64_t n = std::min<int64_t>(records() - i, kEntriesPerRead);
    const uint64_t at = kTraceIndexHeaderBytes + static_cast<uint64_t>(i) * kTraceIndexEntryBytes;
    const size_t length = static_cast<size_t>(n) * kTraceIndexEntryBytes;
    RETURN_IF_ERROR(ReadAt(at, length, bytes.data()));
    crc = TraceCrc32cExtend(crc, std::string_view(bytes.data(), length));
    for (int64_t k = 0; k < n; ++k, ++i) {
      const TraceIndexEntry entry = GetEntry(bytes.data() + k * kTraceIndexEntryBytes);
      RETURN_IF_ERROR(CheckEntry(i, entry));
      const uint64_t entry_at = at + static_cast<uint64_t>(k) * kTraceIndexEntryBytes;
      if (i == 0 && (entry.record_offset != kTraceFileHeaderBytes || entry.arrival_us != 0)) {
        return Corrupt(entry_at, "entry 1: the first record is not at byte offset 12, arrival 0");
      }
      if (i > 0 && (entry.record_offset <= previous.record_offset ||
                    entry.arrival_us < previous.arrival_us)) {
        return Corrupt(entry_at,
                       absl::StrCat("entry ", i + 1, ": record or arrival offset goes backwards"));
      }
      previous = entry;
    }
  }
  if (crc != entries_crc_) {
    return Corrupt(kTraceIndexHeaderBytes, absl::StrCat("entries checksum mismatch (stored ",
                                                        entries_crc_, ", computed ", crc, ")"));
  }
  if (records() > 0 ? previous.arrival_us != summary_.span_us : summary_.span_us != 0) {
    return Corrupt(kTraceIndexHeaderBytes, "the last arrival offset is not the span");
  }
  if (records() == 0 && trace_bytes_ != kTraceFileHeaderBytes) {
    return Corrupt(kTraceIndexHeaderBytes, "no entries for a trace that holds records");
  }
  return absl::OkStatus();
}

}  // namespace vanguard::replayer
