// ReplayerService: the gRPC face of the replayer (vanguard.v1.Replayer), a thin adapter over
// StepRunner. RunStep streams one RunStepEvent{window} per closed window, then one
// RunStepEvent{result}. One step at a time per process: a second concurrent RunStep gets
// RESOURCE_EXHAUSTED (two steps would share cores and corrupt each other's timing). A client
// that cancels the call stops the step within a few tens of milliseconds. Load goes only
// where `policy` allows (StepRunner checks the resolved address; a refused step's requests
// are all errors of class "target_refused", and `log` gets the reason).
//
//   ReplayerService service(policy, [](const std::string& line) { std::cerr << line; });
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);
//
// RunStep is called on gRPC's synchronous-server threads.
#ifndef VANGUARD_REPLAYER_REPLAYER_SERVICE_H_
#define VANGUARD_REPLAYER_REPLAYER_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>
#include <utility>

#include "common/target_policy.h"
#include "vanguard/v1/replayer.grpc.pb.h"

namespace vanguard::replayer {

class ReplayerService final : public v1::Replayer::Service {
 public:
  using Log = std::function<void(const std::string&)>;

  // `log` (nullable) is called on the RunStep thread.
  explicit ReplayerService(TargetPolicy policy = TargetPolicy::Default(), Log log = nullptr)
      : policy_(std::move(policy)), log_(std::move(log)) {}

  grpc::Status RunStep(grpc::ServerContext* context, const v1::RunStepRequest* request,
                       grpc::ServerWriter<v1::RunStepEvent>* writer) override;

 private:
  const TargetPolicy policy_;
  const Log log_;
  std::atomic<bool> step_running_{false};
};

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_REPLAYER_SERVICE_H_
