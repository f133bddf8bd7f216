// The orchestrator's logic: one plain method per RPC of vanguard.v1.Orchestrator, taking
// the request proto and returning the response or an absl::Status. The gRPC adapter
// (grpc_service.h) only translates; tests call these methods directly.
//
//   OrchestratorService service(&models, &tests);
//   absl::StatusOr<v1::SubmitTestResponse> r = service.SubmitTest(request);
//
// Codes: INVALID_ARGUMENT naming the field and rule for bad requests; NOT_FOUND for an
// unknown model/test; ALREADY_EXISTS for a registered model version; FAILED_PRECONDITION
// for a lost lease or a finished test; PERMISSION_DENIED for a lease call whose caller's
// token is not the one that leased the test; UNAVAILABLE when the database is unreachable.
//
// Lease identity: the worker protocol's methods take the Caller the gRPC adapter
// authenticated. With a caller, LeaseTest binds the lease to the caller's token (its id,
// not the request's worker_id), and Heartbeat, ReportStep, ReportProgress, CompleteTest and
// ReleaseTest on that attempt are refused for any other token, admin tokens included (an admin
// cancels with CancelTest), and change nothing. The request's worker_id is not an identity: it
// names the worker process under its token (Test.lease_owner, requeue reasons) and still
// fences Heartbeat, ReportProgress and ReleaseTest between processes sharing one token; it is not
// compared with the token's name. Without a caller (auth off) leases are fenced by attempt and
// worker_id alone.
//
// Tenancy (tenancy.h, docs/security.md): a model name belongs to the team that first
// registered it, a test to its model's team. RegisterModel (a further version), DeprecateModel,
// SubmitTest, CancelTest and AcceptBaseline take the Caller and refuse another team's model or
// test with PERMISSION_DENIED unless the caller is an admin; without a caller (auth off) every
// team is open, as to an admin. SubmitTest then holds the spec to its team's quota
// (TeamRepository; the defaults of TeamLimits without one): RESOURCE_EXHAUSTED or
// PERMISSION_DENIED naming the limit. Thread-safe; any gRPC thread may call.
#ifndef VANGUARD_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
#define VANGUARD_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_

#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/target_policy.h"
#include "orchestrator/capacity_repository.h"
#include "orchestrator/model_repository.h"
#include "orchestrator/queue_notifier.h"
#include "orchestrator/schedule_repository.h"
#include "orchestrator/team_repository.h"
#include "orchestrator/tenancy.h"
#include "orchestrator/test_repository.h"
#include "orchestrator/token_repository.h"
#include "orchestrator/webhook_repository.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

// Who made a call: the bearer token the gRPC adapter authenticated, or nullopt when the
// orchestrator runs without auth (--insecure_no_auth) or a test calls a method directly.
using Caller = std::optional<TokenIdentity>;

class OrchestratorService {
 public:
  struct Options {
    // A lease not renewed (heartbeats every third of it) expires after this; see the
    // lease-length note in orchestrator/README.md.
    absl::Duration default_lease = absl::Seconds(10);
    absl::Duration max_lease = absl::Hours(1);
    // A test's request timeout when its spec gives none; longer for a model whose SLO allows
    // a request more: kRequestTimeoutOverLimit times its longest latency limit.
    absl::Duration default_request_timeout = absl::Seconds(10);
    int default_max_attempts = 3;
    int default_page_size = 50;
    int max_page_size = 1000;
    // LeaseTest long poll: the longest wait, how often the queue is re-checked while
    // waiting (besides notifications), and the time kept back from the call's deadline
    // to deliver the reply.
    absl::Duration max_lease_wait = absl::Seconds(30);
    absl::Duration lease_poll_interval = absl::Seconds(1);
    absl::Duration lease_reply_margin = absl::Milliseconds(100);
    // GetTest leaves the windows out (windows_omitted) of a reply larger than this: gRPC
    // clients refuse replies over 4 MiB by default.
    size_t max_get_test_bytes = 3 << 20;
    // Where models' endpoints and metrics URLs and tests' controller URLs may point
    // (--allowed_targets); unset: only link-local and metadata targets are refused.
    std::optional<TargetPolicy> target_policy;
    // Time for schedules (when an interval is next due); nullptr: Clock::Real().
    Clock* clock = nullptr;
  };

