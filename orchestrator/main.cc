// vanguard-orchestrator: the gRPC server for vanguard.v1.Orchestrator, backed by PostgreSQL.
// Parses flags, applies schema migrations (waiting for the database to come up), starts the
// lease reaper and the gRPC server, and runs until SIGTERM/SIGINT.
//
//   vanguard-orchestrator --database_url=postgresql://vanguard@127.0.0.1:5432/vanguard
//                         --listen=127.0.0.1:50051
//   vanguard-orchestrator --migrate_only   # apply migrations and exit
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_tls.h"
#include "common/port_file.h"
#include "common/postgres.h"
#include "common/target_policy.h"
#include "grpcpp/grpcpp.h"
#include "orchestrator/authorizer.h"
#include "orchestrator/capacity_repository.h"
#include "orchestrator/grpc_service.h"
#include "orchestrator/lease_reaper.h"
#include "orchestrator/metrics.h"
#include "orchestrator/migrator.h"
#include "orchestrator/model_repository.h"
#include "orchestrator/orchestrator_service.h"
#include "orchestrator/queue_notifier.h"
#include "orchestrator/schedule_enqueuer.h"
#include "orchestrator/schedule_repository.h"
#include "orchestrator/team_repository.h"
#include "orchestrator/test_repository.h"
#include "orchestrator/token_repository.h"
#include "orchestrator/webhook_dispatcher.h"
#include "orchestrator/webhook_repository.h"
#include "orchestrator/webhook_sender.h"
#include "prometheus/exposer.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "HOST:PORT to serve gRPC on; port 0 picks a free port");
ABSL_FLAG(std::string, port_file, "",
          "if set, write the listening port followed by a newline to this file (atomically)");
ABSL_FLAG(std::string, database_url, "",
          "PostgreSQL libpq conninfo (\"host=... dbname=...\") or postgresql:// URL; "
          "default: $VANGUARD_DATABASE_URL");
ABSL_FLAG(bool, migrate_only, false, "apply the schema migrations and exit");
ABSL_FLAG(bool, print_lease_sql, false,
          "print the SQL statement that leases a test ($1 worker id, $2 lease seconds; the "
          "holder token, $3, as 0: none) and exit; the queue benchmark runs it under pgbench");
ABSL_FLAG(absl::Duration, reaper_interval, absl::Seconds(1),
          "how often expired leases are returned to the queue (a dead worker's test is taken "
          "over within the lease plus this)");
ABSL_FLAG(absl::Duration, reaper_outage_grace, absl::Seconds(10),
          "when the reaper reaches the database again after it could not (and when it starts), "
          "leases of running tests get this long to be renewed before any is reaped: their "
          "workers' heartbeats failed too, they did not die (0: reap at once)");
ABSL_FLAG(absl::Duration, schedule_interval, absl::Seconds(10),
          "how often interval schedules that fall due are queued (one replica at a time, under "
          "the reaper's advisory lock); a schedule runs at most this late");
ABSL_FLAG(absl::Duration, webhook_interval, absl::Seconds(5),
          "how often new regressions are turned into webhook deliveries and due deliveries "
          "are sent");
ABSL_FLAG(absl::Duration, webhook_timeout, absl::Seconds(10),
          "longest a webhook POST may take before the attempt counts as failed");
ABSL_FLAG(int, db_pool_size, 16,
          "maximum number of PostgreSQL connections (the queue benchmark leases fastest with "
          "about one per concurrently calling worker, up to 16)");
ABSL_FLAG(absl::Duration, db_connect_timeout, absl::Seconds(30),
          "how long to keep retrying the database at start before giving up");
ABSL_FLAG(bool, insecure_no_auth, false,
          "accept every RPC without a bearer token (local experiments only; logs a warning)");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding a bearer secret to keep valid as admin token \"bootstrap-admin\" "
          "(default: $VANGUARD_BOOTSTRAP_ADMIN_TOKEN when set)");
ABSL_FLAG(absl::Duration, auth_cache_ttl, absl::Seconds(2),
          "how long a token lookup is cached; a revocation through another replica takes "
          "effect within this time");
