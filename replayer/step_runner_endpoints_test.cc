// StepRunner over several endpoints (replicas of one model): two or three in-process
// FakeHttpServers, each its own thread, and the endpoint policies. These tests assert counts
// — what each server received, what each endpoint's telemetry says and that it sums to the
// step — never timing bounds a noisy machine could break.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "replayer/step_runner.h"
#include "replayer/testing/fake_http_server.h"

namespace vanguard::replayer {
namespace {

using testing::FakeHttpServer;

FakeHttpServer::ReplyFunction Fast() {
  return [](int64_t) { return FakeHttpServer::Reply{}; };
}

// A constant-rate step of `count` requests over 500 ms, spread over the servers by `policy`.
v1::RunStepRequest Request(const std::vector<std::unique_ptr<FakeHttpServer>>& servers,
                           v1::EndpointPolicy policy, int count, uint64_t seed = 17) {
  v1::RunStepRequest r;
  for (const auto& server : servers) r.add_targets(server->url());
  r.set_endpoint_policy(policy);
  r.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  r.set_model_name("fake");
  r.set_rate_qps(count * 2.0);
  r.set_seed(seed);
  r.mutable_duration()->set_nanos(500'000'000);
  return r;
}

std::vector<std::unique_ptr<FakeHttpServer>> Servers(
    std::vector<FakeHttpServer::ReplyFunction> replies) {
  std::vector<std::unique_ptr<FakeHttpServer>> servers;
  for (auto& reply : replies) servers.push_back(std::make_unique<FakeHttpServer>(std::move(reply)));
  return servers;
}

absl::StatusOr<v1::StepResult> RunStep(const v1::RunStepRequest& request) {
  StepRunner runner;
  return runner.Run(request, nullptr, nullptr);
}

// The endpoints' counts add up to the step's own, and every endpoint's figures agree with
// what its server saw.
void ExpectEndpointsSumToTheStep(const v1::StepResult& result) {
  int64_t dispatched = 0, sent = 0, completed = 0, errors = 0, timeouts = 0;
  double share = 0;
  for (const v1::EndpointTelemetry& e : result.endpoints()) {
    dispatched += e.dispatched();
    sent += e.sent();
    completed += e.completed();
    errors += e.errors();
    timeouts += e.timeouts();
    share += e.share();
    EXPECT_EQ(e.dispatched(), e.completed() + e.errors() + e.timeouts()) << e.target();
  }
  EXPECT_EQ(dispatched, result.scheduled() - result.dropped() - result.never_dispatched());
  EXPECT_EQ(sent, result.sent());
  EXPECT_EQ(completed, result.completed());
  EXPECT_EQ(errors, result.errors());
  EXPECT_EQ(timeouts, result.timeouts());
  if (dispatched > 0) {
    EXPECT_NEAR(share, 1.0, 1e-9);
  }
}

TEST(StepRunnerEndpointsTest, RoundRobinGivesThreeServersEqualTurns) {
  auto servers = Servers({Fast(), Fast(), Fast()});
  absl::StatusOr<v1::StepResult> result =
      RunStep(Request(servers, v1::ENDPOINT_POLICY_ROUND_ROBIN, 90));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->scheduled(), 90);
  EXPECT_EQ(result->completed(), 90);
  EXPECT_EQ(result->endpoint_policy(), v1::ENDPOINT_POLICY_ROUND_ROBIN);
  ASSERT_EQ(result->endpoints_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(result->endpoints(i).target(), servers[i]->url());
    EXPECT_EQ(servers[i]->requests_received(), 30) << i;
    EXPECT_EQ(result->endpoints(i).dispatched(), 30) << i;
    EXPECT_EQ(result->endpoints(i).completed(), 30) << i;
    EXPECT_GT(result->endpoints(i).latency().p99_ms(), 0) << i;
    EXPECT_GE(result->endpoints(i).peak_in_flight(), 1) << i;
  }
  EXPECT_DOUBLE_EQ(result->endpoint_imbalance(), 1.0);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, SeveralTargetsWithoutAPolicyRunRoundRobin) {
  auto servers = Servers({Fast(), Fast()});
  absl::StatusOr<v1::StepResult> result =
      RunStep(Request(servers, v1::ENDPOINT_POLICY_UNSPECIFIED, 40));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->endpoint_policy(), v1::ENDPOINT_POLICY_ROUND_ROBIN);
  EXPECT_EQ(servers[0]->requests_received(), 20);
  EXPECT_EQ(servers[1]->requests_received(), 20);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, SingleSendsEverythingToTheFirstTarget) {
  auto servers = Servers({Fast(), Fast()});
  absl::StatusOr<v1::StepResult> result = RunStep(Request(servers, v1::ENDPOINT_POLICY_SINGLE, 40));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(servers[0]->requests_received(), 40);
  EXPECT_EQ(servers[1]->requests_received(), 0);
  ASSERT_EQ(result->endpoints_size(), 1);
  EXPECT_EQ(result->endpoints(0).target(), servers[0]->url());
  EXPECT_EQ(result->endpoint_imbalance(), 0);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, TheOldTargetFieldAloneIsOneEndpoint) {
  FakeHttpServer server(Fast());
  v1::RunStepRequest request = Request({}, v1::ENDPOINT_POLICY_UNSPECIFIED, 20);
  request.set_target(server.url());
  absl::StatusOr<v1::StepResult> result = RunStep(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(server.requests_received(), 20);
  EXPECT_EQ(result->endpoint_policy(), v1::ENDPOINT_POLICY_SINGLE);
  ASSERT_EQ(result->endpoints_size(), 1);
  EXPECT_EQ(result->endpoints(0).target(), server.url());
  EXPECT_EQ(result->endpoints(0).completed(), 20);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, RandomIsReproducibleFromTheStepSeedAndSpreadsOverAll) {
  std::vector<int64_t> first_run;
  for (int run = 0; run < 2; ++run) {
    auto servers = Servers({Fast(), Fast(), Fast()});
    absl::StatusOr<v1::StepResult> result =
        RunStep(Request(servers, v1::ENDPOINT_POLICY_RANDOM, 90, /*seed=*/5));
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectEndpointsSumToTheStep(*result);
    std::vector<int64_t> received;
    for (const auto& server : servers) {
      received.push_back(server->requests_received());
      EXPECT_GT(server->requests_received(), 0);
    }
    for (int i = 0; i < 3; ++i) EXPECT_EQ(result->endpoints(i).dispatched(), received[i]);
    if (run == 0) {
      first_run = received;
    } else {
      EXPECT_EQ(received, first_run);
    }
  }
}

TEST(StepRunnerEndpointsTest, P2cSteersAwayFromAServerThatHoldsItsRequests) {
  // Server 0 answers after 300 ms, server 1 at once: with two endpoints p2c picks the one
  // with fewer requests in flight, so once server 0 holds one, the rest go to server 1
  // (round robin would give each half).
  auto servers = Servers(
      {[](int64_t) { return FakeHttpServer::Reply{.delay = absl::Milliseconds(300)}; }, Fast()});
  absl::StatusOr<v1::StepResult> result = RunStep(Request(servers, v1::ENDPOINT_POLICY_P2C, 100));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->completed(), 100);
  EXPECT_LT(servers[0]->requests_received(), 25);
  EXPECT_GT(servers[1]->requests_received(), 75);
  EXPECT_GT(result->endpoint_imbalance(), 1.5);
  // The slow server's latency is its own, not diluted by the fast one's.
  EXPECT_GE(result->endpoints(0).latency().p50_ms(), 300);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, ErrorsAreChargedToTheEndpointThatAnswered) {
  auto servers = Servers({Fast(), [](int64_t) { return FakeHttpServer::Reply{.status = 503}; }});
  absl::StatusOr<v1::StepResult> result =
      RunStep(Request(servers, v1::ENDPOINT_POLICY_ROUND_ROBIN, 40));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->endpoints(0).completed(), 20);
  EXPECT_EQ(result->endpoints(0).errors(), 0);
  EXPECT_EQ(result->endpoints(1).completed(), 0);
  EXPECT_EQ(result->endpoints(1).errors(), 20);
  EXPECT_EQ(result->endpoints(1).latency().p50_ms(), 0);  // errors are counted, not timed
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, SeveralLoopsSplitTheEndpointsEvenlyToo) {
  auto servers = Servers({Fast(), Fast()});
  v1::RunStepRequest request = Request(servers, v1::ENDPOINT_POLICY_ROUND_ROBIN, 80);
  request.set_threads(2);
  absl::StatusOr<v1::StepResult> result = RunStep(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(servers[0]->requests_received(), 40);
  EXPECT_EQ(servers[1]->requests_received(), 40);
  ExpectEndpointsSumToTheStep(*result);
}

TEST(StepRunnerEndpointsTest, AConnectionCapSmallerThanTheEndpointsStillServesAll) {
  // One connection for two endpoints: the pool trades it between them.
  auto servers = Servers({Fast(), Fast()});
  v1::RunStepRequest request = Request(servers, v1::ENDPOINT_POLICY_ROUND_ROBIN, 40);
  request.set_max_connections(1);
  absl::StatusOr<v1::StepResult> result = RunStep(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->completed(), 40);
  EXPECT_EQ(servers[0]->requests_received(), 20);
  EXPECT_EQ(servers[1]->requests_received(), 20);
  ExpectEndpointsSumToTheStep(*result);
}

}  // namespace
}  // namespace vanguard::replayer
