// Request validation for the orchestrator: every rule a request can break, reported as
// INVALID_ARGUMENT naming the field and the rule, e.g.
//   "model.endpoints[0]: must be an http(s) URL"
//   "spec.sweep: min_qps must be > 0 and < max_qps"
// Pure functions; any thread may call. Defaults are applied after validation, by the
// service, so "unset" and "zero" are accepted wherever the proto documents a default.
#ifndef VANGUARD_ORCHESTRATOR_VALIDATION_H_
#define VANGUARD_ORCHESTRATOR_VALIDATION_H_

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/target_policy.h"
#include "google/protobuf/duration.pb.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

// Global hard bounds on what one request may ask for, whatever its team's quota allows
// (team quotas, orchestrator/team_quota.h, are within these). Every rate a spec names
// (rates_qps, min/max/start/target/rate_qps, tolerance_qps) is finite, >= 0 and at most
// kMaxRateQps; a count of steps (sweep.steps, max_steps, segments, stop_after_failures,
// spike_tolerance) at most kMaxStrategySteps; a sweep lists at most kMaxSweepRates rates.
inline constexpr double kMaxRateQps = 10'000'000;
inline constexpr int kMaxSweepRates = 1000;
inline constexpr int kMaxStrategySteps = 1000;
// Other strategy parameters (fractions, ratios, thresholds): finite, >= 0, at most this.
inline constexpr double kMaxStrategyParameter = 1'000'000;
inline constexpr absl::Duration kMaxStepDuration = absl::Hours(24);
inline constexpr absl::Duration kMaxWarmup = absl::Hours(24);  // step_warmup, default_warmup
// The replayer refuses a longer one (RunStepRequest.request_timeout): a test asking for more
// would be accepted and fail at its first step.
inline constexpr absl::Duration kMaxRequestTimeout = absl::Minutes(10);
// A test without a request timeout gets at least this multiple of its model's longest SLO
// latency limit (whole seconds): a request cut off at the timeout counts as an error, so the
// timeout must leave room past every limit.
inline constexpr double kRequestTimeoutOverLimit = 1.25;
inline constexpr absl::Duration kMaxSloLatency = absl::Hours(1);  // every Slo duration
inline constexpr int32_t kMinPriority = -1000;
inline constexpr int32_t kMaxPriority = 1000;
// Labels of a model or a test: at most kMaxLabels pairs, keys of 1..kMaxLabelKeyBytes bytes,
// values of at most kMaxLabelValueBytes.
inline constexpr int kMaxLabels = 64;
inline constexpr size_t kMaxLabelKeyBytes = 128;
inline constexpr size_t kMaxLabelValueBytes = 1024;
inline constexpr size_t kMaxRequestTemplateBytes = 1 << 20;  // 1 MiB
inline constexpr int kMaxEndpoints = 256;
inline constexpr size_t kMaxEndpointBytes = 2048;

// A team's name (CreateToken, RegisterModel, the quota RPCs): 1..200 letters, digits, '.',
// '_' or '-'. INVALID_ARGUMENT naming `field`.
absl::Status ValidateTeamName(absl::string_view team, absl::string_view field);

// A Model to register (field names prefixed "model.").
absl::Status ValidateModel(const v1::Model& model);

// The SLO limits beyond p50/p99/error rate/achieved ratio (ValidateModel calls it):
// streaming limits, GPU/queue ceilings, p50 <= p99 and health weights >= 0.
absl::Status ValidateSloLimits(const v1::Slo& slo);

// A TestSpec to submit (prefixed "spec.").
absl::Status ValidateTestSpec(const v1::TestSpec& spec);

// Where a model's load and scrapes would go, against the operator's target policy
// (common/target_policy.h): each of model.endpoints and the "metrics.url" label. Names are
// judged before resolution (the replayer and the worker judge the resolved address again at
// connect time). `policy` null (the orchestrator has no --allowed_targets): only the targets
// no policy allows (link-local, cloud metadata) are refused. INVALID_ARGUMENT naming the
// field, the host:port (never the URL's path, query or credentials) and the rule.
absl::Status ValidateModelTargets(const v1::Model& model, const TargetPolicy* policy);

// The same for a test's direct_controller.json_url / prometheus_url (prefixed
// "spec.direct_controller.").
absl::Status ValidateTestTargets(const v1::TestSpec& spec, const TargetPolicy* policy);

