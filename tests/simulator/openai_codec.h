// OpenAI-compatible completion bodies for the simulated predictor's generative mode: parses
// POST /v1/completions and /v1/chat/completions requests and writes the streamed SSE events
// (`data: {...}\n\n`, then `data: [DONE]\n\n`) and the non-streamed responses, in the shapes
// vLLM's OpenAI server produces. The generated text is filler: one word per token.
//
//   absl::StatusOr<CompletionRequest> request = ParseCompletionRequest(body, /*chat=*/false);
//   AppendCompletionChunk(*request, "cmpl-7", created, model, token_index, finish, &out);
//   AppendDoneEvent(&out);
//
// Written from the OpenAI API reference, not shared with the replayer's client.
// Pure functions; any thread.
#ifndef VANGUARD_TESTS_SIMULATOR_OPENAI_CODEC_H_
#define VANGUARD_TESTS_SIMULATOR_OPENAI_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vanguard::sim {

struct CompletionRequest {
  bool chat = false;
  std::optional<std::string> model;
  bool stream = false;
  // 0 = not given (the model's own length distribution decides).
  int max_tokens = 0;
  // Whether to end the stream with a usage chunk (stream_options.include_usage).
  bool include_usage = false;
};

// INVALID_ARGUMENT naming the field when the body is not a JSON object, lacks "prompt"
// (string or array; completions) or "messages" (non-empty array of objects with a string
// "role"; chat), or has a non-boolean "stream" or a max_tokens (or max_completion_tokens)
// that is not a positive integer.
absl::StatusOr<CompletionRequest> ParseCompletionRequest(absl::string_view body, bool chat);

// The text of token `index` (1-based): a space and a filler word.
absl::string_view TokenText(int index);

// One SSE event carrying token `index`; `finish_reason` (e.g. "stop", "length") marks the
// last one. Chat chunks carry the assistant role in the first delta.
void AppendCompletionChunk(const CompletionRequest& request, absl::string_view id, int64_t created,
                           absl::string_view model, int index,
                           std::optional<absl::string_view> finish_reason, std::string* out);
// The final usage event (choices empty) for stream_options.include_usage.
void AppendUsageChunk(const CompletionRequest& request, absl::string_view id, int64_t created,
                      absl::string_view model, int prompt_tokens, int completion_tokens,
                      std::string* out);
// "data: [DONE]\n\n".
void AppendDoneEvent(std::string* out);

// The whole (non-streamed) response for `tokens` generated tokens.
std::string CompletionResponseJson(const CompletionRequest& request, absl::string_view id,
                                   int64_t created, absl::string_view model, int tokens,
                                   int prompt_tokens, absl::string_view finish_reason);

// {"error":{"message":..,"type":..,"code":..}} as OpenAI servers answer errors.
std::string OpenAiErrorJson(absl::string_view message, absl::string_view type, int code);

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_OPENAI_CODEC_H_
