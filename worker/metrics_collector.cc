// Predictor gauge scraping. See metrics_collector.h.
#include "worker/metrics_collector.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/http_get.h"

namespace vanguard::worker {
namespace {

std::vector<GaugeSource> Override(const vanguard::v1::Model& model, const std::string& key,
                                  std::vector<GaugeSource> defaults) {
  auto it = model.labels().find(key);
  if (it == model.labels().end() || it->second.empty()) return defaults;
  GaugeSource source;
  const std::string& v = it->second;
  const size_t star = v.find('*');
  source.name = v.substr(0, star);
  if (star != std::string::npos) {
    char* end = nullptr;
    const double scale = std::strtod(v.c_str() + star + 1, &end);
    if (end != v.c_str() + star + 1 && scale > 0) source.scale = scale;
  }
  return {source};
}

}  // namespace

GaugeMapping GaugeMappingFor(const vanguard::v1::Model& model) {
  GaugeMapping m;
  m.gpu_utilization = Override(model, "metrics.gpu_utilization",
                               {{"nv_gpu_utilization", 1},         // Triton, 0..1
                                {"GPUUtilization", 0.01},          // TorchServe, percent
                                {"DCGM_FI_DEV_GPU_UTIL", 0.01}});  // dcgm-exporter sidecar
  m.queue_depth = Override(model, "metrics.queue_depth",
                           {{"nv_inference_pending_request_count", 1},                 // Triton
                            {"vllm:num_requests_waiting", 1},                          // vLLM
                            {"ts_queue_size", 1},                                      // TorchServe
                            {":tensorflow:serving:batching_session:queue_size", 1}});  // TF Serving
  m.memory_bytes = Override(model, "metrics.memory_bytes",
                            {{"nv_gpu_memory_used_bytes", 1},
                             {"GPUMemoryUsed", 1024 * 1024},  // TorchServe, MiB
                             {"process_resident_memory_bytes", 1}});
  m.kv_cache_usage = Override(model, "metrics.kv_cache_usage",
                              {{"vllm:gpu_cache_usage_perc", 1}, {"vllm:kv_cache_usage_perc", 1}});
  // Ready replicas: the simulated fleet's own gauge, else kube-state-metrics' (a page that
  // shows one deployment; "metrics.replicas" names another).
  m.replicas =
      Override(model, "metrics.replicas",
               {{"vanguard_sim_replicas", 1}, {"kube_deployment_status_replicas_available", 1}});
  return m;
}

std::string MetricsUrlFor(const vanguard::v1::Model& model) {
  if (auto it = model.labels().find("metrics.url"); it != model.labels().end()) return it->second;
  if (model.endpoints_size() == 0 || model.endpoints(0).empty()) return "";
  std::string base = model.endpoints(0);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/metrics";
}

std::optional<double> ReadGauge(const std::vector<PrometheusSample>& samples,
                                const std::vector<GaugeSource>& sources) {
  for (const GaugeSource& s : sources) {
    if (std::optional<double> v = SumSamples(samples, s.name)) return *v * s.scale;
  }
  return std::nullopt;
}

MetricsCollector::Fetcher MetricsCollector::HttpFetcher(std::string url, absl::Duration timeout,
                                                        TargetPolicy policy) {
  return
      [url = std::move(url), timeout, policy = std::move(policy)]() -> absl::StatusOr<std::string> {
        absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
        if (!parsed.ok()) return parsed.status();
        absl::StatusOr<HttpResponse> r = HttpGet(url, timeout, kDefaultMaxHttpBodyBytes, &policy);
        if (!r.ok()) return r.status();
        if (r->status != 200) {
          return absl::UnavailableError(absl::StrCat("GET ", parsed->HostPort(), ": HTTP ",
                                                     r->status, " (the answer is not shown)"));
        }
        return std::move(r->body);
      };
}

MetricsCollector::MetricsCollector(Fetcher fetch, GaugeMapping mapping)
    : fetch_(std::move(fetch)), mapping_(std::move(mapping)) {}

GaugeReading MetricsCollector::Scrape() {
  ++scrapes_;
  GaugeReading reading;
  absl::StatusOr<std::string> page = fetch_();
  if (!page.ok()) {
    ++scrape_failures_;
    last_error_ = page.status().ToString();
    return reading;
  }
  absl::StatusOr<std::vector<PrometheusSample>> samples = ParsePrometheusText(*page);
  if (!samples.ok()) {
    // The parser quotes the offending line: bytes of the page, which stay out of errors.
    ++scrape_failures_;
    last_error_ = "the metrics page is not Prometheus text format (its text is not shown)";
    return reading;
  }
  reading.gpu_utilization = ReadGauge(*samples, mapping_.gpu_utilization);
  reading.queue_depth = ReadGauge(*samples, mapping_.queue_depth);
  reading.memory_bytes = ReadGauge(*samples, mapping_.memory_bytes);
  reading.kv_cache_usage = ReadGauge(*samples, mapping_.kv_cache_usage);
  reading.replicas = ReadGauge(*samples, mapping_.replicas);
  return reading;
}

}  // namespace vanguard::worker
