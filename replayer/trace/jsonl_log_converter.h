// Converting a plain JSON Lines request log into a Vanguard trace. Each line is one JSON
// object describing one request:
//
//   {"timestamp": "2026-11-29T16:00:00.125Z",      // RFC 3339, or a number: epoch ms
//    "model": "resnet",                             // optional if the path/body names it
//    "method": "POST", "path": "/v2/models/resnet/infer",   // optional (defaults by protocol)
//    "protocol": "kserve_v2_rest",                  // optional (default from path, or options)
//    "headers": {"content-type": "application/json"},       // optional, string values
//    "body": {"inputs": [...]}}                     // JSON value (sent compact) or a string
//
// For protocol "kserve_v2_grpc" the body must be a KServe v2 JSON object; it is stored as the
// serialized inference.ModelInferRequest the gRPC transport sends.
// A timestamp lies between the epoch and 1e15 epoch milliseconds. Inter-arrival times come
// from consecutive timestamps (a line earlier than the previous one gets 0 and is counted as
// out of order). Bad lines are skipped and reported with their 1-based line number and the
// reason; blank lines are ignored. The log is streamed; a line longer than max_line_bytes is
// reported, not loaded.
//
// The log is outside input (anyone's file): a line never crashes the converter whatever its
// types, numbers, times, bytes or encoding; every record it emits passes ValidateTraceRecord
// (so no CR, LF or NUL in method, path or headers); a reason is printable ASCII of at most
// kMaxJsonlBadLineReasonBytes, quoting at most kMaxJsonlEchoBytes of any one input field.
//
//   ASSIGN_OR_RETURN(JsonlConversionReport report,
//                    ConvertJsonlLogToTrace("requests.jsonl", "requests.vtr", {}));
//
//   std::istringstream log(text);  // or any std::istream
//   ASSIGN_OR_RETURN(JsonlConversionReport report,
//                    ConvertJsonlLog(log, {}, [&](const TraceRecord& r) {
//                      records.push_back(r);
//                      return absl::OkStatus();
//                    }));
//
// Runs on the calling thread.
#ifndef VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_
#define VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {

// A line whose arrays and objects nest deeper than this is a bad line.
inline constexpr size_t kMaxJsonlNestingDepth = 64;
// A bad line's reason is at most this long (longer ones are cut, ending "...").
inline constexpr size_t kMaxJsonlBadLineReasonBytes = 200;
// A reason quotes at most this many bytes of one field of the line (a header name, a
// protocol), bytes other than printable ASCII written as \xNN.
inline constexpr size_t kMaxJsonlEchoBytes = 32;

struct JsonlConversionOptions {
  // Protocol for lines that have neither "protocol" nor "path".
  std::string default_protocol = std::string(kTraceProtocolKServeV2Rest);
  size_t max_line_bytes = kMaxTracePayloadBytes * 2;
  // How many bad lines the report keeps in detail (all are counted).
  size_t max_reported_bad_lines = 100;
};

struct JsonlBadLine {
  int64_t line_number = 0;  // 1-based
  std::string reason;       // printable ASCII, at most kMaxJsonlBadLineReasonBytes
};

struct JsonlConversionReport {
  int64_t lines_read = 0;  // not counting blank lines: records_written + bad_lines
  int64_t records_written = 0;
  int64_t bad_lines = 0;
  int64_t out_of_order_lines = 0;
  std::vector<JsonlBadLine> bad_line_details;  // the first max_reported_bad_lines
};

// Parses one log line into *record (interarrival_us left 0) and its timestamp in µs since
// the epoch. INVALID_ARGUMENT naming the field on a bad line.
absl::Status ParseJsonlLogLine(std::string_view line, const JsonlConversionOptions& options,
                               TraceRecord* record, int64_t* timestamp_us);

// Converts the JSONL log read from `log` (one line in memory at a time), passing each good
// line's record, its interarrival_us set, to `emit`. Fails only with emit's first error, or
// UNKNOWN if the stream cannot be read; bad lines are in the report.
absl::StatusOr<JsonlConversionReport> ConvertJsonlLog(
    std::istream& log, const JsonlConversionOptions& options,
    absl::FunctionRef<absl::Status(const TraceRecord&)> emit);

// Converts the log at input_path into a trace at output_path (ConvertJsonlLog into a
// TraceWriter). Fails (NOT_FOUND, ...) only if a file cannot be opened/read/written; bad
// lines are in the report.
absl::StatusOr<JsonlConversionReport> ConvertJsonlLogToTrace(const std::string& input_path,
                                                             const std::string& output_path,
                                                             const JsonlConversionOptions& options);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_
