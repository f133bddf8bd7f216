// vanguard-worker: leases capacity tests from the orchestrator and runs them through the
// replayer. Parses flags, wires the library objects, and turns SIGTERM/SIGINT into a
// prompt, bounded stop: the step in flight is stopped and reported as interrupted, the
// lease is given back (ReleaseTest) so another worker retries the test at once, and the
// process exits 0. If the orchestrator cannot be reached within --shutdown_timeout the
// worker exits anyway (the lease then expires as before); a second signal exits at once.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/grpc_tls.h"
#include "common/target_policy.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "prometheus/exposer.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"
#include "worker/controller_rate_source.h"
#include "worker/http_get.h"
#include "worker/lease_loop.h"
#include "worker/metrics_collector.h"
#include "worker/orchestrator_client.h"
#include "worker/replayer_set.h"
#include "worker/test_runner.h"
#include "worker/token_file.h"
#include "worker/worker_metrics.h"

ABSL_FLAG(std::string, orchestrator, "127.0.0.1:50051",
          "Orchestrator gRPC address (host:port) to lease tests from");
ABSL_FLAG(std::string, replayer, "127.0.0.1:50052",
          "Replayer gRPC address (host:port) that runs each step's load, or several "
          "comma-separated: each step is then split over all of them (shard i of k, one "
          "schedule; their results merged exactly, and a step fails whole if one fails). Or "
          "dns:NAME:PORT (e.g. dns:vanguard-replayer.vanguard.svc:50052, a Kubernetes headless "
          "Service): NAME is resolved at the start of every test and each step split over "
          "every address it resolves to (a pool scaled between tests is picked up, and it is "
          "resolved again after a step "
          "failed on a replayer it could not reach; a test that "
          "wants more replayers than resolve waits, see --replayer_pool_wait; a name that "
          "resolves to nothing fails the test); over TLS each replayer's certificate must name "
          "NAME. dns: cannot be mixed with a list");
ABSL_FLAG(absl::Duration, replayer_pool_wait, absl::Seconds(120),
          "With --replayer=dns:NAME:PORT and a test whose spec sets replayers (k): how long "
          "the start of the test waits for NAME to resolve to k replayers (an autoscaler that "
          "has just scaled the pool up for the test has pods not ready yet), resolving again "
          "every 3s and logging each change (\"2 of 4 replayers ready\"). When the wait ends "
          "short the test runs on the replayers that are ready and its result says so (a drift "
          "flag). 0: do not wait");
ABSL_FLAG(std::string, worker_id, "", "Name this worker leases under; empty: <hostname>-<pid>");
ABSL_FLAG(absl::Duration, lease_duration, absl::Seconds(10),
          "Lease length asked for; heartbeats are sent every third of it. If this worker "
          "dies, another takes its test over about this long (plus the orchestrator's "
          "--reaper_interval) later");
ABSL_FLAG(absl::Duration, poll_interval, absl::Seconds(1),
          "Wait between LeaseTest calls when no test is queued");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token for the orchestrator (e.g. a mounted Kubernetes "
          "Secret); trailing whitespace is stripped. Wins over $VANGUARD_TOKEN when both are "
          "given. A missing, unreadable or empty file is an error (exit 2)");
ABSL_FLAG(std::string, orchestrator_tls_ca, "",
          "PEM CA certificate(s) to trust: talk TLS to the orchestrator (its --tls_cert) and check "
          "its certificate. Without it the bearer token crosses the network in clear (a warning "
          "says so)");
ABSL_FLAG(std::string, replayer_tls_ca, "",
          "PEM CA certificate(s) to trust: talk TLS to the replayer (its --tls_cert)");
ABSL_FLAG(std::string, tls_client_cert, "",
          "PEM certificate chain this worker presents on its TLS channels (mutual TLS: the "
          "orchestrator's and the replayer's --tls_client_ca). The orchestrator accepts the "
          "worker token only if the certificate's common name or a subject alternative name is "
          "the token's name");
