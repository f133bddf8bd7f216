// See record_proxy.h. Each client connection is a coroutine on the proxy's one io_context:
// read a request's header (the arrival time), then its body, append it to the trace, forward
// it over this connection's own keep-alive upstream connection, relay the response.
#include "replayer/trace/record_proxy.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <utility>  // before Asio: its awaitable.hpp uses std::exchange

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "boost/asio.hpp"
#include "boost/asio/co_spawn.hpp"
#include "boost/asio/detached.hpp"
#include "boost/asio/redirect_error.hpp"
#include "boost/asio/use_awaitable.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "common/port_file.h"
#include "common/status_macros.h"
#include "replayer/trace/http_request_kind.h"

namespace vanguard::replayer {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view Sv(beast::string_view s) { return std::string_view(s.data(), s.size()); }

struct HostPort {
  std::string host;
  std::string port;
};

absl::StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view field) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(field), ": must be HOST:PORT, got \"", Av(text), "\""));
  }
  int port = 0;
  if (!absl::SimpleAtoi(Av(text.substr(colon + 1)), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(Av(field), ": bad port in \"", Av(text), "\""));
  }
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return HostPort{host, std::string(text.substr(colon + 1))};
}

}  // namespace

class RecordProxy::Impl {
 public:
  Impl(const RecordOptions& options, Clock* clock, HostPort upstream,
       std::unique_ptr<TraceWriter> writer)
      : options_(options),
        clock_(clock),
        upstream_(std::move(upstream)),
        writer_(std::move(writer)),
        acceptor_(io_),
        signals_(io_) {}

