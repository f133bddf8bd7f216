// Autoscaler target-rate fetching and parsing. See controller_rate_source.h.
#include "worker/controller_rate_source.h"

#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "worker/http_get.h"

namespace vanguard::worker {
namespace {

absl::StatusOr<double> Number(const nlohmann::json& v, const std::string& what) {
  double d;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is not a number: '", s, "'"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a number: ", v.dump()));
  }
  if (!std::isfinite(d) || d <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a positive rate, got ", d));
  }
  return d;
}

}  // namespace

absl::StatusOr<std::string> HttpFetch(const std::string& url) {
  absl::StatusOr<HttpResponse> r = HttpGet(url, absl::Seconds(5));
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) {
    return absl::UnavailableError(absl::StrCat("GET ", url, ": HTTP ", r->status));
  }
  return std::move(r->body);
}

absl::StatusOr<double> RateFromJson(const std::string& body, const std::string& dotted_path) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("autoscaler answer is not JSON");
  const std::string path = dotted_path.empty() ? "target_qps" : dotted_path;
  const nlohmann::json* node = &doc;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    const std::string key(part);
    if (!node->is_object() || !node->contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("autoscaler answer has no field '", path, "' (missing '", key, "')"));
    }
    node = &(*node)[key];
  }
  return Number(*node, absl::StrCat("autoscaler field '", path, "'"));
}

absl::StatusOr<double> RateFromPrometheus(const std::string& body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("Prometheus answer is not JSON");
  }
  if (doc.value("status", "") != "success") {
    return absl::InvalidArgumentError(
        absl::StrCat("Prometheus query failed: ", doc.value("error", std::string("no status"))));
  }
  const nlohmann::json& data = doc["data"];
  const std::string type = data.is_object() ? data.value("resultType", "") : "";
  const nlohmann::json& result = data.is_object() ? data["result"] : nlohmann::json();
  if (type == "scalar" && result.is_array() && result.size() == 2) {
    return Number(result[1], "Prometheus scalar");
  }
  if (type == "vector" && result.is_array() && !result.empty() && result[0].contains("value") &&
      result[0]["value"].is_array() && result[0]["value"].size() == 2) {
    return Number(result[0]["value"][1], "Prometheus sample");
  }
  return absl::InvalidArgumentError("Prometheus answer has no sample (empty vector?)");
}

absl::StatusOr<double> FetchControllerTarget(const vanguard::v1::DirectControllerStrategy& config,
                                             const UrlFetcher& fetch) {
  switch (config.source_case()) {
    case vanguard::v1::DirectControllerStrategy::kTargetQps:
      return config.target_qps();
    case vanguard::v1::DirectControllerStrategy::kJsonUrl: {
      absl::StatusOr<std::string> body = fetch(config.json_url());
      if (!body.ok()) return body.status();
      return RateFromJson(*body, config.json_field());
    }
    case vanguard::v1::DirectControllerStrategy::kPrometheusUrl: {
      absl::StatusOr<std::string> body = fetch(config.prometheus_url());
      if (!body.ok()) return body.status();
      return RateFromPrometheus(*body);
    }
    case vanguard::v1::DirectControllerStrategy::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "direct_controller.source: set json_url, prometheus_url or target_qps");
}

}  // namespace vanguard::worker
