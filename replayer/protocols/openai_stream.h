// OpenAI-compatible completions and chat: request bodies, and the decoder of their streamed
// (SSE) responses that the replayer uses to measure LLM serving — time to first token (TTFT,
// from the request's *intended* send time), inter-chunk latency, output length — and to
// classify malformed streams.
//
//   OpenAiStreamDecoder decoder;
//   decoder.Begin(200);
//   ASSIGN_OR_RETURN(int chunks, decoder.Feed(piece));   // content chunks completed in piece
//   absl::Status end = decoder.Finish();                 // "class=stream_truncated; ..." etc.
//
// A content chunk is an SSE event whose JSON has non-empty choices[].text (completions) or
// choices[].delta.content (chat). Output tokens are the server's usage.completion_tokens when
// it sends usage (stream_options.include_usage), else the number of content chunks (one token
// per chunk, as vLLM and OpenAI stream). Error statuses carry "class=<name>; <detail>":
//   stream_sse_syntax      an SSE line/event over the limit or a NUL byte
//   stream_bad_json        an event's data is not a JSON object
//   stream_error_event     the server streamed an {"error": ...} object
//   stream_no_choices      a chunk with neither choices nor usage
//   stream_data_after_done an event after "data: [DONE]"
//   stream_truncated       the body ended before "data: [DONE]" (or mid-event)
//
// The engine integration is OpenAiStreamHandlerFactory (a ResponseHandler per connection) and
// OpenAiTemplateSourceFactory (the synthetic request). Single-threaded objects.
#ifndef VANGUARD_REPLAYER_PROTOCOLS_OPENAI_STREAM_H_
#define VANGUARD_REPLAYER_PROTOCOLS_OPENAI_STREAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "replayer/protocols/sse_parser.h"
#include "replayer/request_source.h"
#include "vanguard/v1/model.pb.h"

namespace vanguard::replayer {

enum class OpenAiApi { kCompletions, kChat };

inline constexpr std::string_view kOpenAiCompletionsPath = "/v1/completions";
inline constexpr std::string_view kOpenAiChatPath = "/v1/chat/completions";
inline constexpr std::string_view kOpenAiDefaultPrompt =
    "Explain in three sentences why open-loop load generators avoid coordinated omission.";

std::string_view OpenAiPath(OpenAiApi api);

// {"model":..., "prompt":..., "max_tokens":..., "stream":true,
//  "stream_options":{"include_usage":true}} (completions) or with "messages":[{"role":"user",
// "content":prompt}] (chat). INVALID_ARGUMENT if model is empty or max_tokens < 1.
absl::StatusOr<std::string> BuildOpenAiRequestBody(OpenAiApi api, std::string_view model,
                                                   std::string_view prompt, int max_tokens,
                                                   bool stream = true);

// The error class carried by a status from this file ("stream_truncated"), or "" if none.
std::string_view StreamErrorClass(const absl::Status& status);

class OpenAiStreamDecoder {
 public:
  // A new response with this HTTP status. Bodies of non-2xx responses are not decoded (the
  // engine counts them by status).
  void Begin(int http_status);
  // Decodes the next piece of the (de-chunked) body; returns the content chunks it completed.
  absl::StatusOr<int> Feed(std::string_view piece);
  // The body ended. OK only if "data: [DONE]" was seen (or the status was not 2xx).
  absl::Status Finish();

  int64_t content_chunks() const { return content_chunks_; }
  // usage.completion_tokens if the server sent one in [0, 2^63), else content_chunks().
  int64_t output_tokens() const { return usage_tokens_.value_or(content_chunks_); }
  bool tokens_from_usage() const { return usage_tokens_.has_value(); }
  bool saw_done() const { return saw_done_; }
  const std::string& finish_reason() const { return finish_reason_; }

 private:
  void OnEvent(const SseEvent& event);

  SseParser sse_;
  int http_status_ = 0;
  int64_t content_chunks_ = 0;
  int completed_in_piece_ = 0;
  std::optional<int64_t> usage_tokens_;
  bool saw_done_ = false;
  std::string finish_reason_;
  absl::Status error_;  // the first malformation seen
};

// The timing the engine derives from a stream, for standalone use and tests: TTFT is the
// first content chunk's arrival minus the intended send time; every later piece that completes
// chunks adds one inter-chunk gap (now - previous chunk time) and a zero gap per further chunk
// in the same piece.
class StreamTimingTracker {
 public:
  explicit StreamTimingTracker(absl::Time intended_send) : intended_send_(intended_send) {}
  void OnChunks(absl::Time now, int chunks);

  std::optional<absl::Duration> ttft() const { return ttft_; }
  const std::vector<absl::Duration>& inter_chunk() const { return inter_chunk_; }
  int64_t chunks() const { return chunks_; }

 private:
  absl::Time intended_send_;
  std::optional<absl::Duration> ttft_;
  absl::Time last_chunk_;
  std::vector<absl::Duration> inter_chunk_;
  int64_t chunks_ = 0;
};

// The engine's ResponseHandler for OpenAI-compatible SSE responses.
class OpenAiStreamHandler final : public ResponseHandler {
 public:
  void Begin(int http_status) override { decoder_.Begin(http_status); }
  absl::StatusOr<int> OnBody(std::string_view data) override { return decoder_.Feed(data); }
  absl::Status End() override { return decoder_.Finish(); }
  const OpenAiStreamDecoder& decoder() const { return decoder_; }

 private:
  OpenAiStreamDecoder decoder_;
};

ResponseHandlerFactory OpenAiStreamHandlerFactory();

// The synthetic source for PROTOCOL_OPENAI_COMPLETIONS / PROTOCOL_OPENAI_CHAT: POST to the
// API's path with Content-Type: application/json and Accept: text/event-stream. An empty
// request_body sends BuildOpenAiRequestBody(api, model, kOpenAiDefaultPrompt, 64); a non-empty
// one must be a JSON object and is sent as given. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<RequestSourceFactory> OpenAiTemplateSourceFactory(v1::Protocol protocol,
                                                                 const std::string& model,
                                                                 const std::string& request_body);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_PROTOCOLS_OPENAI_STREAM_H_
