// Encoding, decoding and streaming of the Vanguard trace format (see trace_format.h and
// docs/trace-format.md). Single-threaded objects; the free functions are pure.
#include "replayer/trace/trace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "replayer/trace/trace_index.h"

namespace vanguard::replayer {
namespace {

constexpr size_t kMaxVarintBytes = 10;

std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void PutString(std::string_view s, std::string* out) {
  PutVarint(s.size(), out);
  out->append(s);
}

void PutFixed32(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint32_t GetFixed32(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return value;
}

// Parses a varint from the front of *in. Returns false if it is incomplete or longer than
// 10 bytes / overflows 64 bits.
bool GetVarint(std::string_view* in, uint64_t* value, size_t* consumed = nullptr) {
  uint64_t result = 0;
  for (size_t i = 0; i < kMaxVarintBytes && i < in->size(); ++i) {
    uint8_t byte = static_cast<uint8_t>((*in)[i]);
    if (i == kMaxVarintBytes - 1 && byte > 1) return false;  // would overflow 64 bits
    result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *value = result;
      if (consumed != nullptr) *consumed = i + 1;
      return true;
    }
  }
  return false;
}

absl::Status GetString(std::string_view* in, size_t limit, absl::string_view field,
                       std::string* out) {
  uint64_t length = 0;
  if (!GetVarint(in, &length))
    return absl::InvalidArgumentError(absl::StrCat("bad length of ", field));
  if (length > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " length ", length, " exceeds the limit of ", limit, " bytes"));
  }
  if (length > in->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " length ", length, " runs past the record body"));
  }
  out->assign(in->data(), length);
  in->remove_prefix(length);
  return absl::OkStatus();
}

// The fields that become lines of an HTTP request (method, path, header names and values)
// must not hold a byte that ends a line: the trace could add headers or whole requests.
absl::Status CheckSingleLine(absl::string_view field, absl::string_view value) {
  if (value.find_first_of(absl::string_view("\r\n\0", 3)) != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " holds a CR, LF or NUL byte (it would split the HTTP request)"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestLines(const TraceRecord& record) {
  RETURN_IF_ERROR(CheckSingleLine("method", record.method));
  RETURN_IF_ERROR(CheckSingleLine("path", record.path));
  for (size_t i = 0; i < record.headers.size(); ++i) {
    RETURN_IF_ERROR(
        CheckSingleLine(absl::StrCat("header ", i + 1, " name"), record.headers[i].first));
    RETURN_IF_ERROR(
        CheckSingleLine(absl::StrCat("header ", i + 1, " value"), record.headers[i].second));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TraceFileError(int error, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::UnknownError(message);
  }
}

uint32_t TraceCrc32cExtend(uint32_t crc, std::string_view data) {
  static const std::array<uint32_t, 256> kTable = MakeCrc32cTable();
  crc ^= 0xFFFFFFFFu;
  for (char c : data) crc = kTable[(crc ^ static_cast<uint8_t>(c)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t TraceCrc32c(std::string_view data) { return TraceCrc32cExtend(0, data); }

absl::Status ValidateTraceRecord(const TraceRecord& record) {
  auto check_field = [](absl::string_view name, const std::string& value) -> absl::Status {
    if (value.size() > kMaxTraceFieldBytes) {
      return absl::InvalidArgumentError(absl::StrCat("trace record field ", name, " is ",
                                                     value.size(), " bytes; the limit is ",
                                                     kMaxTraceFieldBytes));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check_field("protocol", record.protocol));
  RETURN_IF_ERROR(check_field("model", record.model));
  RETURN_IF_ERROR(check_field("method", record.method));
  RETURN_IF_ERROR(check_field("path", record.path));
  if (record.headers.size() > kMaxTraceHeaders) {
    return absl::InvalidArgumentError(absl::StrCat("trace record has ", record.headers.size(),
                                                   " headers; the limit is ", kMaxTraceHeaders));
  }
  for (const auto& [name, value] : record.headers) {
    RETURN_IF_ERROR(check_field("header name", name));
    RETURN_IF_ERROR(check_field("header value", value));
  }
  if (record.payload.size() > kMaxTracePayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat("trace record payload is ",
                                                   record.payload.size(), " bytes; the limit is ",
                                                   kMaxTracePayloadBytes));
  }
  return CheckRequestLines(record);
}

void AppendFramedTraceRecord(const TraceRecord& record, std::string* out) {
  std::string body;
  body.reserve(64 + record.payload.size());
  PutVarint(record.interarrival_us, &body);
  PutString(record.protocol, &body);
  PutString(record.model, &body);
  PutString(record.method, &body);
  PutString(record.path, &body);
  PutVarint(record.headers.size(), &body);
  for (const auto& [name, value] : record.headers) {
    PutString(name, &body);
    PutString(value, &body);
  }
  PutString(record.payload, &body);
  PutVarint(body.size(), out);
  out->append(body);
  PutFixed32(TraceCrc32c(body), out);
}

absl::Status DecodeTraceRecordBody(std::string_view body, TraceRecord* record) {
  if (!GetVarint(&body, &record->interarrival_us)) {
    return absl::InvalidArgumentError("bad interarrival_us varint");
  }
  RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "protocol", &record->protocol));
  RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "model", &record->model));
  RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "method", &record->method));
  RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "path", &record->path));
  uint64_t header_count = 0;
  if (!GetVarint(&body, &header_count)) return absl::InvalidArgumentError("bad header count");
  if (header_count > kMaxTraceHeaders) {
    return absl::InvalidArgumentError(
        absl::StrCat("header count ", header_count, " exceeds the limit of ", kMaxTraceHeaders));
  }
  record->headers.resize(header_count);
  for (auto& [name, value] : record->headers) {
    RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "header name", &name));
    RETURN_IF_ERROR(GetString(&body, kMaxTraceFieldBytes, "header value", &value));
  }
  RETURN_IF_ERROR(GetString(&body, kMaxTracePayloadBytes, "payload", &record->payload));
  // Bytes after the payload are fields added by a later minor revision; version 1 ignores them.
  return CheckRequestLines(*record);
}

