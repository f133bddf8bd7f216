// Unit tests of the simulated predictor's KServe v2 REST body parsing and writing.
#include "tests/simulator/inference_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vanguard::sim {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ParseError(absl::string_view body) {
  absl::StatusOr<InferRequest> request = ParseInferRequest(body);
  if (request.ok()) return "<ok>";
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(request.status().message());
}

TEST(InferenceCodecTest, ParsesAValidRequestAndEchoesTheFirstInputAsFp32) {
  absl::StatusOr<InferRequest> request = ParseInferRequest(R"({
    "id": "req-7",
    "inputs": [
      {"name": "input0", "shape": [2, 2], "datatype": "INT32", "data": [[1, 2], [3, -4]]},
      {"name": "flags", "shape": [3], "datatype": "BOOL", "data": [true, false, true]}
    ],
    "outputs": [{"name": "output0"}]
  })");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->id, "req-7");
  EXPECT_EQ(request->input_count, 2);
  EXPECT_EQ(request->elements, 4 + 3);  // every input counts towards the request's cost
  EXPECT_THAT(request->first_input_shape, ElementsAre(2, 2));
  EXPECT_THAT(request->first_input_values, ElementsAre(1, 2, 3, -4));

  std::string body;
  AppendInferResponse("resnet", *request, &body);
  const json response = json::parse(body);
  EXPECT_EQ(response["model_name"], "resnet");
  EXPECT_EQ(response["model_version"], "1");
  EXPECT_EQ(response["id"], "req-7");
  ASSERT_EQ(response["outputs"].size(), 1u);
  EXPECT_EQ(response["outputs"][0]["name"], "output0");
  EXPECT_EQ(response["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(response["outputs"][0]["shape"], json::array({2, 2}));
  EXPECT_EQ(response["outputs"][0]["data"], json::array({1.0, 2.0, 3.0, -4.0}));
}

TEST(InferenceCodecTest, ResponseOmitsIdWhenRequestHadNone) {
  absl::StatusOr<InferRequest> request = ParseInferRequest(
      R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[0.5,1e3,-2.25]}]})");
  ASSERT_TRUE(request.ok()) << request.status();
  std::string body;
  AppendInferResponse("sim", *request, &body);
  const json response = json::parse(body);
  EXPECT_FALSE(response.contains("id"));
  EXPECT_EQ(response["outputs"][0]["data"], json::array({0.5, 1000.0, -2.25}));
}

TEST(InferenceCodecTest, BytesInputsEchoTheirLengths) {
  absl::StatusOr<InferRequest> request = ParseInferRequest(
      R"({"inputs":[{"name":"text","shape":[2],"datatype":"BYTES","data":["abc","hello"]}]})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->first_input_values, ElementsAre(3, 5));
}

TEST(InferenceCodecTest, RejectsMalformedBodiesNamingTheField) {
  EXPECT_THAT(ParseError("not json"), HasSubstr("body"));
  EXPECT_THAT(ParseError("[1,2]"), HasSubstr("body: must be a JSON object"));
  EXPECT_THAT(ParseError("{}"), HasSubstr("inputs"));
  EXPECT_THAT(ParseError(R"({"inputs": []})"), HasSubstr("inputs"));
  EXPECT_THAT(ParseError(R"({"inputs": {"name": "x"}})"), HasSubstr("inputs"));
  EXPECT_THAT(
      ParseError(R"({"id": 5, "inputs": [{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]})"),
      HasSubstr("id"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"shape":[1],"datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[0].name"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[-1],"datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[0].shape"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"FP33","data":[1]}]})"),
              HasSubstr("inputs[0].datatype"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"FP32"}]})"),
              HasSubstr("inputs[0].data"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"FP32","data":[1]},
                                         {"name":"y","shape":[3],"datatype":"FP32","data":[1,2]}]})"),
              HasSubstr("inputs[1].data: holds 2 elements but shape needs 3"));
  EXPECT_THAT(
      ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]})"),
      HasSubstr("out of range"));
  EXPECT_THAT(
      ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"INT32","data":[1.5]}]})"),
      HasSubstr("integer"));
  EXPECT_THAT(
      ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"FP32","data":["a"]}]})"),
      HasSubstr("number"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],
                             "outputs": [{"name":"logits"}]})"),
              HasSubstr("outputs[0].name"));
  EXPECT_THAT(ParseError(R"({"inputs": [{"name":"x","shape":[4294967296,4294967296,4294967296],
                             "datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[0].shape"));
}

TEST(InferenceCodecTest, ErrorJsonEscapesTheMessage) {
  const json error = json::parse(ErrorJson("bad \"quote\"\n"));
  EXPECT_EQ(error["error"], "bad \"quote\"\n");
}

TEST(InferenceCodecTest, ModelMetadataNamesTheModelAndItsTensors) {
  const json metadata = json::parse(ModelMetadataJson("resnet"));
  EXPECT_EQ(metadata["name"], "resnet");
  EXPECT_EQ(metadata["versions"], json::array({"1"}));
  EXPECT_EQ(metadata["platform"], "vanguard_sim");
  EXPECT_EQ(metadata["inputs"][0]["name"], "input0");
  EXPECT_EQ(metadata["outputs"][0]["name"], "output0");
  EXPECT_EQ(json::parse(ServerMetadataJson())["name"], "vanguard-sim-predictor");
}

}  // namespace
}  // namespace vanguard::sim
