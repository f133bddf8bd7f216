// ReplayerService: the gRPC face of the replayer (vanguard.v1.Replayer), a thin adapter over
// StepRunner. RunStep streams one RunStepEvent{window} per closed window, then one
// RunStepEvent{result}. One step at a time per process: a second concurrent RunStep gets
// RESOURCE_EXHAUSTED (two steps would share cores and corrupt each other's timing). A client
// that cancels the call stops the step within a few tens of milliseconds.
//
//   ReplayerService service;
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);
//
// RunStep is called on gRPC's synchronous-server threads.
#ifndef VANGUARD_REPLAYER_REPLAYER_SERVICE_H_
#define VANGUARD_REPLAYER_REPLAYER_SERVICE_H_

#include <atomic>

#include "vanguard/v1/replayer.grpc.pb.h"

namespace vanguard::replayer {

class ReplayerService final : public v1::Replayer::Service {
 public:
  grpc::Status RunStep(grpc::ServerContext* context, const v1::RunStepRequest* request,
                       grpc::ServerWriter<v1::RunStepEvent>* writer) override;

 private:
  std::atomic<bool> step_running_{false};
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_REPLAYER_SERVICE_H_