ABSL_FLAG(std::string, tls_client_key, "", "PEM private key file for --tls_client_cert");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus /metrics on (vanguard_worker_*: leases, tests, steps, "
          "the test in flight, the last step's rates and p99, replayer errors), e.g. "
          "0.0.0.0:9091; port 0 picks a free one (logged). Empty (default): no metrics endpoint");
ABSL_FLAG(bool, once, false, "Exit after running one test");
ABSL_FLAG(int, max_tests, 0, "Exit after running this many tests; 0: no limit");
ABSL_FLAG(bool, scrape_metrics, true,
          "Scrape the predictor's Prometheus /metrics page every window (GPU utilization, queue "
          "depth, memory); the URL is the model's first endpoint + /metrics unless its label "
          "metrics.url says otherwise");
ABSL_FLAG(bool, steady_state_detection, true,
          "After each step's fixed warmup, keep settling until latency and throughput stop "
          "drifting (capped) before measuring");
ABSL_FLAG(absl::Duration, max_settle, absl::Seconds(30),
          "Cap on the settle time of a step after a rate change (fixed warmup included)");
ABSL_FLAG(absl::Duration, shutdown_timeout, absl::Seconds(10),
          "On SIGTERM/SIGINT: the most time reporting the interrupted step and giving the "
          "lease back may take; past it the worker exits and the lease expires instead");
ABSL_FLAG(absl::Duration, max_initial_settle, absl::Seconds(90),
          "Cap on the settle time of a test's first step (the model's own warmup)");
ABSL_FLAG(absl::Duration, max_drain, absl::Seconds(180),
          "Cap on draining a backlog of timed-out requests before the next step (0: no drain)");
ABSL_FLAG(std::string, allowed_targets, "",
          "Where the worker's own fetches may go (the predictor's /metrics scrapes, a direct "
          "controller's json_url / prometheus_url), checked on every address a host resolves "
          "to before connecting: comma-separated IPv4/IPv6 CIDRs or addresses, host names and "
          "*.suffix patterns, each with an optional :port or :port-port, e.g. "
          "\"127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000,[::1]\". A refused fetch "
          "fails with PERMISSION_DENIED. Empty (default): loopback only (127.0.0.0/8, ::1). "
          "Link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254, "
          "metadata.google.internal) are never allowed. The replayer has its own flag for "
          "load. See docs/security.md");

namespace {

// What the stop may take beyond --shutdown_timeout before the process exits regardless.
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);

std::mutex log_mu;

void LogLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu);
  std::cerr << "vanguard-worker: " << line << std::endl;
}

// One channel's TLS from the flags: `ca` (flag `ca_flag`) turns it on, and the worker's client
// certificate (--tls_client_cert/--tls_client_key) goes with it when given.
absl::StatusOr<vanguard::ChannelTls> ChannelTlsFromFlags(const std::string& ca_flag,
                                                         const std::string& ca) {
  if (ca.empty()) return vanguard::ChannelTls();
  return vanguard::LoadChannelTls({.ca = ca,
                                   .cert = absl::GetFlag(FLAGS_tls_client_cert),
                                   .key = absl::GetFlag(FLAGS_tls_client_key),
                                   .ca_flag = ca_flag,
                                   .cert_flag = "tls_client_cert",
                                   .key_flag = "tls_client_key"});
}

// Both channels' TLS from the flags; INVALID_ARGUMENT naming the flag when a file is bad or
// the client certificate has no TLS channel to go on.
absl::Status ChannelsTlsFromFlags(vanguard::ChannelTls* orchestrator,
                                  vanguard::ChannelTls* replayer) {
  const std::string orchestrator_ca = absl::GetFlag(FLAGS_orchestrator_tls_ca);
  const std::string replayer_ca = absl::GetFlag(FLAGS_replayer_tls_ca);
  if ((!absl::GetFlag(FLAGS_tls_client_cert).empty() ||
       !absl::GetFlag(FLAGS_tls_client_key).empty()) &&
      orchestrator_ca.empty() && replayer_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_cert/--tls_client_key need --orchestrator_tls_ca or --replayer_tls_ca");
  }
  absl::StatusOr<vanguard::ChannelTls> to_orchestrator =
      ChannelTlsFromFlags("orchestrator_tls_ca", orchestrator_ca);
  if (!to_orchestrator.ok()) return to_orchestrator.status();
  absl::StatusOr<vanguard::ChannelTls> to_replayer =
      ChannelTlsFromFlags("replayer_tls_ca", replayer_ca);
  if (!to_replayer.ok()) return to_replayer.status();
  *orchestrator = *std::move(to_orchestrator);
  *replayer = *std::move(to_replayer);
  return absl::OkStatus();
}

