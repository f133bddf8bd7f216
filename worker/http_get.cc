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

constexpr absl::string_view kScheme = "http://";

absl::Status BadUrl(absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("url must be http://host[:port][/path][?query]: ", rule));
}

// Printable ASCII but space: anything else could end the request line or add a header.
bool IsUrlByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

bool IsHostNameByte(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_'; }

bool IsIpv6Byte(char c) { return absl::ascii_isxdigit(c) || c == ':' || c == '.'; }

bool IsPort(absl::string_view port) {
  int value = 0;
  return !port.empty() && port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); }) &&
         absl::SimpleAtoi(port, &value) && value >= 1 && value <= 65535;
}

// Splits "host[:port]" or "[v6]:port" into p->host and p->port.
absl::Status ParseAuthority(absl::string_view authority, ParsedUrl* p) {
  if (absl::StrContains(authority, '@')) return BadUrl("user@ credentials are not allowed");
  absl::string_view port = "80";
  if (absl::ConsumePrefix(&authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return BadUrl("unclosed [ in the host");
    absl::string_view host = authority.substr(0, close);
    if (host.empty() || !std::all_of(host.begin(), host.end(), IsIpv6Byte)) {
      return BadUrl("malformed IPv6 host");
    }
    p->host = std::string(host);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && !absl::ConsumePrefix(&authority, ":")) {
      return BadUrl("malformed IPv6 host");
    }
    if (!authority.empty()) port = authority;
  } else {
    const size_t colon = authority.find(':');
    absl::string_view host = authority.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), IsHostNameByte)) {
      return BadUrl("the host must be a name or an address");
    }
    p->host = std::string(host);
    if (colon != absl::string_view::npos) port = authority.substr(colon + 1);
  }
  if (!IsPort(port)) return BadUrl("the port must be a number from 1 to 65535");
  p->port = std::string(port);
  return absl::OkStatus();
}

// The error for a failed exchange, naming the target by host:port only: the reasons are
// Beast's and the system's fixed texts, never bytes the server sent.
absl::Status ExchangeError(const beast::error_code& ec, const ParsedUrl& url,
                           absl::Duration timeout, size_t max_body_bytes) {
  if (ec == beast::error::timeout) {
    return absl::DeadlineExceededError(
        absl::StrCat("GET ", url.HostPort(), ": no answer within ", absl::FormatDuration(timeout)));
  }
  if (ec == http::error::body_limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "GET ", url.HostPort(), ": the answer's body is larger than ", max_body_bytes, " bytes"));
  }
  return absl::UnavailableError(absl::StrCat("GET ", url.HostPort(), ": ", ec.message()));
}

// The Host header: the port only when it is not the default.
std::string HostHeader(const ParsedUrl& url) {
  if (url.port != "80") return url.HostPort();
  return absl::StrContains(url.host, ':') ? absl::StrCat("[", url.host, "]") : url.host;
}

// One GET on one connection, as a chain of async steps under a single expiry (so a stalled
// peer cannot hold the caller): resolve, connect, write, read the header, read the body.
// The header is read on its own first: Beast 1.74 forgets a Content-Length over the body
// limit when body bytes arrive in the same read, and then reserves the declared length.
// Lives on the caller's stack; the io_context runs its handlers on the caller's thread.
class GetExchange {
 public:
  GetExchange(boost::asio::io_context& io, const ParsedUrl& url, size_t max_body_bytes,
              const TargetPolicy& policy)
      : url_(url), policy_(policy), resolver_(io), stream_(io) {
    parser_.body_limit(static_cast<std::uint64_t>(max_body_bytes));
  }

  void Start(std::chrono::steady_clock::time_point deadline) {
    deadline_ = deadline;
    resolver_.async_resolve(url_.host, url_.port,
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
    int port = 0;
    absl::SimpleAtoi(url_.port, &port);
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
    request_ = http::request<http::empty_body>(http::verb::get, url_.target, 11);
    request_.set(http::field::host, HostHeader(url_));
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

  const ParsedUrl& url_;
  const TargetPolicy& policy_;
  std::chrono::steady_clock::time_point deadline_;
  tcp::resolver resolver_;
  std::vector<tcp::endpoint> allowed_;
  beast::tcp_stream stream_;
  http::request<http::empty_body> request_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

}  // namespace

std::string ParsedUrl::HostPort() const {
  return absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port)
                                      : absl::StrCat(host, ":", port);
}

absl::StatusOr<ParsedUrl> ParseHttpUrl(const std::string& url) {
  if (!absl::StartsWith(url, kScheme)) return BadUrl("the scheme must be http://");
  if (!std::all_of(url.begin(), url.end(), IsUrlByte)) {
    return BadUrl("only printable ASCII without spaces is allowed (percent-encode the rest)");
  }
  absl::string_view rest(url);
  rest.remove_prefix(kScheme.size());
  const size_t authority_end = rest.find_first_of("/?#");
  ParsedUrl p;
  if (absl::Status s = ParseAuthority(rest.substr(0, authority_end), &p); !s.ok()) return s;
  absl::string_view target =
      authority_end == absl::string_view::npos ? "" : rest.substr(authority_end);
  target = target.substr(0, target.find('#'));
  p.target = absl::StrCat(absl::StartsWith(target, "/") ? "" : "/", target);
  return p;
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& url, absl::Duration timeout,
                                     size_t max_body_bytes, const TargetPolicy* policy) {
  absl::StatusOr<ParsedUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) return parsed.status();
  static const TargetPolicy* const kDefaultPolicy = new TargetPolicy(TargetPolicy::Default());
  const TargetPolicy& allowed = policy != nullptr ? *policy : *kDefaultPolicy;
  int port = 0;
  absl::SimpleAtoi(parsed->port, &port);
  // The name first: a refused name (metadata.google.internal) is not even looked up.
  if (absl::Status verdict = allowed.MayResolve(parsed->host, port); !verdict.ok()) {
    return verdict;
  }
  boost::asio::io_context io;
  GetExchange exchange(io, *parsed, max_body_bytes, allowed);
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  exchange.Start(deadline);
  io.run_until(deadline);
  if (!io.stopped()) {
    io.stop();
    exchange.ec = beast::error::timeout;
  }
  if (!exchange.refusal.ok()) return exchange.refusal;
  if (exchange.ec) return ExchangeError(exchange.ec, *parsed, timeout, max_body_bytes);
  return std::move(exchange.response);
}

}  // namespace vanguard::worker
