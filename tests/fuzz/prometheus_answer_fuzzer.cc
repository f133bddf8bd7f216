// Fuzzes the direct controller's Prometheus answer reader (RateFromPrometheus). Input: the
// body of a /api/v1/query answer.
//
// Contract checked: never throws or crashes; a rate is finite, > 0 and at most
// kMaxControllerRateQps; an error is INVALID_ARGUMENT with a fixed, short message that holds
// nothing of the answer (no kSecretMarker: not from a sample, a type, or Prometheus's error
// text).
#include <cmath>
#include <string>

#include "absl/status/statusor.h"
#include "tests/fuzz/fuzz_harnesses.h"
#include "worker/controller_rate_source.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "prometheus_answer";

}  // namespace

int FuzzPrometheusAnswer(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<double> rate = worker::RateFromPrometheus(body);
  if (rate.ok()) {
    VANGUARD_FUZZ_CHECK(kName, std::isfinite(*rate));
    VANGUARD_FUZZ_CHECK(kName, *rate > 0 && *rate <= worker::kMaxControllerRateQps);
    return 0;
  }
  VANGUARD_FUZZ_CHECK(kName, rate.status().code() == absl::StatusCode::kInvalidArgument);
  VANGUARD_FUZZ_CHECK(kName, rate.status().message().size() <= 120);
  VANGUARD_FUZZ_CHECK(kName, rate.status().message().find(kSecretMarker) == std::string::npos);
  return 0;
}

}  // namespace vanguard::fuzz
