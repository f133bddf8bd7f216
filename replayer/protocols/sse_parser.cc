// See sse_parser.h.
#include "replayer/protocols/sse_parser.h"

#include "absl/strings/str_cat.h"

namespace vanguard::replayer {

void SseParser::Reset() {
  line_.clear();
  data_.clear();
  event_.clear();
  id_.clear();
  has_data_ = false;
  skip_lf_ = false;
}

absl::Status SseParser::Feed(std::string_view bytes,
                             absl::FunctionRef<void(const SseEvent&)> on_event) {
  size_t i = 0;
  if (skip_lf_ && !bytes.empty()) {
    if (bytes[0] == '\n') i = 1;
    skip_lf_ = false;
  }
  while (i < bytes.size()) {
    // Take everything up to the next line end in one append.
    size_t end = bytes.find_first_of(std::string_view("\r\n\0", 3), i);
    size_t stop = end == std::string_view::npos ? bytes.size() : end;
    if (line_.size() + (stop - i) > max_event_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("SSE line longer than ", max_event_bytes_, " bytes"));
    }
    line_.append(bytes.data() + i, stop - i);
    if (end == std::string_view::npos) break;
    if (bytes[end] == '\0') return absl::InvalidArgumentError("NUL byte in SSE stream");
    i = end + 1;
    if (bytes[end] == '\r') {
      if (i < bytes.size()) {
        if (bytes[i] == '\n') ++i;
      } else {
        skip_lf_ = true;  // a CRLF split across pieces
      }
    }
    absl::Status status = ProcessLine(on_event);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SseParser::ProcessLine(absl::FunctionRef<void(const SseEvent&)> on_event) {
  if (line_.empty()) {  // blank line: dispatch
    if (has_data_) {
      on_event(SseEvent{event_, data_, id_});
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    return absl::OkStatus();
  }
  if (line_[0] == ':') {  // comment (often a keep-alive)
    line_.clear();
    return absl::OkStatus();
  }
  std::string_view line = line_;
  std::string_view field = line;
  std::string_view value;
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("SSE event longer than ", max_event_bytes_, " bytes"));
    }
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    id_.assign(value);
  }
  // "retry" and unknown fields are ignored, as the spec says.
  line_.clear();
  return absl::OkStatus();
}

void ChunkedBodyDecoder::Reset() {
  state_ = State::kSize;
  remaining_ = 0;
  size_digits_ = 0;
  trailer_line_bytes_ = 0;
}

absl::Status ChunkedBodyDecoder::Feed(std::string_view bytes,
                                      absl::FunctionRef<void(std::string_view)> on_data) {
  size_t i = 0;
  while (i < bytes.size()) {
    char c = bytes[i];
    switch (state_) {
      case State::kSize: {
        int digit = -1;
        if (c >= '0' && c <= '9') digit = c - '0';
        if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        if (digit >= 0) {
          if (++size_digits_ > 15) return absl::InvalidArgumentError("chunk size too large");
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(digit);
        } else if (size_digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = State::kSizeExtension;
        } else if (size_digits_ > 0 && c == '\r') {
          state_ = State::kSizeLf;
        } else {
          return absl::InvalidArgumentError(absl::StrCat("malformed chunk size (byte 0x",
                                                         absl::Hex(static_cast<uint8_t>(c)), ")"));
        }
        ++i;
        break;
      }
      case State::kSizeExtension:
        if (c == '\r') state_ = State::kSizeLf;
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') return absl::InvalidArgumentError("chunk size line not ended by CRLF");
        ++i;
        state_ = remaining_ == 0 ? State::kTrailer : State::kData;
        trailer_line_bytes_ = 0;
        break;
      case State::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size() - i));
        on_data(bytes.substr(i, take));
        i += take;
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c != '\r') return absl::InvalidArgumentError("chunk data not followed by CRLF");
        ++i;
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return absl::InvalidArgumentError("chunk data not followed by CRLF");
        ++i;
        state_ = State::kSize;
        size_digits_ = 0;
        remaining_ = 0;
        break;
      case State::kTrailer:
        // Trailer lines until an empty line; only the empty line's CRLF ends the body.
        if (c == '\n') {
          if (trailer_line_bytes_ == 0) {
            state_ = State::kDone;
          }
          trailer_line_bytes_ = 0;
        } else if (c != '\r') {
          if (++trailer_line_bytes_ > 8192) return absl::InvalidArgumentError("trailer too long");
        }
        ++i;
        break;
      case State::kDone:
        return absl::InvalidArgumentError("bytes after the last chunk");
    }
  }
  return absl::OkStatus();
}

}  // namespace vanguard::replayer