ABSL_FLAG(double, auth_unknown_lookups_per_second, 100,
          "database lookups per second of bearer secrets not cached as valid (unknown, "
          "revoked or new tokens), shared by every caller: over it such a call is UNAVAILABLE "
          "with a retry hint, so a flood of bad tokens cannot load the database; tokens "
          "cached as valid are not counted");
ABSL_FLAG(double, auth_unknown_lookup_burst, 200,
          "how many such lookups may happen at once before --auth_unknown_lookups_per_second "
          "paces them");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain file: serve gRPC over TLS (without it bearer tokens cross the "
          "network in clear; a warning says so)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key file for --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificate(s): require every client to present a certificate signed by them "
          "(mutual TLS; needs --tls_cert). A worker-role token is then accepted only from a "
          "client whose certificate names it (common name or subject alternative name equal to "
          "the token's name), PERMISSION_DENIED otherwise. See docs/security.md");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus /metrics on (empty: no metrics endpoint)");
ABSL_FLAG(absl::Duration, max_lease_wait, absl::Seconds(30),
          "longest time a LeaseTest call long-polls for a test");
ABSL_FLAG(absl::Duration, health_interval, absl::Seconds(5),
          "how often the database is probed (queue depth metrics); the gRPC health service "
          "reports NOT_SERVING while it does not answer");
ABSL_FLAG(int, grpc_max_pollers, 4, "most gRPC sync-server threads polling for new calls");
ABSL_FLAG(int, grpc_max_receive_bytes, 4 << 20,
          "largest gRPC request message accepted, in bytes; a larger one is refused with "
          "RESOURCE_EXHAUSTED before it is parsed");
ABSL_FLAG(int, grpc_max_concurrent_streams, 100,
          "most concurrent calls (HTTP/2 streams) one client connection may have open; "
          "further calls on that connection wait for one to end");
ABSL_FLAG(int, max_watch_streams, 256,
          "most WatchTest streams open at once on this orchestrator (each holds a server "
          "thread and polls the database); one more is RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_watch_streams_per_token, 16,
          "most WatchTest streams one token may have open at once on this orchestrator; one "
          "more is RESOURCE_EXHAUSTED (not applied with --insecure_no_auth: no token to count "
          "by)");
ABSL_FLAG(std::string, allowed_targets, "",
          "where models' endpoints and metrics.url labels and tests' direct_controller URLs "
          "may point, checked at RegisterModel and SubmitTest (INVALID_ARGUMENT naming the "
          "field and the rule): comma-separated IPv4/IPv6 CIDRs or addresses, host names and "
          "*.suffix patterns, each with an optional :port or :port-port, e.g. "
          "\"127.0.0.0/8,10.0.0.0/8,*.svc.cluster.local:8000-9000,[::1]\". Give it the "
          "list the workers and replayers enforce at connect time. The orchestrator does not "
          "resolve names: a host name passes only through a name rule (e.g. "
          "*.svc.cluster.local), an address only through an address rule. Empty (default): only "
          "link-local and cloud metadata targets "
          "(169.254.0.0/16, fe80::/10, fd00:ec2::254, metadata.google.internal) are refused, "
          "which no list can allow: a rule naming only such targets (169.254.169.254/32, "
          "fe80::/10, metadata) stops the orchestrator at start. See docs/security.md");

