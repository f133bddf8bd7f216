// grpc.health.v1.Health/Check as a raw call, for tests of the binaries' health services
// (Debian's gRPC ships no health stub). Called from a test's thread; blocks up to 10 s.
#ifndef VANGUARD_TESTS_TESTING_HEALTH_CHECK_H_
#define VANGUARD_TESTS_TESTING_HEALTH_CHECK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace vanguard::testing {

// Checks `service` ("" for the whole server; short names only) on `channel`: the call's status
// and, when it is OK, the reply's bytes in *reply_bytes (SERVING is field 1 = 1, 08 01; an
// empty reply is UNKNOWN, the default value not being sent).
inline grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& service, std::string* reply_bytes) {
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  std::string request_bytes;
  if (!service.empty()) {  // field 1 (service), length-delimited
    request_bytes = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
  }
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  auto call = generic.PrepareUnaryCall(&ctx, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<grpc::Slice> slices;
  if (status.ok() && reply.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      reply_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_TESTING_HEALTH_CHECK_H_