// ---- TraceWriter ----

TraceWriter::TraceWriter(std::string path, std::FILE* file, std::unique_ptr<TraceIndexWriter> index)
    : path_(std::move(path)), file_(file), index_(std::move(index)) {}

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("trace output path is empty");
  // An index left from an earlier trace at this path would describe the wrong file.
  const std::string index_path = TraceIndexPath(path);
  if (::unlink(index_path.c_str()) != 0 && errno != ENOENT) {
    return TraceFileError(errno, absl::StrCat("cannot remove the old index ", index_path));
  }
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return TraceFileError(errno, absl::StrCat("cannot create trace ", path));
  absl::StatusOr<std::unique_ptr<TraceIndexWriter>> index = TraceIndexWriter::Create(path);
  if (!index.ok()) {
    std::fclose(file);
    return index.status();
  }
  std::unique_ptr<TraceWriter> writer(new TraceWriter(path, file, *std::move(index)));
  std::string header(kTraceMagic);
  PutFixed32(kTraceFormatVersion, &header);
  if (std::fwrite(header.data(), 1, header.size(), file) != header.size()) {
    return TraceFileError(errno, absl::StrCat("cannot write trace header to ", path));
  }
  writer->bytes_written_ = header.size();
  return writer;
}

TraceWriter::~TraceWriter() { (void)Close(); }

absl::Status TraceWriter::Append(const TraceRecord& record) {
  if (file_ == nullptr) return absl::FailedPreconditionError("trace writer is closed");
  RETURN_IF_ERROR(ValidateTraceRecord(record));
  frame_.clear();
  AppendFramedTraceRecord(record, &frame_);
  if (std::fwrite(frame_.data(), 1, frame_.size(), file_) != frame_.size()) {
    return TraceFileError(errno, absl::StrCat("cannot write trace ", path_));
  }
  const uint64_t offset = bytes_written_;
  ++records_written_;
  bytes_written_ += frame_.size();
  // DATA_LOSS: the span passed the limit, so the trace gets no index (readers reject it).
  absl::Status indexed = index_->Add(offset, record);
  if (!indexed.ok() && indexed.code() != absl::StatusCode::kDataLoss) return indexed;
  return absl::OkStatus();
}

absl::Status TraceWriter::Flush() {
  if (file_ == nullptr) return absl::FailedPreconditionError("trace writer is closed");
  if (std::fflush(file_) != 0)
    return TraceFileError(errno, absl::StrCat("cannot flush trace ", path_));
  return absl::OkStatus();
}

absl::Status TraceWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return TraceFileError(errno, absl::StrCat("cannot close trace ", path_));
  absl::Status indexed = index_->Finish(bytes_written_);
  index_.reset();
  // DATA_LOSS: the span is past the limit, so no index; every reader rejects the trace itself.
  if (indexed.code() == absl::StatusCode::kDataLoss) return absl::OkStatus();
  return indexed;
}

