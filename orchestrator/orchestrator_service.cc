// Orchestrator RPC logic; see orchestrator_service.h. Any gRPC thread may call.
#include "orchestrator/orchestrator_service.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/validation.h"

namespace vanguard {
namespace {

constexpr size_t kMaxRequestIdLength = 200;
// GetCapacityTrend without a page size: the newest this many tests.
constexpr int kDefaultTrendPoints = 200;

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

// The longest latency limit of the model's SLO (p50, p99, time to first token); zero if none.
absl::Duration LongestLatencyLimit(const v1::Model& model) {
  absl::Duration longest;
  for (const google::protobuf::Duration& d :
       {model.slo().p50_latency(), model.slo().p99_latency(), model.slo().ttft_p99()}) {
    longest = std::max(longest, FromProtoDuration(d));
  }
  return longest;
}

// Fills spec.request_timeout when it is unset: `default_timeout`, or longer when the model's
// SLO allows a request more time: a request cut off at the timeout counts as an error, so a
// timeout at or under a latency limit would fail requests that met it. An explicit timeout at
// or under the longest limit is refused (INVALID_ARGUMENT naming both).
absl::Status CompleteRequestTimeout(const v1::Model& model, absl::Duration default_timeout,
                                    v1::TestSpec* spec) {
  const absl::Duration longest = LongestLatencyLimit(model);
  const absl::Duration given = FromProtoDuration(spec->request_timeout());
  if (given > absl::ZeroDuration()) {
    if (given > longest) return absl::OkStatus();
    return Invalid(
        "spec.request_timeout",
        absl::StrCat("must exceed the model's longest SLO latency limit (",
                     absl::FormatDuration(longest), "), got ", absl::FormatDuration(given),
                     ": a request cut off at the timeout counts as an error"));
  }
  const absl::Duration room = absl::Ceil(longest * kRequestTimeoutOverLimit, absl::Seconds(1));
  *spec->mutable_request_timeout() =
      ToProtoDuration(std::min(kMaxRequestTimeout, std::max(default_timeout, room)));
  return absl::OkStatus();
}

absl::Status ValidateTestId(int64_t id, absl::string_view field) {
  if (id <= 0) return Invalid(field, "must be > 0");
  return absl::OkStatus();
}

absl::Status ValidateFence(int64_t test_id, int32_t attempt) {
  RETURN_IF_ERROR(ValidateTestId(test_id, "test_id"));
  if (attempt <= 0) return Invalid("attempt", "must be > 0 (the attempt LeaseTest returned)");
  return absl::OkStatus();
}

absl::Status ValidateWorkerId(const std::string& worker_id) {
  if (worker_id.empty()) return Invalid("worker_id", "must not be empty");
  if (worker_id.size() > 200) return Invalid("worker_id", "must be at most 200 characters");
  return absl::OkStatus();
}

// The token a lease call's caller holds leases with (none without auth).
LeaseToken TokenOf(const Caller& caller) {
  if (!caller.has_value()) return std::nullopt;
  return caller->id;
}

// The role a caller acts with: without auth, an admin's (every team is open).
v1::Role RoleOf(const Caller& caller) { return caller.has_value() ? caller->role : v1::ROLE_ADMIN; }

// The team a caller acts for ("default" without auth).
std::string TeamOf(const Caller& caller) {
  return caller.has_value() ? caller->team : std::string(kDefaultTeam);
}

// The team a registration makes a new model name's: request.team when given (admins and
// callers without auth only), else the caller's.
absl::StatusOr<std::string> NewModelTeam(const v1::RegisterModelRequest& request,
                                         const Caller& caller) {
  if (request.team().empty()) return TeamOf(caller);
  RETURN_IF_ERROR(ValidateTeamName(request.team(), "team"));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), request.team(),
                           absl::StrCat("registering for team ", request.team())));
  return request.team();
}

}  // namespace

absl::StatusOr<absl::Duration> OrchestratorService::LeaseDuration(
    const google::protobuf::Duration& requested) const {
  RETURN_IF_ERROR(ValidateDuration(requested, "lease_duration", DurationRule::kNonNegative));
  absl::Duration d = FromProtoDuration(requested);
  if (d == absl::ZeroDuration()) return options_.default_lease;
  if (d > options_.max_lease) {
    return Invalid("lease_duration",
                   absl::StrCat("must be at most ", absl::FormatDuration(options_.max_lease)));
  }
  return d;
}

