#include "replayer/step_config.h"

#include <cmath>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "replayer/protocol_binding.h"

namespace vanguard::replayer {
namespace {

v1::RunStepRequest ValidRequest() {
  v1::RunStepRequest r;
  r.set_target("http://127.0.0.1:8000");
  r.set_model_name("sim");
  r.set_rate_qps(100);
  r.mutable_duration()->set_seconds(5);
  return r;
}

// Expects INVALID_ARGUMENT whose message starts with the field name.
void ExpectInvalid(const v1::RunStepRequest& r, const std::string& field) {
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_FALSE(config.ok()) << "accepted a bad " << field;
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  EXPECT_TRUE(absl::StartsWith(config.status().message(), field + ":")) << config.status();
}

TEST(StepConfigTest, AppliesDefaults) {
  absl::StatusOr<StepConfig> config = ParseStepConfig(ValidRequest());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->target.host, "127.0.0.1");
  EXPECT_EQ(config->target.port, 8000);
  EXPECT_EQ(config->request_timeout, absl::Seconds(10));
  EXPECT_EQ(config->window, absl::Seconds(1));
  EXPECT_EQ(config->max_in_flight, 10'000);
  // 100/s for up to 10 s each: m = 1000 in flight, plus 6 sqrt(1000) = 189.7, plus 32.
  EXPECT_EQ(config->max_connections, 1222);
  EXPECT_EQ(config->schedule, v1::SCHEDULE_CONSTANT);
  EXPECT_EQ(config->request_body, kDefaultKServeV2Body);
  EXPECT_EQ(config->total(), absl::Seconds(5));
}

TEST(StepConfigTest, ConnectionsCoverEveryRequestThatCanBeInFlight) {
  // A model of 1 s latencies at 214/s holds about 214 requests in flight, and up to
  // 214 x 10 s when it falls behind: the cap must not be what limits the load.
  v1::RunStepRequest r = ValidRequest();
  r.set_rate_qps(214);
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_connections, 2450);  // 2140 + 6 sqrt(2140) = 277.6, + 32

  r.set_rate_qps(2);  // a slow step still allows the floor
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, 256);

  r.set_rate_qps(100);  // a ramp allows for its higher end
  r.set_schedule(v1::SCHEDULE_RAMP);
  r.set_ramp_end_qps(400);
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, 4412);  // 4000 + 6 sqrt(4000) = 379.5, + 32

  r.set_max_in_flight(3000);  // never more connections than requests allowed in flight
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, 3000);

  r.set_max_connections(7);  // asked for: as asked
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, 7);

  r = ValidRequest();
  r.set_rate_qps(50'000);  // never past the hard limit
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, 10'000);  // max_in_flight's default comes first
  r.set_max_in_flight(1'000'000);
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_connections, kMaxMaxConnections);
}

TEST(StepConfigTest, RejectsBadRates) {
  for (double rate : {0.0, -1.0, 1e6 + 1, std::nan(""), HUGE_VAL}) {
    v1::RunStepRequest r = ValidRequest();
    r.set_rate_qps(rate);
    ExpectInvalid(r, "rate_qps");
  }
  v1::RunStepRequest r = ValidRequest();
  r.set_rate_qps(1e6);
  EXPECT_TRUE(ParseStepConfig(r).ok());
}

TEST(StepConfigTest, RejectsMissingOrNegativeDurations) {
  v1::RunStepRequest r = ValidRequest();
  r.clear_duration();
  ExpectInvalid(r, "duration");
  r = ValidRequest();
  r.mutable_duration()->set_seconds(-1);
  ExpectInvalid(r, "duration");
  r = ValidRequest();
  r.mutable_duration()->set_seconds(25 * 3600);
  ExpectInvalid(r, "duration");
  r = ValidRequest();
  r.mutable_warmup()->set_nanos(-5);
  ExpectInvalid(r, "warmup");
  r = ValidRequest();
  r.mutable_request_timeout()->set_seconds(3600);
  ExpectInvalid(r, "request_timeout");
  r = ValidRequest();
  r.mutable_window()->set_nanos(1'000'000);  // 1 ms
  ExpectInvalid(r, "window");
}

