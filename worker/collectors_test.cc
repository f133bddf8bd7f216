// MetricsCollector (gauge mapping, overrides, failures), SteadyStateDetector, the
// autoscaler-rate parsers, and HttpGet against a local listener.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/target_policy.h"
#include "gtest/gtest.h"
#include "worker/controller_rate_source.h"
#include "worker/http_get.h"
#include "worker/metrics_collector.h"
#include "worker/steady_state.h"
#include "worker/testing/one_shot_http_server.h"

namespace vanguard::worker {
namespace {

constexpr char kTritonPage[] =
    "# TYPE nv_gpu_utilization gauge\n"
    "nv_gpu_utilization{gpu_uuid=\"a\"} 0.4\n"
    "nv_gpu_utilization{gpu_uuid=\"b\"} 0.3\n"
    "nv_inference_pending_request_count{model=\"m\",version=\"1\"} 4\n"
    "nv_inference_pending_request_count{model=\"n\",version=\"1\"} 1\n";

constexpr char kVllmPage[] =
    "vllm:num_requests_waiting{model_name=\"q\"} 2\n"
    "vllm:kv_cache_usage_perc{model_name=\"q\"} 0.75\n"
    "process_resident_memory_bytes 2e9\n";

TEST(MetricsCollectorTest, ReadsTritonAndVllmGaugesSummedOverLabels) {
  vanguard::v1::Model model;
  MetricsCollector triton([] { return std::string(kTritonPage); }, GaugeMappingFor(model));
  GaugeReading t = triton.Scrape();
  EXPECT_DOUBLE_EQ(*t.gpu_utilization, 0.7);
  EXPECT_DOUBLE_EQ(*t.queue_depth, 5);
  EXPECT_FALSE(t.memory_bytes.has_value());
  MetricsCollector vllm([] { return std::string(kVllmPage); }, GaugeMappingFor(model));
  GaugeReading v = vllm.Scrape();
  EXPECT_DOUBLE_EQ(*v.queue_depth, 2);
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.75);
  EXPECT_DOUBLE_EQ(*v.memory_bytes, 2e9);
  EXPECT_FALSE(v.gpu_utilization.has_value());
}

TEST(MetricsCollectorTest, ModelLabelsOverrideNamesAndScale) {
  vanguard::v1::Model model;
  (*model.mutable_labels())["metrics.gpu_utilization"] = "my_gpu_pct*0.01";
  (*model.mutable_labels())["metrics.queue_depth"] = "my_queue";
  MetricsCollector c(
      [] { return std::string("my_gpu_pct 85\nmy_queue 3\nnv_gpu_utilization 0.1\n"); },
      GaugeMappingFor(model));
  GaugeReading r = c.Scrape();
  EXPECT_DOUBLE_EQ(*r.gpu_utilization, 0.85);
  EXPECT_DOUBLE_EQ(*r.queue_depth, 3);
}

TEST(MetricsCollectorTest, FailuresAreCountedNotFatal) {
  int calls = 0;
  MetricsCollector c(
      [&]() -> absl::StatusOr<std::string> {
        ++calls;
        if (calls == 1) return absl::UnavailableError("connection refused");
        if (calls == 2) return std::string("broken{ 1\n");
        return std::string(kTritonPage);
      },
      GaugeMappingFor({}));
  EXPECT_FALSE(c.Scrape().queue_depth.has_value());
  EXPECT_FALSE(c.Scrape().queue_depth.has_value());
  EXPECT_TRUE(c.Scrape().queue_depth.has_value());
  EXPECT_EQ(c.scrapes(), 3);
  EXPECT_EQ(c.scrape_failures(), 2);
}

TEST(MetricsCollectorTest, ScrapeErrorsCarryNeitherThePageNorTheUrlsQuery) {
  MetricsCollector broken(
      []() -> absl::StatusOr<std::string> { return std::string("VGSECRET{ 1\n"); },
      GaugeMappingFor({}));
  broken.Scrape();
  EXPECT_EQ(broken.scrape_failures(), 1);
  EXPECT_EQ(broken.last_error().find("VGSECRET"), std::string::npos) << broken.last_error();

  testing_util::OneShotHttpServer server(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
      "VGSECRET");
  MetricsCollector failing(
      MetricsCollector::HttpFetcher(
          absl::StrCat("http://127.0.0.1:", server.port(), "/metrics?token=VGSECRET"),
          absl::Seconds(5)),
      GaugeMappingFor({}));
  failing.Scrape();
  EXPECT_EQ(failing.scrape_failures(), 1);
  EXPECT_NE(failing.last_error().find("HTTP 500"), std::string::npos) << failing.last_error();
  EXPECT_EQ(failing.last_error().find("VGSECRET"), std::string::npos) << failing.last_error();
}

TEST(MetricsCollectorTest, APageThePolicyRefusesIsNotScraped) {
  absl::StatusOr<TargetPolicy> everything = TargetPolicy::Parse("0.0.0.0/0,::/0");
  ASSERT_TRUE(everything.ok()) << everything.status();
  MetricsCollector c(MetricsCollector::HttpFetcher("http://169.254.169.254/metrics",
                                                   absl::Seconds(5), *everything),
                     GaugeMappingFor({}));
  EXPECT_FALSE(c.Scrape().queue_depth.has_value());
  EXPECT_EQ(c.scrape_failures(), 1);
  EXPECT_NE(c.last_error().find("never allowed"), std::string::npos) << c.last_error();
  // Without a policy, only loopback.
  MetricsCollector d(MetricsCollector::HttpFetcher("http://10.0.0.7:8002/metrics"),
                     GaugeMappingFor({}));
  d.Scrape();
  EXPECT_NE(d.last_error().find("PERMISSION_DENIED"), std::string::npos) << d.last_error();
}

TEST(MetricsCollectorTest, MetricsUrlDefaultsToFirstEndpoint) {
  vanguard::v1::Model model;
  model.add_endpoints("http://10.0.0.5:8000/");
  EXPECT_EQ(MetricsUrlFor(model), "http://10.0.0.5:8000/metrics");
  (*model.mutable_labels())["metrics.url"] = "http://10.0.0.5:8002/metrics";
  EXPECT_EQ(MetricsUrlFor(model), "http://10.0.0.5:8002/metrics");
}

TEST(SteadyStateDetectorTest, WarmupDecayIsNotSteadyThenFlatIs) {
  SteadyStateDetector d({});
  // Latency decaying 30 -> 10 ms (model warmup): never steady while it decays.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.Add(30 - 2 * i, 1.0)) << i;
  // Flat with +-5% noise: steady once five flat windows are in.
  const double noisy[] = {10, 10.5, 9.5, 10.4, 9.6, 10.1};
  bool steady = false;
  int at = -1;
  for (int i = 0; i < 6; ++i) {
    if (d.Add(noisy[i], 1.0) && !steady) {
      steady = true;
      at = i;
    }
  }
  EXPECT_TRUE(steady);
  EXPECT_GE(at, 3);
}

TEST(SteadyStateDetectorTest, ThroughputCatchingUpIsNotSteady) {
  SteadyStateDetector d({});
  for (double r : {0.7, 0.78, 0.85, 0.92, 0.99}) EXPECT_FALSE(d.Add(10, r));
  for (double r : {1.0, 1.0, 1.0, 1.0}) d.Add(10, r);
  EXPECT_TRUE(d.steady());
  d.Reset();
  EXPECT_FALSE(d.steady());
}

TEST(SteadyStateDetectorTest, RelativeDriftOfALine) {
  EXPECT_NEAR(SteadyStateDetector::RelativeDrift({10, 11, 12, 13, 14}), 4.0 / 12, 1e-12);
  EXPECT_EQ(SteadyStateDetector::RelativeDrift({5, 5, 5}), 0);
}

TEST(SteadyStateDetectorTest, ATrendCountsOnlyBeyondItsNoise) {
  // A clean 33% rise over the span trends; the same fitted drift through scatter twice its
  // size does not (p50s of half-second windows near capacity: 20, 25, 18, 28 ms).
  EXPECT_TRUE(SteadyStateDetector::Trending({10, 11, 12, 13, 14}, 0.2));
  EXPECT_GT(SteadyStateDetector::RelativeDrift({20, 25, 18, 28}), 0.2);
  EXPECT_FALSE(SteadyStateDetector::Trending({20, 25, 18, 28}, 0.2));
  // A steep consistent rise through some scatter still trends.
  EXPECT_TRUE(SteadyStateDetector::Trending({20, 27, 31, 40}, 0.2));
  // Falling: a drift, but not a rise.
  EXPECT_TRUE(SteadyStateDetector::Trending({14, 13, 12, 11, 10}, 0.2));
  EXPECT_FALSE(SteadyStateDetector::Trending({14, 13, 12, 11, 10}, 0.2, /*rising_only=*/true));
  EXPECT_TRUE(SteadyStateDetector::Trending({10, 11, 12, 13, 14}, 0.2, /*rising_only=*/true));
}

TEST(SteadyStateDetectorTest, ScatterNearCapacityIsSteady) {
  // Half-second p50s (ms) of a stationary run at 97% of capacity (nlp_encoder at 960 req/s),
  // whose 4-window fits drift by more than 20% in 42% of spans. The last four here fit a
  // 33% rise, well within their scatter.
  EXPECT_GT(SteadyStateDetector::RelativeDrift({20, 22, 28, 27}), 0.3);
  SteadyStateDetector d({.windows = 4});
  for (double p50 : {21, 17, 21, 24, 20, 22, 28, 27}) d.Add(p50, 1.0);
  EXPECT_TRUE(d.steady());
}

TEST(ControllerRateSourceTest, JsonFieldPath) {
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"target_qps": 420})", ""), 420);
  EXPECT_DOUBLE_EQ(*RateFromJson(R"({"spec":{"target":"12.5"}})", "spec.target"), 12.5);
  auto missing = RateFromJson(R"({"spec":{}})", "spec.target");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("spec.target"), std::string::npos);
  EXPECT_FALSE(RateFromJson("not json", "").ok());
  EXPECT_FALSE(RateFromJson(R"({"target_qps": -3})", "").ok());
}

