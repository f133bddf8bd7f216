// KServe v2 REST bodies for the simulated predictor; see inference_codec.h. Pure functions.
#include "tests/simulator/inference_codec.h"

#include <charconv>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace vanguard::sim {
namespace {

using nlohmann::json;

enum class ElementKind { kBool, kBytes, kSigned, kUnsigned, kFloat };

struct Datatype {
  absl::string_view name;
  ElementKind kind;
  double min = 0;  // integer range, inclusive
  double max = 0;
};

constexpr Datatype kDatatypes[] = {
    {"BOOL", ElementKind::kBool},
    {"UINT8", ElementKind::kUnsigned, 0, 255},
    {"UINT16", ElementKind::kUnsigned, 0, 65535},
    {"UINT32", ElementKind::kUnsigned, 0, 4294967295.0},
    {"UINT64", ElementKind::kUnsigned, 0, 18446744073709551615.0},
    {"INT8", ElementKind::kSigned, -128, 127},
    {"INT16", ElementKind::kSigned, -32768, 32767},
    {"INT32", ElementKind::kSigned, -2147483648.0, 2147483647.0},
    {"INT64", ElementKind::kSigned, -9223372036854775808.0, 9223372036854775807.0},
    {"FP16", ElementKind::kFloat},
    {"FP32", ElementKind::kFloat},
    {"FP64", ElementKind::kFloat},
    {"BYTES", ElementKind::kBytes},
};

const Datatype* FindDatatype(absl::string_view name) {
  for (const Datatype& datatype : kDatatypes) {
    if (datatype.name == name) return &datatype;
  }
  return nullptr;
}

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

// Walks `data` (row-major, flat or nested arrays) checking each element against the
// datatype; counts the elements and, when `values` is set, appends them as floats.
absl::Status CollectElements(const json& data, const Datatype& datatype, const std::string& field,
                             int depth, int64_t* count, std::vector<float>* values) {
  if (data.is_array()) {
    if (depth > 32) return Invalid(field, "data is nested more than 32 levels deep");
    for (const json& element : data) {
      if (absl::Status status = CollectElements(element, datatype, field, depth + 1, count, values);
          !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }
  float value = 0;
  switch (datatype.kind) {
    case ElementKind::kBool:
      if (!data.is_boolean()) {
        return Invalid(field, absl::StrCat("element ", *count, " must be a boolean for BOOL"));
      }
      value = data.get<bool>() ? 1.0f : 0.0f;
      break;
    case ElementKind::kBytes:
      if (!data.is_string()) {
        return Invalid(field, absl::StrCat("element ", *count, " must be a string for BYTES"));
      }
      value = static_cast<float>(data.get_ref<const std::string&>().size());
      break;
    case ElementKind::kSigned:
    case ElementKind::kUnsigned: {
      if (!data.is_number_integer()) {
        return Invalid(field,
                       absl::StrCat("element ", *count, " must be an integer for ", datatype.name));
      }
      const double number = data.is_number_unsigned() ? static_cast<double>(data.get<uint64_t>())
                                                      : static_cast<double>(data.get<int64_t>());
      if (number < datatype.min || number > datatype.max) {
        return Invalid(field,
                       absl::StrCat("element ", *count, " is out of range for ", datatype.name));
      }
      value = static_cast<float>(number);
      break;
    }
    case ElementKind::kFloat:
      if (!data.is_number()) {
        return Invalid(field,
                       absl::StrCat("element ", *count, " must be a number for ", datatype.name));
      }
      value = data.get<float>();
      break;
  }
  ++*count;
  if (values != nullptr) values->push_back(value);
  return absl::OkStatus();
}

absl::Status ParseInput(const json& input, int index, InferRequest* request) {
  const std::string field = absl::StrCat("inputs[", index, "]");
  if (!input.is_object()) return Invalid(field, "must be an object");

  auto name = input.find("name");
  if (name == input.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return Invalid(field + ".name", "must be a non-empty string");
  }

  auto shape = input.find("shape");
  if (shape == input.end() || !shape->is_array()) {
    return Invalid(field + ".shape", "must be an array of non-negative integers");
  }
  std::vector<int64_t> dims;
  int64_t expected_elements = 1;
  for (const json& dim : *shape) {
    if (!dim.is_number_integer() || (!dim.is_number_unsigned() && dim.get<int64_t>() < 0)) {
      return Invalid(field + ".shape", "must be an array of non-negative integers");
    }
    const uint64_t size = dim.get<uint64_t>();
    if (size > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) ||
        (size != 0 &&
         expected_elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(size))) {
      return Invalid(field + ".shape", "describes too many elements");
    }
    dims.push_back(static_cast<int64_t>(size));
    expected_elements *= static_cast<int64_t>(size);
  }

  auto datatype_name = input.find("datatype");
  if (datatype_name == input.end() || !datatype_name->is_string()) {
    return Invalid(field + ".datatype", "must be a string such as \"FP32\"");
  }
  const Datatype* datatype = FindDatatype(datatype_name->get_ref<const std::string&>());
  if (datatype == nullptr) {
    return Invalid(field + ".datatype",
                   absl::StrCat("unknown datatype \"", datatype_name->get_ref<const std::string&>(),
                                "\" (expected BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, "
                                "FP64 or BYTES)"));
  }

  auto data = input.find("data");
  if (data == input.end() || !data->is_array()) {
    return Invalid(field + ".data", "must be an array");
  }
  const bool first = index == 0;
  std::vector<float>* values = first ? &request->first_input_values : nullptr;
  if (values != nullptr)
    values->reserve(static_cast<size_t>(
        std::min<int64_t>(expected_elements, static_cast<int64_t>(data->size()) + 1)));
  int64_t count = 0;
  if (absl::Status status = CollectElements(*data, *datatype, field + ".data", 0, &count, values);
      !status.ok()) {
    return status;
  }
  if (count != expected_elements) {
    return Invalid(field + ".data",
                   absl::StrCat("holds ", count, " elements but shape needs ", expected_elements));
  }
  request->elements += count;
  if (first) {
    request->first_input_name = name->get<std::string>();
    request->first_input_shape = std::move(dims);
  }
  return absl::OkStatus();
}

void AppendJsonString(absl::string_view text, std::string* out) {
  out->append(json(std::string_view(text.data(), text.size()))
                  .dump(-1, ' ', false, json::error_handler_t::replace));
}

void AppendFloat(float value, std::string* out) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  // JSON has no NaN/Infinity; they cannot come from parsed JSON numbers anyway, but FP32
  // conversion of a huge FP64 value can overflow to infinity.
  if (ec != std::errc() || value != value || value == std::numeric_limits<float>::infinity() ||
      value == -std::numeric_limits<float>::infinity()) {
    out->append("null");
    return;
  }
  out->append(buffer, end);
}

}  // namespace

