// Profile files of the simulated predictor; see profile.h. Pure; any thread.
#include "tests/simulator/profile.h"

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace vanguard::sim {
namespace internal {
// Generated from profiles/*.json by CMake (profiles_embedded.cc).
struct EmbeddedProfile {
  const char* name;
  const char* json;
};
extern const EmbeddedProfile kEmbeddedProfiles[];
extern const int kEmbeddedProfileCount;
}  // namespace internal

namespace {

using nlohmann::json;

absl::Duration Ms(double ms) { return absl::Nanoseconds(ms * 1e6); }

absl::Status Invalid(absl::string_view key, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("profile field \"", key, "\": ", rule));
}

// Reads a number into *out; INVALID_ARGUMENT naming `key` unless it is a number in [lo, hi].
absl::Status Number(const json& value, absl::string_view key, double lo, double hi, double* out) {
  if (!value.is_number()) return Invalid(key, "must be a number");
  const double v = value.get<double>();
  if (!(v >= lo && v <= hi)) return Invalid(key, absl::StrCat("must be in [", lo, ", ", hi, "]"));
  *out = v;
  return absl::OkStatus();
}

absl::Status Integer(const json& value, absl::string_view key, int64_t lo, int64_t hi,
                     int64_t* out) {
  if (!value.is_number_integer()) return Invalid(key, "must be an integer");
  const int64_t v = value.get<int64_t>();
  if (v < lo || v > hi) return Invalid(key, absl::StrCat("must be in [", lo, ", ", hi, "]"));
  *out = v;
  return absl::OkStatus();
}

using FieldSetter = std::function<absl::Status(const json&, absl::string_view key)>;

// Applies `setters` to every key of `object`; unknown keys are INVALID_ARGUMENT.
absl::Status ApplyObject(const json& object, absl::string_view prefix,
                         const std::map<std::string, FieldSetter>& setters) {
  if (!object.is_object()) return Invalid(prefix, "must be a JSON object");
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : absl::StrCat(prefix, ".", it.key());
    auto setter = setters.find(it.key());
    if (setter == setters.end()) return Invalid(key, "unknown key");
    if (absl::Status status = setter->second(it.value(), key); !status.ok()) return status;
  }
  return absl::OkStatus();
}

FieldSetter DurationMs(absl::Duration* out, double hi_ms = 3.6e6) {
  return [out, hi_ms](const json& v, absl::string_view key) {
    double ms = 0;
    if (absl::Status s = Number(v, key, 0, hi_ms, &ms); !s.ok()) return s;
    *out = Ms(ms);
    return absl::OkStatus();
  };
}

FieldSetter Double(double* out, double lo, double hi) {
  return [=](const json& v, absl::string_view key) { return Number(v, key, lo, hi, out); };
}

template <typename IntT>
FieldSetter Int(IntT* out, int64_t lo, int64_t hi) {
  return [=](const json& v, absl::string_view key) {
    int64_t value = 0;
    if (absl::Status s = Integer(v, key, lo, hi, &value); !s.ok()) return s;
    *out = static_cast<IntT>(value);
    return absl::OkStatus();
  };
}

FieldSetter String(std::string* out) {
  return [out](const json& v, absl::string_view key) {
    if (!v.is_string()) return Invalid(key, "must be a string");
    *out = v.get<std::string>();
    return absl::OkStatus();
  };
}

}  // namespace

