// The replayer binary (`vanguard-replayer serve`) answers grpc.health.v1.Health/Check for the
// whole server ("") with SERVING while it runs: what an exec or grpc probe asks. No database.
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/health_check.h"
#include "tests/testing/subprocess.h"

namespace vanguard {
namespace {

using ::vanguard::testing::HealthCheck;
using ::vanguard::testing::Subprocess;

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

TEST(ReplayerHealthTest, ServingForTheWholeServerWhileRunning) {
  auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(replayer.ok()) << replayer.status();
  std::string reply;
  grpc::Status status = HealthCheck(ChannelTo((*replayer)->address()), "", &reply);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(reply, std::string("\x08\x01", 2));  // SERVING
}

TEST(ReplayerHealthTest, NamedServiceIsNotFound) {
  // Only "" is registered: a probe naming a service fails, which deploy/k8s/validate relies on.
  auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(replayer.ok()) << replayer.status();
  std::string reply;
  grpc::Status status =
      HealthCheck(ChannelTo((*replayer)->address()), "vanguard.v1.Replayer", &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace vanguard
