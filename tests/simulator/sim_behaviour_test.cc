// End-to-end tests of the simulated predictor's model behaviour over real loopback sockets:
// saturation throughput of a batching profile, warmup, shedding (HTTP 503 and gRPC
// UNAVAILABLE), OpenAI-compatible SSE streams checked by a strict parser, KServe v2 gRPC,
// admin fault hooks, and the discrete-event ground truth against a real open-loop run.
// Its clients are its own (sim_load_client, Beast, the generated gRPC stub), never the
// replayer's.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/read.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "inference/grpc_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/simulator/ground_truth.h"
#include "tests/simulator/profile.h"
#include "tests/simulator/sim_load_client.h"
#include "tests/testing/subprocess.h"

namespace vanguard::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using ::testing::HasSubstr;
using ::vanguard::testing::Subprocess;
using HttpConnection = SimHttpConnection;
using Reply = SimHttpReply;

constexpr char kBinary[] = "vanguard-sim-predictor";
constexpr char kInferBody[] =
    R"({"inputs":[{"name":"input0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})";

std::unique_ptr<Subprocess> StartSim(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"--listen=127.0.0.1:0"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto sim = Subprocess::StartServer(kBinary, args);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return sim.ok() ? std::move(*sim) : nullptr;
}

double MetricValue(const std::string& text, const std::string& name_and_labels) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.substr(0, name_and_labels.size()) == name_and_labels &&
        line.size() > name_and_labels.size() && line[name_and_labels.size()] == ' ') {
      double value = 0;
      if (absl::SimpleAtod(line.substr(name_and_labels.size() + 1), &value)) return value;
    }
  }
  ADD_FAILURE() << "no metric " << name_and_labels;
  return -1;
}

const char kModelLabels[] = "{model=\"sim\",version=\"1\"}";

TEST(SimBehaviourTest, SaturationThroughputOfABatchingProfileIsWithin3PercentOfItsFigure) {
  // The vision profile without its warmup and stalls (their randomness would need a longer
  // run): 2 slots, batches of up to 8 at 6 + 2 * 8 ms with 10% jitter = 727.3 rps.
  auto sim = StartSim({"--profile=vision", "--warmup_s=0", "--stall_rate_per_s=0"});
  ASSERT_NE(sim, nullptr);
  EXPECT_THAT(sim->Stderr(), HasSubstr("profile=vision true_capacity_rps=727.273"));
  SimLoadClient client(sim->port(), InferRequestBytes("sim"));
  int64_t errors = 0;
  const double measured =
      client.RunClosedLoop(/*connections=*/48, absl::Milliseconds(500), absl::Seconds(3), &errors);
  std::cout << "vision saturation: measured " << measured << " rps, profile 727.273\n";
  EXPECT_EQ(errors, 0);
  EXPECT_NEAR(measured, 727.273, 0.03 * 727.273);
}

TEST(SimBehaviourTest, WarmupIsVisibleThenGone) {
  // 1 slot of 5 ms (200 rps) whose service starts 6x slower and is warm after 1.5 s.
  auto sim = StartSim({"--slots=1", "--service_ms=5", "--warmup_factor=6", "--warmup_s=1.5"});
  ASSERT_NE(sim, nullptr);
  SimLoadClient client(sim->port(), InferRequestBytes("sim"));
  int64_t errors = 0;
  const double cold =
      client.RunClosedLoop(4, absl::ZeroDuration(), absl::Milliseconds(400), &errors);
  HttpConnection scraper(sim->port());
  const double factor_early = MetricValue(scraper.Get("/metrics").body,
                                          absl::StrCat("vanguard_sim_warmup_factor", kModelLabels));
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  const double warm = client.RunClosedLoop(4, absl::ZeroDuration(), absl::Seconds(1), &errors);
  const double factor_late = MetricValue(scraper.Get("/metrics").body,
                                         absl::StrCat("vanguard_sim_warmup_factor", kModelLabels));
  std::cout << "cold " << cold << " rps, warm " << warm << " rps\n";
  EXPECT_EQ(errors, 0);
  // Over the first 0.4 s the service time is 4.4x..6x the warm one.
  EXPECT_LT(cold, 0.4 * warm);
  EXPECT_NEAR(warm, 200, 0.05 * 200);
  EXPECT_GT(factor_early, 2.0);
  EXPECT_DOUBLE_EQ(factor_late, 1.0);
}

