// vanguard-replayer: the replayer process. `serve` runs the gRPC service
// (vanguard.v1.Replayer) a worker drives; `run` runs one step standalone from flags and prints
// its StepResult. Flags are parsed here and nowhere else; everything else is in the
// vanguard_replayer library. Runs on the main thread (plus gRPC's and the step's threads).
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/grpc_tls.h"
#include "common/port_file.h"
#include "common/target_policy.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "replayer/open_files.h"
#include "replayer/protocol_binding.h"
#include "replayer/replayer_service.h"
#include "replayer/step_config.h"
#include "replayer/step_runner.h"
#include "replayer/trace/trace_commands.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50052",
          "serve: HOST:PORT to listen on for gRPC; port 0 picks a free port");
ABSL_FLAG(std::string, port_file, "",
          "serve: if set, write the chosen port and a newline to this file (atomically) once "
          "listening");
ABSL_FLAG(std::string, target, "",
          "run: base URL of the predictor, e.g. http://127.0.0.1:8000 (required); several "
          "comma-separated: the replicas of one model, spread over by --endpoint_policy");
ABSL_FLAG(std::string, endpoint_policy, "",
          "run: round_robin (default for several targets), random, p2c or single "
          "(docs/replicas.md)");
ABSL_FLAG(std::string, model, "",
          "run: model name, the {model} in POST {target}/v2/models/{model}/infer (required)");
ABSL_FLAG(double, rate, 0, "run: offered rate in requests per second (required, > 0)");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "run: measured part of the step, after warmup, e.g. 10s (required, > 0)");
ABSL_FLAG(absl::Duration, warmup, absl::ZeroDuration(),
          "run: load sent before the measured part and excluded from the result, e.g. 2s");
ABSL_FLAG(std::string, schedule, "constant",
          "run: send schedule: constant (i/rate), poisson (seeded exponential gaps), ramp "
          "(--rate to --ramp_end_rate linearly over warmup + duration) or trace (the --trace "
          "file's own timing scaled to --rate)");
ABSL_FLAG(double, ramp_end_rate, 0, "run: --schedule=ramp: the rate at the end of the step");
ABSL_FLAG(int32_t, threads, 1, "run: event-loop threads sharing the load (results merged)");
ABSL_FLAG(int32_t, concurrency, 0,
          "run: > 0 runs closed loop with this many outstanding requests instead of a rate "
          "(hides queueing; for comparisons only); 0 = open loop at --rate");
ABSL_FLAG(std::string, protocol, "kserve_v2_rest",
          "run: kserve_v2_rest, http (GET --target, or POST --body to it), openai_completions, "
          "openai_chat or kserve_v2_grpc");
ABSL_FLAG(std::string, trace, "",
          "run: a recorded trace file to replay instead of --body; rates: the trace to read");
ABSL_FLAG(absl::Duration, bucket, absl::Minutes(5),
          "rates: the width of each rate bucket (1s to 24h)");
ABSL_FLAG(absl::Duration, slo_latency, absl::ZeroDuration(),
          "run: per-request latency limit for goodput (0: not checked)");
ABSL_FLAG(absl::Duration, slo_ttft, absl::ZeroDuration(),
          "run: per-request time-to-first-token limit for goodput, streams (0: not checked)");
