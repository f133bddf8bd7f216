// The gRPC face of the orchestrator: vanguard.v1.Orchestrator on the synchronous gRPC API,
// translating each RPC to OrchestratorService and absl::Status to grpc::Status. No logic
// lives here except WatchTest's polling loop.
//
//   OrchestratorGrpcService grpc_service(&service);
//   builder.RegisterService(&grpc_service);
//
// Every RPC first passes options.authorizer (when set): the "authorization: Bearer <token>"
// metadata must name a token whose role may call the method (UNAUTHENTICATED /
// PERMISSION_DENIED otherwise); without an authorizer every call is allowed (the binary's
// --insecure_no_auth). The worker protocol's calls then go to the service with that token
// as their Caller: a lease belongs to the token that took it, and Heartbeat, ReportStep,
// ReportProgress, CompleteTest and ReleaseTest with any other token get PERMISSION_DENIED and
// change nothing (see orchestrator_service.h, "Lease identity"); worker_id is not checked against
// the token. A worker-role token on a connection whose client presented a certificate (mTLS)
// must be named by it (its common name or a subject alternative name equals the token's name);
// any other pairing gets PERMISSION_DENIED on every call. RegisterModel, DeprecateModel,
// SubmitTest, CancelTest, AcceptBaseline, GetTeamQuota and the schedule and webhook calls also
// get the token, whose team they check (orchestrator_service.h, "Tenancy"). When options.metrics is
// set, every RPC is counted and timed. LeaseTest passes the call's deadline to the service, which
// long-polls up to it.
//
// WatchTest sends the test at once, then polls the database every poll_interval and sends
// it again whenever its state, attempt, step count, result or error changed; with
// request.progress also whenever the worker reported progress of the step in flight
// (OrchestratorService::LiveProgress), with only the windows the stream has not sent yet.
// It finishes after sending a finished test, when the client cancels, or with UNAVAILABLE
// once BeginShutdown() was called (so server shutdown does not wait for open watches).
// Each open stream holds a server thread, so at most options.max_watch_streams are open at
// once and at most options.max_watch_streams_per_token for one caller token (without an
// authorizer only the first applies); a watch over either cap is RESOURCE_EXHAUSTED naming
// the cap and its flag (WatchStreamLimiter), and a stream's place is given back when it
// ends, however it ends. options.metrics, when set, shows the open streams as a gauge.
// Called on gRPC's server threads; BeginShutdown from any thread.
#ifndef VANGUARD_ORCHESTRATOR_GRPC_SERVICE_H_
#define VANGUARD_ORCHESTRATOR_GRPC_SERVICE_H_

#include <atomic>

#include "absl/time/time.h"
#include "common/clock.h"
#include "orchestrator/authorizer.h"
#include "orchestrator/metrics.h"
#include "orchestrator/orchestrator_service.h"
#include "orchestrator/watch_stream_limiter.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {

class OrchestratorGrpcService final : public v1::Orchestrator::Service {
 public:
  struct Options {
    absl::Duration watch_poll_interval = absl::Milliseconds(200);
    Authorizer* authorizer = nullptr;        // nullptr: no authentication (insecure)
    OrchestratorMetrics* metrics = nullptr;  // nullptr: no metrics
    int max_watch_streams = 256;             // --max_watch_streams
    int max_watch_streams_per_token = 16;    // --max_watch_streams_per_token
  };

  explicit OrchestratorGrpcService(OrchestratorService* service)
      : OrchestratorGrpcService(service, Options(), Clock::Real()) {}
  OrchestratorGrpcService(OrchestratorService* service, Options options, Clock* clock);

  // Ends open WatchTest streams at their next poll; call before grpc::Server::Shutdown.
  void BeginShutdown() { shutting_down_.store(true); }