  absl::Status Bind() {
    ASSIGN_OR_RETURN(HostPort listen, ParseHostPort(options_.listen, "listen"));
    beast::error_code ec;
    auto address = asio::ip::make_address(listen.host, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("listen: host must be an IP address, got \"", listen.host, "\""));
    }
    tcp::endpoint endpoint(address, static_cast<uint16_t>(std::stoi(listen.port)));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options_.listen, ": ", ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    return absl::OkStatus();
  }

  absl::Status Run() {
    if (options_.stop_on_signals) {
      signals_.add(SIGINT);
      signals_.add(SIGTERM);
      signals_.async_wait([this](const beast::error_code& ec, int) {
        if (!ec) Shutdown();
      });
    }
    asio::co_spawn(io_, Accept(), asio::detached);
    io_.run();
    absl::Status close = writer_->Close();
    if (!write_error_.ok()) return write_error_;
    return close;
  }

  void Stop() {
    asio::post(io_, [this] { Shutdown(); });
  }

  uint16_t port() const { return port_; }
  int64_t recorded() const { return recorded_.load(); }

 private:
  void Shutdown() {
    if (stopping_) return;
    stopping_ = true;
    beast::error_code ignored;
    acceptor_.close(ignored);
    signals_.cancel(ignored);
    // Open connections end at their next read; anything mid-exchange is abandoned.
    io_.stop();
  }

  asio::awaitable<void> Accept() {
    while (!stopping_) {
      beast::error_code ec;
      tcp::socket socket =
          co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (stopping_) co_return;
        continue;
      }
      asio::co_spawn(io_, Serve(std::move(socket)), asio::detached);
    }
  }

  // Appends the request to the trace. Returns false once the trace cannot be written.
  bool Record(const http::request<http::string_body>& request, absl::Duration arrival) {
    TraceRecord& record = record_;
    record.interarrival_us = last_arrival_.has_value()
                                 ? static_cast<uint64_t>(std::max<int64_t>(
                                       0, absl::ToInt64Microseconds(arrival - *last_arrival_)))
                                 : 0;
    last_arrival_ = arrival;
    std::string_view target = Sv(request.target());
    HttpRequestKind kind = ClassifyHttpRequest(target, request.body());
    record.protocol = kind.protocol;
    record.model = kind.model;
    record.method = std::string(Sv(request.method_string()));
    record.path = std::string(target);
    record.headers.clear();
    for (const auto& field : request) {
      if (record.headers.size() >= kMaxTraceHeaders) break;
      if (!IsRecordedHeader(Sv(field.name_string()))) continue;
      record.headers.emplace_back(std::string(Sv(field.name_string())),
                                  std::string(Sv(field.value())));
    }
    record.payload = request.body();
    absl::Status status = writer_->Append(record);
    if (status.ok()) status = writer_->Flush();
    if (!status.ok()) {
      write_error_ = status;
      Shutdown();
      return false;
    }
    recorded_.fetch_add(1);
    return true;
  }

  void MaybeFinish() {
    if (options_.max_requests > 0 && recorded_.load() >= options_.max_requests && in_flight_ == 0) {
      Shutdown();
    }
  }

  enum class Relay { kDone, kNoResponse, kBroken };

  // Forwards `request` over *upstream (connecting, or reconnecting once if a kept-alive
  // connection turns out closed) and relays the response to `client` piece by piece as it
  // arrives, so streamed (SSE) responses reach the client live. kNoResponse: nothing was
  // relayed (the caller answers 502); kBroken: a connection failed mid-response.
  asio::awaitable<Relay> ForwardAndRelay(http::request<http::string_body> request,
                                         std::optional<beast::tcp_stream>* upstream,
                                         beast::flat_buffer* upstream_buffer,
                                         beast::tcp_stream* client, unsigned client_version,
                                         bool client_keep_alive) {
    request.set(http::field::host, upstream_.host + ":" + upstream_.port);
    request.erase(http::field::connection);
    request.erase(http::field::proxy_connection);
    request.version(11);  // we speak HTTP/1.1 upstream whatever the client spoke
    request.keep_alive(true);
    request.prepare_payload();
    std::optional<http::response_parser<http::buffer_body>> parser_storage;
    bool have_header = false;
    for (int attempt = 0; attempt < 2 && !have_header; ++attempt) {
      beast::error_code ec;
      if (!upstream->has_value()) {
        tcp::resolver resolver(io_);
        auto endpoints = co_await resolver.async_resolve(
            upstream_.host, upstream_.port, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return Relay::kNoResponse;
        upstream->emplace(io_);
        co_await (*upstream)->async_connect(endpoints,
                                            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          upstream->reset();
          co_return Relay::kNoResponse;
        }
        upstream_buffer->clear();
      }
      co_await http::async_write(**upstream, request,
                                 asio::redirect_error(asio::use_awaitable, ec));
      if (!ec) {
        parser_storage.emplace();  // a fresh parser per attempt
        parser_storage->body_limit(
            std::numeric_limits<std::uint64_t>::max());  // streams may be long; they are not stored
        co_await http::async_read_header(**upstream, *upstream_buffer, *parser_storage,
                                         asio::redirect_error(asio::use_awaitable, ec));
      }
      if (!ec) {
        have_header = true;
      } else {
        upstream->reset();
      }
    }
    if (!have_header) co_return Relay::kNoResponse;

    http::response_parser<http::buffer_body>& parser = *parser_storage;
    auto& response = parser.get();
    bool upstream_keep_alive = response.keep_alive();
    if (client_version < 11) {
      // HTTP/1.0 knows no chunked coding: send the body raw; closing the connection ends it
      // (Serve never keeps 1.0 clients alive).
      if (response.chunked()) response.chunked(false);
    } else if (!parser.is_done() && !parser.chunked() && !parser.content_length().has_value()) {
      // Body delimited by the upstream closing: re-frame it as chunked for the client.
      response.chunked(true);
    }
    response.version(client_version);
    response.keep_alive(client_keep_alive);
    http::serializer<false, http::buffer_body> serializer{response};
    std::array<char, 16 << 10> piece;
    beast::error_code ec;
    do {
      if (!parser.is_done()) {
        response.body().data = piece.data();
        response.body().size = piece.size();
        co_await http::async_read_some(**upstream, *upstream_buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec == http::error::need_buffer) ec = {};
        if (ec) {
          upstream->reset();
          co_return Relay::kBroken;
        }
        response.body().size = piece.size() - response.body().size;
        // No bytes yet: data must be null, or Beast would emit a zero-size (= last) chunk.
        response.body().data = response.body().size == 0 ? nullptr : piece.data();
        response.body().more = !parser.is_done();
      } else {
        response.body().data = nullptr;
        response.body().size = 0;
        response.body().more = false;
      }
      co_await http::async_write(*client, serializer,
                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        upstream->reset();
        co_return Relay::kBroken;
      }
    } while (!parser.is_done() || !serializer.is_done());
    if (!upstream_keep_alive) upstream->reset();
    co_return Relay::kDone;
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    beast::tcp_stream client(std::move(socket));
    beast::flat_buffer buffer;
    std::optional<beast::tcp_stream> upstream;
    beast::flat_buffer upstream_buffer;
    while (!stopping_) {
      beast::error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(options_.max_body_bytes);
      co_await http::async_read_header(client, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      absl::Duration arrival = clock_->Monotonic();
      co_await http::async_read(client, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) break;
      if (ec) {
        http::response<http::string_body> bad{http::status::bad_request, 11};
        bad.body() = absl::StrCat("vanguard-replayer record: bad request: ", ec.message(), "\n");
        bad.keep_alive(false);
        bad.prepare_payload();
        co_await http::async_write(client, bad, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      http::request<http::string_body> request = parser.release();
      bool keep_alive = request.keep_alive() && request.version() >= 11;
      unsigned version = request.version();
      if (options_.max_requests > 0 && recorded_.load() >= options_.max_requests) {
        http::response<http::string_body> done{http::status::service_unavailable, version};
        done.body() = "vanguard-replayer record: recording finished\n";
        done.keep_alive(false);
        done.prepare_payload();
        co_await http::async_write(client, done, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      if (!Record(request, arrival)) break;
      ++in_flight_;
      Relay relay = co_await ForwardAndRelay(std::move(request), &upstream, &upstream_buffer,
                                             &client, version, keep_alive);
      if (relay == Relay::kNoResponse) {
        http::response<http::string_body> bad_gateway{http::status::bad_gateway, version};
        bad_gateway.body() = absl::StrCat("vanguard-replayer record: upstream ", upstream_.host,
                                          ":", upstream_.port, " did not answer\n");
        bad_gateway.keep_alive(keep_alive);
        bad_gateway.prepare_payload();
        co_await http::async_write(client, bad_gateway,
                                   asio::redirect_error(asio::use_awaitable, ec));
      } else if (relay == Relay::kBroken) {
        ec = asio::error::connection_aborted;
      }
      --in_flight_;
      MaybeFinish();
      if (ec || !keep_alive) break;
    }
    beast::error_code ignored;
    client.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  RecordOptions options_;
  Clock* clock_;
  HostPort upstream_;
  std::unique_ptr<TraceWriter> writer_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  uint16_t port_ = 0;
  bool stopping_ = false;  // loop thread only
  int64_t in_flight_ = 0;  // loop thread only
  std::atomic<int64_t> recorded_{0};
  std::optional<absl::Duration> last_arrival_;
  TraceRecord record_;  // reused
  absl::Status write_error_;
};

RecordProxy::RecordProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RecordProxy::~RecordProxy() = default;

absl::StatusOr<std::unique_ptr<RecordProxy>> RecordProxy::Create(const RecordOptions& options,
                                                                 Clock* clock) {
  if (options.upstream.empty())
    return absl::InvalidArgumentError("upstream: required (http://HOST:PORT)");
  if (options.output.empty())
    return absl::InvalidArgumentError("output: required (the trace file)");
  if (options.max_requests < 0) return absl::InvalidArgumentError("max_requests: must be >= 0");
  std::string_view upstream = options.upstream;
  if (upstream.substr(0, 7) != "http://") {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream: must start with http://, got \"", options.upstream, "\""));
  }
  upstream.remove_prefix(7);
  upstream = upstream.substr(0, upstream.find('/'));
  ASSIGN_OR_RETURN(HostPort upstream_address, ParseHostPort(upstream, "upstream"));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer, TraceWriter::Create(options.output));
  auto impl =
      std::make_unique<Impl>(options, clock, std::move(upstream_address), std::move(writer));
  RETURN_IF_ERROR(impl->Bind());
  return std::unique_ptr<RecordProxy>(new RecordProxy(std::move(impl)));
}

uint16_t RecordProxy::port() const { return impl_->port(); }
absl::Status RecordProxy::Run() { return impl_->Run(); }
void RecordProxy::Stop() { impl_->Stop(); }
int64_t RecordProxy::requests_recorded() const { return impl_->recorded(); }

absl::Status RunRecordProxy(RecordOptions options) {
  options.stop_on_signals = true;
  ASSIGN_OR_RETURN(std::unique_ptr<RecordProxy> proxy, RecordProxy::Create(options));
  std::string host = options.listen.substr(0, options.listen.rfind(':'));
  if (!options.port_file.empty() && !WritePortFile(options.port_file, proxy->port())) {
    return absl::UnavailableError(absl::StrCat("cannot write port_file ", options.port_file));
  }
  std::printf("LISTENING %s:%d\n", host.c_str(), proxy->port());
  std::fflush(stdout);
  absl::Status status = proxy->Run();
  std::cerr << "vanguard-replayer record: " << proxy->requests_recorded()
            << " requests recorded to " << options.output << "\n";
  return status;
}

}  // namespace vanguard::replayer