ABSL_FLAG(uint64_t, seed, 0, "run: seed for the poisson schedule (same seed, same schedule)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "run: per-request timeout, from the intended send time; later is counted as timeout");
ABSL_FLAG(absl::Duration, window, absl::Seconds(1), "run: length of a metrics window");
ABSL_FLAG(std::string, body, "",
          "run: request body (JSON); empty sends a small KServe v2 body with one FP32 input");
ABSL_FLAG(int32_t, max_connections, 0,
          "run: most keep-alive connections the step opens; 0: one for every request that can "
          "be in flight (rate x timeout with a Poisson margin, at least 256)");
ABSL_FLAG(int64_t, timer_slack_ns, vanguard::replayer::kDefaultTimerSlackNs,
          "run: the event loops' timer slack in ns (prctl PR_SET_TIMERSLACK; the kernel default "
          "is 50000); only for comparing pacing precision");
ABSL_FLAG(int32_t, max_in_flight, 10000,
          "run: most requests open at once; beyond it requests are dropped (and counted)");
ABSL_FLAG(std::string, upstream, "",
          "record: http://HOST:PORT the recording proxy forwards every request to (required)");
ABSL_FLAG(std::string, input, "", "convert: the JSONL request log to convert (required)");
ABSL_FLAG(int64_t, max_requests, 0,
          "record: stop after recording this many requests (0: until SIGTERM/SIGINT)");
ABSL_FLAG(std::string, output, "table",
          "run: table (windows as they close, then a summary) or json (the StepResult as "
          "protobuf JSON with proto field names); rates: csv (the default) or json (the "
          "autoscale strategy's LOAD_SHAPE_TRACE with these trace_rates)");

ABSL_FLAG(std::string, tls_cert, "",
          "serve: PEM certificate chain file: serve gRPC over TLS (worker --replayer_tls_ca)");
ABSL_FLAG(std::string, tls_key, "", "serve: PEM private key file for --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "serve: PEM CA certificate(s): require every client (the worker) to present a "
          "certificate signed by them (mutual TLS; needs --tls_cert). See docs/security.md");
ABSL_FLAG(std::string, allowed_targets, "",
          "serve, run: where load may go, checked on the address the target resolves to "
          "before any connection: comma-separated IPv4/IPv6 CIDRs or addresses, host names "
          "and *.suffix patterns, each with an optional :port or :port-port, e.g. "
          "\"127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000,[::1]\". A refused step "
          "connects to nothing and counts each request as error class target_refused. Empty "
          "(default): loopback only (127.0.0.0/8, ::1). Link-local and cloud metadata "
          "addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254, metadata.google.internal) are "
          "never allowed. See docs/security.md");

namespace vanguard::replayer {
namespace {

constexpr char kUsage[] = R"(open-loop load generator for ML model servers.

Usage:
  vanguard-replayer serve [--listen=127.0.0.1:50052] [--port_file=PATH]
                          [--allowed_targets=RULES]
      Serves the gRPC API vanguard.v1.Replayer (RunStep streams one WindowMetrics per
      window, then a StepResult) and grpc.health.v1.Health (service "": SERVING while it
      runs). Prints "LISTENING <host>:<port>" once listening. Runs one step at a time.
      Exits cleanly on SIGTERM/SIGINT.

  vanguard-replayer run --target=http://127.0.0.1:8000 --model=sim --rate=200 --duration=10s
                        [--warmup=2s] [--schedule=constant|poisson|ramp|trace]
                        [--ramp_end_rate=R] [--seed=N] [--timeout=10s] [--window=1s]
                        [--protocol=kserve_v2_rest|http|...] [--body=JSON] [--trace=FILE]
                        [--threads=1] [--concurrency=0] [--max_connections=0]
                        [--max_in_flight=10000] [--slo_latency=D] [--slo_ttft=D]
                        [--output=table|json] [--allowed_targets=RULES]
                        [--endpoint_policy=round_robin|random|p2c|single]
      Runs one step standalone (default: POST {target}/v2/models/{model}/infer over
      HTTP/1.1 keep-alive) and prints the StepResult with the client-validity gate.
      Open loop: latency is measured from each request's intended send time.

  vanguard-replayer record --listen=127.0.0.1:PORT --upstream=http://HOST:PORT --output=FILE
                           [--max_requests=N] [--port_file=PATH]
      HTTP/1.1 reverse proxy that forwards every request to --upstream and appends it, with
      its arrival time, to the trace --output (docs/trace-format.md).

  vanguard-replayer convert --input=log.jsonl --output=trace.vtr
      Converts a JSONL request log (timestamp, model, body, headers per line) into a trace;
      bad lines are listed with their line numbers (exit 1 if any).

  vanguard-replayer rates --trace=traffic.vtr [--bucket=5m] [--model=M] [--output=json]
      Prints the trace's request rate over time as CSV (start_s,duration_s,qps, one line
      per bucket; only model M's requests with --model) for `vanguard plan --rates=FILE`:
      replicas over time and accelerator-hours (docs/planning.md). --output=json prints the
      buckets as an autoscale test's trace shape (a spec's "autoscale" object).

)";
constexpr char kUsageExitCodes[] =
    "Exit codes: 0 success, 1 the step could not run, 2 usage error.";

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int UsageError(std::string_view message) {
  std::cerr << "vanguard-replayer: " << message << "\n"
            << "Try 'vanguard-replayer --help'.\n";
  return kExitUsage;
}

int Serve() {
  std::string listen = absl::GetFlag(FLAGS_listen);
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return UsageError(absl::StrCat("--listen must be HOST:PORT, got \"", listen, "\""));
  }
  std::string host = listen.substr(0, colon);

  // Block the shutdown signals in every thread (gRPC's inherit this mask) and wait for them
  // here, so shutdown runs on the main thread outside any signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<TargetPolicy> policy =
      TargetPolicy::FromFlag(absl::GetFlag(FLAGS_allowed_targets));
  if (!policy.ok()) {
    return UsageError(absl::StrCat("--allowed_targets: ", policy.status().message()));
  }
  absl::StatusOr<ServerTls> tls = LoadServerTls({.ca = absl::GetFlag(FLAGS_tls_client_ca),
                                                 .cert = absl::GetFlag(FLAGS_tls_cert),
                                                 .key = absl::GetFlag(FLAGS_tls_key),
                                                 .ca_flag = "tls_client_ca"});
  if (!tls.ok()) return UsageError(std::string(tls.status().message()));
  std::cerr << "vanguard-replayer: allowed targets: " << policy->ToString()
            << (policy->is_default() ? " (the default)" : "") << "\n";
  std::cerr << "vanguard-replayer: at most " << ConnectionBudget()
            << " connections per step (the open-file limit less " << kReservedFiles << ")\n";
  ReplayerService service(*std::move(policy), [](const std::string& line) {
    std::cerr << "vanguard-replayer: " << line << "\n";
  });
  // grpc.health.v1.Health answers SERVING for "" while the server runs (kubelet/exec probes).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, ServerCredentials(*tls), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBodyBytes + (1 << 20)));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "vanguard-replayer: cannot listen on " << listen << "\n";
    return kExitFailure;
  }
  std::cerr << "vanguard-replayer: serving "
            << (tls->cert_chain.empty()  ? "plaintext gRPC"
                : tls->client_ca.empty() ? "gRPC over TLS"
                                         : "gRPC over TLS, client certificates required")
            << "\n";
  std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty() && !WritePortFile(port_file, port)) {
    std::cerr << "vanguard-replayer: cannot write --port_file " << port_file << "\n";
    server->Shutdown();
    return kExitFailure;
  }
  std::printf("LISTENING %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "vanguard-replayer: signal " << signal_number << ", shutting down\n";
  // A running step is cancelled when the deadline passes; it stops within milliseconds.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server->Wait();
  return 0;
}

