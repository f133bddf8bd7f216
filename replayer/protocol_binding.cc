// Protocol wiring; see protocol_binding.h. Any thread.
#include "replayer/protocol_binding.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace vanguard::replayer {

ProtocolBinding SyntheticHttpBinding(const StepConfig& config) {
  std::string method = "POST";
  std::string path;
  std::string headers;
  if (config.protocol == v1::PROTOCOL_HTTP) {
    if (config.request_body.empty()) method = "GET";
    if (!config.request_body.empty()) headers = "Content-Type: application/json\r\n";
  } else {
    path = absl::StrCat("/v2/models/", config.model_name, "/infer");
    headers = "Content-Type: application/json\r\n";
  }
  std::string body = config.request_body;
  ProtocolBinding binding;
  binding.sources = [method, path, headers, body](
                        int, int) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
    return std::make_unique<TemplateRequestSource>(method, path, headers, body);
  };
  return binding;
}

absl::StatusOr<ProtocolBinding> BindProtocol(const StepConfig& config) {
  if (!config.trace_path.empty()) {
    return absl::UnimplementedError(
        "trace_path: trace replay is not wired into this build yet (replayer/trace)");
  }
  switch (config.protocol) {
    case v1::PROTOCOL_KSERVE_V2_REST:
    case v1::PROTOCOL_HTTP:
      if (config.schedule == v1::SCHEDULE_TRACE) {
        return absl::InvalidArgumentError("schedule: SCHEDULE_TRACE needs trace_path");
      }
      return SyntheticHttpBinding(config);
    default:
      return absl::UnimplementedError(
          absl::StrCat("protocol: ", v1::Protocol_Name(config.protocol),
                       " is not supported by this replayer build yet (PROTOCOL_KSERVE_V2_REST and "
                       "PROTOCOL_HTTP are)"));
  }
}

}  // namespace vanguard::replayer