absl::StatusOr<int> OrchestratorService::PageSize(int requested) const {
  if (requested < 0) return Invalid("page_size", "must be >= 0");
  if (requested == 0) return options_.default_page_size;
  return std::min(requested, options_.max_page_size);
}

absl::StatusOr<v1::RegisterModelResponse> OrchestratorService::RegisterModel(
    const v1::RegisterModelRequest& request, const Caller& caller) {
  if (!request.has_model()) return Invalid("model", "must be set");
  RETURN_IF_ERROR(ValidateModel(request.model()));
  RETURN_IF_ERROR(ValidateModelTargets(
      request.model(), options_.target_policy ? &*options_.target_policy : nullptr));
  ASSIGN_OR_RETURN(std::string team, NewModelTeam(request, caller));
  v1::Model model = request.model();
  if (model.protocol() == v1::PROTOCOL_UNSPECIFIED) {
    model.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  }
  if (model.served_name().empty()) model.set_served_name(model.name());
  if (!model.has_default_warmup()) {
    *model.mutable_default_warmup() = ToProtoDuration(kDefaultModelWarmup);
  }
  const auto may_add = [&](const std::string& owner) {
    return MayActOn(TeamOf(caller), RoleOf(caller), owner, absl::StrCat("model ", model.name()));
  };
  ASSIGN_OR_RETURN(RegisteredModel registered, models_->Register(model, team, may_add));
  v1::RegisterModelResponse response;
  *response.mutable_model() = std::move(registered.model);
  return response;
}

absl::StatusOr<v1::GetModelResponse> OrchestratorService::GetModel(
    const v1::GetModelRequest& request) {
  if (request.name().empty()) return Invalid("name", "must not be empty");
  ASSIGN_OR_RETURN(RegisteredModel registered, models_->Get(request.name(), request.version()));
  v1::GetModelResponse response;
  *response.mutable_model() = std::move(registered.model);
  return response;
}

absl::StatusOr<v1::ListModelsResponse> OrchestratorService::ListModels(
    const v1::ListModelsRequest& request) {
  ASSIGN_OR_RETURN(int limit, PageSize(request.page_size()));
  ASSIGN_OR_RETURN(std::vector<v1::Model> models,
                   models_->List(request.name(), limit, request.include_deprecated()));
  v1::ListModelsResponse response;
  for (v1::Model& model : models) *response.add_models() = std::move(model);
  return response;
}

absl::StatusOr<v1::DeprecateModelResponse> OrchestratorService::DeprecateModel(
    const v1::DeprecateModelRequest& request, const Caller& caller) {
  if (request.name().empty()) return Invalid("name", "must not be empty");
  if (request.version().empty()) return Invalid("version", "must not be empty");
  ASSIGN_OR_RETURN(RegisteredModel current, models_->Get(request.name(), request.version()));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), current.model.team(),
                           absl::StrCat("model ", request.name())));
  ASSIGN_OR_RETURN(RegisteredModel model, models_->Deprecate(request.name(), request.version()));
  v1::DeprecateModelResponse response;
  *response.mutable_model() = std::move(model.model);
  return response;
}