  grpc::Status RegisterModel(grpc::ServerContext* context, const v1::RegisterModelRequest* request,
                             v1::RegisterModelResponse* response) override;
  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest* request,
                        v1::GetModelResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;
  grpc::Status DeprecateModel(grpc::ServerContext* context,
                              const v1::DeprecateModelRequest* request,
                              v1::DeprecateModelResponse* response) override;
  grpc::Status SubmitTest(grpc::ServerContext* context, const v1::SubmitTestRequest* request,
                          v1::SubmitTestResponse* response) override;
  grpc::Status GetTest(grpc::ServerContext* context, const v1::GetTestRequest* request,
                       v1::GetTestResponse* response) override;
  grpc::Status ListTests(grpc::ServerContext* context, const v1::ListTestsRequest* request,
                         v1::ListTestsResponse* response) override;
  grpc::Status CancelTest(grpc::ServerContext* context, const v1::CancelTestRequest* request,
                          v1::CancelTestResponse* response) override;
  grpc::Status WatchTest(grpc::ServerContext* context, const v1::WatchTestRequest* request,
                         grpc::ServerWriter<v1::WatchTestResponse>* writer) override;
  grpc::Status LeaseTest(grpc::ServerContext* context, const v1::LeaseTestRequest* request,
                         v1::LeaseTestResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status ReportStep(grpc::ServerContext* context, const v1::ReportStepRequest* request,
                          v1::ReportStepResponse* response) override;
  grpc::Status ReportProgress(grpc::ServerContext* context,
                              const v1::ReportProgressRequest* request,
                              v1::ReportProgressResponse* response) override;
  grpc::Status CompleteTest(grpc::ServerContext* context, const v1::CompleteTestRequest* request,
                            v1::CompleteTestResponse* response) override;
  grpc::Status ReleaseTest(grpc::ServerContext* context, const v1::ReleaseTestRequest* request,
                           v1::ReleaseTestResponse* response) override;
  grpc::Status AcceptBaseline(grpc::ServerContext* context,
                              const v1::AcceptBaselineRequest* request,
                              v1::AcceptBaselineResponse* response) override;
  grpc::Status ListRegressions(grpc::ServerContext* context,
                               const v1::ListRegressionsRequest* request,
                               v1::ListRegressionsResponse* response) override;
  grpc::Status GetCapacityTrend(grpc::ServerContext* context,
                                const v1::GetCapacityTrendRequest* request,
                                v1::GetCapacityTrendResponse* response) override;
  grpc::Status PlanCapacity(grpc::ServerContext* context, const v1::PlanCapacityRequest* request,
                            v1::PlanCapacityResponse* response) override;
  grpc::Status SetAcceleratorPrice(grpc::ServerContext* context,
                                   const v1::SetAcceleratorPriceRequest* request,
                                   v1::SetAcceleratorPriceResponse* response) override;
  grpc::Status ListAcceleratorPrices(grpc::ServerContext* context,
                                     const v1::ListAcceleratorPricesRequest* request,
                                     v1::ListAcceleratorPricesResponse* response) override;
  grpc::Status CreateToken(grpc::ServerContext* context, const v1::CreateTokenRequest* request,
                           v1::CreateTokenResponse* response) override;
  grpc::Status RevokeToken(grpc::ServerContext* context, const v1::RevokeTokenRequest* request,
                           v1::RevokeTokenResponse* response) override;
  grpc::Status ListTokens(grpc::ServerContext* context, const v1::ListTokensRequest* request,
                          v1::ListTokensResponse* response) override;
  grpc::Status SetTeamQuota(grpc::ServerContext* context, const v1::SetTeamQuotaRequest* request,
                            v1::SetTeamQuotaResponse* response) override;
  grpc::Status GetTeamQuota(grpc::ServerContext* context, const v1::GetTeamQuotaRequest* request,
                            v1::GetTeamQuotaResponse* response) override;
  grpc::Status SetSchedule(grpc::ServerContext* context, const v1::SetScheduleRequest* request,
                           v1::SetScheduleResponse* response) override;
  grpc::Status ListSchedules(grpc::ServerContext* context, const v1::ListSchedulesRequest* request,
                             v1::ListSchedulesResponse* response) override;
  grpc::Status DeleteSchedule(grpc::ServerContext* context,
                              const v1::DeleteScheduleRequest* request,
                              v1::DeleteScheduleResponse* response) override;
  grpc::Status AddWebhook(grpc::ServerContext* context, const v1::AddWebhookRequest* request,
                          v1::AddWebhookResponse* response) override;
  grpc::Status ListWebhooks(grpc::ServerContext* context, const v1::ListWebhooksRequest* request,
                            v1::ListWebhooksResponse* response) override;
  grpc::Status DeleteWebhook(grpc::ServerContext* context, const v1::DeleteWebhookRequest* request,
                             v1::DeleteWebhookResponse* response) override;
  grpc::Status ListWebhookDeliveries(grpc::ServerContext* context,
                                     const v1::ListWebhookDeliveriesRequest* request,
                                     v1::ListWebhookDeliveriesResponse* response) override;

 private:
  // Authorizes the call to `method`, runs `body(caller)` when allowed, and records metrics.
  template <typename Body>
  grpc::Status Handle(grpc::ServerContext* context, const char* method, Body&& body);
  // Unary calls that map straight onto a service method.
  template <typename Request, typename Response>
  grpc::Status Call(grpc::ServerContext* context, const char* method,
                    absl::StatusOr<Response> (OrchestratorService::*fn)(const Request&),
                    const Request* request, Response* response);
  // Unary calls whose service method also gets the authenticated caller (the lease calls,
  // which check it; the calls on a team's models and tests, which check its team;
  // AcceptBaseline, which also records who accepted).
  template <typename Request, typename Response>
  grpc::Status CallAsHolder(grpc::ServerContext* context, const char* method,
                            absl::StatusOr<Response> (OrchestratorService::*fn)(const Request&,
                                                                                const Caller&),
                            const Request* request, Response* response);
  // The caller's token when `method` is allowed; nullopt without an authorizer.
  // UNAUTHENTICATED / PERMISSION_DENIED / UNAVAILABLE as Authorizer::Check.
  absl::StatusOr<Caller> Authorize(grpc::ServerContext* context, const char* method);
  grpc::Status Watch(grpc::ServerContext* context, const v1::WatchTestRequest* request,
                     grpc::ServerWriter<v1::WatchTestResponse>* writer);

  OrchestratorService* service_;
  const Options options_;
  Clock* clock_;
  std::atomic<bool> shutting_down_{false};
  WatchStreamLimiter watch_streams_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_GRPC_SERVICE_H_
