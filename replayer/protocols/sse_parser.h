// Incremental parsers for streamed HTTP responses:
//  * SseParser: Server-Sent Events (the WHATWG "text/event-stream" format) fed in arbitrary
//    pieces — an event, a line, even a CRLF pair may be split across TCP reads. Handles
//    `data:` lines (several per event are joined with "\n"), `event:`/`id:` fields,
//    comments (lines starting with ':'), LF / CRLF / CR line ends, and an optional single
//    space after the colon. Bounded: a line or event longer than the limit is an error,
//    never unbounded growth.
//  * ChunkedBodyDecoder: HTTP/1.1 chunked transfer coding, also fed in arbitrary pieces, for
//    clients that read raw bytes off the socket (the replayer's engine de-chunks itself).
//
//   SseParser parser;
//   RETURN_IF_ERROR(parser.Feed(piece, [&](const SseEvent& e) { ... e.data ... }));
//
// Single-threaded (one per connection/response); no allocation per event in steady state.
#ifndef VANGUARD_REPLAYER_PROTOCOLS_SSE_PARSER_H_
#define VANGUARD_REPLAYER_PROTOCOLS_SSE_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace vanguard::replayer {

struct SseEvent {
  std::string_view event;  // "" means the default type "message"
  std::string_view data;   // data lines joined with "\n"
  std::string_view id;
};

class SseParser {
 public:
  static constexpr size_t kDefaultMaxEventBytes = 4 << 20;

  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes`, calling on_event for every event completed (by a blank line) within them.
  // The views in the event are valid only during the call. INVALID_ARGUMENT if a line or an
  // event exceeds the limit or the stream holds a NUL byte; the parser must then be Reset.
  absl::Status Feed(std::string_view bytes, absl::FunctionRef<void(const SseEvent&)> on_event);

  // True if bytes of an event not yet terminated by a blank line are pending (at the end of
  // a stream that is a truncated event, which the SSE spec says to discard).
  bool has_pending_event() const { return !line_.empty() || has_data_ || !event_.empty(); }

  // Forgets all state, keeping the buffers' capacity (for the next response).
  void Reset();

 private:
  absl::Status ProcessLine(absl::FunctionRef<void(const SseEvent&)> on_event);

  size_t max_event_bytes_;
  std::string line_;   // the current, unterminated line
  std::string data_;   // data of the current event
  std::string event_;  // event type of the current event
  std::string id_;
  bool has_data_ = false;
  bool skip_lf_ = false;  // the previous piece ended with CR: a leading LF belongs to it
};

class ChunkedBodyDecoder {
 public:
  // Decodes `bytes`, calling on_data with each piece of body data. INVALID_ARGUMENT on a
  // malformed chunk size or framing. After the terminating zero-size chunk (and trailers),
  // done() is true and further bytes are an error.
  absl::Status Feed(std::string_view bytes, absl::FunctionRef<void(std::string_view)> on_data);
  bool done() const { return state_ == State::kDone; }
  void Reset();

 private:
  enum class State { kSize, kSizeExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;
  int size_digits_ = 0;
  size_t trailer_line_bytes_ = 0;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_PROTOCOLS_SSE_PARSER_H_