absl::Status OrchestratorService::ValidateSubmit(const v1::SubmitTestRequest& request) const {
  if (!request.has_spec()) return Invalid("spec", "must be set");
  RETURN_IF_ERROR(ValidateTestSpec(request.spec()));
  RETURN_IF_ERROR(ValidateTestTargets(request.spec(),
                                      options_.target_policy ? &*options_.target_policy : nullptr));
  if (request.spec().has_not_before()) {
    const google::protobuf::Timestamp& t = request.spec().not_before();
    if (t.seconds() <= 0 || t.seconds() > 253402300799 || t.nanos() < 0 ||
        t.nanos() > 999'999'999) {
      return Invalid("spec.not_before", "must be a valid time after 1970");
    }
  }
  if (request.request_id().size() > kMaxRequestIdLength) {
    return Invalid("request_id",
                   absl::StrCat("must be at most ", kMaxRequestIdLength, " characters"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TeamLimits> OrchestratorService::LimitsOf(const std::string& team) {
  if (teams_ == nullptr) return TeamLimits();
  ASSIGN_OR_RETURN(v1::TeamQuota stored, teams_->Get(team));
  return TeamLimits::From(stored);
}

absl::StatusOr<v1::SubmitTestResponse> OrchestratorService::SubmitTest(
    const v1::SubmitTestRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateSubmit(request));
  ASSIGN_OR_RETURN(RegisteredModel model,
                   models_->Get(request.spec().model(), request.spec().model_version()));
  const std::string& team = model.model.team();
  RETURN_IF_ERROR(
      MayActOn(TeamOf(caller), RoleOf(caller), team, absl::StrCat("model ", model.model.name())));

  v1::TestSpec spec = request.spec();
  // Pin the version so the test means the same thing whenever it runs.
  spec.set_model_version(model.model.version());
  if (spec.max_attempts() == 0) spec.set_max_attempts(options_.default_max_attempts);
  RETURN_IF_ERROR(CompleteRequestTimeout(model.model, options_.default_request_timeout, &spec));
  if (!spec.has_step_warmup()) *spec.mutable_step_warmup() = model.model.default_warmup();
  if (!spec.has_step_warmup()) spec.mutable_step_warmup()->set_seconds(0);

  ASSIGN_OR_RETURN(TeamLimits limits, LimitsOf(team));
  RETURN_IF_ERROR(CheckTestQuota(limits, team, RoleOf(caller), spec));
  ASSIGN_OR_RETURN(v1::Test test,
                   tests_->Submit(spec, model.id, request.request_id(),
                                  {.team = team, .max_unfinished = limits.max_concurrent_tests}));
  if (queue_ != nullptr) queue_->Poke();  // local long polls need not wait for NOTIFY
  v1::SubmitTestResponse response;
  *response.mutable_test() = std::move(test);
  return response;
}

absl::StatusOr<v1::GetTestResponse> OrchestratorService::GetTest(
    const v1::GetTestRequest& request) {
  ASSIGN_OR_RETURN(v1::Test test, ReadTest(request.id(), !request.skip_windows()));
  ASSIGN_OR_RETURN(std::optional<v1::TestProgress> progress,
                   LiveProgress(test, absl::InfinitePast()));
  v1::GetTestResponse response;
  *response.mutable_test() = std::move(test);
  if (progress.has_value()) {
    auto* windows = progress->mutable_windows();
    if (windows->size() > 1) windows->DeleteSubrange(0, windows->size() - 1);
    *response.mutable_progress() = std::move(*progress);
  }
  if (!request.skip_windows() && response.ByteSizeLong() > options_.max_get_test_bytes) {
    // Too big for a client to take: the steps without their windows, and say so.
    for (v1::Step& step : *response.mutable_test()->mutable_steps()) step.clear_windows();
    response.set_windows_omitted(true);
  }
  return response;
}

absl::StatusOr<v1::Test> OrchestratorService::ReadTest(int64_t id, bool windows) {
  RETURN_IF_ERROR(ValidateTestId(id, "id"));
  return tests_->Get(id, {.windows = windows});
}

absl::StatusOr<v1::ListTestsResponse> OrchestratorService::ListTests(
    const v1::ListTestsRequest& request) {
  if (!v1::TestState_IsValid(request.state())) return Invalid("state", "must be a known state");
  ASSIGN_OR_RETURN(int limit, PageSize(request.page_size()));
  TestRepository::ListFilter filter;
  filter.state = request.state();
  filter.model = request.model();
  filter.limit = limit;
  ASSIGN_OR_RETURN(std::vector<v1::Test> tests, tests_->List(filter));
  v1::ListTestsResponse response;
  for (v1::Test& test : tests) *response.add_tests() = std::move(test);
  return response;
}

absl::StatusOr<v1::CancelTestResponse> OrchestratorService::CancelTest(
    const v1::CancelTestRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateTestId(request.id(), "id"));
  ASSIGN_OR_RETURN(std::string team, tests_->TeamOf(request.id()));
  RETURN_IF_ERROR(
      MayActOn(TeamOf(caller), RoleOf(caller), team, absl::StrCat("test ", request.id())));
  ASSIGN_OR_RETURN(v1::Test test, tests_->Cancel(request.id()));
  v1::CancelTestResponse response;
  *response.mutable_test() = std::move(test);
  return response;
}

absl::StatusOr<v1::LeaseTestResponse> OrchestratorService::LeaseTest(
    const v1::LeaseTestRequest& request, const Caller& caller, absl::Time deadline,
    const std::function<bool()>& caller_gone) {
  RETURN_IF_ERROR(ValidateWorkerId(request.worker_id()));
  ASSIGN_OR_RETURN(absl::Duration lease, LeaseDuration(request.lease_duration()));
  RETURN_IF_ERROR(ValidateDuration(request.wait(), "wait", DurationRule::kNonNegative));
  const absl::Time start = absl::Now();
  absl::Duration wait = FromProtoDuration(request.wait());
  if (wait == absl::ZeroDuration() && deadline != absl::InfiniteFuture()) {
    wait = options_.max_lease_wait;
  }
  const absl::Time wait_until =
      std::min(start + std::min(wait, options_.max_lease_wait),
               deadline == absl::InfiniteFuture() ? absl::InfiniteFuture()
                                                  : deadline - options_.lease_reply_margin);
  while (true) {
    const uint64_t seen = queue_ != nullptr ? queue_->generation() : 0;
    if (caller_gone != nullptr && caller_gone()) {
      return absl::CancelledError("the caller went away while waiting for a test");
    }
    ASSIGN_OR_RETURN(std::optional<v1::Test> test,
                     tests_->Lease(request.worker_id(), lease, TokenOf(caller)));
    v1::LeaseTestResponse response;
    if (test.has_value()) {
      response.set_attempt(test->attempt());
      *response.mutable_test() = std::move(*test);
      return response;
    }
    const absl::Time now = absl::Now();
    if (now >= wait_until) return response;
    // Wake on a notification, or re-check after the poll interval (a not_before passing,
    // a missed notification).
    const absl::Time recheck = std::min(wait_until, now + options_.lease_poll_interval);
    if (queue_ != nullptr) {
      queue_->WaitForChange(seen, recheck);
      if (queue_->stopped()) return response;  // shutting down: answer "nothing" now
    } else {
      absl::SleepFor(recheck - now);
    }
  }
}

absl::StatusOr<v1::HeartbeatResponse> OrchestratorService::Heartbeat(
    const v1::HeartbeatRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateFence(request.test_id(), request.attempt()));
  RETURN_IF_ERROR(ValidateWorkerId(request.worker_id()));
  ASSIGN_OR_RETURN(absl::Duration lease, LeaseDuration(request.lease_duration()));
  ASSIGN_OR_RETURN(bool cancel_requested,
                   tests_->Heartbeat(request.test_id(), request.attempt(), request.worker_id(),
                                     lease, TokenOf(caller)));
  v1::HeartbeatResponse response;
  response.set_cancel_requested(cancel_requested);
  return response;
}

absl::StatusOr<v1::ReportStepResponse> OrchestratorService::ReportStep(
    const v1::ReportStepRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateFence(request.test_id(), request.attempt()));
  if (!request.has_step()) return Invalid("step", "must be set");
  RETURN_IF_ERROR(ValidateStep(request.step()));
  RETURN_IF_ERROR(
      tests_->ReportStep(request.test_id(), request.attempt(), request.step(), TokenOf(caller)));
  return v1::ReportStepResponse();
}

