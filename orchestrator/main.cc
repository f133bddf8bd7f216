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
#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
          "how often interval and cron schedules that fall due are queued (one replica at a "
          "time, under the reaper's advisory lock); a schedule runs at most this late");
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
          "(default: $VANGUARD_BOOTSTRAP_ADMIN_TOKEN when set); a secret once revoked stays "
          "revoked (a warning at start)");
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
// streams) into *config; an error naming the one out of range.
absl::Status ReadCallerLimits(Config* config) {
  config->auth_unknown_lookups_per_second = absl::GetFlag(FLAGS_auth_unknown_lookups_per_second);
  config->auth_unknown_lookup_burst = absl::GetFlag(FLAGS_auth_unknown_lookup_burst);
  config->grpc_max_receive_bytes = absl::GetFlag(FLAGS_grpc_max_receive_bytes);
  config->grpc_max_concurrent_streams = absl::GetFlag(FLAGS_grpc_max_concurrent_streams);
  config->max_watch_streams = absl::GetFlag(FLAGS_max_watch_streams);
  config->max_watch_streams_per_token = absl::GetFlag(FLAGS_max_watch_streams_per_token);
  config->grpc_max_pollers = absl::GetFlag(FLAGS_grpc_max_pollers);
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
  } else if (config->grpc_max_pollers < 1) {
    bad = "--grpc_max_pollers must be >= 1";
  }
  return bad == nullptr ? absl::OkStatus() : absl::InvalidArgumentError(bad);
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

// The bootstrap admin's secret from --admin_token_file, else VANGUARD_BOOTSTRAP_ADMIN_TOKEN,
// into *config (empty: none); an error when the file cannot be read or the secret is short.
absl::Status ReadBootstrapAdmin(Config* config) {
  if (const std::string path = absl::GetFlag(FLAGS_admin_token_file); !path.empty()) {
    std::optional<std::string> secret = ReadFile(path);
    if (!secret.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read --admin_token_file ", path));
    }
    config->bootstrap_admin_secret = std::string(absl::StripAsciiWhitespace(*secret));
    if (config->bootstrap_admin_secret.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--admin_token_file ", path, " is empty"));
    }
  } else if (const char* env = std::getenv("VANGUARD_BOOTSTRAP_ADMIN_TOKEN");
             env != nullptr && *env != '\0') {
    config->bootstrap_admin_secret = std::string(absl::StripAsciiWhitespace(env));
  }
  if (!config->bootstrap_admin_secret.empty() && config->bootstrap_admin_secret.size() < 16) {
    return absl::InvalidArgumentError("the bootstrap admin token must be at least 16 characters");
  }
  return absl::OkStatus();
}

// --allowed_targets and the TLS flags into *config; an error naming the flag.
absl::Status ReadSecurityFlags(Config* config) {
  if (const std::string rules = absl::GetFlag(FLAGS_allowed_targets); !rules.empty()) {
    absl::StatusOr<TargetPolicy> policy = TargetPolicy::FromFlag(rules);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allowed_targets: ", policy.status().message()));
    }
    config->target_policy = *std::move(policy);
  }
  absl::StatusOr<ServerTls> tls = LoadServerTls({.ca = absl::GetFlag(FLAGS_tls_client_ca),
                                                 .cert = absl::GetFlag(FLAGS_tls_cert),
                                                 .key = absl::GetFlag(FLAGS_tls_key),
                                                 .ca_flag = "tls_client_ca"});
  if (!tls.ok()) return tls.status();
  config->tls = *std::move(tls);
  return ReadBootstrapAdmin(config);
}

// The checks on the database, listening and loop-interval flags; an error naming the flag.
absl::Status ValidateServingFlags(const Config& config) {
  const char* bad = nullptr;
  if (config.database_url.empty()) {
    bad = "no database: pass --database_url or set VANGUARD_DATABASE_URL";
  } else if (config.listen.empty() || config.listen.find(':') == std::string::npos) {
    bad = "--listen must be HOST:PORT";
  } else if (config.db_pool_size < 1) {
    bad = "--db_pool_size must be >= 1";
  } else if (config.health_interval <= absl::ZeroDuration()) {
    bad = "--health_interval must be > 0";
  } else if (config.max_lease_wait < absl::ZeroDuration()) {
    bad = "--max_lease_wait must be >= 0";
  } else if (config.reaper_outage_grace < absl::ZeroDuration()) {
    bad = "--reaper_outage_grace must be >= 0";
  } else if (config.schedule_interval <= absl::ZeroDuration() ||
             config.webhook_interval <= absl::ZeroDuration() ||
             config.webhook_timeout <= absl::ZeroDuration()) {
    bad = "--schedule_interval, --webhook_interval and --webhook_timeout must be > 0";
  } else if (config.reaper_interval <= absl::ZeroDuration()) {
    bad = "--reaper_interval must be > 0";
  }
  return bad == nullptr ? absl::OkStatus() : absl::InvalidArgumentError(bad);
}

