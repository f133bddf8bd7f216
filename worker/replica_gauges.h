// The gauges of every replica of a model served by several endpoints, and the tail
// utilisation across them (issue 22; seed 002: the utilisation of the most loaded 5% of
// servers decides the headroom a fleet must keep, whatever its mean).
//
//   ReplicaGaugeCollector replicas(model.endpoints(), fetcher_for, GaugeMappingFor(model));
//   per_window.push_back(replicas.ScrapeAll());            // once per measured window
//   AttachReplicaGauges(replicas.urls(), per_window, &step_result);  // Endpoint...scraped
//   FleetUtilization u = FleetUtilizationOf(step.endpoints());
//
// Each endpoint's page is the endpoint's URL + "/metrics" (a model's "metrics.url" label
// names one page for the model and is not used here), read with the model's gauge mapping
// (metrics_collector.h). At most kMaxReplicas endpoints are scraped (the first ones in the
// model's order): the pages are fetched one after the other between two windows. A page that
// cannot be fetched or read is a missing sample of that replica, counted, never fatal.
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_REPLICA_GAUGES_H_
#define VANGUARD_WORKER_REPLICA_GAUGES_H_

#include <functional>
#include <string>
#include <vector>

#include "google/protobuf/repeated_ptr_field.h"
#include "vanguard/v1/replayer.pb.h"
#include "vanguard/v1/test.pb.h"
#include "worker/metrics_collector.h"

namespace vanguard::worker {

// One replica's scrape in one window.
struct ReplicaScrape {
  GaugeReading reading;
  bool failed = false;
};

class ReplicaGaugeCollector {
 public:
  static constexpr int kMaxReplicas = 32;
  using FetcherFor = std::function<MetricsCollector::Fetcher(const std::string& url)>;

  // `endpoints`: the model's, in its order; `fetcher_for` makes the fetcher of one page URL
  // (the worker's: MetricsCollector::HttpFetcher under its target policy).
  ReplicaGaugeCollector(const std::vector<std::string>& endpoints, const FetcherFor& fetcher_for,
                        const GaugeMapping& mapping);

  // The endpoints scraped, in the model's order (at most kMaxReplicas).
  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // One scrape of every replica's page, in endpoints() order.
  std::vector<ReplicaScrape> ScrapeAll();

 private:
  std::vector<std::string> endpoints_;
  std::vector<MetricsCollector> collectors_;
};

// Sets `scraped` on each endpoint of `result` whose target is one of `endpoints`: means over
// `per_window` (one ScrapeAll each, in endpoints order) of each gauge the replica had, the
// number of scrapes and of failed ones. Endpoints of the result not scraped are left alone.
void AttachReplicaGauges(const std::vector<std::string>& endpoints,
                         const std::vector<std::vector<ReplicaScrape>>& per_window,
                         vanguard::v1::StepResult* result);

// Across the endpoints with a scraped gpu_utilization: the 95th percentile, nearest rank
// (the largest with fewer than 20 endpoints), and the mean. Both 0 with fewer than two.
struct FleetUtilization {
  double tail = 0;
  double mean = 0;
};
FleetUtilization FleetUtilizationOf(
    const google::protobuf::RepeatedPtrField<vanguard::v1::EndpointTelemetry>& endpoints);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_REPLICA_GAUGES_H_
