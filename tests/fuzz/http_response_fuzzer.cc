// Fuzzes the load loop's HTTP/1.1 response parser (replayer::HttpResponseParser). Input: the
// bytes a target sends back on a connection. A driver plays the load loop's part
// (LoadLoop's Consume): reads of the given sizes, capped at the room left in a header buffer
// of the parser's limit; ParseHeader on everything buffered (bytes past it poisoned for
// ASan); a 1xx header dropped and the parser Reset; then the rest and each later read to
// FeedBody (exact-size copies) until kComplete or kError; at the end CompleteAtEof.
//
// Contract checked: never throws, crashes or reads outside what it is given; the same status,
// body, outcome and error whether the bytes come at once, one at a time or in pieces of 1-7,
// with the default header limit and a 128-byte one; a body is never longer than the bytes
// after the header, never longer than a Content-Length (and exactly it when complete, those
// very bytes), empty for 204 and 304; an error is one of kErrorMessages, or null exactly when
// the body callback refused a piece; a byte after a complete message makes the connection
// not reusable; Reset forgets a response left half-read.
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "replayer/http_response_parser.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "http_response";
using replayer::HttpResponseParser;
using Progress = HttpResponseParser::Progress;

struct Outcome {
  Progress progress = Progress::kNeedMore;
  std::string error;  // the error() text; "(refused)" when null on kError
  int status = 0;
  int informational = 0;  // 1xx headers skipped
  bool header_done = false;
  size_t header_start = 0;  // in the input: the final (not 1xx) header
  size_t header_end = 0;
  std::string body;
  size_t body_input = 0;  // bytes given to FeedBody
  bool keep_alive = false;
  bool complete_at_eof = false;
  bool operator==(const Outcome& o) const {
    return progress == o.progress && error == o.error && status == o.status &&
           informational == o.informational && header_done == o.header_done &&
           header_start == o.header_start && header_end == o.header_end && body == o.body &&
           complete_at_eof == o.complete_at_eof;
  }
};

// The load loop's part: owns the header buffer, feeds the parser as Consume does.
class Driver {
 public:
  Driver(HttpResponseParser& parser, size_t max_header, bool refuse_body)
      : parser_(parser), cap_(max_header), buffer_(new char[max_header]), refuse_(refuse_body) {
    ASAN_POISON_MEMORY_REGION(buffer_.get(), cap_);
  }
  ~Driver() { ASAN_UNPOISON_MEMORY_REGION(buffer_.get(), cap_); }

  // Reads `input` in pieces of the sizes `piece` returns, as recv would deliver them.
  template <typename PieceSize>
  Outcome Run(std::string_view input, PieceSize piece) {
    size_t at = 0;
    while (at < input.size() && out_.progress == Progress::kNeedMore) {
      const size_t room = parser_.in_headers() ? cap_ - in_len_ : cap_;
      const size_t n = std::min({piece(), input.size() - at, room});
      VANGUARD_FUZZ_CHECK(kName, n > 0);
      Read(input, at, n);
      at += n;
    }
    if (out_.progress == Progress::kNeedMore) out_.complete_at_eof = parser_.CompleteAtEof();
    out_.status = parser_.status();
    out_.keep_alive = parser_.keep_alive();
    if (out_.progress == Progress::kError) {
      const char* e = parser_.error();
      out_.error = e == nullptr ? "(refused)" : e;
    }
    return out_;
  }

 private:
  void Read(std::string_view input, size_t at, size_t n) {
    if (!parser_.in_headers()) {
      Body(input.substr(at, n));
      return;
    }
    ASAN_UNPOISON_MEMORY_REGION(buffer_.get() + in_len_, n);
    std::memcpy(buffer_.get() + in_len_, input.data() + at, n);
    in_len_ += n;
    while (true) {
      size_t header_end = 0;
      out_.progress = parser_.ParseHeader(buffer_.get(), in_len_, &header_end);
      if (out_.progress != Progress::kComplete) return;
      VANGUARD_FUZZ_CHECK(kName, header_end >= 4 && header_end <= in_len_);
      if (!parser_.informational()) {
        out_.header_done = true;
        out_.header_start = header_base_;
        out_.header_end = header_base_ + header_end;
        out_.progress = Progress::kNeedMore;
        Body(std::string_view(buffer_.get() + header_end, in_len_ - header_end));
        return;
      }
      ++out_.informational;
      header_base_ += header_end;
      std::memmove(buffer_.get(), buffer_.get() + header_end, in_len_ - header_end);
      in_len_ -= header_end;
      ASAN_POISON_MEMORY_REGION(buffer_.get() + in_len_, cap_ - in_len_);
      parser_.Reset();
    }
  }

  void Body(std::string_view bytes) {
    std::unique_ptr<char[]> exact(new char[bytes.size()]);  // an over-read is out of bounds
    if (!bytes.empty()) std::memcpy(exact.get(), bytes.data(), bytes.size());
    out_.body_input += bytes.size();
    out_.progress = parser_.FeedBody(exact.get(), bytes.size(), [&](std::string_view piece) {
      VANGUARD_FUZZ_CHECK(kName, piece.data() >= exact.get() &&
                                     piece.data() + piece.size() <= exact.get() + bytes.size());
      out_.body.append(piece);
      return !refuse_;
    });
  }

