// A small blocking HTTP/1.1 GET over plain TCP, for the few worker-side fetches: the
// predictor's /metrics page each window and an autoscaler's target rate.
//
//   ASSIGN_OR_RETURN(HttpResponse r, HttpGet("http://127.0.0.1:8000/metrics", absl::Seconds(1)));
//
// Errors: INVALID_ARGUMENT for a URL that is not http://host[:port][/path]; UNAVAILABLE
// when the connection fails; DEADLINE_EXCEEDED after `timeout`. Any HTTP status is returned
// as is. Thread-compatible: each call uses its own connection.
#ifndef VANGUARD_WORKER_HTTP_GET_H_
#define VANGUARD_WORKER_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::worker {

struct HttpResponse {
  int status = 0;
  std::string body;
};

struct ParsedUrl {
  std::string host;
  std::string port;
  std::string target;  // path and query, at least "/"
};

absl::StatusOr<ParsedUrl> ParseHttpUrl(const std::string& url);

absl::StatusOr<HttpResponse> HttpGet(const std::string& url, absl::Duration timeout);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_HTTP_GET_H_