absl::StatusOr<Profile> ParseProfileJson(absl::string_view text) {
  const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError("profile is not valid JSON");
  Profile profile;
  SlotScheduler::Config& batch = profile.batch;
  TokenScheduler::Config& gen = profile.generative;
  Perturbations& p = batch.perturbations;
  double warmup_s = 0;
  bool warmup_set = false;

  const std::map<std::string, FieldSetter> output_setters = {
      {"distribution",
       [&](const json& v, absl::string_view key) {
         const std::string kind = v.is_string() ? v.get<std::string>() : "";
         if (kind == "constant") {
           gen.output_tokens.kind = OutputLengthDistribution::Kind::kConstant;
         } else if (kind == "uniform") {
           gen.output_tokens.kind = OutputLengthDistribution::Kind::kUniform;
         } else if (kind == "lognormal") {
           gen.output_tokens.kind = OutputLengthDistribution::Kind::kLognormal;
         } else {
           return Invalid(key, "must be \"constant\", \"uniform\" or \"lognormal\"");
         }
         return absl::OkStatus();
       }},
      {"mean", Double(&gen.output_tokens.mean, 1e-9, 1e6)},
      {"sigma", Double(&gen.output_tokens.sigma, 0, 5)},
      {"min", Int(&gen.output_tokens.min, 1, 1000000)},
      {"max", Int(&gen.output_tokens.max, 1, 1000000)},
  };
  const std::map<std::string, FieldSetter> generative_setters = {
      {"max_seqs", Int(&gen.max_seqs, 1, 100000)},
      {"token_base_ms", DurationMs(&gen.token_base)},
      {"token_per_seq_ms", DurationMs(&gen.token_per_seq)},
      {"prefill_ms_per_token", DurationMs(&gen.prefill_per_token)},
      {"prompt_tokens", Int(&gen.prompt_tokens, 0, 10000000)},
      {"kv_cache_tokens", Int(&gen.kv_cache_tokens, 0, int64_t{1} << 40)},
      {"output_tokens",
       [&](const json& v, absl::string_view key) { return ApplyObject(v, key, output_setters); }},
  };
  double ttft_ms = -1;
  const std::map<std::string, FieldSetter> slo_setters = {
      {"latency_percentile", Double(&profile.slo.latency_percentile, 1, 100)},
      {"latency_ms", DurationMs(&profile.slo.latency_limit, 3.6e7)},
      {"max_error_rate", Double(&profile.slo.max_error_rate, 0, 1)},
      {"ttft_ms", Double(&ttft_ms, 0, 3.6e7)},
  };
  const std::map<std::string, FieldSetter> setters = {
      {"name", String(&profile.name)},
      {"description", String(&profile.description)},
      {"mode",
       [&](const json& v, absl::string_view key) {
         const std::string mode = v.is_string() ? v.get<std::string>() : "";
         if (mode == "batch") {
           profile.mode = ProfileMode::kBatch;
         } else if (mode == "generative") {
           profile.mode = ProfileMode::kGenerative;
         } else {
           return Invalid(key, "must be \"batch\" or \"generative\"");
         }
         return absl::OkStatus();
       }},
      {"slots", Int(&batch.slots, 1, 4096)},
      {"base_ms", DurationMs(&batch.service_time)},
      {"per_item_ms", DurationMs(&batch.per_item_time)},
      {"max_batch", Int(&batch.max_batch, 1, 65536)},
      {"max_queue_delay_ms", DurationMs(&batch.max_queue_delay)},
      {"max_queue", Int(&batch.max_queue, 0, int64_t{1} << 40)},
      {"jitter_sigma", Double(&p.jitter_sigma, 0, 3)},
      {"warmup_factor", Double(&p.warmup_factor, 1, 1000)},
      {"warmup_s",
       [&](const json& v, absl::string_view key) {
         warmup_set = true;
         return Number(v, key, 0, 86400, &warmup_s);
       }},
      {"stall_rate_per_s", Double(&p.stall_rate_per_s, 0, 1000)},
      {"stall_ms", DurationMs(&p.stall_duration)},
      {"colocation", Double(&p.colocation, 0, 0.95)},
      {"error_rate", Double(&p.error_rate, 0, 1)},
      {"seed", Int(&p.seed, 0, int64_t{1} << 62)},
      {"cost_sigma", Double(&profile.cost_sigma, 0, 2)},
      {"nominal_elements", Int(&profile.nominal_elements, 0, int64_t{1} << 40)},
      {"generative",
       [&](const json& v, absl::string_view key) {
         return ApplyObject(v, key, generative_setters);
       }},
      {"slo",
       [&](const json& v, absl::string_view key) { return ApplyObject(v, key, slo_setters); }},
  };
  if (absl::Status status = ApplyObject(root, "", setters); !status.ok()) return status;
  if (warmup_set) p.warmup = absl::Nanoseconds(warmup_s * 1e9);
  if (ttft_ms >= 0) profile.slo.ttft_limit = Ms(ttft_ms);
  if (absl::Status status = FinalizeProfile(profile); !status.ok()) return status;
  return profile;
}