std::string DefaultWorkerId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "worker", "-", getpid());
}

// Everything the flags say, checked; the bearer token read.
struct WorkerConfig {
  std::string worker_id;
  absl::Duration lease_duration;
  absl::Duration poll_interval;
  absl::Duration shutdown_timeout;
  int max_tests = 0;
  vanguard::TargetPolicy target_policy;
  vanguard::ChannelTls orchestrator_tls, replayer_tls;
  vanguard::worker::ReplayerSource replayers;
  absl::Duration replayer_pool_wait;
  std::string bearer_token;
  std::string metrics_listen;
};

// The bearer token from --token_file, else $VANGUARD_TOKEN (empty: none); an error naming
// the file when it cannot be read.
absl::StatusOr<std::string> BearerTokenFromFlags() {
  if (const std::string token_file = absl::GetFlag(FLAGS_token_file); !token_file.empty()) {
    absl::StatusOr<std::string> token = vanguard::worker::ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    if (std::getenv("VANGUARD_TOKEN") != nullptr) {
      LogLine("both --token_file and $VANGUARD_TOKEN are set; using --token_file");
    }
    return token;
  }
  const char* token = std::getenv("VANGUARD_TOKEN");
  return std::string(token != nullptr ? token : "");
}

// The flags checked into a WorkerConfig; INVALID_ARGUMENT with the line to print (exit 2).
absl::StatusOr<WorkerConfig> ConfigFromFlags() {
  WorkerConfig c;
  c.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  c.poll_interval = absl::GetFlag(FLAGS_poll_interval);
  c.max_tests = absl::GetFlag(FLAGS_once) ? 1 : absl::GetFlag(FLAGS_max_tests);
  c.shutdown_timeout = absl::GetFlag(FLAGS_shutdown_timeout);
  if (c.lease_duration < absl::Seconds(3)) {
    return absl::InvalidArgumentError("--lease_duration must be at least 3s");
  }
  if (c.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--poll_interval must be > 0");
  }
  if (c.max_tests < 0) return absl::InvalidArgumentError("--max_tests must be >= 0");
  if (c.shutdown_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--shutdown_timeout must be > 0");
  }
  absl::StatusOr<vanguard::TargetPolicy> target_policy =
      vanguard::TargetPolicy::FromFlag(absl::GetFlag(FLAGS_allowed_targets));
  if (!target_policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--allowed_targets: ", target_policy.status().message()));
  }
  c.target_policy = *std::move(target_policy);
  if (absl::Status tls = ChannelsTlsFromFlags(&c.orchestrator_tls, &c.replayer_tls); !tls.ok()) {
    return tls;
  }
  absl::StatusOr<vanguard::worker::ReplayerSource> replayers =
      vanguard::worker::ParseReplayerFlag(absl::GetFlag(FLAGS_replayer));
  if (!replayers.ok()) return replayers.status();
  c.replayers = *std::move(replayers);
  c.replayer_pool_wait = absl::GetFlag(FLAGS_replayer_pool_wait);
  if (c.replayer_pool_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--replayer_pool_wait must be >= 0");
  }
  c.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  c.worker_id = absl::GetFlag(FLAGS_worker_id);
  if (c.worker_id.empty()) c.worker_id = DefaultWorkerId();
  absl::StatusOr<std::string> token = BearerTokenFromFlags();
  if (!token.ok()) return token.status();
  c.bearer_token = *std::move(token);
  return c;
}

