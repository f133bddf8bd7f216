// A fresh, uniquely named PostgreSQL database per test, on the throwaway server named by
// $VANGUARD_TEST_PG (a libpq conninfo or postgresql:// URL to a maintenance database such
// as "host=127.0.0.1 port=54329 user=postgres dbname=postgres"; deploy/local/test sets it).
//
//   absl::StatusOr<std::unique_ptr<TestDatabase>> db = TestDatabase::Create(
//       [](const std::string& conninfo) { return Migrator().Run(conninfo).status(); });
//   ASSERT_TRUE(db.ok()) << db.status();       // says how to run the test when unset
//   pqxx::connection conn((*db)->conninfo());
//
// The database (vg_test_<pid>_<n>) is dropped WITH (FORCE) when the TestDatabase is
// destroyed, so a failing test leaves nothing behind. When $VANGUARD_TEST_PG is unset,
// Create fails with FAILED_PRECONDITION explaining how to run the test: integration tests
// must fail, not silently skip. Used from the test's thread.
#ifndef VANGUARD_TESTS_TESTING_POSTGRES_FIXTURE_H_
#define VANGUARD_TESTS_TESTING_POSTGRES_FIXTURE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vanguard::testing {

// $VANGUARD_TEST_PG, or FAILED_PRECONDITION with instructions when it is unset.
absl::StatusOr<std::string> MaintenanceConninfo();

// `conninfo` with its database replaced by `dbname` (both conninfo forms are understood).
std::string ConninfoForDatabase(const std::string& conninfo, const std::string& dbname);

class TestDatabase {
 public:
  // Applies the schema to the new database, given its conninfo (e.g. runs the Migrator).
  using Migrate = std::function<absl::Status(const std::string& conninfo)>;

  // Creates the database and, if `migrate` is set, runs it.
  static absl::StatusOr<std::unique_ptr<TestDatabase>> Create(Migrate migrate = nullptr);

  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& name() const { return name_; }
  // Connects to this test's database.
  const std::string& conninfo() const { return conninfo_; }

 private:
  TestDatabase(std::string maintenance, std::string name, std::string conninfo)
      : maintenance_(std::move(maintenance)),
        name_(std::move(name)),
        conninfo_(std::move(conninfo)) {}

  std::string maintenance_;
  std::string name_;
  std::string conninfo_;
};

// A private PostgreSQL server (initdb into a temporary directory, loopback, a free port),
// for tests that stop and restart the database. Needs the server binaries (initdb, pg_ctl:
// $VANGUARD_PG_BIN, else the newest /usr/lib/postgresql/*/bin); run as root, it runs them
// as user postgres. Destroying it stops the server and removes the directory.
//
//   ASSIGN_OR_RETURN(auto server, PostgresServer::Start());
//   RETURN_IF_ERROR(server->Stop());     // clients now see UNAVAILABLE
//   RETURN_IF_ERROR(server->Restart());  // same data, same port
class PostgresServer {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // conninfo of database "postgres" as superuser "postgres".
  const std::string& conninfo() const { return conninfo_; }
  absl::Status Stop();     // fast shutdown: open connections are cut
  absl::Status Restart();  // starts it again after Stop()

 private:
  PostgresServer(std::string bin, std::string dir, int port);
  absl::Status PgCtl(const std::string& action);

  std::string bin_;
  std::string dir_;
  int port_;
  std::string conninfo_;
};

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_TESTING_POSTGRES_FIXTURE_H_
