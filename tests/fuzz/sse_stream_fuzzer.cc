// Fuzzes the replayer's Server-Sent Events parser (replayer::SseParser), which reads the
// streamed bodies of model servers. Input: an SSE stream.
//
// Contract checked: never throws or crashes; the stream gives the same events and the same
// outcome whether fed at once, one byte at a time (every CRLF split across reads) or in
// pieces of 1-7 bytes, with the default limit and with a 64-byte one; every event's data is
// within the limit, and its fields hold no NUL or CR (event type and id no LF either); an
// error is INVALID_ARGUMENT with a short fixed message holding nothing of the stream (no
// kSecretMarker); after Reset the parser reads the stream the same again.
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "replayer/protocols/sse_parser.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "sse_stream";

struct Event {
  std::string event, data, id;
  bool operator==(const Event& o) const { return event == o.event && data == o.data && id == o.id; }
};

struct Outcome {
  std::vector<Event> events;
  absl::Status status;
  bool pending = false;
};

// Feeds `stream` in pieces of the sizes `piece` returns (cycling through its calls), stopping
// at the first error as callers must.
template <typename PieceSize>
Outcome Read(replayer::SseParser& parser, std::string_view stream, size_t limit, PieceSize piece) {
  Outcome out;
  for (size_t i = 0, n = 0; i < stream.size(); i += n) {
    n = std::min(piece(), stream.size() - i);
    out.status = parser.Feed(stream.substr(i, n), [&](const replayer::SseEvent& e) {
      VANGUARD_FUZZ_CHECK(kName, e.data.size() <= limit);
      VANGUARD_FUZZ_CHECK(
          kName, e.data.find_first_of(std::string_view("\r\0", 2)) == std::string_view::npos);
      VANGUARD_FUZZ_CHECK(
          kName, e.event.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos);
      VANGUARD_FUZZ_CHECK(
          kName, e.id.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos);
      out.events.push_back(Event{std::string(e.event), std::string(e.data), std::string(e.id)});
    });
    if (!out.status.ok()) break;
  }
  out.pending = parser.has_pending_event();
  if (!out.status.ok()) {
    VANGUARD_FUZZ_CHECK(kName, out.status.code() == absl::StatusCode::kInvalidArgument);
    VANGUARD_FUZZ_CHECK(kName, out.status.message().size() <= 64);
    VANGUARD_FUZZ_CHECK(kName, out.status.message().find(kSecretMarker) == std::string::npos);
  }
  return out;
}

bool Same(const Outcome& a, const Outcome& b) {
  return a.events == b.events && a.status == b.status && (!a.status.ok() || a.pending == b.pending);
}

void CheckWithLimit(std::string_view stream, size_t limit) {
  replayer::SseParser parser(limit);
  const Outcome whole = Read(parser, stream, limit, [&] { return stream.size(); });
  parser.Reset();
  const Outcome bytes = Read(parser, stream, limit, [] { return size_t{1}; });
  VANGUARD_FUZZ_CHECK(kName, Same(whole, bytes));
  parser.Reset();
  size_t k = 0;
  const Outcome pieces = Read(parser, stream, limit, [&] { return size_t{1} + k++ % 7; });
  VANGUARD_FUZZ_CHECK(kName, Same(whole, pieces));
}

}  // namespace

int FuzzSseStream(const uint8_t* data, size_t size) {
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  CheckWithLimit(stream, replayer::SseParser::kDefaultMaxEventBytes);
  CheckWithLimit(stream, 64);
  return 0;
}

}  // namespace vanguard::fuzz
