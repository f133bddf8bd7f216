// Tests of the OpenAI-compatible stream decoder: content chunks, usage tokens, TTFT and
// inter-chunk timing from the intended send time, and classified malformed streams.
#include "replayer/protocols/openai_stream.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vanguard::replayer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ChatChunk(std::string_view content) {
  return absl::StrCat(
      R"(data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":")",
      std::string(content), R"("},"finish_reason":null}]})", "\n\n");
}

TEST(OpenAiStreamDecoderTest, CountsChatContentChunksAndUsageTokens) {
  std::string stream = R"(data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]})"
                       "\n\n" +  // no content
                       ChatChunk("Hel") +
                       ChatChunk("lo") + ChatChunk("") + ChatChunk(" world") +
                       R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
                       "\n\n"
                       R"(data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4}})"
                       "\n\n"
                       "data: [DONE]\n\n";
  OpenAiStreamDecoder decoder;
  decoder.Begin(200);
  int chunks = 0;
  for (char c : stream) {  // byte by byte
    auto got = decoder.Feed(std::string_view(&c, 1));
    ASSERT_TRUE(got.ok()) << got.status();
    chunks += *got;
  }
  EXPECT_TRUE(decoder.Finish().ok());
  EXPECT_EQ(chunks, 3);
  EXPECT_EQ(decoder.content_chunks(), 3);
  EXPECT_EQ(decoder.output_tokens(), 4);  // the server's usage wins over the chunk count
  EXPECT_TRUE(decoder.tokens_from_usage());
  EXPECT_EQ(decoder.finish_reason(), "stop");
}

TEST(OpenAiStreamDecoderTest, OnlyTheRealContentFieldsCount) {
  OpenAiStreamDecoder decoder;
  decoder.Begin(200);
  // Nested look-alikes (logprobs.content, a "text" outside choices) are not content; a null
  // "error" is not an error; usage inside a choice is not the server's usage.
  std::string stream =
      R"(data: {"error":null,"text":"x","choices":[{"index":0,"logprobs":{"content":[{"token":"a"}]},"delta":{},"usage":{"completion_tokens":99}}]})"
      "\n\n"
      R"(data: {"choices":[{"delta":{"content":"ok","tool":{"content":"no"}},"finish_reason":"length"}]})"
      "\n\n"
      "data: [DONE]\n\n";
  auto chunks = decoder.Feed(stream);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  EXPECT_EQ(*chunks, 1);
  EXPECT_TRUE(decoder.Finish().ok());
  EXPECT_FALSE(decoder.tokens_from_usage());
  EXPECT_EQ(decoder.finish_reason(), "length");
}

TEST(OpenAiStreamDecoderTest, NegativeOrHugeUsageIsNotACount) {
  // Found by the openai_stream fuzzer: -5 and 2^64-1 (read back as -1) became negative
  // output token counts.
  for (const char* tokens : {"-5", "18446744073709551615"}) {
    OpenAiStreamDecoder decoder;
    decoder.Begin(200);
    auto chunks = decoder.Feed(absl::StrCat(ChatChunk("a"), ChatChunk("b"),
                                            R"(data: {"choices":[],"usage":{"completion_tokens":)",
                                            tokens, "}}\n\ndata: [DONE]\n\n"));
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    EXPECT_TRUE(decoder.Finish().ok());
    EXPECT_FALSE(decoder.tokens_from_usage()) << tokens;
    EXPECT_EQ(decoder.output_tokens(), 2) << tokens;
  }
}

TEST(OpenAiStreamDecoderTest, CompletionsTextChunksAndTimingFromIntendedSend) {
  auto text = [](std::string_view t) {
    return absl::StrCat(R"(data: {"choices":[{"text":")", std::string(t), R"(","index":0}]})",
                        "\n\n");
  };
  absl::Time intended = absl::FromUnixSeconds(1000);
  StreamTimingTracker timing(intended);
  OpenAiStreamDecoder decoder;
  decoder.Begin(200);
  // Pieces arrive at these times; the second holds two chunks, the third cuts one in half.
  std::string c3 = text("c");
  std::vector<std::pair<absl::Duration, std::string>> pieces = {
      {absl::Milliseconds(120), text("a")},
      {absl::Milliseconds(150), text("b") + c3.substr(0, 10)},
      {absl::Milliseconds(170), c3.substr(10) + text("d")},
      {absl::Milliseconds(400), text("e")},
      {absl::Milliseconds(401), "data: [DONE]\n\n"}};
  for (const auto& [at, piece] : pieces) {
    auto chunks = decoder.Feed(piece);
    ASSERT_TRUE(chunks.ok());
    timing.OnChunks(intended + at, *chunks);
  }
  ASSERT_TRUE(decoder.Finish().ok());
  EXPECT_EQ(decoder.output_tokens(), 5);
  EXPECT_FALSE(decoder.tokens_from_usage());
  EXPECT_EQ(timing.ttft(), absl::Milliseconds(120));
  EXPECT_THAT(timing.inter_chunk(), ElementsAre(absl::Milliseconds(30), absl::Milliseconds(20),
                                                absl::ZeroDuration(), absl::Milliseconds(230)));
  EXPECT_EQ(timing.chunks(), 5);
}

struct MalformedCase {
  std::string name;
  std::string stream;
  std::string error_class;
};

