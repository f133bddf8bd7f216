// Unit tests of the OpenAI-compatible completion bodies.
#include "tests/simulator/openai_codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vanguard::sim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(OpenAiCodecTest, ParsesCompletionAndChatRequests) {
  absl::StatusOr<CompletionRequest> completion =
      ParseCompletionRequest(R"({"model":"m","prompt":["a","b"],"stream":true,"max_tokens":9,)"
                             R"("stream_options":{"include_usage":true}})",
                             /*chat=*/false);
  ASSERT_TRUE(completion.ok()) << completion.status();
  EXPECT_EQ(completion->model, "m");
  EXPECT_TRUE(completion->stream);
  EXPECT_EQ(completion->max_tokens, 9);
  EXPECT_TRUE(completion->include_usage);

  absl::StatusOr<CompletionRequest> chat = ParseCompletionRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3})", true);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_TRUE(chat->chat);
  EXPECT_FALSE(chat->stream);
  EXPECT_FALSE(chat->model.has_value());
  EXPECT_EQ(chat->max_tokens, 3);
}

TEST(OpenAiCodecTest, RejectsBadRequestsNamingTheField) {
  auto error = [](const char* body, bool chat) {
    absl::StatusOr<CompletionRequest> request = ParseCompletionRequest(body, chat);
    EXPECT_FALSE(request.ok()) << body;
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(request.status().message());
  };
  EXPECT_THAT(error("nope", false), HasSubstr("JSON object"));
  EXPECT_THAT(error(R"({"stream":true})", false), HasSubstr("prompt"));
  EXPECT_THAT(error(R"({"prompt":"x","stream":"yes"})", false), HasSubstr("stream"));
  EXPECT_THAT(error(R"({"prompt":"x","max_tokens":0})", false), HasSubstr("max_tokens"));
  EXPECT_THAT(error(R"({"prompt":"x","model":3})", false), HasSubstr("model"));
  EXPECT_THAT(error(R"({"messages":[]})", true), HasSubstr("messages"));
  EXPECT_THAT(error(R"({"messages":[{"content":"x"}]})", true), HasSubstr("messages[0]"));
}

TEST(OpenAiCodecTest, StreamChunksAreSseDataEventsInOpenAiShape) {
  CompletionRequest chat;
  chat.chat = true;
  std::string out;
  AppendCompletionChunk(chat, "chatcmpl-1", 1700000000, "m", 1, std::nullopt, &out);
  ASSERT_EQ(out.substr(0, 6), "data: ");
  ASSERT_EQ(out.substr(out.size() - 2), "\n\n");
  const json first = json::parse(out.substr(6, out.size() - 8));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], std::string(TokenText(1)));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());

  out.clear();
  CompletionRequest text;
  AppendCompletionChunk(text, "cmpl-1", 1, "m", 2, "length", &out);
  const json last = json::parse(out.substr(6, out.size() - 8));
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(last["choices"][0]["text"], std::string(TokenText(2)));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");

  out.clear();
  AppendDoneEvent(&out);
  EXPECT_EQ(out, "data: [DONE]\n\n");
}

TEST(OpenAiCodecTest, WholeResponseCarriesTextAndUsage) {
  CompletionRequest chat;
  chat.chat = true;
  const json response = json::parse(CompletionResponseJson(chat, "c", 1, "m", 3, 10, "stop"));
  EXPECT_EQ(response["object"], "chat.completion");
  EXPECT_EQ(response["choices"][0]["message"]["content"],
            std::string(TokenText(1)) + std::string(TokenText(2)) + std::string(TokenText(3)));
  EXPECT_EQ(response["usage"]["total_tokens"], 13);
  const json error = json::parse(OpenAiErrorJson("bad \"x\"", "BadRequestError", 400));
  EXPECT_EQ(error["error"]["message"], "bad \"x\"");
  EXPECT_EQ(error["error"]["code"], 400);
}

}  // namespace
}  // namespace vanguard::sim
