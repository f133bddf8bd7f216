// The vanguard-orchestrator binary as an operator runs it, against a real PostgreSQL
// ($VANGUARD_TEST_PG): --help, --migrate_only, serving on port 0 with LISTENING and
// --port_file, clean exit on SIGTERM, and a clear non-zero exit when the database is gone.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/health_check.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunBinary;
using testing::Subprocess;

constexpr char kBinary[] = "vanguard-orchestrator";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<testing::TestDatabase> EmptyDatabase() {
  absl::StatusOr<std::unique_ptr<testing::TestDatabase>> db = testing::TestDatabase::Create();
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

TEST(OrchestratorBinaryTest, HelpListsEveryFlag) {
  absl::StatusOr<testing::RunResult> r = RunBinary(kBinary, {"--help"});
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string help = r->out + r->err;
  for (const char* flag : {"--listen", "--port_file", "--database_url", "--migrate_only",
                           "--reaper_interval", "--db_pool_size", "--db_connect_timeout",
                           "--max_watch_streams", "--max_watch_streams_per_token",
                           "--grpc_max_receive_bytes", "--grpc_max_concurrent_streams",
                           "--auth_unknown_lookups_per_second", "--auth_unknown_lookup_burst"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
}

TEST(OrchestratorBinaryTest, ALinkLocalOrMetadataAllowedTargetStopsItAtStart) {
  for (const char* rules : {"10.0.0.0/8,169.254.169.254/32", "fe80::/10", "metadata"}) {
    absl::StatusOr<testing::RunResult> r =
        RunBinary(kBinary, {absl::StrCat("--allowed_targets=", rules), "--listen=127.0.0.1:0",
                            "--database_url=postgresql://127.0.0.1:1/none"});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 2) << rules << ": " << r->err;
    EXPECT_THAT(r->err, AllOf(HasSubstr("--allowed_targets"), HasSubstr("never allowed"))) << rules;
  }
}

TEST(OrchestratorBinaryTest, MigrateOnlyAppliesTheSchemaAndExits) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  absl::StatusOr<testing::RunResult> r =
      RunBinary(kBinary, {"--migrate_only", "--database_url=" + db->conninfo()});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  pqxx::connection conn(db->conninfo());
  pqxx::nontransaction txn(conn);
  EXPECT_GE(txn.exec1("SELECT count(*) FROM schema_migrations")[0].as<int>(), 1);
  EXPECT_FALSE(txn.exec1("SELECT to_regclass('tests') IS NULL")[0].as<bool>());

  // Also through the environment variable, and a second time (nothing left to do).
  r = RunBinary(kBinary, {"--migrate_only"}, {"VANGUARD_DATABASE_URL=" + db->conninfo()});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
}

TEST(OrchestratorBinaryTest, ServesOnPortZeroWritesPortFileAndStopsOnSigterm) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  const std::string port_file =
      absl::StrCat(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp", "/orch-port-", getpid());
  std::remove(port_file.c_str());
  constexpr char kAdmin[] = "binary-test-admin-secret";
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      Subprocess::StartServer(kBinary,
                              {"--listen=127.0.0.1:0", "--port_file=" + port_file,
                               "--database_url=" + db->conninfo(), "--reaper_interval=1s"},
                              {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdmin)});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ(ReadFile(port_file), absl::StrCat((*server)->port(), "\n"));

  auto stub = v1::Orchestrator::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse registered;
  // Auth is on by default: no token, no service.
  grpc::ClientContext anonymous;
  anonymous.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(stub->RegisterModel(&anonymous, reg, &registered).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext ctx1;
  ctx1.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx1.AddMetadata("authorization", absl::StrCat("Bearer ", kAdmin));
  grpc::Status status = stub->RegisterModel(&ctx1, reg, &registered);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::ListModelsRequest list;
  v1::ListModelsResponse listed;
  grpc::ClientContext ctx2;
  ctx2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx2.AddMetadata("authorization", absl::StrCat("Bearer ", kAdmin));
  ASSERT_TRUE(stub->ListModels(&ctx2, list, &listed).ok());
  EXPECT_EQ(listed.models_size(), 1);

  stub.reset();  // a connected but idle client would hold the server's shutdown up to 2 s

  int wait_status = (*server)->Terminate(absl::Seconds(10));
  EXPECT_TRUE(WIFEXITED(wait_status)) << "killed instead of exiting on SIGTERM; stderr:\n"
                                      << (*server)->Stderr();
  EXPECT_EQ(WEXITSTATUS(wait_status), 0);
  std::remove(port_file.c_str());
}

// GET /metrics on 127.0.0.1:port over a plain socket; the whole response.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
  close(fd);
  return response;
}

TEST(OrchestratorBinaryTest, ServesHealthAndPrometheusMetrics) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      Subprocess::StartServer(kBinary, {"--listen=127.0.0.1:0", "--database_url=" + db->conninfo(),
                                        "--metrics_listen=127.0.0.1:0", "--insecure_no_auth"});
  ASSERT_TRUE(server.ok()) << server.status();

  // grpc.health.v1.Health/Check with an empty request: SERVING is field 1 = 1 (08 01).
  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  std::string bytes;
  const grpc::Status health = testing::HealthCheck(channel, "", &bytes);
  ASSERT_TRUE(health.ok()) << health.error_message();
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));

  // One RPC, then the metrics page counts it.
  auto stub = v1::Orchestrator::NewStub(channel);
  grpc::ClientContext list_ctx;
  v1::ListModelsResponse listed;
  ASSERT_TRUE(stub->ListModels(&list_ctx, v1::ListModelsRequest(), &listed).ok());
  int metrics_port = 0;
  const std::string err = (*server)->Stderr();
  const size_t at = err.find("/metrics (port ");
  ASSERT_NE(at, std::string::npos) << err;
  metrics_port = std::atoi(err.c_str() + at + std::strlen("/metrics (port "));
  ASSERT_GT(metrics_port, 0) << err;
  const std::string page = HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(page,
              HasSubstr("vanguard_orchestrator_rpcs_total{code=\"OK\",method=\"ListModels\"} 1"));
  EXPECT_THAT(page, HasSubstr("vanguard_orchestrator_lease_wait_seconds_count 0"));
}

