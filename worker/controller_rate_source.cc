// Autoscaler target-rate fetching and parsing. See controller_rate_source.h.
#include "worker/controller_rate_source.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/http_get.h"

namespace vanguard::worker {
namespace {

using Json = nlohmann::json;

// Longer numeric strings are not a rate (and are not worth converting).
constexpr size_t kMaxNumberChars = 64;

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

// Parses an answer as JSON within the size and nesting limits. `what` names the answer in
// errors ("the answer", "the Prometheus answer").
absl::StatusOr<Json> ParseAnswer(const std::string& body, absl::string_view what) {
  if (body.size() > kMaxControllerAnswerBytes) {
    return Invalid(absl::StrCat(what, " is larger than ", kMaxControllerAnswerBytes, " bytes"));
  }
  bool too_deep = false;
  // nlohmann's parser keeps its own stack (no recursion); the limit bounds what it holds.
  const Json::parser_callback_t limit_depth = [&too_deep](int depth, Json::parse_event_t event,
                                                          Json&) {
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxControllerAnswerDepth) too_deep = true;
    return !too_deep;
  };
  Json doc = Json::parse(body, limit_depth, /*allow_exceptions=*/false);
  if (too_deep) {
    return Invalid(absl::StrCat(what, " nests deeper than ", kMaxControllerAnswerDepth, " levels"));
  }
  if (doc.is_discarded()) return Invalid(absl::StrCat(what, " is not JSON"));
  return doc;
}

// The member `key` of `object`; null if `object` is not an object or has no such member.
const Json* Member(const Json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The rate a JSON number or numeric string holds: finite, > 0 and at most
// kMaxControllerRateQps. `what` names the field; its value never appears in an error.
absl::StatusOr<double> RateValue(const Json& value, absl::string_view what) {
  double rate = 0;
  if (value.is_number()) {
    rate = value.get<double>();
  } else if (value.is_string()) {
    // Decimal only: SimpleAtod alone would also take "0x10", "nan" and "inf".
    const absl::string_view text = absl::StripAsciiWhitespace(value.get_ref<const std::string&>());
    if (text.empty() || text.size() > kMaxNumberChars ||
        text.find_first_not_of("0123456789+-.eE") != absl::string_view::npos ||
        !absl::SimpleAtod(text, &rate)) {
      return Invalid(absl::StrCat(what, " is a string that is not a decimal number"));
    }
  } else {
    return Invalid(absl::StrCat(what, " is not a number (a JSON number or a numeric string)"));
  }
  if (!std::isfinite(rate)) return Invalid(absl::StrCat(what, " is not a finite number"));
  if (rate <= 0) return Invalid(absl::StrCat(what, " must be a rate > 0 req/s"));
  if (rate > kMaxControllerRateQps) {
    return Invalid(absl::StrCat(what, " is above the limit of ", kMaxControllerRateQps, " req/s"));
  }
  return rate;
}

// Fetches `url` and reads its answer with `read`. Errors start with `source` and name the
// URL's host:port; they carry the fetcher's or the reader's message, never the answer.
template <typename Read>
absl::StatusOr<double> FetchRate(absl::string_view source, const std::string& url,
                                 const UrlFetcher& fetch, Read read) {
  absl::StatusOr<HttpUrl> parsed = ParseHttpUrl(url);
  if (!parsed.ok()) {
    return Invalid(absl::StrCat("direct_controller.", source, ": ", parsed.status().message()));
  }
  absl::StatusOr<std::string> body = fetch(url);
  if (!body.ok()) {
    return absl::Status(body.status().code(), absl::StrCat(source, ": ", body.status().message()));
  }
  absl::StatusOr<double> rate = read(*body);
  if (!rate.ok()) {
    return absl::Status(rate.status().code(), absl::StrCat(source, ": GET ", parsed->HostPort(),
                                                           ": ", rate.status().message()));
  }
  return rate;
}

// GET url within the controller's limits, to the targets `policy` allows.
absl::StatusOr<std::string> FetchAllowed(const std::string& url, const TargetPolicy& policy) {
  ASSIGN_OR_RETURN(HttpUrl parsed, ParseHttpUrl(url));
  ASSIGN_OR_RETURN(HttpResponse r,
                   HttpGet(url, absl::Seconds(5), kMaxControllerAnswerBytes, &policy));
  if (r.status < 200 || r.status >= 300) {
    return absl::UnavailableError(
        absl::StrCat("GET ", parsed.HostPort(), ": HTTP ", r.status, " (the answer is not shown)"));
  }
  return std::move(r.body);
}

}  // namespace

absl::StatusOr<std::string> HttpFetch(const std::string& url) {
  static const TargetPolicy* const kDefaultPolicy = new TargetPolicy(TargetPolicy::Default());
  return FetchAllowed(url, *kDefaultPolicy);
}

UrlFetcher PolicyHttpFetcher(TargetPolicy policy) {
  return [policy = std::move(policy)](const std::string& url) { return FetchAllowed(url, policy); };
}

absl::StatusOr<double> RateFromJson(const std::string& body, const std::string& dotted_path) {
  ASSIGN_OR_RETURN(Json doc, ParseAnswer(body, "the answer"));
  const std::string path = dotted_path.empty() ? "target_qps" : dotted_path;
  const Json* node = &doc;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    const std::string key(part);
    if (!node->is_object()) {
      return Invalid(
          absl::StrCat("the answer has no field '", path, "' (no object holds '", key, "')"));
    }
    node = Member(*node, key);
    if (node == nullptr) {
      return Invalid(absl::StrCat("the answer has no field '", path, "' (missing '", key, "')"));
    }
  }
  return RateValue(*node, absl::StrCat("the answer's field '", path, "'"));
}

