// Orchestrator worker-protocol calls. See orchestrator_client.h.
#include "worker/orchestrator_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "grpcpp/client_context.h"

namespace vanguard::worker {
namespace {

absl::Status Annotate(const grpc::Status& status, const char* rpc) {
  if (status.ok()) return absl::OkStatus();
  absl::Status s = FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat("orchestrator ", rpc, ": ", s.message()));
}

}  // namespace

OrchestratorClient::OrchestratorClient(vanguard::v1::Orchestrator::StubInterface* stub,
                                       OrchestratorClientOptions options)
    : stub_(stub), options_(std::move(options)) {}

void OrchestratorClient::Prepare(grpc::ClientContext* ctx, absl::Duration timeout) const {
  // Real time: gRPC deadlines are absolute wall-clock times in the transport.
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + std::min(options_.rpc_timeout, timeout)));
  if (!options_.bearer_token.empty()) {
    ctx->AddMetadata("authorization", absl::StrCat("Bearer ", options_.bearer_token));
  }
}

absl::StatusOr<vanguard::v1::LeaseTestResponse> OrchestratorClient::LeaseTest(
    const vanguard::v1::LeaseTestRequest& request, CancellationToken* cancel) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  CancellationToken::Attachment attachment(cancel, &ctx);
  vanguard::v1::LeaseTestResponse response;
  absl::Status s = Annotate(stub_->LeaseTest(&ctx, request, &response), "LeaseTest");
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<vanguard::v1::HeartbeatResponse> OrchestratorClient::Heartbeat(
    const vanguard::v1::HeartbeatRequest& request) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  vanguard::v1::HeartbeatResponse response;
  absl::Status s = Annotate(stub_->Heartbeat(&ctx, request, &response), "Heartbeat");
  if (!s.ok()) return s;
  return response;
}

absl::Status OrchestratorClient::ReportStep(const vanguard::v1::ReportStepRequest& request,
                                            absl::Duration timeout) {
  grpc::ClientContext ctx;
  Prepare(&ctx, timeout);
  vanguard::v1::ReportStepResponse response;
  return Annotate(stub_->ReportStep(&ctx, request, &response), "ReportStep");
}

absl::Status OrchestratorClient::ReportProgress(const vanguard::v1::ReportProgressRequest& request,
                                                absl::Duration timeout) {
  grpc::ClientContext ctx;
  Prepare(&ctx, timeout);
  vanguard::v1::ReportProgressResponse response;
  return Annotate(stub_->ReportProgress(&ctx, request, &response), "ReportProgress");
}

absl::StatusOr<vanguard::v1::CompleteTestResponse> OrchestratorClient::CompleteTest(
    const vanguard::v1::CompleteTestRequest& request) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  vanguard::v1::CompleteTestResponse response;
  absl::Status s = Annotate(stub_->CompleteTest(&ctx, request, &response), "CompleteTest");
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<vanguard::v1::ReleaseTestResponse> OrchestratorClient::ReleaseTest(
    const vanguard::v1::ReleaseTestRequest& request, absl::Duration timeout) {
  grpc::ClientContext ctx;
  Prepare(&ctx, timeout);
  vanguard::v1::ReleaseTestResponse response;
  absl::Status s = Annotate(stub_->ReleaseTest(&ctx, request, &response), "ReleaseTest");
  if (!s.ok()) return s;
  return response;
}

}  // namespace vanguard::worker