// ---- TraceReader ----

TraceReader::TraceReader(std::string path, int fd, std::string memory, Options options)
    : path_(std::move(path)),
      fd_(fd),
      memory_(std::move(memory)),
      options_(options),
      buffer_(options.buffer_bytes) {}

TraceReader::~TraceReader() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Options a reader can work with: a buffer that holds a record length, room for a checksum.
TraceReader::Options Sane(TraceReader::Options options) {
  options.buffer_bytes = std::max<size_t>(options.buffer_bytes, 64);
  options.max_record_bytes = std::max<size_t>(options.max_record_bytes, 4);
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                               Options options) {
  if (path.empty()) return absl::InvalidArgumentError("trace path is empty");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return TraceFileError(errno, absl::StrCat("cannot open trace ", path));
  std::unique_ptr<TraceReader> reader(new TraceReader(path, fd, "", Sane(options)));
  RETURN_IF_ERROR(reader->Rewind());
  return reader;
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::FromBuffer(std::string name,
                                                                     std::string bytes,
                                                                     Options options) {
  std::unique_ptr<TraceReader> reader(
      new TraceReader(std::move(name), -1, std::move(bytes), Sane(options)));
  RETURN_IF_ERROR(reader->Rewind());
  return reader;
}

absl::StatusOr<size_t> TraceReader::ReadSome(char* dst, size_t n) {
  if (fd_ < 0) {
    const size_t got =
        read_offset_ < memory_.size() ? std::min<uint64_t>(n, memory_.size() - read_offset_) : 0;
    std::memcpy(dst, memory_.data() + std::min<uint64_t>(read_offset_, memory_.size()), got);
    read_offset_ += got;
    bytes_read_ += got;
    return got;
  }
  while (true) {
    // pread at our own position: a Seek or Rewind is then no system call of its own.
    ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(read_offset_));
    if (got >= 0) {
      read_offset_ += static_cast<size_t>(got);
      bytes_read_ += static_cast<size_t>(got);
      return static_cast<size_t>(got);
    }
    if (errno != EINTR) return TraceFileError(errno, absl::StrCat("cannot read trace ", path_));
  }
}

absl::Status TraceReader::Rewind() {
  error_ = absl::OkStatus();
  read_offset_ = 0;
  begin_ = end_ = 0;
  eof_ = false;
  records_read_ = 0;
  record_offset_ = 0;
  // The header alone: a reader that goes on to Seek reads no record it is not sent to.
  read_ahead_ = false;
  seek_bytes_ = 0;
  ASSIGN_OR_RETURN(size_t available, Fill(kTraceFileHeaderBytes));
  read_ahead_ = true;
  std::string_view header(buffer_.data() + begin_, available);
  if (available < kTraceMagic.size() || header.substr(0, kTraceMagic.size()) != kTraceMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, " is not a Vanguard trace: bad magic at byte offset 0 (expected \"VGTRACE\\n\")"));
  }
  if (available < kTraceFileHeaderBytes) {
    return absl::DataLossError(absl::StrCat(path_, ": truncated file header (", available, " of ",
                                            kTraceFileHeaderBytes, " bytes)"));
  }
  uint32_t version = GetFixed32(header.substr(kTraceMagic.size()));
  if (version != kTraceFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": unsupported trace format version ",
                                                   version,
                                                   " at byte offset 8 (this reader "
                                                   "supports version ",
                                                   kTraceFormatVersion, ")"));
  }
  begin_ += kTraceFileHeaderBytes;
  record_offset_ = kTraceFileHeaderBytes;
  return absl::OkStatus();
}

absl::Status TraceReader::Seek(uint64_t offset, int64_t record_index, size_t record_bytes) {
  if (offset < kTraceFileHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": seek to byte offset ", offset, ", inside the file header"));
  }
  error_ = absl::OkStatus();
  read_offset_ = offset;
  begin_ = end_ = 0;
  eof_ = false;
  read_ahead_ = false;
  seek_bytes_ = record_bytes;
  record_offset_ = offset;
  records_read_ = record_index;
  return absl::OkStatus();
}

absl::StatusOr<size_t> TraceReader::Fill(size_t n) {
  if (end_ - begin_ >= n) return n;
  // Compact, then read until n bytes are there or the file ends.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (end_ < n && !eof_) {
    size_t want = buffer_.size() - end_;
    if (!read_ahead_) want = std::min(want, std::max(n, seek_bytes_) - end_);
    ASSIGN_OR_RETURN(size_t got, ReadSome(buffer_.data() + end_, want));
    if (got == 0) eof_ = true;
    end_ += got;
  }
  NotePeak();
  return std::min(n, end_ - begin_);
}

