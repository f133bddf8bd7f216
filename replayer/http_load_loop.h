// HttpLoadLoop: the sending half of the replayer. One Boost.Asio io_context on one thread
// runs a whole step open-loop against a KServe v2 REST endpoint over HTTP/1.1 keep-alive:
//
//  * Pacing: a steady_timer (timerfd on Linux) armed at the absolute time t0 + intended
//    offset of the next request from SendSchedule; when it fires, every request whose
//    intended time has come is dispatched (with its own intended time, so a late loop
//    shows as send skew and as latency, never as a quietly shifted schedule).
//  * Connection pool: a dispatched request takes an idle keep-alive connection; if none is
//    idle, a new one is opened, up to max_connections; beyond that it waits in a FIFO
//    (its latency clock already running from its intended time). If in-flight (on the wire,
//    connecting or waiting) has reached max_in_flight, the request is dropped and counted.
//  * Timeouts: a request still open at intended + request_timeout is a timeout (censored);
//    its connection is closed. Requests waiting in the FIFO time out the same way.
//  * The step ends when the schedule is exhausted and nothing is in flight; every request's
//    deadline bounds that by warmup + duration + request_timeout.
//
// Everything is recorded into a StepAccounting owned by the loop; closed windows are handed
// to `on_windows` (called on the loop thread; it must not block). Steady state allocates
// nothing per request: the request bytes are built once, responses go through a parser that
// only keeps the status code, connections and their buffers are reused.
//
// Scaling out later: run one HttpLoadLoop per core, each with its own slice of the schedule
// (e.g. every Nth request), and merge their WindowTally/StepTally by window index — the
// accounting types merge exactly.
//
//   HttpLoadLoop loop(config, [&](std::vector<WindowTally> w) { mailbox.Push(std::move(w)); });
//   std::thread t([&] { status = loop.Run(); });
//   ... loop.Stop();  // from any thread, to cancel
//   t.join();
//   BuildStepResult(loop.accounting().measured(), ...);
#ifndef VANGUARD_REPLAYER_HTTP_LOAD_LOOP_H_
#define VANGUARD_REPLAYER_HTTP_LOAD_LOOP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "replayer/step_accounting.h"
#include "replayer/step_config.h"

namespace vanguard::replayer {

class HttpLoadLoop {
 public:
  using WindowsCallback = std::function<void(std::vector<WindowTally>)>;

  // Constructed on any thread; `config` must come from ParseStepConfig.
  HttpLoadLoop(const StepConfig& config, WindowsCallback on_windows);
  ~HttpLoadLoop();
  HttpLoadLoop(const HttpLoadLoop&) = delete;
  HttpLoadLoop& operator=(const HttpLoadLoop&) = delete;

  // Runs the whole step on the calling thread (the loop thread); call once. Returns OK when
  // every request is resolved and every window delivered; CANCELLED after Stop();
  // UNAVAILABLE if the target host does not resolve.
  absl::Status Run();

  // Asks Run() to stop promptly, abandoning open requests. Any thread, any time.
  void Stop();

  // The step's accounting; read it only after Run() has returned.
  const StepAccounting& accounting() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_HTTP_LOAD_LOOP_H_
