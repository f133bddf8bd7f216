// The simulated predictor's servers in front of its model (a profile: SlotScheduler for batch
// models, TokenScheduler for generative ones), so the true capacity is known:
//  - HTTP/1.1: KServe v2 REST, OpenAI-compatible /v1/completions and /v1/chat/completions
//    (SSE streaming; generative profiles), Triton- and vLLM-style /metrics, and admin fault
//    hooks (POST /admin/stall?ms=, /admin/fail_next?n=, /admin/drop_connections,
//    /admin/down?seconds= (a lost replica: every connection is closed and every request but
//    /admin/ ones has its connection closed unanswered for that long; /admin/up ends it),
//    /admin/restart?down_s=&warmup_s=&factor= (a new version: down that long, then cold, its
//    warmup started over),
//    /admin/colocation?fraction=, /admin/exit?code=);
//  - optionally a fleet that scales itself (batch models; config.autoscale): the ready
//    replicas (ReplicaAutoscaler, each with the profile's slots) serve, and /metrics shows
//    them as vanguard_sim_replicas (with _starting and _desired);
//  - optionally KServe v2 gRPC (inference.GRPCInferenceService) on a second port.
//
//   ASSIGN_OR_RETURN(auto server, SimPredictorServer::Create(config));
//   std::cout << "LISTENING " << server->address() << std::endl;
//   server->Start();      // returns at once; `threads` threads run the event loop
//   ...
//   server->Shutdown();   // e.g. on SIGTERM
//
// Event-driven on Boost.Asio/Beast: every connection runs on its own strand, the scheduler
// on one more, so any number of event-loop threads keeps the scheduling model exact. A
// request's service completes at the virtual instant the model says, woken by one steady
// timer set to the model's next event (absolute expiry, so service time does not drift).
// Virtual time starts when the server is created, so the profile's warmup starts then too.
// What a KServe v2 request (REST or gRPC) carries sets its cost: with the profile's
// nominal_elements > 0 a request with twice the tensor elements takes twice the service time
// (ContentCost in profile.h; a batch costs as its largest member).
//
// Create/Start/Shutdown/address/port: any one thread (main); Shutdown is idempotent.
#ifndef VANGUARD_TESTS_SIMULATOR_SIM_PREDICTOR_SERVER_H_
#define VANGUARD_TESTS_SIMULATOR_SIM_PREDICTOR_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "tests/simulator/profile.h"
#include "tests/simulator/replica_autoscaler.h"

namespace vanguard::sim {

struct SimPredictorConfig {
  // HOST:PORT; port 0 picks a free one. IPv6 hosts in brackets: "[::1]:0".
  std::string listen = "127.0.0.1:8000";
  // HOST:PORT for the KServe v2 gRPC API; empty = no gRPC server.
  std::string grpc_listen;
  std::string model_name = "sim";
  // The model: profile.mode picks the batch (profile.batch) or generative
  // (profile.generative) scheduler.
  Profile profile;
  // Event-loop threads.
  int threads = 1;
  // A fleet that scales itself (batch profiles only; INVALID_ARGUMENT for generative ones):
  // each replica brings profile.batch.slots executors, min_replicas of them at the start.
  std::optional<ReplicaAutoscaler::Config> autoscale;
};

class SimPredictorServer {
 public:
  // Validates the config (INVALID_ARGUMENT naming the field), binds and listens
  // (UNAVAILABLE when the address cannot be bound). Serves nothing until Start().
  static absl::StatusOr<std::unique_ptr<SimPredictorServer>> Create(
      const SimPredictorConfig& config);
  ~SimPredictorServer();  // Shutdown()
  SimPredictorServer(const SimPredictorServer&) = delete;
  SimPredictorServer& operator=(const SimPredictorServer&) = delete;

  // The bound address, "127.0.0.1:PORT" (IPv6: "[::1]:PORT").
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The gRPC server's bound address, or empty when there is none.
  const std::string& grpc_address() const { return grpc_address_; }
  // Requests/s the profile serves at saturation after warmup.
  double SaturationRps() const;

  void Start();
  // Stops accepting, stops the event loop and joins its threads. Open connections and
  // requests in flight are dropped.
  void Shutdown();

  struct Core;  // event-loop state, defined in the .cc

 private:
  SimPredictorServer() = default;

  std::unique_ptr<Core> core_;
  std::string address_;
  int port_ = 0;
  std::string grpc_address_;
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_SIM_PREDICTOR_SERVER_H_
