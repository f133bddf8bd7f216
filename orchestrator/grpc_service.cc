// gRPC adapter for OrchestratorService; see grpc_service.h. Called on gRPC server threads.
#include "orchestrator/grpc_service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/grpc_tls.h"

namespace vanguard {
namespace {

bool IsFinished(v1::TestState state) {
  return state == v1::TEST_STATE_SUCCEEDED || state == v1::TEST_STATE_FAILED ||
         state == v1::TEST_STATE_CANCELLED;
}

// What a watcher is told about: a change in any of these sends the test again.
auto WatchedFields(const v1::Test& t) {
  return std::make_tuple(t.state(), t.attempt(), t.steps_size(), t.has_result(), t.error(),
                         t.cancel_requested(), t.lease_owner());
}

// A worker that presented a client certificate (mTLS, orchestrator --tls_client_ca) is who the
// certificate names: its token's name must be the certificate's common name or one of its
// subject alternative names. No certificate: nothing to compare (plaintext or server-only TLS).
absl::Status CheckWorkerCertificate(const TokenIdentity& token,
                                    const std::vector<std::string>& certificate_names) {
  if (certificate_names.empty() || absl::c_linear_search(certificate_names, token.name)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("the client certificate names \"", certificate_names.front(),
                   "\", not this worker token's name \"", token.name, "\""));
}

}  // namespace

OrchestratorGrpcService::OrchestratorGrpcService(OrchestratorService* service, Options options,
                                                 Clock* clock)
    : service_(service),
      options_(options),
      clock_(clock),
      watch_streams_(
          {.max_streams = options.max_watch_streams,
           .max_per_token = options.max_watch_streams_per_token},
          options.metrics == nullptr
              ? std::function<void(int)>()
              : [metrics = options.metrics](int open) { metrics->SetOpenWatchStreams(open); }) {}

absl::StatusOr<Caller> OrchestratorGrpcService::Authorize(grpc::ServerContext* context,
                                                          const char* method) {
  if (options_.authorizer == nullptr) return Caller();
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  std::string_view authorization;
  if (it != metadata.end()) authorization = std::string_view(it->second.data(), it->second.size());
  absl::StatusOr<TokenIdentity> token = options_.authorizer->Check(authorization, method);
  if (!token.ok()) return token.status();
  if (token->role == v1::ROLE_WORKER && context->auth_context() != nullptr) {
    absl::Status bound =
        CheckWorkerCertificate(*token, PeerCertificateNames(*context->auth_context()));
    if (!bound.ok()) return bound;
  }
  return Caller(*std::move(token));
}

template <typename Body>
grpc::Status OrchestratorGrpcService::Handle(grpc::ServerContext* context, const char* method,
                                             Body&& body) {
  const absl::Time start = absl::Now();
  absl::StatusOr<Caller> caller = Authorize(context, method);
  grpc::Status status = caller.ok() ? body(*caller) : ToGrpcStatus(caller.status());
  if (options_.metrics != nullptr) {
    options_.metrics->RecordRpc(method, status.error_code(), absl::Now() - start);
  }
  return status;
}

template <typename Request, typename Response>
grpc::Status OrchestratorGrpcService::Call(
    grpc::ServerContext* context, const char* method,
    absl::StatusOr<Response> (OrchestratorService::*fn)(const Request&), const Request* request,
    Response* response) {
  return Handle(context, method, [&](const Caller&) -> grpc::Status {
    absl::StatusOr<Response> result = (service_->*fn)(*request);
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  });
}

template <typename Request, typename Response>
grpc::Status OrchestratorGrpcService::CallAsHolder(
    grpc::ServerContext* context, const char* method,
    absl::StatusOr<Response> (OrchestratorService::*fn)(const Request&, const Caller&),
    const Request* request, Response* response) {
  return Handle(context, method, [&](const Caller& caller) -> grpc::Status {
    absl::StatusOr<Response> result = (service_->*fn)(*request, caller);
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  });
}

grpc::Status OrchestratorGrpcService::DeprecateModel(grpc::ServerContext* context,
                                                     const v1::DeprecateModelRequest* request,
                                                     v1::DeprecateModelResponse* response) {
  return CallAsHolder(context, "DeprecateModel", &OrchestratorService::DeprecateModel, request,
                      response);
}

grpc::Status OrchestratorGrpcService::CreateToken(grpc::ServerContext* context,
                                                  const v1::CreateTokenRequest* request,
                                                  v1::CreateTokenResponse* response) {
  return Call(context, "CreateToken", &OrchestratorService::CreateToken, request, response);
}

grpc::Status OrchestratorGrpcService::ListTokens(grpc::ServerContext* context,
                                                 const v1::ListTokensRequest* request,
                                                 v1::ListTokensResponse* response) {
  return Call(context, "ListTokens", &OrchestratorService::ListTokens, request, response);
}

grpc::Status OrchestratorGrpcService::RegisterModel(grpc::ServerContext* context,
                                                    const v1::RegisterModelRequest* request,
                                                    v1::RegisterModelResponse* response) {
  return CallAsHolder(context, "RegisterModel", &OrchestratorService::RegisterModel, request,
                      response);
}

grpc::Status OrchestratorGrpcService::GetModel(grpc::ServerContext* context,
                                               const v1::GetModelRequest* request,
                                               v1::GetModelResponse* response) {
  return Call(context, "GetModel", &OrchestratorService::GetModel, request, response);
}

grpc::Status OrchestratorGrpcService::ListModels(grpc::ServerContext* context,
                                                 const v1::ListModelsRequest* request,
                                                 v1::ListModelsResponse* response) {
  return Call(context, "ListModels", &OrchestratorService::ListModels, request, response);
}

grpc::Status OrchestratorGrpcService::SubmitTest(grpc::ServerContext* context,
                                                 const v1::SubmitTestRequest* request,
                                                 v1::SubmitTestResponse* response) {
  return CallAsHolder(context, "SubmitTest", &OrchestratorService::SubmitTest, request, response);
}

grpc::Status OrchestratorGrpcService::GetTest(grpc::ServerContext* context,
                                              const v1::GetTestRequest* request,
                                              v1::GetTestResponse* response) {
  return Call(context, "GetTest", &OrchestratorService::GetTest, request, response);
}

grpc::Status OrchestratorGrpcService::ListTests(grpc::ServerContext* context,
                                                const v1::ListTestsRequest* request,
                                                v1::ListTestsResponse* response) {
  return Call(context, "ListTests", &OrchestratorService::ListTests, request, response);
}

grpc::Status OrchestratorGrpcService::CancelTest(grpc::ServerContext* context,
                                                 const v1::CancelTestRequest* request,
                                                 v1::CancelTestResponse* response) {
  return CallAsHolder(context, "CancelTest", &OrchestratorService::CancelTest, request, response);
}

grpc::Status OrchestratorGrpcService::WatchTest(grpc::ServerContext* context,
                                                const v1::WatchTestRequest* request,
                                                grpc::ServerWriter<v1::WatchTestResponse>* writer) {
  return Handle(context, "WatchTest", [&](const Caller& caller) -> grpc::Status {
    absl::StatusOr<WatchStreamLimiter::Slot> slot = watch_streams_.Acquire(
        caller.has_value() ? std::optional<int64_t>(caller->id) : std::nullopt);
    if (!slot.ok()) return ToGrpcStatus(slot.status());
    return Watch(context, request, writer);  // `slot` is given back on return
  });
}

namespace {

// What one watch stream has sent of the live progress, so each response carries only news.
class ProgressCursor {
 public:
  absl::Time seen() const { return seen_; }

