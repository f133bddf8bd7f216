// Fuzzes the HTTP/1.1 chunked transfer decoder (replayer::ChunkedBodyDecoder), for clients
// that read a model server's raw bytes off the socket. Input: a chunked body.
//
// Contract checked: never throws or crashes; the same body, end and outcome whether fed at
// once, one byte at a time or in pieces of 1-7 bytes; the decoded body is no longer than the
// input; an error is INVALID_ARGUMENT with a short fixed message holding nothing of the body
// (no kSecretMarker); a body that ended round-trips: encoded again as chunks it decodes to
// the same bytes and ends.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "replayer/protocols/sse_parser.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "chunked_body";

struct Outcome {
  std::string body;
  absl::Status status;
  bool done = false;
  bool operator==(const Outcome& o) const {
    return body == o.body && status == o.status && done == o.done;
  }
};

template <typename PieceSize>
Outcome Decode(std::string_view input, PieceSize piece) {
  replayer::ChunkedBodyDecoder decoder;
  Outcome out;
  for (size_t i = 0, n = 0; i < input.size(); i += n) {
    n = std::min(piece(), input.size() - i);
    out.status = decoder.Feed(input.substr(i, n), [&](std::string_view d) { out.body.append(d); });
    if (!out.status.ok()) break;
  }
  out.done = decoder.done();
  VANGUARD_FUZZ_CHECK(kName, out.body.size() <= input.size());
  if (!out.status.ok()) {
    VANGUARD_FUZZ_CHECK(kName, out.status.code() == absl::StatusCode::kInvalidArgument);
    VANGUARD_FUZZ_CHECK(kName, out.status.message().size() <= 64);
    VANGUARD_FUZZ_CHECK(kName, out.status.message().find(kSecretMarker) == std::string::npos);
  }
  return out;
}

}  // namespace

int FuzzChunkedBody(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Outcome whole = Decode(input, [&] { return input.size(); });
  VANGUARD_FUZZ_CHECK(kName, whole == Decode(input, [] { return size_t{1}; }));
  size_t k = 0;
  VANGUARD_FUZZ_CHECK(kName, whole == Decode(input, [&] { return size_t{1} + k++ % 7; }));
  if (whole.status.ok() && whole.done) {
    std::string again;
    if (!whole.body.empty()) {
      absl::StrAppend(&again, absl::Hex(whole.body.size()), "\r\n", whole.body, "\r\n");
    }
    again.append("0\r\n\r\n");
    const Outcome round_trip = Decode(again, [&] { return again.size(); });
    VANGUARD_FUZZ_CHECK(kName, round_trip.status.ok() && round_trip.done);
    VANGUARD_FUZZ_CHECK(kName, round_trip.body == whole.body);
  }
  return 0;
}

}  // namespace vanguard::fuzz