absl::StatusOr<v1::ReportProgressResponse> OrchestratorService::ReportProgress(
    const v1::ReportProgressRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateFence(request.test_id(), request.attempt()));
  RETURN_IF_ERROR(ValidateWorkerId(request.worker_id()));
  if (!request.has_progress()) return Invalid("progress", "must be set");
  RETURN_IF_ERROR(ValidateProgress(request.progress()));
  RETURN_IF_ERROR(tests_->ReportProgress(request.test_id(), request.attempt(), request.worker_id(),
                                         request.progress(), TokenOf(caller)));
  return v1::ReportProgressResponse();
}

absl::StatusOr<std::optional<v1::TestProgress>> OrchestratorService::LiveProgress(
    const v1::Test& test, absl::Time after) {
  if (test.state() != v1::TEST_STATE_RUNNING) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<v1::TestProgress> progress,
                   tests_->LatestProgress(test.id(), after));
  if (!progress.has_value() || progress->attempt() != test.attempt()) return std::nullopt;
  for (const v1::Step& step : test.steps()) {
    // That step ended: its report says more than the progress did.
    if (step.index() == progress->step_index()) return std::nullopt;
  }
  return progress;
}

absl::StatusOr<v1::CompleteTestResponse> OrchestratorService::CompleteTest(
    const v1::CompleteTestRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateFence(request.test_id(), request.attempt()));
  std::optional<v1::TestResult> result;
  std::string error;
  switch (request.outcome_case()) {
    case v1::CompleteTestRequest::kResult:
      RETURN_IF_ERROR(ValidateTestResult(request.result()));
      result = request.result();
      break;
    case v1::CompleteTestRequest::kError:
      if (request.error().empty()) return Invalid("error", "must not be empty");
      error = request.error();
      break;
    default:
      return Invalid("outcome", "must set result or error");
  }
  ASSIGN_OR_RETURN(v1::Test test, tests_->Complete(request.test_id(), request.attempt(), result,
                                                   error, TokenOf(caller)));
  v1::CompleteTestResponse response;
  *response.mutable_test() = std::move(test);
  return response;
}

