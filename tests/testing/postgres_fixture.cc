// Per-test PostgreSQL databases; see postgres_fixture.h. Test thread only.
#include "tests/testing/postgres_fixture.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pqxx/pqxx"

namespace vanguard::testing {
namespace {

constexpr char kHowToRun[] =
    "VANGUARD_TEST_PG is not set. Integration tests need a throwaway PostgreSQL server: run "
    "them with deploy/local/test (which starts one and sets it), or start a server yourself "
    "and export VANGUARD_TEST_PG='host=127.0.0.1 port=54329 user=postgres dbname=postgres' "
    "(a libpq conninfo or postgresql:// URL of a maintenance database; the user must be "
    "allowed to CREATE DATABASE)";

bool IsUrl(const std::string& conninfo) {
  return absl::StartsWith(conninfo, "postgresql://") || absl::StartsWith(conninfo, "postgres://");
}

}  // namespace

absl::StatusOr<std::string> MaintenanceConninfo() {
  const char* env = std::getenv("VANGUARD_TEST_PG");
  if (env == nullptr || *env == '\0') return absl::FailedPreconditionError(kHowToRun);
  return std::string(env);
}

std::string ConninfoForDatabase(const std::string& conninfo, const std::string& dbname) {
  if (!IsUrl(conninfo)) {
    // In a key=value conninfo the last occurrence of a keyword wins.
    return absl::StrCat(conninfo, " dbname=", dbname);
  }
  // postgresql://[userinfo@]hosts[/dbname][?params]
  const size_t authority = conninfo.find("://") + 3;
  const size_t query = conninfo.find('?', authority);
  const size_t path = conninfo.find('/', authority);
  const size_t hosts_end =
      (path != std::string::npos && (query == std::string::npos || path < query))
          ? path
          : (query == std::string::npos ? conninfo.size() : query);
  std::string out = conninfo.substr(0, hosts_end);
  absl::StrAppend(&out, "/", dbname);
  if (query != std::string::npos) absl::StrAppend(&out, conninfo.substr(query));
  return out;
}

absl::StatusOr<std::unique_ptr<TestDatabase>> TestDatabase::Create(Migrate migrate) {
  absl::StatusOr<std::string> maintenance = MaintenanceConninfo();
  if (!maintenance.ok()) return maintenance.status();
  static std::atomic<int> counter{0};
  const std::string name = absl::StrCat("vg_test_", getpid(), "_", counter++);
  try {
    pqxx::connection conn(*maintenance);
    pqxx::nontransaction txn(conn);
    txn.exec("DROP DATABASE IF EXISTS " + txn.quote_name(name) + " WITH (FORCE)");
    txn.exec("CREATE DATABASE " + txn.quote_name(name));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot create test database ", name, " via ",
                                               "VANGUARD_TEST_PG: ", e.what()));
  }
  std::unique_ptr<TestDatabase> db(
      new TestDatabase(*maintenance, name, ConninfoForDatabase(*maintenance, name)));
  if (migrate) {
    absl::Status migrated = migrate(db->conninfo());
    if (!migrated.ok()) {
      return absl::Status(migrated.code(),
                          absl::StrCat("migrating test database ", name, ": ", migrated.message()));
    }
  }
  return db;
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection conn(maintenance_);
    pqxx::nontransaction txn(conn);
    txn.exec("SET client_min_messages = warning");
    txn.exec("DROP DATABASE IF EXISTS " + txn.quote_name(name_) + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::cerr << "warning: cannot drop test database " << name_ << ": " << e.what() << std::endl;
  }
}

namespace {

// Runs a shell command line; OK when it exits 0.
absl::Status Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  if (rc != 0) return absl::InternalError(absl::StrCat("`", command, "` failed (", rc, ")"));
  return absl::OkStatus();
}

std::string PostgresBinDir() {
  if (const char* env = std::getenv("VANGUARD_PG_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    if (std::filesystem::exists(entry.path() / "bin" / "initdb")) {
      dirs.push_back((entry.path() / "bin").string());
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // "9" < "15"
  });
  return dirs.empty() ? "" : dirs.back();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// Prefix that runs a command as user postgres when we are root (initdb refuses root).
std::string AsPostgres() { return geteuid() == 0 ? "runuser -u postgres -- " : ""; }

}  // namespace

PostgresServer::PostgresServer(std::string bin, std::string dir, int port)
    : bin_(std::move(bin)),
      dir_(std::move(dir)),
      port_(port),
      conninfo_(absl::StrCat("host=127.0.0.1 port=", port, " user=postgres dbname=postgres")) {}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  const std::string bin = PostgresBinDir();
  if (bin.empty()) {
    return absl::FailedPreconditionError(
        "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin; "
        "install postgresql or set VANGUARD_PG_BIN");
  }
  std::string dir = "/tmp/vanguard-test-pg.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const int port = FreePort();
  if (port == 0) return absl::InternalError("no free port");
  std::unique_ptr<PostgresServer> server(new PostgresServer(bin, dir, port));
  if (geteuid() == 0) {
    if (absl::Status s = Shell(absl::StrCat("chown postgres:postgres ", dir)); !s.ok()) return s;
  }
  if (absl::Status s =
          Shell(absl::StrCat(AsPostgres(), bin, "/initdb -D ", dir,
                             "/data -A trust -U postgres --no-sync >", dir, "/initdb.log 2>&1"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = server->PgCtl("start"); !s.ok()) return s;
  return server;
}

absl::Status PostgresServer::PgCtl(const std::string& action) {
  std::string options;
  if (action == "start") {
    options = absl::StrCat(
        " -w -t 60 -l ", dir_, "/server.log -o \"-c listen_addresses=127.0.0.1 -p ", port_, " -k ",
        dir_, " -c fsync=off -c synchronous_commit=off -c full_page_writes=off\"");
  } else {
    options = " -w -m fast";
  }
  return Shell(absl::StrCat(AsPostgres(), bin_, "/pg_ctl -D ", dir_, "/data", options, " ", action,
                            " >/dev/null 2>&1"));
}

absl::Status PostgresServer::Stop() { return PgCtl("stop"); }

absl::Status PostgresServer::Restart() { return PgCtl("start"); }

PostgresServer::~PostgresServer() {
  Shell(absl::StrCat(AsPostgres(), bin_, "/pg_ctl -D ", dir_,
                     "/data -m immediate -w stop >/dev/null 2>&1"))
      .IgnoreError();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace vanguard::testing