namespace vanguard {
namespace {

struct Config {
  std::string listen;
  std::string port_file;
  std::string database_url;
  bool migrate_only = false;
  absl::Duration reaper_interval;
  absl::Duration reaper_outage_grace;
  absl::Duration schedule_interval;
  absl::Duration webhook_interval;
  absl::Duration webhook_timeout;
  int db_pool_size = 8;
  absl::Duration db_connect_timeout;
  bool insecure_no_auth = false;
  std::string bootstrap_admin_secret;  // empty: none
  absl::Duration auth_cache_ttl;
  double auth_unknown_lookups_per_second = 100;
  double auth_unknown_lookup_burst = 200;
  ServerTls tls;  // --tls_cert/--tls_key/--tls_client_ca; empty: plaintext
  std::string metrics_listen;
  absl::Duration max_lease_wait;
  int grpc_max_pollers = 4;
  int grpc_max_receive_bytes = 4 << 20;
  int grpc_max_concurrent_streams = 100;
  int max_watch_streams = 256;
  int max_watch_streams_per_token = 16;
  absl::Duration health_interval;
  std::optional<TargetPolicy> target_policy;  // --allowed_targets; unset: none given
};

// The flags that bound what callers may cost (token lookups, watch streams, gRPC messages and
// streams) into *config; false after printing which one is out of range.
bool ReadCallerLimits(Config* config) {
  config->auth_unknown_lookups_per_second = absl::GetFlag(FLAGS_auth_unknown_lookups_per_second);
  config->auth_unknown_lookup_burst = absl::GetFlag(FLAGS_auth_unknown_lookup_burst);
  config->grpc_max_receive_bytes = absl::GetFlag(FLAGS_grpc_max_receive_bytes);
  config->grpc_max_concurrent_streams = absl::GetFlag(FLAGS_grpc_max_concurrent_streams);
  config->max_watch_streams = absl::GetFlag(FLAGS_max_watch_streams);
  config->max_watch_streams_per_token = absl::GetFlag(FLAGS_max_watch_streams_per_token);
  const char* bad = nullptr;
  if (!(config->auth_unknown_lookups_per_second > 0)) {
    bad = "--auth_unknown_lookups_per_second must be > 0";
  } else if (!(config->auth_unknown_lookup_burst >= 1)) {
    bad = "--auth_unknown_lookup_burst must be >= 1";
  } else if (config->grpc_max_receive_bytes < 1024) {
    bad = "--grpc_max_receive_bytes must be >= 1024";
  } else if (config->grpc_max_concurrent_streams < 1) {
    bad = "--grpc_max_concurrent_streams must be >= 1";
  } else if (config->max_watch_streams < 1 || config->max_watch_streams_per_token < 1) {
    bad = "--max_watch_streams and --max_watch_streams_per_token must be >= 1";
  }
  if (bad != nullptr) std::cerr << "vanguard-orchestrator: " << bad << std::endl;
  return bad == nullptr;
}

// The whole file, or nullopt if it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Waits up to `timeout` for SIGINT/SIGTERM (blocked in every thread); true if one came.
bool WaitForStopSignal(const sigset_t& signals, absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) {
    int signal = 0;
    sigwait(&signals, &signal);
    return true;
  }
  timespec ts = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  return sigtimedwait(&signals, nullptr, &ts) > 0;
}

int Run(const Config& config) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // Blocked before any thread starts, so every thread inherits the mask and only
  // WaitForStopSignal receives them.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Migrate, retrying while the database is unreachable (it may still be starting).
  const absl::Time give_up = absl::Now() + config.db_connect_timeout;
  absl::Duration backoff = absl::Milliseconds(100);
  absl::StatusOr<std::vector<std::string>> applied;
  while (true) {
    const absl::Duration connect_timeout =
        std::clamp(give_up - absl::Now(), absl::Seconds(1), absl::Seconds(5));
    applied = Migrator().Run(config.database_url, connect_timeout);
    if (applied.ok() || !absl::IsUnavailable(applied.status())) break;
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    std::cerr << "vanguard-orchestrator: database not reachable yet, retrying: "
              << applied.status().message() << std::endl;
    if (WaitForStopSignal(stop_signals, std::min(backoff, left))) return 0;
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  if (!applied.ok()) {
    std::cerr << "vanguard-orchestrator: cannot prepare the database"
              << (absl::IsUnavailable(applied.status())
                      ? absl::StrCat(" (gave up after ",
                                     absl::FormatDuration(config.db_connect_timeout), ")")
                      : "")
              << ": " << applied.status().message() << std::endl;
    return 1;
  }
  for (const std::string& version : *applied) {
    std::cerr << "vanguard-orchestrator: applied migration " << version << std::endl;
  }
  if (config.migrate_only) {
    std::cout << "schema is current (" << applied->size() << " migrations applied now)"
              << std::endl;
    return 0;
  }

  absl::StatusOr<std::unique_ptr<PostgresPool>> pool =
      PostgresPool::Create({.conninfo = config.database_url, .size = config.db_pool_size});
  if (!pool.ok()) {
    std::cerr << "vanguard-orchestrator: " << pool.status().message() << std::endl;
    return 1;
  }
  ModelRepository models(pool->get());
  TestRepository tests(pool->get());
  TokenRepository tokens(pool->get());
  CapacityRepository capacity(pool->get());
  TeamRepository teams(pool->get());
  ScheduleRepository schedules(pool->get());
  WebhookRepository webhooks(pool->get());
  QueueNotifier queue({.conninfo = config.database_url});
  OrchestratorService::Options service_options;
  service_options.max_lease_wait = config.max_lease_wait;
  service_options.target_policy = config.target_policy;
  OrchestratorService service(&models, &tests, &tokens, &queue, &capacity, &teams, &schedules,
                              &webhooks, service_options);
  OrchestratorMetrics metrics;
  Authorizer authorizer(&tokens, Clock::Real(),
                        {.cache_ttl = config.auth_cache_ttl,
                         .unknown_lookups_per_second = config.auth_unknown_lookups_per_second,
                         .unknown_lookup_burst = config.auth_unknown_lookup_burst});
  OrchestratorGrpcService::Options grpc_options;
  grpc_options.metrics = &metrics;
  grpc_options.max_watch_streams = config.max_watch_streams;
  grpc_options.max_watch_streams_per_token = config.max_watch_streams_per_token;
  if (config.insecure_no_auth) {
    std::cerr << "vanguard-orchestrator: WARNING: --insecure_no_auth: every RPC is accepted "
                 "without a token; do not expose this server"
              << std::endl;
  } else {
    grpc_options.authorizer = &authorizer;
    if (config.tls.cert_chain.empty()) {
      std::cerr << "vanguard-orchestrator: WARNING: bearer-token auth without TLS: tokens cross "
                   "the network in clear (pass --tls_cert and --tls_key)"
                << std::endl;
    }
  }
  OrchestratorGrpcService grpc_service(&service, grpc_options, Clock::Real());
  LeaseReaper reaper(pool->get(),
                     {.interval = config.reaper_interval,
                      .outage_grace = config.reaper_outage_grace,
                      .on_reaped = [&metrics](int requeued, int failed, int cancelled) {
                        metrics.RecordReaped(requeued, failed, cancelled);
                      }});
  ScheduleEnqueuer enqueuer(
      &schedules, Clock::Real(),
      {.interval = config.schedule_interval,
       .on_queued = [&metrics](int queued) { metrics.RecordScheduled(queued); }});
  absl::StatusOr<std::unique_ptr<HttpWebhookSender>> webhook_sender = HttpWebhookSender::Create(
      {.timeout = config.webhook_timeout, .policy = config.target_policy});
  if (!webhook_sender.ok()) {
    std::cerr << "vanguard-orchestrator: " << webhook_sender.status().message() << std::endl;
    return 1;
  }
  WebhookDispatcher dispatcher(&webhooks, webhook_sender->get(), Clock::Real(),
                               {.interval = config.webhook_interval,
                                .claim_for = std::max(absl::Minutes(2), 4 * config.webhook_timeout),
                                .on_attempts = [&metrics](int delivered, int retrying, int failed) {
                                  metrics.RecordWebhookAttempts(delivered, retrying, failed);
                                }});
  // Set once the server exists; the sampler marks the server NOT_SERVING (gRPC health) while
  // the database does not answer.
  std::atomic<grpc::Server*> health_target{nullptr};
  QueueDepthSampler depth_sampler(
      pool->get(), &metrics, config.health_interval, [&health_target](bool database_ok) {
        grpc::Server* server = health_target.load();
        if (server != nullptr && server->GetHealthCheckService() != nullptr) {
          server->GetHealthCheckService()->SetServingStatus(database_ok);
        }
      });

  if (!config.bootstrap_admin_secret.empty()) {
    absl::StatusOr<v1::Token> admin =
        tokens.Ensure("bootstrap-admin", v1::ROLE_ADMIN, config.bootstrap_admin_secret);
    if (!admin.ok()) {
      std::cerr << "vanguard-orchestrator: cannot store the bootstrap admin token: "
                << admin.status() << std::endl;
      return 1;
    }
    std::cerr << "vanguard-orchestrator: bootstrap admin token is valid (token id " << admin->id()
              << ")" << std::endl;
  }

  std::unique_ptr<prometheus::Exposer> exposer;
  if (!config.metrics_listen.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(config.metrics_listen);
    } catch (const std::exception& e) {
      std::cerr << "vanguard-orchestrator: cannot serve metrics on " << config.metrics_listen
                << ": " << e.what() << std::endl;
      return 1;
    }
    exposer->RegisterCollectable(metrics.registry());
    std::cerr << "vanguard-orchestrator: metrics on http://" << config.metrics_listen
              << "/metrics (port " << exposer->GetListeningPorts().front() << ")" << std::endl;
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen, ServerCredentials(config.tls), &port);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              config.grpc_max_pollers);
  builder.SetMaxReceiveMessageSize(config.grpc_max_receive_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.grpc_max_concurrent_streams);
  builder.RegisterService(&grpc_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "vanguard-orchestrator: cannot listen on " << config.listen << std::endl;
    return 1;
  }
  health_target.store(server.get());
  queue.Start();
  reaper.Start();
  enqueuer.Start();
  dispatcher.Start();
  depth_sampler.Start();

  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  if (!config.port_file.empty() && !WritePortFile(config.port_file, port)) {
    std::cerr << "vanguard-orchestrator: cannot write --port_file " << config.port_file << ": "
              << std::strerror(errno) << std::endl;
    depth_sampler.Stop();  // it touches the server's health status
    server->Shutdown();
    return 1;
  }
  std::cout << "LISTENING " << host << ":" << port << std::endl;

  WaitForStopSignal(stop_signals, absl::InfiniteDuration());
  std::cerr << "vanguard-orchestrator: stopping" << std::endl;
  // Open watches end at their next poll; unary calls get a moment to finish.
  grpc_service.BeginShutdown();
  queue.Stop();          // long-polling LeaseTest calls return at once
  depth_sampler.Stop();  // it touches the server's health status
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  reaper.Stop();
  enqueuer.Stop();
  dispatcher.Stop();
  return 0;
}

}  // namespace
}  // namespace vanguard

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves the vanguard.v1.Orchestrator gRPC API (model registry, test queue, worker "
      "protocol) backed by PostgreSQL.\nUsage: vanguard-orchestrator "
      "--database_url=postgresql://USER@HOST:PORT/DB [--listen=HOST:PORT]");
  // --help lists the flags defined here (absl matches on the binary's name otherwise).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "orchestrator/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);

  if (absl::GetFlag(FLAGS_print_lease_sql)) {
    // pgbench binds $1 and $2 itself (tests/bench/queue.sh); no token, as without auth.
    std::cout << absl::StrReplaceAll(vanguard::TestRepository::LeaseSql(),
                                     {{"$3::bigint", "0::bigint"}})
              << std::endl;
    return 0;
  }
  vanguard::Config config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.port_file = absl::GetFlag(FLAGS_port_file);
  config.database_url = absl::GetFlag(FLAGS_database_url);
  if (config.database_url.empty()) {
    const char* env = std::getenv("VANGUARD_DATABASE_URL");
    if (env != nullptr) config.database_url = env;
  }
  config.migrate_only = absl::GetFlag(FLAGS_migrate_only);
  config.reaper_interval = absl::GetFlag(FLAGS_reaper_interval);
  config.reaper_outage_grace = absl::GetFlag(FLAGS_reaper_outage_grace);
  config.schedule_interval = absl::GetFlag(FLAGS_schedule_interval);
  config.webhook_interval = absl::GetFlag(FLAGS_webhook_interval);
  config.webhook_timeout = absl::GetFlag(FLAGS_webhook_timeout);
  config.db_pool_size = absl::GetFlag(FLAGS_db_pool_size);
  config.db_connect_timeout = absl::GetFlag(FLAGS_db_connect_timeout);
  config.insecure_no_auth = absl::GetFlag(FLAGS_insecure_no_auth);
  config.auth_cache_ttl = absl::GetFlag(FLAGS_auth_cache_ttl);
  if (!ReadCallerLimits(&config)) return 2;
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  config.max_lease_wait = absl::GetFlag(FLAGS_max_lease_wait);
  config.grpc_max_pollers = absl::GetFlag(FLAGS_grpc_max_pollers);
  config.health_interval = absl::GetFlag(FLAGS_health_interval);
  if (config.health_interval <= absl::ZeroDuration()) {
    std::cerr << "vanguard-orchestrator: --health_interval must be > 0" << std::endl;
    return 2;
  }
  if (const std::string rules = absl::GetFlag(FLAGS_allowed_targets); !rules.empty()) {
    absl::StatusOr<vanguard::TargetPolicy> policy = vanguard::TargetPolicy::FromFlag(rules);
    if (!policy.ok()) {
      std::cerr << "vanguard-orchestrator: --allowed_targets: " << policy.status().message()
                << std::endl;
      return 2;
    }
    config.target_policy = *std::move(policy);
  }
  if (const std::string path = absl::GetFlag(FLAGS_admin_token_file); !path.empty()) {
    std::optional<std::string> secret = vanguard::ReadFile(path);
    if (!secret.has_value()) {
      std::cerr << "vanguard-orchestrator: cannot read --admin_token_file " << path << std::endl;
      return 2;
    }
    config.bootstrap_admin_secret = std::string(absl::StripAsciiWhitespace(*secret));
    if (config.bootstrap_admin_secret.empty()) {
      std::cerr << "vanguard-orchestrator: --admin_token_file " << path << " is empty" << std::endl;
      return 2;
    }
  } else if (const char* env = std::getenv("VANGUARD_BOOTSTRAP_ADMIN_TOKEN");
             env != nullptr && *env != '\0') {
    config.bootstrap_admin_secret = std::string(absl::StripAsciiWhitespace(env));
  }
  if (!config.bootstrap_admin_secret.empty() && config.bootstrap_admin_secret.size() < 16) {
    std::cerr << "vanguard-orchestrator: the bootstrap admin token must be at least 16 "
                 "characters"
              << std::endl;
    return 2;
  }
  absl::StatusOr<vanguard::ServerTls> tls =
      vanguard::LoadServerTls({.ca = absl::GetFlag(FLAGS_tls_client_ca),
                               .cert = absl::GetFlag(FLAGS_tls_cert),
                               .key = absl::GetFlag(FLAGS_tls_key),
                               .ca_flag = "tls_client_ca"});
  if (!tls.ok()) {
    std::cerr << "vanguard-orchestrator: " << tls.status().message() << std::endl;
    return 2;
  }
  config.tls = *std::move(tls);
  if (config.max_lease_wait < absl::ZeroDuration()) {
    std::cerr << "vanguard-orchestrator: --max_lease_wait must be >= 0" << std::endl;
    return 2;
  }
  if (config.grpc_max_pollers < 1) {
    std::cerr << "vanguard-orchestrator: --grpc_max_pollers must be >= 1" << std::endl;
    return 2;
  }

  if (config.database_url.empty()) {
    std::cerr << "vanguard-orchestrator: no database: pass --database_url or set "
                 "VANGUARD_DATABASE_URL"
              << std::endl;
    return 2;
  }
  if (config.listen.empty() || config.listen.find(':') == std::string::npos) {
    std::cerr << "vanguard-orchestrator: --listen must be HOST:PORT" << std::endl;
    return 2;
  }
  if (config.db_pool_size < 1) {
    std::cerr << "vanguard-orchestrator: --db_pool_size must be >= 1" << std::endl;
    return 2;
  }
  if (config.reaper_outage_grace < absl::ZeroDuration()) {
    std::cerr << "vanguard-orchestrator: --reaper_outage_grace must be >= 0" << std::endl;
    return 2;
  }
  if (config.schedule_interval <= absl::ZeroDuration() ||
      config.webhook_interval <= absl::ZeroDuration() ||
      config.webhook_timeout <= absl::ZeroDuration()) {
    std::cerr << "vanguard-orchestrator: --schedule_interval, --webhook_interval and "
                 "--webhook_timeout must be > 0"
              << std::endl;
    return 2;
  }
  if (config.reaper_interval <= absl::ZeroDuration()) {
    std::cerr << "vanguard-orchestrator: --reaper_interval must be > 0" << std::endl;
    return 2;
  }
  return vanguard::Run(config);
}
