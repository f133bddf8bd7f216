// See http_response_parser.h.
#include "replayer/http_response_parser.h"

#include <algorithm>
#include <charconv>

namespace vanguard::replayer {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool ContainsTokenIgnoreCase(std::string_view value, std::string_view token) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    std::string_view part =
        value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (EqualsIgnoreCase(part, token)) return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

int HexDigit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

}  // namespace

void HttpResponseParser::Reset() {
  in_headers_ = true;
  header_scan_ = 0;
  status_ = 0;
  keep_alive_ = true;
  mode_ = Mode::kNone;
  remaining_ = 0;
  size_digits_ = 0;
  chunk_state_ = ChunkState::kSize;
  trailing_garbage_ = false;
  error_ = nullptr;
}

HttpResponseParser::Progress HttpResponseParser::Fail(const char* why) {
  error_ = why;
  return Progress::kError;
}

HttpResponseParser::Progress HttpResponseParser::ParseHeader(const char* buf, size_t len,
                                                             size_t* header_end) {
  std::string_view data(buf, len);
  size_t from = header_scan_ > 3 ? header_scan_ - 3 : 0;
  size_t end = data.find("\r\n\r\n", from);
  if (end == std::string_view::npos) {
    header_scan_ = len;
    if (len >= max_header_bytes_) return Fail("response header too large");
    return Progress::kNeedMore;
  }
  *header_end = end + 4;
  std::string_view block = data.substr(0, end + 2);  // keep the last line's CRLF
  size_t eol = block.find("\r\n");
  if (ParseStatusLine(block.substr(0, eol)) == Progress::kError) return Progress::kError;
  Framing framing;
  size_t pos = eol + 2;
  while (pos < block.size()) {
    size_t line_end = block.find("\r\n", pos);
    std::string_view line = block.substr(pos, line_end - pos);
    pos = line_end + 2;
    if (ParseField(line, &framing) == Progress::kError) return Progress::kError;
  }
  in_headers_ = false;
  ChooseMode(framing);
  return Progress::kComplete;
}

// "HTTP/1.x SSS reason": sets status_ and the version's default keep-alive.
HttpResponseParser::Progress HttpResponseParser::ParseStatusLine(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || (line[7] != '0' && line[7] != '1') ||
      line[8] != ' ') {
    return Fail("malformed status line");
  }
  int status = 0;
  for (int i = 9; i < 12; ++i) {
    char c = line[i];
    if (c < '0' || c > '9') return Fail("malformed status code");
    status = status * 10 + (c - '0');
  }
  if (line.size() > 12 && line[12] != ' ') return Fail("malformed status line");
  status_ = status;
  keep_alive_ = line[7] != '0';
  return Progress::kComplete;
}

// One "name: value" line: Content-Length and Transfer-Encoding go to *framing, Connection
// to keep_alive_; other fields are ignored.
HttpResponseParser::Progress HttpResponseParser::ParseField(std::string_view line,
                                                            Framing* framing) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return Fail("malformed header line");
  std::string_view name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (EqualsIgnoreCase(name, "content-length")) {
    int64_t length = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec != std::errc() || ptr != value.data() + value.size() || length < 0) {
      return Fail("invalid Content-Length");
    }
    if (framing->has_length && framing->length != length) {
      return Fail("conflicting Content-Length headers");
    }
    framing->has_length = true;
    framing->length = length;
  } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
    if (ContainsTokenIgnoreCase(value, "chunked")) framing->chunked = true;
  } else if (EqualsIgnoreCase(name, "connection")) {
    if (ContainsTokenIgnoreCase(value, "close")) keep_alive_ = false;
    if (ContainsTokenIgnoreCase(value, "keep-alive")) keep_alive_ = true;
  }
  return Progress::kComplete;
}

void HttpResponseParser::ChooseMode(const Framing& framing) {
  if ((status_ >= 100 && status_ < 200) || status_ == 204 || status_ == 304) {
    mode_ = Mode::kNone;
  } else if (framing.chunked) {
    mode_ = Mode::kChunked;
  } else if (framing.has_length) {
    mode_ = Mode::kLength;
    remaining_ = framing.length;
  } else {
    mode_ = Mode::kUntilClose;
    keep_alive_ = false;
  }
}

