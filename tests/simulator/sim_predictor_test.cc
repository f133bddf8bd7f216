// End-to-end tests of the vanguard-sim-predictor binary over real loopback HTTP: protocol
// responses, error codes, the capacity its flags promise, queue-limit shedding and /metrics.
// Uses its own blocking Beast client, not the replayer's, so the two cannot share a bug.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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
    R"({"id":"r1","inputs":[{"name":"input0","shape":[1,4],"datatype":"FP32",)"
    R"("data":[1.5,2,3,4]}]})";

std::unique_ptr<Subprocess> StartSim(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"--listen=127.0.0.1:0"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto sim = Subprocess::StartServer(kBinary, args);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return sim.ok() ? std::move(*sim) : nullptr;
}

// Parses Prometheus text: "name{labels}" (as written) -> value; checks HELP/TYPE pairs.
struct Metrics {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::set<std::string> helps;
};

Metrics ParseMetrics(const std::string& text) {
  Metrics metrics;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.substr(0, 7) == "# HELP ") {
      std::vector<std::string> parts = absl::StrSplit(line.substr(7), absl::MaxSplits(' ', 1));
      metrics.helps.insert(parts[0]);
      continue;
    }
    if (line.substr(0, 7) == "# TYPE ") {
      std::vector<std::string> parts = absl::StrSplit(line.substr(7), ' ');
      EXPECT_EQ(parts.size(), 2u) << line;
      if (parts.size() == 2) metrics.types[parts[0]] = parts[1];
      continue;
    }
    EXPECT_NE(line.front(), '#') << line;
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, absl::string_view::npos) << line;
    if (space == absl::string_view::npos) continue;
    double value = 0;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &value)) << line;
    metrics.samples[std::string(line.substr(0, space))] = value;
  }
  return metrics;
}

std::string ModelLabels(const std::string& model) {
  return absl::StrCat("{model=\"", model, "\",version=\"1\"}");
}

