// HttpUrl: an http:// (and, where the caller allows it, https://) URL split into what a
// client needs to resolve, connect and send one request. Shared by the worker's GET of
// /metrics pages and controller JSON (worker/http_get.h) and the orchestrator's webhook POSTs
// (orchestrator/webhook_sender.h); the replayer's model endpoints have their own, narrower
// form (replayer/step_config.h: a port is required, no query).
//
//   ASSIGN_OR_RETURN(HttpUrl url, ParseHttpUrl("http://[::1]:8080/metrics?x=1"));
//   url.host;        // "::1"
//   url.port;        // 8080 (80 when absent; 443 for https://)
//   url.target;      // "/metrics?x=1" (the fragment dropped; at least "/")
//   url.HostPort();  // "[::1]:8080"
//
// The URL comes from a submitter: ParseHttpUrl refuses anything that could add a header or a
// second request or hide the host (a byte outside printable ASCII, a space, user@
// credentials, a malformed host or port), with INVALID_ARGUMENT and a fixed message that
// never echoes the URL (its path or query may carry tokens). Pure functions; any thread.
#ifndef VANGUARD_COMMON_HTTP_URL_H_
#define VANGUARD_COMMON_HTTP_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vanguard {

struct HttpUrl {
  bool tls = false;    // https://
  std::string host;    // a name or IPv4 address; an IPv6 address without its brackets
  int port = 80;       // 1-65535; 80 by default, 443 for https://
  std::string target;  // path and query, at least "/"; the fragment is dropped

  // "host:port" ("[::1]:80" for IPv6): how errors name the target.
  std::string HostPort() const;
  // The Host header's value: HostPort(), without the port when it is the scheme's default.
  std::string HostHeader() const;
};

enum class UrlSchemes { kHttpOnly, kHttpOrHttps };

// `what` names the URL in error messages ("url", "webhook url").
absl::StatusOr<HttpUrl> ParseHttpUrl(absl::string_view url,
                                     UrlSchemes schemes = UrlSchemes::kHttpOnly,
                                     absl::string_view what = "url");

}  // namespace vanguard

#endif  // VANGUARD_COMMON_HTTP_URL_H_
