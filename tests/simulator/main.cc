// vanguard-sim-predictor: a model server whose true capacity is known from its profile, for
// Vanguard's end-to-end tests, demo and accuracy benchmark. Parses flags into a Profile
// (named or a JSON file, flags override its fields), then either serves it (SimPredictorServer;
// the main thread waits for SIGTERM/SIGINT) or, with --ground_truth, prints the profile's
// true max sustainable rate under an SLO computed by discrete-event simulation and exits.
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "tests/simulator/ground_truth.h"
#include "tests/simulator/profile.h"
#include "tests/simulator/sim_predictor_server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:8000",
          "HOST:PORT to serve HTTP on; port 0 picks a free port (printed as LISTENING host:port).");
ABSL_FLAG(std::string, grpc_listen, "",
          "If set, HOST:PORT to serve the KServe v2 gRPC API (inference.GRPCInferenceService) "
          "on; port 0 picks a free port (printed as GRPC_LISTENING host:port).");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound HTTP port is written to this file (atomically) once listening.");
ABSL_FLAG(std::string, model_name, "sim",
          "Name of the one model served at /v2/models/{name} (and as the OpenAI model); other "
          "names get 404.");
ABSL_FLAG(int, threads, 1, "Event-loop threads serving connections.");
ABSL_FLAG(std::string, profile, "",
          "Named profile (embedding, ranking, vision, nlp_encoder, llm) or path to a profile "
          "JSON file (see tests/simulator/profile.h). Flags below override its fields. Without "
          "it: 4 slots of 10 ms, no batching, deterministic (capacity slots*1000/service_ms).");
// Batch model.
ABSL_FLAG(int, slots, 4, "Parallel executors (GPU instances / engines).");
ABSL_FLAG(double, service_ms, 10.0,
          "Fixed cost of one batch in ms (of one request when --max_batch=1). Without a profile "
          "and perturbations the true capacity is slots*max_batch*1000/(service_ms + "
          "per_item_ms*max_batch) requests/s.");
ABSL_FLAG(double, per_item_ms, 0, "Cost added per request in a batch, in ms.");
ABSL_FLAG(int, max_batch, 1, "Largest batch an idle slot takes from the queue.");
ABSL_FLAG(double, max_queue_delay_ms, 0,
          "How long an idle slot waits, from the oldest queued arrival, for a fuller batch (ms).");
ABSL_FLAG(int64_t, max_queue, 0,
          "Requests allowed to wait; arrivals beyond it get 503 / gRPC UNAVAILABLE at once. "
          "0 = unlimited.");
ABSL_FLAG(double, jitter_sigma, 0,
          "Lognormal jitter of service times (log-space sigma, mean-preserving); 0 = none.");
ABSL_FLAG(double, warmup_factor, 1,
          "Service time right after start is multiplied by this, decaying linearly to 1 over "
          "--warmup_s.");
ABSL_FLAG(double, warmup_s, 0, "Length of the warmup period in seconds.");
ABSL_FLAG(double, stall_rate_per_s, 0,
          "Latency spikes: stalls of every slot start as a Poisson process of this rate.");
ABSL_FLAG(double, stall_ms, 0, "Length of each stall in ms.");
ABSL_FLAG(double, colocation, 0,
          "Fraction [0, 0.95] of capacity stolen by a co-located neighbour (service time / "
          "(1 - colocation)); also settable at run time: POST /admin/colocation?fraction=F.");
ABSL_FLAG(double, error_rate, 0, "Probability that a served request fails (HTTP 500).");
ABSL_FLAG(int64_t, nominal_elements, 0,
          "Content-dependent cost: a KServe v2 request costs (tensor elements in all its "
          "inputs) / this, clamped to [1/16, 16], times the nominal service time; 0 = every "
          "request costs the nominal whatever it carries (the profile's \"nominal_elements\").");
ABSL_FLAG(int64_t, seed, 1, "Seed of the model's randomness (jitter, stalls, errors, lengths).");
// Generative model.
ABSL_FLAG(int, max_seqs, 16, "Generative: sequences one engine runs at once.");
ABSL_FLAG(double, token_base_ms, 8, "Generative: fixed cost of one decoding iteration (ms).");
ABSL_FLAG(double, token_per_seq_ms, 0.25,
          "Generative: iteration cost per running sequence (ms); tokens slow as more share.");