TEST(SimBehaviourTest, ShedsBeyondTheQueueLimitWhileServingAtCapacity) {
  // 400 rps of capacity, 8 waiting places, offered 800 rps open loop: about half is shed
  // with 503 at once, and what is served is served at capacity.
  auto sim = StartSim({"--slots=2", "--service_ms=5", "--max_queue=8"});
  ASSERT_NE(sim, nullptr);
  SimLoadClient client(sim->port(), InferRequestBytes("sim"));
  SimLoadClient::Result r =
      client.RunOpenLoop(800, absl::Milliseconds(300), absl::Seconds(2), /*seed=*/5);
  std::cout << "offered 800 rps: ok " << r.ok << " shed " << r.shed << " other " << r.other_errors
            << " of " << r.scheduled << "\n";
  EXPECT_EQ(r.other_errors, 0);
  EXPECT_EQ(r.ok + r.shed, r.scheduled);
  EXPECT_NEAR(r.ok / 2.0, 400, 0.06 * 400);
  EXPECT_NEAR(static_cast<double>(r.shed) / r.scheduled, 0.5, 0.07);
  // Queueing is bounded by the limit: at most 8 waiting + 2 in service, 5 ms each.
  EXPECT_LT(r.LatencyPercentileMs(50), 40);

  HttpConnection scraper(sim->port());
  const std::string metrics = scraper.Get("/metrics").body;
  EXPECT_GE(MetricValue(metrics, absl::StrCat("nv_inference_request_failure", kModelLabels)),
            r.shed);
}

// A strict Server-Sent Events reader for what an OpenAI-compatible server streams: every
// event is exactly one "data: <payload>" line ended by a blank line ("\n\n"); no other
// fields, no comments, no CR; the last event is "[DONE]" and nothing follows it. Returns the
// payloads before [DONE], or an error.
absl::StatusOr<std::vector<json>> ParseStrictSse(const std::string& body) {
  std::vector<json> events;
  size_t pos = 0;
  bool done = false;
  while (pos < body.size()) {
    if (done) return absl::InvalidArgumentError("bytes after data: [DONE]");
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) return absl::InvalidArgumentError("event not ended by \\n\\n");
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.find('\n') != std::string::npos || event.find('\r') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("event with more than one line: ", event));
    }
    if (event.rfind("data: ", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("not a data line: ", event));
    }
    const std::string payload = event.substr(6);
    if (payload == "[DONE]") {
      done = true;
      continue;
    }
    json parsed = json::parse(payload, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("payload is not a JSON object: ", payload));
    }
    events.push_back(std::move(parsed));
  }
  if (!done) return absl::InvalidArgumentError("stream did not end with data: [DONE]");
  return events;
}

TEST(SimBehaviourTest, StrictSseParserRejectsMalformedStreams) {
  EXPECT_TRUE(ParseStrictSse("data: {\"a\":1}\n\ndata: [DONE]\n\n").ok());
  EXPECT_FALSE(ParseStrictSse("data: {\"a\":1}\n\n").ok());                      // no [DONE]
  EXPECT_FALSE(ParseStrictSse("data: {\"a\":1}\ndata: [DONE]\n\n").ok());        // one \n
  EXPECT_FALSE(ParseStrictSse("data:{\"a\":1}\n\ndata: [DONE]\n\n").ok());       // no space
  EXPECT_FALSE(ParseStrictSse("data: {\"a\":1}\r\n\r\ndata: [DONE]\n\n").ok());  // CR
  EXPECT_FALSE(ParseStrictSse("data: [DONE]\n\ndata: {}\n\n").ok());             // after DONE
  EXPECT_FALSE(ParseStrictSse("event: x\n\ndata: [DONE]\n\n").ok());
  EXPECT_FALSE(ParseStrictSse("data: nope\n\ndata: [DONE]\n\n").ok());
}

