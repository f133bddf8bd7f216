// `vanguard models register` flags to a v1::Model; see model_flags.h.
#include "orchestrator/cli/model_flags.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace vanguard::cli {
namespace {

absl::StatusOr<v1::Protocol> ParseProtocol(absl::string_view text) {
  return ParseEnumFlag("protocol", text, "PROTOCOL_", &v1::Protocol_Parse,
                       "is not one of kserve_v2_rest, kserve_v2_grpc, openai_completions, "
                       "openai_chat, http");
}

bool IsHttpProtocol(v1::Protocol protocol) {
  return protocol == v1::PROTOCOL_KSERVE_V2_REST || protocol == v1::PROTOCOL_OPENAI_COMPLETIONS ||
         protocol == v1::PROTOCOL_OPENAI_CHAT || protocol == v1::PROTOCOL_HTTP;
}

bool IsJsonProtocol(v1::Protocol protocol) {
  return protocol == v1::PROTOCOL_KSERVE_V2_REST || protocol == v1::PROTOCOL_OPENAI_COMPLETIONS ||
         protocol == v1::PROTOCOL_OPENAI_CHAT;
}

// Name, version, served name, framework and protocol (default kserve_v2_rest).
absl::Status ParseIdentity(const FlagSet& flags, v1::Model& model) {
  ASSIGN_OR_RETURN(std::optional<std::string> name, flags.NonEmptyText("name"));
  if (name.has_value()) model.set_name(*name);
  ASSIGN_OR_RETURN(std::optional<std::string> version, flags.NonEmptyText("model_version"));
  if (version.has_value()) model.set_version(*version);
  ASSIGN_OR_RETURN(std::optional<std::string> served_name, flags.NonEmptyText("served_name"));
  if (served_name.has_value()) model.set_served_name(*served_name);
  if (std::optional<std::string> framework = flags.Text("framework"); framework.has_value()) {
    model.set_framework(*framework);
  }
  if (std::optional<std::string> protocol = flags.Text("protocol"); protocol.has_value()) {
    ASSIGN_OR_RETURN(v1::Protocol parsed, ParseProtocol(*protocol));
    model.set_protocol(parsed);
  }
  if (model.protocol() == v1::PROTOCOL_UNSPECIFIED) model.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  return absl::OkStatus();
}

// --endpoint replaces the file's endpoints; every endpoint must fit the protocol.
absl::Status ParseEndpoints(const FlagSet& flags, v1::Model& model) {
  if (std::optional<std::string> endpoints = flags.Text("endpoint"); endpoints.has_value()) {
    ASSIGN_OR_RETURN(std::vector<std::string> list, SplitList("endpoint", *endpoints));
    model.clear_endpoints();
    for (std::string& endpoint : list) model.add_endpoints(std::move(endpoint));
  }
  for (const std::string& endpoint : model.endpoints()) {
    if (absl::StrContains(endpoint, ' ')) {
      return BadValue("endpoint", endpoint, "must not contain spaces");
    }
    if (IsHttpProtocol(model.protocol()) && !absl::StartsWith(endpoint, "http://") &&
        !absl::StartsWith(endpoint, "https://")) {
      return BadValue("endpoint", endpoint,
                      "must start with http:// or https:// for an HTTP protocol");
    }
  }
  return absl::OkStatus();
}

// A positive number of milliseconds, stored as a Duration; returns the value when given.
absl::StatusOr<std::optional<double>> PositiveMs(const FlagSet& flags, const std::string& name,
                                                 google::protobuf::Duration* out) {
  ASSIGN_OR_RETURN(std::optional<double> ms, flags.Number(name));
  if (!ms.has_value()) return ms;
  if (*ms <= 0) return BadValue(name, *flags.Text(name), "must be positive");
  SetProtoDuration(absl::Milliseconds(*ms), out);
  return ms;
}

// A number in [low, high] (low excluded when `low_open`); `rule` says so in the error.
absl::StatusOr<std::optional<double>> Bounded(const FlagSet& flags, const std::string& name,
                                              double low, bool low_open, double high,
                                              absl::string_view rule) {
  ASSIGN_OR_RETURN(std::optional<double> value, flags.Number(name));
  if (value.has_value() && (*value < low || (low_open && *value == low) || *value > high)) {
    return BadValue(name, *flags.Text(name), rule);
  }
  return value;
}

absl::Status ParseSlo(const FlagSet& flags, v1::Slo& slo) {
  ASSIGN_OR_RETURN(std::optional<double> p99_ms,
                   PositiveMs(flags, "p99_ms", slo.mutable_p99_latency()));
  google::protobuf::Duration p50;
  ASSIGN_OR_RETURN(std::optional<double> p50_ms, PositiveMs(flags, "p50_ms", &p50));
  if (p50_ms.has_value()) {
    if (p99_ms.has_value() && *p50_ms > *p99_ms) {
      return BadValue("p50_ms", *flags.Text("p50_ms"), "must not exceed --p99_ms");
    }
    *slo.mutable_p50_latency() = p50;
  }
  google::protobuf::Duration ttft, inter_token;
  ASSIGN_OR_RETURN(std::optional<double> ttft_ms, PositiveMs(flags, "ttft_p99_ms", &ttft));
  if (ttft_ms.has_value()) *slo.mutable_ttft_p99() = ttft;
  ASSIGN_OR_RETURN(std::optional<double> inter_token_ms,
                   PositiveMs(flags, "inter_token_p99_ms", &inter_token));
  if (inter_token_ms.has_value()) *slo.mutable_inter_token_p99() = inter_token;

  constexpr double kNoLimit = std::numeric_limits<double>::infinity();
  ASSIGN_OR_RETURN(
      std::optional<double> max_error_rate,
      Bounded(flags, "max_error_rate", 0, false, 1, "must be a fraction in [0, 1], e.g. 0.01"));
  if (max_error_rate.has_value()) slo.set_max_error_rate(*max_error_rate);
  ASSIGN_OR_RETURN(
      std::optional<double> min_ratio,
      Bounded(flags, "min_achieved_ratio", 0, true, 1, "must be a fraction in (0, 1], e.g. 0.99"));
  if (min_ratio.has_value()) slo.set_min_achieved_ratio(*min_ratio);
  ASSIGN_OR_RETURN(std::optional<double> gpu, Bounded(flags, "max_gpu_utilization", 0, true, 1,
                                                      "must be a fraction in (0, 1], e.g. 0.9"));
  if (gpu.has_value()) slo.set_max_gpu_utilization(*gpu);
  ASSIGN_OR_RETURN(std::optional<double> queue_depth,
                   Bounded(flags, "max_queue_depth", 0, true, kNoLimit, "must be positive"));
  if (queue_depth.has_value()) slo.set_max_queue_depth(*queue_depth);
  return absl::OkStatus();
}

// Warmup, hardware and the request template (JSON for the JSON protocols).
absl::Status ParseServing(const FlagSet& flags, v1::Model& model) {
  ASSIGN_OR_RETURN(std::optional<absl::Duration> warmup, flags.Duration("warmup"));
  if (warmup.has_value()) SetProtoDuration(*warmup, model.mutable_default_warmup());

  v1::Hardware* hardware = model.mutable_hardware();
  if (std::optional<std::string> accelerator = flags.Text("accelerator")) {
    hardware->set_accelerator(*accelerator);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> count,
                   flags.Integer("accelerator_count", 0, std::numeric_limits<int32_t>::max()));
  if (count.has_value()) hardware->set_accelerator_count(static_cast<int32_t>(*count));
  if (std::optional<std::string> pool = flags.Text("pool")) hardware->set_pool(*pool);

  if (std::optional<std::string> tmpl = flags.Text("request_template"); tmpl.has_value()) {
    if (IsJsonProtocol(model.protocol()) && !nlohmann::json::accept(*tmpl)) {
      return FlagError(
          "request_template",
          absl::StrCat("is not valid JSON (the ",
                       absl::AsciiStrToLower(
                           v1::Protocol_Name(model.protocol()).substr(sizeof("PROTOCOL_") - 1)),
                       " protocol sends it as the request body)"));
    }
    model.set_request_template(*tmpl);
  }
  return absl::OkStatus();
}

absl::Status CheckRequired(const v1::Model& model) {
  if (model.name().empty()) return FlagError("name", "is required (or give --from_file)");
  if (model.version().empty()) return FlagError("model_version", "is required (e.g. --version=v1)");
  if (model.endpoints().empty()) {
    return FlagError("endpoint", "is required: the predictor's base URL(s), comma-separated");
  }
  if (!HasDuration(model.slo().p99_latency())) {
    return FlagError("p99_ms", "is required: the SLO's p99 latency in milliseconds");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Model> ParseModelFlags(const FlagSet& flags) {
  v1::Model model;
  if (std::optional<std::string> path = flags.Text("from_file"); path.has_value()) {
    RETURN_IF_ERROR(ReadJsonMessage("from_file", *path, &model));
  }
  RETURN_IF_ERROR(ParseIdentity(flags, model));
  RETURN_IF_ERROR(ParseEndpoints(flags, model));
  RETURN_IF_ERROR(ParseSlo(flags, *model.mutable_slo()));
  RETURN_IF_ERROR(ParseServing(flags, model));
  RETURN_IF_ERROR(CheckRequired(model));
  return model;
}

}  // namespace vanguard::cli