  // Notes `progress` as read and drops the windows this stream already sent (same attempt
  // and step, index not above the last sent).
  void Advance(v1::TestProgress& progress) {
    seen_ = absl::FromUnixSeconds(progress.update_time().seconds()) +
            absl::Nanoseconds(progress.update_time().nanos());
    const auto step = std::make_pair(progress.attempt(), progress.step_index());
    if (step != step_) {
      step_ = step;
      last_window_ = -1;
    }
    auto* windows = progress.mutable_windows();
    windows->erase(
        std::remove_if(windows->begin(), windows->end(),
                       [&](const v1::StepWindow& w) { return w.index() <= last_window_; }),
        windows->end());
    for (const v1::StepWindow& w : *windows) last_window_ = std::max(last_window_, w.index());
  }

 private:
  absl::Time seen_ = absl::InfinitePast();
  std::pair<int32_t, int32_t> step_{-1, -1};
  int32_t last_window_ = -1;
};

}  // namespace

grpc::Status OrchestratorGrpcService::Watch(grpc::ServerContext* context,
                                            const v1::WatchTestRequest* request,
                                            grpc::ServerWriter<v1::WatchTestResponse>* writer) {
  ProgressCursor cursor;
  // The live progress to send with `test`, when asked for and new.
  auto progress_of = [&](const v1::Test& test) -> absl::StatusOr<std::optional<v1::TestProgress>> {
    if (!request->progress()) return std::nullopt;
    absl::StatusOr<std::optional<v1::TestProgress>> progress =
        service_->LiveProgress(test, cursor.seen());
    if (!progress.ok() || !progress->has_value()) return progress;
    cursor.Advance(**progress);
    return progress;
  };
  // Polled several times a second: watchers get the steps without their windows.
  absl::StatusOr<v1::Test> current = service_->ReadTest(request->id(), /*windows=*/false);
  if (!current.ok()) return ToGrpcStatus(current.status());
  absl::StatusOr<std::optional<v1::TestProgress>> progress = progress_of(*current);
  if (!progress.ok()) return ToGrpcStatus(progress.status());
  while (true) {
    v1::WatchTestResponse update;
    *update.mutable_test() = *current;
    if (progress->has_value()) *update.mutable_progress() = std::move(**progress);
    if (!writer->Write(update)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "watcher went away");
    }
    if (IsFinished(current->state())) return grpc::Status::OK;
    const auto sent = WatchedFields(*current);
    while (true) {
      clock_->SleepFor(options_.watch_poll_interval);
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
      }
      if (shutting_down_.load()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "orchestrator shutting down; watch again to continue");
      }
      current = service_->ReadTest(request->id(), /*windows=*/false);
      if (!current.ok()) return ToGrpcStatus(current.status());
      progress = progress_of(*current);
      if (!progress.ok()) return ToGrpcStatus(progress.status());
      if (WatchedFields(*current) != sent || progress->has_value()) break;
    }
  }
}