absl::StatusOr<v1::ReleaseTestResponse> OrchestratorService::ReleaseTest(
    const v1::ReleaseTestRequest& request, const Caller& caller) {
  RETURN_IF_ERROR(ValidateFence(request.test_id(), request.attempt()));
  RETURN_IF_ERROR(ValidateWorkerId(request.worker_id()));
  if (request.reason().size() > 1000) return Invalid("reason", "must be at most 1000 characters");
  std::string reason = absl::StrCat("lease released by worker ", request.worker_id());
  if (!request.reason().empty()) absl::StrAppend(&reason, ": ", request.reason());
  ASSIGN_OR_RETURN(v1::Test test, tests_->Release(request.test_id(), request.attempt(),
                                                  request.worker_id(), reason, TokenOf(caller)));
  // The queue trigger notifies every replica; local long polls need not wait for it.
  if (queue_ != nullptr && test.state() == v1::TEST_STATE_QUEUED) queue_->Poke();
  v1::ReleaseTestResponse response;
  *response.mutable_test() = std::move(test);
  return response;
}

absl::StatusOr<v1::CreateTokenResponse> OrchestratorService::CreateToken(
    const v1::CreateTokenRequest& request) {
  if (tokens_ == nullptr) return absl::UnimplementedError("tokens are not configured");
  if (request.name().empty()) return Invalid("name", "must not be empty");
  if (request.name().size() > 200) return Invalid("name", "must be at most 200 characters");
  if (request.role() == v1::ROLE_UNSPECIFIED || !v1::Role_IsValid(request.role())) {
    return Invalid("role", "must be one of reader, submitter, worker, admin");
  }
  const std::string team = request.team().empty() ? kDefaultTeam : request.team();
  RETURN_IF_ERROR(ValidateTeamName(team, "team"));
  ASSIGN_OR_RETURN(CreatedToken created, tokens_->Create(request.name(), request.role(), team));
  v1::CreateTokenResponse response;
  *response.mutable_token() = std::move(created.token);
  response.set_secret(std::move(created.secret));
  return response;
}

absl::StatusOr<v1::RevokeTokenResponse> OrchestratorService::RevokeToken(
    const v1::RevokeTokenRequest& request) {
  if (tokens_ == nullptr) return absl::UnimplementedError("tokens are not configured");
  if (request.name().empty()) return Invalid("name", "must not be empty");
  ASSIGN_OR_RETURN(v1::Token token, tokens_->Revoke(request.name()));
  v1::RevokeTokenResponse response;
  *response.mutable_token() = std::move(token);
  return response;
}

absl::StatusOr<v1::ListTokensResponse> OrchestratorService::ListTokens(
    const v1::ListTokensRequest& request) {
  if (tokens_ == nullptr) return absl::UnimplementedError("tokens are not configured");
  ASSIGN_OR_RETURN(std::vector<v1::Token> tokens, tokens_->List(request.include_revoked()));
  v1::ListTokensResponse response;
  for (v1::Token& token : tokens) *response.add_tokens() = std::move(token);
  return response;
}

