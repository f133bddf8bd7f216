// The worker side of vanguard.v1.Orchestrator: LeaseTest, Heartbeat, ReportStep,
// ReportProgress, CompleteTest and ReleaseTest as absl::Status calls, each with a deadline
// and, when configured, the bearer token (`authorization: Bearer <token>`).
//
//   OrchestratorClient client(stub.get(), {.bearer_token = token});
//   absl::StatusOr<LeaseTestResponse> lease = client.LeaseTest(request, &cancel);
//
// Thread-safe (the generated stub is): the runner thread and the heartbeat thread share it.
#ifndef VANGUARD_WORKER_ORCHESTRATOR_CLIENT_H_
#define VANGUARD_WORKER_ORCHESTRATOR_CLIENT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"
#include "vanguard/v1/orchestrator.pb.h"
#include "worker/cancellation.h"

namespace vanguard::worker {

struct OrchestratorClientOptions {
  std::string bearer_token;  // empty: no authorization metadata
  absl::Duration rpc_timeout = absl::Seconds(10);
};

class OrchestratorClient {
 public:
  // `stub` must outlive the client.
  OrchestratorClient(vanguard::v1::Orchestrator::StubInterface* stub,
                     OrchestratorClientOptions options = {});

  // Errors are the orchestrator's gRPC status mapped to absl: UNAVAILABLE when it cannot
  // be reached, FAILED_PRECONDITION when the lease is lost or the fencing token stale.
  // `cancel` (nullable) aborts the call from another thread (CANCELLED).
  absl::StatusOr<vanguard::v1::LeaseTestResponse> LeaseTest(
      const vanguard::v1::LeaseTestRequest& request, CancellationToken* cancel = nullptr);
  absl::StatusOr<vanguard::v1::HeartbeatResponse> Heartbeat(
      const vanguard::v1::HeartbeatRequest& request);
  // `timeout` shortens the call's deadline below rpc_timeout (shutdown has a budget).
  absl::Status ReportStep(const vanguard::v1::ReportStepRequest& request,
                          absl::Duration timeout = absl::InfiniteDuration());
  // Progress of the step in flight; `timeout` as for ReportStep (progress is best effort
  // and uses a short one).
  absl::Status ReportProgress(const vanguard::v1::ReportProgressRequest& request,
                              absl::Duration timeout = absl::InfiniteDuration());
  absl::StatusOr<vanguard::v1::CompleteTestResponse> CompleteTest(
      const vanguard::v1::CompleteTestRequest& request);
  absl::StatusOr<vanguard::v1::ReleaseTestResponse> ReleaseTest(
      const vanguard::v1::ReleaseTestRequest& request,
      absl::Duration timeout = absl::InfiniteDuration());

 private:
  void Prepare(grpc::ClientContext* ctx, absl::Duration timeout = absl::InfiniteDuration()) const;

  vanguard::v1::Orchestrator::StubInterface* const stub_;
  const OrchestratorClientOptions options_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_ORCHESTRATOR_CLIENT_H_
