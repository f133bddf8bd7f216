// Request validation and the HTTP request builder; see step_config.h. Any thread.
#include "replayer/step_config.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "replayer/endpoint_chooser.h"

namespace vanguard::replayer {
namespace {

// Our Abseil's string_view is not std::string_view.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Invalid(std::string_view field, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(Absl(field), ": ", Absl(rule)));
}

// proto Duration -> absl::Duration; false if seconds/nanos are out of the proto's range or
// have mixed signs.
bool FromProtoDuration(const google::protobuf::Duration& d, absl::Duration* out) {
  constexpr int64_t kMaxSeconds = 315'576'000'000;
  if (d.seconds() < -kMaxSeconds || d.seconds() > kMaxSeconds) return false;
  if (d.nanos() <= -1'000'000'000 || d.nanos() >= 1'000'000'000) return false;
  if ((d.seconds() < 0 && d.nanos() > 0) || (d.seconds() > 0 && d.nanos() < 0)) return false;
  *out = absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
  return true;
}

absl::StatusOr<absl::Duration> NonNegativeDuration(const google::protobuf::Duration& d,
                                                   std::string_view field) {
  absl::Duration out;
  if (!FromProtoDuration(d, &out)) return Invalid(field, "is not a valid Duration");
  if (out < absl::ZeroDuration()) return Invalid(field, "must not be negative");
  return out;
}

// Characters allowed in a model name: it becomes a path segment of the request line.
bool IsModelNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
         c == '~' || c == ':' || c == '@' || c == '+';
}

}  // namespace

absl::StatusOr<HttpTarget> ParseHttpTarget(std::string_view url, std::string_view field) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Invalid(field, absl::StrCat("must be an http:// URL like http://127.0.0.1:8000, got \"",
                                       Absl(url), "\""));
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '?' || c == '#') {
      return Invalid(field, "must not contain whitespace, control characters, '?' or '#'");
    }
  }
  HttpTarget target;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Invalid(field, "has an unterminated [IPv6] host");
    target.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (after.empty() || after.front() != ':') return Invalid(field, "must include a port");
    port_text = after.substr(1);
  } else {
    size_t colon = authority.rfind(':');
    if (colon == std::string_view::npos) {
      return Invalid(field, "must include a port, like http://127.0.0.1:8000");
    }
    target.host = std::string(authority.substr(0, colon));
    port_text = authority.substr(colon + 1);
  }
  if (target.host.empty()) return Invalid(field, "must include a host");
  if (target.host.find('@') != std::string::npos) return Invalid(field, "must not carry userinfo");
  uint32_t port = 0;
  if (!absl::SimpleAtoi(Absl(port_text), &port) || port == 0 || port > 65535) {
    return Invalid(field, absl::StrCat("has an invalid port \"", Absl(port_text), "\" (1-65535)"));
  }
  target.port = static_cast<uint16_t>(port);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  target.path_prefix = std::string(path);
  return target;
}

namespace {

// targets (or target alone) into config's endpoints, target and policy.
absl::Status ParseEndpoints(const v1::RunStepRequest& request, StepConfig* config) {
  if (!v1::EndpointPolicy_IsValid(request.endpoint_policy())) {
    return Invalid("endpoint_policy", absl::StrCat("unknown value ", request.endpoint_policy()));
  }
  if (request.targets_size() > kMaxEndpoints) {
    return Invalid("targets", absl::StrCat("must list at most ", kMaxEndpoints, " endpoints"));
  }
  if (request.targets_size() == 0) {
    auto target = ParseHttpTarget(request.target(), "target");
    if (!target.ok()) return target.status();
    config->endpoints.push_back(*std::move(target));
    config->endpoint_urls.push_back(request.target());
  } else {
    if (!request.target().empty() && request.target() != request.targets(0)) {
      return Invalid("target", "must be empty or equal to targets[0] when targets is set");
    }
    for (int i = 0; i < request.targets_size(); ++i) {
      auto target = ParseHttpTarget(request.targets(i), absl::StrCat("targets[", i, "]"));
      if (!target.ok()) return target.status();
      config->endpoints.push_back(*std::move(target));
      config->endpoint_urls.push_back(request.targets(i));
    }
  }
  config->endpoint_policy =
      ResolveEndpointPolicy(request.endpoint_policy(), static_cast<int>(config->endpoints.size()));
  if (config->endpoint_policy == v1::ENDPOINT_POLICY_SINGLE) {  // one address: the router
    config->endpoints.resize(1);
    config->endpoint_urls.resize(1);
  }
  config->target = config->endpoints[0];
  config->target_url = config->endpoint_urls[0];
  return absl::OkStatus();
}

}  // namespace

