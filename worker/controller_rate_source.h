// Fetches the rate a production autoscaler targets, for the direct-controller strategy:
// an HTTP endpoint returning JSON (the rate at a dotted field path) or a Prometheus instant
// query (/api/v1/query?query=...; the first sample's value). The I/O lives here, in the
// runner's layer; the strategy only verifies the rate.
//
//   ASSIGN_OR_RETURN(double qps, FetchControllerTarget(spec.direct_controller(), HttpFetch));
//
// Errors: INVALID_ARGUMENT naming what is wrong with the answer (not JSON, field missing,
// not a positive number, Prometheus status not "success" or no sample); the fetcher's error
// (UNAVAILABLE, DEADLINE_EXCEEDED) as is. Called from the test runner's thread.
#ifndef VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_
#define VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard::worker {

// GET url -> body (non-2xx is an error).
using UrlFetcher = std::function<absl::StatusOr<std::string>(const std::string& url)>;

// The default fetcher (HttpGet with a 5 s timeout).
absl::StatusOr<std::string> HttpFetch(const std::string& url);

// The number at `dotted_path` ("a.b.c"; empty: "target_qps") of a JSON document; numbers
// given as strings are accepted.
absl::StatusOr<double> RateFromJson(const std::string& body, const std::string& dotted_path);

// The value of the first sample of a Prometheus /api/v1/query answer (vector or scalar).
absl::StatusOr<double> RateFromPrometheus(const std::string& body);

absl::StatusOr<double> FetchControllerTarget(const vanguard::v1::DirectControllerStrategy& config,
                                             const UrlFetcher& fetch);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_CONTROLLER_RATE_SOURCE_H_
