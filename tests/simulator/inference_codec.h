// KServe v2 / Open Inference Protocol REST bodies for the simulated predictor: parses and
// validates an infer request, and writes the infer response, metadata and error bodies.
// The simulated model is an identity on its first input, converted to FP32:
//
//   absl::StatusOr<InferRequest> request = ParseInferRequest(body);
//   if (!request.ok()) reply(400, ErrorJson(request.status().message()));
//   std::string response;
//   AppendInferResponse("sim", *request, &response);
//
// Written from the protocol spec (github.com/kserve/open-inference-protocol), not shared
// with the replayer's client so a misreading on one side shows up as a failing test.
// Pure functions; any thread may call.
#ifndef VANGUARD_TESTS_SIMULATOR_INFERENCE_CODEC_H_
#define VANGUARD_TESTS_SIMULATOR_INFERENCE_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vanguard::sim {

inline constexpr char kOutputName[] = "output0";
inline constexpr char kModelVersion[] = "1";

struct InferRequest {
  std::optional<std::string> id;
  int input_count = 0;
  // Elements in every input tensor together (the product of each shape, summed): what the
  // request carries, from which the simulated model's cost follows (ContentCost).
  int64_t elements = 0;
  // The first input, which the simulated model echoes as output0.
  std::string first_input_name;
  std::vector<int64_t> first_input_shape;
  std::vector<float> first_input_values;  // BOOL as 0/1, BYTES as each element's length
};

// INVALID_ARGUMENT naming the offending field ("inputs[1].shape: ...") when the body is not
// a JSON object with a non-empty "inputs" array whose elements each have a string name, a
// shape of non-negative integers, a known datatype and data (flat or nested) holding exactly
// product(shape) elements of that datatype; also when "outputs" asks for an unknown output.
absl::StatusOr<InferRequest> ParseInferRequest(absl::string_view body);

// Appends {"model_name":..,"model_version":"1","id":..,"outputs":[{"name":"output0",..}]}.
void AppendInferResponse(absl::string_view model_name, const InferRequest& request,
                         std::string* out);

// {"error":"<message>"} with the message JSON-escaped.
std::string ErrorJson(absl::string_view message);

// GET /v2 body.
std::string ServerMetadataJson();
// GET /v2/models/{name} body.
std::string ModelMetadataJson(absl::string_view model_name);

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_INFERENCE_CODEC_H_
