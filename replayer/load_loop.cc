// The epoll event loop behind LoadLoop; see load_loop.h. Everything in Impl except Stop()
// runs on the loop thread (the thread inside Run()), so Impl has no locks.
#include "replayer/load_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "replayer/http_response_parser.h"
#include "replayer/send_schedule.h"

namespace vanguard::replayer {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// How often the loop expires timed-out requests, samples its CPU and closes windows.
constexpr int64_t kHousekeepingNs = 2'000'000;
// At most this many due requests are dispatched before I/O gets a turn; the rest follow
// immediately (with their original intended times).
constexpr int kMaxBurst = 256;
constexpr int kMaxEvents = 256;
// Polled mode sleeps at least this long between wake-ups (see Loop()).
constexpr int64_t kWakeQuantumNs = 100'000;
// A connection's read buffer, which holds a whole response header: as large as the parser
// accepts.
constexpr size_t kReadBufferBytes = HttpResponseParser::kDefaultMaxHeaderBytes;
// epoll user data for the two non-connection fds.
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kTimerTag = 2;
constexpr uint64_t kTransportTag = 3;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

absl::Duration Ns(int64_t ns) { return absl::Nanoseconds(ns); }

// One request in flight (or waiting for a connection). Times are ns offsets from t0.
struct RequestState {
  int64_t intended = 0;
  int64_t sent = 0;
  int64_t deadline = 0;
  int64_t received = 0;  // polled mode: kernel receive time of the latest bytes
  int64_t first_chunk = -1;
  int64_t last_chunk = -1;
  int64_t chunks = 0;
  int endpoint = 0;            // index in the step's endpoints
  bool sent_recorded = false;  // counted as sent (once, whatever its retry)
  bool retried = false;        // resent once after its reused connection was found closed
};

struct Connection {
  enum class State { kClosed, kConnecting, kActive, kIdle };
  int fd = -1;
  State state = State::kClosed;
  bool want_write = false;
  std::string out;  // the request's bytes; capacity reused
  size_t out_offset = 0;
  std::unique_ptr<char[]> in;  // kReadBufferBytes
  size_t in_len = 0;
  HttpResponseParser parser;
  std::unique_ptr<ResponseHandler> handler;
  RequestState request;
  int endpoint = 0;            // where it is connected (index in the step's endpoints)
  size_t idle_position = 0;    // index in Impl::idle_[endpoint] while idle
  size_t active_position = 0;  // index in Impl::active_ while connecting/active
  int64_t responses = 0;       // responses completed on it: a reused connection when > 0
};

// Waiting for a free connection, in intended-time order.
struct PendingRequest {
  RequestState request;
  std::string bytes;  // capacity reused
};

}  // namespace

absl::StatusOr<TargetAddress> ResolveTarget(const HttpTarget& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* results = nullptr;
  std::string port = std::to_string(target.port);
  int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &results);
  if (rc != 0 || results == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("target: cannot resolve host \"", target.host,
                     "\": ", rc != 0 ? gai_strerror(rc) : "no addresses"));
  }
  const addrinfo* chosen = results;
  for (const addrinfo* a = results; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  }
  TargetAddress address;
  std::memcpy(&address.address, chosen->ai_addr, chosen->ai_addrlen);
  address.length = chosen->ai_addrlen;
  freeaddrinfo(results);
  return address;
}

class LoadLoop::Impl {
 public:
  Impl(const StepConfig& config, int shard, int shards, std::vector<TargetAddress> targets,
       LoopParts parts, WindowsCallback on_windows)
      : config_(config),
        shard_(shard),
        shards_(shards),
        targets_(std::move(targets)),
        chooser_(config.endpoint_policy, static_cast<int>(targets_.size()), config.seed,
                 static_cast<uint64_t>(shard)),
        endpoint_accounting_(static_cast<int>(targets_.size()), config.warmup),
        source_(std::move(parts.source)),
        handlers_(std::move(parts.handlers)),
        transport_(std::move(parts.transport)),
        on_windows_(std::move(on_windows)),
        accounting_(WindowLayout(config.warmup, config.duration, config.window),
                    RequestSlo{config.slo_latency, config.slo_ttft}),
        total_ns_(absl::ToInt64Nanoseconds(config.total())),
        timeout_ns_(absl::ToInt64Nanoseconds(config.request_timeout)),
        warmup_ns_(absl::ToInt64Nanoseconds(config.warmup)),
        max_connections_(Share(config.max_connections)),
        max_in_flight_(Share(config.max_in_flight)) {
    accounting_.SetConnectionCap(max_connections_);
    idle_.resize(targets_.size());
    for (size_t i = 0; i < targets_.size(); ++i) {
      const HttpTarget& endpoint =
          i < config.endpoints.size() ? config.endpoints[i] : config.target;
      std::string host = endpoint.host.find(':') != std::string::npos
                             ? absl::StrCat("[", endpoint.host, "]")
                             : endpoint.host;
      host_headers_.push_back(absl::StrCat(host, ":", endpoint.port));
      path_prefixes_.push_back(endpoint.path_prefix);
    }
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    proc_ = parts.proc != nullptr ? parts.proc : &DefaultProcReader();
  }

