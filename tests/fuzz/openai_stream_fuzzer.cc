// Fuzzes the decoder of OpenAI-compatible streamed responses (replayer::OpenAiStreamDecoder:
// SSE events holding completion / chat chunks as JSON). Input: the de-chunked body of a 200
// response.
//
// Contract checked: never throws or crashes; the same counts, end and outcome whether fed at
// once, one byte at a time or in pieces of 1-7 bytes; the chunks Feed reports add up to
// content_chunks(), which is at most one per 8 input bytes (the shortest content event,
// `data:{"choices":[{"text":"x"}]}`, is longer); output_tokens() is never negative; an error
// is INVALID_ARGUMENT carrying one of the documented classes (the engine counts failures by
// that class), is sticky (Feed and Finish return it again) and Finish reports a stream
// without "data: [DONE]" as stream_truncated; a non-2xx response's body is not decoded.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "replayer/protocols/openai_stream.h"
#include "tests/fuzz/fuzz_harnesses.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "openai_stream";

constexpr std::string_view kClasses[] = {"stream_sse_syntax",      "stream_bad_json",
                                         "stream_error_event",     "stream_no_choices",
                                         "stream_data_after_done", "stream_truncated"};

struct Outcome {
  absl::Status end;  // Finish(), or the first error Feed returned
  int64_t chunks = 0;
  int64_t output_tokens = 0;
  bool saw_done = false;
  std::string finish_reason;
  bool operator==(const Outcome& o) const {
    return end == o.end && chunks == o.chunks && output_tokens == o.output_tokens &&
           saw_done == o.saw_done && finish_reason == o.finish_reason;
  }
};

void CheckError(const absl::Status& status) {
  VANGUARD_FUZZ_CHECK(kName, status.code() == absl::StatusCode::kInvalidArgument);
  const std::string_view error_class = replayer::StreamErrorClass(status);
  bool known = false;
  for (std::string_view c : kClasses) known = known || c == error_class;
  VANGUARD_FUZZ_CHECK(kName, known);
}

template <typename PieceSize>
Outcome Decode(replayer::OpenAiStreamDecoder& decoder, std::string_view body, PieceSize piece) {
  decoder.Begin(200);
  Outcome out;
  int64_t reported = 0;
  for (size_t i = 0, n = 0; i < body.size(); i += n) {
    n = std::min(piece(), body.size() - i);
    absl::StatusOr<int> chunks = decoder.Feed(body.substr(i, n));
    if (!chunks.ok()) {
      out.end = chunks.status();
      CheckError(out.end);
      VANGUARD_FUZZ_CHECK(kName, decoder.Feed("data: [DONE]\n\n").status() == out.end);
      VANGUARD_FUZZ_CHECK(kName, decoder.Finish() == out.end);
      break;
    }
    VANGUARD_FUZZ_CHECK(kName, *chunks >= 0);
    reported += *chunks;
  }
  if (out.end.ok()) {
    out.end = decoder.Finish();
    if (!out.end.ok()) CheckError(out.end);
    VANGUARD_FUZZ_CHECK(kName, out.end.ok() == decoder.saw_done());
    if (!decoder.saw_done()) {
      VANGUARD_FUZZ_CHECK(kName, replayer::StreamErrorClass(out.end) == "stream_truncated");
    }
  }
  out.chunks = decoder.content_chunks();
  out.output_tokens = decoder.output_tokens();
  out.saw_done = decoder.saw_done();
  out.finish_reason = decoder.finish_reason();
  VANGUARD_FUZZ_CHECK(kName, reported <= out.chunks);
  if (out.end.ok() || replayer::StreamErrorClass(out.end) == "stream_truncated") {
    VANGUARD_FUZZ_CHECK(kName, reported == out.chunks);
  }
  VANGUARD_FUZZ_CHECK(kName, out.chunks <= static_cast<int64_t>(body.size() / 8));
  VANGUARD_FUZZ_CHECK(kName, out.output_tokens >= 0);
  return out;
}

}  // namespace

int FuzzOpenAiStream(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  replayer::OpenAiStreamDecoder decoder;
  const Outcome whole = Decode(decoder, body, [&] { return body.size(); });
  VANGUARD_FUZZ_CHECK(kName, whole == Decode(decoder, body, [] { return size_t{1}; }));
  size_t k = 0;
  VANGUARD_FUZZ_CHECK(kName, whole == Decode(decoder, body, [&] { return size_t{1} + k++ % 7; }));
  // A non-2xx body is counted by its status, never decoded.
  decoder.Begin(503);
  absl::StatusOr<int> ignored = decoder.Feed(body);
  VANGUARD_FUZZ_CHECK(kName, ignored.ok() && *ignored == 0);
  VANGUARD_FUZZ_CHECK(kName, decoder.Finish().ok());
  return 0;
}

}  // namespace vanguard::fuzz
