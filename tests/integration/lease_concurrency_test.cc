// Integration test (real PostgreSQL via $VANGUARD_TEST_PG): many workers leasing at once
// through separate connections get every queued test exactly once, and none is lost.
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "database_test_base.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

class LeaseConcurrencyTest : public DatabaseTest {};

TEST_F(LeaseConcurrencyTest, EightLeasersLeaseEachOf500TestsExactlyOnce) {
  constexpr int kTests = 500;
  constexpr int kLeasers = 8;
  const int64_t model_id = RegisterModelId(ValidModel());
  ASSERT_GT(model_id, 0);
  for (int i = 0; i < kTests; ++i) {
    v1::TestSpec spec = ValidSpec();
    spec.set_priority(i % 3);  // mixed priorities: the order must not lose anything either
    spec.set_max_attempts(3);
    ASSERT_TRUE(tests_->Submit(spec, model_id, "").ok());
  }

  std::mutex mu;
  std::map<int64_t, int> lease_count;        // test id -> times leased
  std::map<int64_t, std::string> leased_by;  // test id -> worker
  std::vector<int> per_worker(kLeasers, 0);
  std::vector<absl::Status> errors(kLeasers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kLeasers; ++w) {
    workers.emplace_back([&, w] {
      // Each leaser has its own connection, as separate worker processes would.
      absl::StatusOr<std::unique_ptr<PostgresPool>> pool =
          PostgresPool::Create({.conninfo = db_->conninfo(), .size = 1});
      if (!pool.ok()) {
        errors[w] = pool.status();
        return;
      }
      TestRepository repo(pool->get());
      const std::string worker = "worker-" + std::to_string(w);
      while (true) {
        absl::StatusOr<std::optional<v1::Test>> leased = repo.Lease(worker, absl::Seconds(60));
        if (!leased.ok()) {
          errors[w] = leased.status();
          return;
        }
        if (!leased->has_value()) return;  // queue drained
        std::lock_guard<std::mutex> lock(mu);
        ++lease_count[(*leased)->id()];
        leased_by[(*leased)->id()] = worker;
        ++per_worker[w];
        if ((*leased)->attempt() != 1 || (*leased)->lease_owner() != worker) {
          errors[w] = absl::InternalError("lease returned wrong attempt/owner");
          return;
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  for (int w = 0; w < kLeasers; ++w)
    EXPECT_TRUE(errors[w].ok()) << "worker " << w << ": " << errors[w];

  EXPECT_EQ(lease_count.size(), static_cast<size_t>(kTests)) << "some tests were never leased";
  for (const auto& [id, count] : lease_count) EXPECT_EQ(count, 1) << "test " << id;
  int total = 0;
  for (int n : per_worker) total += n;
  EXPECT_EQ(total, kTests);

  // The database agrees: everything running at attempt 1, owned by the worker that got it.
  pqxx::result rows = Sql("SELECT id, state, attempt, lease_owner FROM tests");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kTests));
  for (const pqxx::row& row : rows) {
    const int64_t id = row["id"].as<int64_t>();
    EXPECT_STREQ(row["state"].c_str(), "running") << id;
    EXPECT_EQ(row["attempt"].as<int>(), 1) << id;
    EXPECT_EQ(row["lease_owner"].c_str(), leased_by[id]) << id;
  }
}

}  // namespace
}  // namespace vanguard
