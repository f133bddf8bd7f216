// Scrapes the predictor's /metrics page (Prometheus text format) once per window and reads
// the gauges health and stability need: GPU utilization, queue depth, memory and KV-cache
// usage, and the replicas ready to serve (autoscale tests). Each gauge is summed over its label
// sets (several GPUs, several models).
//
//   MetricsCollector collector(MetricsCollector::HttpFetcher(url), GaugeMappingFor(model));
//   GaugeReading r = collector.Scrape();   // absent gauges stay nullopt
//   collector.scrape_failures();           // counted, never fatal
//
// Gauge names. The default mapping knows Triton (nv_gpu_utilization,
// nv_inference_pending_request_count, nv_gpu_memory_used_bytes), vLLM
// (vllm:num_requests_waiting, vllm:gpu_cache_usage_perc / vllm:kv_cache_usage_perc),
// TorchServe (GPUUtilization in percent, ts_queue_size... see GaugeMappingFor) and TF Serving
// (process memory), and takes the first name a page has. A model overrides any of them with
// labels "metrics.gpu_utilization", "metrics.queue_depth", "metrics.memory_bytes",
// "metrics.kv_cache_usage", "metrics.replicas" (a metric name, optionally "name*scale", e.g.
// "GPUUtilization*0.01"), and the page's URL with "metrics.url" (default: first endpoint +
// "/metrics").
//
// Called from the test runner's thread only.
#ifndef VANGUARD_WORKER_METRICS_COLLECTOR_H_
#define VANGUARD_WORKER_METRICS_COLLECTOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/prometheus_text.h"
#include "common/target_policy.h"
#include "vanguard/v1/model.pb.h"

namespace vanguard::worker {

struct GaugeSource {
  std::string name;
  double scale = 1;  // reading = sum * scale (e.g. 0.01 for percent)
};

struct GaugeMapping {
  std::vector<GaugeSource> gpu_utilization;  // 0..1
  std::vector<GaugeSource> queue_depth;      // requests waiting
  std::vector<GaugeSource> memory_bytes;
  std::vector<GaugeSource> kv_cache_usage;  // 0..1
  std::vector<GaugeSource> replicas;        // ready replicas of the deployment
};

struct GaugeReading {
  std::optional<double> gpu_utilization;
  std::optional<double> queue_depth;
  std::optional<double> memory_bytes;
  std::optional<double> kv_cache_usage;
  std::optional<double> replicas;
};

// The default names of every supported server, with the model's label overrides applied.
GaugeMapping GaugeMappingFor(const vanguard::v1::Model& model);

// The metrics page URL of `model` ("metrics.url" label, else endpoints[0] + "/metrics");
// empty when the model has no endpoint.
std::string MetricsUrlFor(const vanguard::v1::Model& model);

// The first source of `sources` present in `samples`, summed and scaled.
std::optional<double> ReadGauge(const std::vector<PrometheusSample>& samples,
                                const std::vector<GaugeSource>& sources);

class MetricsCollector {
 public:
  using Fetcher = std::function<absl::StatusOr<std::string>()>;

  // GETs `url` with `timeout`, to the targets `policy` allows; a non-200 answer is an
  // error. Errors name the page by host:port (never its path or query) and never carry
  // bytes the server sent.
  static Fetcher HttpFetcher(std::string url, absl::Duration timeout = absl::Milliseconds(500),
                             TargetPolicy policy = TargetPolicy::Default());

  MetricsCollector(Fetcher fetch, GaugeMapping mapping);

  // One scrape. A failed fetch or unparsable page returns an empty reading and counts;
  // last_error() says why with the fetcher's message or a fixed one (a page that is not
  // Prometheus text is not quoted).
  GaugeReading Scrape();

  int64_t scrapes() const { return scrapes_; }
  int64_t scrape_failures() const { return scrape_failures_; }
  const std::string& last_error() const { return last_error_; }

 private:
  Fetcher fetch_;
  GaugeMapping mapping_;
  int64_t scrapes_ = 0;
  int64_t scrape_failures_ = 0;
  std::string last_error_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_METRICS_COLLECTOR_H_
