// Tests of the load loop's HTTP/1.1 response parser: framing by Content-Length, chunks and
// the peer's close; keep-alive; the fixed error texts; Reset between responses.
#include "replayer/http_response_parser.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using Progress = HttpResponseParser::Progress;

struct Parsed {
  Progress progress = Progress::kNeedMore;
  std::string body;
};

// Parses a response whose header arrives whole, then feeds its body in `piece`-byte reads.
Parsed Parse(HttpResponseParser& parser, std::string_view response, size_t piece = 1 << 20) {
  Parsed out;
  size_t header_end = 0;
  out.progress = parser.ParseHeader(response.data(), response.size(), &header_end);
  if (out.progress != Progress::kComplete) return out;
  out.progress = Progress::kNeedMore;
  for (size_t at = header_end; at < response.size() && out.progress == Progress::kNeedMore;) {
    size_t n = std::min(piece, response.size() - at);
    out.progress = parser.FeedBody(response.data() + at, n, [&](std::string_view p) {
      out.body.append(p);
      return true;
    });
    at += n;
  }
  return out;
}

TEST(HttpResponseParserTest, ContentLengthFramesTheBodyAndKeepsTheConnection) {
  HttpResponseParser parser;
  Parsed p = Parse(parser, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 2);
  EXPECT_EQ(p.progress, Progress::kComplete);
  EXPECT_EQ(p.body, "hello");
  EXPECT_EQ(parser.status(), 200);
  EXPECT_TRUE(parser.keep_alive());
}

TEST(HttpResponseParserTest, DecodesChunksSplitAnywhereAndSkipsTrailers) {
  HttpResponseParser parser;
  Parsed p = Parse(parser,
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
                   1);
  EXPECT_EQ(p.progress, Progress::kComplete);
  EXPECT_EQ(p.body, "hello world");
  EXPECT_TRUE(parser.keep_alive());
}

TEST(HttpResponseParserTest, BytesAfterTheMessageMakeTheConnectionNotReusable) {
  HttpResponseParser parser;
  Parsed p = Parse(parser, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
  EXPECT_EQ(p.progress, Progress::kComplete);
  EXPECT_EQ(p.body, "ok");
  EXPECT_FALSE(parser.keep_alive());
}

TEST(HttpResponseParserTest, NoFramingMeansUntilCloseAndNoKeepAlive) {
  HttpResponseParser parser;
  Parsed p = Parse(parser, "HTTP/1.1 200 OK\r\n\r\nsome bytes");
  EXPECT_EQ(p.progress, Progress::kNeedMore);
  EXPECT_EQ(p.body, "some bytes");
  EXPECT_TRUE(parser.CompleteAtEof());
  EXPECT_FALSE(parser.keep_alive());
}

TEST(HttpResponseParserTest, ErrorsAreFixedTextsAndARefusedPieceHasNone) {
  HttpResponseParser parser;
  EXPECT_EQ(
      Parse(parser, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").progress,
      Progress::kError);
  EXPECT_STREQ(parser.error(), "conflicting Content-Length headers");
  parser.Reset();
  EXPECT_EQ(Parse(parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").progress,
            Progress::kError);
  EXPECT_STREQ(parser.error(), "malformed chunk size");

  parser.Reset();
  size_t header_end = 0;
  std::string_view ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  ASSERT_EQ(parser.ParseHeader(ok.data(), ok.size(), &header_end), Progress::kComplete);
  EXPECT_EQ(parser.FeedBody(ok.data() + header_end, 2, [](std::string_view) { return false; }),
            Progress::kError);
  EXPECT_EQ(parser.error(), nullptr);
}

TEST(HttpResponseParserTest, AHeaderNotEndedWithinTheLimitIsAnError) {
  HttpResponseParser parser(32);
  std::string header = "HTTP/1.1 200 OK\r\nX-Long: " + std::string(40, 'a');
  size_t header_end = 0;
  EXPECT_EQ(parser.ParseHeader(header.data(), 31, &header_end), Progress::kNeedMore);
  EXPECT_EQ(parser.ParseHeader(header.data(), 32, &header_end), Progress::kError);
  EXPECT_STREQ(parser.error(), "response header too large");
}

// A connection's parser is reused: a response abandoned in the middle of a chunk-size line
// (a timeout, an error) must not make a bare CRLF a valid size line in the next one.
TEST(HttpResponseParserTest, ResetForgetsAHalfReadChunkSize) {
  HttpResponseParser parser;
  Parsed first = Parse(parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f");
  ASSERT_EQ(first.progress, Progress::kNeedMore);
  parser.Reset();
  Parsed second = Parse(parser, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n\r\n");
  EXPECT_EQ(second.progress, Progress::kError);
  EXPECT_STREQ(parser.error(), "malformed chunk size");
}

}  // namespace
}  // namespace vanguard::replayer
