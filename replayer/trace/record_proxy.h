// RecordProxy: `vanguard-replayer record`, an HTTP/1.1 reverse proxy (Boost.Beast) that
// captures live traffic into a trace. Clients send their requests to the proxy; each
// request is appended to the trace at its arrival time (inter-arrival, protocol and model
// from its path/body, the recordable headers, the body bytes), then forwarded to the
// upstream, whose response is relayed to the client (an upstream that cannot be reached gives
// the client 502). Once max_requests requests are recorded and answered, the
// proxy stops; the trace is flushed after every record, so a killed proxy leaves a trace
// that is valid up to its last whole record.
//
//   ASSIGN_OR_RETURN(auto proxy, RecordProxy::Create({.listen = "127.0.0.1:0",
//                                                     .upstream = "http://127.0.0.1:8000",
//                                                     .output = "live.vtr"}));
//   std::thread t([&] { status = proxy->Run(); });   // proxy->port() is known already
//   ... proxy->Stop();
//
// Threading: one io_context on the thread that calls Run(); every connection is a coroutine
// on it, so the trace writer needs no lock. Stop() and the accessors may be called from any
// thread. Responses are relayed piece by piece as they arrive (an SSE stream reaches the
// client live), re-framed as chunked when the upstream delimits a body by closing.
#ifndef VANGUARD_REPLAYER_TRACE_RECORD_PROXY_H_
#define VANGUARD_REPLAYER_TRACE_RECORD_PROXY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "replayer/trace/trace_format.h"

namespace vanguard::replayer {

struct RecordOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  std::string upstream;                // http://HOST:PORT (required)
  std::string output;                  // trace file to create (required)
  int64_t max_requests = 0;            // stop after this many; 0 = until stopped
  std::string port_file;               // RunRecordProxy: write "<port>\n" here once listening
  size_t max_body_bytes = kMaxTracePayloadBytes;
  // RunRecordProxy only: stop on SIGINT/SIGTERM (tests leave it off).
  bool stop_on_signals = false;
};

class RecordProxy {
 public:
  // Validates options (INVALID_ARGUMENT naming the field), creates the trace and binds the
  // listening socket (UNAVAILABLE if it cannot). `clock` (default: the real one) timestamps
  // arrivals; it must outlive the proxy.
  static absl::StatusOr<std::unique_ptr<RecordProxy>> Create(const RecordOptions& options,
                                                             Clock* clock = Clock::Real());
  ~RecordProxy();

  uint16_t port() const;
  // Serves on the calling thread until max_requests are recorded and answered, or Stop().
  // The trace is closed when it returns; an error writing it is returned.
  absl::Status Run();
  void Stop();
  int64_t requests_recorded() const;

 private:
  class Impl;
  explicit RecordProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The whole `record` subcommand: Create, print "LISTENING host:port" (and the port file),
// Run until done or SIGINT/SIGTERM, then a one-line summary on stderr.
absl::Status RunRecordProxy(RecordOptions options);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_TRACE_RECORD_PROXY_H_