HttpResponseParser::Progress HttpResponseParser::FeedBody(const char* data, size_t len,
                                                          BodySink on_body) {
  switch (mode_) {
    case Mode::kNone:
      if (len > 0) trailing_garbage_ = true;
      return Progress::kComplete;
    case Mode::kUntilClose:
      if (len > 0 && !on_body(std::string_view(data, len))) return Progress::kError;
      return Progress::kNeedMore;
    case Mode::kLength: {
      size_t take = static_cast<size_t>(std::min<int64_t>(remaining_, len));
      if (take > 0 && !on_body(std::string_view(data, take))) return Progress::kError;
      remaining_ -= static_cast<int64_t>(take);
      if (remaining_ > 0) return Progress::kNeedMore;
      if (len > take) trailing_garbage_ = true;
      return Progress::kComplete;
    }
    case Mode::kChunked:
      return FeedChunked(data, len, on_body);
  }
  return Fail("internal parser state");
}

HttpResponseParser::Progress HttpResponseParser::OnChunkSizeByte(char c) {
  int digit = HexDigit(c);
  if (digit >= 0) {
    if (remaining_ > (int64_t{1} << 40)) return Fail("chunk size too large");
    remaining_ = remaining_ * 16 + digit;
    size_digits_++;
  } else if (size_digits_ == 0) {
    return Fail("malformed chunk size");
  } else if (c == '\r') {
    chunk_state_ = ChunkState::kSizeLf;
  } else if (c == ';' || c == ' ' || c == '\t') {
    chunk_state_ = ChunkState::kExtension;
  } else {
    return Fail("malformed chunk size");
  }
  return Progress::kNeedMore;
}

// A state machine over the bytes: each state consumes one byte, except kData (a run of
// chunk bytes); kComplete at the LF of the empty line after the last chunk's trailers.
HttpResponseParser::Progress HttpResponseParser::FeedChunked(const char* data, size_t len,
                                                             BodySink on_body) {
  size_t i = 0;
  while (i < len) {
    char c = data[i];
    switch (chunk_state_) {
      case ChunkState::kSize:
        if (OnChunkSizeByte(c) == Progress::kError) return Progress::kError;
        ++i;
        break;
      case ChunkState::kExtension:
        if (c == '\r') chunk_state_ = ChunkState::kSizeLf;
        ++i;
        break;
      case ChunkState::kSizeLf:
        if (c != '\n') return Fail("malformed chunk size line");
        ++i;
        size_digits_ = 0;
        chunk_state_ = remaining_ == 0 ? ChunkState::kTrailerStart : ChunkState::kData;
        break;
      case ChunkState::kData: {
        size_t take = static_cast<size_t>(std::min<int64_t>(remaining_, len - i));
        if (!on_body(std::string_view(data + i, take))) return Progress::kError;
        i += take;
        remaining_ -= static_cast<int64_t>(take);
        if (remaining_ == 0) chunk_state_ = ChunkState::kDataCr;
        break;
      }
      case ChunkState::kDataCr:
        if (c != '\r') return Fail("chunk data not followed by CRLF");
        ++i;
        chunk_state_ = ChunkState::kDataLf;
        break;
      case ChunkState::kDataLf:
        if (c != '\n') return Fail("chunk data not followed by CRLF");
        ++i;
        chunk_state_ = ChunkState::kSize;
        break;
      case ChunkState::kTrailerStart:
        ++i;
        chunk_state_ = c == '\r' ? ChunkState::kEndLf : ChunkState::kTrailerLine;
        break;
      case ChunkState::kTrailerLine:
        ++i;
        if (c == '\r') chunk_state_ = ChunkState::kTrailerLf;
        break;
      case ChunkState::kTrailerLf:
        if (c != '\n') return Fail("malformed trailer");
        ++i;
        chunk_state_ = ChunkState::kTrailerStart;
        break;
      case ChunkState::kEndLf:
        if (c != '\n') return Fail("malformed last chunk");
        ++i;
        if (i < len) trailing_garbage_ = true;
        return Progress::kComplete;
    }
  }
  return Progress::kNeedMore;
}

}  // namespace vanguard::replayer
