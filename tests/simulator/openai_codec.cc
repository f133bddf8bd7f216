// OpenAI-compatible completion bodies; see openai_codec.h. Pure; any thread.
#include "tests/simulator/openai_codec.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace vanguard::sim {
namespace {

using nlohmann::json;

constexpr absl::string_view kWords[] = {" the", " model", " serves", " tokens", " at",
                                        " a",   " known", " rate",   " under",  " load"};

json ChoiceFor(const CompletionRequest& request, int index,
               std::optional<absl::string_view> finish_reason) {
  json choice = {{"index", 0}};
  const std::string text(TokenText(index));
  if (request.chat) {
    json delta = {{"content", text}};
    if (index == 1) delta["role"] = "assistant";
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] =
      finish_reason.has_value() ? json(std::string(*finish_reason)) : json(nullptr);
  return choice;
}

void AppendEvent(const json& payload, std::string* out) {
  absl::StrAppend(out, "data: ", payload.dump(), "\n\n");
}

}  // namespace

absl::StatusOr<CompletionRequest> ParseCompletionRequest(absl::string_view body, bool chat) {
  const json root = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError("request body must be a JSON object");
  }
  CompletionRequest request;
  request.chat = chat;
  if (auto it = root.find("model"); it != root.end()) {
    if (!it->is_string()) return absl::InvalidArgumentError("model: must be a string");
    request.model = it->get<std::string>();
  }
  if (chat) {
    auto it = root.find("messages");
    if (it == root.end() || !it->is_array() || it->empty()) {
      return absl::InvalidArgumentError("messages: required, a non-empty array");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& message = (*it)[i];
      if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", i, "]: must be an object with a string role"));
      }
    }
  } else {
    auto it = root.find("prompt");
    if (it == root.end() || !(it->is_string() || it->is_array())) {
      return absl::InvalidArgumentError("prompt: required, a string or an array");
    }
  }
  if (auto it = root.find("stream"); it != root.end() && !it->is_null()) {
    if (!it->is_boolean()) return absl::InvalidArgumentError("stream: must be a boolean");
    request.stream = it->get<bool>();
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = root.find(key);
    if (it == root.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 1000000) {
      return absl::InvalidArgumentError(absl::StrCat(key, ": must be an integer in [1, 1000000]"));
    }
    request.max_tokens = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = root.find("stream_options"); it != root.end() && it->is_object()) {
    if (auto usage = it->find("include_usage"); usage != it->end() && usage->is_boolean()) {
      request.include_usage = usage->get<bool>();
    }
  }
  return request;
}

absl::string_view TokenText(int index) {
  constexpr int kCount = sizeof(kWords) / sizeof(kWords[0]);
  return kWords[((index - 1) % kCount + kCount) % kCount];
}

void AppendCompletionChunk(const CompletionRequest& request, absl::string_view id, int64_t created,
                           absl::string_view model, int index,
                           std::optional<absl::string_view> finish_reason, std::string* out) {
  json chunk = {{"id", std::string(id)},
                {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", std::string(model)},
                {"choices", json::array({ChoiceFor(request, index, finish_reason)})}};
  AppendEvent(chunk, out);
}

void AppendUsageChunk(const CompletionRequest& request, absl::string_view id, int64_t created,
                      absl::string_view model, int prompt_tokens, int completion_tokens,
                      std::string* out) {
  json chunk = {{"id", std::string(id)},
                {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", std::string(model)},
                {"choices", json::array()},
                {"usage",
                 {{"prompt_tokens", prompt_tokens},
                  {"completion_tokens", completion_tokens},
                  {"total_tokens", prompt_tokens + completion_tokens}}}};
  AppendEvent(chunk, out);
}

void AppendDoneEvent(std::string* out) { out->append("data: [DONE]\n\n"); }

std::string CompletionResponseJson(const CompletionRequest& request, absl::string_view id,
                                   int64_t created, absl::string_view model, int tokens,
                                   int prompt_tokens, absl::string_view finish_reason) {
  std::string text;
  for (int i = 1; i <= tokens; ++i) absl::StrAppend(&text, TokenText(i));
  json choice = {{"index", 0}, {"finish_reason", std::string(finish_reason)}};
  if (request.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json response = {{"id", std::string(id)},
                   {"object", request.chat ? "chat.completion" : "text_completion"},
                   {"created", created},
                   {"model", std::string(model)},
                   {"choices", json::array({choice})},
                   {"usage",
                    {{"prompt_tokens", prompt_tokens},
                     {"completion_tokens", tokens},
                     {"total_tokens", prompt_tokens + tokens}}}};
  return response.dump();
}

std::string OpenAiErrorJson(absl::string_view message, absl::string_view type, int code) {
  return json{
      {"error", {{"message", std::string(message)}, {"type", std::string(type)}, {"code", code}}}}
      .dump();
}

}  // namespace vanguard::sim
