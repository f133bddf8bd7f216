// Sends one webhook POST and reports the HTTP status it got: the transport of
// WebhookDispatcher, behind an interface so tests substitute a fake.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<HttpWebhookSender> sender,
//                    HttpWebhookSender::Create({.timeout = absl::Seconds(10), .policy = policy}));
//   absl::StatusOr<int> status = sender->Post(url, body, {{"X-Vanguard-Signature", sig}});
//
// HttpWebhookSender speaks HTTP/1.1 over TCP (http://) or TLS (https://: the server's
// certificate must chain to a trusted CA and name the URL's host). The host is judged by the target
// policy before it is looked up (MayResolve) and each address it resolves to before it is connected
// to (AllowsResolved), so a name cannot be pointed at a link-local or metadata address after the
// webhook was accepted. Only the response's status line and headers are read; its body is never
// read, kept or shown.
//
// Errors carry fixed texts and the target's host:port only (never the URL's path or query,
// the body sent or anything the server sent): INVALID_ARGUMENT for a URL it cannot send to,
// PERMISSION_DENIED when the policy refuses the target, DEADLINE_EXCEEDED after `timeout`,
// UNAVAILABLE when the exchange failed. Post blocks the calling thread (any thread) for at
// most `timeout`; the sender is immutable and may be shared.
#ifndef VANGUARD_ORCHESTRATOR_WEBHOOK_SENDER_H_
#define VANGUARD_ORCHESTRATOR_WEBHOOK_SENDER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/http_url.h"
#include "common/target_policy.h"

namespace vanguard {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

class WebhookSender {
 public:
  virtual ~WebhookSender() = default;
  // POSTs `body` (application/json) to `url` with `headers`; the response's status code.
  virtual absl::StatusOr<int> Post(const std::string& url, const std::string& body,
                                   const HttpHeaders& headers) = 0;
};

// Splits a webhook's http:// or https:// URL (common/http_url.h's rules; errors say
// "webhook url" and never echo the URL).
absl::StatusOr<HttpUrl> ParseWebhookUrl(const std::string& url);

class HttpWebhookSender final : public WebhookSender {
 public:
  struct Options {
    absl::Duration timeout = absl::Seconds(10);  // the whole exchange
    // Where webhooks may go (--allowed_targets); unset: anywhere but the never-allowed
    // targets (link-local, cloud metadata).
    std::optional<TargetPolicy> policy;
    // PEM CA certificates https:// servers must chain to; empty: the system's trusted CAs.
    std::string tls_ca_file;
  };

  // INVALID_ARGUMENT when tls_ca_file cannot be loaded.
  static absl::StatusOr<std::unique_ptr<HttpWebhookSender>> Create(Options options);
  ~HttpWebhookSender() override;

  absl::StatusOr<int> Post(const std::string& url, const std::string& body,
                           const HttpHeaders& headers) override;

 private:
  struct TlsContext;  // boost::asio::ssl::context, kept out of this header
  HttpWebhookSender(Options options, std::unique_ptr<TlsContext> tls);

  const Options options_;
  const TargetPolicy policy_;
  std::unique_ptr<TlsContext> tls_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_WEBHOOK_SENDER_H_
