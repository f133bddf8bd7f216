// HttpResponseParser: the load loop's incremental HTTP/1.1 response parser. It reads the
// bytes a target sends back (outside input: any bytes, in any split), keeps only what the loop
// needs — status, body framing, keep-alive — and hands decoded body bytes to a callback. It
// works in place on the caller's buffer and allocates nothing, so a connection reuses one
// parser for every response (Reset() between them).
//
//   HttpResponseParser parser;                       // one per connection
//   // Header: call with everything received so far until it is not kNeedMore.
//   Progress p = parser.ParseHeader(buf, len, &header_end);
//   if (p == Progress::kComplete && parser.informational()) { drop buf[0, header_end); Reset; }
//   // Body: the bytes after header_end, then each new read, until kComplete or kError.
//   p = parser.FeedBody(buf + header_end, len - header_end, [](std::string_view piece) {
//     return handler.OnBody(piece);                   // false: refuse the stream
//   });
//   // The peer closed: CompleteAtEof() says whether that ended a close-delimited body.
//
// Framing, from the header: no body for 1xx, 204 and 304; else Transfer-Encoding: chunked
// (decoded here; extensions and trailers skipped); else Content-Length (exactly that many
// bytes); else until the peer closes (never kept alive). HTTP/1.0 is kept alive only with
// "Connection: keep-alive", HTTP/1.1 unless "Connection: close"; bytes after the end of the
// message make the connection not reusable (keep_alive() false).
//
// Limits: a header block of at most max_header_bytes (the caller's read buffer; 64 KiB in
// the load loop); a chunk size of at most 2^44 + 15 bytes. A body never exceeds its declared
// Content-Length or chunk sizes, and the parser never reads outside [data, data + len).
//
// Errors: kError with error() one of kErrorMessages — fixed texts that quote nothing of the
// response (the load loop counts them all as a bad response) — or error() null when on_body
// returned false (the loop takes the class from its handler). After kError or kComplete the
// caller stops feeding until Reset().
//
// Not thread-safe: the load loop thread that owns the connection is the only caller.
#ifndef VANGUARD_REPLAYER_HTTP_RESPONSE_PARSER_H_
#define VANGUARD_REPLAYER_HTTP_RESPONSE_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"

namespace vanguard::replayer {

class HttpResponseParser {
 public:
  enum class Progress { kNeedMore, kComplete, kError };
  // Receives each decoded body piece; returns false to refuse the stream (kError).
  using BodySink = absl::FunctionRef<bool(std::string_view piece)>;

  static constexpr size_t kDefaultMaxHeaderBytes = 64 * 1024;
  // Every text error() can return.
  static constexpr std::string_view kErrorMessages[] = {
      "response header too large", "malformed status line",
      "malformed status code",     "malformed header line",
      "invalid Content-Length",    "conflicting Content-Length headers",
      "chunk size too large",      "malformed chunk size",
      "malformed chunk size line", "chunk data not followed by CRLF",
      "malformed trailer",         "malformed last chunk",
      "internal parser state",
  };

  // max_header_bytes: a header block not ended within this many bytes is an error; the
  // caller's buffer for the header must hold this many.
  explicit HttpResponseParser(size_t max_header_bytes = kDefaultMaxHeaderBytes)
      : max_header_bytes_(max_header_bytes) {}

  // Forgets the previous response: the next call is ParseHeader of a new one.
  void Reset();

  // Parses the header block buf[0, len) — every byte of the response received so far, from
  // its first — once it is complete; keeps no pointer into buf between calls. kComplete:
  // *header_end is where the body starts. kNeedMore: call again with more bytes.
  Progress ParseHeader(const char* buf, size_t len, size_t* header_end);

  // Feeds body bytes (after ParseHeader's kComplete), calling on_body with decoded pieces.
  // kComplete when the message ended (bytes after it make keep_alive() false); kNeedMore for
  // more bytes, or the peer's close for a close-delimited body.
  Progress FeedBody(const char* data, size_t len, BodySink on_body);

  // The peer closed the connection: whether that completes a close-delimited body.
  bool CompleteAtEof() const { return !in_headers_ && mode_ == Mode::kUntilClose; }

  bool in_headers() const { return in_headers_; }
  int status() const { return status_; }  // 0 until the status line is parsed
  bool keep_alive() const { return keep_alive_ && !trailing_garbage_; }
  bool informational() const { return status_ >= 100 && status_ < 200; }
  // Why the last kError happened (see the file comment); null if none or on_body refused.
  const char* error() const { return error_; }

 private:
  enum class Mode { kNone, kLength, kChunked, kUntilClose };
  enum class ChunkState {
    kSize,
    kExtension,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailerStart,
    kTrailerLine,
    kTrailerLf,
    kEndLf
  };
  // What the header fields say about framing.
  struct Framing {
    bool chunked = false;
    bool has_length = false;
    int64_t length = 0;
  };

  Progress Fail(const char* why);
  Progress ParseStatusLine(std::string_view line);
  Progress ParseField(std::string_view line, Framing* framing);
  void ChooseMode(const Framing& framing);
  Progress FeedChunked(const char* data, size_t len, BodySink on_body);
  // One byte of a chunk-size line (state kSize).
  Progress OnChunkSizeByte(char c);

  size_t max_header_bytes_;
  bool in_headers_ = true;
  size_t header_scan_ = 0;
  int status_ = 0;
  bool keep_alive_ = true;
  Mode mode_ = Mode::kNone;
  int64_t remaining_ = 0;
  int size_digits_ = 0;
  ChunkState chunk_state_ = ChunkState::kSize;
  bool trailing_garbage_ = false;
  const char* error_ = nullptr;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_HTTP_RESPONSE_PARSER_H_
