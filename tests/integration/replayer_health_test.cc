// The replayer binary (`vanguard-replayer serve`) answers grpc.health.v1.Health/Check for the
// whole server ("") with SERVING while it runs: what an exec or grpc probe asks. No database.
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"

namespace vanguard {
namespace {

using ::vanguard::testing::Subprocess;

// Health/Check with an empty request (service ""), as raw bytes: the reply's bytes, or the
// call's error. SERVING is field 1 = 1, encoded 08 01.
grpc::Status HealthCheck(const std::string& address, const std::string& service,
                         std::string* reply_bytes) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  std::string request_bytes;
  if (!service.empty()) {  // field 1 (service), length-delimited; short names only
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

TEST(ReplayerHealthTest, ServingForTheWholeServerWhileRunning) {
  auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(replayer.ok()) << replayer.status();
  std::string reply;
  grpc::Status status = HealthCheck((*replayer)->address(), "", &reply);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(reply, std::string("\x08\x01", 2));  // SERVING
}

TEST(ReplayerHealthTest, NamedServiceIsNotFound) {
  // Only "" is registered: a probe naming a service fails, which deploy/k8s/validate relies on.
  auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(replayer.ok()) << replayer.status();
  std::string reply;
  grpc::Status status = HealthCheck((*replayer)->address(), "vanguard.v1.Replayer", &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace vanguard
