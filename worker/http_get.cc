// Blocking HTTP GET on Boost.Beast. See http_get.h.
#include "worker/http_get.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace vanguard::worker {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

absl::StatusOr<ParsedUrl> ParseHttpUrl(const std::string& url) {
  if (!absl::StartsWith(url, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("url must start with http://, got '", url, "'"));
  }
  std::string rest = url.substr(7);
  ParsedUrl p;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  p.target = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    p.host = authority.substr(0, colon);
    p.port = authority.substr(colon + 1);
  } else {
    p.host = authority;
    p.port = "80";
  }
  if (p.host.empty() || p.port.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("url has no host or port: '", url, "'"));
  }
  return p;
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& url, absl::Duration timeout) {
  absl::StatusOr<ParsedUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) return parsed.status();
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  HttpResponse out;
  beast::error_code ec;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  tcp::resolver resolver(io);
  // Async operations with one expiry so a stalled peer cannot hold the caller.
  resolver.async_resolve(
      parsed->host, parsed->port, [&](beast::error_code e, tcp::resolver::results_type results) {
        if (e) {
          ec = e;
          return;
        }
        stream.expires_at(deadline);
        stream.async_connect(results, [&](beast::error_code e2, const tcp::endpoint&) {
          if (e2) {
            ec = e2;
            return;
          }
          auto req = std::make_shared<http::request<http::empty_body>>(http::verb::get,
                                                                       parsed->target, 11);
          req->set(http::field::host, parsed->host);
          req->set(http::field::user_agent, "vanguard-worker");
          req->set(http::field::connection, "close");
          http::async_write(stream, *req, [&, req](beast::error_code e3, size_t) {
            if (e3) {
              ec = e3;
              return;
            }
            auto buffer = std::make_shared<beast::flat_buffer>();
            auto res = std::make_shared<http::response<http::string_body>>();
            http::async_read(stream, *buffer, *res, [&, buffer, res](beast::error_code e4, size_t) {
              if (e4) {
                ec = e4;
                return;
              }
              out.status = static_cast<int>(res->result_int());
              out.body = std::move(res->body());
            });
          });
        });
      });
  io.run_until(deadline);
  if (!io.stopped()) {
    timed_out = true;
    io.stop();
  }
  if (timed_out || ec == beast::error::timeout) {
    return absl::DeadlineExceededError(
        absl::StrCat("GET ", url, ": no answer within ", absl::FormatDuration(timeout)));
  }
  if (ec) return absl::UnavailableError(absl::StrCat("GET ", url, ": ", ec.message()));
  return out;
}

}  // namespace vanguard::worker