TEST(StepConfigTest, RejectsTargetsThatAreNotHttpUrlsWithHostAndPort) {
  for (const char* target : {"", "127.0.0.1:8000", "https://127.0.0.1:8000", "http://127.0.0.1",
                             "http://:8000", "http://host:0", "http://host:99999",
                             "http://host:80x", "http://ho st:80", "http://[::1"}) {
    v1::RunStepRequest r = ValidRequest();
    r.set_target(target);
    ExpectInvalid(r, "target");
  }
}

TEST(StepConfigTest, ParsesSeveralTargetsAndResolvesTheirPolicy) {
  v1::RunStepRequest r = ValidRequest();
  r.clear_target();
  r.add_targets("http://127.0.0.1:8001");
  r.add_targets("http://127.0.0.2:8002/v1");
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->endpoints.size(), 2u);
  EXPECT_EQ(config->endpoints[1].host, "127.0.0.2");
  EXPECT_EQ(config->endpoints[1].path_prefix, "/v1");
  EXPECT_EQ(config->endpoint_urls[0], "http://127.0.0.1:8001");
  EXPECT_EQ(config->target_url, "http://127.0.0.1:8001");
  EXPECT_EQ(config->endpoint_policy, v1::ENDPOINT_POLICY_ROUND_ROBIN);

  r.set_endpoint_policy(v1::ENDPOINT_POLICY_SINGLE);  // the first is the router
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->endpoints.size(), 1u);
  EXPECT_EQ(config->endpoint_policy, v1::ENDPOINT_POLICY_SINGLE);

  absl::StatusOr<StepConfig> single = ParseStepConfig(ValidRequest());
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->endpoints.size(), 1u);
  EXPECT_EQ(single->endpoint_policy, v1::ENDPOINT_POLICY_SINGLE);
}

TEST(StepConfigTest, RejectsBadTargetsNamingTheOne) {
  v1::RunStepRequest r = ValidRequest();
  r.add_targets("http://127.0.0.1:8000");
  r.add_targets("ftp://127.0.0.1:8001");
  ExpectInvalid(r, "targets[1]");
  r.set_targets(1, "http://127.0.0.1:8001");
  r.set_target("http://127.0.0.1:9999");  // disagrees with targets[0]
  ExpectInvalid(r, "target");
  r.set_target("http://127.0.0.1:8000");
  r.set_endpoint_policy(static_cast<v1::EndpointPolicy>(99));
  ExpectInvalid(r, "endpoint_policy");
  r.set_endpoint_policy(v1::ENDPOINT_POLICY_P2C);
  EXPECT_TRUE(ParseStepConfig(r).ok());
}

TEST(StepConfigTest, AcceptsIpv6AndAPathPrefix) {
  absl::StatusOr<HttpTarget> t = ParseHttpTarget("http://[::1]:9000/serving/", "target");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->port, 9000);
  EXPECT_EQ(t->path_prefix, "/serving");
}

TEST(StepConfigTest, RejectsEmptyOrUnsafeModelNames) {
  v1::RunStepRequest r = ValidRequest();
  r.set_model_name("");
  ExpectInvalid(r, "model_name");
  r.set_model_name("a/b");
  ExpectInvalid(r, "model_name");
  r.set_model_name("sim\r\nX-Injected: 1");
  ExpectInvalid(r, "model_name");
}

TEST(StepConfigTest, RejectsBadLimitsAndEnums) {
  v1::RunStepRequest r = ValidRequest();
  r.set_max_connections(-1);
  ExpectInvalid(r, "max_connections");
  r = ValidRequest();
  r.set_max_in_flight(-3);
  ExpectInvalid(r, "max_in_flight");
  r = ValidRequest();
  r.set_schedule(static_cast<v1::Schedule>(42));
  ExpectInvalid(r, "schedule");
  r = ValidRequest();
  r.set_protocol(static_cast<v1::Protocol>(42));
  ExpectInvalid(r, "protocol");
}

