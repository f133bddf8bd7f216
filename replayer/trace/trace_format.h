// The Vanguard trace format (version 1, specified in docs/trace-format.md): a recorded
// sequence of requests, each with its inter-arrival time, protocol, model, method/path, a few
// headers and the payload bytes. TraceWriter appends records; TraceReader streams them back
// with memory bounded by its buffer plus the largest single record, however large the file.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, TraceWriter::Create("t.vtr"));
//   RETURN_IF_ERROR(writer->Append(record));
//   RETURN_IF_ERROR(writer->Close());
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open("t.vtr"));
//   TraceRecord record;  // reused: its strings keep their capacity between records
//   while (true) {
//     ASSIGN_OR_RETURN(bool got, reader->Next(&record));
//     if (!got) break;   // end of trace; reader->Rewind() starts over
//   }
//
// Layout: an 8-byte magic "VGTRACE\n", a 4-byte little-endian version (1), then records,
// each `varint body_length | body | crc32c(body) little-endian`. TraceWriter::Close also
// writes the trace's index beside it (trace_index.h), which lets TraceReader::Seek go
// straight to a record. Corruption is reported as
// DATA_LOSS naming the file, the record number and its byte offset; it never crashes and
// never allocates more than max_record_bytes for a record. A trace is outside input (a
// submitter names it), so a record whose method, path or a header name or value holds CR,
// LF or NUL — bytes that would end a line of the HTTP request it becomes and let the trace
// add headers or requests — is refused the same way, when the trace is loaded.
//
// Writer and reader are single-threaded: one thread owns each object.
#ifndef VANGUARD_REPLAYER_TRACE_TRACE_FORMAT_H_
#define VANGUARD_REPLAYER_TRACE_TRACE_FORMAT_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vanguard::replayer {

inline constexpr std::string_view kTraceMagic = "VGTRACE\n";
inline constexpr uint32_t kTraceFormatVersion = 1;
inline constexpr size_t kTraceFileHeaderBytes = 12;  // magic + version
// Limits a reader enforces so that a corrupt length can never make it allocate without bound.
inline constexpr size_t kMaxTracePayloadBytes = 64 << 20;
inline constexpr size_t kMaxTraceRecordBytes = kMaxTracePayloadBytes + (1 << 20);
inline constexpr size_t kMaxTraceHeaders = 64;
inline constexpr size_t kMaxTraceFieldBytes = 16 << 10;  // protocol, model, method, path, header
// The longest recorded span SummarizeTrace accepts (sum of inter-arrival times): replay
// offsets are int64 microseconds, and no recording lasts 100 years.
inline constexpr uint64_t kMaxTraceSpanUs = uint64_t{100} * 365 * 24 * 3600 * 1'000'000;

// Protocol names a record may carry (free-form strings in the file; these are the known ones).
inline constexpr std::string_view kTraceProtocolHttp = "http";
inline constexpr std::string_view kTraceProtocolKServeV2Rest = "kserve_v2_rest";
inline constexpr std::string_view kTraceProtocolKServeV2Grpc = "kserve_v2_grpc";
inline constexpr std::string_view kTraceProtocolOpenAiCompletions = "openai_completions";
inline constexpr std::string_view kTraceProtocolOpenAiChat = "openai_chat";

struct TraceRecord {
  // Microseconds since the previous request arrived (0 for the first record).
  uint64_t interarrival_us = 0;
  std::string protocol;  // one of kTraceProtocol*, or another name for plain HTTP variants
  std::string model;
  std::string method;  // "POST", "GET", ...; empty for gRPC
  std::string path;    // "/v2/models/m/infer", "/inference.GRPCInferenceService/ModelInfer"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload;  // the request body bytes, exactly as sent

  bool operator==(const TraceRecord&) const = default;
};

// INVALID_ARGUMENT naming the field if `record` exceeds the format's limits or its method,
// path or a header holds CR, LF or NUL.
absl::Status ValidateTraceRecord(const TraceRecord& record);

// Appends the framed record (length, body, checksum) to *out. The record must be valid.
void AppendFramedTraceRecord(const TraceRecord& record, std::string* out);

// Decodes a record body (the bytes between the length and the checksum) into *record,
// reusing its storage. INVALID_ARGUMENT describing the first inconsistency or the first
// field ValidateTraceRecord would refuse.
absl::Status DecodeTraceRecordBody(std::string_view body, TraceRecord* record);

// CRC-32C (Castagnoli) of `data`, as stored after each record body.
uint32_t TraceCrc32c(std::string_view data);
// The CRC-32C of the bytes whose CRC-32C is `crc`, followed by `data` (0 for no bytes yet).
uint32_t TraceCrc32cExtend(uint32_t crc, std::string_view data);

// A failed file operation's errno as a status naming `what`: NOT_FOUND, PERMISSION_DENIED,
// RESOURCE_EXHAUSTED (no space), else UNKNOWN.
absl::Status TraceFileError(int error, absl::string_view what);

class TraceIndexWriter;  // trace_index.h

class TraceWriter {
 public:
  // Creates (truncating) `path` and writes the file header; removes an index of an earlier
  // trace at that path (TraceIndexPath). INVALID_ARGUMENT for an empty path; a filesystem
  // failure as the errno's code (NOT_FOUND, PERMISSION_DENIED, ...) with the path in the
  // message.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path);
  ~TraceWriter();  // closes (flushing) if Close() was not called

  // INVALID_ARGUMENT if the record breaks a limit; otherwise buffers it (FAILED_PRECONDITION
  // after Close()). The file is consistent up to the last record at every Flush().
  absl::Status Append(const TraceRecord& record);
  absl::Status Flush();
  // Closes the trace and writes its index (trace_index.h) beside it. A trace whose span
  // passes kMaxTraceSpanUs gets no index (readers reject it anyway); file errors.
  absl::Status Close();

