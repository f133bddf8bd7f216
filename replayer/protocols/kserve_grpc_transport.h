// KServe v2 / Open Inference Protocol over gRPC for the replayer: an AsyncTransport that
// sends `/inference.GRPCInferenceService/ModelInfer` calls open-loop — Send() starts a call
// and returns at once, so one event-loop thread keeps any number in flight — and the
// conversion of a KServe v2 REST JSON body into the ModelInferRequest those calls carry.
//
//   ASSIGN_OR_RETURN(AsyncTransportFactory transports, KServeGrpcTransportFactory("host:8001"));
//   ASSIGN_OR_RETURN(std::unique_ptr<AsyncTransport> t, transports(/*shard=*/0, /*shards=*/1));
//   t->Send(tag, request);            // request.body = serialized inference.ModelInferRequest
//   // when t->completion_fd() is readable:
//   int n = t->TakeCompletions(completions, kMax);
//
// Requests go out through a generic stub as the bytes in OutgoingRequest::body (no parse
// per request); a recorded gRPC trace's payloads and the template's pre-serialized body both
// fit. Completions carry CLOCK_MONOTONIC ns and an error class when the call failed:
// "reply_too_large" for a reply over kMaxModelInferReplyBytes, else "grpc_<CODE>" (e.g.
// grpc_UNAVAILABLE).
//
// Threading: Send/TakeCompletions/Cancel on the owning loop thread; each transport has one
// completion-queue thread of its own that hands results over through a mutex-guarded queue
// and an eventfd (never calling into the engine).
#ifndef VANGUARD_REPLAYER_PROTOCOLS_KSERVE_GRPC_TRANSPORT_H_
#define VANGUARD_REPLAYER_PROTOCOLS_KSERVE_GRPC_TRANSPORT_H_

#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/generic/generic_stub.h"
#include "inference/grpc_service.pb.h"
#include "replayer/request_source.h"

namespace vanguard::replayer {

inline constexpr std::string_view kModelInferMethod = "/inference.GRPCInferenceService/ModelInfer";
// The largest ModelInfer reply KServeGrpcTransportFactory's channels accept: 64 MiB, the
// replayer's bound on a body (a request body, replayer/step_config.h kMaxRequestBodyBytes; a
// trace payload, kMaxTracePayloadBytes). A model's reply is outside input: gRPC refuses a
// larger one, and the call completes as an error of class kErrorReplyTooLarge; the channel
// and the calls after it go on.
inline constexpr size_t kMaxModelInferReplyBytes = 64 << 20;
inline constexpr std::string_view kErrorReplyTooLarge = "reply_too_large";

// "host:port", "grpc://host:port" or "http://host:port[/...]" -> "host:port".
// INVALID_ARGUMENT naming `target` otherwise.
absl::StatusOr<std::string> GrpcTargetFromUrl(std::string_view target);

// Converts a KServe v2 REST inference request body ({"inputs":[{"name","shape","datatype",
// "data"}], "outputs":[{"name"}], "id", "parameters"}) into a ModelInferRequest for `model`.
// `data` may be flat or nested; its element count must match the shape. Every datatype with
// a typed contents field is supported (BOOL, INT*, UINT*, FP32, FP64, BYTES); FP16/BF16 need
// raw contents and are INVALID_ARGUMENT, as is anything malformed (naming the field).
absl::StatusOr<inference::ModelInferRequest> ModelInferRequestFromKServeJson(
    std::string_view model, std::string_view json_body);

class KServeGrpcTransport final : public AsyncTransport {
 public:
  // UNAVAILABLE if the eventfd cannot be made.
  static absl::StatusOr<std::unique_ptr<KServeGrpcTransport>> Create(
      std::shared_ptr<grpc::Channel> channel);
  // Cancels every open call and waits for the completion thread.
  ~KServeGrpcTransport() override;

  int completion_fd() const override { return event_fd_; }
  absl::Status Send(uint64_t tag, const OutgoingRequest& request) override;
  int TakeCompletions(Completion* out, int max) override;
  void Cancel(uint64_t tag) override;

  int64_t in_flight() const;

 private:
  struct Call;
  KServeGrpcTransport(std::shared_ptr<grpc::Channel> channel, int event_fd);
  void CompletionLoop();  // the completion thread

  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const std::string method_;
  grpc::CompletionQueue cq_;
  int event_fd_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Call*> open_calls_ ABSL_GUARDED_BY(mu_);
  std::deque<Completion> ready_ ABSL_GUARDED_BY(mu_);
  std::thread completion_thread_;
};

// One transport (and one HTTP/2 connection) per loop. INVALID_ARGUMENT for a bad target.
// `connect_to` (a gRPC address such as "ipv4:10.1.2.3:8001"; empty: resolve `target`): the
// channels connect there and nowhere else, still sending `target`'s host:port as :authority.
absl::StatusOr<AsyncTransportFactory> KServeGrpcTransportFactory(
    const std::string& target, const std::string& connect_to = "");

// The synthetic source for PROTOCOL_KSERVE_V2_GRPC: the KServe v2 REST JSON body (empty:
// one FP32 [1,4] input) converted once into a serialized ModelInferRequest for `model`.
absl::StatusOr<RequestSourceFactory> KServeGrpcTemplateSourceFactory(
    const std::string& model, const std::string& request_body);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_PROTOCOLS_KSERVE_GRPC_TRANSPORT_H_