namespace {

// Where and what to send: protocol, endpoints, model name and request body.
absl::Status ParseTarget(const v1::RunStepRequest& request, StepConfig* config) {
  if (!v1::Protocol_IsValid(request.protocol())) {
    return Invalid("protocol", absl::StrCat("unknown value ", request.protocol()));
  }
  config->protocol = request.protocol() == v1::PROTOCOL_UNSPECIFIED ? v1::PROTOCOL_KSERVE_V2_REST
                                                                    : request.protocol();

  RETURN_IF_ERROR(ParseEndpoints(request, config));

  if (request.model_name().empty() && config->protocol != v1::PROTOCOL_HTTP &&
      request.trace_path().empty()) {
    return Invalid("model_name",
                   absl::StrCat("must not be empty for ", v1::Protocol_Name(config->protocol)));
  }
  for (char c : request.model_name()) {
    if (!IsModelNameChar(c)) {
      return Invalid("model_name",
                     "may contain only letters, digits and - _ . ~ : @ + (it is a URL path "
                     "segment)");
    }
  }
  config->model_name = request.model_name();

  if (request.request_body().size() > kMaxRequestBodyBytes) {
    return Invalid("request_body",
                   absl::StrCat("must be at most ", kMaxRequestBodyBytes, " bytes"));
  }
  config->request_body = request.request_body();
  if (config->request_body.empty() && config->protocol == v1::PROTOCOL_KSERVE_V2_REST) {
    config->request_body = std::string(kDefaultKServeV2Body);
  }
  return absl::OkStatus();
}

// How much to send: closed-loop concurrency, threads, shard, rate and schedule, seed.
absl::Status ParseLoad(const v1::RunStepRequest& request, StepConfig* config) {
  if (request.concurrency() < 0 || request.concurrency() > kMaxConcurrency) {
    return Invalid("concurrency", absl::StrCat("must be in [0, ", kMaxConcurrency, "]"));
  }
  config->concurrency = request.concurrency();
  if (request.threads() < 0 || request.threads() > kMaxThreads) {
    return Invalid("threads", absl::StrCat("must be in [0, ", kMaxThreads, "]"));
  }
  config->threads = request.threads() == 0 ? 1 : request.threads();
  if (request.shard_count() < 0 || request.shard_count() > 10'000) {
    return Invalid("shard_count", "must be in [0, 10000]");
  }
  config->shard_count = request.shard_count() == 0 ? 1 : request.shard_count();
  if (request.shard() < 0 || request.shard() >= config->shard_count) {
    return Invalid("shard",
                   absl::StrCat("must be in [0, shard_count) = [0, ", config->shard_count, ")"));
  }
  config->shard = request.shard();

  if (config->closed_loop()) {
    if (request.rate_qps() != 0) {
      return Invalid("rate_qps", "must be 0 when concurrency > 0 (closed loop has no rate)");
    }
  } else if (!std::isfinite(request.rate_qps()) || request.rate_qps() <= 0 ||
             request.rate_qps() > kMaxRateQps) {
    return Invalid("rate_qps",
                   absl::StrCat("must be > 0 and <= ", kMaxRateQps, ", got ", request.rate_qps()));
  }
  config->rate_qps = request.rate_qps();
  config->trace_path = request.trace_path();

  switch (request.schedule()) {
    case v1::SCHEDULE_UNSPECIFIED:
    case v1::SCHEDULE_CONSTANT:
      config->schedule = v1::SCHEDULE_CONSTANT;
      break;
    case v1::SCHEDULE_POISSON:
      config->schedule = v1::SCHEDULE_POISSON;
      break;
    case v1::SCHEDULE_RAMP:
      config->schedule = v1::SCHEDULE_RAMP;
      if (!std::isfinite(request.ramp_end_qps()) || request.ramp_end_qps() <= 0 ||
          request.ramp_end_qps() > kMaxRateQps) {
        return Invalid("ramp_end_qps",
                       absl::StrCat("must be > 0 and <= ", kMaxRateQps, " for SCHEDULE_RAMP, got ",
                                    request.ramp_end_qps()));
      }
      config->ramp_end_qps = request.ramp_end_qps();
      break;
    case v1::SCHEDULE_TRACE:
      config->schedule = v1::SCHEDULE_TRACE;
      if (request.trace_path().empty()) {
        return Invalid("trace_path", "must name a trace file for SCHEDULE_TRACE");
      }
      break;
    default:
      return Invalid("schedule", absl::StrCat("unknown value ", request.schedule()));
  }
  config->seed = request.seed();
  return absl::OkStatus();
}

// When: warmup, duration (and the step's length), request timeout and window.
absl::Status ParseTiming(const v1::RunStepRequest& request, StepConfig* config) {
  auto warmup = NonNegativeDuration(request.warmup(), "warmup");
  if (!warmup.ok()) return warmup.status();
  config->warmup = *warmup;
  auto duration = NonNegativeDuration(request.duration(), "duration");
  if (!duration.ok()) return duration.status();
  if (*duration <= absl::ZeroDuration()) return Invalid("duration", "must be > 0");
  config->duration = *duration;
  if (config->total() > kMaxStepLength) {
    return Invalid("duration", absl::StrCat("warmup + duration must be at most ",
                                            absl::FormatDuration(kMaxStepLength)));
  }

  auto timeout = NonNegativeDuration(request.request_timeout(), "request_timeout");
  if (!timeout.ok()) return timeout.status();
  if (*timeout > kMaxRequestTimeout) {
    return Invalid("request_timeout",
                   absl::StrCat("must be at most ", absl::FormatDuration(kMaxRequestTimeout)));
  }
  config->request_timeout = *timeout == absl::ZeroDuration() ? kDefaultRequestTimeout : *timeout;

  auto window = NonNegativeDuration(request.window(), "window");
  if (!window.ok()) return window.status();
  config->window = *window == absl::ZeroDuration() ? kDefaultWindow : *window;
  if (config->window < kMinWindow) {
    return Invalid("window", absl::StrCat("must be at least ", absl::FormatDuration(kMinWindow)));
  }
  int64_t windows = absl::Ceil(config->warmup, config->window) / config->window +
                    absl::Ceil(config->duration, config->window) / config->window;
  if (windows > kMaxWindows) {
    return Invalid("window", absl::StrCat("cuts the step into ", windows, " windows; at most ",
                                          kMaxWindows, " allowed"));
  }
  return absl::OkStatus();
}

// In-flight and connection caps, and the per-request SLO for goodput.
absl::Status ParseLimits(const v1::RunStepRequest& request, StepConfig* config) {
  if (request.max_in_flight() < 0 || request.max_in_flight() > kMaxMaxInFlight) {
    return Invalid("max_in_flight", absl::StrCat("must be in [0, ", kMaxMaxInFlight, "]"));
  }
  config->max_in_flight =
      request.max_in_flight() == 0 ? kDefaultMaxInFlight : request.max_in_flight();
  if (request.max_connections() < 0 || request.max_connections() > kMaxMaxConnections) {
    return Invalid("max_connections", absl::StrCat("must be in [0, ", kMaxMaxConnections, "]"));
  }
  config->max_connections =
      request.max_connections() == 0 ? AutoMaxConnections(*config) : request.max_connections();
  if (config->concurrency > config->max_in_flight) {
    return Invalid("concurrency", "must not exceed max_in_flight");
  }

  auto slo_latency = NonNegativeDuration(request.slo_latency(), "slo_latency");
  if (!slo_latency.ok()) return slo_latency.status();
  config->slo_latency = *slo_latency;
  auto slo_ttft = NonNegativeDuration(request.slo_ttft(), "slo_ttft");
  if (!slo_ttft.ok()) return slo_ttft.status();
  config->slo_ttft = *slo_ttft;
  return absl::OkStatus();
}

}  // namespace

int AutoMaxConnections(const StepConfig& config) {
  double in_flight = config.concurrency;
  if (!config.closed_loop()) {
    const double rate = config.schedule == v1::SCHEDULE_RAMP
                            ? std::max(config.rate_qps, config.ramp_end_qps)
                            : config.rate_qps;
    const double m = rate * absl::ToDoubleSeconds(config.request_timeout);
    in_flight = m + 6 * std::sqrt(m) + 32;
  }
  const double most = std::min(kMaxMaxConnections, std::max(1, config.max_in_flight));
  return static_cast<int>(
      std::min(most, std::max<double>(kDefaultMaxConnections, std::ceil(in_flight))));
}

absl::StatusOr<StepConfig> ParseStepConfig(const v1::RunStepRequest& request) {
  StepConfig config;
  RETURN_IF_ERROR(ParseTarget(request, &config));
  RETURN_IF_ERROR(ParseLoad(request, &config));
  RETURN_IF_ERROR(ParseTiming(request, &config));
  RETURN_IF_ERROR(ParseLimits(request, &config));
  return config;
}

}  // namespace vanguard::replayer
