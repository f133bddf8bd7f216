// See http_request_kind.h.
#include "replayer/trace/http_request_kind.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string ModelFromJsonBody(std::string_view body) {
  if (body.empty() || body.front() != '{') return "";
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "";
  auto it = json.find("model");
  if (it == json.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

HttpRequestKind ClassifyHttpRequest(std::string_view path, std::string_view body) {
  std::string_view clean = path.substr(0, path.find('?'));
  std::vector<absl::string_view> parts = absl::StrSplit(Av(clean), '/', absl::SkipEmpty());
  if (parts.size() >= 4 && parts[0] == "v2" && parts[1] == "models" && parts.back() == "infer" &&
      (parts.size() == 4 || (parts.size() == 6 && parts[3] == "versions"))) {
    return {std::string(kTraceProtocolKServeV2Rest), std::string(parts[2])};
  }
  if (clean == DefaultPathFor(kTraceProtocolKServeV2Grpc, "")) {
    return {std::string(kTraceProtocolKServeV2Grpc), ""};
  }
  if (clean == "/v1/completions") {
    return {std::string(kTraceProtocolOpenAiCompletions), ModelFromJsonBody(body)};
  }
  if (clean == "/v1/chat/completions") {
    return {std::string(kTraceProtocolOpenAiChat), ModelFromJsonBody(body)};
  }
  return {std::string(kTraceProtocolHttp), ModelFromJsonBody(body)};
}

std::string DefaultPathFor(std::string_view protocol, std::string_view model) {
  if (protocol == kTraceProtocolKServeV2Rest)
    return absl::StrCat("/v2/models/", Av(model), "/infer");
  if (protocol == kTraceProtocolKServeV2Grpc) return "/inference.GRPCInferenceService/ModelInfer";
  if (protocol == kTraceProtocolOpenAiCompletions) return "/v1/completions";
  if (protocol == kTraceProtocolOpenAiChat) return "/v1/chat/completions";
  return "";
}

bool IsRecordedHeader(std::string_view name) {
  static constexpr std::array<std::string_view, 15> kDropped = {"connection",
                                                                "keep-alive",
                                                                "proxy-connection",
                                                                "transfer-encoding",
                                                                "te",
                                                                "trailer",
                                                                "upgrade",
                                                                "host",
                                                                "content-length",
                                                                "authorization",
                                                                "proxy-authorization",
                                                                "cookie",
                                                                "set-cookie",
                                                                "x-api-key",
                                                                "api-key"};
  std::string lower = absl::AsciiStrToLower(Av(name));
  for (std::string_view dropped : kDropped) {
    if (std::string_view(lower) == dropped) return false;
  }
  return !lower.empty();
}

}  // namespace vanguard::replayer
