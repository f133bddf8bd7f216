// Classifying an HTTP inference request (by path, and by body for OpenAI-style APIs) into the
// trace's protocol name and model, and choosing which headers a trace keeps. Shared by the
// JSONL converter and the recording proxy so both write the same records for the same
// request. Pure functions; any thread.
#ifndef VANGUARD_REPLAYER_TRACE_HTTP_REQUEST_KIND_H_
#define VANGUARD_REPLAYER_TRACE_HTTP_REQUEST_KIND_H_

#include <string>
#include <string_view>

namespace vanguard::replayer {

struct HttpRequestKind {
  std::string protocol;  // kTraceProtocol* name
  std::string model;     // empty if neither path nor body names one
};

// /v2/models/{m}[/versions/{v}]/infer -> kserve_v2_rest, model m;
// /v1/completions -> openai_completions and /v1/chat/completions -> openai_chat, model from
// the JSON body's "model"; /inference.GRPCInferenceService/ModelInfer -> kserve_v2_grpc (no
// model: it is inside the protobuf payload); anything else -> http (model from the body's "model"
// if any).
HttpRequestKind ClassifyHttpRequest(std::string_view path, std::string_view body);

// The default path for a protocol and model ("" when the protocol has no fixed path).
std::string DefaultPathFor(std::string_view protocol, std::string_view model);

// Whether a recorded request header is kept in a trace: end-to-end headers that shape the
// request (Content-Type, Accept, X-*, ...) are kept; hop-by-hop headers, Host and
// Content-Length (the replayer sets its own) and credentials (Authorization, Cookie,
// Proxy-Authorization, X-Api-Key) are not, so a trace never carries secrets.
bool IsRecordedHeader(std::string_view name);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_HTTP_REQUEST_KIND_H_