// The test runner's options: the config's and the measuring flags, and the fetchers the
// target policy guards.
vanguard::worker::TestRunnerOptions RunnerOptions(const WorkerConfig& c) {
  vanguard::worker::TestRunnerOptions o;
  o.worker_id = c.worker_id;
  o.lease_duration = c.lease_duration;
  o.log = LogLine;
  o.shutdown_timeout = c.shutdown_timeout;
  o.measured.steady_state_detection = absl::GetFlag(FLAGS_steady_state_detection);
  o.measured.max_settle = absl::GetFlag(FLAGS_max_settle);
  o.measured.max_initial_settle = absl::GetFlag(FLAGS_max_initial_settle);
  o.measured.max_drain = absl::GetFlag(FLAGS_max_drain);
  if (absl::GetFlag(FLAGS_scrape_metrics)) {
    o.metrics_fetcher = [policy = c.target_policy](const vanguard::v1::Model& model) {
      return vanguard::worker::MetricsCollector::HttpFetcher(vanguard::worker::MetricsUrlFor(model),
                                                             absl::Milliseconds(500), policy);
    };
    o.replica_metrics_fetcher = [policy = c.target_policy](const std::string& url) {
      return vanguard::worker::MetricsCollector::HttpFetcher(url, absl::Milliseconds(500), policy);
    };
  }
  o.controller_fetcher = vanguard::worker::PolicyHttpFetcher(c.target_policy);
  o.fault_poster = vanguard::worker::PolicyHttpPoster(c.target_policy);
  return o;
}

// The /metrics endpoint on `listen` serving `metrics` (nullptr when `listen` is empty); an
// error naming the address when it cannot be bound.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, const vanguard::worker::WorkerMetrics& metrics) {
  if (listen.empty()) return nullptr;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("--metrics_listen: cannot serve metrics on ", listen, ": ", e.what()));
  }
  exposer->RegisterCollectable(metrics.registry());
  LogLine(absl::StrCat("metrics on http://", listen, "/metrics (port ",
                       exposer->GetListeningPorts().front(), ")"));
  return exposer;
}

// The replayers --replayer names, one channel each (a DNS pool's resolved at the start of
// every test, waited for up to --replayer_pool_wait); the test runner splits each step over
// them.
absl::StatusOr<std::unique_ptr<vanguard::worker::ReplayerSet>> ConnectReplayers(
    const WorkerConfig& c, vanguard::Clock* clock) {
  vanguard::worker::ReplayerSetOptions options;
  options.log = LogLine;
  options.pool_wait = c.replayer_pool_wait;
  options.clock = clock;
  return vanguard::worker::ReplayerSet::Create(
      c.replayers,
      vanguard::worker::GrpcReplayerConnector(vanguard::ChannelCredentials(c.replayer_tls),
                                              c.replayers, clock),
      std::move(options));
}

// The signal thread's loop until `done`: the first SIGTERM/SIGINT stops `loop` (the step in
// flight interrupted, the lease given back); a second one, or a stop outlasting
// --shutdown_timeout plus kShutdownGrace, exits the process at once.
void WatchStopSignals(const sigset_t& stop_signals, const std::atomic<bool>& done,
                      vanguard::worker::LeaseLoop& loop, vanguard::Clock* clock,
                      absl::Duration shutdown_timeout) {
  const timespec tick = {0, 200'000'000};
  std::optional<absl::Duration> stopping_since;  // monotonic time of the first signal
  while (!done.load()) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
    if ((sig == SIGTERM || sig == SIGINT) && stopping_since.has_value()) {
      LogLine(absl::StrCat("signal ", sig, " again: exiting now"));
      std::_Exit(1);
    }
    if (sig == SIGTERM || sig == SIGINT) {
      LogLine(absl::StrCat("signal ", sig,
                           ": stopping (interrupting the step in flight, giving the lease back)"));
      stopping_since = clock->Monotonic();
      loop.Stop();
    }
    if (stopping_since.has_value() &&
        clock->Monotonic() - *stopping_since > shutdown_timeout + kShutdownGrace) {
      LogLine("did not stop within --shutdown_timeout: exiting now");
      std::_Exit(1);
    }
  }
}