absl::StatusOr<double> RateFromPrometheus(const std::string& body) {
  ASSIGN_OR_RETURN(Json doc, ParseAnswer(body, "the Prometheus answer"));
  if (!doc.is_object()) return Invalid("the Prometheus answer is not a JSON object");
  const Json* status = Member(doc, "status");
  if (status == nullptr || !status->is_string() ||
      status->get_ref<const std::string&>() != "success") {
    return Invalid(
        "the Prometheus query failed (status is not \"success\"; its error is not shown)");
  }
  const Json* data = Member(doc, "data");
  const Json* type = data == nullptr ? nullptr : Member(*data, "resultType");
  const Json* result = data == nullptr ? nullptr : Member(*data, "result");
  if (type == nullptr || !type->is_string() || result == nullptr || !result->is_array()) {
    return Invalid("the Prometheus answer has no data.resultType string and data.result array");
  }
  const std::string& result_type = type->get_ref<const std::string&>();
  if (result_type == "scalar") {
    if (result->size() != 2) return Invalid("the Prometheus scalar is not [time, value]");
    return RateValue((*result)[1], "the Prometheus scalar");
  }
  if (result_type != "vector") {
    return Invalid("the Prometheus answer's resultType is neither vector nor scalar");
  }
  if (result->empty()) return Invalid("the Prometheus answer has no sample (empty vector)");
  const Json* value = Member((*result)[0], "value");
  if (value == nullptr || !value->is_array() || value->size() != 2) {
    return Invalid("the Prometheus answer's first sample has no [time, value]");
  }
  return RateValue((*value)[1], "the Prometheus sample");
}

absl::StatusOr<double> FetchControllerTarget(const vanguard::v1::DirectControllerStrategy& config,
                                             const UrlFetcher& fetch) {
  switch (config.source_case()) {
    case vanguard::v1::DirectControllerStrategy::kTargetQps:
      return config.target_qps();
    case vanguard::v1::DirectControllerStrategy::kJsonUrl:
      return FetchRate("json_url", config.json_url(), fetch, [&](const std::string& body) {
        return RateFromJson(body, config.json_field());
      });
    case vanguard::v1::DirectControllerStrategy::kPrometheusUrl:
      return FetchRate("prometheus_url", config.prometheus_url(), fetch, RateFromPrometheus);
    case vanguard::v1::DirectControllerStrategy::SOURCE_NOT_SET:
      break;
  }
  return Invalid("direct_controller.source: set json_url, prometheus_url or target_qps");
}

}  // namespace vanguard::worker