ABSL_FLAG(double, prefill_ms_per_token, 0.04,
          "Generative: iteration cost per prompt token of each sequence joining it (ms).");
ABSL_FLAG(int, prompt_tokens, 128, "Generative: prompt length assumed for every request.");
ABSL_FLAG(std::string, output_tokens_distribution, "constant",
          "Generative: output length distribution: constant, uniform or lognormal.");
ABSL_FLAG(double, output_tokens_mean, 64, "Generative: mean output length in tokens.");
ABSL_FLAG(double, output_tokens_sigma, 0.5, "Generative: lognormal log-space sigma.");
ABSL_FLAG(int, output_tokens_min, 1, "Generative: shortest output.");
ABSL_FLAG(int, output_tokens_max, 256, "Generative: longest output.");
// A fleet that scales itself (batch models): each replica brings the profile's slots.
ABSL_FLAG(int, autoscale_max_replicas, 0,
          "Autoscaled fleet: most replicas (each with --slots executors); 0 = a fixed fleet of "
          "one. The ready replicas are the gauge vanguard_sim_replicas on /metrics. Rule: "
          "desired = ceil(in flight / --autoscale_target_in_flight) in [min, max]; replicas "
          "start after the desired count stayed above for --autoscale_up_delay and serve "
          "--autoscale_cold_start later; extra ones go after --autoscale_down_delay.");
ABSL_FLAG(int, autoscale_min_replicas, 1, "Autoscaled fleet: fewest replicas (the start).");
ABSL_FLAG(double, autoscale_target_in_flight, 2,
          "Autoscaled fleet: requests in flight (queued + in service) one replica is sized for.");
ABSL_FLAG(absl::Duration, autoscale_up_delay, absl::Seconds(2),
          "Autoscaled fleet: how long the desired count must stay above before scaling up.");
ABSL_FLAG(absl::Duration, autoscale_cold_start, absl::Seconds(2),
          "Autoscaled fleet: from a replica's start to its first request served.");
ABSL_FLAG(absl::Duration, autoscale_down_delay, absl::Seconds(30),
          "Autoscaled fleet: how long the desired count must stay below before scaling down.");
ABSL_FLAG(bool, list_profiles, false,
          "Print the named profiles (name, mode, saturation, default SLO, description), one "
          "per line, and exit.");
// Ground truth.
ABSL_FLAG(bool, ground_truth, false,
          "Do not serve: print one line 'true_capacity_rps=R saturation_rps=S ...' (the highest "
          "rate meeting the SLO, by discrete-event simulation of this profile) and exit.");
ABSL_FLAG(double, slo_p99_ms, 0,
          "Ground truth SLO: p99 latency limit in ms (sets --slo_percentile=99 and "
          "--slo_latency_ms). Default: the profile's SLO.");
ABSL_FLAG(double, slo_percentile, 99, "Ground truth SLO: latency percentile judged.");
ABSL_FLAG(double, slo_latency_ms, 100, "Ground truth SLO: latency limit at that percentile.");
ABSL_FLAG(double, slo_max_error_rate, 0.01,
          "Ground truth SLO: largest allowed (rejected + failed) / scheduled.");
ABSL_FLAG(double, slo_ttft_ms, 0, "Ground truth SLO (generative): TTFT limit; 0 = not judged.");
ABSL_FLAG(std::string, ground_truth_arrival, "poisson",
          "Ground truth arrivals: poisson or constant.");
ABSL_FLAG(double, ground_truth_seconds, 30, "Ground truth: judged seconds per evaluated rate.");
ABSL_FLAG(double, ground_truth_settle_s, 5,
          "Ground truth: seconds of arrivals before the judged window.");
ABSL_FLAG(int64_t, ground_truth_seed, 1, "Ground truth: seed of the arrival process.");
ABSL_FLAG(double, ground_truth_added_latency_ms, 0,
          "Ground truth: fixed latency outside the model (network, HTTP, client) added to "
          "every request before judging, in ms.");
