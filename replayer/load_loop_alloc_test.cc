// The hot path allocates nothing per request in steady state: a LoadLoop run on a thread
// whose heap allocations this binary counts (global operator new is replaced below) makes
// about as many allocations for 5x the requests — what it allocates is per window and per
// connection, never per request. Counts, not timings, so a slow machine cannot fail it.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "replayer/load_loop.h"
#include "replayer/protocol_binding.h"
#include "replayer/testing/fake_http_server.h"

namespace {
thread_local bool counting = false;
std::atomic<int64_t> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (counting) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace vanguard::replayer {
namespace {

// What the loop thread allocated while running one step of `rate` for 1 s.
struct Allocations {
  int64_t total = 0;
  int64_t connections = 0;  // connections the step opened (each may allocate a little)
};

// `endpoints` > 1: spread over that many servers by p2c (the policy that reads in-flight
// counts and draws random numbers per request).
Allocations LoopAllocations(double rate, int endpoints = 1) {
  std::vector<std::unique_ptr<testing::FakeHttpServer>> servers;
  for (int i = 0; i < endpoints; ++i) {
    servers.push_back(std::make_unique<testing::FakeHttpServer>(
        [](int64_t) { return testing::FakeHttpServer::Reply{}; }));
  }
  v1::RunStepRequest request;
  if (endpoints == 1) {
    request.set_target(servers[0]->url());
  } else {
    for (const auto& server : servers) request.add_targets(server->url());
    request.set_endpoint_policy(v1::ENDPOINT_POLICY_P2C);
  }
  request.set_model_name("fake");
  request.set_rate_qps(rate);
  request.mutable_duration()->set_seconds(1);
  request.set_max_connections(2000);  // a slow machine opens connections, never queues
  absl::StatusOr<StepConfig> config = ParseStepConfig(request);
  EXPECT_TRUE(config.ok());
  std::vector<TargetAddress> targets;
  for (const HttpTarget& endpoint : config->endpoints) {
    absl::StatusOr<TargetAddress> target = ResolveTarget(endpoint);
    EXPECT_TRUE(target.ok());
    targets.push_back(*target);
  }
  LoopParts parts;
  parts.source = *SyntheticHttpBinding(*config).sources(0, 1);
  int64_t windows = 0;
  LoadLoop loop(*config, 0, 1, targets, std::move(parts),
                [&windows](std::vector<WindowTally> w) { windows += w.size(); });
  absl::Status status;
  Allocations result;
  std::thread thread([&] {
    int64_t before = allocations.load();
    counting = true;
    status = loop.Run();
    counting = false;
    result.total = allocations.load() - before;
  });
  thread.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(windows, 1);
  EXPECT_EQ(loop.accounting().measured().completed, static_cast<int64_t>(rate));
  for (const auto& server : servers) result.connections += server->connections_accepted();
  return result;
}

// Each connection costs at most a few allocations (object, read buffer, request bytes);
// 800 more requests with one allocation each anywhere would add >= 800 beyond that.
void ExpectNoAllocationPerRequest(int endpoints) {
  LoopAllocations(100, endpoints);  // warm up process-wide lazies (the error-class table...)
  Allocations few = LoopAllocations(200, endpoints);
  Allocations many = LoopAllocations(1000, endpoints);
  constexpr int64_t kPerConnection = 4;
  int64_t extra = (many.total - kPerConnection * many.connections) -
                  (few.total - kPerConnection * few.connections);
  EXPECT_LT(extra, 80) << "200 requests: " << few.total << " allocations on " << few.connections
                       << " connections; 1000 requests: " << many.total << " on "
                       << many.connections;
}

TEST(LoadLoopAllocationTest, SendingMoreRequestsDoesNotAllocateMore) {
  ExpectNoAllocationPerRequest(1);
}

TEST(LoadLoopAllocationTest, SpreadingOverEndpointsDoesNotAllocatePerRequestEither) {
  ExpectNoAllocationPerRequest(2);
}

}  // namespace
}  // namespace vanguard::replayer