google::protobuf::Duration ToProto(absl::Duration d) {
  return google::protobuf::util::TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(d));
}

void PrintResultTable(const v1::StepResult& r) {
  auto latency_row = [](const char* name, const v1::LatencySummary& l) {
    std::printf("%-16s p50 %9.3f  p90 %9.3f  p99 %9.3f  p99.9 %9.3f  max %9.3f  mean %9.3f ms\n",
                name, l.p50_ms(), l.p90_ms(), l.p99_ms(), l.p999_ms(), l.max_ms(), l.mean_ms());
  };
  std::printf(
      "\nstep result (measured part, %s)\n",
      absl::FormatDuration(
          absl::Nanoseconds(google::protobuf::util::TimeUtil::DurationToNanoseconds(r.measured())))
          .c_str());
  std::printf("target_qps %.2f  achieved_qps %.2f\n", r.target_qps(), r.achieved_qps());
  std::printf(
      "scheduled %lld  sent %lld  completed %lld  errors %lld  timeouts %lld  dropped %lld\n",
      static_cast<long long>(r.scheduled()), static_cast<long long>(r.sent()),
      static_cast<long long>(r.completed()), static_cast<long long>(r.errors()),
      static_cast<long long>(r.timeouts()), static_cast<long long>(r.dropped()));
  latency_row("latency", r.latency());
  latency_row("service_latency", r.service_latency());
  if (r.has_ttft()) latency_row("ttft", r.ttft());
  if (r.has_inter_chunk()) latency_row("inter_chunk", r.inter_chunk());
  std::printf("send skew        p50 %.1f us  p99 %.1f us  max %.1f us\n", r.send_skew_p50_us(),
              r.send_skew_p99_us(), r.send_skew_max_us());
  std::printf("censored %lld  never_dispatched %lld  good %lld  goodput %.4f  output_chunks %lld\n",
              static_cast<long long>(r.censored()), static_cast<long long>(r.never_dispatched()),
              static_cast<long long>(r.good()), r.goodput(),
              static_cast<long long>(r.output_chunks()));
  std::printf("client cpu (busiest loop, max over 5 s spans) %.1f%%  threads %d%s\n",
              r.max_client_cpu_share() * 100, r.threads(), r.closed_loop() ? "  CLOSED LOOP" : "");
  std::printf(
      "connections: cap %lld, requests that waited for one %lld, sent again after the server "
      "closed their idle connection %lld\n",
      static_cast<long long>(r.connection_cap()), static_cast<long long>(r.connection_waits()),
      static_cast<long long>(r.stale_connection_retries()));
  for (const auto& [error_class, count] : r.errors_by_class()) {
    std::printf("error %-12s %lld\n", error_class.c_str(), static_cast<long long>(count));
  }
  if (r.endpoints_size() > 1) {
    std::printf("endpoints (%s, imbalance max/mean share %.3f)\n",
                v1::EndpointPolicy_Name(r.endpoint_policy()).c_str(), r.endpoint_imbalance());
    for (const v1::EndpointTelemetry& e : r.endpoints()) {
      std::printf(
          "  %s  share %.3f  sent %lld  completed %lld  errors %lld  timeouts %lld  %.2f qps  "
          "p50 %.3f  p99 %.3f ms  peak in flight %lld\n",
          e.target().c_str(), e.share(), static_cast<long long>(e.sent()),
          static_cast<long long>(e.completed()), static_cast<long long>(e.errors()),
          static_cast<long long>(e.timeouts()), e.achieved_qps(), e.latency().p50_ms(),
          e.latency().p99_ms(), static_cast<long long>(e.peak_in_flight()));
    }
  }
  const v1::ClientConditions& c = r.client_conditions();
  std::printf(
      "client conditions: loops waited %.1f ms on the run queue, %lld involuntary switches; "
      "machine %.2f of %d CPUs busy (replayer %.2f, steal %.2f); timed wake-ups late p99 %.1f "
      "us max %.1f us; %lld connections opened; %lld sends > 1 ms late, %lld in bursts\n",
      google::protobuf::util::TimeUtil::DurationToNanoseconds(c.loop_run_queue_wait()) / 1e6,
      static_cast<long long>(c.loop_nonvoluntary_switches()), c.machine_busy_cores(),
      c.machine_cpus(), c.replayer_cpu_cores(), c.machine_steal_cores(), c.wakeup_late_p99_us(),
      c.wakeup_late_max_us(), static_cast<long long>(c.connections_opened()),
      static_cast<long long>(c.late_sends()), static_cast<long long>(c.late_sends_in_bursts()));
  std::printf("client_valid %s%s%s\n", r.client_valid() ? "true" : "false",
              r.client_valid() ? "" : ": ", r.client_invalid_reason().c_str());
}

