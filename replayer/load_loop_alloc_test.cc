// The hot path allocates nothing per request in steady state: a LoadLoop run on a thread
// whose heap allocations this binary counts (global operator new is replaced below) makes
// about as many allocations for 5x the requests — what it allocates is per window and per
// connection, never per request. Counts, not timings, so a slow machine cannot fail it.
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

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

// Allocations made on the loop thread while it runs one step of `rate` for 1 s.
int64_t LoopAllocations(const std::string& url, double rate) {
  v1::RunStepRequest request;
  request.set_target(url);
  request.set_model_name("fake");
  request.set_rate_qps(rate);
  request.mutable_duration()->set_seconds(1);
  absl::StatusOr<StepConfig> config = ParseStepConfig(request);
  EXPECT_TRUE(config.ok());
  absl::StatusOr<TargetAddress> target = ResolveTarget(config->target);
  EXPECT_TRUE(target.ok());
  LoopParts parts;
  parts.source = *SyntheticHttpBinding(*config).sources(0, 1);
  int64_t windows = 0;
  LoadLoop loop(*config, 0, 1, *target, std::move(parts),
                [&windows](std::vector<WindowTally> w) { windows += w.size(); });
  absl::Status status;
  int64_t before = 0, after = 0;
  std::thread thread([&] {
    before = allocations.load();
    counting = true;
    status = loop.Run();
    counting = false;
    after = allocations.load();
  });
  thread.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(windows, 1);
  EXPECT_EQ(loop.accounting().measured().completed, static_cast<int64_t>(rate));
  return after - before;
}

TEST(LoadLoopAllocationTest, SendingMoreRequestsDoesNotAllocateMore) {
  testing::FakeHttpServer server([](int64_t) { return testing::FakeHttpServer::Reply{}; });
  LoopAllocations(server.url(), 100);  // warm up process-wide lazies (error-class table...)
  int64_t few = LoopAllocations(server.url(), 200);
  int64_t many = LoopAllocations(server.url(), 1000);
  // 800 more requests; a per-request allocation anywhere would add >= 800. A few more
  // connections at the higher rate may each allocate a little.
  EXPECT_LT(many - few, 80) << "200 requests: " << few << " allocations, 1000: " << many;
}

}  // namespace
}  // namespace vanguard::replayer
