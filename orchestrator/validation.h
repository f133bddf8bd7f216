// Request validation for the orchestrator: every rule a request can break, reported as
// INVALID_ARGUMENT naming the field and the rule, e.g.
//   "model.endpoints[0]: must be an http(s) URL"
//   "spec.sweep: min_qps must be > 0 and < max_qps"
// Pure functions; any thread may call. Defaults are applied after validation, by the
// service, so "unset" and "zero" are accepted wherever the proto documents a default.
#ifndef VANGUARD_ORCHESTRATOR_VALIDATION_H_
#define VANGUARD_ORCHESTRATOR_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/target_policy.h"
#include "google/protobuf/duration.pb.h"
#include "vanguard/v1/model.pb.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "vanguard/v1/test.pb.h"

namespace vanguard {

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

// A Duration must be well formed (seconds and nanos in range, same sign) and, depending on
// the rule, > 0 or >= 0. `field` is the full field name used in the message.
enum class DurationRule { kPositive, kNonNegative };
absl::Status ValidateDuration(const google::protobuf::Duration& d, absl::string_view field,
                              DurationRule rule);

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_VALIDATION_H_
