// The Asio event loop behind HttpLoadLoop; see http_load_loop.h. Every member of Impl except
// Stop() runs on the loop thread (the thread inside Run()), so Impl has no locks.
#include "replayer/http_load_loop.h"

#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/basic_parser.hpp"
#include "boost/beast/http/read.hpp"
#include "replayer/send_schedule.h"

namespace vanguard::replayer {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using boost::beast::error_code;

// How often the loop expires queued requests, closes windows and checks for the end.
constexpr auto kHousekeepingPeriod = std::chrono::milliseconds(10);
// At most this many overdue requests are dispatched per timer callback before I/O gets a
// turn; the rest follow immediately (with their original intended times).
constexpr int kMaxBurst = 512;

// An HTTP/1.1 response parser that keeps only the status code and discards the body, so
// reading a response allocates nothing. keep_alive() and framing come from basic_parser.
class ResponseStatusParser : public http::basic_parser<false> {
 public:
  int status() const { return status_; }

 private:
  void on_request_impl(http::verb, boost::beast::string_view, boost::beast::string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, boost::beast::string_view, int, error_code&) override {
    status_ = code;
  }
  void on_field_impl(http::field, boost::beast::string_view, boost::beast::string_view,
                     error_code&) override {}
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, error_code&) override {
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                 error_code&) override {
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  int status_ = 0;
};

struct Request {
  absl::Duration intended;  // offset from t0
  absl::Duration sent;      // offset from t0, once written
  SteadyClock::time_point deadline;
};

// One keep-alive connection. Owned by shared_ptr: the pool holds it while open, and every
// outstanding async operation holds it until its handler has run, so a closed connection's
// socket, buffer and parser outlive the operations that reference them. A connection object
// is never reopened; a new one is made instead.
struct Connection {
  explicit Connection(net::io_context& ioc) : socket(ioc), deadline_timer(ioc) {}
  tcp::socket socket;
  net::steady_timer deadline_timer;
  boost::beast::flat_buffer buffer;
  std::optional<ResponseStatusParser> parser;
  Request request;
  // Bumped whenever the connection changes task (new request, idle, closed); a handler whose
  // captured generation differs is stale and does nothing.
  uint64_t generation = 0;
  bool open = true;
  bool idle = false;
  size_t slot = 0;  // index in Impl::connections_
};
using ConnectionPtr = std::shared_ptr<Connection>;

}  // namespace

class HttpLoadLoop::Impl {
 public:
  Impl(const StepConfig& config, WindowsCallback on_windows)
      : config_(config),
        on_windows_(std::move(on_windows)),
        request_bytes_(config.BuildHttpRequest()),
        accounting_(WindowLayout(config.warmup, config.duration, config.window)),
        schedule_(
            *SendSchedule::Create(config.schedule, config.rate_qps, config.seed, config.total())),
        send_timer_(ioc_),
        housekeeping_timer_(ioc_) {}

  absl::Status Run() {
    error_code ec;
    tcp::resolver resolver(ioc_);
    auto endpoints = resolver.resolve(config_.target.host, std::to_string(config_.target.port), ec);
    if (ec || endpoints.empty()) {
      return absl::UnavailableError(absl::StrCat("target: cannot resolve host \"",
                                                 config_.target.host,
                                                 "\": ", ec ? ec.message() : "no addresses"));
    }
    // One address for the whole step. Prefer IPv4: "localhost" often resolves to ::1 first
    // while local predictors commonly listen on 127.0.0.1 only.
    endpoint_ = endpoints.begin()->endpoint();
    for (const auto& entry : endpoints) {
      if (entry.endpoint().address().is_v4()) {
        endpoint_ = entry.endpoint();
        break;
      }
    }

    t0_ = SteadyClock::now();
    housekeeping_next_ = t0_;
    ArmSendTimer();
    ArmHousekeeping();
    ioc_.run();
    if (stop_requested_.load()) return absl::CancelledError("step cancelled");
    return absl::OkStatus();
  }

  void Stop() {
    stop_requested_.store(true);
    net::post(ioc_, [this] {
      finished_ = true;
      Shutdown();
      ioc_.stop();
    });
  }

  const StepAccounting& accounting() const { return accounting_; }