bool ParseProtocol(const std::string& name, v1::Protocol* protocol) {
  if (name == "kserve_v2_rest")
    *protocol = v1::PROTOCOL_KSERVE_V2_REST;
  else if (name == "http")
    *protocol = v1::PROTOCOL_HTTP;
  else if (name == "openai_completions")
    *protocol = v1::PROTOCOL_OPENAI_COMPLETIONS;
  else if (name == "openai_chat")
    *protocol = v1::PROTOCOL_OPENAI_CHAT;
  else if (name == "kserve_v2_grpc")
    *protocol = v1::PROTOCOL_KSERVE_V2_GRPC;
  else
    return false;
  return true;
}

// The flags `run` needs, checked before anything else: empty when they are all there.
std::string MissingRunFlags(v1::Protocol protocol) {
  const bool closed_loop = absl::GetFlag(FLAGS_concurrency) > 0;
  std::vector<std::string> missing;
  if (absl::GetFlag(FLAGS_target).empty()) missing.push_back("--target");
  if (absl::GetFlag(FLAGS_model).empty() && protocol != v1::PROTOCOL_HTTP &&
      absl::GetFlag(FLAGS_trace).empty()) {
    missing.push_back("--model");
  }
  if (absl::GetFlag(FLAGS_rate) == 0 && !closed_loop)
    missing.push_back("--rate (or --concurrency)");
  if (absl::GetFlag(FLAGS_duration) == absl::ZeroDuration()) missing.push_back("--duration");
  return absl::StrJoin(missing, ", ");
}