// `conninfo` (either form) with `setting` for every session: options='-c setting'.
std::string WithSessionSetting(const std::string& conninfo, const std::string& setting) {
  if (absl::StartsWith(conninfo, "postgresql://") || absl::StartsWith(conninfo, "postgres://")) {
    return absl::StrCat(conninfo, absl::StrContains(conninfo, "?") ? "&" : "?", "options=-c%20",
                        absl::StrReplaceAll(setting, {{"=", "%3D"}}));
  }
  return absl::StrCat(conninfo, " options='-c ", setting, "'");
}

// A database that acknowledges commits before they are durable can lose, in a crash, a step
// the worker was told was stored (the chaos bench saw it): the binary says so at start, and
// says nothing when commits are durable.
TEST(OrchestratorBinaryTest, WarnsWhenTheDatabaseAcknowledgesCommitsBeforeTheyAreDurable) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  for (const bool durable : {false, true}) {
    const std::string url = WithSessionSetting(
        db->conninfo(), absl::StrCat("synchronous_commit=", durable ? "on" : "off"));
    absl::StatusOr<std::unique_ptr<Subprocess>> server = Subprocess::StartServer(
        kBinary, {"--listen=127.0.0.1:0", "--database_url=" + url, "--insecure_no_auth"});
    ASSERT_TRUE(server.ok()) << server.status();
    if (durable) {
      EXPECT_THAT((*server)->Stderr(), Not(HasSubstr("synchronous_commit")));
    } else {
      EXPECT_THAT((*server)->Stderr(),
                  HasSubstr("warning: the database runs with synchronous_commit=off"));
    }
  }
}

TEST(OrchestratorBinaryTest, RefusesARequestLargerThanGrpcMaxReceiveBytes) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      Subprocess::StartServer(kBinary, {"--listen=127.0.0.1:0", "--database_url=" + db->conninfo(),
                                        "--grpc_max_receive_bytes=4096", "--insecure_no_auth"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::Orchestrator::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  v1::ListModelsResponse listed;
  for (const size_t bytes : {size_t{100}, size_t{8192}}) {
    v1::ListModelsRequest request;
    request.set_name(std::string(bytes, 'x'));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const grpc::StatusCode code = stub->ListModels(&ctx, request, &listed).error_code();
    if (bytes > 4096) {
      EXPECT_EQ(code, grpc::StatusCode::RESOURCE_EXHAUSTED);
    } else {
      EXPECT_NE(code, grpc::StatusCode::RESOURCE_EXHAUSTED);
    }
  }
}

TEST(OrchestratorBinaryTest, ServesOverTlsWithCertAndKeyFlags) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  const std::string dir = ::testing::TempDir() + "/orch-tls-" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                         " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                         key + " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0)
      << "needs the openssl command (deploy/local/setup installs it)";
  absl::StatusOr<std::unique_ptr<Subprocess>> server = Subprocess::StartServer(
      kBinary, {"--listen=127.0.0.1:0", "--database_url=" + db->conninfo(), "--tls_cert=" + cert,
                "--tls_key=" + key, "--insecure_no_auth"});
  ASSERT_TRUE(server.ok()) << server.status();

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(cert);
  auto tls = v1::Orchestrator::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::SslCredentials(ssl)));
  grpc::ClientContext tls_ctx;
  tls_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ListModelsResponse listed;
  grpc::Status status = tls->ListModels(&tls_ctx, v1::ListModelsRequest(), &listed);
  EXPECT_TRUE(status.ok()) << status.error_message();

  // The CLI, given the CA.
  absl::StatusOr<testing::RunResult> cli = RunBinary(
      "vanguard", {"models", "list", "--orchestrator=" + (*server)->address(), "--tls_ca=" + cert});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 0) << cli->err;

  // A plaintext client cannot talk to it.
  auto plain = v1::Orchestrator::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext plain_ctx;
  plain_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_FALSE(plain->ListModels(&plain_ctx, v1::ListModelsRequest(), &listed).ok());
  std::system(("rm -rf " + dir).c_str());
}

TEST(OrchestratorBinaryTest, UnreachableDatabaseAtStartExitsNonZeroWithAClearMessage) {
  absl::StatusOr<testing::RunResult> r = RunBinary(
      kBinary, {"--listen=127.0.0.1:0", "--database_url=host=127.0.0.1 port=1 user=x dbname=x",
                "--db_connect_timeout=1s"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->exit_code, 0);
  EXPECT_THAT(r->err, HasSubstr("cannot prepare the database"));
  EXPECT_THAT(r->err, HasSubstr("gave up after 1s"));
  EXPECT_THAT(r->out, Not(HasSubstr("LISTENING")));
}

TEST(OrchestratorBinaryTest, NoDatabaseConfiguredIsAUsageError) {
  absl::StatusOr<testing::RunResult> r =
      RunBinary(kBinary, {"--listen=127.0.0.1:0"}, {"VANGUARD_DATABASE_URL="});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->exit_code, 0);
  EXPECT_THAT(r->err, HasSubstr("VANGUARD_DATABASE_URL"));
}

}  // namespace
}  // namespace vanguard
