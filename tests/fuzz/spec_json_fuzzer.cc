// Fuzzes the reading of a submitter's test spec: protobuf JSON (the CLI's --spec_file, the
// same mapping the orchestrator stores) into a v1::TestSpec, then the orchestrator's checks
// of it (ValidateTestSpec, ValidateTestTargets without a policy). Input: a TestSpec in JSON.
//
// Contract checked: never throws or crashes; a refused spec is INVALID_ARGUMENT naming a
// "spec." field, in a bounded message (a controller URL's refusal holds no kSecretMarker
// from its credentials, path or query); an accepted spec round-trips unchanged through the
// orchestrator's stored JSON (ProtoToJson / ProtoFromJson) and through the CLI's printed
// JSON, and the copy is accepted again.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/validation.h"
#include "tests/fuzz/fuzz_harnesses.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "spec_json";

// The host of a controller URL as the reader of an error may see it: between "://" (or the
// start) and the first '/', '?' or '#', after the last '@' (credentials are not the host).
std::string_view UrlHost(std::string_view url) {
  if (size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find_first_of("/?#"));
  if (size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  return url;
}

absl::Status Validate(const v1::TestSpec& spec) {
  absl::Status status = ValidateTestSpec(spec);
  if (!status.ok()) return status;
  status = ValidateTestTargets(spec, nullptr);
  if (!status.ok()) {
    // validation.h: a target's error names its host:port, never its path, query or
    // credentials.
    const v1::DirectControllerStrategy& c = spec.direct_controller();
    const std::string_view url = c.has_json_url() ? c.json_url() : c.prometheus_url();
    if (UrlHost(url).find(kSecretMarker) == std::string_view::npos) {
      VANGUARD_FUZZ_CHECK(kName, status.message().find(kSecretMarker) == std::string::npos);
    }
  }
  return status;
}

bool Same(const v1::TestSpec& a, const v1::TestSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

int FuzzSpecJson(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  v1::TestSpec spec;
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;  // as the CLI reads --spec_file
  if (!google::protobuf::util::JsonStringToMessage(json, &spec, strict).ok()) return 0;

  const absl::Status valid = Validate(spec);
  if (!valid.ok()) {
    VANGUARD_FUZZ_CHECK(kName, valid.code() == absl::StatusCode::kInvalidArgument);
    VANGUARD_FUZZ_CHECK(kName, absl::StartsWith(valid.message(), "spec."));
    VANGUARD_FUZZ_CHECK(kName, valid.message().size() <= 1024);
    return 0;
  }

  absl::StatusOr<std::string> stored = ProtoToJson(spec);
  VANGUARD_FUZZ_CHECK(kName, stored.ok());
  v1::TestSpec from_stored;
  VANGUARD_FUZZ_CHECK(kName, ProtoFromJson(*stored, &from_stored).ok());
  VANGUARD_FUZZ_CHECK(kName, Same(spec, from_stored));
  VANGUARD_FUZZ_CHECK(kName, Validate(from_stored).ok());

  std::string printed;
  VANGUARD_FUZZ_CHECK(kName, google::protobuf::util::MessageToJsonString(spec, &printed).ok());
  v1::TestSpec from_printed;
  VANGUARD_FUZZ_CHECK(
      kName, google::protobuf::util::JsonStringToMessage(printed, &from_printed, strict).ok());
  VANGUARD_FUZZ_CHECK(kName, Same(spec, from_printed));
  return 0;
}

}  // namespace vanguard::fuzz
