// See jsonl_log_converter.h.
#include "replayer/trace/jsonl_log_converter.h"

#include <errno.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "replayer/protocols/kserve_grpc_transport.h"
#include "replayer/trace/http_request_kind.h"

namespace vanguard::replayer {
namespace {

// Appends `bytes` with each byte other than printable ASCII as \xNN.
void AppendPrintable(std::string_view bytes, std::string* out) {
  for (char c : bytes) {
    if (c >= 0x20 && c < 0x7F) {
      out->push_back(c);
    } else {
      absl::StrAppend(out, "\\x", absl::Hex(static_cast<uint8_t>(c), absl::kZeroPad2));
    }
  }
}

// A field of the line as a reason may quote it: at most kMaxJsonlEchoBytes, printable.
std::string Echo(std::string_view field) {
  std::string out;
  AppendPrintable(field.substr(0, kMaxJsonlEchoBytes), &out);
  if (field.size() > kMaxJsonlEchoBytes) out.append("...");
  return out;
}

// `reason` as the report keeps it: printable, at most kMaxJsonlBadLineReasonBytes. Also
// bounds what other modules' messages (the KServe JSON reader's) quote of the line.
std::string BoundedReason(std::string_view reason) {
  std::string out;
  AppendPrintable(reason.substr(0, kMaxJsonlBadLineReasonBytes), &out);
  if (out.size() > kMaxJsonlBadLineReasonBytes || reason.size() > kMaxJsonlBadLineReasonBytes) {
    out.resize(kMaxJsonlBadLineReasonBytes - 3);
    out.append("...");
  }
  return out;
}

// Reads the next line of `in` (up to '\n' or the end) into *line, keeping at most `max`
// bytes and setting *too_long if it had more. False at the end of the input, or on a read
// error (then in.bad()).
bool ReadLine(std::istream& in, size_t max, std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  using Traits = std::istream::traits_type;
  std::streambuf* buffer = in.rdbuf();
  if (buffer == nullptr) return false;
  try {  // a filebuf throws on a read error
    Traits::int_type c = buffer->sbumpc();
    if (Traits::eq_int_type(c, Traits::eof())) return false;
    for (; !Traits::eq_int_type(c, Traits::eof()) && c != '\n'; c = buffer->sbumpc()) {
      if (line->size() < max) {
        line->push_back(Traits::to_char_type(c));
      } else {
        *too_long = true;
      }
    }
  } catch (...) {
    in.setstate(std::ios::badbit);
    return false;
  }
  return true;
}

// The deepest nesting of arrays and objects in `json`, brackets inside strings not counted
// (for text that is not JSON: some finite number).
size_t JsonNestingDepth(std::string_view json) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Timestamps lie in [the epoch, kMaxTimestampMs], so any two differ by less than 2^63 µs.
constexpr int64_t kMaxTimestampMs = 1'000'000'000'000'000;  // about the year 33658

absl::Status OutOfRange() {
  return absl::InvalidArgumentError(
      "field timestamp: out of range (1970-01-01T00:00:00Z to 1e15 epoch milliseconds)");
}

absl::StatusOr<int64_t> ParseTimestampUs(const nlohmann::json& value) {
  if (value.is_number()) {
    double ms = value.get<double>();
    if (!std::isfinite(ms) || ms < 0 || ms > kMaxTimestampMs) return OutOfRange();
    return static_cast<int64_t>(std::llround(ms * 1000.0));
  }
  if (value.is_string()) {
    absl::Time time;
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, value.get<std::string>(), &time, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("field timestamp: not RFC 3339 (", error, ")"));
    }
    // The same range as numbers: absl also parses "infinite-past", "infinite-future" and
    // years far beyond 9999, whose differences (the inter-arrival times) overflow int64.
    if (time < absl::UnixEpoch() || time > absl::FromUnixMillis(kMaxTimestampMs)) {
      return OutOfRange();
    }
    return absl::ToUnixMicros(time);
  }
  return absl::InvalidArgumentError(
      "field timestamp: must be an RFC 3339 string or a number of epoch milliseconds");
}

absl::StatusOr<std::string> OptionalString(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return absl::InvalidArgumentError(absl::StrCat("field ", field, ": must be a string"));
  return it->get<std::string>();
}

}  // namespace