ABSL_FLAG(int, ground_truth_replications, 4,
          "Ground truth: independent runs per evaluated rate, judged pooled (less seed-to-seed "
          "spread, proportionally more CPU).");

namespace {

using vanguard::sim::Profile;

// Names of the flags given on the command line (this Abseil release keeps
// CommandLineFlag::IsSpecifiedOnCommandLine private), so only those override the profile.
absl::flat_hash_set<std::string>& GivenFlags() {
  static auto* given = new absl::flat_hash_set<std::string>();
  return *given;
}

void RecordGivenFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--")) {
      if (!absl::ConsumePrefix(&arg, "-")) continue;
    }
    arg = arg.substr(0, arg.find('='));
    GivenFlags().insert(std::string(arg));
    if (absl::ConsumePrefix(&arg, "no")) GivenFlags().insert(std::string(arg));
  }
}

template <typename T>
bool Given(const absl::Flag<T>& flag) {
  return GivenFlags().contains(absl::GetFlagReflectionHandle(flag).Name());
}

absl::Duration Ms(double ms) { return absl::Nanoseconds(ms * 1e6); }

bool WritePortFile(const std::string& path, int port) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Plain decimal (never 6.4e+06) so scripts can read it: "800", "333.333".
std::string Decimal(double value) {
  return std::abs(value - std::round(value)) < 1e-6 ? absl::StrFormat("%.0f", value)
                                                    : absl::StrFormat("%.3f", value);
}

bool InRange(double v, double lo, double hi) { return v >= lo && v <= hi; }