grpc::Status OrchestratorGrpcService::LeaseTest(grpc::ServerContext* context,
                                                const v1::LeaseTestRequest* request,
                                                v1::LeaseTestResponse* response) {
  return Handle(context, "LeaseTest", [&](const Caller& caller) -> grpc::Status {
    const absl::Time start = absl::Now();
    const absl::Time deadline = absl::FromChrono(context->deadline());
    absl::StatusOr<v1::LeaseTestResponse> result = service_->LeaseTest(
        *request, caller,
        deadline > absl::Now() + absl::Hours(24 * 365) ? absl::InfiniteFuture() : deadline,
        [context] { return context->IsCancelled(); });
    if (!result.ok()) return ToGrpcStatus(result.status());
    *response = *std::move(result);
    if (response->has_test() && options_.metrics != nullptr) {
      options_.metrics->RecordLeaseWait(absl::Now() - start);
    }
    return grpc::Status::OK;
  });
}

grpc::Status OrchestratorGrpcService::Heartbeat(grpc::ServerContext* context,
                                                const v1::HeartbeatRequest* request,
                                                v1::HeartbeatResponse* response) {
  return CallAsHolder(context, "Heartbeat", &OrchestratorService::Heartbeat, request, response);
}

grpc::Status OrchestratorGrpcService::ReportStep(grpc::ServerContext* context,
                                                 const v1::ReportStepRequest* request,
                                                 v1::ReportStepResponse* response) {
  return CallAsHolder(context, "ReportStep", &OrchestratorService::ReportStep, request, response);
}

grpc::Status OrchestratorGrpcService::ReportProgress(grpc::ServerContext* context,
                                                     const v1::ReportProgressRequest* request,
                                                     v1::ReportProgressResponse* response) {
  return CallAsHolder(context, "ReportProgress", &OrchestratorService::ReportProgress, request,
                      response);
}

grpc::Status OrchestratorGrpcService::CompleteTest(grpc::ServerContext* context,
                                                   const v1::CompleteTestRequest* request,
                                                   v1::CompleteTestResponse* response) {
  return CallAsHolder(context, "CompleteTest", &OrchestratorService::CompleteTest, request,
                      response);
}

grpc::Status OrchestratorGrpcService::ReleaseTest(grpc::ServerContext* context,
                                                  const v1::ReleaseTestRequest* request,
                                                  v1::ReleaseTestResponse* response) {
  grpc::Status status =
      CallAsHolder(context, "ReleaseTest", &OrchestratorService::ReleaseTest, request, response);
  if (status.ok() && options_.metrics != nullptr) {
    using Outcome = OrchestratorMetrics::ReleaseOutcome;
    const v1::TestState state = response->test().state();
    options_.metrics->RecordReleased(state == v1::TEST_STATE_CANCELLED ? Outcome::kCancelled
                                     : state == v1::TEST_STATE_FAILED  ? Outcome::kFailed
                                                                       : Outcome::kRequeued);
  }
  return status;
}

grpc::Status OrchestratorGrpcService::AcceptBaseline(grpc::ServerContext* context,
                                                     const v1::AcceptBaselineRequest* request,
                                                     v1::AcceptBaselineResponse* response) {
  return CallAsHolder(context, "AcceptBaseline", &OrchestratorService::AcceptBaseline, request,
                      response);
}

grpc::Status OrchestratorGrpcService::ListRegressions(grpc::ServerContext* context,
                                                      const v1::ListRegressionsRequest* request,
                                                      v1::ListRegressionsResponse* response) {
  return Call(context, "ListRegressions", &OrchestratorService::ListRegressions, request, response);
}