absl::Status ParseJsonlLogLine(std::string_view line, const JsonlConversionOptions& options,
                               TraceRecord* record, int64_t* timestamp_us) {
  // nlohmann parses iteratively but serializes (the body) and the KServe reader flattens
  // recursively: a line of a million '[' would overflow the stack.
  if (JsonNestingDepth(line) > kMaxJsonlNestingDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("nested deeper than ", kMaxJsonlNestingDepth, " levels"));
  }
  nlohmann::json json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  if (!json.is_object()) return absl::InvalidArgumentError("not a JSON object");
  auto ts = json.find("timestamp");
  if (ts == json.end()) return absl::InvalidArgumentError("field timestamp: missing");
  ASSIGN_OR_RETURN(*timestamp_us, ParseTimestampUs(*ts));

  record->payload.clear();
  auto body = json.find("body");
  if (body != json.end() && !body->is_null()) {
    record->payload = body->is_string() ? body->get<std::string>() : body->dump();
  }
  if (record->payload.size() > kMaxTracePayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat("field body: ", record->payload.size(),
                                                   " bytes exceeds the limit of ",
                                                   kMaxTracePayloadBytes));
  }
  ASSIGN_OR_RETURN(record->method, OptionalString(json, "method"));
  if (record->method.empty()) record->method = "POST";
  ASSIGN_OR_RETURN(record->path, OptionalString(json, "path"));
  ASSIGN_OR_RETURN(record->protocol, OptionalString(json, "protocol"));
  ASSIGN_OR_RETURN(record->model, OptionalString(json, "model"));
  if (!record->path.empty()) {
    if (record->path.front() != '/')
      return absl::InvalidArgumentError("field path: must start with /");
    HttpRequestKind kind = ClassifyHttpRequest(record->path, record->payload);
    if (record->protocol.empty()) record->protocol = kind.protocol;
    if (record->model.empty()) record->model = kind.model;
  } else {
    if (record->protocol.empty()) record->protocol = options.default_protocol;
    if (record->model.empty()) {
      record->model =
          ClassifyHttpRequest(DefaultPathFor(record->protocol, ""), record->payload).model;
    }
    record->path = DefaultPathFor(record->protocol, record->model);
    if (record->path.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("field path: missing, and protocol \"",
                                                     Echo(record->protocol),
                                                     "\" has no default path"));
    }
  }
  if (record->model.empty() && record->protocol == kTraceProtocolKServeV2Rest) {
    return absl::InvalidArgumentError("field model: missing (and the path names none)");
  }
  if (record->protocol == kTraceProtocolKServeV2Grpc) {
    // gRPC replays send the payload as a serialized ModelInferRequest: convert the KServe v2
    // JSON body once here rather than on every replay.
    if (body == json.end() || !body->is_object()) {
      return absl::InvalidArgumentError(
          "field body: must be a KServe v2 JSON object for protocol kserve_v2_grpc");
    }
    absl::StatusOr<inference::ModelInferRequest> infer =
        ModelInferRequestFromKServeJson(record->model, record->payload);
    if (!infer.ok()) return infer.status();
    record->payload = infer->SerializeAsString();
    record->method.clear();
  }
  record->headers.clear();
  auto headers = json.find("headers");
  if (headers != json.end() && !headers->is_null()) {
    if (!headers->is_object())
      return absl::InvalidArgumentError("field headers: must be an object");
    for (auto it = headers->begin(); it != headers->end(); ++it) {
      if (!it.value().is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("field headers.", Echo(it.key()), ": value must be a string"));
      }
      if (!IsRecordedHeader(it.key())) continue;
      record->headers.emplace_back(it.key(), it.value().get<std::string>());
    }
  }
  return ValidateTraceRecord(*record);
}

absl::StatusOr<JsonlConversionReport> ConvertJsonlLog(
    std::istream& log, const JsonlConversionOptions& options,
    absl::FunctionRef<absl::Status(const TraceRecord&)> emit) {
  JsonlConversionReport report;
  auto bad_line = [&](int64_t line_number, absl::string_view reason) {
    ++report.bad_lines;
    if (report.bad_line_details.size() < options.max_reported_bad_lines) {
      report.bad_line_details.push_back(
          {line_number, BoundedReason(std::string_view(reason.data(), reason.size()))});
    }
  };
  std::string line;
  TraceRecord record;
  bool have_previous = false;
  int64_t previous_us = 0;
  int64_t line_number = 0;
  bool too_long = false;
  while (ReadLine(log, options.max_line_bytes, &line, &too_long)) {
    ++line_number;
    ++report.lines_read;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (too_long) {
      bad_line(line_number, absl::StrCat("line longer than ", options.max_line_bytes, " bytes"));
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) {
      --report.lines_read;  // blank lines are not requests
      continue;
    }
    int64_t timestamp_us = 0;
    absl::Status parsed = ParseJsonlLogLine(line, options, &record, &timestamp_us);
    if (!parsed.ok()) {
      bad_line(line_number, parsed.message());
      continue;
    }
    record.interarrival_us = 0;
    if (have_previous) {
      if (timestamp_us < previous_us) {
        ++report.out_of_order_lines;
      } else {
        record.interarrival_us = static_cast<uint64_t>(timestamp_us - previous_us);
      }
    }
    if (!have_previous || timestamp_us > previous_us) previous_us = timestamp_us;
    have_previous = true;
    RETURN_IF_ERROR(emit(record));
    ++report.records_written;
  }
  if (log.bad()) {
    return absl::UnknownError(absl::StrCat("read error after line ", line_number));
  }
  return report;
}

absl::StatusOr<JsonlConversionReport> ConvertJsonlLogToTrace(
    const std::string& input_path, const std::string& output_path,
    const JsonlConversionOptions& options) {
  if (input_path.empty()) return absl::InvalidArgumentError("input path is empty");
  errno = 0;
  std::ifstream input(input_path, std::ios::binary);
  if (!input.is_open()) {
    int error = errno;
    std::string message = absl::StrCat("cannot open log ", input_path, ": ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::UnknownError(message);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, TraceWriter::Create(output_path));
  absl::StatusOr<JsonlConversionReport> report = ConvertJsonlLog(
      input, options, [&](const TraceRecord& record) { return writer->Append(record); });
  if (!report.ok()) {
    if (input.bad()) {
      return absl::UnknownError(
          absl::StrCat("cannot read log ", input_path, ": ", report.status().message()));
    }
    return report.status();
  }
  RETURN_IF_ERROR(writer->Close());
  return report;
}

}  // namespace vanguard::replayer
