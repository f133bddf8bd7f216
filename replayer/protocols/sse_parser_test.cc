// Tests of the incremental SSE parser and chunked-transfer decoder: events split anywhere
// (fed byte by byte), every line-ending style, comments, multi-line data, and clear errors.
#include "replayer/protocols/sse_parser.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Seen {
  std::string event, data, id;
  bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{" << s.event << "|" << s.data << "|" << s.id << "}";
}

// Feeds `stream` in pieces of `step` bytes.
std::vector<Seen> Parse(std::string_view stream, size_t step, SseParser* parser = nullptr) {
  SseParser local;
  if (parser == nullptr) parser = &local;
  std::vector<Seen> seen;
  for (size_t i = 0; i < stream.size(); i += step) {
    absl::Status s = parser->Feed(stream.substr(i, step), [&](const SseEvent& e) {
      seen.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
    });
    EXPECT_TRUE(s.ok()) << s;
  }
  return seen;
}

constexpr std::string_view kStream =
    ": keep-alive comment\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "event: update\n"
    "id: 7\n"
    "data: line one\n"
    "data:line two\n"
    "retry: 100\n"
    "\n"
    "data: cr only\r\r"
    "data\n\n"
    "event: no-data-is-not-dispatched\n\n"
    "data: [DONE]\n\n";

TEST(SseParserTest, ParsesEveryFeatureWhateverTheSplit) {
  std::vector<Seen> expected = {{"", "{\"a\":1}", ""},
                                {"update", "line one\nline two", "7"},
                                {"", "cr only", "7"},
                                {"", "", "7"},
                                {"", "[DONE]", "7"}};
  for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, kStream.size()}) {
    EXPECT_EQ(Parse(kStream, step), expected) << "piece size " << step;
  }
}

TEST(SseParserTest, ACrLfSplitAcrossPiecesIsOneLineEnd) {
  SseParser parser;
  std::vector<std::string> data;
  auto on = [&](const SseEvent& e) { data.emplace_back(e.data); };
  ASSERT_TRUE(parser.Feed("data: x\r", on).ok());
  ASSERT_TRUE(parser.Feed("\n\r", on).ok());  // LF ends "data: x"; CR ends the blank line
  ASSERT_TRUE(parser.Feed("\n", on).ok());    // LF of the blank line's CRLF: no extra line
  EXPECT_THAT(data, ElementsAre("x"));
  EXPECT_FALSE(parser.has_pending_event());
}

TEST(SseParserTest, AnUnterminatedEventIsPendingNotDispatched) {
  SseParser parser;
  EXPECT_TRUE(Parse("data: partial\n", 1, &parser).empty());
  EXPECT_TRUE(parser.has_pending_event());
  parser.Reset();
  EXPECT_FALSE(parser.has_pending_event());
}

TEST(SseParserTest, OverlongLinesAndNulBytesAreErrors) {
  SseParser parser(/*max_event_bytes=*/64);
  absl::Status s =
      parser.Feed(absl::StrCat("data: ", std::string(100, 'x')), [](const SseEvent&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("longer than 64"));

  SseParser many(64);
  std::string lines;
  for (int i = 0; i < 20; ++i) lines += "data: 0123456789\n";
  EXPECT_THAT(many.Feed(lines, [](const SseEvent&) {}).message(), HasSubstr("event longer"));

  SseParser nul;
  EXPECT_THAT(nul.Feed(std::string_view("data: a\0b\n", 10), [](const SseEvent&) {}).message(),
              HasSubstr("NUL"));
}

std::string Chunked(const std::vector<std::string>& chunks) {
  std::string out;
  for (const std::string& c : chunks) absl::StrAppend(&out, absl::Hex(c.size()), "\r\n", c, "\r\n");
  return out + "0\r\n\r\n";
}

TEST(ChunkedBodyDecoderTest, SseThroughChunkedEncodingFedByteByByte) {
  // Chunk boundaries that cut events, lines and CRLFs in the middle.
  std::string body(kStream);
  std::string wire =
      Chunked({body.substr(0, 5), body.substr(5, 30), body.substr(35, 1), body.substr(36)});
  wire.insert(wire.find("\r\n"), ";ext=1");  // a chunk extension is skipped
  ChunkedBodyDecoder chunked;
  SseParser sse;
  std::vector<std::string> data;
  for (char c : wire) {
    ASSERT_TRUE(
        chunked
            .Feed(
                std::string_view(&c, 1),
                [&](std::string_view piece) {
                  ASSERT_TRUE(
                      sse.Feed(piece, [&](const SseEvent& e) { data.emplace_back(e.data); }).ok());
                })
            .ok());
  }
  EXPECT_TRUE(chunked.done());
  EXPECT_THAT(data, ElementsAre("{\"a\":1}", "line one\nline two", "cr only", "", "[DONE]"));
}

TEST(ChunkedBodyDecoderTest, MalformedFramingIsAnError) {
  auto feed = [](std::string_view wire) {
    ChunkedBodyDecoder d;
    return d.Feed(wire, [](std::string_view) {});
  };
  EXPECT_FALSE(feed("zz\r\nabc").ok());
  EXPECT_FALSE(feed("3\r\nabcX\r\n").ok());          // data longer than its size
  EXPECT_FALSE(feed("3\nabc\r\n").ok());             // bare LF after the size
  EXPECT_FALSE(feed("ffffffffffffffff1\r\n").ok());  // size overflow
  EXPECT_FALSE(feed("0\r\n\r\nextra").ok());         // bytes after the end
  EXPECT_TRUE(feed("3\r\nabc\r\n0\r\nTrailer: x\r\n\r\n").ok());
}

}  // namespace
}  // namespace vanguard::replayer