// The profile named by --profile (or the legacy defaults), with every given flag applied.
absl::StatusOr<Profile> ProfileFromFlags() {
  Profile profile;
  const std::string name = absl::GetFlag(FLAGS_profile);
  if (!name.empty()) {
    absl::StatusOr<Profile> loaded = vanguard::sim::LoadProfile(name);
    if (!loaded.ok()) return loaded.status();
    profile = *std::move(loaded);
  }
  auto& batch = profile.batch;
  auto& p = batch.perturbations;
  auto& gen = profile.generative;
  // Durations are checked here because Ms() of a NaN or huge value is meaningless.
  for (auto [flag_name, value] :
       {std::pair<const char*, double>{"service_ms", absl::GetFlag(FLAGS_service_ms)},
        {"per_item_ms", absl::GetFlag(FLAGS_per_item_ms)},
        {"max_queue_delay_ms", absl::GetFlag(FLAGS_max_queue_delay_ms)},
        {"warmup_s", absl::GetFlag(FLAGS_warmup_s)},
        {"stall_ms", absl::GetFlag(FLAGS_stall_ms)},
        {"token_base_ms", absl::GetFlag(FLAGS_token_base_ms)},
        {"token_per_seq_ms", absl::GetFlag(FLAGS_token_per_seq_ms)},
        {"prefill_ms_per_token", absl::GetFlag(FLAGS_prefill_ms_per_token)}}) {
    if (!InRange(value, 0, 3.6e6)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag_name, " must be a number in [0, 3600000], got ", value));
    }
  }
  if (Given(FLAGS_service_ms) || name.empty()) {
    const double service_ms = absl::GetFlag(FLAGS_service_ms);
    if (!(service_ms > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--service_ms must be a positive number of milliseconds, got ", service_ms));
    }
    batch.service_time = Ms(service_ms);
  }
  if (Given(FLAGS_slots) || name.empty()) batch.slots = absl::GetFlag(FLAGS_slots);
  if (Given(FLAGS_max_queue) || name.empty()) batch.max_queue = absl::GetFlag(FLAGS_max_queue);
  if (Given(FLAGS_per_item_ms)) batch.per_item_time = Ms(absl::GetFlag(FLAGS_per_item_ms));
  if (Given(FLAGS_max_batch)) batch.max_batch = absl::GetFlag(FLAGS_max_batch);
  if (Given(FLAGS_max_queue_delay_ms)) {
    batch.max_queue_delay = Ms(absl::GetFlag(FLAGS_max_queue_delay_ms));
  }
  if (Given(FLAGS_jitter_sigma)) p.jitter_sigma = absl::GetFlag(FLAGS_jitter_sigma);
  if (Given(FLAGS_warmup_factor)) p.warmup_factor = absl::GetFlag(FLAGS_warmup_factor);
  if (Given(FLAGS_warmup_s)) p.warmup = absl::Nanoseconds(absl::GetFlag(FLAGS_warmup_s) * 1e9);
  if (Given(FLAGS_stall_rate_per_s)) p.stall_rate_per_s = absl::GetFlag(FLAGS_stall_rate_per_s);
  if (Given(FLAGS_stall_ms)) p.stall_duration = Ms(absl::GetFlag(FLAGS_stall_ms));
  if (Given(FLAGS_colocation)) p.colocation = absl::GetFlag(FLAGS_colocation);
  if (Given(FLAGS_error_rate)) p.error_rate = absl::GetFlag(FLAGS_error_rate);
  if (Given(FLAGS_seed)) p.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  if (Given(FLAGS_nominal_elements)) {
    const int64_t nominal = absl::GetFlag(FLAGS_nominal_elements);
    if (nominal < 0 || nominal > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nominal_elements must be in [0, 2^40], got ", nominal));
    }
    profile.nominal_elements = nominal;
  }
  if (Given(FLAGS_max_seqs)) gen.max_seqs = absl::GetFlag(FLAGS_max_seqs);
  if (Given(FLAGS_token_base_ms)) gen.token_base = Ms(absl::GetFlag(FLAGS_token_base_ms));
  if (Given(FLAGS_token_per_seq_ms)) gen.token_per_seq = Ms(absl::GetFlag(FLAGS_token_per_seq_ms));
  if (Given(FLAGS_prefill_ms_per_token)) {
    gen.prefill_per_token = Ms(absl::GetFlag(FLAGS_prefill_ms_per_token));
  }
  if (Given(FLAGS_prompt_tokens)) gen.prompt_tokens = absl::GetFlag(FLAGS_prompt_tokens);
  if (Given(FLAGS_output_tokens_distribution)) {
    const std::string kind = absl::GetFlag(FLAGS_output_tokens_distribution);
    using Kind = vanguard::sim::OutputLengthDistribution::Kind;
    if (kind == "constant") {
      gen.output_tokens.kind = Kind::kConstant;
    } else if (kind == "uniform") {
      gen.output_tokens.kind = Kind::kUniform;
    } else if (kind == "lognormal") {
      gen.output_tokens.kind = Kind::kLognormal;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--output_tokens_distribution must be constant, uniform or lognormal, got ", kind));
    }
  }
  if (Given(FLAGS_output_tokens_mean))
    gen.output_tokens.mean = absl::GetFlag(FLAGS_output_tokens_mean);
  if (Given(FLAGS_output_tokens_sigma)) {
    gen.output_tokens.sigma = absl::GetFlag(FLAGS_output_tokens_sigma);
  }
  if (Given(FLAGS_output_tokens_min))
    gen.output_tokens.min = absl::GetFlag(FLAGS_output_tokens_min);
  if (Given(FLAGS_output_tokens_max))
    gen.output_tokens.max = absl::GetFlag(FLAGS_output_tokens_max);
  if (absl::Status status = vanguard::sim::FinalizeProfile(profile); !status.ok()) return status;
  return profile;
}

absl::StatusOr<vanguard::sim::Slo> SloFromFlags(const Profile& profile) {
  vanguard::sim::Slo slo = profile.slo;
  if (Given(FLAGS_slo_percentile)) slo.latency_percentile = absl::GetFlag(FLAGS_slo_percentile);
  if (Given(FLAGS_slo_latency_ms)) slo.latency_limit = Ms(absl::GetFlag(FLAGS_slo_latency_ms));
  if (Given(FLAGS_slo_p99_ms)) {
    slo.latency_percentile = 99;
    slo.latency_limit = Ms(absl::GetFlag(FLAGS_slo_p99_ms));
  }
  if (Given(FLAGS_slo_max_error_rate)) slo.max_error_rate = absl::GetFlag(FLAGS_slo_max_error_rate);
  if (Given(FLAGS_slo_ttft_ms)) {
    const double ttft = absl::GetFlag(FLAGS_slo_ttft_ms);
    slo.ttft_limit = ttft > 0 ? Ms(ttft) : absl::InfiniteDuration();
  }
  if (!InRange(slo.latency_percentile, 1e-9, 100)) {
    return absl::InvalidArgumentError("--slo_percentile must be in (0, 100]");
  }
  if (!(slo.latency_limit > absl::ZeroDuration())) {
    return absl::InvalidArgumentError("--slo_latency_ms / --slo_p99_ms must be positive");
  }
  if (!InRange(slo.max_error_rate, 0, 1)) {
    return absl::InvalidArgumentError("--slo_max_error_rate must be in [0, 1]");
  }
  return slo;
}