TEST(StepConfigTest, EveryProtocolBindsToASourceAndItsReader) {
  v1::RunStepRequest r = ValidRequest();
  r.set_protocol(v1::PROTOCOL_OPENAI_CHAT);
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ProtocolBinding> chat = BindProtocol(*config);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_TRUE(chat->handlers);  // SSE streams are read, not just their status
  EXPECT_FALSE(chat->transport);
  auto source = chat->sources(0, 1);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  ASSERT_TRUE((*source)->Next(&request).ok());
  EXPECT_EQ(request.path, "/v1/chat/completions");

  r.set_protocol(v1::PROTOCOL_KSERVE_V2_GRPC);
  config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  absl::StatusOr<ProtocolBinding> grpc = BindProtocol(*config);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  EXPECT_TRUE(grpc->transport);  // gRPC has its own transport
}

TEST(StepConfigTest, AMissingTraceIsRejectedBeforeTheStepNamingTracePath) {
  v1::RunStepRequest r = ValidRequest();
  r.set_trace_path("/nonexistent/trace.vtr");
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  absl::StatusOr<ProtocolBinding> binding = BindProtocol(*config);
  EXPECT_EQ(binding.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(binding.status().message(), "trace_path")) << binding.status();
}

TEST(StepConfigTest, BindsAKServeV2InferRequest) {
  v1::RunStepRequest r = ValidRequest();
  r.set_target("http://localhost:8000/prefix");
  r.set_request_body(R"({"inputs":[]})");
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->target.path_prefix, "/prefix");
  absl::StatusOr<ProtocolBinding> binding = BindProtocol(*config);
  ASSERT_TRUE(binding.ok()) << binding.status();
  auto source = binding->sources(0, 1);
  ASSERT_TRUE(source.ok());
  OutgoingRequest request;
  ASSERT_TRUE((*source)->Next(&request).ok());
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/v2/models/sim/infer");
  EXPECT_EQ(request.headers, "Content-Type: application/json\r\n");
  EXPECT_EQ(request.body, R"({"inputs":[]})");
}

TEST(StepConfigTest, PlainHttpWithoutABodyIsAGetAndNeedsNoModel) {
  v1::RunStepRequest r = ValidRequest();
  r.set_protocol(v1::PROTOCOL_HTTP);
  r.clear_model_name();
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<ProtocolBinding> binding = BindProtocol(*config);
  ASSERT_TRUE(binding.ok());
  auto source = binding->sources(0, 1);
  OutgoingRequest request;
  ASSERT_TRUE((*source)->Next(&request).ok());
  EXPECT_EQ(request.method, "GET");
  EXPECT_TRUE(request.body.empty());
}

TEST(StepConfigTest, ClosedLoopTakesConcurrencyInsteadOfARate) {
  v1::RunStepRequest r = ValidRequest();
  r.set_concurrency(8);
  ExpectInvalid(r, "rate_qps");  // a rate and a concurrency exclude each other
  r.set_rate_qps(0);
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->closed_loop());
  r.set_concurrency(-1);
  ExpectInvalid(r, "concurrency");
}

TEST(StepConfigTest, RampNeedsAnEndRateAndTraceNeedsAFile) {
  v1::RunStepRequest r = ValidRequest();
  r.set_schedule(v1::SCHEDULE_RAMP);
  ExpectInvalid(r, "ramp_end_qps");
  r.set_ramp_end_qps(400);
  EXPECT_TRUE(ParseStepConfig(r).ok());
  r.set_schedule(v1::SCHEDULE_TRACE);
  ExpectInvalid(r, "trace_path");
}

TEST(StepConfigTest, AShardMustBeOneOfTheShardCount) {
  v1::RunStepRequest r = ValidRequest();
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->shard, 0);
  EXPECT_EQ(config->shard_count, 1);
  r.set_shard_count(3);
  r.set_shard(3);
  ExpectInvalid(r, "shard");
  r.set_shard(2);
  EXPECT_TRUE(ParseStepConfig(r).ok());
  r.set_shard_count(-1);
  ExpectInvalid(r, "shard_count");
}

TEST(StepConfigTest, ThreadsAreBoundedAndDefaultToOne) {
  v1::RunStepRequest r = ValidRequest();
  absl::StatusOr<StepConfig> config = ParseStepConfig(r);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->threads, 1);
  r.set_threads(kMaxThreads + 1);
  ExpectInvalid(r, "threads");
}

}  // namespace
}  // namespace vanguard::replayer
