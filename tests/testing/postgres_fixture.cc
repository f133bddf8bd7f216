// Per-test PostgreSQL databases; see postgres_fixture.h. Test thread only.
#include "tests/testing/postgres_fixture.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

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

}  // namespace vanguard::testing
