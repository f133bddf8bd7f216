// gRPC adapter for OrchestratorService; see grpc_service.h. Called on gRPC server threads.
#include "orchestrator/grpc_service.h"

#include <string>
#include <tuple>

#include "common/grpc_status.h"

namespace vanguard {
namespace {

// Runs a unary service method and moves its response into the gRPC reply.
template <typename Request, typename Response>
grpc::Status Unary(absl::StatusOr<Response> (OrchestratorService::*method)(const Request&),
                   OrchestratorService* service, const Request* request, Response* response) {
  absl::StatusOr<Response> result = (service->*method)(*request);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

bool IsFinished(v1::TestState state) {
  return state == v1::TEST_STATE_SUCCEEDED || state == v1::TEST_STATE_FAILED ||
         state == v1::TEST_STATE_CANCELLED;
}

// What a watcher is told about: a change in any of these sends the test again.
auto WatchedFields(const v1::Test& t) {
  return std::make_tuple(t.state(), t.attempt(), t.steps_size(), t.has_result(), t.error(),
                         t.cancel_requested(), t.lease_owner());
}

}  // namespace

grpc::Status OrchestratorGrpcService::RegisterModel(grpc::ServerContext*,
                                                    const v1::RegisterModelRequest* request,
                                                    v1::RegisterModelResponse* response) {
  return Unary(&OrchestratorService::RegisterModel, service_, request, response);
}

grpc::Status OrchestratorGrpcService::GetModel(grpc::ServerContext*,
                                               const v1::GetModelRequest* request,
                                               v1::GetModelResponse* response) {
  return Unary(&OrchestratorService::GetModel, service_, request, response);
}

grpc::Status OrchestratorGrpcService::ListModels(grpc::ServerContext*,
                                                 const v1::ListModelsRequest* request,
                                                 v1::ListModelsResponse* response) {
  return Unary(&OrchestratorService::ListModels, service_, request, response);
}

grpc::Status OrchestratorGrpcService::SubmitTest(grpc::ServerContext*,
                                                 const v1::SubmitTestRequest* request,
                                                 v1::SubmitTestResponse* response) {
  return Unary(&OrchestratorService::SubmitTest, service_, request, response);
}

grpc::Status OrchestratorGrpcService::GetTest(grpc::ServerContext*,
                                              const v1::GetTestRequest* request,
                                              v1::GetTestResponse* response) {
  return Unary(&OrchestratorService::GetTest, service_, request, response);
}

grpc::Status OrchestratorGrpcService::ListTests(grpc::ServerContext*,
                                                const v1::ListTestsRequest* request,
                                                v1::ListTestsResponse* response) {
  return Unary(&OrchestratorService::ListTests, service_, request, response);
}

grpc::Status OrchestratorGrpcService::CancelTest(grpc::ServerContext*,
                                                 const v1::CancelTestRequest* request,
                                                 v1::CancelTestResponse* response) {
  return Unary(&OrchestratorService::CancelTest, service_, request, response);
}

grpc::Status OrchestratorGrpcService::WatchTest(grpc::ServerContext* context,
                                                const v1::WatchTestRequest* request,
                                                grpc::ServerWriter<v1::WatchTestResponse>* writer) {
  v1::GetTestRequest get;
  get.set_id(request->id());
  absl::StatusOr<v1::GetTestResponse> current = service_->GetTest(get);
  if (!current.ok()) return ToGrpcStatus(current.status());
  while (true) {
    v1::WatchTestResponse update;
    *update.mutable_test() = current->test();
    if (!writer->Write(update)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "watcher went away");
    }
    if (IsFinished(current->test().state())) return grpc::Status::OK;
    const auto sent = WatchedFields(current->test());
    while (true) {
      clock_->SleepFor(options_.watch_poll_interval);
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
      }
      if (shutting_down_.load()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "orchestrator shutting down; watch again to continue");
      }
      current = service_->GetTest(get);
      if (!current.ok()) return ToGrpcStatus(current.status());
      if (WatchedFields(current->test()) != sent) break;
    }
  }
}

grpc::Status OrchestratorGrpcService::LeaseTest(grpc::ServerContext*,
                                                const v1::LeaseTestRequest* request,
                                                v1::LeaseTestResponse* response) {
  return Unary(&OrchestratorService::LeaseTest, service_, request, response);
}

grpc::Status OrchestratorGrpcService::Heartbeat(grpc::ServerContext*,
                                                const v1::HeartbeatRequest* request,
                                                v1::HeartbeatResponse* response) {
  return Unary(&OrchestratorService::Heartbeat, service_, request, response);
}

grpc::Status OrchestratorGrpcService::ReportStep(grpc::ServerContext*,
                                                 const v1::ReportStepRequest* request,
                                                 v1::ReportStepResponse* response) {
  return Unary(&OrchestratorService::ReportStep, service_, request, response);
}

grpc::Status OrchestratorGrpcService::CompleteTest(grpc::ServerContext*,
                                                   const v1::CompleteTestRequest* request,
                                                   v1::CompleteTestResponse* response) {
  return Unary(&OrchestratorService::CompleteTest, service_, request, response);
}

}  // namespace vanguard