// The target(s) and --endpoint_policy into `request`; INVALID_ARGUMENT for an unknown policy.
absl::Status SetTargetsFromFlags(v1::RunStepRequest* request) {
  const std::vector<std::string> targets = absl::StrSplit(absl::GetFlag(FLAGS_target), ',');
  if (targets.size() == 1) {
    request->set_target(targets[0]);
  } else {
    for (const std::string& target : targets) request->add_targets(target);
  }
  if (std::string policy = absl::GetFlag(FLAGS_endpoint_policy); !policy.empty()) {
    v1::EndpointPolicy parsed;
    if (!v1::EndpointPolicy_Parse(absl::StrCat("ENDPOINT_POLICY_", absl::AsciiStrToUpper(policy)),
                                  &parsed) ||
        parsed == v1::ENDPOINT_POLICY_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--endpoint_policy must be round_robin, random, p2c or single, got \"", policy, "\""));
    }
    request->set_endpoint_policy(parsed);
  }
  return absl::OkStatus();
}

// --schedule (and --ramp_end_rate) into `request`; INVALID_ARGUMENT for an unknown schedule.
absl::Status SetScheduleFromFlags(v1::RunStepRequest* request) {
  const std::string schedule = absl::GetFlag(FLAGS_schedule);
  if (schedule == "constant") {
    request->set_schedule(v1::SCHEDULE_CONSTANT);
  } else if (schedule == "poisson") {
    request->set_schedule(v1::SCHEDULE_POISSON);
  } else if (schedule == "ramp") {
    request->set_schedule(v1::SCHEDULE_RAMP);
    request->set_ramp_end_qps(absl::GetFlag(FLAGS_ramp_end_rate));
  } else if (schedule == "trace") {
    request->set_schedule(v1::SCHEDULE_TRACE);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--schedule must be constant, poisson, ramp or trace, got \"", schedule, "\""));
  }
  return absl::OkStatus();
}

