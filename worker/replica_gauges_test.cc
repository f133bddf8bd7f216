// Each replica's scraped gauges and the tail utilisation across them, from scripted pages
// (no network).
#include "worker/replica_gauges.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;

// Pages by URL; a URL without a page answers UNAVAILABLE.
class ScriptedPages {
 public:
  ReplicaGaugeCollector::FetcherFor FetcherFor() {
    return [this](const std::string& url) -> MetricsCollector::Fetcher {
      return [this, url]() -> absl::StatusOr<std::string> {
        fetched_.push_back(url);
        auto it = pages_.find(url);
        if (it == pages_.end()) return absl::UnavailableError("refused");
        return it->second;
      };
    };
  }
  std::map<std::string, std::string> pages_;
  std::vector<std::string> fetched_;
};

vanguard::v1::StepResult ResultFor(const std::vector<std::string>& targets) {
  vanguard::v1::StepResult r;
  for (const std::string& t : targets) r.add_endpoints()->set_target(t);
  return r;
}

TEST(ReplicaGaugeCollectorTest, ScrapesEachEndpointsOwnPageAndCountsAFailedOne) {
  ScriptedPages pages;
  pages.pages_["http://a:1/metrics"] = "nv_gpu_utilization 0.25\nvllm:num_requests_waiting 3\n";
  ReplicaGaugeCollector replicas({"http://a:1/", "http://b:2"}, pages.FetcherFor(),
                                 GaugeMappingFor({}));
  EXPECT_THAT(replicas.endpoints(), ElementsAre("http://a:1/", "http://b:2"));
  const std::vector<ReplicaScrape> scrape = replicas.ScrapeAll();
  EXPECT_THAT(pages.fetched_, ElementsAre("http://a:1/metrics", "http://b:2/metrics"));
  ASSERT_EQ(scrape.size(), 2u);
  EXPECT_FALSE(scrape[0].failed);
  EXPECT_EQ(scrape[0].reading.gpu_utilization, 0.25);
  EXPECT_EQ(scrape[0].reading.queue_depth, 3);
  EXPECT_TRUE(scrape[1].failed);
  EXPECT_FALSE(scrape[1].reading.gpu_utilization.has_value());
}

TEST(ReplicaGaugeCollectorTest, ScrapesAtMostTheFirstMaxReplicas) {
  ScriptedPages pages;
  std::vector<std::string> endpoints;
  for (int i = 0; i < ReplicaGaugeCollector::kMaxReplicas + 3; ++i) {
    endpoints.push_back(absl::StrCat("http://r", i, ":8000"));
  }
  ReplicaGaugeCollector replicas(endpoints, pages.FetcherFor(), GaugeMappingFor({}));
  EXPECT_EQ(replicas.endpoints().size(), size_t{ReplicaGaugeCollector::kMaxReplicas});
  EXPECT_EQ(replicas.ScrapeAll().size(), size_t{ReplicaGaugeCollector::kMaxReplicas});
}

TEST(AttachReplicaGaugesTest, MeansOverTheWindowsByTargetAndGaugesNeverSeenStayUnset) {
  auto reading = [](std::optional<double> gpu, std::optional<double> queue) {
    ReplicaScrape s;
    s.reading.gpu_utilization = gpu;
    s.reading.queue_depth = queue;
    return s;
  };
  ReplicaScrape failed;
  failed.failed = true;
  const std::vector<std::vector<ReplicaScrape>> windows = {
      {reading(0.2, 1), reading(0.9, std::nullopt)},
      {reading(0.4, 3), failed},
  };
  // The loss step of a replica-loss trial lists the survivors only, in another order.
  vanguard::v1::StepResult result = ResultFor({"http://b:2", "http://a:1", "http://c:3"});
  AttachReplicaGauges({"http://a:1", "http://b:2"}, windows, &result);
  const vanguard::v1::ReplicaGauges& a = result.endpoints(1).scraped();
  EXPECT_DOUBLE_EQ(a.gpu_utilization(), 0.3);
  EXPECT_DOUBLE_EQ(a.queue_depth(), 2);
  EXPECT_FALSE(a.has_kv_cache_usage());
  EXPECT_EQ(a.scrapes(), 2);
  EXPECT_EQ(a.scrape_failures(), 0);
  const vanguard::v1::ReplicaGauges& b = result.endpoints(0).scraped();
  EXPECT_DOUBLE_EQ(b.gpu_utilization(), 0.9);  // the failed scrape is a missing sample
  EXPECT_FALSE(b.has_queue_depth());
  EXPECT_EQ(b.scrape_failures(), 1);
  EXPECT_FALSE(result.endpoints(2).has_scraped());  // not a scraped endpoint
}

TEST(AttachReplicaGaugesTest, NoMeasuredWindowAttachesNothing) {
  vanguard::v1::StepResult result = ResultFor({"http://a:1"});
  AttachReplicaGauges({"http://a:1"}, {}, &result);
  EXPECT_FALSE(result.endpoints(0).has_scraped());
}

google::protobuf::RepeatedPtrField<vanguard::v1::EndpointTelemetry> Utilizations(
    const std::vector<std::optional<double>>& values) {
  google::protobuf::RepeatedPtrField<vanguard::v1::EndpointTelemetry> out;
  for (const std::optional<double>& v : values) {
    vanguard::v1::EndpointTelemetry* e = out.Add();
    if (v) e->mutable_scraped()->set_gpu_utilization(*v);
  }
  return out;
}

TEST(FleetUtilizationTest, WithFewReplicasTheTailIsTheBusiestOne) {
  const FleetUtilization u = FleetUtilizationOf(Utilizations({0.3, 0.9, std::nullopt, 0.6}));
  EXPECT_DOUBLE_EQ(u.tail, 0.9);
  EXPECT_DOUBLE_EQ(u.mean, 0.6);
}

TEST(FleetUtilizationTest, TheTailIsTheNinetyFifthPercentileNotTheMax) {
  std::vector<std::optional<double>> values;
  for (int i = 1; i <= 40; ++i) values.push_back(i / 100.0);  // 0.01 .. 0.40
  const FleetUtilization u = FleetUtilizationOf(Utilizations(values));
  EXPECT_DOUBLE_EQ(u.tail, 0.38);  // rank ceil(0.95 * 40) = 38
  EXPECT_DOUBLE_EQ(u.mean, 0.205);
}

TEST(FleetUtilizationTest, FewerThanTwoReplicasWithTheGaugeGiveNothing) {
  EXPECT_EQ(FleetUtilizationOf(Utilizations({0.5, std::nullopt})).tail, 0);
  EXPECT_EQ(FleetUtilizationOf(Utilizations({})).mean, 0);
}

}  // namespace
}  // namespace vanguard::worker
