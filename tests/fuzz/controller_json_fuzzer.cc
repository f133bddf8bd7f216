// Fuzzes the direct controller's JSON reader (RateFromJson) and the error wrapping of
// FetchControllerTarget. Input: the first line is the dotted field path (json_field, at most
// 256 bytes; no newline: the default path), the rest is the autoscaler's answer.
//
// Contract checked: never throws or crashes; a rate is finite, > 0 and at most
// kMaxControllerRateQps; an error is INVALID_ARGUMENT of bounded length that holds nothing
// of the answer (kSecretMarker, unless the path itself holds it).
#include <cmath>
#include <string>

#include "absl/status/statusor.h"
#include "tests/fuzz/fuzz_harnesses.h"
#include "worker/controller_rate_source.h"

namespace vanguard::fuzz {
namespace {

constexpr char kName[] = "controller_json";
constexpr size_t kMaxPathBytes = 256;

// Whether `status` copied the secret marker from the answer (the path may be echoed).
bool Leaks(const absl::Status& status, const std::string& path) {
  return path.find(kSecretMarker) == std::string::npos &&
         status.message().find(kSecretMarker) != absl::string_view::npos;
}

void CheckRate(const absl::StatusOr<double>& rate, const std::string& path) {
  if (rate.ok()) {
    VANGUARD_FUZZ_CHECK(kName, std::isfinite(*rate));
    VANGUARD_FUZZ_CHECK(kName, *rate > 0 && *rate <= worker::kMaxControllerRateQps);
    return;
  }
  VANGUARD_FUZZ_CHECK(kName, rate.status().code() == absl::StatusCode::kInvalidArgument);
  // Fixed text plus the path (at most twice): nothing of the answer.
  VANGUARD_FUZZ_CHECK(kName, rate.status().message().size() <= 250 + 2 * path.size());
  VANGUARD_FUZZ_CHECK(kName, !Leaks(rate.status(), path));
}

}  // namespace

int FuzzControllerJson(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  std::string path;
  std::string body = input;
  if (newline != std::string::npos && newline <= kMaxPathBytes) {
    path = input.substr(0, newline);
    body = input.substr(newline + 1);
  }
  CheckRate(worker::RateFromJson(body, path), path);

  vanguard::v1::DirectControllerStrategy config;
  config.set_json_url("http://autoscaler.test:8080/target");
  config.set_json_field(path);
  absl::StatusOr<double> fetched = worker::FetchControllerTarget(
      config, [&](const std::string&) -> absl::StatusOr<std::string> { return body; });
  VANGUARD_FUZZ_CHECK(kName, fetched.ok() || fetched.status().message().find(
                                                 "autoscaler.test:8080") != std::string::npos);
  VANGUARD_FUZZ_CHECK(kName, !Leaks(fetched.status(), path));
  return 0;
}

}  // namespace vanguard::fuzz
