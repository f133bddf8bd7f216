// A recording HTTP server for webhook tests; see recording_http_server.h.
#include "tests/testing/recording_http_server.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace vanguard::testing {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct RecordingHttpServer::Io {
  boost::asio::io_context context;
  tcp::acceptor acceptor{context};
  boost::asio::ssl::context tls{boost::asio::ssl::context::tls_server};
};

RecordingHttpServer::RecordingHttpServer(std::deque<int> statuses, std::optional<Tls> tls)
    : io_(std::make_unique<Io>()), tls_(tls.has_value()), statuses_(std::move(statuses)) {
  if (tls.has_value()) {
    io_->tls.use_certificate_chain_file(tls->cert);
    io_->tls.use_private_key_file(tls->key, boost::asio::ssl::context::pem);
  }
  io_->acceptor.open(tcp::v4());
  io_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  io_->acceptor.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  io_->acceptor.listen();
  port_ = io_->acceptor.local_endpoint().port();
  thread_ = std::thread([this] { Serve(); });
}

RecordingHttpServer::~RecordingHttpServer() {
  stop_ = true;
  beast::error_code ignored;
  tcp::socket wake(io_->context);  // unblocks accept()
  wake.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_), ignored);
  thread_.join();
}

std::string RecordingHttpServer::Url(const std::string& path) const {
  return absl::StrCat(tls_ ? "https" : "http", "://127.0.0.1:", port_, path);
}

std::vector<RecordingHttpServer::Request> RecordingHttpServer::requests() {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<RecordingHttpServer::Request> RecordingHttpServer::WaitForRequests(
    size_t count, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return requests_.size() >= count; };
  mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  return requests_;
}

void RecordingHttpServer::Serve() {
  while (!stop_) {
    tcp::socket socket(io_->context);
    beast::error_code ec;
    io_->acceptor.accept(socket, ec);
    if (ec || stop_) continue;
    if (tls_) {
      boost::asio::ssl::stream<tcp::socket&> stream(socket, io_->tls);
      stream.handshake(boost::asio::ssl::stream_base::server, ec);
      if (!ec) Exchange(stream);
    } else {
      Exchange(socket);
    }
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
}

template <typename Stream>
void RecordingHttpServer::Exchange(Stream& stream) {
  beast::error_code ec;
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  http::read(stream, buffer, request, ec);
  if (ec) return;
  Request recorded{
      std::string(request.method_string()), std::string(request.target()), {}, request.body()};
  for (const auto& field : request) {
    recorded.headers[absl::AsciiStrToLower(std::string(field.name_string()))] =
        std::string(field.value());
  }
  int status = 204;
  {
    absl::MutexLock lock(&mu_);
    requests_.push_back(std::move(recorded));
    if (!statuses_.empty()) {
      status = statuses_.front();
      statuses_.pop_front();
    }
  }
  http::response<http::string_body> response(static_cast<http::status>(status), 11);
  if (status != 204 && status != 304 && status >= 200) response.body() = kResponseBody;
  response.prepare_payload();
  http::write(stream, response, ec);
}

}  // namespace vanguard::testing