// The step `run` asks for, from its flags: what a worker would send in RunStep.
absl::StatusOr<v1::RunStepRequest> RequestFromFlags(v1::Protocol protocol) {
  v1::RunStepRequest request;
  if (absl::Status s = SetTargetsFromFlags(&request); !s.ok()) return s;
  if (absl::Status s = SetScheduleFromFlags(&request); !s.ok()) return s;
  request.set_protocol(protocol);
  request.set_model_name(absl::GetFlag(FLAGS_model));
  request.set_request_body(absl::GetFlag(FLAGS_body));
  request.set_rate_qps(absl::GetFlag(FLAGS_rate));
  request.set_concurrency(absl::GetFlag(FLAGS_concurrency));
  request.set_threads(absl::GetFlag(FLAGS_threads));
  request.set_trace_path(absl::GetFlag(FLAGS_trace));
  request.set_seed(absl::GetFlag(FLAGS_seed));
  *request.mutable_warmup() = ToProto(absl::GetFlag(FLAGS_warmup));
  *request.mutable_duration() = ToProto(absl::GetFlag(FLAGS_duration));
  *request.mutable_request_timeout() = ToProto(absl::GetFlag(FLAGS_timeout));
  *request.mutable_window() = ToProto(absl::GetFlag(FLAGS_window));
  *request.mutable_slo_latency() = ToProto(absl::GetFlag(FLAGS_slo_latency));
  *request.mutable_slo_ttft() = ToProto(absl::GetFlag(FLAGS_slo_ttft));
  request.set_max_connections(absl::GetFlag(FLAGS_max_connections));
  request.set_max_in_flight(absl::GetFlag(FLAGS_max_in_flight));
  return request;
}

void PrintWindowHeader() {
  std::printf("%5s %6s %9s %9s %9s %7s %8s %7s %10s %10s %10s\n", "index", "warmup", "scheduled",
              "completed", "errors", "timeouts", "dropped", "offered", "achieved", "p50_ms",
              "p99_ms");
  std::fflush(stdout);
}

void PrintWindowRow(const v1::WindowMetrics& w) {
  std::printf("%5d %6s %9lld %9lld %9lld %7lld %8lld %7.1f %10.1f %10.3f %10.3f\n", w.index(),
              w.warmup() ? "yes" : "no", static_cast<long long>(w.scheduled()),
              static_cast<long long>(w.completed()), static_cast<long long>(w.errors()),
              static_cast<long long>(w.timeouts()), static_cast<long long>(w.dropped()),
              w.offered_qps(), w.achieved_qps(), w.latency().p50_ms(), w.latency().p99_ms());
  std::fflush(stdout);
}

// The step's result as a table (after the windows) or as one JSON object; kExitFailure when
// the JSON cannot be printed.
int PrintResult(const v1::StepResult& result, bool table) {
  if (table) {
    PrintResultTable(result);
    return 0;
  }
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(result, &json, options);
  if (!status.ok()) {
    std::cerr << "vanguard-replayer: cannot print JSON: " << status.ToString() << "\n";
    return kExitFailure;
  }
  std::printf("%s\n", json.c_str());
  return 0;
}

// `vanguard-replayer run`: one step from flags, its windows and result on stdout.
int RunOnce() {
  v1::Protocol protocol;
  if (!ParseProtocol(absl::GetFlag(FLAGS_protocol), &protocol)) {
    return UsageError(
        absl::StrCat("--protocol must be kserve_v2_rest, http, openai_completions, openai_chat or "
                     "kserve_v2_grpc, got \"",
                     absl::GetFlag(FLAGS_protocol), "\""));
  }
  if (const std::string missing = MissingRunFlags(protocol); !missing.empty()) {
    return UsageError(absl::StrCat("run needs ", missing));
  }
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "table" && output != "json") {
    return UsageError(absl::StrCat("--output must be table or json, got \"", output, "\""));
  }
  absl::StatusOr<v1::RunStepRequest> request = RequestFromFlags(protocol);
  if (!request.ok()) return UsageError(std::string(request.status().message()));
  absl::StatusOr<StepConfig> config = ParseStepConfig(*request);
  if (!config.ok()) return UsageError(config.status().ToString());
  if (absl::GetFlag(FLAGS_timer_slack_ns) < 1) return UsageError("--timer_slack_ns must be >= 1");
  config->timer_slack_ns = absl::GetFlag(FLAGS_timer_slack_ns);
  absl::StatusOr<TargetPolicy> policy =
      TargetPolicy::FromFlag(absl::GetFlag(FLAGS_allowed_targets));
  if (!policy.ok()) {
    return UsageError(absl::StrCat("--allowed_targets: ", policy.status().message()));
  }
  // Open the trace / protocol before printing anything, so a bad --trace fails cleanly.
  absl::StatusOr<ProtocolBinding> binding = BindProtocol(*config);
  if (!binding.ok()) {
    std::cerr << "vanguard-replayer: " << binding.status() << "\n";
    return kExitFailure;
  }
  const bool table = output == "table";
  if (table) PrintWindowHeader();
  StepRunner runner(/*proc=*/nullptr, *std::move(policy));
  absl::StatusOr<v1::StepResult> result = runner.Run(
      *config, *binding,
      [table](const v1::WindowMetrics& w) {
        if (table) PrintWindowRow(w);
        return true;
      },
      nullptr);
  if (!result.ok()) {
    std::cerr << "vanguard-replayer: step failed: " << result.status() << "\n";
    return kExitFailure;
  }
  if (!runner.last_refusal().ok()) {
    std::cerr << "vanguard-replayer: " << runner.last_refusal().message() << "\n";
  }
  return PrintResult(*result, table);
}

}  // namespace
}  // namespace vanguard::replayer