TEST(ControllerRateSourceTest, PrometheusVectorAndScalar) {
  EXPECT_DOUBLE_EQ(
      *RateFromPrometheus(
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1712.5,"333.3"]}]}})"),
      333.3);
  EXPECT_DOUBLE_EQ(*RateFromPrometheus(
                       R"({"status":"success","data":{"resultType":"scalar","result":[1.0,"7"]}})"),
                   7);
  EXPECT_FALSE(
      RateFromPrometheus(R"({"status":"success","data":{"resultType":"vector","result":[]}})")
          .ok());
  EXPECT_FALSE(RateFromPrometheus(R"({"status":"error","error":"bad query"})").ok());
}

TEST(ControllerRateSourceTest, FetchUsesTheConfiguredSource) {
  vanguard::v1::DirectControllerStrategy c;
  c.set_json_url("http://autoscaler/target");
  c.set_json_field("qps");
  std::string asked;
  auto rate = FetchControllerTarget(c, [&](const std::string& url) -> absl::StatusOr<std::string> {
    asked = url;
    return std::string(R"({"qps": 99})");
  });
  ASSERT_TRUE(rate.ok()) << rate.status();
  EXPECT_DOUBLE_EQ(*rate, 99);
  EXPECT_EQ(asked, "http://autoscaler/target");
  auto down = FetchControllerTarget(c, [](const std::string&) -> absl::StatusOr<std::string> {
    return absl::UnavailableError("down");
  });
  EXPECT_TRUE(absl::IsUnavailable(down.status()));
}

using OneShotServer = testing_util::OneShotHttpServer;

TEST(HttpGetTest, FetchesABodyAndReportsRefusedConnections) {
  OneShotServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nqueue_len 3");
  auto r = HttpGet(absl::StrCat("http://127.0.0.1:", server.port(), "/metrics"), absl::Seconds(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "queue_len 3");
  EXPECT_FALSE(HttpGet("ftp://x/", absl::Seconds(1)).ok());
  auto parsed = ParseHttpUrl("http://h:81/a?b=c");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "h");
  EXPECT_EQ(parsed->port, 81);
  EXPECT_EQ(parsed->target, "/a?b=c");
}

}  // namespace
}  // namespace vanguard::worker
