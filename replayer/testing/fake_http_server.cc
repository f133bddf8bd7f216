// FakeHttpServer implementation; see fake_http_server.h. Sessions run on the server thread.
#include "replayer/testing/fake_http_server.h"

#include <chrono>
#include <list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"

namespace vanguard::replayer::testing {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::beast::error_code;
using SteadyClock = std::chrono::steady_clock;

constexpr char kInferResponse[] =
    R"({"model_name":"fake","outputs":[{"name":"output-0","shape":[1,1],"datatype":"FP32","data":[0.5]}]})";

}  // namespace

class FakeHttpServer::Impl {
 public:
  explicit Impl(ReplyFunction reply) : reply_(std::move(reply)), acceptor_(ioc_) {
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(net::socket_base::max_listen_connections);
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~Impl() {
    net::post(ioc_, [this] {
      error_code ignored;
      acceptor_.close(ignored);
      for (auto& session : sessions_) session->socket.close(ignored);
      ioc_.stop();
    });
    thread_.join();
  }

  uint16_t port() const { return port_; }
  int64_t requests_received() const { return requests_.load(); }
  int64_t connections_accepted() const { return connections_.load(); }

 private:
  struct Session {
    explicit Session(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
    tcp::socket socket;
    net::steady_timer timer;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
  };
  using SessionPtr = std::shared_ptr<Session>;

  void Accept() {
    acceptor_.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec) return;
      ++connections_;
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      auto session = std::make_shared<Session>(std::move(socket));
      sessions_.push_back(session);
      Read(session);
      Accept();
    });
  }

  void Read(const SessionPtr& session) {
    session->request = {};
    http::async_read(session->socket, session->buffer, session->request,
                     [this, session](error_code ec, std::size_t) {
                       if (ec) {
                         Drop(session);
                         return;
                       }
                       Reply reply = reply_(requests_++);
                       if (reply.never_answer) return;  // keep the socket open, say nothing
                       SteadyClock::time_point now = SteadyClock::now();
                       if (reply.stall_all > absl::ZeroDuration()) {
                         stalled_until_ = std::max(stalled_until_, now + ToChrono(reply.stall_all));
                       }
                       SteadyClock::time_point send_at =
                           std::max(now + ToChrono(reply.delay), stalled_until_);
                       Respond(session, reply, send_at);
                     });
  }

  void Respond(const SessionPtr& session, const Reply& reply, SteadyClock::time_point send_at) {
    if (SteadyClock::now() < send_at) {
      session->timer.expires_at(send_at);
      session->timer.async_wait([this, session, reply, send_at](error_code ec) {
        if (ec) return;
        // A stall that began while this response was waiting holds it too.
        Respond(session, reply, std::max(send_at, stalled_until_));
      });
      return;
    }
    auto& response = session->response;
    response = {};
    response.version(11);
    response.result(static_cast<unsigned>(reply.status));
    response.set(http::field::content_type, "application/json");
    response.body() = reply.status == 200 ? kInferResponse : R"({"error":"fake failure"})";
    response.keep_alive(!reply.close_connection && session->request.keep_alive());
    response.prepare_payload();
    http::async_write(session->socket, response, [this, session](error_code ec, std::size_t) {
      if (ec || !session->response.keep_alive()) {
        Drop(session);
        return;
      }
      Read(session);
    });
  }

  void Drop(const SessionPtr& session) {
    error_code ignored;
    session->socket.close(ignored);
    sessions_.remove(session);
  }

  static SteadyClock::duration ToChrono(absl::Duration d) {
    return std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(d));
  }

  ReplyFunction reply_;
  net::io_context ioc_{1};
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::list<SessionPtr> sessions_;
  SteadyClock::time_point stalled_until_{};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> connections_{0};
  std::thread thread_;
};

FakeHttpServer::FakeHttpServer(ReplyFunction reply)
    : impl_(std::make_unique<Impl>(std::move(reply))) {}
FakeHttpServer::~FakeHttpServer() = default;
uint16_t FakeHttpServer::port() const { return impl_->port(); }
std::string FakeHttpServer::url() const { return absl::StrCat("http://127.0.0.1:", port()); }
int64_t FakeHttpServer::requests_received() const { return impl_->requests_received(); }
int64_t FakeHttpServer::connections_accepted() const { return impl_->connections_accepted(); }

}  // namespace vanguard::replayer::testing
