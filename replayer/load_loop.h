// LoadLoop: the sending half of the replayer, one per event-loop thread. It runs its shard
// of a step against one target or several endpoints (replicas of one model) over HTTP/1.1
// keep-alive (or an AsyncTransport such as gRPC, one target only), on raw non-blocking
// sockets and one epoll set, and records everything into its own StepAccounting, and what
// each endpoint got into its EndpointAccounting. Several loops run a step together (each its own
// shard of the schedule); StepRunner merges their windows and tallies exactly.
//
//  * Pacing (open loop): the loop sleeps in epoll_pwait2 until the absolute time
//    t0 + intended offset of its next request (a nanosecond timeout with 1 ns timer slack;
//    a timerfd where epoll_pwait2 is missing), then dispatches every request whose time has
//    come with its own intended time, so a late loop shows as send skew and as latency,
//    never as a quietly shifted schedule. A request found a whole request timeout late is
//    counted as never dispatched.
//  * Reading (plain HTTP, open loop: "polled mode"): the loop does not wake for each
//    response; at each wake-up (a send, or housekeeping every 2 ms) it reads whatever
//    arrived and times each response by the kernel's receive timestamp (SO_TIMESTAMPNS), so
//    latencies stay exact while wake-ups — the dominant CPU cost per request, especially in
//    VMs — drop to one per send. It also wakes at most once per 100 us: above 10,000 req/s
//    per loop several requests leave per wake-up, each with its own recorded skew (under
//    100 us plus wake-up latency). Streams (chunk timing), gRPC and the closed loop use
//    readiness wake-ups instead.
//  * Closed loop (`concurrency` > 0, for comparisons only): the shard keeps its share of
//    `concurrency` requests outstanding and sends the next one when one ends; its intended
//    time is its actual send time.
//  * Endpoints: each dispatched request goes to the endpoint the loop's EndpointChooser picks
//    (config.endpoint_policy; p2c reads this loop's in-flight per endpoint). Connections
//    belong to one endpoint; the connection cap is shared by all of them: a full pool with
//    idle connections to other endpoints closes one to make room, and a connection freed
//    while the oldest waiting request is for another endpoint is traded for one to it.
//  * Connections: a dispatched request takes an idle keep-alive connection; if none is idle
//    a new one is opened, up to the shard's share of max_connections; beyond that it waits
//    in a FIFO (its latency clock already running) and is counted as a connection wait,
//    which makes the step client-invalid. If in-flight has reached the shard's
//    share of max_in_flight, the request is dropped and counted, never delayed.
//  * Stale connections: an idle connection that turns readable (the server closed it) is
//    dropped. A request whose reused connection fails before any byte of its response came
//    back (the server closed it as the request went out: an idle keep-alive timeout racing
//    the send) is sent again once on a new connection, counted in
//    StepResult.stale_connection_retries, not as an error; its latency still runs from its
//    intended time. A new connection's failure, or a second one, is the request's error.
//  * Timeouts: a request still open at intended + request_timeout is a timeout (censored);
//    its connection is closed. Checked every few milliseconds.
//  * Self-check: thread CPU time (CLOCK_THREAD_CPUTIME_ID) per window and per 5 s span; and,
//    for the client-validity gate to name its cause (client_diagnosis.h), over the measured
//    part: this thread's run-queue wait and involuntary switches (/proc/thread-self, read
//    when the measured part starts and when the schedule is exhausted), how late each timed
//    sleep woke, the connections opened, and late sends (StepAccounting).
//
// Steady state allocates nothing per request: connections, their buffers and the FIFO's
// slots are reused; the HTTP response parser (http_response_parser.h) works in place.
//
//   LoadLoop loop(config, shard, shards, endpoint, std::move(parts), on_windows);
//   std::thread t([&] { status = loop.Run(); });
//   loop.Stop();  // any thread, to cancel
//   t.join();
//
// Run() runs on its own thread; Stop() on any; on_windows is called on the loop thread and
// must not block.
#ifndef VANGUARD_REPLAYER_LOAD_LOOP_H_
#define VANGUARD_REPLAYER_LOAD_LOOP_H_

#include <sys/socket.h>

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "replayer/endpoint_accounting.h"
#include "replayer/endpoint_chooser.h"
#include "replayer/proc_sched.h"
#include "replayer/request_source.h"
#include "replayer/step_accounting.h"
#include "replayer/step_config.h"

namespace vanguard::replayer {

// The error class of every request of a step whose resolved target the target policy
// refused (StepRunner decides; the loop then connects to nothing).
inline constexpr std::string_view kErrorTargetRefused = "target_refused";

// A resolved target address.
struct TargetAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  // The target policy refused this address: each request is counted as an error of class
  // kErrorTargetRefused when it is due, and no socket is opened.
  bool refused = false;
};

// Resolves config.target.host once for all loops (prefers IPv4: "localhost" often resolves
// to ::1 first while local servers listen on 127.0.0.1). UNAVAILABLE if it does not resolve.
absl::StatusOr<TargetAddress> ResolveTarget(const HttpTarget& target);

// What one loop sends and how it reads answers; see request_source.h.
struct LoopParts {
  std::unique_ptr<RequestSource> source;
  ResponseHandlerFactory handlers;            // may be empty
  std::unique_ptr<AsyncTransport> transport;  // null: the built-in HTTP/1.1 client
  // Where the loop reads its own scheduler counters (proc_sched.h); null: the real /proc.
  // Must outlive the loop.
  const ProcReader* proc = nullptr;
};

class LoadLoop {
 public:
  using WindowsCallback = std::function<void(std::vector<WindowTally>)>;

  // `config` must come from ParseStepConfig; 0 <= shard < shards, where shard/shards index
  // the whole step's schedule (config.shard * config.threads + loop, of
  // config.shard_count * config.threads).
  LoadLoop(const StepConfig& config, int shard, int shards, const TargetAddress& target,
           LoopParts parts, WindowsCallback on_windows);
  // Several endpoints: `targets[i]` is config.endpoints[i] resolved (at least one; a
  // transport in `parts` needs exactly one).
  LoadLoop(const StepConfig& config, int shard, int shards, std::vector<TargetAddress> targets,
           LoopParts parts, WindowsCallback on_windows);
  ~LoadLoop();
  LoadLoop(const LoadLoop&) = delete;
  LoadLoop& operator=(const LoadLoop&) = delete;

  // Runs the shard to its end on the calling thread; call once. OK when every request is
  // resolved and every window delivered; CANCELLED after Stop(); the source's status if it
  // broke; INVALID_ARGUMENT for SCHEDULE_TRACE without trace times; INTERNAL if epoll fails.
  absl::Status Run();

  // Asks Run() to stop promptly, abandoning open requests. Any thread, any time.
  void Stop();

  // Read only after Run() has returned.
  const StepAccounting& accounting() const;
  const EndpointAccounting& endpoint_accounting() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_LOAD_LOOP_H_
