// Shared setup for the orchestrator's integration tests: a fresh migrated database (see
// tests/testing/postgres_fixture.h), a connection pool, the repositories and the service
// over it, plus builders for valid requests that tests then break one field at a time.
// Test thread only (tests that spawn threads give each its own pool).
#ifndef VANGUARD_TESTS_INTEGRATION_DATABASE_TEST_BASE_H_
#define VANGUARD_TESTS_INTEGRATION_DATABASE_TEST_BASE_H_

#include <memory>
#include <string>

#include "common/postgres.h"
#include "gtest/gtest.h"
#include "orchestrator/migrator.h"
#include "orchestrator/model_repository.h"
#include "orchestrator/orchestrator_service.h"
#include "orchestrator/test_repository.h"
#include "tests/testing/postgres_fixture.h"

namespace vanguard {

inline absl::Status MigrateForTest(const std::string& conninfo) {
  return Migrator().Run(conninfo).status();
}

inline v1::Model ValidModel(const std::string& name = "resnet50",
                            const std::string& version = "v1") {
  v1::Model m;
  m.set_name(name);
  m.set_version(version);
  m.set_framework("pytorch");
  m.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  m.add_endpoints("http://127.0.0.1:8000");
  m.mutable_hardware()->set_accelerator("cpu");
  m.mutable_slo()->mutable_p99_latency()->set_nanos(250'000'000);
  m.mutable_slo()->set_max_error_rate(0.01);
  m.mutable_default_warmup()->set_seconds(7);
  (*m.mutable_labels())["team"] = "vision";
  return m;
}

inline v1::TestSpec ValidSpec(const std::string& model = "resnet50") {
  v1::TestSpec spec;
  spec.set_model(model);
  spec.mutable_sweep()->add_rates_qps(10);
  spec.mutable_sweep()->add_rates_qps(20);
  spec.mutable_step_duration()->set_seconds(5);
  return spec;
}

inline v1::Step ValidStep(int index, double target_qps) {
  v1::Step step;
  step.set_index(index);
  step.set_target_qps(target_qps);
  step.set_achieved_qps(target_qps * 0.995);
  step.mutable_latency()->set_p50_ms(12.5);
  step.mutable_latency()->set_p99_ms(40.25);
  step.set_error_rate(0.001);
  step.set_scheduled(1000);
  step.set_sent(1000);
  step.set_completed(999);
  step.set_errors(1);
  step.set_health_state(v1::HEALTH_STATE_HEALTHY);
  step.set_passed(true);
  step.set_verdict("p99 40.25 ms <= 250 ms");
  step.set_client_valid(true);
  return step;
}

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::TestDatabase>> db =
        testing::TestDatabase::Create(MigrateForTest);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    absl::StatusOr<std::unique_ptr<PostgresPool>> pool =
        PostgresPool::Create({.conninfo = db_->conninfo(), .size = 4});
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    models_ = std::make_unique<ModelRepository>(pool_.get());
    tests_ = std::make_unique<TestRepository>(pool_.get());
    service_ = std::make_unique<OrchestratorService>(models_.get(), tests_.get());
  }

  // Runs SQL on a connection of its own (for setup and inspection behind the repositories).
  pqxx::result Sql(const std::string& sql) {
    pqxx::connection conn(db_->conninfo());
    pqxx::work txn(conn);
    pqxx::result r = txn.exec(sql);
    txn.commit();
    return r;
  }
  template <typename... Args>
  pqxx::result SqlParams(const std::string& sql, Args&&... args) {
    pqxx::connection conn(db_->conninfo());
    pqxx::work txn(conn);
    pqxx::result r = txn.exec_params(sql, std::forward<Args>(args)...);
    txn.commit();
    return r;
  }

  // Makes the lease of test `id` look expired to the reaper.
  void ExpireLease(int64_t id) {
    SqlParams("UPDATE tests SET lease_expires_at = now() - interval '1 second' WHERE id = $1", id);
  }

  int64_t RegisterModelId(const v1::Model& model) {
    absl::StatusOr<RegisteredModel> m = models_->Register(model);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->id : 0;
  }

  std::unique_ptr<testing::TestDatabase> db_;
  std::unique_ptr<PostgresPool> pool_;
  std::unique_ptr<ModelRepository> models_;
  std::unique_ptr<TestRepository> tests_;
  std::unique_ptr<OrchestratorService> service_;
};

}  // namespace vanguard

#endif  // VANGUARD_TESTS_INTEGRATION_DATABASE_TEST_BASE_H_