// Checks an OpenAI completion stream's events; returns the concatenated text.
std::string CheckCompletionEvents(const std::vector<json>& events, bool chat, int tokens,
                                  const std::string& finish_reason) {
  EXPECT_EQ(static_cast<int>(events.size()), tokens);
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    EXPECT_EQ(e["object"], chat ? "chat.completion.chunk" : "text_completion");
    EXPECT_EQ(e["id"], events[0]["id"]);
    EXPECT_TRUE(e["created"].is_number_integer());
    EXPECT_EQ(e["model"], "sim");
    EXPECT_EQ(e["choices"].size(), 1u);
    const json& choice = e["choices"][0];
    EXPECT_EQ(choice["index"], 0);
    if (chat) {
      EXPECT_TRUE(choice["delta"]["content"].is_string());
      EXPECT_EQ(choice["delta"].contains("role"), i == 0);
      text += choice["delta"]["content"].get<std::string>();
    } else {
      EXPECT_TRUE(choice["text"].is_string());
      text += choice["text"].get<std::string>();
    }
    if (i + 1 < events.size()) {
      EXPECT_TRUE(choice["finish_reason"].is_null()) << i;
    } else {
      EXPECT_EQ(choice["finish_reason"], finish_reason);
    }
  }
  return text;
}

TEST(SimBehaviourTest, StreamsCompletionsInAFormatAStrictSseParserAccepts) {
  auto sim = StartSim({"--profile=llm", "--warmup_s=0", "--output_tokens_distribution=constant",
                       "--output_tokens_mean=12"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  // Text completion, the model's own length (12 tokens): finish_reason "stop".
  Reply completion =
      connection.Post("/v1/completions", R"({"model":"sim","prompt":"Hello","stream":true})");
  ASSERT_EQ(completion.status, 200) << completion.body;
  EXPECT_EQ(completion.content_type, "text/event-stream");
  absl::StatusOr<std::vector<json>> events = ParseStrictSse(completion.body);
  ASSERT_TRUE(events.ok()) << events.status() << "\n" << completion.body;
  const std::string text = CheckCompletionEvents(*events, /*chat=*/false, 12, "stop");
  // Chat on the same keep-alive connection, capped by max_tokens: finish_reason "length",
  // then a usage event when asked for.
  Reply chat = connection.Post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"max_tokens":5,)"
      R"("stream_options":{"include_usage":true}})");
  ASSERT_EQ(chat.status, 200) << chat.body;
  events = ParseStrictSse(chat.body);
  ASSERT_TRUE(events.ok()) << events.status() << "\n" << chat.body;
  ASSERT_EQ(events->size(), 6u);
  const json usage = events->back();
  events->pop_back();
  CheckCompletionEvents(*events, /*chat=*/true, 5, "length");
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  // Not streamed: one JSON body with the same text.
  Reply whole = connection.Post("/v1/completions", R"({"prompt":"Hello"})");
  ASSERT_EQ(whole.status, 200);
  const json body = json::parse(whole.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], text);
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
  // Bad requests get OpenAI-shaped errors.
  Reply bad = connection.Post("/v1/chat/completions", R"({"messages":[]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(json::parse(bad.body)["error"]["message"].get<std::string>(), HasSubstr("messages"));
  EXPECT_EQ(connection.Post("/v1/completions", R"({"model":"gpt","prompt":"x"})").status, 404);
  // KServe v2 infer reaches the generative model too (answered after its last token).
  EXPECT_EQ(connection.Post("/v2/models/sim/infer", kInferBody).status, 200);
}