absl::StatusOr<v1::SetTeamQuotaResponse> OrchestratorService::SetTeamQuota(
    const v1::SetTeamQuotaRequest& request) {
  if (teams_ == nullptr) return absl::UnimplementedError("team quotas are not configured");
  RETURN_IF_ERROR(ValidateTeamName(request.team(), "team"));
  RETURN_IF_ERROR(ValidateTeamQuota(request.quota()));
  ASSIGN_OR_RETURN(v1::TeamQuota stored, teams_->Set(request.team(), request.quota()));
  v1::SetTeamQuotaResponse response;
  response.set_team(request.team());
  *response.mutable_quota() = TeamLimits::From(stored).ToProto();
  return response;
}

absl::StatusOr<v1::GetTeamQuotaResponse> OrchestratorService::GetTeamQuota(
    const v1::GetTeamQuotaRequest& request, const Caller& caller) {
  if (teams_ == nullptr) return absl::UnimplementedError("team quotas are not configured");
  const std::string team = request.team().empty() ? TeamOf(caller) : request.team();
  RETURN_IF_ERROR(ValidateTeamName(team, "team"));
  ASSIGN_OR_RETURN(TeamLimits limits, LimitsOf(team));
  v1::GetTeamQuotaResponse response;
  response.set_team(team);
  *response.mutable_quota() = limits.ToProto();
  return response;
}

absl::StatusOr<v1::AcceptBaselineResponse> OrchestratorService::AcceptBaseline(
    const v1::AcceptBaselineRequest& request, const Caller& caller) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  RETURN_IF_ERROR(ValidateTestId(request.test_id(), "test_id"));
  ASSIGN_OR_RETURN(std::string team, tests_->TeamOf(request.test_id()));
  RETURN_IF_ERROR(
      MayActOn(TeamOf(caller), RoleOf(caller), team, absl::StrCat("test ", request.test_id())));
  v1::AcceptBaselineResponse response;
  ASSIGN_OR_RETURN(
      *response.mutable_baseline(),
      capacity_->AcceptBaseline(request.test_id(), caller.has_value() ? caller->name : ""));
  return response;
}

absl::StatusOr<v1::ListRegressionsResponse> OrchestratorService::ListRegressions(
    const v1::ListRegressionsRequest& request) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  ASSIGN_OR_RETURN(int limit, PageSize(request.page_size()));
  ASSIGN_OR_RETURN(std::vector<v1::CapacityPoint> points,
                   capacity_->Regressions(request.model(), limit, request.latest_only()));
  v1::ListRegressionsResponse response;
  for (v1::CapacityPoint& point : points) *response.add_regressions() = std::move(point);
  return response;
}

absl::StatusOr<v1::GetCapacityTrendResponse> OrchestratorService::GetCapacityTrend(
    const v1::GetCapacityTrendRequest& request) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  if (request.model().empty()) return Invalid("model", "must not be empty");
  ASSIGN_OR_RETURN(int limit,
                   PageSize(request.page_size() == 0 ? kDefaultTrendPoints : request.page_size()));
  ASSIGN_OR_RETURN(std::vector<v1::CapacityPoint> points, capacity_->Trend(request.model(), limit));
  v1::GetCapacityTrendResponse response;
  for (v1::CapacityPoint& point : points) *response.add_points() = std::move(point);
  return response;
}

absl::StatusOr<v1::PlanCapacityResponse> OrchestratorService::PlanCapacity(
    const v1::PlanCapacityRequest& request) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  RETURN_IF_ERROR(ValidatePlanCapacityRequest(request));
  return capacity_->Plan(
      request.model(), request.peak_qps(),
      request.has_headroom() ? request.headroom() : kDefaultPlanHeadroom,
      request.has_survive_loss() ? request.survive_loss() : kDefaultPlanSurviveLoss);
}

absl::StatusOr<v1::SetAcceleratorPriceResponse> OrchestratorService::SetAcceleratorPrice(
    const v1::SetAcceleratorPriceRequest& request) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  RETURN_IF_ERROR(ValidateSetAcceleratorPriceRequest(request));
  v1::SetAcceleratorPriceResponse response;
  ASSIGN_OR_RETURN(*response.mutable_price(),
                   capacity_->SetPrice(request.accelerator(), request.price_per_hour()));
  return response;
}

