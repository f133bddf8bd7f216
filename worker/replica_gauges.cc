// Per-replica gauges and tail utilisation; see replica_gauges.h.
#include "worker/replica_gauges.h"

#include <algorithm>
#include <optional>

namespace vanguard::worker {
namespace {

std::string PageOf(std::string endpoint) {
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint + "/metrics";
}

// A running mean of one gauge over the windows that had it.
struct GaugeMean {
  double sum = 0;
  int samples = 0;
  void Add(const std::optional<double>& v) {
    if (!v) return;
    sum += *v;
    ++samples;
  }
  std::optional<double> Mean() const {
    return samples > 0 ? std::optional<double>(sum / samples) : std::nullopt;
  }
};

vanguard::v1::ReplicaGauges MeansOf(const std::vector<std::vector<ReplicaScrape>>& per_window,
                                    size_t replica) {
  GaugeMean gpu, queue, kv;
  vanguard::v1::ReplicaGauges out;
  for (const std::vector<ReplicaScrape>& window : per_window) {
    if (replica >= window.size()) continue;
    const ReplicaScrape& s = window[replica];
    out.set_scrapes(out.scrapes() + 1);
    if (s.failed) out.set_scrape_failures(out.scrape_failures() + 1);
    gpu.Add(s.reading.gpu_utilization);
    queue.Add(s.reading.queue_depth);
    kv.Add(s.reading.kv_cache_usage);
  }
  if (auto m = gpu.Mean()) out.set_gpu_utilization(*m);
  if (auto m = queue.Mean()) out.set_queue_depth(*m);
  if (auto m = kv.Mean()) out.set_kv_cache_usage(*m);
  return out;
}

}  // namespace

ReplicaGaugeCollector::ReplicaGaugeCollector(const std::vector<std::string>& endpoints,
                                             const FetcherFor& fetcher_for,
                                             const GaugeMapping& mapping) {
  for (const std::string& endpoint : endpoints) {
    if (static_cast<int>(endpoints_.size()) == kMaxReplicas) break;
    endpoints_.push_back(endpoint);
    collectors_.emplace_back(fetcher_for(PageOf(endpoint)), mapping);
  }
}

std::vector<ReplicaScrape> ReplicaGaugeCollector::ScrapeAll() {
  std::vector<ReplicaScrape> out;
  out.reserve(collectors_.size());
  for (MetricsCollector& c : collectors_) {
    const int64_t failures = c.scrape_failures();
    ReplicaScrape s;
    s.reading = c.Scrape();
    s.failed = c.scrape_failures() > failures;
    out.push_back(s);
  }
  return out;
}

void AttachReplicaGauges(const std::vector<std::string>& endpoints,
                         const std::vector<std::vector<ReplicaScrape>>& per_window,
                         vanguard::v1::StepResult* result) {
  if (per_window.empty()) return;
  for (vanguard::v1::EndpointTelemetry& e : *result->mutable_endpoints()) {
    const auto it = std::find(endpoints.begin(), endpoints.end(), e.target());
    if (it == endpoints.end()) continue;
    *e.mutable_scraped() = MeansOf(per_window, static_cast<size_t>(it - endpoints.begin()));
  }
}

FleetUtilization FleetUtilizationOf(
    const google::protobuf::RepeatedPtrField<vanguard::v1::EndpointTelemetry>& endpoints) {
  std::vector<double> values;
  for (const vanguard::v1::EndpointTelemetry& e : endpoints) {
    if (e.has_scraped() && e.scraped().has_gpu_utilization()) {
      values.push_back(e.scraped().gpu_utilization());
    }
  }
  FleetUtilization u;
  if (values.size() < 2) return u;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least 95% of the replicas at or below it.
  const size_t rank = (95 * values.size() + 99) / 100;  // ceil(0.95 n), n >= 2: rank >= 2
  u.tail = values[rank - 1];
  double sum = 0;
  for (double v : values) sum += v;
  u.mean = sum / static_cast<double>(values.size());
  return u;
}

}  // namespace vanguard::worker