  ~Impl() {
    for (auto& connection : connections_) {
      if (connection->fd >= 0) close(connection->fd);
    }
    if (timer_fd_ >= 0) close(timer_fd_);
    if (sleep_epoll_fd_ >= 0) close(sleep_epoll_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  absl::Status Run() {
    absl::Status status = Setup();
    if (status.ok()) status = Loop();
    Shutdown();
    return status;
  }

  void Stop() {
    stop_requested_.store(true, std::memory_order_relaxed);
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  }

  const StepAccounting& accounting() const { return accounting_; }
  const EndpointAccounting& endpoint_accounting() const { return endpoint_accounting_; }

 private:
  // This loop's part of a per-replayer cap (at least 1): caps are shared by the loops of one
  // replayer (loop t of it is global shard shard * threads + t).
  int Share(int total) const {
    const int loops = config_.threads;
    const int local = shard_ % loops;
    return std::max(1, total / loops + (local < total % loops ? 1 : 0));
  }

  absl::Status Setup() {
    // Sleep precisely: the default 50 us timer slack would be all of our skew budget.
    const auto slack = static_cast<unsigned long>(std::max<int64_t>(1, config_.timer_slack_ns));
    prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    interned_classes_.reserve(64);  // string_views into it must stay valid
    if (source_ == nullptr) {
      return absl::InternalError("load loop: no request source");
    }
    if (targets_.empty() || (transport_ != nullptr && targets_.size() != 1)) {
      return absl::InvalidArgumentError(
          "load loop: needs one target, or several endpoints without a transport");
    }
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) {
      return absl::InternalError(absl::StrCat("load loop: epoll/eventfd: ", strerror(errno)));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    if (transport_ != nullptr) {
      ev.data.u64 = kTransportTag;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, transport_->completion_fd(), &ev) != 0) {
        return absl::InternalError(absl::StrCat(
            "load loop: cannot watch the transport's completion fd: ", strerror(errno)));
      }
    }
    if (config_.closed_loop()) {
      closed_loop_owed_ = Share(config_.concurrency);
    } else if (config_.schedule == v1::SCHEDULE_TRACE) {
      double recorded = source_->recorded_rate_qps();
      if (!(recorded > 0)) {
        return absl::InvalidArgumentError(
            "schedule: SCHEDULE_TRACE needs a source that knows its recorded rate");
      }
      trace_scale_ = recorded / config_.rate_qps;
    } else {
      ScheduleSpec spec;
      spec.kind = config_.schedule;
      spec.rate_qps = config_.rate_qps;
      spec.ramp_end_qps = config_.ramp_end_qps;
      spec.seed = config_.seed;
      spec.end = config_.total();
      spec.shard = shard_;
      spec.shards = shards_;
      absl::StatusOr<SendSchedule> schedule = SendSchedule::Create(spec);
      if (!schedule.ok()) return schedule.status();
      schedule_.emplace(*std::move(schedule));
    }
    // Polled mode (plain HTTP, open loop): read responses once per wake-up instead of waking
    // for each. Streams (chunk timing), transports and closed loops need readiness wake-ups.
    polled_ = !config_.closed_loop() && !handlers_ && transport_ == nullptr && ProbePwait2();
    if (polled_) {
      sleep_epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
      epoll_event wake{};
      wake.events = EPOLLIN;
      wake.data.u64 = kWakeTag;
      if (sleep_epoll_fd_ < 0 || epoll_ctl(sleep_epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
        return absl::InternalError(absl::StrCat("load loop: epoll: ", strerror(errno)));
      }
    }
    t0_ = MonotonicNs();
    timespec realtime;
    clock_gettime(CLOCK_REALTIME, &realtime);
    realtime_at_t0_ = static_cast<int64_t>(realtime.tv_sec) * kNanosPerSecond + realtime.tv_nsec;
    housekeeping_next_ = 0;
    cpu_last_ = ThreadCpuNs();
    span_start_ = -1;
    if (!config_.closed_loop()) Advance();
    return failure_;
  }

  // --- the loop ------------------------------------------------------------------------------

  absl::Status Loop() {
    epoll_event events[kMaxEvents];
    while (true) {
      if (stop_requested_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("step cancelled");
      }
      int64_t now = Now();
      if (config_.closed_loop()) {
        while (closed_loop_owed_ > 0 && now < total_ns_) {
          --closed_loop_owed_;
          DispatchClosedLoop(now);
          now = Now();
        }
      } else {
        DispatchDue(now);
      }
      if (!failure_.ok()) return failure_;
      now = Now();
      if (now >= housekeeping_next_) {
        Housekeeping(now);
        housekeeping_next_ = now + kHousekeepingNs;
      }
      if (Finished(now)) {
        FinishAccounting(now);
        return absl::OkStatus();
      }
      int64_t wake_at = housekeeping_next_;
      if (!config_.closed_loop() && has_next_) wake_at = std::min(wake_at, next_intended_);
      if (config_.closed_loop() && closed_loop_owed_ > 0 && now < total_ns_) wake_at = now;
      if (polled_) {
        // Read whatever arrived (kernel receive timestamps keep latencies exact), then sleep
        // until the next send without waking for each response.
        int n = epoll_wait(epoll_fd_, events, kMaxEvents, 0);
        if (n < 0 && errno != EINTR) {
          return absl::InternalError(absl::StrCat("epoll: ", strerror(errno)));
        }
        for (int i = 0; i < n; ++i) HandleEvent(events[i]);
        if (n == kMaxEvents) continue;  // more may be ready
        // At most one wake-up per quantum: above 1/quantum requests per second several
        // leave per wake-up (each with its own, honest skew), which is what keeps the CPU
        // cost per request near a saturating closed-loop client's.
        // Never delays a request that is already due (a loop catching up does not sleep).
        if (wake_at > Now()) wake_at = std::max(wake_at, last_wake_ + kWakeQuantumNs);
        if (!Sleep(wake_at - Now())) {
          return absl::InternalError(absl::StrCat("epoll: ", strerror(errno)));
        }
        continue;
      }
      int n = Wait(events, wake_at - Now());
      if (n < 0) return absl::InternalError(absl::StrCat("epoll: ", strerror(errno)));
      for (int i = 0; i < n; ++i) HandleEvent(events[i]);
    }
  }

  // Polled mode: sleeps up to `timeout_ns` on a set holding only the wake-up eventfd.
  bool Sleep(int64_t timeout_ns) {
    if (timeout_ns <= 0) return true;
    struct WakeStamp {
      Impl* impl;
      ~WakeStamp() { impl->last_wake_ = impl->Now(); }
    } stamp{this};
    epoll_event event;
    timespec ts{static_cast<time_t>(timeout_ns / kNanosPerSecond),
                static_cast<long>(timeout_ns % kNanosPerSecond)};
    const int64_t due = Now() + timeout_ns;
    int n = epoll_pwait2(sleep_epoll_fd_, &event, 1, &ts, nullptr);
    if (n < 0 && errno != EINTR) return false;
    if (n == 1) HandleEvent(event);
    if (n == 0) RecordWakeup(due);
    return true;
  }

  int64_t Now() const { return MonotonicNs() - t0_; }

  // A timed sleep meant to end at `due` has ended (by its timeout).
  void RecordWakeup(int64_t due) {
    int64_t now = Now();
    accounting_.OnWakeup(Ns(now), Ns(now - due));
  }

  bool ProbePwait2() {
    epoll_event event;
    timespec zero{0, 0};
    return epoll_pwait2(epoll_fd_, &event, 1, &zero, nullptr) >= 0 || errno != ENOSYS;
  }

  // Waits for I/O for at most `timeout_ns` (<= 0: just polls).
  int Wait(epoll_event* events, int64_t timeout_ns) {
    if (timeout_ns < 0) timeout_ns = 0;
    while (true) {
      int n;
      if (use_pwait2_) {
        timespec ts{static_cast<time_t>(timeout_ns / kNanosPerSecond),
                    static_cast<long>(timeout_ns % kNanosPerSecond)};
        const int64_t due = Now() + timeout_ns;
        n = epoll_pwait2(epoll_fd_, events, kMaxEvents, &ts, nullptr);
        if (n < 0 && errno == ENOSYS) {
          use_pwait2_ = false;
          continue;
        }
        if (n == 0 && timeout_ns > 0) RecordWakeup(due);
      } else {
        n = WaitWithTimerfd(events, timeout_ns);
      }
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  // Fallback for kernels without epoll_pwait2: an absolute timerfd in the epoll set.
  int WaitWithTimerfd(epoll_event* events, int64_t timeout_ns) {
    if (timeout_ns == 0) return epoll_wait(epoll_fd_, events, kMaxEvents, 0);
    if (timer_fd_ < 0) {
      timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kTimerTag;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);
    }
    int64_t at = MonotonicNs() + timeout_ns;
    itimerspec spec{};
    spec.it_value.tv_sec = at / kNanosPerSecond;
    spec.it_value.tv_nsec = at % kNanosPerSecond;
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
    return epoll_wait(epoll_fd_, events, kMaxEvents, -1);
  }

  bool Finished(int64_t now) const {
    if (in_flight_ > 0) return false;
    if (config_.closed_loop()) return now >= total_ns_;
    return !has_next_;
  }

  void HandleEvent(const epoll_event& event) {
    uint64_t tag = event.data.u64;
    if (tag == kWakeTag) {
      uint64_t value;
      (void)!read(wake_fd_, &value, sizeof(value));
      return;
    }
    if (tag == kTimerTag) {
      uint64_t expirations;
      (void)!read(timer_fd_, &expirations, sizeof(expirations));
      return;
    }
    if (tag == kTransportTag) {
      DrainTransport();
      return;
    }
    auto* connection = reinterpret_cast<Connection*>(tag);
    switch (connection->state) {
      case Connection::State::kClosed:
        return;
      case Connection::State::kIdle:
        // An idle keep-alive connection should stay silent; readable means the server
        // closed it (or misbehaved): drop it before a request is lost on it.
        CloseConnection(connection);
        return;
      case Connection::State::kConnecting:
        OnConnected(connection);
        return;
      case Connection::State::kActive:
        if ((event.events & EPOLLOUT) && connection->want_write) {
          if (!TryWrite(connection)) return;
        }
        if (event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadResponse(connection);
        return;
    }
  }

  // --- the schedule ----------------------------------------------------------------------------

  // Fetches the next request of an open-loop schedule into next_request_/next_intended_.
  void Advance() {
    if (config_.schedule == v1::SCHEDULE_TRACE) {
      absl::Status status = source_->Next(&next_request_);
      if (!status.ok()) {
        has_next_ = false;
        if (status.code() != absl::StatusCode::kOutOfRange) failure_ = status;
        return;
      }
      if (!next_request_.trace_offset.has_value()) {
        has_next_ = false;
        failure_ = absl::InvalidArgumentError(
            "schedule: SCHEDULE_TRACE needs a trace time on every request; the source gave "
            "none");
        return;
      }
      double at = absl::ToDoubleNanoseconds(*next_request_.trace_offset) * trace_scale_;
      if (!(at >= 0) || at >= static_cast<double>(total_ns_)) {
        has_next_ = false;
        return;
      }
      next_intended_ = static_cast<int64_t>(at);
      has_next_ = true;
      return;
    }
    std::optional<absl::Duration> at = schedule_->Next();
    if (!at.has_value()) {
      has_next_ = false;
      return;
    }
    absl::Status status = source_->Next(&next_request_);
    if (!status.ok()) {
      has_next_ = false;
      if (status.code() != absl::StatusCode::kOutOfRange) failure_ = status;
      return;
    }
    next_intended_ = absl::ToInt64Nanoseconds(*at);
    has_next_ = true;
  }

  void DispatchDue(int64_t now) {
    for (int burst = 0; burst < kMaxBurst && has_next_ && next_intended_ <= now; ++burst) {
      int64_t intended = next_intended_;
      accounting_.OnScheduled(Ns(intended));
      if (now - intended > timeout_ns_) {
        accounting_.OnNeverDispatched(Ns(intended));
      } else if (in_flight_ >= max_in_flight_) {
        accounting_.OnDropped(Ns(intended));
      } else {
        accounting_.OnDispatched(Ns(intended), Ns(now));
        Send(intended, next_request_, now);
      }
      Advance();
      now = Now();
    }
  }

  void DispatchClosedLoop(int64_t now) {
    absl::Status status = source_->Next(&next_request_);
    if (!status.ok()) {
      if (status.code() != absl::StatusCode::kOutOfRange) failure_ = status;
      closed_loop_owed_ = 0;
      total_ns_ = std::min(total_ns_, now);  // nothing more to send
      return;
    }
    accounting_.OnScheduled(Ns(now));
    accounting_.OnDispatched(Ns(now), Ns(now));
    Send(now, next_request_, now);
  }

  // A request ended (any outcome): in a closed loop, another one is owed.
  void Resolved() {
    --in_flight_;
    if (config_.closed_loop()) ++closed_loop_owed_;
  }

  // --- sending -------------------------------------------------------------------------------

  void Serialize(const OutgoingRequest& r, int endpoint, std::string* out) const {
    const std::string& path_prefix = path_prefixes_[endpoint];
    const std::string& host_header = host_headers_[endpoint];
    out->clear();
    // One allocation for a fresh buffer (a new connection), none once its capacity fits,
    // rather than a series of doublings while the pieces are appended.
    constexpr size_t kFixedBytes = 96;  // request line and header names, Content-Length digits
    out->reserve(r.method.size() + path_prefix.size() + r.path.size() + host_header.size() +
                 r.headers.size() + r.body.size() + kFixedBytes);
    out->append(r.method.data(), r.method.size());
    out->push_back(' ');
    out->append(path_prefix);
    if (r.path.empty()) {
      if (path_prefix.empty()) out->push_back('/');
    } else {
      out->append(r.path.data(), r.path.size());
    }
    out->append(" HTTP/1.1\r\nHost: ");
    out->append(host_header);
    out->append("\r\nUser-Agent: vanguard-replayer\r\nContent-Length: ");
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), r.body.size());
    out->append(digits, static_cast<size_t>(end - digits));
    out->append("\r\n");
    out->append(r.headers.data(), r.headers.size());
    out->append("\r\n");
    out->append(r.body.data(), r.body.size());
  }

  void Send(int64_t intended, const OutgoingRequest& request, int64_t now) {
    ++in_flight_;
    RequestState state;
    state.intended = intended;
    state.deadline = intended + timeout_ns_;
    state.endpoint = chooser_.Choose(endpoint_accounting_.in_flight());
    endpoint_accounting_.OnDispatched(state.endpoint, Ns(intended));
    if (targets_[state.endpoint].refused) {  // the policy refused the address: connect to nothing
      RecordError(state, kErrorTargetRefused);
      return;
    }
    if (transport_ != nullptr) {
      SendOnTransport(state, request, now);
      return;
    }
    std::vector<Connection*>& idle = idle_[state.endpoint];
    if (!idle.empty()) {
      Connection* connection = idle.back();
      RemoveIdle(connection);
      Serialize(request, state.endpoint, &connection->out);
      StartRequest(connection, state, now);
      return;
    }
    // The pool is full but holds idle connections to other endpoints: one makes room.
    if (open_connections_ >= max_connections_) CloseAnIdleConnection();
    if (open_connections_ < max_connections_) {
      Connection* connection = OpenConnection(state.endpoint);
      if (connection == nullptr) {
        RecordError(state, kErrorConnect);
        return;
      }
      Serialize(request, state.endpoint, &connection->out);
      connection->request = state;
    } else {
      accounting_.OnConnectionWait(Ns(intended));
      PendingRequest& pending = PushPending();
      pending.request = state;
      Serialize(request, state.endpoint, &pending.bytes);
    }
  }

  // Terminal outcomes of a dispatched request, for the step and for its endpoint.
  void RecordSuccess(const RequestState& r, int64_t done, int64_t chunks,
                     absl::Duration first_chunk) {
    accounting_.OnSuccess(Ns(r.intended), Ns(r.sent), Ns(done), chunks, first_chunk);
    endpoint_accounting_.OnSuccess(r.endpoint, Ns(r.intended), Ns(done - r.intended));
    Resolved();
  }
  void RecordError(const RequestState& r, std::string_view error_class) {
    accounting_.OnError(Ns(r.intended), error_class);
    endpoint_accounting_.OnError(r.endpoint, Ns(r.intended));
    Resolved();
  }
  void RecordTimeout(const RequestState& r) {
    accounting_.OnTimeout(Ns(r.intended));
    endpoint_accounting_.OnTimeout(r.endpoint, Ns(r.intended));
    Resolved();
  }
  void RecordSent(const RequestState& r, int64_t now) {
    accounting_.OnSent(Ns(r.intended), Ns(now));
    endpoint_accounting_.OnSent(r.endpoint, Ns(r.intended));
  }

  // Starts writing connection->out for `state` on an established connection.
  void StartRequest(Connection* connection, const RequestState& state, int64_t now) {
    connection->state = Connection::State::kActive;
    AddActive(connection);
    connection->request = state;
    connection->request.sent = now;
    connection->out_offset = 0;
    connection->in_len = 0;
    connection->parser.Reset();
    if (!state.sent_recorded) {
      RecordSent(state, now);
      connection->request.sent_recorded = true;
    }
    TryWrite(connection);
  }

  Connection* OpenConnection(int endpoint) {
    const TargetAddress& target = targets_[endpoint];
    int fd = socket(target.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // Polled mode reads responses late on purpose; the kernel's receive time is exact.
    if (polled_) setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    int rc = connect(fd, reinterpret_cast<const sockaddr*>(&target.address), target.length);
    if (rc != 0 && errno != EINPROGRESS) {
      close(fd);
      return nullptr;
    }
    accounting_.OnConnectionOpened(Ns(Now()));
    Connection* connection = NewConnection();
    connection->fd = fd;
    connection->endpoint = endpoint;
    connection->state = Connection::State::kConnecting;
    connection->want_write = true;
    AddActive(connection);
    ++open_connections_;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = reinterpret_cast<uint64_t>(connection);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    return connection;
  }

  void OnConnected(Connection* connection) {
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(connection->fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      FailRequest(connection, kErrorConnect);
      return;
    }
    RemoveActive(connection);
    RequestState state = connection->request;
    StartRequest(connection, state, Now());
  }

  // Writes what is left of the request. False if the connection failed (and was closed).
  bool TryWrite(Connection* connection) {
    while (connection->out_offset < connection->out.size()) {
      ssize_t n = send(connection->fd, connection->out.data() + connection->out_offset,
                       connection->out.size() - connection->out_offset, MSG_NOSIGNAL);
      if (n > 0) {
        connection->out_offset += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        SetWantWrite(connection, true);
        return true;
      }
      FailOrRetry(connection, kErrorWrite);
      return false;
    }
    SetWantWrite(connection, false);
    return true;
  }

  void SetWantWrite(Connection* connection, bool want) {
    if (connection->want_write == want) return;
    connection->want_write = want;
    epoll_event ev{};
    ev.events = want ? uint32_t{EPOLLIN | EPOLLOUT} : uint32_t{EPOLLIN};
    ev.data.u64 = reinterpret_cast<uint64_t>(connection);
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection->fd, &ev);
  }

  // --- receiving -----------------------------------------------------------------------------

  void ReadResponse(Connection* connection) {
    while (connection->state == Connection::State::kActive) {
      char* buffer = connection->in.get();
      size_t room = kReadBufferBytes - connection->in_len;
      ssize_t n = polled_ ? ReceiveTimestamped(connection, buffer + connection->in_len, room)
                          : recv(connection->fd, buffer + connection->in_len, room, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        FailOrRetry(connection, kErrorRead);
        return;
      }
      if (n == 0) {
        if (connection->parser.CompleteAtEof()) {
          OnResponse(connection, /*reusable=*/false);
        } else {
          FailOrRetry(connection, kErrorRead);
        }
        return;
      }
      if (!Consume(connection, static_cast<size_t>(n))) return;  // resolved or failed
      if (static_cast<size_t>(n) < room) return;                 // drained what the kernel had
    }
  }

  // recv() that also records when the kernel received the bytes (SO_TIMESTAMPNS) as
  // connection->request.received, a step offset on the monotonic clock.
  ssize_t ReceiveTimestamped(Connection* connection, char* buffer, size_t room) {
    iovec io{buffer, room};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(connection->fd, &message, 0);
    if (n <= 0) return n;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec at;
        std::memcpy(&at, CMSG_DATA(c), sizeof(at));
        int64_t realtime = static_cast<int64_t>(at.tv_sec) * kNanosPerSecond + at.tv_nsec;
        connection->request.received = realtime - realtime_at_t0_;
      }
    }
    return n;
  }

  // Parses `n` new bytes at in[in_len]. False once the request is resolved.
  bool Consume(Connection* connection, size_t n) {
    HttpResponseParser& parser = connection->parser;
    const char* data = connection->in.get() + connection->in_len;
    size_t len = n;
    if (parser.in_headers()) {
      connection->in_len += n;
      while (true) {
        size_t header_end = 0;
        HttpResponseParser::Progress p =
            parser.ParseHeader(connection->in.get(), connection->in_len, &header_end);
        if (p == HttpResponseParser::Progress::kNeedMore) return true;
        if (p == HttpResponseParser::Progress::kError) {
          FailRequest(connection, kErrorBadResponse);
          return false;
        }
        if (parser.informational()) {  // 100 Continue and friends: skip, read on
          std::memmove(connection->in.get(), connection->in.get() + header_end,
                       connection->in_len - header_end);
          connection->in_len -= header_end;
          parser.Reset();
          continue;
        }
        if (connection->handler) connection->handler->Begin(parser.status());
        data = connection->in.get() + header_end;
        len = connection->in_len - header_end;
        connection->in_len = 0;  // from now on body bytes are consumed as they arrive
        break;
      }
    }
    HttpResponseParser::Progress p = parser.FeedBody(
        data, len, [&](std::string_view piece) { return OnBody(connection, piece); });
    if (p == HttpResponseParser::Progress::kError) {
      if (parser.error() != nullptr) {
        FailRequest(connection, kErrorBadResponse);
      } else {
        FailRequest(connection, malformed_class_);
      }
      return false;
    }
    if (p == HttpResponseParser::Progress::kComplete) {
      OnResponse(connection, parser.keep_alive());
      return false;
    }
    return true;
  }

  // A decoded body piece for the protocol's handler. False: the stream is malformed.
  bool OnBody(Connection* connection, std::string_view piece) {
    if (!connection->handler || connection->parser.status() < 200 ||
        connection->parser.status() >= 300) {
      return true;
    }
    absl::StatusOr<int> chunks = connection->handler->OnBody(piece);
    if (!chunks.ok()) {
      malformed_class_ = ErrorClassOf(chunks.status());
      return false;
    }
    if (*chunks <= 0) return true;
    RequestState& r = connection->request;
    int64_t now = Now();
    int64_t extra = *chunks - 1;
    if (r.first_chunk < 0) {
      r.first_chunk = now;
      accounting_.OnFirstChunk(Ns(r.intended), Ns(now));
    } else {
      accounting_.OnChunkGap(Ns(r.intended), Ns(now - r.last_chunk), 1);
    }
    if (extra > 0) accounting_.OnChunkGap(Ns(r.intended), absl::ZeroDuration(), extra);
    r.last_chunk = now;
    r.chunks += *chunks;
    return true;
  }

  // "class=<name>; ..." picks the error class; anything else is a malformed stream. The
  // class must outlive the step, so only names we know (or interned here) are used.
  std::string_view ErrorClassOf(const absl::Status& status) {
    std::string_view message(status.message().data(), status.message().size());
    if (message.substr(0, 6) == "class=") {
      std::string_view name = message.substr(6, message.find(';') - 6);
      for (const std::string& known : interned_classes_) {
        if (known == name) return known;
      }
      if (interned_classes_.size() < 64) {
        interned_classes_.emplace_back(name);
        return interned_classes_.back();
      }
    }
    return kErrorMalformedStream;
  }

  void OnResponse(Connection* connection, bool reusable) {
    ++connection->responses;
    int64_t now = Now();
    RequestState& r = connection->request;
    int64_t done = now;
    // Polled mode: the kernel's receive time of the response's last bytes (clamped into
    // [sent, now] against wall-clock steps between the two clocks).
    if (polled_ && r.received > 0) done = std::clamp(r.received, r.sent, now);
    int status = connection->parser.status();
    if (status >= 200 && status < 300) {
      absl::Status end = connection->handler ? connection->handler->End() : absl::OkStatus();
      if (end.ok()) {
        RecordSuccess(r, done, r.chunks,
                      r.first_chunk >= 0 ? Ns(r.first_chunk) : absl::InfiniteDuration());
      } else {
        RecordError(r, ErrorClassOf(end));
        reusable = false;
      }
    } else {
      RecordError(r, HttpErrorClass(status));
    }
    RemoveActive(connection);
    if (reusable) {
      ReleaseToPool(connection, now);
    } else {
      CloseConnection(connection);
      ServePending(now);
    }
  }

  void FailRequest(Connection* connection, std::string_view error_class) {
    RecordError(connection->request, error_class);
    CloseConnection(connection);
    ServePending(Now());
  }

  // A request whose reused connection failed before any byte of its response came back was
  // most likely sent as the server closed that connection for idling (a keep-alive timeout:
  // Node's 5 s, gunicorn's 2 s): the server never read it. It is sent again, once, on a new
  // connection (its latency still runs from its intended time; StepResult.stale_connection_
  // retries counts it). Any other failure is the request's.
  void FailOrRetry(Connection* connection, std::string_view error_class) {
    const RequestState& r = connection->request;
    const bool stale = connection->responses > 0 && !r.retried && connection->in_len == 0 &&
                       connection->parser.in_headers() && r.first_chunk < 0;
    if (!stale) {
      FailRequest(connection, error_class);
      return;
    }
    RequestState state = r;
    state.retried = true;
    std::string bytes;
    std::swap(bytes, connection->out);
    CloseConnection(connection);
    accounting_.OnStaleRetry(Ns(state.intended));
    Connection* fresh = OpenConnection(state.endpoint);
    if (fresh == nullptr) {
      RecordError(state, kErrorConnect);
      ServePending(Now());
      return;
    }
    std::swap(fresh->out, bytes);
    fresh->request = state;
  }

  // --- the pool ------------------------------------------------------------------------------

  Connection* NewConnection() {
    Connection* connection;
    if (!free_.empty()) {
      connection = free_.back();
      free_.pop_back();
    } else {
      connections_.push_back(std::make_unique<Connection>());
      connection = connections_.back().get();
      connection->in = std::make_unique<char[]>(kReadBufferBytes);
      if (handlers_) connection->handler = handlers_();
    }
    connection->want_write = false;
    connection->in_len = 0;
    connection->responses = 0;
    connection->parser.Reset();
    return connection;
  }

  void AddActive(Connection* connection) {
    connection->active_position = active_.size();
    active_.push_back(connection);
  }
  void RemoveActive(Connection* connection) {
    size_t position = connection->active_position;
    if (position >= active_.size() || active_[position] != connection) return;
    active_[position] = active_.back();
    active_[position]->active_position = position;
    active_.pop_back();
  }
  void RemoveIdle(Connection* connection) {
    std::vector<Connection*>& idle = idle_[connection->endpoint];
    size_t position = connection->idle_position;
    if (position >= idle.size() || idle[position] != connection) return;
    idle[position] = idle.back();
    idle[position]->idle_position = position;
    idle.pop_back();
  }

  // Closes one idle connection (of any endpoint), if there is one.
  void CloseAnIdleConnection() {
    for (std::vector<Connection*>& idle : idle_) {
      if (!idle.empty()) {
        CloseConnection(idle.back());
        return;
      }
    }
  }

  void ReleaseToPool(Connection* connection, int64_t now) {
    ExpirePending(now);
    if (pending_count_ > 0) {
      PendingRequest& pending = pending_[pending_head_];
      if (pending.request.endpoint != connection->endpoint) {
        // The oldest waiting request is for another endpoint: trade this connection for
        // one to that endpoint (FIFO order is kept across endpoints).
        CloseConnection(connection);
        ServePending(now);
        return;
      }
      std::swap(connection->out, pending.bytes);
      RequestState state = pending.request;
      PopPending();
      StartRequest(connection, state, now);
      return;
    }
    std::vector<Connection*>& idle = idle_[connection->endpoint];
    connection->state = Connection::State::kIdle;
    connection->idle_position = idle.size();
    idle.push_back(connection);
  }

  void CloseConnection(Connection* connection) {
    if (connection->state == Connection::State::kClosed) return;
    if (connection->state == Connection::State::kIdle) {
      RemoveIdle(connection);
    } else {
      RemoveActive(connection);
    }
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection->fd, nullptr);
    close(connection->fd);
    connection->fd = -1;
    connection->state = Connection::State::kClosed;
    --open_connections_;
    free_.push_back(connection);
  }

  // Opens connections for waiting requests while the pool has room.
  void ServePending(int64_t now) {
    ExpirePending(now);
    while (pending_count_ > 0 && open_connections_ < max_connections_) {
      PendingRequest& pending = pending_[pending_head_];
      RequestState state = pending.request;
      Connection* connection = OpenConnection(state.endpoint);
      if (connection == nullptr) {
        PopPending();
        RecordError(state, kErrorConnect);
        continue;
      }
      std::swap(connection->out, pending.bytes);
      connection->request = state;
      PopPending();
    }
  }

  PendingRequest& PushPending() {
    if (pending_count_ == pending_.size()) {
      // Grow the ring (rare: only when the FIFO is deeper than ever before), keeping order.
      std::vector<PendingRequest> grown(std::max<size_t>(16, pending_.size() * 2));
      for (size_t i = 0; i < pending_count_; ++i) {
        grown[i] = std::move(pending_[(pending_head_ + i) % pending_.size()]);
      }
      pending_ = std::move(grown);
      pending_head_ = 0;
    }
    PendingRequest& slot = pending_[(pending_head_ + pending_count_) % pending_.size()];
    ++pending_count_;
    return slot;
  }
  void PopPending() {
    pending_head_ = (pending_head_ + 1) % pending_.size();
    --pending_count_;
  }

  // Waiting requests past their deadline are timeouts (the FIFO is in deadline order).
  void ExpirePending(int64_t now) {
    while (pending_count_ > 0 && pending_[pending_head_].request.deadline <= now) {
      RecordTimeout(pending_[pending_head_].request);
      PopPending();
    }
  }

  // --- the transport (gRPC) path ---------------------------------------------------------------

  void SendOnTransport(const RequestState& state, const OutgoingRequest& request, int64_t now) {
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    TransportSlot& s = slots_[slot];
    s.request = state;
    s.request.sent = now;
    s.generation++;
    s.open = true;
    uint64_t tag = (static_cast<uint64_t>(s.generation) << 32) | slot;
    RecordSent(state, now);
    absl::Status status = transport_->Send(tag, request);
    if (!status.ok()) {
      s.open = false;
      free_slots_.push_back(slot);
      RecordError(state, kErrorConnect);
    } else {
      ++open_slots_;
    }
  }

  void DrainTransport() {
    AsyncTransport::Completion completions[64];
    while (true) {
      int n = transport_->TakeCompletions(completions, 64);
      for (int i = 0; i < n; ++i) {
        const AsyncTransport::Completion& c = completions[i];
        uint32_t slot = static_cast<uint32_t>(c.tag & 0xffffffffu);
        if (slot >= slots_.size()) continue;
        TransportSlot& s = slots_[slot];
        if (!s.open || s.generation != static_cast<uint32_t>(c.tag >> 32)) continue;
        s.open = false;
        --open_slots_;
        free_slots_.push_back(slot);
        int64_t done = c.done_ns - t0_;
        if (c.ok) {
          absl::Duration first = absl::InfiniteDuration();
          if (c.first_chunk_ns > 0) {
            first = Ns(c.first_chunk_ns - t0_);
            accounting_.OnFirstChunk(Ns(s.request.intended), first);
          }
          RecordSuccess(s.request, done, c.chunks, first);
        } else {
          RecordError(s.request, c.error_class.empty() ? kErrorRead : c.error_class);
        }
      }
      if (n < 64) return;
    }
  }

  // --- housekeeping and the end --------------------------------------------------------------

  void Housekeeping(int64_t now) {
    ExpireTimeouts(now);
    SampleCpu(now, /*final=*/false);
    SampleSched(now);
    DeliverClosedWindows(now);
  }

  // This thread's scheduler counters over the measured part: read when it starts and when
  // the last request of the schedule has been sent (or the loop ends first).
  void SampleSched(int64_t now, bool final = false) {
    if (sched_state_ == SchedState::kBefore && now >= warmup_ns_ && !final) {
      absl::StatusOr<TaskSched> start = ReadTaskSched(*proc_, kThreadSelf);
      if (!start.ok()) {
        accounting_.OnLoopSchedUnknown(start.status().ToString());
        sched_state_ = SchedState::kDone;
        return;
      }
      sched_start_ = *start;
      sched_start_at_ = now;
      sched_state_ = SchedState::kMeasuring;
      return;
    }
    if (sched_state_ != SchedState::kMeasuring) return;
    const bool schedule_over = config_.closed_loop() ? now >= total_ns_ : !has_next_;
    if (!schedule_over && !final) return;
    sched_state_ = SchedState::kDone;
    absl::StatusOr<TaskSched> end = ReadTaskSched(*proc_, kThreadSelf);
    if (!end.ok()) {
      accounting_.OnLoopSchedUnknown(end.status().ToString());
      return;
    }
    accounting_.OnLoopSched(*end - sched_start_, Ns(now - sched_start_at_));
  }

  void ExpireTimeouts(int64_t now) {
    ExpirePending(now);
    for (size_t i = 0; i < active_.size();) {
      Connection* connection = active_[i];
      if (connection->request.deadline <= now) {
        RecordTimeout(connection->request);
        CloseConnection(connection);  // swaps another connection into position i
      } else {
        ++i;
      }
    }
    if (transport_ != nullptr && open_slots_ > 0) {
      for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
        TransportSlot& s = slots_[slot];
        if (!s.open || s.request.deadline > now) continue;
        transport_->Cancel((static_cast<uint64_t>(s.generation) << 32) | slot);
        s.open = false;
        --open_slots_;
        free_slots_.push_back(slot);
        RecordTimeout(s.request);
      }
    }
    ServePending(now);
  }

  // CPU of this thread per metrics window, and its share of a core per 5 s span of the
  // measured part.
  void SampleCpu(int64_t now, bool final) {
    const WindowLayout& layout = accounting_.layout();
    int64_t cpu = ThreadCpuNs();
    while (cpu_window_ < layout.count() &&
           (final || absl::ToInt64Nanoseconds(layout.Span(cpu_window_).end) <= now)) {
      accounting_.OnWindowCpu(cpu_window_, static_cast<double>(cpu - cpu_last_) / 1e9);
      cpu_last_ = cpu;
      ++cpu_window_;
    }
    if (now < warmup_ns_) return;
    if (span_start_ < 0) {
      span_start_ = now;
      span_cpu_start_ = cpu;
      return;
    }
    int64_t span = now - span_start_;
    int64_t span_ns = absl::ToInt64Nanoseconds(kCpuShareSpan);
    if (span >= span_ns || (final && span >= span_ns / 5)) {
      accounting_.OnCpuShare(static_cast<double>(cpu - span_cpu_start_) /
                             static_cast<double>(span));
      span_start_ = now;
      span_cpu_start_ = cpu;
    }
  }

  void DeliverClosedWindows(int64_t now) {
    absl::Duration position = Ns(now);
    if (!config_.closed_loop() && has_next_) position = std::min(position, Ns(next_intended_));
    std::vector<WindowTally> closed = accounting_.TakeClosedWindows(position);
    if (!closed.empty()) on_windows_(std::move(closed));
  }

  void FinishAccounting(int64_t now) {
    SampleCpu(now, /*final=*/true);
    SampleSched(now, /*final=*/true);
    std::vector<WindowTally> closed = accounting_.TakeClosedWindows(absl::InfiniteDuration());
    if (!closed.empty()) on_windows_(std::move(closed));
  }

  void Shutdown() {
    while (!active_.empty()) CloseConnection(active_.back());
    for (std::vector<Connection*>& idle : idle_) {
      while (!idle.empty()) CloseConnection(idle.back());
    }
    if (transport_ != nullptr) {
      for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot].open) {
          transport_->Cancel((static_cast<uint64_t>(slots_[slot].generation) << 32) | slot);
        }
      }
    }
  }

  struct TransportSlot {
    RequestState request;
    uint32_t generation = 0;
    bool open = false;
  };

  const StepConfig config_;
  const int shard_;
  const int shards_;
  const std::vector<TargetAddress> targets_;  // the step's endpoints, resolved
  EndpointChooser chooser_;
  EndpointAccounting endpoint_accounting_;
  std::unique_ptr<RequestSource> source_;
  ResponseHandlerFactory handlers_;
  std::unique_ptr<AsyncTransport> transport_;
  const WindowsCallback on_windows_;
  StepAccounting accounting_;
  int64_t total_ns_;
  const int64_t timeout_ns_;
  const int64_t warmup_ns_;
  const int max_connections_;
  const int max_in_flight_;
  std::vector<std::string> host_headers_;   // per endpoint
  std::vector<std::string> path_prefixes_;  // per endpoint

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  int sleep_epoll_fd_ = -1;
  bool use_pwait2_ = true;
  bool polled_ = false;
  int64_t realtime_at_t0_ = 0;
  int64_t last_wake_ = 0;  // polled mode: when the loop last woke from Sleep()  // CLOCK_REALTIME
                           // at t0_, to place kernel timestamps
  int64_t t0_ = 0;
  int64_t housekeeping_next_ = 0;
  std::atomic<bool> stop_requested_{false};
  absl::Status failure_;

  // Open loop: the next request and its intended offset.
  std::optional<SendSchedule> schedule_;
  double trace_scale_ = 1.0;
  OutgoingRequest next_request_;
  int64_t next_intended_ = 0;
  bool has_next_ = false;
  // Closed loop: requests to send as soon as possible.
  int closed_loop_owed_ = 0;

  std::vector<std::unique_ptr<Connection>> connections_;  // every connection object
  std::vector<Connection*> free_;                         // closed, reusable objects
  // Open and idle, per endpoint (used last-in first-out).
  std::vector<std::vector<Connection*>> idle_;
  std::vector<Connection*> active_;  // connecting or carrying a request
  int open_connections_ = 0;
  std::vector<PendingRequest> pending_;  // ring buffer
  size_t pending_head_ = 0;
  size_t pending_count_ = 0;
  int in_flight_ = 0;
  std::string_view malformed_class_ = kErrorMalformedStream;
  std::vector<std::string> interned_classes_;

  std::vector<TransportSlot> slots_;
  std::vector<uint32_t> free_slots_;
  int open_slots_ = 0;

  const ProcReader* proc_ = nullptr;  // never null after construction
  enum class SchedState { kBefore, kMeasuring, kDone };
  SchedState sched_state_ = SchedState::kBefore;
  TaskSched sched_start_;
  int64_t sched_start_at_ = 0;

  int cpu_window_ = 0;
  int64_t cpu_last_ = 0;
  int64_t span_start_ = -1;
  int64_t span_cpu_start_ = 0;
};

LoadLoop::LoadLoop(const StepConfig& config, int shard, int shards, const TargetAddress& target,
                   LoopParts parts, WindowsCallback on_windows)
    : LoadLoop(config, shard, shards, std::vector<TargetAddress>{target}, std::move(parts),
               std::move(on_windows)) {}

LoadLoop::LoadLoop(const StepConfig& config, int shard, int shards,
                   std::vector<TargetAddress> targets, LoopParts parts, WindowsCallback on_windows)
    : impl_(std::make_unique<Impl>(config, shard, shards, std::move(targets), std::move(parts),
                                   std::move(on_windows))) {}

LoadLoop::~LoadLoop() = default;

absl::Status LoadLoop::Run() { return impl_->Run(); }

void LoadLoop::Stop() { impl_->Stop(); }

const StepAccounting& LoadLoop::accounting() const { return impl_->accounting(); }

const EndpointAccounting& LoadLoop::endpoint_accounting() const {
  return impl_->endpoint_accounting();
}

}  // namespace vanguard::replayer
