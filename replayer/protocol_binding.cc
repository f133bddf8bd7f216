// Protocol wiring; see protocol_binding.h. Any thread.
#include "replayer/protocol_binding.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "replayer/protocols/kserve_grpc_transport.h"
#include "replayer/protocols/openai_stream.h"
#include "replayer/trace/trace_request_source.h"

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
  if (config.schedule == v1::SCHEDULE_TRACE && config.trace_path.empty()) {
    return absl::InvalidArgumentError("trace_path: SCHEDULE_TRACE needs a trace file");
  }
  ProtocolBinding binding;
  // What to send: the recorded trace when there is one, else the protocol's template.
  if (!config.trace_path.empty()) {
    absl::StatusOr<RequestSourceFactory> trace = OpenTraceSourceFactory(config.trace_path);
    if (!trace.ok()) return trace.status();
    binding.sources = *std::move(trace);
  }
  switch (config.protocol) {
    case v1::PROTOCOL_KSERVE_V2_REST:
    case v1::PROTOCOL_HTTP:
      if (!binding.sources) binding.sources = SyntheticHttpBinding(config).sources;
      return binding;
    case v1::PROTOCOL_OPENAI_COMPLETIONS:
    case v1::PROTOCOL_OPENAI_CHAT: {
      if (!binding.sources) {
        absl::StatusOr<RequestSourceFactory> sources =
            OpenAiTemplateSourceFactory(config.protocol, config.model_name, config.request_body);
        if (!sources.ok()) return sources.status();
        binding.sources = *std::move(sources);
      }
      binding.handlers = OpenAiStreamHandlerFactory();
      return binding;
    }
    case v1::PROTOCOL_KSERVE_V2_GRPC: {
      if (!binding.sources) {
        absl::StatusOr<RequestSourceFactory> sources =
            KServeGrpcTemplateSourceFactory(config.model_name, config.request_body);
        if (!sources.ok()) return sources.status();
        binding.sources = *std::move(sources);
      }
      absl::StatusOr<AsyncTransportFactory> transport =
          KServeGrpcTransportFactory(config.target_url, config.connect_to);
      if (!transport.ok()) return transport.status();
      binding.transport = *std::move(transport);
      return binding;
    }
    default:
      return absl::UnimplementedError(absl::StrCat("protocol: ", v1::Protocol_Name(config.protocol),
                                                   " is not supported by this replayer"));
  }
}

}  // namespace vanguard::replayer
