// See openai_stream.h.
#include "replayer/protocols/openai_stream.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace vanguard::replayer {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status StreamError(absl::string_view error_class, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat("class=", error_class, "; ", detail));
}

}  // namespace

std::string_view OpenAiPath(OpenAiApi api) {
  return api == OpenAiApi::kChat ? kOpenAiChatPath : kOpenAiCompletionsPath;
}

absl::StatusOr<std::string> BuildOpenAiRequestBody(OpenAiApi api, std::string_view model,
                                                   std::string_view prompt, int max_tokens,
                                                   bool stream) {
  if (model.empty()) return absl::InvalidArgumentError("model_name: required for OpenAI requests");
  if (max_tokens < 1) return absl::InvalidArgumentError("max_tokens: must be >= 1");
  nlohmann::json body;
  body["model"] = std::string(model);
  if (api == OpenAiApi::kChat) {
    body["messages"] =
        nlohmann::json::array({{{"role", "user"}, {"content", std::string(prompt)}}});
  } else {
    body["prompt"] = std::string(prompt);
  }
  body["max_tokens"] = max_tokens;
  body["stream"] = stream;
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

std::string_view StreamErrorClass(const absl::Status& status) {
  std::string_view message(status.message().data(), status.message().size());
  if (message.substr(0, 6) != "class=") return "";
  message.remove_prefix(6);
  return message.substr(0, message.find(';'));
}

void OpenAiStreamDecoder::Begin(int http_status) {
  http_status_ = http_status;
  sse_.Reset();
  content_chunks_ = 0;
  usage_tokens_.reset();
  saw_done_ = false;
  finish_reason_.clear();
  error_ = absl::OkStatus();
}

absl::StatusOr<int> OpenAiStreamDecoder::Feed(std::string_view piece) {
  if (http_status_ < 200 || http_status_ >= 300) return 0;
  if (!error_.ok()) return error_;
  completed_in_piece_ = 0;
  absl::Status parsed = sse_.Feed(piece, [this](const SseEvent& event) { OnEvent(event); });
  if (!parsed.ok() && error_.ok()) error_ = StreamError("stream_sse_syntax", parsed.message());
  if (!error_.ok()) return error_;
  return completed_in_piece_;
}

void OpenAiStreamDecoder::OnEvent(const SseEvent& event) {
  if (!error_.ok()) return;
  if (saw_done_) {
    error_ = StreamError("stream_data_after_done", "an event arrived after data: [DONE]");
    return;
  }
  if (event.data == "[DONE]") {
    saw_done_ = true;
    return;
  }
  nlohmann::json chunk = nlohmann::json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (!chunk.is_object()) {
    error_ = StreamError("stream_bad_json", absl::StrCat("event data is not a JSON object: \"",
                                                         Av(event.data.substr(0, 80)), "\""));
    return;
  }
  if (auto error = chunk.find("error"); error != chunk.end() && !error->is_null()) {
    std::string message =
        error->is_object() && error->contains("message") && (*error)["message"].is_string()
            ? (*error)["message"].get<std::string>()
            : error->dump();
    error_ = StreamError("stream_error_event", absl::StrCat("server streamed an error: ", message));
    return;
  }
  bool has_usage = false;
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    if (auto tokens = usage->find("completion_tokens");
        tokens != usage->end() && tokens->is_number_integer()) {
      usage_tokens_ = tokens->get<int64_t>();
      has_usage = true;
    }
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) {
    if (!has_usage) {
      error_ = StreamError("stream_no_choices", "a chunk has neither choices nor usage");
    }
    return;
  }
  bool content = false;
  for (const nlohmann::json& choice : *choices) {
    if (!choice.is_object()) continue;
    if (auto text = choice.find("text");
        text != choice.end() && text->is_string() && !text->get_ref<const std::string&>().empty()) {
      content = true;
    }
    if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
      if (auto c = delta->find("content");
          c != delta->end() && c->is_string() && !c->get_ref<const std::string&>().empty()) {
        content = true;
      }
    }
    if (auto reason = choice.find("finish_reason"); reason != choice.end() && reason->is_string()) {
      finish_reason_ = reason->get<std::string>();
    }
  }
  if (content) {
    ++content_chunks_;
    ++completed_in_piece_;
  }
}

absl::Status OpenAiStreamDecoder::Finish() {
  if (http_status_ < 200 || http_status_ >= 300) return absl::OkStatus();
  if (!error_.ok()) return error_;
  if (!saw_done_) {
    return StreamError("stream_truncated",
                       sse_.has_pending_event()
                           ? "the body ended in the middle of an event"
                           : absl::StrCat("the body ended without data: [DONE] after ",
                                          content_chunks_, " content chunks"));
  }
  return absl::OkStatus();
}

void StreamTimingTracker::OnChunks(absl::Time now, int chunks) {
  if (chunks <= 0) return;
  if (!ttft_.has_value()) {
    ttft_ = now - intended_send_;
  } else {
    inter_chunk_.push_back(now - last_chunk_);
  }
  for (int i = 1; i < chunks; ++i) inter_chunk_.push_back(absl::ZeroDuration());
  last_chunk_ = now;
  chunks_ += chunks;
}

ResponseHandlerFactory OpenAiStreamHandlerFactory() {
  return [] { return std::make_unique<OpenAiStreamHandler>(); };
}

absl::StatusOr<RequestSourceFactory> OpenAiTemplateSourceFactory(v1::Protocol protocol,
                                                                 const std::string& model,
                                                                 const std::string& request_body) {
  OpenAiApi api;
  if (protocol == v1::PROTOCOL_OPENAI_COMPLETIONS) {
    api = OpenAiApi::kCompletions;
  } else if (protocol == v1::PROTOCOL_OPENAI_CHAT) {
    api = OpenAiApi::kChat;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("protocol: ", v1::Protocol_Name(protocol), " is not an OpenAI protocol"));
  }
  std::string body = request_body;
  if (body.empty()) {
    absl::StatusOr<std::string> built =
        BuildOpenAiRequestBody(api, model, kOpenAiDefaultPrompt, 64);
    if (!built.ok()) return built.status();
    body = *std::move(built);
  } else if (!nlohmann::json::parse(body, nullptr, false).is_object()) {
    return absl::InvalidArgumentError("request_body: must be a JSON object for OpenAI protocols");
  }
  std::string path(OpenAiPath(api));
  return RequestSourceFactory(
      [path, body](int shard, int shards) -> absl::StatusOr<std::unique_ptr<RequestSource>> {
        return std::unique_ptr<RequestSource>(std::make_unique<TemplateRequestSource>(
            "POST", path, "Content-Type: application/json\r\nAccept: text/event-stream\r\n", body));
      });
}

}  // namespace vanguard::replayer
