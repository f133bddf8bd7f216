// `vanguard`: the submit tool, a gRPC client of vanguard.v1.Orchestrator. This file only
// defines the flags and hands what the user typed to RunCli (commands.h), where every rule,
// default and command lives. Flags are text here on purpose: the library validates them so
// that a bad value is a usage error (exit 2) naming the flag.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "orchestrator/cli/command_line.h"
#include "orchestrator/cli/commands.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

// Global.
ABSL_FLAG(std::string, orchestrator, "",
          "Orchestrator address HOST:PORT (default: $VANGUARD_ORCHESTRATOR, else "
          "127.0.0.1:50051).");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of CA certificates: connect over TLS and trust these (for an orchestrator "
          "run with --tls_cert); default plaintext.");
ABSL_FLAG(std::string, timeout, "", "Deadline of each RPC, e.g. 10s (default 10s).");
ABSL_FLAG(std::string, output, "",
          "Output format: table (default) or json (protobuf JSON mapping, .proto field names).");

// Shared by several commands.
ABSL_FLAG(std::string, model_version, "",
          "Model version (spelled --version on the command line). models register: required; "
          "models get / submit: default the latest registered version.");
ABSL_FLAG(std::string, name, "",
          "models register: the model's registry name (required). models list: only this name. "
          "tokens create: the token's name (required).");
ABSL_FLAG(std::string, model, "", "submit: the model to test (required). list: only this model.");
ABSL_FLAG(std::string, limit, "", "list / models list: at most this many rows (list: default 50).");

// models register.
ABSL_FLAG(std::string, endpoint, "",
          "models register: predictor base URL(s), comma-separated, e.g. http://127.0.0.1:8000.");
ABSL_FLAG(std::string, protocol, "",
          "models register: kserve_v2_rest (default), kserve_v2_grpc, openai_completions, "
          "openai_chat or http.");
ABSL_FLAG(std::string, served_name, "",
          "models register: the name the predictor knows the model by (default: --name).");
ABSL_FLAG(std::string, framework, "", "models register: e.g. onnx, pytorch, tensorrt.");
ABSL_FLAG(std::string, p99_ms, "",
          "models register: SLO p99 latency in milliseconds (required), e.g. 100.");
ABSL_FLAG(std::string, p50_ms, "", "models register: SLO p50 latency in milliseconds.");
ABSL_FLAG(std::string, ttft_p99_ms, "",
          "models register: SLO p99 time to first token in milliseconds (streaming models).");
ABSL_FLAG(std::string, inter_token_p99_ms, "",
          "models register: SLO p99 inter-token latency in milliseconds (streaming models).");
ABSL_FLAG(std::string, max_gpu_utilization, "",
          "models register: highest tolerated predictor GPU utilization, a fraction, e.g. 0.9.");
ABSL_FLAG(std::string, max_queue_depth, "",
          "models register: highest tolerated predictor queue depth (requests waiting).");
ABSL_FLAG(std::string, max_error_rate, "",
          "models register: highest tolerated fraction of failed requests, e.g. 0.01.");
ABSL_FLAG(std::string, min_achieved_ratio, "",
          "models register: lowest tolerated achieved/offered rate ratio (default 0.99).");
ABSL_FLAG(std::string, warmup, "",
          "models register: warmup excluded from judgement at the start of each step, e.g. 5s.");
ABSL_FLAG(std::string, accelerator, "", "models register: accelerator type, e.g. nvidia-l40, cpu.");
ABSL_FLAG(std::string, accelerator_count, "", "models register: accelerators per replica.");
ABSL_FLAG(std::string, pool, "", "models register: node pool the replicas run in.");
ABSL_FLAG(std::string, request_template, "",
          "models register: request body sent when the test has no recorded trace (JSON).");
ABSL_FLAG(std::string, from_file, "",
          "models register: read a vanguard.v1.Model in protobuf JSON; flags override it.");

// submit.
ABSL_FLAG(std::string, rates, "", "submit: offered rates in requests/s, e.g. 100,200,300.");
ABSL_FLAG(std::string, min_qps, "", "submit: lowest rate of an evenly spaced sweep.");
ABSL_FLAG(std::string, max_qps, "", "submit: highest rate of an evenly spaced sweep.");
ABSL_FLAG(std::string, steps, "", "submit: number of rates from --min_qps to --max_qps.");
ABSL_FLAG(std::string, strategy, "",
          "submit: sweep (default), binary, adaptive (Algorithm 1) or ladder (seed 003).");
ABSL_FLAG(std::string, stop_after_failures, "",
          "submit: stop after this many consecutive failed steps (default 1).");
ABSL_FLAG(std::string, step_duration, "",
          "submit: measured duration of each step, e.g. 10s (default 10s).");
ABSL_FLAG(std::string, step_warmup, "",
          "submit: warmup at the start of each step, e.g. 2s (default: the model's warmup).");
ABSL_FLAG(std::string, request_timeout, "",
          "submit: a request still open after this counts as failed (default 10s).");
ABSL_FLAG(std::string, schedule, "", "submit: constant (default) or poisson arrivals.");
ABSL_FLAG(std::string, trace, "",
          "submit: a recorded trace (a path on the replayer's host) to replay instead of the "
          "model's request template.");