TEST(SimBehaviourTest, TokensArriveOverTimeNotAllAtTheEnd) {
  // 40 tokens at >= 8 ms per iteration: the stream spans >= 320 ms.
  auto sim = StartSim({"--profile=llm", "--warmup_s=0", "--output_tokens_distribution=constant",
                       "--output_tokens_mean=40", "--jitter_sigma=0"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  const std::string body = R"({"prompt":"x","stream":true})";
  const std::string request = absl::StrCat(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: ",
      body.size(), "\r\n\r\n", body);
  const auto start = std::chrono::steady_clock::now();
  asio::write(connection.socket(), asio::buffer(request));
  std::string received;
  std::optional<std::chrono::steady_clock::time_point> first_data;
  char chunk[4096];
  while (received.find("data: [DONE]") == std::string::npos) {
    const size_t n = connection.socket().read_some(asio::buffer(chunk));
    received.append(chunk, n);
    if (!first_data && received.find("data: {") != std::string::npos) {
      first_data = std::chrono::steady_clock::now();
    }
  }
  const auto done = std::chrono::steady_clock::now();
  ASSERT_TRUE(first_data.has_value());
  const double first_ms = std::chrono::duration<double, std::milli>(*first_data - start).count();
  const double done_ms = std::chrono::duration<double, std::milli>(done - start).count();
  std::cout << "first token after " << first_ms << " ms, last after " << done_ms << " ms\n";
  EXPECT_GE(done_ms, 300);
  EXPECT_LT(first_ms, done_ms - 200);
}

TEST(SimBehaviourTest, GenerativeMetricsShowWaitingRunningAndKvCache) {
  // One engine of 2 sequences, long outputs: 5 concurrent requests leave 3 waiting.
  auto sim = StartSim({"--profile=llm", "--warmup_s=0", "--slots=1", "--max_seqs=2",
                       "--output_tokens_distribution=constant", "--output_tokens_mean=200",
                       "--token_base_ms=5"});
  ASSERT_NE(sim, nullptr);
  std::vector<std::thread> clients;
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back([&] {
      HttpConnection connection(sim->port());
      EXPECT_EQ(connection.Post("/v1/completions", R"({"prompt":"x"})").status, 200);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  HttpConnection scraper(sim->port());
  const std::string metrics = scraper.Get("/metrics").body;
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(MetricValue(metrics, "vllm:num_requests_running{model_name=\"sim\"}"), 2);
  EXPECT_EQ(MetricValue(metrics, "vllm:num_requests_waiting{model_name=\"sim\"}"), 3);
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("nv_inference_pending_request_count", kModelLabels)),
            3);
  EXPECT_GT(MetricValue(metrics, "vllm:kv_cache_usage_perc{model_name=\"sim\"}"), 0.0);
  EXPECT_DOUBLE_EQ(MetricValue(metrics, "nv_gpu_utilization{gpu_uuid=\"GPU-vanguard-sim-0\"}"),
                   1.0);
}

TEST(SimBehaviourTest, BatchProfileAnswersCompletionsWith404) {
  auto sim = StartSim({});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  Reply reply = connection.Post("/v1/completions", R"({"prompt":"x"})");
  EXPECT_EQ(reply.status, 404);
  EXPECT_THAT(reply.body, HasSubstr("generative"));
}

// The address of the "GRPC_LISTENING host:port" line the simulator prints after LISTENING.
std::string GrpcAddress(const Subprocess& sim) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (absl::string_view line : absl::StrSplit(sim.Stdout(), '\n')) {
      if (absl::ConsumePrefix(&line, "GRPC_LISTENING ")) return std::string(line);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

inference::ModelInferRequest GrpcInferRequest(const std::string& model) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  request.set_id("g1");
  auto* input = request.add_inputs();
  input->set_name("input0");
  input->set_datatype("FP32");
  input->add_shape(1);
  input->add_shape(3);
  for (float v : {1.5f, 2.5f, 3.5f}) input->mutable_contents()->add_fp32_contents(v);
  return request;
}

TEST(SimBehaviourTest, ServesKServeV2OverGrpc) {
  auto sim = StartSim({"--grpc_listen=127.0.0.1:0", "--slots=2", "--service_ms=2"});
  ASSERT_NE(sim, nullptr);
  const std::string address = GrpcAddress(*sim);
  ASSERT_FALSE(address.empty()) << sim->Stdout();
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext context;
    inference::ServerLiveResponse live;
    ASSERT_TRUE(stub->ServerLive(&context, {}, &live).ok());
    EXPECT_TRUE(live.live());
  }
  {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name("sim");
    inference::ModelMetadataResponse metadata;
    ASSERT_TRUE(stub->ModelMetadata(&context, request, &metadata).ok());
    EXPECT_EQ(metadata.name(), "sim");
    EXPECT_EQ(metadata.versions(0), "1");
  }
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    grpc::Status status = stub->ModelInfer(&context, GrpcInferRequest("sim"), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.model_name(), "sim");
    EXPECT_EQ(response.id(), "g1");
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_EQ(response.outputs(0).name(), "output0");
    EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(1, 3));
    EXPECT_THAT(response.outputs(0).contents().fp32_contents(),
                ::testing::ElementsAre(1.5f, 2.5f, 3.5f));
  }
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  EXPECT_EQ(stub->ModelInfer(&context, GrpcInferRequest("nope"), &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // gRPC and REST requests reach the same model.
  HttpConnection scraper(sim->port());
  EXPECT_EQ(MetricValue(scraper.Get("/metrics").body,
                        absl::StrCat("nv_inference_request_success", kModelLabels)),
            3);
}

// A KServe v2 REST body whose one FP32 input holds `elements` values.
std::string InferBodyWithElements(int elements) {
  std::string data;
  for (int i = 0; i < elements; ++i) absl::StrAppend(&data, i == 0 ? "" : ",", i);
  return absl::StrCat(R"({"inputs":[{"name":"input0","shape":[1,)", elements,
                      R"(],"datatype":"FP32","data":[)", data, "]}]}");
}

// The model's own account of one request's service: the growth of its cumulative compute
// time (virtual, so exact) over that request.
double ComputeUsOf(HttpConnection& connection, const std::string& body) {
  const std::string name = absl::StrCat("nv_inference_compute_infer_duration_us", kModelLabels);
  const double before = MetricValue(connection.Get("/metrics").body, name);
  EXPECT_EQ(connection.Post("/v2/models/sim/infer", body).status, 200);
  return MetricValue(connection.Get("/metrics").body, name) - before;
}

TEST(SimBehaviourTest, ServiceTimeFollowsTheElementsARequestCarries) {
  // One executor of 3 ms per nominal request of 4 elements, no batching or noise.
  const std::string path = ::testing::TempDir() + "/content_cost_profile.json";
  {
    std::ofstream out(path);
    out << R"({"name": "sized", "slots": 1, "base_ms": 3, "nominal_elements": 4})";
  }
  auto sim = StartSim({"--profile=" + path, "--grpc_listen=127.0.0.1:0"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(4)), 3000);
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(8)), 6000);  // twice the elements
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(2)), 1500);
  // Every input counts: 4 + 4 elements.
  EXPECT_EQ(ComputeUsOf(connection,
                        R"({"inputs":[{"name":"a","shape":[4],"datatype":"FP32","data":[1,2,3,4]},)"
                        R"({"name":"b","shape":[2,2],"datatype":"INT32","data":[[1,2],[3,4]]}]})"),
            6000);
  // Clamped at 16x the nominal (and 1/16), so one huge request cannot hold the model forever.
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(100)), 48000);

  // gRPC requests are costed by their shapes the same way: [2, 4] is 8 elements.
  const std::string address = GrpcAddress(*sim);
  ASSERT_FALSE(address.empty()) << sim->Stdout();
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  inference::ModelInferRequest request = GrpcInferRequest("sim");
  request.mutable_inputs(0)->clear_shape();
  request.mutable_inputs(0)->add_shape(2);
  request.mutable_inputs(0)->add_shape(4);
  const std::string name = absl::StrCat("nv_inference_compute_infer_duration_us", kModelLabels);
  const double before = MetricValue(connection.Get("/metrics").body, name);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  ASSERT_TRUE(stub->ModelInfer(&context, request, &response).ok());
  EXPECT_EQ(MetricValue(connection.Get("/metrics").body, name) - before, 6000);
}

