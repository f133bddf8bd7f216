// Conversion between our protos and the JSON stored in jsonb columns (protobuf's JSON
// mapping with the .proto field names, the same JSON the CLI prints), and between Postgres
// timestamps (microseconds since the Unix epoch) and google.protobuf.Timestamp.
// Pure functions; any thread may call.
#ifndef VANGUARD_ORCHESTRATOR_PROTO_JSON_H_
#define VANGUARD_ORCHESTRATOR_PROTO_JSON_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/message.h"
#include "google/protobuf/timestamp.pb.h"

namespace vanguard {

// JSON with the .proto field names. Cannot fail for our messages; INTERNAL if it does.
absl::StatusOr<std::string> ProtoToJson(const google::protobuf::Message& message);

// Parses JSON written by ProtoToJson (or an older/newer build: unknown fields are ignored).
// INTERNAL on malformed JSON, since only we write these columns.
absl::Status ProtoFromJson(absl::string_view json, google::protobuf::Message* message);

google::protobuf::Timestamp TimestampFromMicros(int64_t micros);

// Duration as a number of milliseconds / seconds (for SQL intervals and double columns).
double DurationToSeconds(const google::protobuf::Duration& d);
google::protobuf::Duration DurationFromSeconds(double seconds);

// Between google.protobuf.Duration and absl::Duration (nanosecond precision both ways; a
// malformed proto Duration is the caller's to refuse first, see validation.h).
absl::Duration FromProtoDuration(const google::protobuf::Duration& d);
google::protobuf::Duration ToProtoDuration(absl::Duration d);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_PROTO_JSON_H_