ABSL_FLAG(std::string, sustain_horizon, "",
          "submit: how long the estimate must hold, e.g. 5m (default 5m); the estimate is held "
          "long enough to back it.");
ABSL_FLAG(std::string, priority, "",
          "submit: higher runs first (default 0); an integer or a class: oncall or adhoc "
          "(200), ci (100), scheduled (0).");
ABSL_FLAG(std::string, max_attempts, "",
          "submit: attempts before the test fails when workers are lost (default 3).");
ABSL_FLAG(std::string, request_id, "",
          "submit: idempotency key; submitting again with the same key returns the same test.");
ABSL_FLAG(std::string, spec_file, "",
          "submit: read a vanguard.v1.TestSpec in protobuf JSON; flags override it.");
ABSL_FLAG(bool, confirm_best, false,
          "submit: adaptive: accepted for old scripts and ignored: every adaptive search now "
          "holds its estimate before finishing (see --sustain_horizon).");
ABSL_FLAG(bool, wait, false,
          "submit: poll until the test ends, progress on stderr, then print it; exit 0 if it "
          "SUCCEEDED, 3 if it FAILED or was CANCELLED.");
ABSL_FLAG(bool, watch, false,
          "submit: like --wait, but stream every update to stdout (WatchTest).");

// tokens.
ABSL_FLAG(std::string, role, "",
          "tokens create: reader (Get/List/Watch), submitter (+ submit, cancel, register), "
          "worker (the worker protocol) or admin (everything, tokens).");
ABSL_FLAG(bool, all, false, "tokens list: include revoked tokens.");

// list.
ABSL_FLAG(std::string, state, "",
          "list: only tests in this state: queued, running, succeeded, failed, cancelled.");

namespace {

// Flags defined in this file (absl records a normalized __FILE__, so compare with the
// record of a flag known to be ours).
bool DefinedHere(const absl::CommandLineFlag& flag) {
  static const std::string* const kThisFile =
      new std::string(absl::FindCommandLineFlag("orchestrator")->Filename());
  return flag.Filename() == *kThisFile;
}

// Our flags with their help texts, for --help (absl's own --help lists only flags of a
// file named after the binary).
std::string FlagsHelp() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (DefinedHere(*flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(), [](const auto* a, const auto* b) {
    return vanguard::cli::FlagDisplayName(a->Name()) < vanguard::cli::FlagDisplayName(b->Name());
  });
  std::string help = "Flags:\n";
  for (const absl::CommandLineFlag* flag : flags) {
    std::string name = vanguard::cli::FlagDisplayName(flag->Name());
    if (name != absl::StrCat("--", flag->Name()))
      absl::StrAppend(&name, " (or --", flag->Name(), ")");
    absl::StrAppend(&help, "  ", name, "\n      ", flag->Help(), "\n");
  }
  return help;
}

vanguard::cli::FlagKind KindOf(absl::string_view name) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr || flag->IsRetired()) return vanguard::cli::FlagKind::kUnknown;
  return flag->IsOfType<bool>() ? vanguard::cli::FlagKind::kBool : vanguard::cli::FlagKind::kValued;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(vanguard::cli::UsageText());
  absl::StatusOr<vanguard::cli::PreparedArgv> prepared =
      vanguard::cli::PrepareArgv(std::vector<std::string>(argv, argv + argc), KindOf);
  if (!prepared.ok()) {
    std::cerr << "error: " << prepared.status().message() << "\n"
              << "Run 'vanguard --help' for usage.\n";
    return vanguard::cli::kExitUsage;
  }
  if (prepared->help_requested) {
    std::cout << vanguard::cli::UsageText() << "\n" << FlagsHelp();
    return vanguard::cli::kExitOk;
  }
  std::vector<char*> absl_argv;
  for (std::string& arg : prepared->argv) absl_argv.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(absl_argv.size()), absl_argv.data());

  vanguard::cli::GivenFlags given;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!DefinedHere(*flag)) continue;
    // On the command line, or set to a non-default value some other way (--flagfile).
    if (prepared->given_names.contains(std::string(name)) ||
        flag->CurrentValue() != flag->DefaultValue()) {
      given[std::string(name)] = flag->CurrentValue();
    }
  }
  vanguard::cli::Environment env;
  if (const char* address = std::getenv("VANGUARD_ORCHESTRATOR")) env.orchestrator = address;
  if (const char* token = std::getenv("VANGUARD_TOKEN")) env.token = token;

  auto make_stub = [](const vanguard::cli::GlobalOptions& global) {
    return std::unique_ptr<vanguard::v1::Orchestrator::StubInterface>(
        vanguard::v1::Orchestrator::NewStub(grpc::CreateChannel(
            global.orchestrator,
            global.tls_root_certs.empty()
                ? grpc::InsecureChannelCredentials()
                : grpc::SslCredentials({.pem_root_certs = global.tls_root_certs}))));
  };
  return vanguard::cli::RunCli(std::vector<std::string>(positional.begin() + 1, positional.end()),
                               given, env, make_stub, FlagsHelp(), std::cout, std::cerr,
                               *vanguard::Clock::Real());
}