absl::StatusOr<std::string> BatchProfileToJson(const Profile& profile) {
  if (profile.mode != ProfileMode::kBatch) {
    return absl::UnimplementedError("only batch profiles are written as JSON");
  }
  const SlotScheduler::Config& b = profile.batch;
  const Perturbations& p = b.perturbations;
  const auto ms = [](absl::Duration d) { return absl::ToDoubleMilliseconds(d); };
  json out = {{"name", profile.name},
              {"description", profile.description},
              {"mode", "batch"},
              {"slots", b.slots},
              {"base_ms", ms(b.service_time)},
              {"per_item_ms", ms(b.per_item_time)},
              {"max_batch", b.max_batch},
              {"max_queue_delay_ms", ms(b.max_queue_delay)},
              {"max_queue", b.max_queue},
              {"jitter_sigma", p.jitter_sigma},
              {"warmup_factor", p.warmup_factor},
              {"warmup_s", absl::ToDoubleSeconds(p.warmup)},
              {"stall_rate_per_s", p.stall_rate_per_s},
              {"stall_ms", ms(p.stall_duration)},
              {"colocation", p.colocation},
              {"error_rate", p.error_rate},
              {"seed", p.seed},
              {"cost_sigma", profile.cost_sigma},
              {"nominal_elements", profile.nominal_elements},
              {"slo",
               {{"latency_percentile", profile.slo.latency_percentile},
                {"latency_ms", ms(profile.slo.latency_limit)},
                {"max_error_rate", profile.slo.max_error_rate}}}};
  return out.dump(2);
}

absl::Status FinalizeProfile(Profile& profile) {
  profile.generative.slots = profile.batch.slots;
  profile.generative.max_queue = profile.batch.max_queue;
  profile.generative.perturbations = profile.batch.perturbations;
  if (profile.slo.latency_limit <= absl::ZeroDuration()) {
    return Invalid("slo.latency_ms", "must be positive");
  }
  if (profile.mode == ProfileMode::kGenerative) {
    return TokenScheduler::Validate(profile.generative);
  }
  return SlotScheduler::Validate(profile.batch);
}

std::vector<std::string> NamedProfiles() {
  std::vector<std::string> names;
  for (int i = 0; i < internal::kEmbeddedProfileCount; ++i) {
    names.push_back(internal::kEmbeddedProfiles[i].name);
  }
  return names;
}

absl::StatusOr<Profile> LoadProfile(absl::string_view name_or_path) {
  if (absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".json")) {
    std::ifstream in{std::string(name_or_path)};
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read profile file \"", name_or_path, "\""));
    }
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Profile> profile = ParseProfileJson(text.str());
    if (!profile.ok()) {
      return absl::Status(profile.status().code(),
                          absl::StrCat(name_or_path, ": ", profile.status().message()));
    }
    return profile;
  }
  for (int i = 0; i < internal::kEmbeddedProfileCount; ++i) {
    if (name_or_path == internal::kEmbeddedProfiles[i].name) {
      absl::StatusOr<Profile> profile = ParseProfileJson(internal::kEmbeddedProfiles[i].json);
      if (!profile.ok()) {
        return absl::InternalError(absl::StrCat("built-in profile \"", name_or_path,
                                                "\" is broken: ", profile.status().message()));
      }
      return profile;
    }
  }
  return absl::NotFoundError(
      absl::StrCat("unknown profile \"", name_or_path, "\"; named profiles: ",
                   absl::StrJoin(NamedProfiles(), ", "), " (or give a path to a .json file)"));
}

double SaturationRps(const Profile& profile) {
  if (profile.mode == ProfileMode::kGenerative) {
    return TokenScheduler(profile.generative).SaturationRps();
  }
  return SlotScheduler(profile.batch).SaturationRps();
}

}  // namespace vanguard::sim