absl::StatusOr<v1::ListAcceleratorPricesResponse> OrchestratorService::ListAcceleratorPrices(
    const v1::ListAcceleratorPricesRequest& /*request*/) {
  if (capacity_ == nullptr) return absl::UnimplementedError("capacity planning is not enabled");
  ASSIGN_OR_RETURN(std::vector<v1::AcceleratorPrice> prices, capacity_->ListPrices());
  v1::ListAcceleratorPricesResponse response;
  for (v1::AcceleratorPrice& price : prices) *response.add_prices() = std::move(price);
  return response;
}

}  // namespace vanguard

namespace vanguard {

absl::StatusOr<v1::TestSpec> OrchestratorService::CompleteScheduledSpec(
    v1::TestSpec spec, const RegisteredModel& model, const Caller& caller) {
  spec.set_model(model.model.name());
  v1::SubmitTestRequest as_submitted;
  *as_submitted.mutable_spec() = spec;
  as_submitted.mutable_spec()->set_model_version(model.model.version());
  RETURN_IF_ERROR(ValidateSubmit(as_submitted));
  if (spec.max_attempts() == 0) spec.set_max_attempts(options_.default_max_attempts);
  RETURN_IF_ERROR(CompleteRequestTimeout(model.model, options_.default_request_timeout, &spec));
  // The quota judges the test as the newest version would run it today.
  v1::TestSpec as_run = spec;
  if (!as_run.has_step_warmup()) *as_run.mutable_step_warmup() = model.model.default_warmup();
  const std::string& team = model.model.team();
  ASSIGN_OR_RETURN(TeamLimits limits, LimitsOf(team));
  RETURN_IF_ERROR(CheckTestQuota(limits, team, RoleOf(caller), as_run));
  return spec;
}

absl::StatusOr<v1::SetScheduleResponse> OrchestratorService::SetSchedule(
    const v1::SetScheduleRequest& request, const Caller& caller) {
  if (schedules_ == nullptr) return absl::UnimplementedError("schedules are not configured");
  v1::TestSchedule schedule = request.schedule();
  RETURN_IF_ERROR(ValidateSchedule(schedule));
  if (schedule.name().empty()) schedule.set_name("default");
  ASSIGN_OR_RETURN(RegisteredModel model, models_->Get(schedule.model(), ""));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), model.model.team(),
                           absl::StrCat("model ", schedule.model())));
  ASSIGN_OR_RETURN(*schedule.mutable_spec(), CompleteScheduledSpec(schedule.spec(), model, caller));
  schedule.mutable_spec()->clear_model_version();
  ASSIGN_OR_RETURN(v1::TestSchedule stored,
                   schedules_->Set(schedule, caller.has_value() ? caller->name : "", Now()));
  v1::SetScheduleResponse response;
  *response.mutable_schedule() = std::move(stored);
  return response;
}

absl::StatusOr<v1::ListSchedulesResponse> OrchestratorService::ListSchedules(
    const v1::ListSchedulesRequest& request, const Caller& caller) {
  if (schedules_ == nullptr) return absl::UnimplementedError("schedules are not configured");
  const std::string team = RoleOf(caller) == v1::ROLE_ADMIN ? "" : TeamOf(caller);
  ASSIGN_OR_RETURN(std::vector<v1::TestSchedule> schedules,
                   schedules_->List(request.model(), team));
  v1::ListSchedulesResponse response;
  for (v1::TestSchedule& s : schedules) *response.add_schedules() = std::move(s);
  return response;
}

absl::StatusOr<v1::DeleteScheduleResponse> OrchestratorService::DeleteSchedule(
    const v1::DeleteScheduleRequest& request, const Caller& caller) {
  if (schedules_ == nullptr) return absl::UnimplementedError("schedules are not configured");
  RETURN_IF_ERROR(ValidateTestId(request.id(), "id"));
  ASSIGN_OR_RETURN(v1::TestSchedule schedule, schedules_->Get(request.id()));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), schedule.team(),
                           absl::StrCat("schedule ", request.id())));
  RETURN_IF_ERROR(schedules_->Delete(request.id()));
  return v1::DeleteScheduleResponse();
}