TEST(OpenAiStreamDecoderTest, MalformedStreamsAreClassified) {
  std::vector<MalformedCase> cases = {
      {"no DONE", ChatChunk("a"), "stream_truncated"},
      {"cut mid-event", ChatChunk("a") + "data: {\"choi", "stream_truncated"},
      {"empty body", "", "stream_truncated"},
      {"bad json", ChatChunk("a") + "data: {not json\n\n", "stream_bad_json"},
      {"json not object", "data: [1,2]\n\n", "stream_bad_json"},
      {"error event",
       R"(data: {"error":{"message":"overloaded","code":503}})"
       "\n\n",
       "stream_error_event"},
      {"no choices",
       R"(data: {"id":"x"})"
       "\n\n",
       "stream_no_choices"},
      {"after done", "data: [DONE]\n\n" + ChatChunk("late"), "stream_data_after_done"},
      {"nul byte", std::string("data: a\0\n\n", 10), "stream_sse_syntax"},
  };
  for (const MalformedCase& c : cases) {
    OpenAiStreamDecoder decoder;
    decoder.Begin(200);
    absl::Status status = absl::OkStatus();
    auto fed = decoder.Feed(c.stream);
    if (!fed.ok()) status = fed.status();
    absl::Status end = decoder.Finish();
    if (status.ok()) status = end;
    ASSERT_FALSE(status.ok()) << c.name;
    EXPECT_EQ(StreamErrorClass(status), c.error_class) << c.name << ": " << status;
    EXPECT_FALSE(end.ok()) << c.name << ": Finish must report it too";
  }
  // The overloaded server's message reaches the status.
  OpenAiStreamDecoder decoder;
  decoder.Begin(200);
  (void)decoder.Feed(R"(data: {"error":{"message":"overloaded"}})"
                     "\n\n");
  EXPECT_THAT(decoder.Finish().message(), HasSubstr("overloaded"));
}

TEST(OpenAiStreamDecoderTest, RandomBytesNeverCrashAndAlwaysEndClassified) {
  std::mt19937_64 rng(42);
  const std::string alphabet = "data: {}[]\":,choices delta content text DONE error \r\n\n\0x";
  for (int round = 0; round < 300; ++round) {
    std::string stream;
    size_t length = rng() % 400;
    for (size_t i = 0; i < length; ++i) stream.push_back(alphabet[rng() % alphabet.size()]);
    OpenAiStreamDecoder decoder;
    decoder.Begin(200);
    absl::Status status = absl::OkStatus();
    for (size_t i = 0; i < stream.size() && status.ok();) {
      size_t piece = 1 + rng() % 17;
      auto got = decoder.Feed(std::string_view(stream).substr(i, piece));
      if (!got.ok()) status = got.status();
      i += piece;
    }
    absl::Status end = decoder.Finish();
    if (!end.ok()) {
      EXPECT_FALSE(StreamErrorClass(end).empty()) << end;
    }
  }
}

TEST(OpenAiStreamDecoderTest, NonSuccessBodiesAreNotDecodedAndStateResetsPerResponse) {
  OpenAiStreamDecoder decoder;
  decoder.Begin(503);
  EXPECT_EQ(*decoder.Feed("Service Unavailable"), 0);
  EXPECT_TRUE(decoder.Finish().ok());
  decoder.Begin(200);
  EXPECT_EQ(*decoder.Feed(ChatChunk("x") + "data: [DONE]\n\n"), 1);
  EXPECT_TRUE(decoder.Finish().ok());
  decoder.Begin(200);  // a second response on the same connection starts clean
  EXPECT_EQ(decoder.content_chunks(), 0);
  EXPECT_FALSE(decoder.Finish().ok());
}

TEST(OpenAiRequestTest, BodiesAndTemplateSource) {
  auto chat = BuildOpenAiRequestBody(OpenAiApi::kChat, "llama", "hi", 16);
  ASSERT_TRUE(chat.ok());
  nlohmann::json j = nlohmann::json::parse(*chat);
  EXPECT_EQ(j["model"], "llama");
  EXPECT_EQ(j["messages"][0]["content"], "hi");
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["max_tokens"], 16);
  auto completion = BuildOpenAiRequestBody(OpenAiApi::kCompletions, "gpt", "p", 8);
  EXPECT_EQ(nlohmann::json::parse(*completion)["prompt"], "p");
  EXPECT_THAT(BuildOpenAiRequestBody(OpenAiApi::kChat, "", "p", 8).status().message(),
              HasSubstr("model_name"));

  auto factory = OpenAiTemplateSourceFactory(v1::PROTOCOL_OPENAI_CHAT, "llama", "");
  ASSERT_TRUE(factory.ok());
  auto source = (*factory)(0, 1);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  ASSERT_TRUE((*source)->Next(&request).ok());
  EXPECT_EQ(request.path, "/v1/chat/completions");
  EXPECT_THAT(std::string(request.headers), HasSubstr("Accept: text/event-stream\r\n"));
  EXPECT_EQ(nlohmann::json::parse(request.body)["model"], "llama");
  EXPECT_EQ(OpenAiTemplateSourceFactory(v1::PROTOCOL_OPENAI_CHAT, "m", "not json").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenAiTemplateSourceFactory(v1::PROTOCOL_HTTP, "m", "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OpenAiStreamHandlerTest, EngineHandlerReportsChunksAndClassifiedEnd) {
  ResponseHandlerFactory factory = OpenAiStreamHandlerFactory();
  std::unique_ptr<ResponseHandler> handler = factory();
  handler->Begin(200);
  EXPECT_EQ(*handler->OnBody(ChatChunk("a") + ChatChunk("b")), 2);
  absl::Status end = handler->End();
  EXPECT_THAT(std::string(end.message()), ::testing::StartsWith("class=stream_truncated;"));
}

}  // namespace
}  // namespace vanguard::replayer