grpc::Status OrchestratorGrpcService::GetCapacityTrend(grpc::ServerContext* context,
                                                       const v1::GetCapacityTrendRequest* request,
                                                       v1::GetCapacityTrendResponse* response) {
  return Call(context, "GetCapacityTrend", &OrchestratorService::GetCapacityTrend, request,
              response);
}

grpc::Status OrchestratorGrpcService::PlanCapacity(grpc::ServerContext* context,
                                                   const v1::PlanCapacityRequest* request,
                                                   v1::PlanCapacityResponse* response) {
  return Call(context, "PlanCapacity", &OrchestratorService::PlanCapacity, request, response);
}

grpc::Status OrchestratorGrpcService::SetAcceleratorPrice(
    grpc::ServerContext* context, const v1::SetAcceleratorPriceRequest* request,
    v1::SetAcceleratorPriceResponse* response) {
  return Call(context, "SetAcceleratorPrice", &OrchestratorService::SetAcceleratorPrice, request,
              response);
}

grpc::Status OrchestratorGrpcService::ListAcceleratorPrices(
    grpc::ServerContext* context, const v1::ListAcceleratorPricesRequest* request,
    v1::ListAcceleratorPricesResponse* response) {
  return Call(context, "ListAcceleratorPrices", &OrchestratorService::ListAcceleratorPrices,
              request, response);
}

grpc::Status OrchestratorGrpcService::RevokeToken(grpc::ServerContext* context,
                                                  const v1::RevokeTokenRequest* request,
                                                  v1::RevokeTokenResponse* response) {
  grpc::Status status =
      Call(context, "RevokeToken", &OrchestratorService::RevokeToken, request, response);
  // This replica stops accepting the token at once; others within their cache TTL.
  if (status.ok() && options_.authorizer != nullptr) options_.authorizer->ClearCache();
  return status;
}

grpc::Status OrchestratorGrpcService::SetTeamQuota(grpc::ServerContext* context,
                                                   const v1::SetTeamQuotaRequest* request,
                                                   v1::SetTeamQuotaResponse* response) {
  return Call(context, "SetTeamQuota", &OrchestratorService::SetTeamQuota, request, response);
}

grpc::Status OrchestratorGrpcService::GetTeamQuota(grpc::ServerContext* context,
                                                   const v1::GetTeamQuotaRequest* request,
                                                   v1::GetTeamQuotaResponse* response) {
  return CallAsHolder(context, "GetTeamQuota", &OrchestratorService::GetTeamQuota, request,
                      response);
}

grpc::Status OrchestratorGrpcService::SetSchedule(grpc::ServerContext* context,
                                                  const v1::SetScheduleRequest* request,
                                                  v1::SetScheduleResponse* response) {
  return CallAsHolder(context, "SetSchedule", &OrchestratorService::SetSchedule, request, response);
}

grpc::Status OrchestratorGrpcService::ListSchedules(grpc::ServerContext* context,
                                                    const v1::ListSchedulesRequest* request,
                                                    v1::ListSchedulesResponse* response) {
  return CallAsHolder(context, "ListSchedules", &OrchestratorService::ListSchedules, request,
                      response);
}

grpc::Status OrchestratorGrpcService::DeleteSchedule(grpc::ServerContext* context,
                                                     const v1::DeleteScheduleRequest* request,
                                                     v1::DeleteScheduleResponse* response) {
  return CallAsHolder(context, "DeleteSchedule", &OrchestratorService::DeleteSchedule, request,
                      response);
}

grpc::Status OrchestratorGrpcService::AddWebhook(grpc::ServerContext* context,
                                                 const v1::AddWebhookRequest* request,
                                                 v1::AddWebhookResponse* response) {
  return CallAsHolder(context, "AddWebhook", &OrchestratorService::AddWebhook, request, response);
}

grpc::Status OrchestratorGrpcService::ListWebhooks(grpc::ServerContext* context,
                                                   const v1::ListWebhooksRequest* request,
                                                   v1::ListWebhooksResponse* response) {
  return CallAsHolder(context, "ListWebhooks", &OrchestratorService::ListWebhooks, request,
                      response);
}

grpc::Status OrchestratorGrpcService::DeleteWebhook(grpc::ServerContext* context,
                                                    const v1::DeleteWebhookRequest* request,
                                                    v1::DeleteWebhookResponse* response) {
  return CallAsHolder(context, "DeleteWebhook", &OrchestratorService::DeleteWebhook, request,
                      response);
}

grpc::Status OrchestratorGrpcService::ListWebhookDeliveries(
    grpc::ServerContext* context, const v1::ListWebhookDeliveriesRequest* request,
    v1::ListWebhookDeliveriesResponse* response) {
  return CallAsHolder(context, "ListWebhookDeliveries", &OrchestratorService::ListWebhookDeliveries,
                      request, response);
}

}  // namespace vanguard