  OrchestratorService(ModelRepository* models, TestRepository* tests)
      : OrchestratorService(models, tests, Options()) {}
  OrchestratorService(ModelRepository* models, TestRepository* tests, Options options)
      : OrchestratorService(models, tests, nullptr, nullptr, options) {}
  // tokens: backs the token RPCs (UNIMPLEMENTED without); queue: wakes long-polling
  // LeaseTest calls (without it they re-check every lease_poll_interval).
  OrchestratorService(ModelRepository* models, TestRepository* tests, TokenRepository* tokens,
                      QueueNotifier* queue, Options options)
      : OrchestratorService(models, tests, tokens, queue, nullptr, options) {}
  // capacity: backs the capacity-planning RPCs (UNIMPLEMENTED without).
  OrchestratorService(ModelRepository* models, TestRepository* tests, TokenRepository* tokens,
                      QueueNotifier* queue, CapacityRepository* capacity, Options options)
      : OrchestratorService(models, tests, tokens, queue, capacity, nullptr, options) {}
  // teams: the stored team quotas and the quota RPCs (without it every team has the default
  // TeamLimits and the quota RPCs are UNIMPLEMENTED).
  OrchestratorService(ModelRepository* models, TestRepository* tests, TokenRepository* tokens,
                      QueueNotifier* queue, CapacityRepository* capacity, TeamRepository* teams,
                      Options options)
      : OrchestratorService(models, tests, tokens, queue, capacity, teams, nullptr, nullptr,
                            options) {}
  // schedules, webhooks: back the continuous-regression-testing RPCs (UNIMPLEMENTED without).
  OrchestratorService(ModelRepository* models, TestRepository* tests, TokenRepository* tokens,
                      QueueNotifier* queue, CapacityRepository* capacity, TeamRepository* teams,
                      ScheduleRepository* schedules, WebhookRepository* webhooks, Options options)
      : models_(models),
        tests_(tests),
        tokens_(tokens),
        queue_(queue),
        capacity_(capacity),
        teams_(teams),
        schedules_(schedules),
        webhooks_(webhooks),
        options_(options) {}

  // Model registry. RegisterModel: a new name becomes request.team's (admin, or no auth) or
  // the caller's team's; a further version of a name needs the caller to act for its team.
  // DeprecateModel likewise (PERMISSION_DENIED otherwise, see "Tenancy").
  absl::StatusOr<v1::RegisterModelResponse> RegisterModel(const v1::RegisterModelRequest& request,
                                                          const Caller& caller = std::nullopt);
  absl::StatusOr<v1::GetModelResponse> GetModel(const v1::GetModelRequest& request);
  absl::StatusOr<v1::ListModelsResponse> ListModels(const v1::ListModelsRequest& request);
  absl::StatusOr<v1::DeprecateModelResponse> DeprecateModel(
      const v1::DeprecateModelRequest& request, const Caller& caller = std::nullopt);

  // Tests. SubmitTest pins the resolved model version in the stored spec and fills the
  // defaults (max_attempts 3, request_timeout 10 s, step_warmup = model's default_warmup).
  // The test is its model's team's; the caller must act for it, and the spec (defaults
  // applied) must be within its quota (see "Tenancy"); request_id is unique per team.
  absl::StatusOr<v1::SubmitTestResponse> SubmitTest(const v1::SubmitTestRequest& request,
                                                    const Caller& caller = std::nullopt);
  // With every step's windows unless request.skip_windows; a reply that would pass
  // max_get_test_bytes comes without them and with windows_omitted. A running test comes
  // with its live progress (LiveProgress), its latest window only.
  absl::StatusOr<v1::GetTestResponse> GetTest(const v1::GetTestRequest& request);
  // The test alone (what GetTest returns as its test), for WatchTest's polling.
  absl::StatusOr<v1::Test> ReadTest(int64_t id, bool windows);
  absl::StatusOr<v1::ListTestsResponse> ListTests(const v1::ListTestsRequest& request);
  // PERMISSION_DENIED for another team's test (see "Tenancy").
  absl::StatusOr<v1::CancelTestResponse> CancelTest(const v1::CancelTestRequest& request,
                                                    const Caller& caller = std::nullopt);