TEST(SimBehaviourTest, WithoutNominalElementsEveryRequestCostsTheNominal) {
  auto sim = StartSim({"--slots=1", "--service_ms=3"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(4)), 3000);
  EXPECT_EQ(ComputeUsOf(connection, InferBodyWithElements(64)), 3000);
  // The flag sets it too.
  auto sized = StartSim({"--slots=1", "--service_ms=3", "--nominal_elements=16"});
  ASSERT_NE(sized, nullptr);
  HttpConnection sized_connection(sized->port());
  EXPECT_EQ(ComputeUsOf(sized_connection, InferBodyWithElements(64)), 12000);
}

TEST(SimBehaviourTest, GrpcShedsBeyondTheQueueLimitWithUnavailable) {
  auto sim =
      StartSim({"--grpc_listen=127.0.0.1:0", "--slots=1", "--service_ms=300", "--max_queue=1"});
  ASSERT_NE(sim, nullptr);
  auto channel = grpc::CreateChannel(GrpcAddress(*sim), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 6; ++i) {
    callers.emplace_back([&] {
      grpc::ClientContext context;
      inference::ModelInferResponse response;
      grpc::Status status = stub->ModelInfer(&context, GrpcInferRequest("sim"), &response);
      if (status.ok()) {
        ++ok;
      } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        ++unavailable;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(ok.load(), 2);  // one in service + one waiting per 300 ms round
  EXPECT_GE(unavailable.load(), 1);
  EXPECT_EQ(ok + unavailable, 6);
  // Shutdown with gRPC serving is clean.
  const int status = sim->Terminate();
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SimBehaviourTest, SigtermAnswersGrpcCallsStillWithTheModel) {
  auto sim = StartSim({"--grpc_listen=127.0.0.1:0", "--slots=1", "--service_ms=20000"});
  ASSERT_NE(sim, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(GrpcAddress(*sim), grpc::InsecureChannelCredentials()));
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
    inference::ModelInferResponse response;
    status = stub->ModelInfer(&context, GrpcInferRequest("sim"), &response);
  });
  HttpConnection scraper(sim->port());
  for (int i = 0; i < 200; ++i) {  // until the call is in service
    if (MetricValue(scraper.Get("/metrics").body,
                    "vllm:num_requests_running{model_name=\"sim\"}") == 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int exit_status = sim->Terminate();
  caller.join();
  EXPECT_TRUE(WIFEXITED(exit_status)) << exit_status;
  EXPECT_EQ(WEXITSTATUS(exit_status), 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST(SimBehaviourTest, AdminFaultHooks) {
  auto sim = StartSim({"--slots=2", "--service_ms=1"});
  ASSERT_NE(sim, nullptr);
  HttpConnection admin(sim->port());
  HttpConnection user(sim->port());
  ASSERT_EQ(user.Post("/v2/models/sim/infer", kInferBody).status, 200);

  // fail_next: exactly the next N requests fail with 500.
  ASSERT_EQ(admin.Post("/admin/fail_next?n=2").status, 200);
  EXPECT_EQ(user.Post("/v2/models/sim/infer", kInferBody).status, 500);
  EXPECT_EQ(user.Post("/v2/models/sim/infer", kInferBody).status, 500);
  EXPECT_EQ(user.Post("/v2/models/sim/infer", kInferBody).status, 200);
  EXPECT_EQ(MetricValue(admin.Get("/metrics").body,
                        absl::StrCat("nv_inference_request_failure", kModelLabels)),
            2);

  // stall: every slot stops; a request sent now waits for the stall to end.
  ASSERT_EQ(admin.Post("/admin/stall?ms=1000").status, 200);
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(user.Post("/v2/models/sim/infer", kInferBody).status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(500));

  // drop_connections: every other connection is closed by the server.
  Reply dropped = admin.Post("/admin/drop_connections");
  ASSERT_EQ(dropped.status, 200);
  EXPECT_GE(json::parse(dropped.body)["dropped"].get<int>(), 1);
  EXPECT_ANY_THROW(user.Post("/v2/models/sim/infer", kInferBody));
  EXPECT_EQ(admin.Get("/v2/health/ready").status, 200);  // the caller's own survives

  // down: a lost replica closes every request's connection unanswered (admin excepted) until
  // up or the time runs out.
  HttpConnection before_down(sim->port());
  ASSERT_EQ(before_down.Post("/v2/models/sim/infer", kInferBody).status, 200);
  Reply down = admin.Post("/admin/down?seconds=600");
  ASSERT_EQ(down.status, 200);
  EXPECT_THAT(down.body, HasSubstr("\"down_seconds\":600"));
  EXPECT_ANY_THROW(before_down.Post("/v2/models/sim/infer", kInferBody));  // dropped
  {
    HttpConnection during(sim->port());
    EXPECT_ANY_THROW(during.Post("/v2/models/sim/infer", kInferBody));
  }
  {
    HttpConnection metrics(sim->port());
    EXPECT_ANY_THROW(metrics.Get("/metrics"));
  }
  EXPECT_EQ(admin.Post("/admin/down?seconds=-1").status, 400);
  ASSERT_EQ(admin.Post("/admin/up").status, 200);
  HttpConnection after_up(sim->port());
  EXPECT_EQ(after_up.Post("/v2/models/sim/infer", kInferBody).status, 200);
  ASSERT_EQ(admin.Post("/admin/down?seconds=0.2").status, 200);
  {
    HttpConnection during(sim->port());
    EXPECT_ANY_THROW(during.Post("/v2/models/sim/infer", kInferBody));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the down time runs out
  HttpConnection after_time(sim->port());
  EXPECT_EQ(after_time.Post("/v2/models/sim/infer", kInferBody).status, 200);

  // restart: a new version, cold (the warmup gauge shows the factor) and, with down_s, down
  // first; the model keeps serving in place without it.
  HttpConnection before_restart(sim->port());
  ASSERT_EQ(before_restart.Post("/v2/models/sim/infer", kInferBody).status, 200);
  Reply restart = admin.Post("/admin/restart?warmup_s=600&factor=4");
  ASSERT_EQ(restart.status, 200) << restart.body;
  EXPECT_EQ(json::parse(restart.body)["factor"].get<double>(), 4);
  EXPECT_EQ(before_restart.Post("/v2/models/sim/infer", kInferBody).status, 200);  // kept
  const double cold = MetricValue(admin.Get("/metrics").body,
                                  absl::StrCat("vanguard_sim_warmup_factor", kModelLabels));
  EXPECT_GT(cold, 3.9);
  EXPECT_LE(cold, 4.0);
  ASSERT_EQ(admin.Post("/admin/restart?down_s=600&warmup_s=1&factor=2").status, 200);
  EXPECT_ANY_THROW(before_restart.Post("/v2/models/sim/infer", kInferBody));  // dropped
  {
    HttpConnection during(sim->port());
    EXPECT_ANY_THROW(during.Post("/v2/models/sim/infer", kInferBody));
  }
  ASSERT_EQ(admin.Post("/admin/up").status, 200);
  Reply bad_factor = admin.Post("/admin/restart?factor=0.5");
  EXPECT_EQ(bad_factor.status, 400);
  EXPECT_THAT(bad_factor.body, HasSubstr("factor"));
  EXPECT_THAT(admin.Post("/admin/restart?down_s=x").body, HasSubstr("down_s"));

  // Bad parameters name themselves.
  Reply bad = admin.Post("/admin/stall?ms=-5");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("ms"));
  EXPECT_EQ(admin.Get("/admin/stall?ms=5").status, 405);

  // exit: the process ends with the code asked for.
  EXPECT_EQ(admin.Post("/admin/exit?code=3").status, 200);
  absl::StatusOr<int> code = sim->Wait(absl::Seconds(5));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
}

TEST(SimBehaviourTest, ListProfilesPrintsEveryNamedProfileWithItsSaturation) {
  absl::StatusOr<::vanguard::testing::RunResult> run =
      ::vanguard::testing::RunBinary(kBinary, {"--list_profiles"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->err;
  for (const std::string& name : NamedProfiles()) {
    EXPECT_THAT(run->out, HasSubstr(absl::StrCat("profile=", name,
                                                 " mode=", name == "llm" ? "generative" : "batch",
                                                 " saturation_rps=")));
  }
  EXPECT_THAT(run->out, HasSubstr("profile=embedding mode=batch saturation_rps=5000 "));
}

TEST(SimBehaviourTest, GroundTruthCliPrintsTheLibrarysAnswer) {
  absl::StatusOr<::vanguard::testing::RunResult> run = ::vanguard::testing::RunBinary(
      kBinary,
      {"--profile=nlp_encoder", "--ground_truth", "--slo_p99_ms=80", "--ground_truth_seconds=10"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->err;
  absl::StatusOr<Profile> profile = LoadProfile("nlp_encoder");
  ASSERT_TRUE(profile.ok());
  Slo slo = profile->slo;
  slo.latency_limit = absl::Milliseconds(80);
  GroundTruthOptions options;
  options.measure = absl::Seconds(10);
  absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(*profile, slo, options);
  ASSERT_TRUE(truth.ok());
  double printed = 0;
  for (absl::string_view field : absl::StrSplit(run->out, absl::ByAnyChar(" \n"))) {
    if (absl::ConsumePrefix(&field, "true_capacity_rps=")) {
      ASSERT_TRUE(absl::SimpleAtod(field, &printed)) << run->out;
    }
  }
  EXPECT_NEAR(printed, truth->max_sustainable_rps, 0.001);
  EXPECT_THAT(run->out, HasSubstr("slo_latency_ms=80"));
}

TEST(SimBehaviourTest, GroundTruthAgreesWithARealOpenLoopRunAt90And110Percent) {
  // A profile with a capacity cliff: 2 slots batching up to 4 requests (1000 rps at
  // saturation), 64 waiting places, an SLO of p99 <= 1 s and <= 1% errors.
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/sim_cliff_profile_", getpid(), ".json");
  {
    std::ofstream out(path);
    out << R"({"name": "cliff", "slots": 2, "base_ms": 4, "per_item_ms": 1, "max_batch": 4,
               "max_queue_delay_ms": 1, "max_queue": 64, "jitter_sigma": 0.1,
               "slo": {"latency_percentile": 99, "latency_ms": 1000, "max_error_rate": 0.01}})";
  }
  absl::StatusOr<Profile> profile = LoadProfile(path);
  ASSERT_TRUE(profile.ok()) << profile.status();
  absl::StatusOr<GroundTruth> truth = ComputeGroundTruth(*profile, profile->slo);
  ASSERT_TRUE(truth.ok()) << truth.status();
  std::cout << "ground truth " << truth->max_sustainable_rps << " rps (saturation "
            << truth->saturation_rps << ")\n";

  auto sim = StartSim({absl::StrCat("--profile=", path)});
  ASSERT_NE(sim, nullptr);
  SimLoadClient client(sim->port(), InferRequestBytes("sim"));
  auto meets_slo = [&](const SimLoadClient::Result& r) {
    return r.ErrorRate() <= profile->slo.max_error_rate &&
           r.LatencyPercentileMs(profile->slo.latency_percentile) <=
               absl::ToDoubleMilliseconds(profile->slo.latency_limit);
  };
  const SimLoadClient::Result below = client.RunOpenLoop(
      0.9 * truth->max_sustainable_rps, absl::Milliseconds(500), absl::Seconds(3), /*seed=*/11);
  const SimLoadClient::Result above = client.RunOpenLoop(
      1.1 * truth->max_sustainable_rps, absl::Milliseconds(500), absl::Seconds(3), /*seed=*/12);
  for (const auto* r : {&below, &above}) {
    std::cout << "scheduled " << r->scheduled << " ok " << r->ok << " shed " << r->shed << " other "
              << r->other_errors << " p99 " << r->LatencyPercentileMs(99) << " ms, connections "
              << r->max_connections << "\n";
  }
  EXPECT_TRUE(meets_slo(below));
  EXPECT_FALSE(meets_slo(above));
  // Beyond pass/fail, the simulation predicts what the real run saw: the median latency
  // below the cliff and the shed fraction above it.
  GroundTruthOptions options;
  options.settle = absl::Milliseconds(500);
  options.measure = absl::Seconds(3);
  options.replications = 8;
  Slo median = profile->slo;
  median.latency_percentile = 50;
  auto predicted_below = EvaluateRate(*profile, median, 0.9 * truth->max_sustainable_rps, options);
  auto predicted_above = EvaluateRate(*profile, median, 1.1 * truth->max_sustainable_rps, options);
  ASSERT_TRUE(predicted_below.ok() && predicted_above.ok());
  const double predicted_p50_ms =
      absl::ToDoubleMilliseconds(predicted_below->latency_at_percentile);
  std::cout << "p50 at 90%: real " << below.LatencyPercentileMs(50) << " ms, simulated "
            << predicted_p50_ms << " ms; shed at 110%: real " << above.ErrorRate() << ", simulated "
            << predicted_above->error_rate << "\n";
  EXPECT_GT(below.LatencyPercentileMs(50), 0.6 * predicted_p50_ms);
  EXPECT_LT(below.LatencyPercentileMs(50), 1.6 * predicted_p50_ms + 2);
  EXPECT_NEAR(above.ErrorRate(), predicted_above->error_rate, 0.04);
  // Above the cliff the excess is shed, not failed otherwise.
  EXPECT_EQ(above.other_errors, 0);
  EXPECT_GT(above.shed, 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace vanguard::sim