int ListProfiles() {
  for (const std::string& name : vanguard::sim::NamedProfiles()) {
    absl::StatusOr<Profile> profile = vanguard::sim::LoadProfile(name);
    if (!profile.ok()) {
      std::cerr << "vanguard-sim-predictor: " << profile.status() << "\n";
      return 1;
    }
    const vanguard::sim::Slo& slo = profile->slo;
    std::cout << "profile=" << name << " mode="
              << (profile->mode == vanguard::sim::ProfileMode::kGenerative ? "generative" : "batch")
              << " saturation_rps=" << Decimal(vanguard::sim::SaturationRps(*profile))
              << " slo_percentile=" << Decimal(slo.latency_percentile)
              << " slo_latency_ms=" << Decimal(absl::ToDoubleMilliseconds(slo.latency_limit))
              << " slo_max_error_rate=" << slo.max_error_rate;
    if (slo.ttft_limit != absl::InfiniteDuration()) {
      std::cout << " slo_ttft_ms=" << Decimal(absl::ToDoubleMilliseconds(slo.ttft_limit));
    }
    std::cout << " warmup_s=" << absl::ToDoubleSeconds(profile->batch.perturbations.warmup)
              << " description=\"" << profile->description << "\"\n";
  }
  return 0;
}

int RunGroundTruth(const Profile& profile) {
  absl::StatusOr<vanguard::sim::Slo> slo = SloFromFlags(profile);
  if (!slo.ok()) {
    std::cerr << "vanguard-sim-predictor: " << slo.status().message() << "\n";
    return 2;
  }
  vanguard::sim::GroundTruthOptions options;
  const std::string arrival = absl::GetFlag(FLAGS_ground_truth_arrival);
  if (arrival == "poisson") {
    options.arrival = vanguard::sim::ArrivalProcess::kPoisson;
  } else if (arrival == "constant") {
    options.arrival = vanguard::sim::ArrivalProcess::kConstant;
  } else {
    std::cerr << "vanguard-sim-predictor: --ground_truth_arrival must be poisson or constant\n";
    return 2;
  }
  const double seconds = absl::GetFlag(FLAGS_ground_truth_seconds);
  const double settle = absl::GetFlag(FLAGS_ground_truth_settle_s);
  if (!InRange(seconds, 0.01, 86400) || !InRange(settle, 0, 86400)) {
    std::cerr << "vanguard-sim-predictor: --ground_truth_seconds must be in [0.01, 86400] and "
                 "--ground_truth_settle_s in [0, 86400]\n";
    return 2;
  }
  options.measure = absl::Nanoseconds(seconds * 1e9);
  options.settle = absl::Nanoseconds(settle * 1e9);
  options.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_ground_truth_seed));
  options.replications = absl::GetFlag(FLAGS_ground_truth_replications);
  const double added_ms = absl::GetFlag(FLAGS_ground_truth_added_latency_ms);
  if (!InRange(added_ms, 0, 3.6e6)) {
    std::cerr
        << "vanguard-sim-predictor: --ground_truth_added_latency_ms must be in [0, 3600000]\n";
    return 2;
  }
  options.added_latency = Ms(added_ms);
  absl::StatusOr<vanguard::sim::GroundTruth> truth =
      vanguard::sim::ComputeGroundTruth(profile, *slo, options);
  if (!truth.ok()) {
    std::cerr << "vanguard-sim-predictor: " << truth.status() << "\n";
    return truth.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::cout << "true_capacity_rps=" << Decimal(truth->max_sustainable_rps)
            << " saturation_rps=" << Decimal(truth->saturation_rps) << " profile=" << profile.name
            << " slo_percentile=" << Decimal(slo->latency_percentile)
            << " slo_latency_ms=" << Decimal(absl::ToDoubleMilliseconds(slo->latency_limit))
            << " slo_max_error_rate=" << slo->max_error_rate;
  if (slo->ttft_limit != absl::InfiniteDuration()) {
    std::cout << " slo_ttft_ms=" << Decimal(absl::ToDoubleMilliseconds(slo->ttft_limit));
  }
  std::cout << " latency_at_capacity_ms="
            << Decimal(absl::ToDoubleMilliseconds(truth->at_max.latency_at_percentile))
            << " error_rate_at_capacity=" << truth->at_max.error_rate << " arrival=" << arrival
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(absl::StrCat(
      "Simulated model server (KServe v2 REST/gRPC, OpenAI-compatible streaming) with a known "
      "capacity.\nUsage: vanguard-sim-predictor --listen=127.0.0.1:0 [--profile=NAME|PATH] "
      "[overrides]\n       vanguard-sim-predictor --profile=NAME --ground_truth "
      "[--slo_p99_ms=MS]\nNamed profiles: ",
      absl::StrJoin(vanguard::sim::NamedProfiles(), ", ")));
  // --help lists the flags of this file (Abseil's default looks for <program>.cc).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "simulator/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  RecordGivenFlags(argc, argv);
  absl::ParseCommandLine(argc, argv);

  if (absl::GetFlag(FLAGS_list_profiles)) return ListProfiles();
  absl::StatusOr<Profile> profile = ProfileFromFlags();
  if (!profile.ok()) {
    std::cerr << "vanguard-sim-predictor: " << profile.status().message() << "\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_ground_truth)) return RunGroundTruth(*profile);

  // Block the shutdown signals before any thread starts so only sigwait below sees them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  vanguard::sim::SimPredictorConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.grpc_listen = absl::GetFlag(FLAGS_grpc_listen);
  config.model_name = absl::GetFlag(FLAGS_model_name);
  config.profile = *profile;
  config.threads = absl::GetFlag(FLAGS_threads);
  if (absl::GetFlag(FLAGS_autoscale_max_replicas) > 0) {
    config.autoscale = vanguard::sim::ReplicaAutoscaler::Config{
        .min_replicas = absl::GetFlag(FLAGS_autoscale_min_replicas),
        .max_replicas = absl::GetFlag(FLAGS_autoscale_max_replicas),
        .target_in_flight = absl::GetFlag(FLAGS_autoscale_target_in_flight),
        .scale_up_delay = absl::GetFlag(FLAGS_autoscale_up_delay),
        .cold_start = absl::GetFlag(FLAGS_autoscale_cold_start),
        .scale_down_delay = absl::GetFlag(FLAGS_autoscale_down_delay)};
  }

  auto server = vanguard::sim::SimPredictorServer::Create(config);
  if (!server.ok()) {
    std::cerr << "vanguard-sim-predictor: " << server.status() << "\n";
    return server.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  (*server)->Start();

  std::cerr << "profile=" << profile->name
            << " true_capacity_rps=" << Decimal((*server)->SaturationRps())
            << " nominal_elements=" << profile->nominal_elements << std::endl;
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty() && !WritePortFile(port_file, (*server)->port())) {
    std::cerr << "vanguard-sim-predictor: cannot write --port_file " << port_file << "\n";
    return 1;
  }
  // One write, LISTENING first: tools that look for the first "LISTENING " find HTTP's.
  std::string listening = absl::StrCat("LISTENING ", (*server)->address(), "\n");
  if (!(*server)->grpc_address().empty()) {
    absl::StrAppend(&listening, "GRPC_LISTENING ", (*server)->grpc_address(), "\n");
  }
  std::cout << listening << std::flush;

  int signal_number = 0;
  sigwait(&shutdown_signals, &signal_number);
  std::cerr << "vanguard-sim-predictor: signal " << signal_number << ", shutting down\n";
  (*server)->Shutdown();
  return 0;
}
