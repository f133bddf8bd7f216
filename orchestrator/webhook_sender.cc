// Webhook POSTs over HTTP/1.1; see webhook_sender.h.
#include "orchestrator/webhook_sender.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/ssl/host_name_verification.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"

namespace vanguard {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// One POST on one connection, as a chain of async steps under a single deadline: resolve,
// connect (to allowed addresses only), the TLS handshake (https://), write, read the status
// line and headers. Lives on the caller's stack; the io_context runs its handlers on the
// caller's thread. Stream: beast::tcp_stream, or beast::ssl_stream over one.
template <typename Stream>
class PostExchange {
 public:
  template <typename... StreamArgs>
  PostExchange(boost::asio::io_context& io, const HttpUrl& url, const TargetPolicy& policy,
               http::request<http::string_body> request, StreamArgs&&... stream_args)
      : url_(url),
        policy_(policy),
        resolver_(io),
        stream_(io, std::forward<StreamArgs>(stream_args)...),
        request_(std::move(request)) {}

  void Start(std::chrono::steady_clock::time_point deadline) {
    deadline_ = deadline;
    resolver_.async_resolve(url_.host, absl::StrCat(url_.port),
                            [this](beast::error_code e, tcp::resolver::results_type results) {
                              if (!Failed(e)) Connect(results);
                            });
  }

  beast::error_code ec;  // the first failure, if any
  absl::Status refusal;  // the policy refused every address: nothing was connected
  int status = 0;

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  bool Failed(beast::error_code e) {
    if (e) ec = e;
    return static_cast<bool>(e);
  }

  void Connect(const tcp::resolver::results_type& results) {
    for (const auto& entry : results) {
      const tcp::endpoint& endpoint = entry.endpoint();
      std::optional<IpAddress> ip = IpAddress::FromSockaddr(endpoint.data(), endpoint.size());
      absl::Status verdict =
          ip ? policy_.AllowsResolved(url_.host, *ip, url_.port)
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
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    beast::get_lowest_layer(stream_).async_connect(
        allowed_, [this](beast::error_code e, const tcp::endpoint&) {
          if (!Failed(e)) Handshake();
        });
  }

  void Handshake() {
    if constexpr (kTls) {
      // The certificate must name the URL's host (a DNS or IP subject alternative name).
      stream_.set_verify_mode(boost::asio::ssl::verify_peer);
      stream_.set_verify_callback(boost::asio::ssl::host_name_verification(url_.host));
      if (!IpAddress::Parse(url_.host).has_value()) {
        SSL_set_tlsext_host_name(stream_.native_handle(), url_.host.c_str());  // SNI
      }
      stream_.async_handshake(boost::asio::ssl::stream_base::client, [this](beast::error_code e) {
        if (!Failed(e)) Write();
      });
    } else {
      Write();
    }
  }

  void Write() {
    http::async_write(stream_, request_, [this](beast::error_code e, size_t) {
      if (!Failed(e)) ReadHeader();
    });
  }

  void ReadHeader() {
    http::async_read_header(stream_, buffer_, parser_, [this](beast::error_code e, size_t) {
      if (Failed(e)) return;
      status = static_cast<int>(parser_.get().result_int());
      beast::error_code ignored;  // the body is never read: close at once
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  const HttpUrl& url_;
  const TargetPolicy& policy_;
  std::chrono::steady_clock::time_point deadline_;
  tcp::resolver resolver_;
  std::vector<tcp::endpoint> allowed_;
  Stream stream_;
  http::request<http::string_body> request_;
  beast::flat_buffer buffer_;
  http::response_parser<http::empty_body> parser_;
};

// Runs `exchange` on `io` until it ends or `timeout` passes; the POST's status or error.
template <typename Exchange>
absl::StatusOr<int> Run(boost::asio::io_context& io, Exchange& exchange, const HttpUrl& url,
                        absl::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  exchange.Start(deadline);
  io.run_until(deadline);
  if (!io.stopped()) {
    io.stop();
    exchange.ec = beast::error::timeout;
  }
  if (!exchange.refusal.ok()) return exchange.refusal;
  if (exchange.ec == beast::error::timeout) {
    return absl::DeadlineExceededError(absl::StrCat("POST ", url.HostPort(), ": no answer within ",
                                                    absl::FormatDuration(timeout)));
  }
  if (exchange.ec) {
    // The system's, OpenSSL's and Beast's fixed texts (e.g. "Connection refused",
    // "certificate verify failed"), never server bytes.
    return absl::UnavailableError(
        absl::StrCat("POST ", url.HostPort(), ": ", exchange.ec.message()));
  }
  return exchange.status;
}

// Every address, no name: what no policy allows is still refused.
TargetPolicy NeverAllowedOnly() { return *TargetPolicy::Parse("0.0.0.0/0,::/0"); }

}  // namespace

absl::StatusOr<HttpUrl> ParseWebhookUrl(const std::string& url) {
  return ParseHttpUrl(url, UrlSchemes::kHttpOrHttps, "webhook url");
}

struct HttpWebhookSender::TlsContext {
  boost::asio::ssl::context context{boost::asio::ssl::context::tls_client};
};

absl::StatusOr<std::unique_ptr<HttpWebhookSender>> HttpWebhookSender::Create(Options options) {
  auto tls = std::make_unique<TlsContext>();
  beast::error_code ec;
  if (options.tls_ca_file.empty()) {
    tls->context.set_default_verify_paths(ec);
  } else {
    tls->context.load_verify_file(options.tls_ca_file, ec);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load the CA certificates for https:// webhooks: ", ec.message()));
  }
  return std::unique_ptr<HttpWebhookSender>(
      new HttpWebhookSender(std::move(options), std::move(tls)));
}

HttpWebhookSender::HttpWebhookSender(Options options, std::unique_ptr<TlsContext> tls)
    : options_(std::move(options)),
      policy_(options_.policy ? *options_.policy : NeverAllowedOnly()),
      tls_(std::move(tls)) {}

HttpWebhookSender::~HttpWebhookSender() = default;

absl::StatusOr<int> HttpWebhookSender::Post(const std::string& url, const std::string& body,
                                            const HttpHeaders& headers) {
  absl::StatusOr<HttpUrl> parsed = ParseWebhookUrl(url);
  if (!parsed.ok()) return parsed.status();
  // The name first: a refused name (metadata.google.internal) is not even looked up.
  if (absl::Status verdict = policy_.MayResolve(parsed->host, parsed->port); !verdict.ok()) {
    return verdict;
  }
  http::request<http::string_body> request(http::verb::post, parsed->target, 11);
  request.set(http::field::host, parsed->HostHeader());
  request.set(http::field::user_agent, "vanguard-orchestrator");
  request.set(http::field::content_type, "application/json");
  request.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();

  boost::asio::io_context io;
  if (parsed->tls) {
    PostExchange<beast::ssl_stream<beast::tcp_stream>> exchange(io, *parsed, policy_,
                                                                std::move(request), tls_->context);
    return Run(io, exchange, *parsed, options_.timeout);
  }
  PostExchange<beast::tcp_stream> exchange(io, *parsed, policy_, std::move(request));
  return Run(io, exchange, *parsed, options_.timeout);
}

}  // namespace vanguard