  // Worker protocol; `caller` holds the lease (LeaseTest) or must hold it (the others),
  // see "Lease identity" above. The one-argument forms are the caller-less (auth off) ones.
  // LeaseTest returns an empty response when no test is ready. It long-polls: with
  // request.wait > 0 it waits that long (at most max_lease_wait) for a test; with wait 0
  // and a finite `deadline` (the call's) up to max_lease_wait; either way it answers
  // lease_reply_margin before `deadline`. Without wait and deadline it does not wait.
  // `caller_gone` (nullable) is asked before every try: once it says the caller went away
  // (its call cancelled: a worker killed while it waited), the poll ends CANCELLED without
  // leasing, so no test is handed to a worker that will never run it.
  absl::StatusOr<v1::LeaseTestResponse> LeaseTest(const v1::LeaseTestRequest& request) {
    return LeaseTest(request, std::nullopt, absl::InfiniteFuture());
  }
  absl::StatusOr<v1::LeaseTestResponse> LeaseTest(
      const v1::LeaseTestRequest& request, const Caller& caller, absl::Time deadline,
      const std::function<bool()>& caller_gone = nullptr);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                  const Caller& caller = std::nullopt);
  absl::StatusOr<v1::ReportStepResponse> ReportStep(const v1::ReportStepRequest& request,
                                                    const Caller& caller = std::nullopt);
  // The step in flight as measured (see TestRepository::ReportProgress), fenced like
  // Heartbeat: worker_id and the caller's token must hold the lease at this attempt.
  absl::StatusOr<v1::ReportProgressResponse> ReportProgress(
      const v1::ReportProgressRequest& request, const Caller& caller = std::nullopt);
  absl::StatusOr<v1::CompleteTestResponse> CompleteTest(const v1::CompleteTestRequest& request,
                                                        const Caller& caller = std::nullopt);
  // Gives the lease back (worker shutdown); see TestRepository::Release (the release over
  // kMaxLeaseReleases fails the test: the reply's test is FAILED). The stored reason is
  // "lease released by worker <id>" plus ": <request.reason>" when given.
  absl::StatusOr<v1::ReleaseTestResponse> ReleaseTest(const v1::ReleaseTestRequest& request,
                                                      const Caller& caller = std::nullopt);

  // WatchTest's progress: the latest progress of test `id` when it was updated after
  // `after`, its attempt the test's current one and its step not reported yet; nullopt
  // otherwise. `test` is the test as just read (its attempt and steps).
  absl::StatusOr<std::optional<v1::TestProgress>> LiveProgress(const v1::Test& test,
                                                               absl::Time after);

  // Capacity planning (CapacityRepository; rules in migration 0010, docs/planning.md). The
  // caller's role is checked by the gRPC adapter (AcceptBaseline: submitter; the others:
  // reader). AcceptBaseline records the caller's token name as accepted_by ("" without
  // auth); INVALID_ARGUMENT for test_id <= 0, NOT_FOUND for an unknown test,
  // FAILED_PRECONDITION for one that did not succeed, PERMISSION_DENIED for another team's.
  absl::StatusOr<v1::AcceptBaselineResponse> AcceptBaseline(
      const v1::AcceptBaselineRequest& request, const Caller& caller = std::nullopt);
  // Page sizes as ListTests (0: default_page_size). NOT_FOUND for a model with no version.
  absl::StatusOr<v1::ListRegressionsResponse> ListRegressions(
      const v1::ListRegressionsRequest& request);
  // model required; page_size 0: 200, at most max_page_size.
  absl::StatusOr<v1::GetCapacityTrendResponse> GetCapacityTrend(
      const v1::GetCapacityTrendRequest& request);
  // ValidatePlanCapacityRequest, then the defaults (headroom 0.3, survive_loss 1) and
  // vanguard_plan. NOT_FOUND for a model with no version.
  absl::StatusOr<v1::PlanCapacityResponse> PlanCapacity(const v1::PlanCapacityRequest& request);
  // Prices per accelerator-hour. SetAcceleratorPrice (admin only, checked by the gRPC adapter):
  // ValidateSetAcceleratorPriceRequest, then inserts or replaces the price. ListAcceleratorPrices
  // (reader): every price, by accelerator.
  absl::StatusOr<v1::SetAcceleratorPriceResponse> SetAcceleratorPrice(
      const v1::SetAcceleratorPriceRequest& request);
  absl::StatusOr<v1::ListAcceleratorPricesResponse> ListAcceleratorPrices(
      const v1::ListAcceleratorPricesRequest& request);

  // Tokens (the caller's role is checked by the gRPC adapter: admin only). CreateToken: the
  // token acts for request.team (a plain name; empty: "default").
  absl::StatusOr<v1::CreateTokenResponse> CreateToken(const v1::CreateTokenRequest& request);
  absl::StatusOr<v1::RevokeTokenResponse> RevokeToken(const v1::RevokeTokenRequest& request);
  absl::StatusOr<v1::ListTokensResponse> ListTokens(const v1::ListTokensRequest& request);

  // Team quotas. SetTeamQuota (admin only, checked by the gRPC adapter) stores the fields set
  // (ValidateTeamQuota) and answers the quota in force; GetTeamQuota answers it for
  // request.team, or the caller's team when empty ("default" without auth). INVALID_ARGUMENT
  // for a team that is not a plain name; UNIMPLEMENTED without a TeamRepository.
  absl::StatusOr<v1::SetTeamQuotaResponse> SetTeamQuota(const v1::SetTeamQuotaRequest& request);
  absl::StatusOr<v1::GetTeamQuotaResponse> GetTeamQuota(const v1::GetTeamQuotaRequest& request,
                                                        const Caller& caller = std::nullopt);

  // Continuous regression testing (docs/planning.md; the gRPC adapter requires a submitter
  // or admin). A schedule or webhook is its model's team's (a team webhook: its team's); a
  // submitter acts on its own team's only, an admin on every team's (PERMISSION_DENIED
  // otherwise, see "Tenancy"). UNIMPLEMENTED without the repositories.
  //
  // SetSchedule: ValidateSchedule, then the spec is validated and completed as SubmitTest
  // does against the model's newest version that is not deprecated (NOT_FOUND without one),
  // its team's quota included, and stored without a version; it replaces the schedule of
  // the same (model, name). With an interval it is next due one interval from now.
  absl::StatusOr<v1::SetScheduleResponse> SetSchedule(const v1::SetScheduleRequest& request,
                                                      const Caller& caller = std::nullopt);
  // request.model's schedules, or every model's of the caller's team (an admin's: all).
  absl::StatusOr<v1::ListSchedulesResponse> ListSchedules(const v1::ListSchedulesRequest& request,
                                                          const Caller& caller = std::nullopt);
  // NOT_FOUND for an unknown id; the tests it queued stay.
  absl::StatusOr<v1::DeleteScheduleResponse> DeleteSchedule(
      const v1::DeleteScheduleRequest& request, const Caller& caller = std::nullopt);
  // AddWebhook: ValidateWebhook against options.target_policy; a webhook with a model is
  // that model's team's (webhook.team, if given, must be it; NOT_FOUND for a model with no
  // version that is not deprecated), one without is webhook.team's (default: the caller's).
  // The secret is stored and never returned.
  absl::StatusOr<v1::AddWebhookResponse> AddWebhook(const v1::AddWebhookRequest& request,
                                                    const Caller& caller = std::nullopt);
  // request.team's webhooks (default: the caller's team; an admin's default: every team's).
  absl::StatusOr<v1::ListWebhooksResponse> ListWebhooks(const v1::ListWebhooksRequest& request,
                                                        const Caller& caller = std::nullopt);
  // NOT_FOUND for an unknown id; its undelivered notifications are dropped with it.
  absl::StatusOr<v1::DeleteWebhookResponse> DeleteWebhook(const v1::DeleteWebhookRequest& request,
                                                          const Caller& caller = std::nullopt);
  // request.webhook_id's deliveries, newest first (page_size as ListTests'), only those in
  // request.state when it is given. INVALID_ARGUMENT for a bad id, state or page size;
  // NOT_FOUND for an unknown webhook; PERMISSION_DENIED for another team's.
  absl::StatusOr<v1::ListWebhookDeliveriesResponse> ListWebhookDeliveries(
      const v1::ListWebhookDeliveriesRequest& request, const Caller& caller = std::nullopt);

 private:
  absl::StatusOr<absl::Duration> LeaseDuration(const google::protobuf::Duration& requested) const;
  absl::StatusOr<int> PageSize(int requested) const;
  // `team`'s limits: the stored quota over the defaults (the defaults without teams_).
  absl::StatusOr<TeamLimits> LimitsOf(const std::string& team);
  // The request's spec, validated (ValidateTestSpec, targets, not_before, request_id).
  absl::Status ValidateSubmit(const v1::SubmitTestRequest& request) const;
  // `spec` with SubmitTest's defaults (against `model`) and the team's quota checked; the
  // version and warmup left as the schedule gave them.
  absl::StatusOr<v1::TestSpec> CompleteScheduledSpec(v1::TestSpec spec,
                                                     const RegisteredModel& model,
                                                     const Caller& caller);
  absl::Time Now() const { return (options_.clock ? options_.clock : Clock::Real())->Now(); }

  ModelRepository* models_;
  TestRepository* tests_;
  TokenRepository* tokens_;
  QueueNotifier* queue_;
  CapacityRepository* capacity_;
  TeamRepository* teams_;
  ScheduleRepository* schedules_;
  WebhookRepository* webhooks_;
  const Options options_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
