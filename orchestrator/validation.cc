// Request validation rules; see validation.h. Any thread may call.
#include "orchestrator/validation.h"

#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "orchestrator/cron_expression.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/strategy_rules.h"
#include "orchestrator/webhook_sender.h"

namespace vanguard {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

bool HasSpaceOrControl(absl::string_view s) {
  for (char c : s) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return true;
    }
  }
  return false;
}

// Registry names end up in URLs and SQL filters: keep them plain.
bool IsPlainName(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// "http(s)://host[:port][/path]" with a non-empty host and nothing odd in it.
bool IsHttpUrl(absl::string_view url) {
  absl::string_view rest;
  if (absl::StartsWith(url, "http://")) {
    rest = url.substr(7);
  } else if (absl::StartsWith(url, "https://")) {
    rest = url.substr(8);
  } else {
    return false;
  }
  if (HasSpaceOrControl(rest)) return false;
  absl::string_view host = rest.substr(0, rest.find_first_of("/?#"));
  return !host.empty() && host.front() != ':';
}

// "host:port" as gRPC targets are usually written.
bool IsHostPort(absl::string_view target) {
  size_t colon = target.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == target.size()) return false;
  if (HasSpaceOrControl(target) || absl::StrContains(target, "/")) return false;
  for (char c : target.substr(colon + 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsFraction(double x) { return std::isfinite(x) && x >= 0.0 && x <= 1.0; }

// The host and port a URL ("http(s)://[user@]host[:port][/...]") or a gRPC "host:port"
// target points at; false when there is none to read.
bool TargetHostPort(absl::string_view target, std::string* host, int* port) {
  *port = 0;
  absl::string_view authority = target;
  if (absl::ConsumePrefix(&authority, "http://")) {
    *port = 80;
  } else if (absl::ConsumePrefix(&authority, "https://")) {
    *port = 443;
  }
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);  // credentials: never judged, never shown
  }
  absl::string_view port_text;
  if (absl::StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return false;
    *host = std::string(authority.substr(1, close - 1));
    port_text = authority.substr(close + 1);
    if (!port_text.empty() && !absl::ConsumePrefix(&port_text, ":")) return false;
  } else {
    const size_t colon = authority.rfind(':');
    *host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (!port_text.empty() && (port_text.size() > 5 || !absl::SimpleAtoi(port_text, port))) {
    return false;
  }
  return !host->empty() && *port >= 1 && *port <= 65535;
}

// Every address, no name: with MayResolve, what no policy allows is still refused.
const TargetPolicy& NeverAllowedOnly() {
  static const TargetPolicy* const kPolicy = [] {
    absl::StatusOr<TargetPolicy> policy = TargetPolicy::Parse("0.0.0.0/0,::/0");
    return new TargetPolicy(*std::move(policy));
  }();
  return *kPolicy;
}

// `target` (a URL or host:port) against `policy` (null: only the never-allowed targets are
// refused); INVALID_ARGUMENT naming `field`.
absl::Status CheckTarget(absl::string_view target, absl::string_view field,
                         const TargetPolicy* policy) {
  std::string host;
  int port = 0;
  if (!TargetHostPort(target, &host, &port)) {
    return Invalid(field, "must name a host and a port from 1 to 65535");
  }
  absl::Status allowed =
      policy != nullptr ? policy->Allows(host, port) : NeverAllowedOnly().MayResolve(host, port);
  if (allowed.ok()) return allowed;
  return Invalid(field, allowed.message());
}

absl::Status ValidateName(absl::string_view value, absl::string_view field) {
  if (value.empty()) return Invalid(field, "must not be empty");
  if (value.size() > kMaxNameLength) {
    return Invalid(field, absl::StrCat("must be at most ", kMaxNameLength, " characters"));
  }
  if (!IsPlainName(value)) {
    return Invalid(field, "may contain only letters, digits, '.', '_' and '-'");
  }
  return absl::OkStatus();
}

absl::Status ValidateLatency(const v1::LatencySummary& latency, absl::string_view field) {
  const double values[] = {latency.p50_ms(),  latency.p90_ms(), latency.p99_ms(),
                           latency.p999_ms(), latency.max_ms(), latency.mean_ms()};
  for (double v : values) {
    if (!std::isfinite(v) || v < 0) return Invalid(field, "percentiles must be >= 0");
  }
  return absl::OkStatus();
}

// A well-formed `d` (ValidateDuration checked it) no longer than `max`.
absl::Status ValidateAtMost(const google::protobuf::Duration& d, absl::Duration max,
                            absl::string_view field) {
  if (absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos()) <= max) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be at most ", absl::FormatDuration(max)));
}

absl::Status ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                            absl::string_view field) {
  if (labels.size() > static_cast<size_t>(kMaxLabels)) {
    return Invalid(field, absl::StrCat("must hold at most ", kMaxLabels, " labels"));
  }
  for (const auto& [key, value] : labels) {
    if (key.empty()) return Invalid(field, "keys must not be empty");
    if (key.size() > kMaxLabelKeyBytes) {
      return Invalid(field, absl::StrCat("keys must be at most ", kMaxLabelKeyBytes, " bytes"));
    }
    if (value.size() > kMaxLabelValueBytes) {
      return Invalid(absl::StrCat(field, "[\"", key, "\"]"),
                     absl::StrCat("must be at most ", kMaxLabelValueBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Sizes of a model's free-form parts: endpoints, strings, template, labels, and its
// durations' upper bounds (their lower bounds are ValidateModel's).
absl::Status ValidateModelSizes(const v1::Model& model) {
  if (model.endpoints_size() > kMaxEndpoints) {
    return Invalid("model.endpoints",
                   absl::StrCat("must list at most ", kMaxEndpoints, " endpoints"));
  }
  for (int i = 0; i < model.endpoints_size(); ++i) {
    if (model.endpoints(i).size() > kMaxEndpointBytes) {
      return Invalid(absl::StrCat("model.endpoints[", i, "]"),
                     absl::StrCat("must be at most ", kMaxEndpointBytes, " bytes"));
    }
  }
  const std::pair<const std::string*, const char*> strings[] = {
      {&model.framework(), "model.framework"},
      {&model.served_name(), "model.served_name"},
      {&model.hardware().accelerator(), "model.hardware.accelerator"},
      {&model.hardware().pool(), "model.hardware.pool"}};
  for (const auto& [value, field] : strings) {
    if (value->size() > kMaxNameLength) {
      return Invalid(field, absl::StrCat("must be at most ", kMaxNameLength, " characters"));
    }
  }
  if (model.request_template().size() > kMaxRequestTemplateBytes) {
    return Invalid("model.request_template",
                   absl::StrCat("must be at most ", kMaxRequestTemplateBytes, " bytes"));
  }
  RETURN_IF_ERROR(ValidateAtMost(model.default_warmup(), kMaxWarmup, "model.default_warmup"));
  const v1::Slo& slo = model.slo();
  RETURN_IF_ERROR(ValidateAtMost(slo.p50_latency(), kMaxSloLatency, "model.slo.p50_latency"));
  RETURN_IF_ERROR(ValidateAtMost(slo.p99_latency(), kMaxSloLatency, "model.slo.p99_latency"));
  RETURN_IF_ERROR(ValidateAtMost(slo.ttft_p99(), kMaxSloLatency, "model.slo.ttft_p99"));
  RETURN_IF_ERROR(
      ValidateAtMost(slo.inter_token_p99(), kMaxSloLatency, "model.slo.inter_token_p99"));
  return ValidateLabels(model.labels(), "model.labels");
}

// The spec's durations, priority and labels within the global bounds (after ValidateTestSpec
// checked the durations are well formed).
absl::Status ValidateSpecBounds(const v1::TestSpec& spec) {
  RETURN_IF_ERROR(ValidateAtMost(spec.step_duration(), kMaxStepDuration, "spec.step_duration"));
  RETURN_IF_ERROR(ValidateAtMost(spec.step_warmup(), kMaxWarmup, "spec.step_warmup"));
  RETURN_IF_ERROR(
      ValidateAtMost(spec.request_timeout(), kMaxRequestTimeout, "spec.request_timeout"));
  if (spec.priority() < kMinPriority || spec.priority() > kMaxPriority) {
    return Invalid("spec.priority",
                   absl::StrCat("must be from ", kMinPriority, " to ", kMaxPriority));
  }
  RETURN_IF_ERROR(ValidateLabels(spec.labels(), "spec.labels"));
  const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
  return rules != nullptr ? rules->bounds(spec) : absl::OkStatus();
}

}  // namespace

absl::Status ValidateDuration(const google::protobuf::Duration& d, absl::string_view field,
                              DurationRule rule) {
  constexpr int64_t kMaxSeconds = 315'576'000'000;  // the Duration range: 10,000 years
  const bool well_formed = d.seconds() >= -kMaxSeconds && d.seconds() <= kMaxSeconds &&
                           d.nanos() > -1'000'000'000 && d.nanos() < 1'000'000'000 &&
                           !(d.seconds() > 0 && d.nanos() < 0) &&
                           !(d.seconds() < 0 && d.nanos() > 0);
  if (!well_formed) return Invalid(field, "must be a valid duration");
  const bool negative = d.seconds() < 0 || d.nanos() < 0;
  const bool zero = d.seconds() == 0 && d.nanos() == 0;
  if (rule == DurationRule::kPositive && (negative || zero)) return Invalid(field, "must be > 0");
  if (rule == DurationRule::kNonNegative && negative) return Invalid(field, "must be >= 0");
  return absl::OkStatus();
}

absl::Status InvalidField(absl::string_view field, absl::string_view rule) {
  return Invalid(field, rule);
}

absl::Status ValidateRate(double rate, absl::string_view field) {
  if (!std::isfinite(rate) || rate < 0 || rate > kMaxRateQps) {
    return Invalid(field, absl::StrCat("must be a rate from 0 to ", kMaxRateQps, " requests/s"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCount(int64_t count, absl::string_view field) {
  if (count < 0 || count > kMaxStrategySteps) {
    return Invalid(field, absl::StrCat("must be from 0 to ", kMaxStrategySteps));
  }
  return absl::OkStatus();
}

absl::Status ValidateParameter(double value, absl::string_view field) {
  if (!std::isfinite(value) || value < 0 || value > kMaxStrategyParameter) {
    return Invalid(field, absl::StrCat("must be a number from 0 to ", kMaxStrategyParameter));
  }
  return absl::OkStatus();
}

// Each named rate, count and parameter of a table within its global bound.
absl::Status ValidateBounds(std::initializer_list<std::pair<double, const char*>> rates,
                            std::initializer_list<std::pair<int64_t, const char*>> counts,
                            std::initializer_list<std::pair<double, const char*>> parameters) {
  for (const auto& [rate, field] : rates) RETURN_IF_ERROR(ValidateRate(rate, field));
  for (const auto& [count, field] : counts) RETURN_IF_ERROR(ValidateCount(count, field));
  for (const auto& [value, field] : parameters) RETURN_IF_ERROR(ValidateParameter(value, field));
  return absl::OkStatus();
}

absl::Status ValidateSetAcceleratorPriceRequest(const v1::SetAcceleratorPriceRequest& request) {
  RETURN_IF_ERROR(ValidateName(request.accelerator(), "accelerator"));
  const double price = request.price_per_hour();
  if (!std::isfinite(price)) return Invalid("price_per_hour", "must be a finite number");
  if (price < 0) return Invalid("price_per_hour", "must be >= 0");
  if (price > kMaxAcceleratorPricePerHour) {
    return Invalid("price_per_hour", "must be at most 1000000");
  }
  return absl::OkStatus();
}

absl::Status ValidateTeamName(absl::string_view team, absl::string_view field) {
  return ValidateName(team, field);
}

absl::Status ValidateModel(const v1::Model& model) {
  if (absl::Status s = ValidateName(model.name(), "model.name"); !s.ok()) return s;
  if (model.version().empty()) return Invalid("model.version", "must not be empty");
  if (model.version().size() > kMaxNameLength) {
    return Invalid("model.version",
                   absl::StrCat("must be at most ", kMaxNameLength, " characters"));
  }
  if (HasSpaceOrControl(model.version()) || absl::StrContains(model.version(), "/")) {
    return Invalid("model.version", "must not contain whitespace or '/'");
  }
  if (!v1::Protocol_IsValid(model.protocol())) {
    return Invalid("model.protocol", "must be a known protocol");
  }
  if (model.endpoints_size() == 0) {
    return Invalid("model.endpoints", "must list at least one endpoint");
  }
  const bool grpc = model.protocol() == v1::PROTOCOL_KSERVE_V2_GRPC;
  for (int i = 0; i < model.endpoints_size(); ++i) {
    const std::string& endpoint = model.endpoints(i);
    if (grpc ? !(IsHttpUrl(endpoint) || IsHostPort(endpoint)) : !IsHttpUrl(endpoint)) {
      return Invalid(absl::StrCat("model.endpoints[", i, "]"),
                     grpc ? "must be host:port or an http(s) URL" : "must be an http(s) URL");
    }
  }
  if (!model.served_name().empty() &&
      (HasSpaceOrControl(model.served_name()) || absl::StrContains(model.served_name(), "/"))) {
    return Invalid("model.served_name", "must not contain whitespace or '/'");
  }
  if (model.hardware().accelerator_count() < 0) {
    return Invalid("model.hardware.accelerator_count", "must be >= 0");
  }
  if (!model.has_slo() || !model.slo().has_p99_latency()) {
    return Invalid("model.slo.p99_latency", "must be set (> 0)");
  }
  if (absl::Status s = ValidateDuration(model.slo().p99_latency(), "model.slo.p99_latency",
                                        DurationRule::kPositive);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateDuration(model.slo().p50_latency(), "model.slo.p50_latency",
                                        DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (!IsFraction(model.slo().max_error_rate())) {
    return Invalid("model.slo.max_error_rate", "must be between 0 and 1");
  }
  if (!IsFraction(model.slo().min_achieved_ratio())) {
    return Invalid("model.slo.min_achieved_ratio", "must be between 0 and 1");
  }
  if (absl::Status s = ValidateSloLimits(model.slo()); !s.ok()) return s;
  if (absl::Status s = ValidateDuration(model.default_warmup(), "model.default_warmup",
                                        DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  return ValidateModelSizes(model);
}

absl::Status ValidateSloLimits(const v1::Slo& slo) {
  const v1::Slo& o = slo;
  if (o.has_p50_latency() && o.has_p99_latency() &&
      (o.p50_latency().seconds() > o.p99_latency().seconds() ||
       (o.p50_latency().seconds() == o.p99_latency().seconds() &&
        o.p50_latency().nanos() > o.p99_latency().nanos()))) {
    return Invalid("model.slo.p50_latency", "must not exceed model.slo.p99_latency");
  }
  if (absl::Status s =
          ValidateDuration(o.ttft_p99(), "model.slo.ttft_p99", DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateDuration(o.inter_token_p99(), "model.slo.inter_token_p99",
                                        DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (!IsFraction(o.max_gpu_utilization())) {
    return Invalid("model.slo.max_gpu_utilization", "must be between 0 (not checked) and 1");
  }
  if (!std::isfinite(o.max_queue_depth()) || o.max_queue_depth() < 0) {
    return Invalid("model.slo.max_queue_depth", "must be >= 0 (0: not checked)");
  }
  const v1::HealthWeights& w = o.weights();
  const std::pair<double, const char*> weights[] = {
      {w.p99_latency(), "model.slo.weights.p99_latency"},
      {w.error_rate(), "model.slo.weights.error_rate"},
      {w.achieved_shortfall(), "model.slo.weights.achieved_shortfall"},
      {w.gpu_utilization(), "model.slo.weights.gpu_utilization"},
      {w.queue_depth(), "model.slo.weights.queue_depth"},
      {w.ttft(), "model.slo.weights.ttft"},
      {w.inter_token(), "model.slo.weights.inter_token"}};
  for (const auto& [value, field] : weights) {
    if (!std::isfinite(value) || value < 0) return Invalid(field, "must be >= 0 (0: default)");
  }
  return absl::OkStatus();
}

absl::Status ValidateTestSpec(const v1::TestSpec& spec) {
  if (spec.model().empty()) return Invalid("spec.model", "must not be empty");
  if (spec.strategy_case() == v1::TestSpec::STRATEGY_NOT_SET) {
    return Invalid("spec.strategy", "must be set");
  }
  // The worker checks what the strategy's rules leave out.
  if (const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
      rules != nullptr && rules->check != nullptr) {
    RETURN_IF_ERROR(rules->check(spec));
  }
  if (!spec.has_step_duration()) return Invalid("spec.step_duration", "must be > 0");
  if (absl::Status s =
          ValidateDuration(spec.step_duration(), "spec.step_duration", DurationRule::kPositive);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateDuration(spec.step_warmup(), "spec.step_warmup", DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateDuration(spec.request_timeout(), "spec.request_timeout",
                                        DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateDuration(spec.sustain_horizon(), "spec.sustain_horizon",
                                        DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  if (spec.sustain_horizon().seconds() > 24 * 3600) {
    return Invalid("spec.sustain_horizon", "must be at most 24 h");
  }
  if (spec.trace().size() > 4096 || spec.trace().find('\0') != std::string::npos) {
    return Invalid("spec.trace", "must be a path of at most 4096 bytes");
  }
  if (!v1::Schedule_IsValid(spec.schedule())) {
    return Invalid("spec.schedule", "must be a known schedule");
  }
  if (spec.max_attempts() < 0 || spec.max_attempts() > 100) {
    return Invalid("spec.max_attempts", "must be between 0 (default 3) and 100");
  }
  if (spec.replayers() < 0 || spec.replayers() > 1024) {
    return Invalid("spec.replayers", "must be between 0 (the worker chooses) and 1024");
  }
  return ValidateSpecBounds(spec);
}

absl::Status ValidateModelTargets(const v1::Model& model, const TargetPolicy* policy) {
  for (int i = 0; i < model.endpoints_size(); ++i) {
    RETURN_IF_ERROR(
        CheckTarget(model.endpoints(i), absl::StrCat("model.endpoints[", i, "]"), policy));
  }
  if (auto it = model.labels().find("metrics.url"); it != model.labels().end()) {
    RETURN_IF_ERROR(CheckTarget(it->second, "model.labels[\"metrics.url\"]", policy));
  }
  return absl::OkStatus();
}

absl::Status ValidateTestTargets(const v1::TestSpec& spec, const TargetPolicy* policy) {
  const StrategyRules* rules = StrategyRulesFor(spec.strategy_case());
  if (rules == nullptr || rules->targets == nullptr) return absl::OkStatus();
  for (const StrategyTarget& target : rules->targets(spec)) {
    RETURN_IF_ERROR(CheckTarget(target.url, target.field, policy));
  }
  return absl::OkStatus();
}

absl::Status ValidateSchedule(const v1::TestSchedule& schedule) {
  RETURN_IF_ERROR(ValidateName(schedule.model(), "schedule.model"));
  if (!schedule.name().empty()) RETURN_IF_ERROR(ValidateName(schedule.name(), "schedule.name"));
  if (schedule.has_interval()) {
    RETURN_IF_ERROR(
        ValidateDuration(schedule.interval(), "schedule.interval", DurationRule::kNonNegative));
  }
  const absl::Duration interval = FromProtoDuration(schedule.interval());
  if (interval != absl::ZeroDuration() &&
      (interval < absl::Minutes(1) || interval > absl::Hours(24 * 366))) {
    return Invalid("schedule.interval", "must be from 1m to 366 days (or 0: none)");
  }
  if (schedule.repeat_case() == v1::TestSchedule::kCron) {
    absl::StatusOr<CronExpression> cron = CronExpression::Parse(schedule.cron());
    if (!cron.ok()) return Invalid("schedule.cron", cron.status().message());
  }
  if (!schedule.on_new_version() && interval == absl::ZeroDuration() &&
      schedule.repeat_case() != v1::TestSchedule::kCron) {
    return Invalid("schedule", "set on_new_version, an interval or a cron expression");
  }
  if (!schedule.spec().model().empty() && schedule.spec().model() != schedule.model()) {
    return Invalid("schedule.spec.model", "must be empty or the schedule's model");
  }
  if (!schedule.spec().model_version().empty()) {
    return Invalid("schedule.spec.model_version",
                   "must be empty: each scheduled test pins the version it tests");
  }
  if (schedule.spec().has_not_before()) {
    return Invalid("schedule.spec.not_before", "must be unset: a scheduled test runs when queued");
  }
  return absl::OkStatus();
}

absl::Status ValidateWebhook(const v1::Webhook& webhook, const TargetPolicy* policy) {
  if (webhook.url().size() > kMaxEndpointBytes) {
    return Invalid("webhook.url", absl::StrCat("must be at most ", kMaxEndpointBytes, " bytes"));
  }
  absl::StatusOr<HttpUrl> url = ParseWebhookUrl(webhook.url());
  if (!url.ok()) return Invalid("webhook.url", url.status().message());
  RETURN_IF_ERROR(CheckTarget(webhook.url(), "webhook.url", policy));
  if (webhook.secret().size() < 16 || webhook.secret().size() > 1024) {
    return Invalid("webhook.secret", "must be 16 to 1024 bytes");
  }
  if (!webhook.model().empty()) RETURN_IF_ERROR(ValidateName(webhook.model(), "webhook.model"));
  if (!webhook.team().empty()) RETURN_IF_ERROR(ValidateTeamName(webhook.team(), "webhook.team"));
  return absl::OkStatus();
}

absl::Status ValidateStep(const v1::Step& step) {
  if (step.index() < 0) return Invalid("step.index", "must be >= 0");
  if (!std::isfinite(step.target_qps()) || step.target_qps() <= 0) {
    return Invalid("step.target_qps", "must be > 0");
  }
  if (!std::isfinite(step.achieved_qps()) || step.achieved_qps() < 0) {
    return Invalid("step.achieved_qps", "must be >= 0");
  }
  if (!IsFraction(step.error_rate())) return Invalid("step.error_rate", "must be between 0 and 1");
  if (absl::Status s = ValidateLatency(step.latency(), "step.latency"); !s.ok()) return s;
  if (absl::Status s = ValidateLatency(step.service_latency(), "step.service_latency"); !s.ok()) {
    return s;
  }
  const std::pair<int64_t, const char*> counts[] = {
      {step.scheduled(), "step.scheduled"}, {step.sent(), "step.sent"},
      {step.completed(), "step.completed"}, {step.errors(), "step.errors"},
      {step.timeouts(), "step.timeouts"},   {step.dropped(), "step.dropped"}};
  for (const auto& [value, field] : counts) {
    if (value < 0) return Invalid(field, "must be >= 0");
  }
  if (!v1::HealthState_IsValid(step.health_state())) {
    return Invalid("step.health_state", "must be a known health state");
  }
  if (absl::Status s = ValidateDuration(step.warmup(), "step.warmup", DurationRule::kNonNegative);
      !s.ok()) {
    return s;
  }
  return ValidateDuration(step.duration(), "step.duration", DurationRule::kNonNegative);
}

absl::Status ValidateStepWindow(const v1::StepWindow& window, absl::string_view field) {
  const std::pair<double, const char*> rates[] = {{window.offered_qps(), ".offered_qps"},
                                                  {window.achieved_qps(), ".achieved_qps"},
                                                  {window.gpu_utilization(), ".gpu_utilization"},
                                                  {window.queue_depth(), ".queue_depth"},
                                                  {window.health_score(), ".health_score"}};
  for (const auto& [value, name] : rates) {
    if (!std::isfinite(value) || value < 0)
      return Invalid(absl::StrCat(field, name), "must be >= 0");
  }
  const std::pair<int64_t, const char*> counts[] = {
      {window.scheduled(), ".scheduled"}, {window.sent(), ".sent"},
      {window.completed(), ".completed"}, {window.errors(), ".errors"},
      {window.timeouts(), ".timeouts"},   {window.dropped(), ".dropped"},
      {window.censored(), ".censored"}};
  for (const auto& [value, name] : counts) {
    if (value < 0) return Invalid(absl::StrCat(field, name), "must be >= 0");
  }
  const std::pair<const v1::LatencySummary*, const char*> latencies[] = {
      {&window.latency(), ".latency"},
      {&window.ttft(), ".ttft"},
      {&window.inter_token(), ".inter_token"}};
  for (const auto& [latency, name] : latencies) {
    if (absl::Status s = ValidateLatency(*latency, absl::StrCat(field, name)); !s.ok()) return s;
  }
  if (!v1::HealthState_IsValid(window.health_state())) {
    return Invalid(absl::StrCat(field, ".health_state"), "must be a known health state");
  }
  return ValidateDuration(window.duration(), absl::StrCat(field, ".duration"),
                          DurationRule::kNonNegative);
}

absl::Status ValidateProgress(const v1::TestProgress& progress) {
  if (progress.step_index() < 0) return Invalid("progress.step_index", "must be >= 0");
  if (!std::isfinite(progress.offered_qps()) || progress.offered_qps() < 0) {
    return Invalid("progress.offered_qps", "must be >= 0");
  }
  if (!v1::HealthState_IsValid(progress.health_state())) {
    return Invalid("progress.health_state", "must be a known health state");
  }
  const std::pair<const google::protobuf::Duration*, const char*> durations[] = {
      {&progress.elapsed(), "progress.elapsed"},
      {&progress.step_elapsed(), "progress.step_elapsed"},
      {&progress.step_remaining(), "progress.step_remaining"},
      {&progress.test_remaining(), "progress.test_remaining"}};
  for (const auto& [d, field] : durations) {
    if (absl::Status s = ValidateDuration(*d, field, DurationRule::kNonNegative); !s.ok()) {
      return s;
    }
  }
  if (progress.step_scheduled() < 0) return Invalid("progress.step_scheduled", "must be >= 0");
  if (progress.step_errors() < 0) return Invalid("progress.step_errors", "must be >= 0");
  if (progress.windows_size() > kMaxProgressWindows) {
    return Invalid("progress.windows", absl::StrCat("must hold at most ", kMaxProgressWindows,
                                                    " windows (report progress more often)"));
  }
  for (int i = 0; i < progress.windows_size(); ++i) {
    if (absl::Status s =
            ValidateStepWindow(progress.windows(i), absl::StrCat("progress.windows[", i, "]"));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTestResult(const v1::TestResult& result) {
  const std::pair<double, const char*> rates[] = {
      {result.max_sustainable_qps(), "result.max_sustainable_qps"},
      {result.confidence_low_qps(), "result.confidence_low_qps"},
      {result.confidence_high_qps(), "result.confidence_high_qps"}};
  for (const auto& [value, field] : rates) {
    if (!std::isfinite(value) || value < 0) return Invalid(field, "must be >= 0");
  }
  if (result.steps_taken() < 0) return Invalid("result.steps_taken", "must be >= 0");
  return ValidateDuration(result.test_duration(), "result.test_duration",
                          DurationRule::kNonNegative);
}

absl::Status ValidatePlanCapacityRequest(const v1::PlanCapacityRequest& request) {
  if (request.model().empty()) return Invalid("model", "must not be empty");
  const double peak = request.peak_qps();
  if (std::isnan(peak)) return Invalid("peak_qps", "must be a number (got NaN)");
  if (!(peak > 0) || !std::isfinite(peak) || peak > kMaxPlanPeakQps) {
    return Invalid("peak_qps", absl::StrCat("must be > 0 and <= ", kMaxPlanPeakQps,
                                            " requests/s (got ", peak, ")"));
  }
  if (request.has_headroom()) {
    const double headroom = request.headroom();
    if (std::isnan(headroom)) return Invalid("headroom", "must be a number (got NaN)");
    if (!(headroom >= 0) || !std::isfinite(headroom) || headroom > kMaxPlanHeadroom) {
      return Invalid("headroom", absl::StrCat("must be a fraction >= 0 and <= ", kMaxPlanHeadroom,
                                              " (0.3 = 30%; got ", headroom, ")"));
    }
  }
  if (request.has_survive_loss() &&
      (request.survive_loss() < 0 || request.survive_loss() > kMaxPlanSurviveLoss)) {
    return Invalid("survive_loss", absl::StrCat("must be >= 0 and <= ", kMaxPlanSurviveLoss,
                                                " replicas (got ", request.survive_loss(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace vanguard