  HttpResponseParser& parser_;
  const size_t cap_;
  std::unique_ptr<char[]> buffer_;
  const bool refuse_;
  size_t in_len_ = 0;
  size_t header_base_ = 0;  // input offset of buffer_[0]
  Outcome out_;
};

template <typename PieceSize>
Outcome Parse(std::string_view input, size_t max_header, PieceSize piece, bool refuse = false) {
  HttpResponseParser parser(max_header);
  return Driver(parser, max_header, refuse).Run(input, piece);
}

Outcome ParseWhole(std::string_view input, size_t max_header, bool refuse = false) {
  return Parse(
      input, max_header, [&] { return input.size(); }, refuse);
}

bool IsDocumentedError(const std::string& error) {
  if (error == "(refused)") return true;
  return std::find(std::begin(HttpResponseParser::kErrorMessages),
                   std::end(HttpResponseParser::kErrorMessages),
                   error) != std::end(HttpResponseParser::kErrorMessages);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The Content-Length the final header declares (-1: none, or a Transfer-Encoding that may
// say chunked, which takes precedence), read independently of the parser.
int64_t DeclaredLength(std::string_view header) {
  int64_t length = -1;
  for (size_t pos = header.find("\r\n");
       pos != std::string_view::npos && pos + 2 < header.size();) {
    const size_t end = header.find("\r\n", pos + 2);
    std::string_view line = header.substr(pos + 2, end - pos - 2);
    pos = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
    if (EqualsIgnoreCase(name, "transfer-encoding")) return -1;
    if (!EqualsIgnoreCase(name, "content-length")) continue;
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    std::from_chars(value.data(), value.data() + value.size(), length);
  }
  return length;
}

void CheckBody(std::string_view input, const Outcome& o) {
  VANGUARD_FUZZ_CHECK(kName, o.body.size() <= o.body_input);
  if (!o.header_done) {
    VANGUARD_FUZZ_CHECK(kName, o.body.empty());
    return;
  }
  VANGUARD_FUZZ_CHECK(kName, o.status < 100 || o.status >= 200);  // 1xx headers are skipped
  if (o.status == 204 || o.status == 304) VANGUARD_FUZZ_CHECK(kName, o.body.empty());
  const int64_t declared =
      DeclaredLength(input.substr(o.header_start, o.header_end - o.header_start));
  if (declared < 0 || o.status == 204 || o.status == 304) return;
  VANGUARD_FUZZ_CHECK(kName, o.body.size() <= static_cast<uint64_t>(declared));
  VANGUARD_FUZZ_CHECK(kName, input.substr(o.header_end, o.body.size()) == o.body);
  if (o.progress == Progress::kComplete) {
    VANGUARD_FUZZ_CHECK(kName, o.body.size() == static_cast<uint64_t>(declared));
  }
}

void CheckWithLimit(std::string_view input, size_t max_header) {
  const Outcome whole = ParseWhole(input, max_header);
  VANGUARD_FUZZ_CHECK(kName, whole.progress != Progress::kError || IsDocumentedError(whole.error));
  VANGUARD_FUZZ_CHECK(kName, whole.error != "(refused)");
  VANGUARD_FUZZ_CHECK(kName, whole.status >= 0 && whole.status <= 999);
  CheckBody(input, whole);
  VANGUARD_FUZZ_CHECK(kName, whole == Parse(input, max_header, [] { return size_t{1}; }));
  size_t k = 0;
  VANGUARD_FUZZ_CHECK(kName, whole == Parse(input, max_header, [&] { return 1 + k++ % 7; }));

  // A body callback that refuses: the first piece ends it, as the load loop's handler would.
  const Outcome refused = ParseWhole(input, max_header, /*refuse=*/true);
  if (!whole.body.empty()) {
    VANGUARD_FUZZ_CHECK(kName, refused.progress == Progress::kError);
    VANGUARD_FUZZ_CHECK(kName, refused.error == "(refused)");
  } else {
    VANGUARD_FUZZ_CHECK(kName, refused == whole);
  }
  // A byte after a complete message, in the same read: the connection is not reused.
  if (whole.progress == Progress::kComplete && input.size() < max_header) {
    const std::string more = std::string(input) + "X";
    const Outcome after = ParseWhole(more, max_header);
    VANGUARD_FUZZ_CHECK(kName, after == whole && !after.keep_alive);
  }
}

// A parser left in the middle of a chunk-size line, then Reset, reads like a new one.
void CheckResetForgets(std::string_view input) {
  constexpr std::string_view kHalfRead =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1f";
  HttpResponseParser parser;
  Driver(parser, HttpResponseParser::kDefaultMaxHeaderBytes, false).Run(kHalfRead, [&] {
    return kHalfRead.size();
  });
  parser.Reset();
  const Outcome reused =
      Driver(parser, HttpResponseParser::kDefaultMaxHeaderBytes, false).Run(input, [&] {
        return input.size();
      });
  const Outcome fresh = ParseWhole(input, HttpResponseParser::kDefaultMaxHeaderBytes);
  VANGUARD_FUZZ_CHECK(kName, reused == fresh && reused.keep_alive == fresh.keep_alive);
}

}  // namespace

int FuzzHttpResponse(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckWithLimit(input, HttpResponseParser::kDefaultMaxHeaderBytes);
  CheckWithLimit(input, 128);
  CheckResetForgets(input);
  return 0;
}

}  // namespace vanguard::fuzz
