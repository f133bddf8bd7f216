// A small blocking HTTP/1.1 GET (and POST) over plain TCP, for the few worker-side fetches: the
// predictor's /metrics page each window, an autoscaler's target rate, and the fault hooks a
// replica-loss test POSTs.
//
//   ASSIGN_OR_RETURN(HttpResponse r, HttpGet("http://127.0.0.1:8000/metrics", absl::Seconds(1)));
//
// The URL comes from a submitter and the answer from whatever it points at, so both are
// outside input: the URL is parsed by common/http_url.h (which refuses anything that could add
// a header or a second request), and an error message names the target by
// host:port only (never the path or query, which may carry tokens) with a fixed reason,
// never text the server sent.
//
// Where it may connect is the operator's target policy (common/target_policy.h), checked on
// every address the host resolves to before any connection: refused addresses are never
// tried, and when none is left the GET fails without connecting.
//
// Errors: INVALID_ARGUMENT for a URL that is not http://host[:port][/path][?query];
// PERMISSION_DENIED when the policy refuses every address of the host (the message names
// host:port, the address and the rule); UNAVAILABLE when the connection fails or the answer
// is not HTTP; DEADLINE_EXCEEDED after `timeout`; RESOURCE_EXHAUSTED when the body is larger
// than `max_body_bytes`. Any HTTP status is returned as is. Thread-compatible: each call
// uses its own connection.
#ifndef VANGUARD_WORKER_HTTP_GET_H_
#define VANGUARD_WORKER_HTTP_GET_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/http_url.h"
#include "common/target_policy.h"

namespace vanguard::worker {

// The largest body HttpGet reads unless told otherwise (a /metrics page is well below it).
inline constexpr size_t kDefaultMaxHttpBodyBytes = 8 << 20;

struct HttpResponse {
  int status = 0;
  std::string body;
};

// `policy` null: TargetPolicy::Default() (loopback only).
absl::StatusOr<HttpResponse> HttpGet(const std::string& url, absl::Duration timeout,
                                     size_t max_body_bytes = kDefaultMaxHttpBodyBytes,
                                     const TargetPolicy* policy = nullptr);

// The same exchange as a POST with an empty body, for the fault hooks a test names (the
// replica-loss strategy's remove_url and restore_url); the answer's body is read up to
// kMaxHttpPostAnswerBytes and otherwise ignored by callers. Errors as HttpGet's (naming POST).
inline constexpr size_t kMaxHttpPostAnswerBytes = 64 << 10;
absl::StatusOr<HttpResponse> HttpPost(const std::string& url, absl::Duration timeout,
                                      const TargetPolicy* policy = nullptr);

// POST url -> ok when it answered 2xx. An error's message must hold nothing the server sent.
using UrlPoster = std::function<absl::Status(const std::string& url)>;

// HttpPost with a kFaultHookTimeout timeout to the targets `policy` allows (the worker's
// --allowed_targets); a non-2xx answer is FAILED_PRECONDITION naming host:port and the status.
inline constexpr absl::Duration kFaultHookTimeout = absl::Seconds(5);
UrlPoster PolicyHttpPoster(TargetPolicy policy);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_HTTP_GET_H_