TEST(SimPredictorTest, ServesHealthAndMetadata) {
  auto sim = StartSim({"--model_name=resnet"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());

  for (const char* path : {"/v2/health/live", "/v2/health/ready", "/v2/models/resnet/ready"}) {
    Reply reply = connection.Get(path);
    EXPECT_EQ(reply.status, 200) << path;
    EXPECT_TRUE(reply.keep_alive) << path;
    EXPECT_FALSE(json::parse(reply.body, nullptr, false).is_discarded()) << path;
  }

  Reply server = connection.Get("/v2");
  ASSERT_EQ(server.status, 200);
  EXPECT_EQ(server.content_type, "application/json");
  const json server_metadata = json::parse(server.body);
  EXPECT_EQ(server_metadata["name"], "vanguard-sim-predictor");
  EXPECT_TRUE(server_metadata["version"].is_string());
  EXPECT_TRUE(server_metadata["extensions"].is_array());

  Reply model = connection.Get("/v2/models/resnet");
  ASSERT_EQ(model.status, 200);
  const json model_metadata = json::parse(model.body);
  EXPECT_EQ(model_metadata["name"], "resnet");
  EXPECT_EQ(model_metadata["versions"], json::array({"1"}));
  EXPECT_TRUE(model_metadata["platform"].is_string());
  ASSERT_TRUE(model_metadata["inputs"].is_array());
  ASSERT_FALSE(model_metadata["inputs"].empty());
  EXPECT_TRUE(model_metadata["inputs"][0].contains("datatype"));
  EXPECT_TRUE(model_metadata["inputs"][0].contains("shape"));
  EXPECT_EQ(model_metadata["outputs"][0]["name"], "output0");

  EXPECT_EQ(connection.Get("/v2/models/resnet/versions/1").status, 200);
  EXPECT_EQ(connection.Get("/v2/models/resnet/versions/2").status, 404);
}

TEST(SimPredictorTest, InferReturnsAValidKServeV2Response) {
  auto sim = StartSim({"--slots=2", "--service_ms=1"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  // Several requests over one keep-alive connection.
  for (int i = 0; i < 5; ++i) {
    const std::string body = absl::StrCat(
        R"({"id":"req-)", i, R"(","inputs":[{"name":"input0","shape":[2,2],"datatype":"FP32",)",
        R"("data":[[1.5,2],[3,)", i, "]]}]}");
    Reply reply = connection.Post("/v2/models/sim/infer", body);
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_TRUE(reply.keep_alive);
    const json response = json::parse(reply.body);
    EXPECT_EQ(response["model_name"], "sim");
    EXPECT_EQ(response["id"], absl::StrCat("req-", i));
    ASSERT_EQ(response["outputs"].size(), 1u);
    const json& output = response["outputs"][0];
    EXPECT_EQ(output["name"], "output0");
    EXPECT_EQ(output["datatype"], "FP32");
    EXPECT_EQ(output["shape"], json::array({2, 2}));
    EXPECT_EQ(output["data"], json::array({1.5, 2.0, 3.0, static_cast<double>(i)}));
  }
  // The versioned path serves the same model.
  EXPECT_EQ(connection.Post("/v2/models/sim/versions/1/infer", kInferBody).status, 200);
}

TEST(SimPredictorTest, RejectsBadRequestsWithJsonErrors) {
  auto sim = StartSim({});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  auto expect_error = [](const Reply& reply, int status, const std::string& mentions) {
    EXPECT_EQ(reply.status, status) << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << reply.body;
    ASSERT_TRUE(body["error"].is_string()) << reply.body;
    EXPECT_THAT(body["error"].get<std::string>(), HasSubstr(mentions));
  };
  expect_error(connection.Post("/v2/models/sim/infer", "{not json"), 400, "JSON");
  expect_error(connection.Post("/v2/models/sim/infer", R"({"inputs": 3})"), 400, "inputs");
  expect_error(connection.Post("/v2/models/sim/infer",
                               R"({"inputs":[{"name":"x","shape":[2],"datatype":"FP32",)"
                               R"("data":[1]}]})"),
               400, "inputs[0].data");
  expect_error(connection.Post("/v2/models/nope/infer", kInferBody), 404, "nope");
  expect_error(connection.Get("/v2/models/nope"), 404, "nope");
  expect_error(connection.Get("/v1/models/sim:predict"), 404, "unknown path");
  expect_error(connection.Get("/v2/models/sim/explain"), 404, "unknown path");

  Reply wrong_method = connection.Get("/v2/models/sim/infer");
  expect_error(wrong_method, 405, "POST");
  EXPECT_EQ(wrong_method.allow, "POST");
  expect_error(connection.Post("/v2/health/ready", "{}"), 405, "GET");
  // The connection survives all of that.
  EXPECT_EQ(connection.Post("/v2/models/sim/infer", kInferBody).status, 200);
}

// Closed loop: every connection sends its next request as soon as its reply arrives.
// Returns replies per second counted in a 3 s window that opens after 0.5 s, once the queue
// has filled; counts non-200 replies and I/O failures in *errors.
double MeasureClosedLoopRps(int port, int connections, int64_t* errors) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point window_open = Clock::now() + std::chrono::milliseconds(500);
  const Clock::time_point window_close = window_open + std::chrono::seconds(3);
  std::atomic<int64_t> in_window{0};
  std::atomic<int64_t> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < connections; ++c) {
    clients.emplace_back([&] {
      try {
        HttpConnection connection(port);
        while (true) {
          Reply reply = connection.Post("/v2/models/sim/infer", kInferBody);
          const Clock::time_point now = Clock::now();
          if (reply.status != 200) ++failures;
          if (now >= window_close) break;
          if (now >= window_open) ++in_window;
        }
      } catch (const std::exception& e) {
        ++failures;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  *errors = failures.load();
  return in_window.load() / 3.0;
}

TEST(SimPredictorTest, ClosedLoopThroughputMatchesTrueCapacity) {
  constexpr int kSlots = 4;
  constexpr double kServiceMs = 5;
  constexpr double kTrueCapacity = kSlots * 1000 / kServiceMs;  // 800 rps
  auto sim =
      StartSim({absl::StrCat("--slots=", kSlots), absl::StrCat("--service_ms=", kServiceMs)});
  ASSERT_NE(sim, nullptr);
  EXPECT_THAT(sim->Stderr(), HasSubstr("true_capacity_rps=800"));

  int64_t errors = 0;
  const double measured = MeasureClosedLoopRps(sim->port(), /*connections=*/16, &errors);
  std::cout << "closed-loop throughput: " << measured << " rps (true capacity " << kTrueCapacity
            << ")\n";
  EXPECT_EQ(errors, 0);
  EXPECT_NEAR(measured, kTrueCapacity, 0.05 * kTrueCapacity);
}

TEST(SimPredictorTest, CapacityHoldsWithSeveralEventLoopThreads) {
  // 6 slots of 12.5 ms = 480 rps, served by 2 event-loop threads.
  constexpr double kTrueCapacity = 480;
  auto sim = StartSim({"--slots=6", "--service_ms=12.5", "--threads=2"});
  ASSERT_NE(sim, nullptr);
  EXPECT_THAT(sim->Stderr(), HasSubstr("true_capacity_rps=480"));

  int64_t errors = 0;
  const double measured = MeasureClosedLoopRps(sim->port(), /*connections=*/20, &errors);
  std::cout << "closed-loop throughput, 2 threads: " << measured << " rps (true capacity "
            << kTrueCapacity << ")\n";
  EXPECT_EQ(errors, 0);
  EXPECT_NEAR(measured, kTrueCapacity, 0.05 * kTrueCapacity);
}

TEST(SimPredictorTest, ShedsABurstBeyondSlotsPlusMaxQueueWith503) {
  constexpr int kSlots = 2;
  constexpr int kMaxQueue = 2;
  constexpr int kBurst = 12;
  auto sim = StartSim({absl::StrCat("--slots=", kSlots), "--service_ms=300",
                       absl::StrCat("--max_queue=", kMaxQueue)});
  ASSERT_NE(sim, nullptr);

  // Open every connection first so the burst's requests arrive together.
  std::vector<std::unique_ptr<HttpConnection>> connections;
  for (int i = 0; i < kBurst; ++i) {
    connections.push_back(std::make_unique<HttpConnection>(sim->port()));
  }
  std::vector<Reply> replies(kBurst);
  std::vector<std::thread> senders;
  for (int i = 0; i < kBurst; ++i) {
    senders.emplace_back(
        [&, i] { replies[i] = connections[i]->Post("/v2/models/sim/infer", kInferBody); });
  }
  for (std::thread& sender : senders) sender.join();

  int ok = 0;
  int shed = 0;
  for (const Reply& reply : replies) {
    if (reply.status == 200) ++ok;
    if (reply.status == 503) {
      ++shed;
      EXPECT_TRUE(json::parse(reply.body)["error"].is_string());
    }
  }
  EXPECT_EQ(ok + shed, kBurst);
  EXPECT_GE(ok, kSlots + kMaxQueue);
  EXPECT_GE(shed, 1);
  // Each 300 ms service round admits at most slots + max_queue; a burst spread over less than
  // one round (the usual case by far) sheds exactly the excess.
  EXPECT_LE(ok, 2 * (kSlots + kMaxQueue));

  HttpConnection scraper(sim->port());
  const Metrics metrics = ParseMetrics(scraper.Get("/metrics").body);
  EXPECT_EQ(metrics.samples.at("nv_inference_request_success" + ModelLabels("sim")), ok);
  EXPECT_EQ(metrics.samples.at("nv_inference_request_failure" + ModelLabels("sim")), shed);
}

TEST(SimPredictorTest, MetricsCountWhatWasServed) {
  constexpr int kInfers = 37;
  auto sim = StartSim({"--slots=3", "--service_ms=2"});
  ASSERT_NE(sim, nullptr);
  HttpConnection connection(sim->port());
  for (int i = 0; i < kInfers; ++i) {
    ASSERT_EQ(connection.Post("/v2/models/sim/infer", kInferBody).status, 200);
  }
  ASSERT_EQ(connection.Post("/v2/models/sim/infer", "[]").status, 400);

  Reply reply = connection.Get("/metrics");
  ASSERT_EQ(reply.status, 200);
  EXPECT_THAT(reply.content_type, HasSubstr("text/plain"));
  const Metrics metrics = ParseMetrics(reply.body);
  const std::string labels = ModelLabels("sim");

  const std::map<std::string, std::string> expected_types = {
      {"nv_inference_request_success", "counter"},
      {"nv_inference_request_failure", "counter"},
      {"nv_inference_count", "counter"},
      {"nv_inference_pending_request_count", "gauge"},
      {"nv_inference_queue_duration_us", "counter"},
      {"nv_inference_compute_infer_duration_us", "counter"},
      {"nv_gpu_utilization", "gauge"}};
  for (const auto& [name, type] : expected_types) {
    EXPECT_EQ(metrics.types.count(name) ? metrics.types.at(name) : "<missing>", type) << name;
    EXPECT_TRUE(metrics.helps.count(name)) << name;
  }
  EXPECT_EQ(metrics.samples.at("nv_inference_request_success" + labels), kInfers);
  EXPECT_EQ(metrics.samples.at("nv_inference_count" + labels), kInfers);
  EXPECT_EQ(metrics.samples.at("nv_inference_request_failure" + labels), 1);
  EXPECT_EQ(metrics.samples.at("nv_inference_pending_request_count" + labels), 0);
  // One request at a time: no queueing, and exactly 2 ms of compute each.
  EXPECT_EQ(metrics.samples.at("nv_inference_queue_duration_us" + labels), 0);
  EXPECT_EQ(metrics.samples.at("nv_inference_compute_infer_duration_us" + labels), kInfers * 2000);
  const double utilization =
      metrics.samples.at("nv_gpu_utilization{gpu_uuid=\"GPU-vanguard-sim-0\"}");
  EXPECT_GE(utilization, 0.0);
  EXPECT_LE(utilization, 1.0);
}

TEST(SimPredictorTest, MetricsShowQueueAndUtilizationUnderLoad) {
  // 2 slots, 12 clients sending one request each, 200 ms per request: six rounds finishing
  // at ~200, 400, ..., 1200 ms. Scraped at ~700 ms (in the middle of round 4), 6 are done,
  // 2 are in service and 4 wait.
  auto sim = StartSim({"--slots=2", "--service_ms=200"});
  ASSERT_NE(sim, nullptr);
  HttpConnection scraper(sim->port());
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c) {
    clients.emplace_back([&] {
      HttpConnection connection(sim->port());
      EXPECT_EQ(connection.Post("/v2/models/sim/infer", kInferBody).status, 200);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const Metrics metrics = ParseMetrics(scraper.Get("/metrics").body);
  for (std::thread& client : clients) client.join();
  const std::string labels = ModelLabels("sim");
  EXPECT_EQ(metrics.samples.at("nv_inference_request_success" + labels), 6);
  // Triton's meaning: requests waiting to start, not those in service.
  EXPECT_EQ(metrics.samples.at("nv_inference_pending_request_count" + labels), 4);
  EXPECT_EQ(metrics.samples.at("vllm:num_requests_waiting{model_name=\"sim\"}"), 4);
  EXPECT_EQ(metrics.samples.at("vllm:num_requests_running{model_name=\"sim\"}"), 2);
  EXPECT_GT(metrics.samples.at("nv_gpu_utilization{gpu_uuid=\"GPU-vanguard-sim-0\"}"), 0.9);
  EXPECT_GT(metrics.samples.at("nv_inference_queue_duration_us" + labels), 0);
  // Memory in use grows with the work in flight, within the device's total.
  const std::string gpu = "{gpu_uuid=\"GPU-vanguard-sim-0\"}";
  EXPECT_GT(metrics.samples.at("nv_gpu_memory_used_bytes" + gpu), 6.0 * (1 << 30) * 1.5);
  EXPECT_LE(metrics.samples.at("nv_gpu_memory_used_bytes" + gpu),
            metrics.samples.at("nv_gpu_memory_total_bytes" + gpu));
}

TEST(SimPredictorTest, WritesPortFileAndExitsCleanlyOnSigterm) {
  const std::string port_file = absl::StrCat(::testing::TempDir(), "/sim_port_", getpid(), ".txt");
  auto sim = StartSim({absl::StrCat("--port_file=", port_file)});
  ASSERT_NE(sim, nullptr);
  std::ifstream in(port_file);
  int port = 0;
  in >> port;
  EXPECT_EQ(port, sim->port());
  EXPECT_EQ(sim->address(), absl::StrCat("127.0.0.1:", sim->port()));
  {
    HttpConnection connection(sim->port());
    EXPECT_EQ(connection.Get("/v2/health/ready").status, 200);
  }
  const int status = sim->Terminate();
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::remove(port_file.c_str());
}

TEST(SimPredictorTest, AnswersExpect100ContinueWithoutStalling) {
  auto sim = StartSim({"--service_ms=1"});
  ASSERT_NE(sim, nullptr);
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), sim->port()));
  const std::string body = kInferBody;
  const std::string head = absl::StrCat(
      "POST /v2/models/sim/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Expect: 100-continue\r\nContent-Length: ",
      body.size(), "\r\n\r\n");
  asio::write(socket, asio::buffer(head));
  // The server must say "go ahead" before the body is sent (curl would wait 1 s otherwise).
  beast::flat_buffer buffer;
  http::response<http::empty_body> go_ahead;
  http::read(socket, buffer, go_ahead);
  EXPECT_EQ(go_ahead.result_int(), 100);
  asio::write(socket, asio::buffer(body));
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  EXPECT_EQ(response.result_int(), 200);
  EXPECT_EQ(json::parse(response.body())["outputs"][0]["name"], "output0");
}

TEST(SimPredictorTest, RejectsInvalidFlags) {
  auto result = vanguard::testing::RunBinary(kBinary, {"--slots=0", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->exit_code, 0);
  EXPECT_THAT(result->err, HasSubstr("slots"));
}

}  // namespace
}  // namespace vanguard::sim