// Every flag into a Config, or the error (naming the flag) that makes the process exit 2.
absl::StatusOr<Config> ConfigFromFlags() {
  Config config;
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
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  config.max_lease_wait = absl::GetFlag(FLAGS_max_lease_wait);
  config.health_interval = absl::GetFlag(FLAGS_health_interval);
  if (absl::Status s = ReadCallerLimits(&config); !s.ok()) return s;
  if (absl::Status s = ReadSecurityFlags(&config); !s.ok()) return s;
  if (absl::Status s = ValidateServingFlags(config); !s.ok()) return s;
  return config;
}

// SIGINT and SIGTERM blocked in the calling thread before any other thread starts, so every
// thread inherits the mask and only WaitForStopSignal receives them; returns the set.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Applies the schema migrations, retrying while the database is unreachable (it may still be
// starting) for up to --db_connect_timeout. nullopt: the schema is current, go on serving;
// otherwise the process's exit code: 0 when --migrate_only is done or a stop signal came while
// waiting, 1 when the database could not be prepared (after printing why).
std::optional<int> PrepareDatabase(const Config& config, const sigset_t& stop_signals) {
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
  return std::nullopt;
}

// Warns on stderr when the database acknowledges commits before they are durable
// (synchronous_commit=off, for this process's sessions): a crash of PostgreSQL can then lose
// a step or a result the orchestrator already acknowledged to a worker, which goes on as if
// it were stored (the chaos bench saw one). The operator's choice stands; this says what it
// costs. Silent when the setting cannot be read (the pool reports an unreachable database).
void WarnIfCommitsAreNotDurable(const Config& config) {
  absl::StatusOr<std::unique_ptr<pqxx::connection>> conn =
      ConnectPostgres(config.database_url, absl::Seconds(5));
  if (!conn.ok()) return;
  try {
    pqxx::nontransaction txn(**conn);
    const std::string setting = txn.exec1("SHOW synchronous_commit")[0].c_str();
    if (setting == "off") {
      std::cerr << "vanguard-orchestrator: warning: the database runs with "
                   "synchronous_commit=off: a PostgreSQL crash can lose steps and results "
                   "already acknowledged to workers (set it on, PostgreSQL's default, or add "
                   "options='-c synchronous_commit=on' to --database_url)"
                << std::endl;
    }
  } catch (...) {
  }
}

// The gRPC face's options: metrics, watch-stream caps, and the authorizer unless
// --insecure_no_auth (warning on stderr about that, or about tokens without TLS).
OrchestratorGrpcService::Options GrpcOptions(const Config& config, OrchestratorMetrics* metrics,
                                             Authorizer* authorizer) {
  OrchestratorGrpcService::Options options;
  options.metrics = metrics;
  options.max_watch_streams = config.max_watch_streams;
  options.max_watch_streams_per_token = config.max_watch_streams_per_token;
  if (config.insecure_no_auth) {
    std::cerr << "vanguard-orchestrator: WARNING: --insecure_no_auth: every RPC is accepted "
                 "without a token; do not expose this server"
              << std::endl;
    return options;
  }
  options.authorizer = authorizer;
  if (config.tls.cert_chain.empty()) {
    std::cerr << "vanguard-orchestrator: WARNING: bearer-token auth without TLS: tokens cross "
                 "the network in clear (pass --tls_cert and --tls_key)"
              << std::endl;
  }
  return options;
}