  int64_t records_written() const { return records_written_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  TraceWriter(std::string path, std::FILE* file, std::unique_ptr<TraceIndexWriter> index);

  std::string path_;
  std::FILE* file_;
  std::unique_ptr<TraceIndexWriter> index_;
  std::string frame_;  // reused encoding buffer
  int64_t records_written_ = 0;
  uint64_t bytes_written_ = 0;
};

class TraceReader {
 public:
  struct Options {
    // Size of the read buffer; records larger than it are assembled in a separate buffer
    // that grows to the largest record seen (at most max_record_bytes).
    size_t buffer_bytes = 64 << 10;
    size_t max_record_bytes = kMaxTraceRecordBytes;
  };

  // NOT_FOUND if the file does not exist; INVALID_ARGUMENT if it is not a Vanguard trace
  // (bad magic) or has an unsupported version; DATA_LOSS if it is shorter than the header.
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                           Options options);
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path) {
    return Open(path, Options());
  }
  // The same reader over a trace held in memory (`bytes`, owned by the reader); `name`
  // stands for the path in errors. Errors as Open, but never NOT_FOUND. For callers that
  // already hold the bytes, and the fuzz target.
  static absl::StatusOr<std::unique_ptr<TraceReader>> FromBuffer(std::string name,
                                                                 std::string bytes,
                                                                 Options options);
  ~TraceReader();

  // Reads the next record into *record (reusing its storage). true: a record was read;
  // false: clean end of trace. DATA_LOSS with file, record number and byte offset if the
  // next record is truncated, too long, fails its checksum or does not decode; every later
  // call returns the same error until Rewind().
  absl::StatusOr<bool> Next(TraceRecord* record);

  // Starts over at the first record.
  absl::Status Rewind();

  // Positions the reader at the record that starts at byte `offset` (taken from the trace's
  // index), as record `record_index` + 1 of the trace, `record_bytes` long (length, body and
  // checksum). Makes no system call: the next Next() reads that record with one positioned
  // read (pread) of `record_bytes` and no read-ahead (two reads for a record larger than the
  // read buffer), so a reader that seeks reads only the records it is sent to. Clears a
  // sticky error like Rewind. INVALID_ARGUMENT for an offset inside the file header.
  absl::Status Seek(uint64_t offset, int64_t record_index, size_t record_bytes);

  // Byte offset of the next record to be read; records returned since Open/Rewind.
  uint64_t offset() const { return record_offset_; }
  int64_t records_read() const { return records_read_; }
  // The most memory the reader has held for file data at once (read buffer + the largest
  // assembled record), for checking that reading is bounded.
  size_t peak_buffered_bytes() const { return peak_buffered_bytes_; }
  // Totals since Open, for checking how much of a trace a reader touched: bytes read from the
  // file (or buffer) and records decoded.
  uint64_t bytes_read() const { return bytes_read_; }
  int64_t records_decoded() const { return records_decoded_; }

 private:
  TraceReader(std::string path, int fd, std::string memory, Options options);
  // Reads up to n bytes at the current position into dst (from the file, or from memory_
  // when there is no file); 0 at the end.
  absl::StatusOr<size_t> ReadSome(char* dst, size_t n);
  // Makes up to `n` (<= buffer size) unread bytes available in buffer_; returns how many are
  // (fewer than n only at end of file).
  absl::StatusOr<size_t> Fill(size_t n);
  // Consumes exactly n bytes, returning a view valid until the next read; fewer than n bytes
  // left in the file is DATA_LOSS (truncated).
  absl::StatusOr<std::string_view> Take(size_t n, absl::string_view what);
  void NotePeak();
  absl::Status Corrupt(absl::string_view what) const;
  absl::StatusOr<bool> ReadRecord(TraceRecord* record);

  std::string path_;
  int fd_;                    // -1: the trace is memory_
  std::string memory_;        // the whole trace, for a reader made by FromBuffer
  uint64_t read_offset_ = 0;  // byte offset in the file (or memory_) of the next read
  Options options_;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t end_ = 0;
  bool eof_ = false;
  // False after a Seek: Fill reads only what is asked for (at least seek_bytes_).
  bool read_ahead_ = true;
  size_t seek_bytes_ = 0;
  std::string record_buffer_;  // for records larger than the read buffer
  uint64_t record_offset_ = kTraceFileHeaderBytes;
  int64_t records_read_ = 0;
  size_t peak_buffered_bytes_ = 0;
  uint64_t bytes_read_ = 0;
  int64_t records_decoded_ = 0;
  absl::Status error_;  // sticky: the first corruption seen since Open/Rewind
};

// Streams the whole trace once (bounded memory) and returns its shape; the first corruption
// is returned as the reader reports it, and a span over kMaxTraceSpanUs is DATA_LOSS. Used to
// validate a trace before a step and to learn its recorded rate.
struct TraceSummary {
  int64_t records = 0;
  // Sum of the inter-arrival times of records 2..N (the first record's is ignored).
  uint64_t span_us = 0;
  uint64_t payload_bytes = 0;
  // Requests per second over the recorded span, (records - 1) / span; 0 if undefined.
  double recorded_rate_qps() const {
    return records > 1 && span_us > 0 ? (records - 1) * 1e6 / static_cast<double>(span_us) : 0;
  }
};
absl::StatusOr<TraceSummary> SummarizeTrace(const std::string& path);

// Adds `record`, the next record of the trace at `path`, to *summary. DATA_LOSS naming the
// record if it takes the span past kMaxTraceSpanUs (the summary is then unchanged).
absl::Status AddToTraceSummary(const std::string& path, const TraceRecord& record,
                               TraceSummary* summary);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_TRACE_FORMAT_H_
