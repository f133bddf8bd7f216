// Fetches the rate a production autoscaler targets, for the direct-controller strategy:
// an HTTP endpoint returning JSON (the rate at a dotted field path) or a Prometheus instant
// query (/api/v1/query?query=...; the first sample's value). The I/O lives here, in the
// runner's layer; the strategy only verifies the rate.
//
//   ASSIGN_OR_RETURN(double qps, FetchControllerTarget(spec.direct_controller(), HttpFetch));
//
// The URL is the submitter's and the answer comes from whatever it points at, so the answer
// is hostile input: every field's type is checked before it is read, size and nesting are
// bounded, and no error ever carries bytes of the answer (not the body, not the chosen
// field's value, not a Prometheus error text) — only the URL's host:port, the HTTP status
// and a fixed reason. A test's error is readable by anyone who can read the test, and the
// URL may point at a service whose answers are secrets.
//
// Errors: INVALID_ARGUMENT naming what is wrong with the answer (too large, not JSON, nested
// too deep, field missing or of the wrong type, not a finite positive rate at most
// kMaxControllerRateQps, Prometheus status not "success" or no sample) or with the URL; the
// fetcher's error (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED) with its code. Never
// throws. Called from the test runner's thread; the parsers are pure and thread-safe.
#ifndef VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_
#define VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/target_policy.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::worker {

// Limits on an autoscaler's answer. A target rate is one number: anything larger or deeper
// is not an answer to the question asked.
inline constexpr size_t kMaxControllerAnswerBytes = 1 << 20;
inline constexpr int kMaxControllerAnswerDepth = 32;
// Above this a rate is a wrong field or unit (Vanguard sends up to about 1e6 req/s).
inline constexpr double kMaxControllerRateQps = 1e7;

// GET url -> body; non-2xx is an error. An error's message must hold nothing the server
// sent (it reaches the test's error); FetchControllerTarget adds which source failed.
using UrlFetcher = std::function<absl::StatusOr<std::string>(const std::string& url)>;

// The default fetcher: HttpGet with a 5 s timeout and a kMaxControllerAnswerBytes body
// limit, to the targets TargetPolicy::Default() allows (loopback). Errors name the
// host:port and the HTTP status, never the body; PERMISSION_DENIED for a refused target.
absl::StatusOr<std::string> HttpFetch(const std::string& url);

// HttpFetch to the targets `policy` allows (the worker's --allowed_targets).
UrlFetcher PolicyHttpFetcher(TargetPolicy policy);

// The rate at `dotted_path` ("a.b.c" through nested objects; empty: "target_qps") of a JSON
// document: a JSON number, or a string holding a decimal number ("12.5").
absl::StatusOr<double> RateFromJson(const std::string& body, const std::string& dotted_path);

// The value of the first sample of a Prometheus /api/v1/query answer (vector or scalar).
absl::StatusOr<double> RateFromPrometheus(const std::string& body);

// The configured target rate: target_qps as is, or fetched from json_url / prometheus_url
// and parsed. Errors start with the source ("json_url: ") and name its host:port.
absl::StatusOr<double> FetchControllerTarget(const vanguard::v1::DirectControllerStrategy& config,
                                             const UrlFetcher& fetch);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_
