// A parser for the Prometheus text exposition format (version 0.0.4), the page a predictor
// serves on /metrics (Triton, vLLM, TorchServe, TF Serving, the simulated predictor).
//
//   ASSIGN_OR_RETURN(std::vector<PrometheusSample> samples, ParsePrometheusText(body));
//   std::optional<double> waiting = SumSamples(samples, "vllm:num_requests_waiting");
//
// Handles comments (# HELP / # TYPE / others), label sets with escaped values (\\ \" \n),
// optional timestamps, NaN and +/-Inf, blank lines and CRLF line ends. A malformed line is
// INVALID_ARGUMENT naming its line number; nothing is partially returned.
// Stateless; any thread.
#ifndef VANGUARD_COMMON_PROMETHEUS_TEXT_H_
#define VANGUARD_COMMON_PROMETHEUS_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vanguard {

struct PrometheusSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

absl::StatusOr<std::vector<PrometheusSample>> ParsePrometheusText(std::string_view text);

// Sum of `name` over every label set (NaN samples skipped); nullopt when no sample has it.
std::optional<double> SumSamples(const std::vector<PrometheusSample>& samples,
                                 std::string_view name);

}  // namespace vanguard

#endif  // VANGUARD_COMMON_PROMETHEUS_TEXT_H_
