// ReplayerService implementation; see replayer_service.h. gRPC sync-server threads.
#include "replayer/replayer_service.h"

#include <string>

#include "common/grpc_status.h"
#include "replayer/step_config.h"
#include "replayer/step_runner.h"

namespace vanguard::replayer {

grpc::Status ReplayerService::RunStep(grpc::ServerContext* context,
                                      const v1::RunStepRequest* request,
                                      grpc::ServerWriter<v1::RunStepEvent>* writer) {
  absl::StatusOr<StepConfig> config = ParseStepConfig(*request);
  if (!config.ok()) return ToGrpcStatus(config.status());

  bool expected = false;
  if (!step_running_.compare_exchange_strong(expected, true)) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "this replayer is already running a step; it runs one at a time");
  }
  struct Release {
    std::atomic<bool>* flag;
    ~Release() { flag->store(false); }
  } release{&step_running_};

  StepRunner runner(/*proc=*/nullptr, policy_);
  absl::StatusOr<v1::StepResult> result = runner.Run(
      *config,
      [writer](const v1::WindowMetrics& window) {
        v1::RunStepEvent event;
        *event.mutable_window() = window;
        return writer->Write(event);
      },
      [context] { return context->IsCancelled(); });
  if (!runner.last_refusal().ok() && log_) {
    log_(std::string(runner.last_refusal().message()));
  }
  if (!result.ok()) return ToGrpcStatus(result.status());

  v1::RunStepEvent event;
  *event.mutable_result() = *std::move(result);
  if (!writer->Write(event)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away before the result");
  }
  return grpc::Status::OK;
}

}  // namespace vanguard::replayer
