// See openai_stream.h.
#include "replayer/protocols/openai_stream.h"

#include <limits>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace vanguard::replayer {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status StreamError(absl::string_view error_class, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat("class=", error_class, "; ", detail));
}

// Scans one chunk's JSON for what the decoder needs — non-empty choices[].text or
// choices[].delta.content, choices[].finish_reason, usage.completion_tokens, a top-level
// non-null "error" (and its message) — without building a DOM. Strings it keeps point into
// nlohmann's lexer buffer only during the callback, so the few it needs are copied.
class OpenAiChunkScanner final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool top_level_object = false;
  bool has_choices = false;
  bool content = false;
  bool has_error = false;
  std::string error_message;
  std::optional<int64_t> usage_tokens;
  std::optional<std::string> finish_reason;

  bool null() override {
    Value(Kind::kNull);
    return true;
  }
  bool boolean(bool) override {
    Value(Kind::kOther);
    return true;
  }
  // A count below zero or beyond int64 is not a count: the decoder keeps counting chunks.
  bool number_integer(number_integer_t v) override {
    if (Parent() == Role::kUsage && key_ == Key::kCompletionTokens && v >= 0) usage_tokens = v;
    Value(Kind::kOther);
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (Parent() == Role::kUsage && key_ == Key::kCompletionTokens &&
        v <= static_cast<number_unsigned_t>(std::numeric_limits<int64_t>::max())) {
      usage_tokens = static_cast<int64_t>(v);
    }
    Value(Kind::kOther);
    return true;
  }
  bool number_float(number_float_t, const string_t&) override {
    Value(Kind::kOther);
    return true;
  }
  bool string(string_t& v) override {
    Role parent = Parent();
    if (!v.empty() && ((parent == Role::kChoice && key_ == Key::kText) ||
                       (parent == Role::kDelta && key_ == Key::kContent))) {
      content = true;
    }
    if (parent == Role::kChoice && key_ == Key::kFinishReason) finish_reason = v;
    if (parent == Role::kError && key_ == Key::kMessage) error_message = v;
    if (parent == Role::kRoot && key_ == Key::kError) error_message = v;
    Value(Kind::kOther);
    return true;
  }
  bool binary(binary_t&) override {
    Value(Kind::kOther);
    return true;
  }
  bool start_object(std::size_t) override {
    Role role = Role::kOther;
    Role parent = Parent();
    if (depth_ == 0) {
      role = Role::kRoot;
      top_level_object = true;
    } else if (parent == Role::kRoot && key_ == Key::kUsage) {
      role = Role::kUsage;
    } else if (parent == Role::kRoot && key_ == Key::kError) {
      role = Role::kError;
    } else if (parent == Role::kChoices) {
      role = Role::kChoice;
    } else if (parent == Role::kChoice && key_ == Key::kDelta) {
      role = Role::kDelta;
    }
    Value(Kind::kOther);
    Push(role);
    return true;
  }
  bool end_object() override {
    Pop();
    return true;
  }
  bool start_array(std::size_t) override {
    Role role = Parent() == Role::kRoot && key_ == Key::kChoices ? Role::kChoices : Role::kOther;
    if (role == Role::kChoices) has_choices = true;
    Value(Kind::kOther);
    Push(role);
    return true;
  }
  bool end_array() override {
    Pop();
    return true;
  }
  bool key(string_t& k) override {
    key_ = Key::kOther;
    if (k == "choices")
      key_ = Key::kChoices;
    else if (k == "text")
      key_ = Key::kText;
    else if (k == "delta")
      key_ = Key::kDelta;
    else if (k == "content")
      key_ = Key::kContent;
    else if (k == "finish_reason")
      key_ = Key::kFinishReason;
    else if (k == "usage")
      key_ = Key::kUsage;
    else if (k == "completion_tokens")
      key_ = Key::kCompletionTokens;
    else if (k == "error")
      key_ = Key::kError;
    else if (k == "message")
      key_ = Key::kMessage;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Role : uint8_t { kNone, kRoot, kChoices, kChoice, kDelta, kUsage, kError, kOther };
  enum class Key : uint8_t {
    kNone,
    kChoices,
    kText,
    kDelta,
    kContent,
    kFinishReason,
    kUsage,
    kCompletionTokens,
    kError,
    kMessage,
    kOther
  };
  enum class Kind : uint8_t { kNull, kOther };
  static constexpr int kMaxTrackedDepth = 8;  // deeper levels are parsed but not tracked

  Role Parent() const {
    if (depth_ == 0) return Role::kNone;
    return depth_ <= kMaxTrackedDepth ? roles_[depth_ - 1] : Role::kOther;
  }
  // A value (of any kind) was seen under the current key of the current object.
  void Value(Kind kind) {
    if (Parent() == Role::kRoot && key_ == Key::kError && kind != Kind::kNull) has_error = true;
  }
  void Push(Role role) {
    if (depth_ < kMaxTrackedDepth) roles_[depth_] = role;
    ++depth_;
    key_ = Key::kNone;
  }
  void Pop() {
    --depth_;
    key_ = Key::kNone;  // keys of the enclosing object are not needed after a nested value
  }

  Role roles_[kMaxTrackedDepth] = {};
  int depth_ = 0;
  Key key_ = Key::kNone;
};

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
  // A SAX scan (no DOM per event): only the few fields that matter are looked at.
  OpenAiChunkScanner scan;
  bool parsed = nlohmann::json::sax_parse(event.data.begin(), event.data.end(), &scan);
  if (!parsed || !scan.top_level_object) {
    error_ = StreamError("stream_bad_json", absl::StrCat("event data is not a JSON object: \"",
                                                         Av(event.data.substr(0, 80)), "\""));
    return;
  }
  if (scan.has_error) {
    error_ =
        StreamError("stream_error_event",
                    absl::StrCat("server streamed an error: ",
                                 scan.error_message.empty() ? "(no message)" : scan.error_message));
    return;
  }
  if (scan.usage_tokens.has_value()) usage_tokens_ = scan.usage_tokens;
  if (!scan.has_choices) {
    if (!scan.usage_tokens.has_value()) {
      error_ = StreamError("stream_no_choices", "a chunk has neither choices nor usage");
    }
    return;
  }
  if (scan.finish_reason.has_value()) finish_reason_.assign(*scan.finish_reason);
  bool content = scan.content;
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
