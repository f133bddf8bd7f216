// BindProtocol: picks what a step sends and how it reads answers — the RequestSource, the
// ResponseHandler and, for protocols with their own transport, the AsyncTransport — from
// the step's protocol and trace. The one place where new protocols and sources are wired
// into the engine.
//
//   ASSIGN_OR_RETURN(ProtocolBinding binding, BindProtocol(config));
//   auto source = binding.sources(/*shard=*/0, /*shards=*/1);
//
// Pure wiring; any thread.
#ifndef VANGUARD_REPLAYER_PROTOCOL_BINDING_H_
#define VANGUARD_REPLAYER_PROTOCOL_BINDING_H_

#include "absl/status/statusor.h"
#include "replayer/request_source.h"
#include "replayer/step_config.h"

namespace vanguard::replayer {

struct ProtocolBinding {
  RequestSourceFactory sources;     // required
  ResponseHandlerFactory handlers;  // empty: status code only
  AsyncTransportFactory transport;  // empty: the built-in HTTP/1.1 client
};

// The synthetic request of a step without a trace, rendered once:
//  KServe v2 REST: POST {prefix}/v2/models/{model}/infer, Content-Type: application/json.
//  plain HTTP:     GET {prefix} when the body is empty, else POST the body there.
ProtocolBinding SyntheticHttpBinding(const StepConfig& config);

// UNIMPLEMENTED for a protocol or trace this build cannot run yet (the message says which).
absl::StatusOr<ProtocolBinding> BindProtocol(const StepConfig& config);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_PROTOCOL_BINDING_H_
