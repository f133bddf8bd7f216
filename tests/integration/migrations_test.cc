// Integration tests (real PostgreSQL via $VANGUARD_TEST_PG) for the schema migrations:
// applying twice is a no-op, concurrent orchestrators do not race, and a failing
// migration leaves nothing half-applied.
#include "migrations/migrations.h"

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/migrator.h"
#include "pqxx/pqxx"
#include "tests/testing/postgres_fixture.h"

namespace vanguard {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> EmbeddedVersions() {
  std::vector<std::string> versions;
  for (const Migration& m : EmbeddedMigrations()) versions.emplace_back(m.version);
  return versions;
}

std::vector<std::string> RecordedVersions(const std::string& conninfo) {
  pqxx::connection conn(conninfo);
  pqxx::nontransaction txn(conn);
  std::vector<std::string> versions;
  for (const pqxx::row& row : txn.exec("SELECT version FROM schema_migrations ORDER BY version")) {
    versions.emplace_back(row[0].c_str());
  }
  return versions;
}

std::unique_ptr<testing::TestDatabase> EmptyDatabase() {
  absl::StatusOr<std::unique_ptr<testing::TestDatabase>> db = testing::TestDatabase::Create();
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? *std::move(db) : nullptr;
}

TEST(MigratorTest, AppliesEveryMigrationOnceAndSecondRunIsANoOp) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  ASSERT_FALSE(EmbeddedVersions().empty());

  absl::StatusOr<std::vector<std::string>> first = Migrator().Run(db->conninfo());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(*first, ElementsAreArray(EmbeddedVersions()));

  absl::StatusOr<std::vector<std::string>> second = Migrator().Run(db->conninfo());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(*second, IsEmpty());

  // Each version recorded exactly once (version is the primary key, so also count rows).
  EXPECT_THAT(RecordedVersions(db->conninfo()), ElementsAreArray(EmbeddedVersions()));
  pqxx::connection conn(db->conninfo());
  pqxx::nontransaction txn(conn);
  EXPECT_EQ(txn.exec1("SELECT count(*) FROM schema_migrations")[0].as<size_t>(),
            EmbeddedVersions().size());
  // The schema is really there.
  for (const char* table : {"models", "tests", "steps", "results"}) {
    EXPECT_FALSE(txn.exec_params1("SELECT to_regclass($1) IS NULL", table)[0].as<bool>()) << table;
  }
}

TEST(MigratorTest, ReappliesEvenIfSchemaMigrationsWasLostBecauseMigrationsAreIdempotent) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(Migrator().Run(db->conninfo()).ok());
  {
    pqxx::connection conn(db->conninfo());
    pqxx::work txn(conn);
    txn.exec("DELETE FROM schema_migrations");
    txn.commit();
  }
  absl::StatusOr<std::vector<std::string>> again = Migrator().Run(db->conninfo());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(*again, ElementsAreArray(EmbeddedVersions()));
}

TEST(MigratorTest, ConcurrentMigratorsApplyEachMigrationExactlyOnce) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  constexpr int kMigrators = 4;
  std::vector<absl::StatusOr<std::vector<std::string>>> results(kMigrators);
  std::vector<std::thread> threads;
  for (int i = 0; i < kMigrators; ++i) {
    threads.emplace_back([&, i] { results[i] = Migrator().Run(db->conninfo()); });
  }
  for (std::thread& t : threads) t.join();
  size_t total_applied = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    total_applied += r->size();
  }
  EXPECT_EQ(total_applied, EmbeddedVersions().size());
  EXPECT_THAT(RecordedVersions(db->conninfo()), ElementsAreArray(EmbeddedVersions()));
}

TEST(MigratorTest, FailingMigrationIsRolledBackAndNamed) {
  auto db = EmptyDatabase();
  ASSERT_NE(db, nullptr);
  const Migration migrations[] = {
      {"0001_good", "CREATE TABLE good (id int)"},
      {"0002_bad", "CREATE TABLE half (id int); SELECT no_such_column FROM good"},
      {"0003_later", "CREATE TABLE later (id int)"},
  };
  absl::StatusOr<std::vector<std::string>> r = Migrator(migrations).Run(db->conninfo());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("0002_bad"));
  EXPECT_THAT(r.status().message(), HasSubstr("no_such_column"));
  EXPECT_THAT(RecordedVersions(db->conninfo()), ElementsAreArray({"0001_good"}));
  pqxx::connection conn(db->conninfo());
  pqxx::nontransaction txn(conn);
  EXPECT_FALSE(txn.exec1("SELECT to_regclass('good') IS NULL")[0].as<bool>());
  EXPECT_TRUE(txn.exec1("SELECT to_regclass('half') IS NULL")[0].as<bool>());
  EXPECT_TRUE(txn.exec1("SELECT to_regclass('later') IS NULL")[0].as<bool>());
  // The advisory lock was released: another run gets through (and fails at 0002 again).
  absl::StatusOr<std::vector<std::string>> again = Migrator(migrations).Run(db->conninfo());
  EXPECT_THAT(again.status().message(), HasSubstr("0002_bad"));
}

TEST(MigratorTest, UnreachableDatabaseIsUnavailable) {
  absl::StatusOr<std::vector<std::string>> r =
      Migrator().Run("host=127.0.0.1 port=1 user=nobody dbname=nothing", absl::Seconds(2));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

}  // namespace
}  // namespace vanguard
