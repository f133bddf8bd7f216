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
// Inter-arrival times come from consecutive timestamps (a line earlier than the previous one
// gets 0 and is counted as out of order). Bad lines are skipped and reported with their
// 1-based line number and the reason; blank lines are ignored. The log is streamed; a line
// longer than max_line_bytes is reported, not loaded.
//
//   ASSIGN_OR_RETURN(JsonlConversionReport report,
//                    ConvertJsonlLogToTrace("requests.jsonl", "requests.vtr", {}));
//
// Runs on the calling thread.
#ifndef VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_
#define VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {

struct JsonlConversionOptions {
  // Protocol for lines that have neither "protocol" nor "path".
  std::string default_protocol = std::string(kTraceProtocolKServeV2Rest);
  size_t max_line_bytes = kMaxTracePayloadBytes * 2;
  // How many bad lines the report keeps in detail (all are counted).
  size_t max_reported_bad_lines = 100;
};

struct JsonlBadLine {
  int64_t line_number = 0;  // 1-based
  std::string reason;
};

struct JsonlConversionReport {
  int64_t lines_read = 0;
  int64_t records_written = 0;
  int64_t bad_lines = 0;
  int64_t out_of_order_lines = 0;
  std::vector<JsonlBadLine> bad_line_details;  // the first max_reported_bad_lines
};

// Parses one log line into *record (interarrival_us left 0) and its timestamp in µs since
// the epoch. INVALID_ARGUMENT naming the field on a bad line.
absl::Status ParseJsonlLogLine(std::string_view line, const JsonlConversionOptions& options,
                               TraceRecord* record, int64_t* timestamp_us);

// Converts the log at input_path into a trace at output_path. Fails (NOT_FOUND, ...) only if
// a file cannot be opened/written; bad lines are in the report.
absl::StatusOr<JsonlConversionReport> ConvertJsonlLogToTrace(const std::string& input_path,
                                                             const std::string& output_path,
                                                             const JsonlConversionOptions& options);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_JSONL_LOG_CONVERTER_H_