// The /metrics endpoint on `listen` serving `metrics` (nullptr when `listen` is empty); an
// error naming the address when it cannot be bound.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const std::string& listen, const OrchestratorMetrics& metrics) {
  if (listen.empty()) return nullptr;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ", e.what()));
  }
  exposer->RegisterCollectable(metrics.registry());
  std::cerr << "vanguard-orchestrator: metrics on http://" << listen << "/metrics (port "
            << exposer->GetListeningPorts().front() << ")" << std::endl;
  return exposer;
}

// The serving orchestrator over one database pool, its parts built in dependency order (the
// members' order): the repositories, the service and its gRPC face, and the background loops
// (lease reaper, schedule enqueuer, webhook dispatcher, queue-depth sampler). Built, served
// and destroyed by Run on the main thread.
class Orchestrator {
 public:
  Orchestrator(const Config& config, PostgresPool* pool, WebhookSender* webhook_sender)
      : config_(config),
        models_(pool),
        tests_(pool),
        tokens_(pool),
        capacity_(pool),
        teams_(pool),
        schedules_(pool),
        webhooks_(pool),
        queue_({.conninfo = config.database_url}),
        service_(&models_, &tests_, &tokens_, &queue_, &capacity_, &teams_, &schedules_, &webhooks_,
                 ServiceOptions(config)),
        authorizer_(&tokens_, Clock::Real(),
                    {.cache_ttl = config.auth_cache_ttl,
                     .unknown_lookups_per_second = config.auth_unknown_lookups_per_second,
                     .unknown_lookup_burst = config.auth_unknown_lookup_burst}),
        grpc_service_(&service_, GrpcOptions(config, &metrics_, &authorizer_), Clock::Real()),
        reaper_(pool, {.interval = config.reaper_interval,
                       .outage_grace = config.reaper_outage_grace,
                       .on_reaped =
                           [this](int requeued, int failed, int cancelled) {
                             metrics_.RecordReaped(requeued, failed, cancelled);
                           }}),
        enqueuer_(&schedules_, Clock::Real(),
                  {.interval = config.schedule_interval,
                   .on_queued = [this](int queued) { metrics_.RecordScheduled(queued); }}),
        dispatcher_(&webhooks_, webhook_sender, Clock::Real(),
                    {.interval = config.webhook_interval,
                     .claim_for = std::max(absl::Minutes(2), 4 * config.webhook_timeout),
                     .on_attempts =
                         [this](int delivered, int retrying, int failed) {
                           metrics_.RecordWebhookAttempts(delivered, retrying, failed);
                         }}),
        // The sampler marks the server NOT_SERVING (gRPC health) while the database does not
        // answer, once the server exists.
        depth_sampler_(pool, &metrics_, config.health_interval, [this](bool database_ok) {
          grpc::Server* server = health_target_.load();
          if (server != nullptr && server->GetHealthCheckService() != nullptr) {
            server->GetHealthCheckService()->SetServingStatus(database_ok);
          }
        }) {}

  // Stores the bootstrap admin token when one is configured; false after printing why not.
  // A configured secret that was revoked stays revoked (TokenRepository::Ensure): the
  // orchestrator starts, warning that it bootstraps no admin.
  bool EnsureBootstrapAdmin() {
    if (config_.bootstrap_admin_secret.empty()) return true;
    absl::StatusOr<v1::Token> admin =
        tokens_.Ensure("bootstrap-admin", v1::ROLE_ADMIN, config_.bootstrap_admin_secret);
    if (!admin.ok()) {
      std::cerr << "vanguard-orchestrator: cannot store the bootstrap admin token: "
                << admin.status() << std::endl;
      return false;
    }
    if (admin->has_revoke_time()) {
      std::cerr << "vanguard-orchestrator: WARNING: the configured bootstrap admin token (token id "
                << admin->id() << ", \"" << admin->name()
                << "\") was revoked and is not restored: it does not authenticate. Configure a new"
                   " secret (--admin_token_file or $VANGUARD_BOOTSTRAP_ADMIN_TOKEN) to bootstrap"
                   " an admin"
                << std::endl;
      return true;
    }
    std::cerr << "vanguard-orchestrator: bootstrap admin token is valid (token id " << admin->id()
              << ")" << std::endl;
    return true;
  }

