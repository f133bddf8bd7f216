// The seams between the replayer's engine (pacing, connections, accounting) and what it
// sends and reads: a RequestSource says what request i is (a synthetic template, or a record
// of a recorded trace), a ResponseHandler reads a response body for protocols that stream
// (OpenAI-compatible SSE) and reports content chunks, and an AsyncTransport carries protocols
// the engine's HTTP/1.1 client does not (KServe v2 gRPC). The full contract, with who
// implements what, is in /work/notes/replayer-interfaces.md.
//
//   // One source per event loop; loop `shard` of `shards` sends requests shard, shard+shards..
//   RequestSourceFactory sources = [](int shard, int shards) { ... };
//   OutgoingRequest request;
//   absl::Status s = source->Next(&request);  // views valid until the next Next()
//
// Threading: every object here is created for, and then called only by, one event-loop
// thread (factories may be called on any thread, once per loop, before the loops start).
// Nothing here may block or allocate per request in steady state.
#ifndef VANGUARD_REPLAYER_REQUEST_SOURCE_H_
#define VANGUARD_REPLAYER_REQUEST_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::replayer {

// One request to send. The views stay valid until the next call to Next() on the source
// that filled it (the engine copies the bytes into its connection buffer before that).
struct OutgoingRequest {
  std::string_view method = "POST";
  // Origin-form path and query, e.g. "/v2/models/m/infer". The engine prepends the target
  // URL's path prefix.
  std::string_view path;
  // Extra header lines, each "Name: value\r\n" (may be empty). The engine writes Host,
  // Content-Length and User-Agent itself; a source must not repeat them.
  std::string_view headers;
  std::string_view body;
  // SCHEDULE_TRACE: when this request was sent in the recording, as an offset from the
  // trace's first request. Non-decreasing along the trace. Ignored by other schedules.
  std::optional<absl::Duration> trace_offset;
  // Optional: the model this request is for (gRPC transports need it; HTTP ignores it).
  std::string_view model;
};

// What to send, request after request. Called by one event loop.
class RequestSource {
 public:
  virtual ~RequestSource() = default;

  // Fills *out with the next request.
  //  OK:            *out is filled.
  //  OUT_OF_RANGE:  no more requests (a trace that ended); the engine schedules nothing more
  //                 and the step ends early (its remaining windows are empty, not errors).
  //  anything else: the source is broken (e.g. a corrupt trace record); the step fails
  //                 with this status, whose message must name the file and record.
  virtual absl::Status Next(OutgoingRequest* out) = 0;

  // SCHEDULE_TRACE: the recording's own mean rate in requests per second, used to scale
  // trace offsets to the step's target rate: intended = trace_offset * recorded / target.
  // 0 when unknown, which makes SCHEDULE_TRACE an INVALID_ARGUMENT for this source.
  virtual double recorded_rate_qps() const { return 0; }
};

// Creates the source of loop `shard` (0 <= shard < shards). A sharded source yields the
// requests with index shard, shard + shards, ... of the whole stream, each with its own
// trace_offset, so the loops together send the whole stream with its timing.
using RequestSourceFactory =
    std::function<absl::StatusOr<std::unique_ptr<RequestSource>>(int shard, int shards)>;

// The synthetic source: the same request every time (a template rendered once).
class TemplateRequestSource final : public RequestSource {
 public:
  TemplateRequestSource(std::string method, std::string path, std::string headers, std::string body)
      : method_(std::move(method)),
        path_(std::move(path)),
        headers_(std::move(headers)),
        body_(std::move(body)) {}

  absl::Status Next(OutgoingRequest* out) override {
    out->method = method_;
    out->path = path_;
    out->headers = headers_;
    out->body = body_;
    out->trace_offset.reset();
    return absl::OkStatus();
  }

 private:
  const std::string method_;
  const std::string path_;
  const std::string headers_;
  const std::string body_;
};

// Reads response bodies for a protocol that streams (SSE) or checks bodies. One per
// connection, reused for every response on it; must not allocate per response in steady
// state. The engine does the HTTP framing (Content-Length, chunked, close) and hands over
// the decoded body only.
class ResponseHandler {
 public:
  virtual ~ResponseHandler() = default;

  // A new response starts (status line and headers read). Resets per-response state.
  virtual void Begin(int http_status) = 0;

  // The next piece of the body, in arrival order, split anywhere (mid-line, mid-event).
  // Returns how many content chunks (e.g. SSE events carrying nonempty output) completed
  // within this piece. The engine timestamps them at this call: the response's first chunk
  // gives TTFT (from the intended send time); each later call that completes chunks adds
  // one inter-chunk gap (now - time of the previous chunk) plus a zero gap for each further
  // chunk in the same piece. An error status means the stream is malformed: the request
  // counts as error class "malformed_stream", the connection is closed, nothing crashes.
  virtual absl::StatusOr<int> OnBody(std::string_view data) = 0;

  // The body is complete. An error status (no terminal event, a truncated event, an error
  // event from the server) counts the request as "malformed_stream" (or, if the status
  // message starts with "class=<name>;", as error class <name>).
  virtual absl::Status End() = 0;
};

// Creates one handler per connection. An empty factory means: only the status code counts
// (2xx = success), the body is discarded unread.
using ResponseHandlerFactory = std::function<std::unique_ptr<ResponseHandler>()>;

// A protocol with its own transport (KServe v2 gRPC over HTTP/2), driven by one event loop.
// The engine still owns pacing and accounting: it calls Send() at each request's intended
// time, watches completion_fd() in its epoll set, and drains completions when it is
// readable. Send/TakeCompletions/Cancel are called on the loop thread only; the transport
// may complete requests on its own threads but hands them over through its own queue and
// makes completion_fd() readable (e.g. an eventfd), never calling into the engine.
class AsyncTransport {
 public:
  struct Completion {
    uint64_t tag = 0;
    // CLOCK_MONOTONIC (std::chrono::steady_clock) nanoseconds: when the response ended and,
    // for streams, when its first content chunk arrived (0: none).
    int64_t done_ns = 0;
    int64_t first_chunk_ns = 0;
    int32_t chunks = 0;  // content chunks received (streams), else 0
    bool ok = false;
    // Error class when !ok, e.g. "grpc_UNAVAILABLE", "connect"; must point to storage that
    // lives as long as the transport (string literals or interned names).
    std::string_view error_class;
  };

  virtual ~AsyncTransport() = default;
  // Readable when TakeCompletions has something. Stays valid for the transport's life.
  virtual int completion_fd() const = 0;
  // Starts `request` now without blocking; `tag` comes back in its Completion. An error
  // means it could not even start and counts as an error of class "connect".
  virtual absl::Status Send(uint64_t tag, const OutgoingRequest& request) = 0;
  // Moves up to `max` ready completions into out[0..n) and returns n; resets the fd's
  // readiness when it has drained everything.
  virtual int TakeCompletions(Completion* out, int max) = 0;
  // The engine gave up on `tag` (timeout or step end); its completion, if it still comes,
  // must not be reported.
  virtual void Cancel(uint64_t tag) = 0;
};

// One transport per loop. An empty factory means the engine's own HTTP/1.1 client.
using AsyncTransportFactory =
    std::function<absl::StatusOr<std::unique_ptr<AsyncTransport>>(int shard, int shards)>;

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_REQUEST_SOURCE_H_