int main(int argc, char** argv) {
  // `trace` subcommands take no flags but --help, which each answers itself (its table entry).
  if (argc >= 2 && std::string_view(argv[1]) == "trace") {
    return vanguard::replayer::RunTraceSubcommand(std::vector<std::string>(argv + 2, argv + argc),
                                                  std::cout, std::cerr);
  }
  absl::SetProgramUsageMessage(absl::StrCat(vanguard::replayer::kUsage,
                                            vanguard::replayer::TraceSubcommandsUsage(),
                                            vanguard::replayer::kUsageExitCodes));
  // Abseil's --help lists only flags defined in <program>.cc by default; ours live in main.cc.
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "replayer/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  std::vector<char*> positionals = absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  // A step needs a file per connection, a connection per request in flight (open_files.h).
  vanguard::replayer::RaiseOpenFileLimit();
  if (positionals.size() != 2) {
    return vanguard::replayer::UsageError(
        positionals.size() < 2
            ? "missing mode: serve, run, record, convert, rates or trace"
            : "expected exactly one mode (serve, run, record, convert, rates or trace)");
  }
  std::string mode = positionals[1];
  if (mode == "serve") return vanguard::replayer::Serve();
  if (mode == "run") return vanguard::replayer::RunOnce();
  if (mode == "rates") {
    const std::string output = absl::GetFlag(FLAGS_output);
    if (output != "table" && output != "csv" && output != "json") {
      return vanguard::replayer::UsageError("rates: --output must be csv or json");
    }
    absl::Status status = vanguard::replayer::RunRates(
        absl::GetFlag(FLAGS_trace), absl::GetFlag(FLAGS_bucket), absl::GetFlag(FLAGS_model),
        std::cout,
        output == "json" ? vanguard::replayer::RatesFormat::kAutoscaleJson
                         : vanguard::replayer::RatesFormat::kCsv);
    if (status.ok()) return 0;
    std::cerr << "vanguard-replayer rates: " << status << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;  // bad flags: usage
  }
  if (mode == "record" || mode == "convert") {  // trace subcommands (replayer/trace)
    std::string output = absl::GetFlag(FLAGS_output);
    if (output == "table" || output == "json") output.clear();  // --output's run default
    absl::Status status =
        mode == "convert"
            ? vanguard::replayer::RunConvert(absl::GetFlag(FLAGS_input), output)
            : vanguard::replayer::RunRecordProxy({.listen = absl::GetFlag(FLAGS_listen),
                                                  .upstream = absl::GetFlag(FLAGS_upstream),
                                                  .output = output,
                                                  .max_requests = absl::GetFlag(FLAGS_max_requests),
                                                  .port_file = absl::GetFlag(FLAGS_port_file)});
    if (status.ok()) return 0;
    std::cerr << "vanguard-replayer " << mode << ": " << status << "\n";
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;  // bad flags: usage
  }
  return vanguard::replayer::UsageError(absl::StrCat(
      "unknown mode \"", mode, "\"; expected serve, run, record, convert, rates or trace"));
}