void TraceReader::NotePeak() {
  peak_buffered_bytes_ = std::max(peak_buffered_bytes_, buffer_.size() + record_buffer_.capacity());
}

absl::StatusOr<std::string_view> TraceReader::Take(size_t n, absl::string_view what) {
  if (n <= buffer_.size()) {
    ASSIGN_OR_RETURN(size_t available, Fill(n));
    if (available < n) {
      return Corrupt(absl::StrCat("truncated ", what, ": needs ", n, " bytes, the file has ",
                                  available, " left"));
    }
    std::string_view view(buffer_.data() + begin_, n);
    begin_ += n;
    return view;
  }
  // Larger than the read buffer: assemble it in record_buffer_ (bounded by max_record_bytes,
  // which the caller checked).
  record_buffer_.resize(n);
  size_t have = end_ - begin_;
  std::memcpy(record_buffer_.data(), buffer_.data() + begin_, have);
  begin_ = end_ = 0;
  while (have < n) {
    ASSIGN_OR_RETURN(size_t got, ReadSome(record_buffer_.data() + have, n - have));
    if (got == 0) {
      eof_ = true;
      return Corrupt(
          absl::StrCat("truncated ", what, ": needs ", n, " bytes, the file has ", have, " left"));
    }
    have += got;
  }
  NotePeak();
  return std::string_view(record_buffer_.data(), n);
}

absl::Status TraceReader::Corrupt(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(path_, ": record ", records_read_ + 1, " at byte offset ",
                                          record_offset_, ": ", what));
}

absl::StatusOr<bool> TraceReader::Next(TraceRecord* record) {
  // After an error the position is unknown: keep reporting it until Rewind().
  if (!error_.ok()) return error_;
  absl::StatusOr<bool> got = ReadRecord(record);
  if (!got.ok()) error_ = got.status();
  return got;
}

absl::StatusOr<bool> TraceReader::ReadRecord(TraceRecord* record) {
  ASSIGN_OR_RETURN(size_t available, Fill(kMaxVarintBytes));
  if (available == 0) return false;  // clean end: the previous record ended the file
  std::string_view head(buffer_.data() + begin_, available);
  uint64_t body_length = 0;
  size_t length_bytes = 0;
  if (!GetVarint(&head, &body_length, &length_bytes)) {
    return Corrupt(available < kMaxVarintBytes ? "truncated record length"
                                               : "malformed record length varint");
  }
  // Subtraction: body_length may be near 2^64, where body_length + 4 wraps around.
  if (body_length > options_.max_record_bytes - 4) {
    return Corrupt(absl::StrCat("record length ", body_length, " exceeds the limit of ",
                                options_.max_record_bytes, " bytes (corrupt length?)"));
  }
  begin_ += length_bytes;
  ASSIGN_OR_RETURN(std::string_view framed, Take(body_length + 4, "record"));
  std::string_view body = framed.substr(0, body_length);
  uint32_t stored_crc = GetFixed32(framed.substr(body_length));
  uint32_t actual_crc = TraceCrc32c(body);
  if (stored_crc != actual_crc) {
    return Corrupt(
        absl::StrCat("checksum mismatch (stored ", stored_crc, ", computed ", actual_crc, ")"));
  }
  absl::Status decoded = DecodeTraceRecordBody(body, record);
  if (!decoded.ok()) return Corrupt(decoded.message());
  record_offset_ += length_bytes + body_length + 4;
  ++records_read_;
  ++records_decoded_;
  return true;
}

absl::StatusOr<TraceSummary> SummarizeTrace(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  TraceSummary summary;
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool got, reader->Next(&record));
    if (!got) break;
    RETURN_IF_ERROR(AddToTraceSummary(path, record, &summary));
  }
  return summary;
}

absl::Status AddToTraceSummary(const std::string& path, const TraceRecord& record,
                               TraceSummary* summary) {
  if (summary->records > 0) {
    if (record.interarrival_us > kMaxTraceSpanUs - summary->span_us) {
      return absl::DataLossError(absl::StrCat(path, ": record ", summary->records + 1,
                                              " takes the recorded span past ", kMaxTraceSpanUs,
                                              " us (corrupt inter-arrival?)"));
    }
    summary->span_us += record.interarrival_us;
  }
  ++summary->records;
  summary->payload_bytes += record.payload.size();
  return absl::OkStatus();
}

}  // namespace vanguard::replayer
