// Fuzzes the JSONL request log converter (replayer::ConvertJsonlLog) on a log held in memory.
// Input: a JSONL log (wrong types, huge numbers, times out of order or out of range, CR/LF in
// headers, invalid UTF-8, ...). It is converted twice: with the default options, and with
// 256-byte lines, two reported bad lines and kserve_v2_grpc as the default protocol (so a
// line without a path reaches the KServe JSON to gRPC conversion).
//
// Contract checked: never throws or crashes, and never fails (the stream and the sink do
// not); every record emitted passes ValidateTraceRecord and survives a write/read round
// trip, the first with an inter-arrival of 0; the counts add up (lines read = records
// written + bad lines, out-of-order lines at most the records, details = the first
// max_reported_bad_lines bad lines, in line order, within the input's lines); each reason is
// non-empty printable ASCII of at most kMaxJsonlBadLineReasonBytes (so it quotes at most that
// much of the line).
#include <sstream>
#include <string>
#include <string_view>

#include "replayer/trace/jsonl_log_converter.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "jsonl_log";
using replayer::JsonlConversionOptions;
using replayer::JsonlConversionReport;
using replayer::TraceRecord;

void CheckRecord(const TraceRecord& record, int64_t index) {
  VANGUARD_FUZZ_CHECK(kName, replayer::ValidateTraceRecord(record).ok());
  if (index == 0) VANGUARD_FUZZ_CHECK(kName, record.interarrival_us == 0);
  std::string framed;
  replayer::AppendFramedTraceRecord(record, &framed);
  // The body sits between a varint length (1-10 bytes) and a 4-byte checksum.
  size_t varint = 0;
  while (varint < framed.size() && (static_cast<uint8_t>(framed[varint]) & 0x80) != 0) ++varint;
  ++varint;
  VANGUARD_FUZZ_CHECK(kName, framed.size() >= varint + 4);
  TraceRecord again;
  VANGUARD_FUZZ_CHECK(
      kName, replayer::DecodeTraceRecordBody(
                 std::string_view(framed).substr(varint, framed.size() - varint - 4), &again)
                 .ok());
  VANGUARD_FUZZ_CHECK(kName, again == record);
}

bool PrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

void CheckReport(const JsonlConversionReport& report, const JsonlConversionOptions& options,
                 int64_t emitted, int64_t input_lines) {
  VANGUARD_FUZZ_CHECK(kName, report.records_written == emitted);
  VANGUARD_FUZZ_CHECK(kName, report.lines_read == report.records_written + report.bad_lines);
  VANGUARD_FUZZ_CHECK(kName, report.lines_read <= input_lines);
  VANGUARD_FUZZ_CHECK(
      kName, report.out_of_order_lines >= 0 && report.out_of_order_lines <= report.records_written);
  VANGUARD_FUZZ_CHECK(kName,
                      report.bad_line_details.size() ==
                          std::min<size_t>(report.bad_lines, options.max_reported_bad_lines));
  int64_t previous = 0;
  for (const replayer::JsonlBadLine& bad : report.bad_line_details) {
    VANGUARD_FUZZ_CHECK(kName, bad.line_number > previous && bad.line_number <= input_lines);
    previous = bad.line_number;
    VANGUARD_FUZZ_CHECK(kName, !bad.reason.empty());
    VANGUARD_FUZZ_CHECK(kName, bad.reason.size() <= replayer::kMaxJsonlBadLineReasonBytes);
    VANGUARD_FUZZ_CHECK(kName, PrintableAscii(bad.reason));
  }
}

void Convert(std::string_view log, const JsonlConversionOptions& options) {
  std::istringstream in{std::string(log)};
  int64_t emitted = 0;
  absl::StatusOr<JsonlConversionReport> report =
      replayer::ConvertJsonlLog(in, options, [&](const TraceRecord& record) {
        CheckRecord(record, emitted++);
        return absl::OkStatus();
      });
  VANGUARD_FUZZ_CHECK(kName, report.ok());
  int64_t lines = 0;
  for (char c : log) lines += c == '\n';
  if (!log.empty() && log.back() != '\n') ++lines;
  CheckReport(*report, options, emitted, lines);
}

}  // namespace

int FuzzJsonlLog(const uint8_t* data, size_t size) {
  const std::string_view log(reinterpret_cast<const char*>(data), size);
  Convert(log, JsonlConversionOptions{});
  JsonlConversionOptions small;
  small.max_line_bytes = 256;
  small.max_reported_bad_lines = 2;
  small.default_protocol = std::string(replayer::kTraceProtocolKServeV2Grpc);
  Convert(log, small);
  return 0;
}

}  // namespace vanguard::fuzz
