// StepConfig: a validated, defaulted RunStepRequest, plus the parsed target URL. ParseStepConfig is
// the single place where the replayer checks what the outside world sent it; every rule names the
// field it checks.
//
//   ASSIGN_OR_RETURN(StepConfig config, ParseStepConfig(request));
//
// Pure functions; any thread.
#ifndef VANGUARD_REPLAYER_STEP_CONFIG_H_
#define VANGUARD_REPLAYER_STEP_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::replayer {

// Defaults for zero/unset request fields.
inline constexpr absl::Duration kDefaultRequestTimeout = absl::Seconds(10);
inline constexpr absl::Duration kDefaultWindow = absl::Seconds(1);
inline constexpr int kDefaultMaxInFlight = 10'000;
// The fewest connections a step allows when max_connections is 0 (AutoMaxConnections).
inline constexpr int kDefaultMaxConnections = 256;
inline constexpr int64_t kDefaultTimerSlackNs = 1;

// Limits that keep a bad request from exhausting the replayer.
inline constexpr double kMaxRateQps = 1e6;
inline constexpr absl::Duration kMaxStepLength = absl::Hours(24);  // warmup + duration
inline constexpr absl::Duration kMinWindow = absl::Milliseconds(10);
inline constexpr int64_t kMaxWindows = 100'000;
inline constexpr absl::Duration kMaxRequestTimeout = absl::Minutes(10);
inline constexpr int kMaxMaxInFlight = 1'000'000;
inline constexpr int kMaxMaxConnections = 60'000;
inline constexpr size_t kMaxRequestBodyBytes = 64 << 20;
inline constexpr int kMaxThreads = 64;
inline constexpr int kMaxConcurrency = 100'000;
inline constexpr int kMaxEndpoints = 256;

// A KServe v2 JSON body with one small FP32 input, sent when request_body is empty.
inline constexpr std::string_view kDefaultKServeV2Body =
    R"({"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[0.1,0.2,0.3,0.4]}]})";

// An http:// URL split into what the client needs.
struct HttpTarget {
  std::string host;  // without brackets for IPv6 literals
  uint16_t port = 0;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
};

// Parses "http://host:port[/prefix]". INVALID_ARGUMENT (mentioning `field`) otherwise.
absl::StatusOr<HttpTarget> ParseHttpTarget(std::string_view url, std::string_view field);

struct StepConfig {
  // The endpoints the step's requests are spread over (request.targets, or request.target
  // alone), by endpoint_policy (never UNSPECIFIED after parsing; single keeps only the
  // first endpoint). target/target_url are endpoints[0].
  std::vector<HttpTarget> endpoints;
  std::vector<std::string> endpoint_urls;
  v1::EndpointPolicy endpoint_policy = v1::ENDPOINT_POLICY_SINGLE;
  HttpTarget target;
  std::string target_url;  // as given, e.g. "http://127.0.0.1:8000"
  v1::Protocol protocol = v1::PROTOCOL_KSERVE_V2_REST;
  std::string model_name;
  // KServe v2 REST: never empty after parsing (defaults to kDefaultKServeV2Body).
  // PROTOCOL_HTTP: empty means GET {target}, else POST it to {target}.
  std::string request_body;
  double rate_qps = 0;  // 0 in closed-loop mode
  v1::Schedule schedule = v1::SCHEDULE_CONSTANT;
  double ramp_end_qps = 0;  // SCHEDULE_RAMP only
  uint64_t seed = 0;
  std::string trace_path;  // empty: synthetic requests
  int concurrency = 0;     // > 0: closed loop with this many outstanding requests
  int threads = 1;         // event loops
  // This replayer's part of a step split over several replayers (0 of 1: all of it).
  int shard = 0;
  int shard_count = 1;
  absl::Duration slo_latency;  // zero: not checked
  absl::Duration slo_ttft;     // zero: not checked
  absl::Duration warmup;
  absl::Duration duration;  // measured part, after warmup
  absl::Duration request_timeout = kDefaultRequestTimeout;
  absl::Duration window = kDefaultWindow;
  int max_in_flight = kDefaultMaxInFlight;
  int max_connections = kDefaultMaxConnections;
  // How precisely the loops sleep: their timer slack (prctl PR_SET_TIMERSLACK; the kernel's
  // default is 50 us, which would be most of the skew budget). Not part of the request: the
  // process's own setting (a flag of `vanguard-replayer run`, for comparisons).
  int64_t timer_slack_ns = kDefaultTimerSlackNs;
  // Where protocols with their own resolver (KServe v2 gRPC) connect: the address StepRunner
  // resolved and the target policy admitted ("ipv4:10.1.2.3:8001", "ipv6:[fd00::5]:8001"),
  // so they cannot reach another address the name returns later. Not part of the request;
  // empty: they resolve target_url themselves.
  std::string connect_to;

  absl::Duration total() const { return warmup + duration; }
  bool closed_loop() const { return concurrency > 0; }
};

// Validates and defaults a request. INVALID_ARGUMENT naming the field and the rule for bad
// input. Which protocols can actually run is decided by BindProtocol (protocol_binding.h).
absl::StatusOr<StepConfig> ParseStepConfig(const v1::RunStepRequest& request);

// The connections a step with max_connections 0 allows: enough for every request in flight,
// since HTTP/1.1 carries one per connection and a request is in flight until its timeout at
// the latest. With m = rate x request_timeout (the higher rate of a ramp; the concurrency of
// a closed loop), m + 6 sqrt(m) + 32 covers Poisson arrivals; at least kDefaultMaxConnections,
// at most max_in_flight and kMaxMaxConnections. Connections open only when needed: a fast
// model uses a handful whatever the cap.
int AutoMaxConnections(const StepConfig& config);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_STEP_CONFIG_H_