  // Serves until a stop signal: the metrics endpoint, the gRPC server on --listen, the
  // background loops and the port file; then shuts them down. The process's exit code.
  int Serve(const sigset_t& stop_signals) {
    absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
        ServeMetrics(config_.metrics_listen, metrics_);
    if (!exposer.ok()) {
      std::cerr << "vanguard-orchestrator: " << exposer.status().message() << std::endl;
      return 1;
    }
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartServer(&port);
    if (server == nullptr) {
      std::cerr << "vanguard-orchestrator: cannot listen on " << config_.listen << std::endl;
      return 1;
    }
    health_target_.store(server.get());
    queue_.Start();
    reaper_.Start();
    enqueuer_.Start();
    dispatcher_.Start();
    depth_sampler_.Start();
    if (!config_.port_file.empty() && !WritePortFile(config_.port_file, port)) {
      std::cerr << "vanguard-orchestrator: cannot write --port_file " << config_.port_file << ": "
                << std::strerror(errno) << std::endl;
      depth_sampler_.Stop();  // it touches the server's health status
      server->Shutdown();
      return 1;
    }
    const std::string host = config_.listen.substr(0, config_.listen.rfind(':'));
    std::cout << "LISTENING " << host << ":" << port << std::endl;
    WaitForStopSignal(stop_signals, absl::InfiniteDuration());
    std::cerr << "vanguard-orchestrator: stopping" << std::endl;
    Stop(*server);
    return 0;
  }

 private:
  static OrchestratorService::Options ServiceOptions(const Config& config) {
    OrchestratorService::Options options;
    options.max_lease_wait = config.max_lease_wait;
    options.target_policy = config.target_policy;
    return options;
  }

  // The gRPC server on --listen with the caller limits; nullptr when it cannot listen.
  std::unique_ptr<grpc::Server> StartServer(int* port) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort(config_.listen, ServerCredentials(config_.tls), port);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                config_.grpc_max_pollers);
    builder.SetMaxReceiveMessageSize(config_.grpc_max_receive_bytes);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               config_.grpc_max_concurrent_streams);
    builder.RegisterService(&grpc_service_);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (*port == 0) return nullptr;
    return server;
  }

  // Open watches end at their next poll; unary calls get a moment to finish.
  void Stop(grpc::Server& server) {
    grpc_service_.BeginShutdown();
    queue_.Stop();          // long-polling LeaseTest calls return at once
    depth_sampler_.Stop();  // it touches the server's health status
    server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    reaper_.Stop();
    enqueuer_.Stop();
    dispatcher_.Stop();
  }

  const Config& config_;
  ModelRepository models_;
  TestRepository tests_;
  TokenRepository tokens_;
  CapacityRepository capacity_;
  TeamRepository teams_;
  ScheduleRepository schedules_;
  WebhookRepository webhooks_;
  QueueNotifier queue_;
  OrchestratorService service_;
  OrchestratorMetrics metrics_;
  Authorizer authorizer_;
  OrchestratorGrpcService grpc_service_;
  LeaseReaper reaper_;
  ScheduleEnqueuer enqueuer_;
  WebhookDispatcher dispatcher_;
  std::atomic<grpc::Server*> health_target_{nullptr};
  QueueDepthSampler depth_sampler_;
};

int Run(const Config& config) {
  const sigset_t stop_signals = BlockStopSignals();
  if (std::optional<int> exit_code = PrepareDatabase(config, stop_signals)) return *exit_code;
  WarnIfCommitsAreNotDurable(config);
  absl::StatusOr<std::unique_ptr<PostgresPool>> pool =
      PostgresPool::Create({.conninfo = config.database_url, .size = config.db_pool_size});
  if (!pool.ok()) {
    std::cerr << "vanguard-orchestrator: " << pool.status().message() << std::endl;
    return 1;
  }
  absl::StatusOr<std::unique_ptr<HttpWebhookSender>> webhook_sender = HttpWebhookSender::Create(
      {.timeout = config.webhook_timeout, .policy = config.target_policy});
  if (!webhook_sender.ok()) {
    std::cerr << "vanguard-orchestrator: " << webhook_sender.status().message() << std::endl;
    return 1;
  }
  Orchestrator orchestrator(config, pool->get(), webhook_sender->get());
  if (!orchestrator.EnsureBootstrapAdmin()) return 1;
  return orchestrator.Serve(stop_signals);
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
  absl::StatusOr<vanguard::Config> config = vanguard::ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "vanguard-orchestrator: " << config.status().message() << std::endl;
    return 2;
  }
  return vanguard::Run(*config);
}
