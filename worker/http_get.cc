// Blocking HTTP GET on Boost.Beast. See http_get.h.
#include "worker/http_get.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace vanguard::worker {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// The error for a failed exchange, naming the target by host:port only: the reasons are
// Beast's and the system's fixed texts, never bytes the server sent.
absl::Status ExchangeError(http::verb verb, const beast::error_code& ec, const HttpUrl& url,
                           absl::Duration timeout, size_t max_body_bytes) {
  const std::string what(http::to_string(verb));
  if (ec == beast::error::timeout) {
    return absl::DeadlineExceededError(absl::StrCat(
        what, " ", url.HostPort(), ": no answer within ", absl::FormatDuration(timeout)));
  }
  if (ec == http::error::body_limit) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " ", url.HostPort(),
                                                     ": the answer's body is larger than ",
                                                     max_body_bytes, " bytes"));
  }
  return absl::UnavailableError(absl::StrCat(what, " ", url.HostPort(), ": ", ec.message()));
}

// One GET on one connection, as a chain of async steps under a single expiry (so a stalled
// peer cannot hold the caller): resolve, connect, write, read the header, read the body.
// The header is read on its own first: Beast 1.74 forgets a Content-Length over the body
// limit when body bytes arrive in the same read, and then reserves the declared length.
// Lives on the caller's stack; the io_context runs its handlers on the caller's thread.
class GetExchange {
 public:
  GetExchange(boost::asio::io_context& io, const HttpUrl& url, size_t max_body_bytes,
              const TargetPolicy& policy, http::verb verb)
      : url_(url), policy_(policy), verb_(verb), resolver_(io), stream_(io) {
    parser_.body_limit(static_cast<std::uint64_t>(max_body_bytes));
  }

  void Start(std::chrono::steady_clock::time_point deadline) {
    deadline_ = deadline;
    resolver_.async_resolve(url_.host, absl::StrCat(url_.port),
                            [this](beast::error_code e, tcp::resolver::results_type results) {
                              if (!Failed(e)) Connect(results);
                            });
  }

  beast::error_code ec;  // the first failure, if any
  absl::Status refusal;  // the policy refused every address: nothing was connected
  HttpResponse response;

 private:
  bool Failed(beast::error_code e) {
    if (e) ec = e;
    return static_cast<bool>(e);
  }

  // Connects to the first reachable address the policy allows; the others are never tried.
  void Connect(const tcp::resolver::results_type& results) {
    const int port = url_.port;
    for (const auto& entry : results) {
      const tcp::endpoint& endpoint = entry.endpoint();
      std::optional<IpAddress> ip = IpAddress::FromSockaddr(endpoint.data(), endpoint.size());
      absl::Status verdict =
          ip ? policy_.AllowsResolved(url_.host, *ip, port)
             : absl::PermissionDeniedError(absl::StrCat("target ", url_.HostPort(),
                                                        " resolved to an address that is not IP"));
      if (verdict.ok()) {
        allowed_.push_back(endpoint);
      } else if (refusal.ok()) {
        refusal = verdict;
      }
    }
    if (allowed_.empty()) return;  // refusal says why; the io_context runs out of work
    refusal = absl::OkStatus();
    stream_.expires_at(deadline_);
    stream_.async_connect(allowed_, [this](beast::error_code e, const tcp::endpoint&) {
      if (!Failed(e)) Write();
    });
  }

  void Write() {
    request_ = http::request<http::empty_body>(verb_, url_.target, 11);
    if (verb_ == http::verb::post) request_.content_length(0);
    request_.set(http::field::host, url_.HostHeader());
    request_.set(http::field::user_agent, "vanguard-worker");
    request_.set(http::field::connection, "close");
    http::async_write(stream_, request_, [this](beast::error_code e, size_t) {
      if (!Failed(e)) ReadHeader();
    });
  }

  void ReadHeader() {
    http::async_read_header(stream_, buffer_, parser_, [this](beast::error_code e, size_t) {
      if (!Failed(e)) ReadBody();
    });
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, parser_, [this](beast::error_code e, size_t) {
      if (Failed(e)) return;
      response.status = static_cast<int>(parser_.get().result_int());
      response.body = std::move(parser_.get().body());
    });
  }

  const HttpUrl& url_;
  const TargetPolicy& policy_;
  const http::verb verb_;
  std::chrono::steady_clock::time_point deadline_;
  tcp::resolver resolver_;
  std::vector<tcp::endpoint> allowed_;
  beast::tcp_stream stream_;
  http::request<http::empty_body> request_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

}  // namespace

namespace {

absl::StatusOr<HttpResponse> Exchange(http::verb verb, const std::string& url,
                                      absl::Duration timeout, size_t max_body_bytes,
                                      const TargetPolicy* policy) {
  absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) return parsed.status();
  static const TargetPolicy* const kDefaultPolicy = new TargetPolicy(TargetPolicy::Default());
  const TargetPolicy& allowed = policy != nullptr ? *policy : *kDefaultPolicy;
  const int port = parsed->port;
  // The name first: a refused name (metadata.google.internal) is not even looked up.
  if (absl::Status verdict = allowed.MayResolve(parsed->host, port); !verdict.ok()) {
    return verdict;
  }
  boost::asio::io_context io;
  GetExchange exchange(io, *parsed, max_body_bytes, allowed, verb);
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  exchange.Start(deadline);
  io.run_until(deadline);
  if (!io.stopped()) {
    io.stop();
    exchange.ec = beast::error::timeout;
  }
  if (!exchange.refusal.ok()) return exchange.refusal;
  if (exchange.ec) return ExchangeError(verb, exchange.ec, *parsed, timeout, max_body_bytes);
  return std::move(exchange.response);
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(const std::string& url, absl::Duration timeout,
                                     size_t max_body_bytes, const TargetPolicy* policy) {
  return Exchange(http::verb::get, url, timeout, max_body_bytes, policy);
}

absl::StatusOr<HttpResponse> HttpPost(const std::string& url, absl::Duration timeout,
                                      const TargetPolicy* policy) {
  return Exchange(http::verb::post, url, timeout, kMaxHttpPostAnswerBytes, policy);
}

UrlPoster PolicyHttpPoster(TargetPolicy policy) {
  return [policy = std::move(policy)](const std::string& url) -> absl::Status {
    absl::StatusOr<HttpResponse> r = HttpPost(url, kFaultHookTimeout, &policy);
    if (!r.ok()) return r.status();
    if (r->status < 200 || r->status > 299) {
      absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
      return absl::FailedPreconditionError(
          absl::StrCat("POST ", parsed.ok() ? parsed->HostPort() : std::string("?"),
                       ": answered HTTP ", r->status));
    }
    return absl::OkStatus();
  };
}

}  // namespace vanguard::worker