absl::StatusOr<v1::AddWebhookResponse> OrchestratorService::AddWebhook(
    const v1::AddWebhookRequest& request, const Caller& caller) {
  if (webhooks_ == nullptr) return absl::UnimplementedError("webhooks are not configured");
  v1::Webhook webhook = request.webhook();
  RETURN_IF_ERROR(
      ValidateWebhook(webhook, options_.target_policy ? &*options_.target_policy : nullptr));
  if (!webhook.model().empty()) {
    ASSIGN_OR_RETURN(RegisteredModel model, models_->Get(webhook.model(), ""));
    if (!webhook.team().empty() && webhook.team() != model.model.team()) {
      return Invalid("webhook.team", "must be empty or the model's team");
    }
    webhook.set_team(model.model.team());
  } else if (webhook.team().empty()) {
    webhook.set_team(TeamOf(caller));
  }
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), webhook.team(),
                           webhook.model().empty() ? absl::StrCat("team ", webhook.team())
                                                   : absl::StrCat("model ", webhook.model())));
  ASSIGN_OR_RETURN(v1::Webhook stored,
                   webhooks_->Add(webhook, caller.has_value() ? caller->name : ""));
  v1::AddWebhookResponse response;
  *response.mutable_webhook() = std::move(stored);
  return response;
}

absl::StatusOr<v1::ListWebhooksResponse> OrchestratorService::ListWebhooks(
    const v1::ListWebhooksRequest& request, const Caller& caller) {
  if (webhooks_ == nullptr) return absl::UnimplementedError("webhooks are not configured");
  std::string team = request.team();
  if (!team.empty()) {
    RETURN_IF_ERROR(ValidateTeamName(team, "team"));
    RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), team, absl::StrCat("team ", team)));
  } else if (RoleOf(caller) != v1::ROLE_ADMIN) {
    team = TeamOf(caller);
  }
  ASSIGN_OR_RETURN(std::vector<v1::Webhook> webhooks, webhooks_->List(team));
  v1::ListWebhooksResponse response;
  for (v1::Webhook& w : webhooks) *response.add_webhooks() = std::move(w);
  return response;
}

absl::StatusOr<v1::DeleteWebhookResponse> OrchestratorService::DeleteWebhook(
    const v1::DeleteWebhookRequest& request, const Caller& caller) {
  if (webhooks_ == nullptr) return absl::UnimplementedError("webhooks are not configured");
  RETURN_IF_ERROR(ValidateTestId(request.id(), "id"));
  ASSIGN_OR_RETURN(v1::Webhook webhook, webhooks_->Get(request.id()));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), webhook.team(),
                           absl::StrCat("webhook ", request.id())));
  RETURN_IF_ERROR(webhooks_->Delete(request.id()));
  return v1::DeleteWebhookResponse();
}

absl::StatusOr<v1::ListWebhookDeliveriesResponse> OrchestratorService::ListWebhookDeliveries(
    const v1::ListWebhookDeliveriesRequest& request, const Caller& caller) {
  if (webhooks_ == nullptr) return absl::UnimplementedError("webhooks are not configured");
  RETURN_IF_ERROR(ValidateTestId(request.webhook_id(), "webhook_id"));
  std::string state;
  switch (request.state()) {
    case v1::WEBHOOK_DELIVERY_STATE_UNSPECIFIED:
      break;
    case v1::WEBHOOK_DELIVERY_STATE_PENDING:
      state = "pending";
      break;
    case v1::WEBHOOK_DELIVERY_STATE_DELIVERED:
      state = "delivered";
      break;
    case v1::WEBHOOK_DELIVERY_STATE_FAILED:
      state = "failed";
      break;
    default:
      return Invalid("state", "must be a WebhookDeliveryState");
  }
  ASSIGN_OR_RETURN(int limit, PageSize(request.page_size()));
  ASSIGN_OR_RETURN(v1::Webhook webhook, webhooks_->Get(request.webhook_id()));
  RETURN_IF_ERROR(MayActOn(TeamOf(caller), RoleOf(caller), webhook.team(),
                           absl::StrCat("webhook ", request.webhook_id())));
  ASSIGN_OR_RETURN(std::vector<v1::WebhookDelivery> deliveries,
                   webhooks_->ListDeliveries(request.webhook_id(), state, limit));
  v1::ListWebhookDeliveriesResponse response;
  for (v1::WebhookDelivery& d : deliveries) *response.add_deliveries() = std::move(d);
  return response;
}

}  // namespace vanguard