absl::StatusOr<InferRequest> ParseInferRequest(absl::string_view body) {
  const json document =
      json::parse(std::string_view(body.data(), body.size()), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return Invalid("body", "is not valid JSON");
  if (!document.is_object()) return Invalid("body", "must be a JSON object");

  InferRequest request;
  if (auto id = document.find("id"); id != document.end()) {
    if (!id->is_string()) return Invalid("id", "must be a string");
    request.id = id->get<std::string>();
  }

  auto inputs = document.find("inputs");
  if (inputs == document.end() || !inputs->is_array() || inputs->empty()) {
    return Invalid("inputs", "must be a non-empty array");
  }
  int index = 0;
  for (const json& input : *inputs) {
    if (absl::Status status = ParseInput(input, index, &request); !status.ok()) return status;
    ++index;
  }
  request.input_count = index;

  if (auto outputs = document.find("outputs"); outputs != document.end()) {
    if (!outputs->is_array()) return Invalid("outputs", "must be an array");
    int output_index = 0;
    for (const json& output : *outputs) {
      const std::string field = absl::StrCat("outputs[", output_index++, "].name");
      if (!output.is_object()) return Invalid(field, "must be given");
      auto name = output.find("name");
      if (name == output.end() || !name->is_string()) return Invalid(field, "must be a string");
      if (name->get_ref<const std::string&>() != kOutputName) {
        return Invalid(field, absl::StrCat("unknown output \"", name->get_ref<const std::string&>(),
                                           "\"; the model has only \"", kOutputName, "\""));
      }
    }
  }
  return request;
}

void AppendInferResponse(absl::string_view model_name, const InferRequest& request,
                         std::string* out) {
  out->append("{\"model_name\":");
  AppendJsonString(model_name, out);
  out->append(",\"model_version\":\"");
  out->append(kModelVersion);
  out->append("\"");
  if (request.id.has_value()) {
    out->append(",\"id\":");
    AppendJsonString(*request.id, out);
  }
  out->append(",\"outputs\":[{\"name\":\"");
  out->append(kOutputName);
  out->append("\",\"shape\":[");
  for (size_t i = 0; i < request.first_input_shape.size(); ++i) {
    if (i > 0) out->push_back(',');
    char buffer[24];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), request.first_input_shape[i]);
    out->append(buffer, end);
  }
  out->append("],\"datatype\":\"FP32\",\"data\":[");
  for (size_t i = 0; i < request.first_input_values.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendFloat(request.first_input_values[i], out);
  }
  out->append("]}]}");
}

std::string ErrorJson(absl::string_view message) {
  std::string out = "{\"error\":";
  AppendJsonString(message, &out);
  out.push_back('}');
  return out;
}

std::string ServerMetadataJson() {
  return json{
      {"name", "vanguard-sim-predictor"}, {"version", "0.1.0"}, {"extensions", json::array()}}
      .dump();
}

std::string ModelMetadataJson(absl::string_view model_name) {
  json tensor_in = {{"name", "input0"}, {"datatype", "FP32"}, {"shape", {-1, -1}}};
  json tensor_out = {{"name", kOutputName}, {"datatype", "FP32"}, {"shape", {-1, -1}}};
  return json{{"name", std::string(model_name)},
              {"versions", json::array({kModelVersion})},
              {"platform", "vanguard_sim"},
              {"inputs", json::array({tensor_in})},
              {"outputs", json::array({tensor_out})}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace vanguard::sim
