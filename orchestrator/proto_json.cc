// Proto <-> jsonb and timestamp conversions; see proto_json.h. Any thread may call.
#include "orchestrator/proto_json.h"

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace vanguard {

absl::StatusOr<std::string> ProtoToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot encode ", message.GetTypeName(), " as JSON: ", status.ToString()));
  }
  return json;
}

absl::Status ProtoFromJson(absl::string_view json, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("stored ", message->GetTypeName(), " is not valid JSON: ", status.ToString()));
  }
  return absl::OkStatus();
}

google::protobuf::Timestamp TimestampFromMicros(int64_t micros) {
  google::protobuf::Timestamp ts;
  int64_t seconds = micros / 1'000'000;
  int64_t rest = micros % 1'000'000;
  if (rest < 0) {
    rest += 1'000'000;
    --seconds;
  }
  ts.set_seconds(seconds);
  ts.set_nanos(static_cast<int32_t>(rest * 1000));
  return ts;
}

double DurationToSeconds(const google::protobuf::Duration& d) {
  return static_cast<double>(d.seconds()) + static_cast<double>(d.nanos()) / 1e9;
}

google::protobuf::Duration DurationFromSeconds(double seconds) {
  google::protobuf::Duration d;
  double whole = std::trunc(seconds);
  d.set_seconds(static_cast<int64_t>(whole));
  d.set_nanos(static_cast<int32_t>(std::llround((seconds - whole) * 1e9)));
  if (d.nanos() >= 1'000'000'000 || d.nanos() <= -1'000'000'000) {
    d.set_seconds(d.seconds() + d.nanos() / 1'000'000'000);
    d.set_nanos(d.nanos() % 1'000'000'000);
  }
  return d;
}

absl::Duration FromProtoDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

google::protobuf::Duration ToProtoDuration(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  out.set_seconds(nanos / 1'000'000'000);
  out.set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
  return out;
}

}  // namespace vanguard