 private:
  absl::Duration Offset(SteadyClock::time_point t) const { return absl::FromChrono(t - t0_); }
  SteadyClock::time_point At(absl::Duration offset) const {
    return t0_ +
           std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(offset));
  }

  // --- pacing -----------------------------------------------------------------------------

  void ArmSendTimer() {
    absl::Duration next = schedule_.Peek();
    if (next == absl::InfiniteDuration()) return;  // schedule exhausted
    send_timer_.expires_at(At(next));
    send_timer_.async_wait([this](error_code ec) {
      if (ec || finished_) return;
      OnSendTimer();
    });
  }

  void OnSendTimer() {
    for (int burst = 0; burst < kMaxBurst; ++burst) {
      absl::Duration next = schedule_.Peek();
      if (next == absl::InfiniteDuration()) break;
      SteadyClock::time_point now = SteadyClock::now();
      if (At(next) > now) break;
      schedule_.Next();
      accounting_.OnScheduled(next);
      Dispatch(next, now);
    }
    ArmSendTimer();
    MaybeFinish();
  }

  void Dispatch(absl::Duration intended, SteadyClock::time_point now) {
    if (in_flight_ >= config_.max_in_flight) {
      accounting_.OnDropped(intended);
      return;
    }
    ++in_flight_;
    accounting_.OnDispatched(intended, Offset(now));
    Request request{intended, absl::ZeroDuration(), At(intended + config_.request_timeout)};
    if (!idle_.empty()) {
      ConnectionPtr connection = std::move(idle_.back());
      idle_.pop_back();
      StartOnIdleConnection(connection, request);
    } else if (static_cast<int>(connections_.size()) < config_.max_connections) {
      OpenConnection(request);
    } else {
      pending_.push_back(request);
    }
  }

  // --- connections --------------------------------------------------------------------------

  void OpenConnection(const Request& request) {
    auto connection = std::make_shared<Connection>(ioc_);
    connection->slot = connections_.size();
    connections_.push_back(connection);
    connection->request = request;
    uint64_t generation = ++connection->generation;
    ArmDeadline(connection);
    connection->socket.async_connect(endpoint_, [this, connection, generation](error_code ec) {
      if (IsStale(*connection, generation)) return;
      if (ec) {
        FailRequest(connection, kErrorConnect);
        return;
      }
      error_code ignored;
      connection->socket.set_option(tcp::no_delay(true), ignored);
      StartWrite(connection);
    });
  }

  void StartOnIdleConnection(const ConnectionPtr& connection, const Request& request) {
    connection->idle = false;
    ++connection->generation;
    error_code ignored;
    connection->socket.cancel(ignored);  // the idle watch
    connection->request = request;
    ArmDeadline(connection);
    StartWrite(connection);
  }

  void ArmDeadline(const ConnectionPtr& connection) {
    uint64_t generation = connection->generation;
    connection->deadline_timer.expires_at(connection->request.deadline);
    connection->deadline_timer.async_wait([this, connection, generation](error_code ec) {
      if (ec || IsStale(*connection, generation)) return;
      accounting_.OnTimeout(connection->request.intended);
      --in_flight_;
      CloseConnection(connection);
      ServePending();
      MaybeFinish();
    });
  }

  void StartWrite(const ConnectionPtr& connection) {
    uint64_t generation = connection->generation;
    connection->request.sent = Offset(SteadyClock::now());
    accounting_.OnSent(connection->request.intended, connection->request.sent);
    net::async_write(connection->socket, net::buffer(request_bytes_),
                     [this, connection, generation](error_code ec, std::size_t) {
                       if (IsStale(*connection, generation)) return;
                       if (ec) {
                         FailRequest(connection, kErrorWrite);
                         return;
                       }
                       StartRead(connection);
                     });
  }

  void StartRead(const ConnectionPtr& connection) {
    uint64_t generation = connection->generation;
    connection->parser.emplace();
    // The body is discarded, never stored, so no limit is needed. (Not boost::none: Boost
    // 1.74 compares the length against an empty optional and always fails.)
    connection->parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    http::async_read(connection->socket, connection->buffer, *connection->parser,
                     [this, connection, generation](error_code ec, std::size_t) {
                       if (IsStale(*connection, generation)) return;
                       if (ec) {
                         FailRequest(connection, kErrorRead);
                         return;
                       }
                       OnResponse(connection);
                     });
  }

  void OnResponse(const ConnectionPtr& connection) {
    SteadyClock::time_point now = SteadyClock::now();
    const Request& request = connection->request;
    int status = connection->parser->status();
    if (status >= 200 && status < 300) {
      accounting_.OnSuccess(request.intended, request.sent, Offset(now));
    } else {
      accounting_.OnError(request.intended, absl::StrCat("http_", status));
    }
    --in_flight_;
    bool keep_alive = connection->parser->keep_alive();
    ++connection->generation;
    error_code ignored;
    connection->deadline_timer.cancel(ignored);
    if (keep_alive) {
      ReleaseToPool(connection);
    } else {
      CloseConnection(connection);
      ServePending();
    }
    MaybeFinish();
  }

  void FailRequest(const ConnectionPtr& connection, std::string_view error_class) {
    accounting_.OnError(connection->request.intended, error_class);
    --in_flight_;
    CloseConnection(connection);
    ServePending();
    MaybeFinish();
  }

  // A connection that just finished a request: serve the oldest waiting request, or idle.
  void ReleaseToPool(const ConnectionPtr& connection) {
    ExpirePending(SteadyClock::now());
    if (!pending_.empty()) {
      Request request = pending_.front();
      pending_.pop_front();
      connection->request = request;
      ++connection->generation;
      ArmDeadline(connection);
      StartWrite(connection);
      return;
    }
    connection->idle = true;
    idle_.push_back(connection);
    // An idle keep-alive connection should stay silent; if it becomes readable the server
    // closed it (or misbehaved), so drop it before a request is lost on it.
    uint64_t generation = ++connection->generation;
    connection->socket.async_wait(tcp::socket::wait_read,
                                  [this, connection, generation](error_code ec) {
                                    if (ec || IsStale(*connection, generation)) return;
                                    CloseConnection(connection);
                                  });
  }

  void CloseConnection(const ConnectionPtr& connection) {
    if (!connection->open) return;
    connection->open = false;
    ++connection->generation;
    if (connection->idle) {
      connection->idle = false;
      for (size_t i = 0; i < idle_.size(); ++i) {
        if (idle_[i] == connection) {
          idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
    error_code ignored;
    connection->deadline_timer.cancel(ignored);
    connection->socket.close(ignored);
    size_t slot = connection->slot;
    if (slot + 1 != connections_.size()) {
      connections_[slot] = std::move(connections_.back());
      connections_[slot]->slot = slot;
    }
    connections_.pop_back();
  }

  // Opens connections for waiting requests while the pool has room.
  void ServePending() {
    ExpirePending(SteadyClock::now());
    while (!pending_.empty() && static_cast<int>(connections_.size()) < config_.max_connections) {
      Request request = pending_.front();
      pending_.pop_front();
      OpenConnection(request);
    }
  }

  // Requests that waited for a connection past their deadline are timeouts. The FIFO is in
  // intended-time order, so deadlines are too.
  void ExpirePending(SteadyClock::time_point now) {
    while (!pending_.empty() && pending_.front().deadline <= now) {
      accounting_.OnTimeout(pending_.front().intended);
      --in_flight_;
      pending_.pop_front();
    }
  }

  bool IsStale(const Connection& connection, uint64_t generation) const {
    return finished_ || !connection.open || connection.generation != generation;
  }

  // --- housekeeping and the end -------------------------------------------------------------

  void ArmHousekeeping() {
    housekeeping_next_ += kHousekeepingPeriod;
    housekeeping_timer_.expires_at(housekeeping_next_);
    housekeeping_timer_.async_wait([this](error_code ec) {
      if (ec || finished_) return;
      ServePending();  // expires overdue waiting requests; opens connections if there is room
      DeliverClosedWindows();
      MaybeFinish();
      if (!finished_) ArmHousekeeping();
    });
  }

  void DeliverClosedWindows() {
    std::vector<WindowTally> closed = accounting_.TakeClosedWindows(schedule_.Peek());
    if (!closed.empty()) on_windows_(std::move(closed));
  }

  void MaybeFinish() {
    if (finished_ || schedule_.Peek() != absl::InfiniteDuration() || in_flight_ > 0) return;
    DeliverClosedWindows();  // every request is resolved: all remaining windows close
    finished_ = true;
    Shutdown();
  }

  // Closes everything so ioc_.run() returns once the aborted handlers have run.
  void Shutdown() {
    error_code ignored;
    send_timer_.cancel(ignored);
    housekeeping_timer_.cancel(ignored);
    while (!connections_.empty()) {
      ConnectionPtr connection = connections_.back();
      CloseConnection(connection);
    }
    idle_.clear();
    pending_.clear();
  }

  const StepConfig config_;
  const WindowsCallback on_windows_;
  const std::string request_bytes_;
  StepAccounting accounting_;
  SendSchedule schedule_;

  net::io_context ioc_{1};
  tcp::endpoint endpoint_;
  net::steady_timer send_timer_;
  net::steady_timer housekeeping_timer_;
  SteadyClock::time_point t0_;
  SteadyClock::time_point housekeeping_next_;

  std::vector<ConnectionPtr> connections_;  // every open connection
  std::vector<ConnectionPtr> idle_;         // open, idle; used last-in first-out
  std::deque<Request> pending_;             // waiting for a connection
  int in_flight_ = 0;                       // dispatched and not yet resolved
  bool finished_ = false;
  std::atomic<bool> stop_requested_{false};
};

HttpLoadLoop::HttpLoadLoop(const StepConfig& config, WindowsCallback on_windows)
    : impl_(std::make_unique<Impl>(config, std::move(on_windows))) {}

HttpLoadLoop::~HttpLoadLoop() = default;

absl::Status HttpLoadLoop::Run() { return impl_->Run(); }

void HttpLoadLoop::Stop() { impl_->Stop(); }

const StepAccounting& HttpLoadLoop::accounting() const { return impl_->accounting(); }

}  // namespace vanguard::replayer