// A schedule to store (prefixed "schedule."), before its spec is validated as a TestSpec:
// a plain name (empty: "default"), on_new_version and/or an interval from 1 minute to 366
// days or a cron expression CronExpression::Parse accepts (schedule.cron), spec.model equal to
// schedule.model (or empty), and no spec.model_version or spec.not_before (each queued test pins
// its own version and runs when queued).
absl::Status ValidateSchedule(const v1::TestSchedule& schedule);

// A webhook to add (prefixed "webhook."): an http:// or https:// url of at most 2048 bytes without
// credentials whose host:port `policy` allows (null: only the never-allowed targets are
// refused, as ValidateModelTargets), a secret of 16 to 1024 bytes, and a plain model and
// team name where given. Messages never echo the url's path or query, nor the secret.
absl::Status ValidateWebhook(const v1::Webhook& webhook, const TargetPolicy* policy);

// A step a worker reports (prefixed "step.").
absl::Status ValidateStep(const v1::Step& step);

// One window of a step or of progress; `field` prefixes the message (e.g.
// "progress.windows[3]").
absl::Status ValidateStepWindow(const v1::StepWindow& window, absl::string_view field);

// The most windows one ReportProgress may carry.
inline constexpr int kMaxProgressWindows = 600;

// Live progress a worker reports (prefixed "progress."): rates, counts and durations not
// negative, known health states, at most kMaxProgressWindows windows, each valid.
absl::Status ValidateProgress(const v1::TestProgress& progress);

// A result a worker completes a test with (prefixed "result.").
absl::Status ValidateTestResult(const v1::TestResult& result);

// A model's default_warmup when its registration gives none: every step's lead at its rate
// before the measured part, which also turns on steady-state settling and, on a test's first
// step, the detection of the model's own warmup (worker/measured_step_runner.h). With none, a
// cold model's first readings would be judged as they come (the capacity searches and their
// accuracy figures assume this lead: search_sim --lead_s).
inline constexpr absl::Duration kDefaultModelWarmup = absl::Seconds(2);

// PlanCapacity's defaults and bounds (the bounds keep replica counts far inside int64).
inline constexpr double kDefaultPlanHeadroom = 0.3;
inline constexpr int32_t kDefaultPlanSurviveLoss = 1;
inline constexpr double kMaxPlanPeakQps = 1e9;
inline constexpr double kMaxPlanHeadroom = 100;  // 10000%
inline constexpr int32_t kMaxPlanSurviveLoss = 10000;

// A replica-sizing request: model not empty; peak_qps finite, > 0 and <= kMaxPlanPeakQps;
// headroom (when set) finite, >= 0 and <= kMaxPlanHeadroom; survive_loss (when set) in
// [0, kMaxPlanSurviveLoss]. NaN and infinities are refused by name.
absl::Status ValidatePlanCapacityRequest(const v1::PlanCapacityRequest& request);

// The highest price per accelerator-hour SetAcceleratorPrice stores: far above any real
// price, low enough that a typo of a few digits is refused.
inline constexpr double kMaxAcceleratorPricePerHour = 1e6;

// accelerator a plain name (as registry names); price_per_hour finite, >= 0 and <=
// kMaxAcceleratorPricePerHour. INVALID_ARGUMENT naming the field otherwise.
absl::Status ValidateSetAcceleratorPriceRequest(const v1::SetAcceleratorPriceRequest& request);

// Building blocks of these rules (strategy_rules.cc checks each strategy with them).
// INVALID_ARGUMENT "field: rule".
absl::Status InvalidField(absl::string_view field, absl::string_view rule);
// A rate finite, >= 0 and at most kMaxRateQps; a count of steps from 0 to kMaxStrategySteps;
// another strategy parameter finite, >= 0 and at most kMaxStrategyParameter; each named
// rate, count and parameter of a table within its bound (the first out of bounds refused).
absl::Status ValidateRate(double rate, absl::string_view field);
absl::Status ValidateCount(int64_t count, absl::string_view field);
absl::Status ValidateParameter(double value, absl::string_view field);
absl::Status ValidateBounds(std::initializer_list<std::pair<double, const char*>> rates,
                            std::initializer_list<std::pair<int64_t, const char*>> counts,
                            std::initializer_list<std::pair<double, const char*>> parameters);
// Names (models, teams, json_field): at most this many characters.
inline constexpr size_t kMaxNameLength = 200;

// A Duration must be well formed (seconds and nanos in range, same sign) and, depending on
// the rule, > 0 or >= 0. `field` is the full field name used in the message.
enum class DurationRule { kPositive, kNonNegative };
absl::Status ValidateDuration(const google::protobuf::Duration& d, absl::string_view field,
                              DurationRule rule);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_VALIDATION_H_