void ParseFlags(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Leases capacity tests from the Vanguard orchestrator and runs them step by step "
      "through a replayer.\nThe bearer token for the orchestrator is read from "
      "--token_file, else from $VANGUARD_TOKEN when set (--token_file wins if both are "
      "given).\n\n  vanguard-worker --orchestrator=127.0.0.1:50051 "
      "--replayer=127.0.0.1:50052\n\nA pool of replayers: --replayer=a:50052,b:50052, or "
      "--replayer=dns:NAME:PORT resolved at the start of every test (e.g. a Kubernetes "
      "headless Service; a test whose spec sets replayers waits up to --replayer_pool_wait "
      "for that many).\n\nOn SIGTERM/SIGINT the step in flight is stopped and "
      "reported as interrupted, the lease is given back (the test is queued again at once "
      "for another worker), and the worker exits 0, all within --shutdown_timeout.");
  // --help lists the flags of this file (Abseil's default looks for <program>.cc).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "worker/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  ParseFlags(argc, argv);
  absl::StatusOr<WorkerConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    LogLine(std::string(config.status().message()));
    return 2;
  }
  const WorkerConfig& c = *config;
  LogLine(absl::StrCat("allowed targets: ", c.target_policy.ToString(),
                       c.target_policy.is_default() ? " (the default)" : ""));

  // Block the stop signals in every thread (gRPC's included) and take them on one thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  vanguard::worker::OrchestratorClientOptions client_options;
  client_options.bearer_token = c.bearer_token;
  if (!client_options.bearer_token.empty() && !c.orchestrator_tls.enabled) {
    LogLine(
        "WARNING: the bearer token is sent to the orchestrator in clear (no "
        "--orchestrator_tls_ca)");
  }
  auto orchestrator_stub = vanguard::v1::Orchestrator::NewStub(grpc::CreateChannel(
      absl::GetFlag(FLAGS_orchestrator), vanguard::ChannelCredentials(c.orchestrator_tls)));

  vanguard::worker::WorkerMetrics metrics;
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
      ServeMetrics(c.metrics_listen, metrics);
  if (!exposer.ok()) {
    LogLine(std::string(exposer.status().message()));
    return 1;
  }

  vanguard::Clock* clock = vanguard::Clock::Real();
  vanguard::worker::OrchestratorClient orchestrator(orchestrator_stub.get(), client_options);
  absl::StatusOr<std::unique_ptr<vanguard::worker::ReplayerSet>> replayers =
      ConnectReplayers(c, clock);
  if (!replayers.ok()) {
    LogLine(std::string(replayers.status().message()));
    return 2;
  }
  vanguard::worker::TestRunnerOptions runner_options = RunnerOptions(c);
  runner_options.metrics = &metrics;
  vanguard::worker::TestRunner runner(&orchestrator, replayers->get(), clock,
                                      std::move(runner_options));

  vanguard::worker::LeaseLoopOptions loop_options;
  loop_options.worker_id = c.worker_id;
  loop_options.lease_duration = c.lease_duration;
  loop_options.poll_interval = c.poll_interval;
  loop_options.max_tests = c.max_tests;
  loop_options.log = LogLine;
  loop_options.metrics = &metrics;
  vanguard::worker::LeaseLoop loop(&orchestrator, &runner, clock, loop_options);

  std::atomic<bool> done{false};
  std::thread signal_watcher(
      [&] { WatchStopSignals(stop_signals, done, loop, clock, c.shutdown_timeout); });

  LogLine(absl::StrCat(
      "worker ", c.worker_id, " leasing from ", absl::GetFlag(FLAGS_orchestrator),
      c.orchestrator_tls.enabled ? " (TLS)" : " (plaintext)",
      c.replayers.is_dns() || c.replayers.addresses.size() > 1 ? ", replayers " : ", replayer ",
      c.replayers.ToString(), c.replayer_tls.enabled ? " (TLS)" : " (plaintext)"));
  loop.Run();
  done.store(true);
  signal_watcher.join();
  LogLine(absl::StrCat("exiting after ", loop.tests_run(), " test(s)"));
  return 0;
}
