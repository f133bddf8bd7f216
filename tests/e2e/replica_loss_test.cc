// End to end: the replica-loss strategy against a simulated fleet of three replicas of 50
// req/s each (one slot of 20 ms), through the real binaries. Each trial holds a rate over the
// three, then the worker POSTs the third replica's /admin/down and the rate goes on over the
// two survivors, then /admin/up brings it back. With min_qps 60 and max_qps 180 and a
// tolerance of 60 the search takes two trials: 60 req/s (30 per survivor: held, recovered at
// once) and 120 req/s (the whole fleet holds 40 per replica, the survivors get 60 each, over
// their 50: never recovered). So the survivor capacity is 60 req/s, below the 120 the whole
// fleet held and the fleet's true 150.
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"
#include "tests/e2e/e2e_stack.h"

namespace vanguard {
namespace {

using ::vanguard::testing::E2eStack;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;

// Not E2eStack::kServiceMs (10 ms, which a member function would see under that name).
constexpr double kReplicaServiceMs = 20;  // one slot: 50 req/s per replica
constexpr double kFleetCapacity = 3 * 1000 / kReplicaServiceMs;

class ReplicaLossTest : public E2eStack {
 protected:
  void SetUp() override {
    StackOptions options;
    options.sim_flags = {"--slots=1", absl::StrCat("--service_ms=", kReplicaServiceMs)};
    // One measured call per step (no settling), to keep the test short.
    options.worker_flags = {"--steady_state_detection=false"};
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
    second_ = StartSimulator(kReplicaServiceMs, {"--slots=1"});
    lost_ = StartSimulator(kReplicaServiceMs, {"--slots=1"});
    ASSERT_TRUE(second_ && lost_);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {second_.get(), lost_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    E2eStack::TearDown();
    second_.reset();
    lost_.reset();
  }

  std::unique_ptr<Subprocess> second_, lost_;
};

TEST_F(ReplicaLossTest, TheSurvivorCapacityIsBelowTheFleetsAndEachLossReportsItsRecovery) {
  const absl::Time began = absl::Now();
  const std::string lost = absl::StrCat("http://", lost_->address());
  RunResult reg = Vanguard({"models", "register", "--name=e2e", "--version=v1",
                            absl::StrCat("--endpoint=http://", sim_->address(), ",http://",
                                         second_->address(), ",", lost),
                            "--protocol=kserve_v2_rest", "--p99_ms=100", "--max_error_rate=0.01",
                            "--warmup=1s", "--output=json"});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;

  // The search's tolerance has no submit flag: a spec file sets it, the flags the rest.
  const std::string spec_path = absl::StrCat(::testing::TempDir(), "/replica_loss_spec.json");
  std::ofstream(spec_path) << R"({"replica_loss": {"tolerance_qps": 60}})";
  RunResult sub =
      Vanguard({"submit", absl::StrCat("--spec_file=", spec_path), "--model=e2e", "--version=v1",
                "--strategy=replica_loss", "--min_qps=60", "--max_qps=180",
                absl::StrCat("--remove_url=", lost, "/admin/down?seconds=60"),
                absl::StrCat("--restore_url=", lost, "/admin/up"), "--after_loss=4s",
                "--max_recovery=1s", "--step_duration=2s", "--step_warmup=1s",
                "--endpoint_policy=round_robin", "--wait", "--output=json"},
               absl::Seconds(120));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  ASSERT_EQ(test["state"], "TEST_STATE_SUCCEEDED") << sub.out;
  const nlohmann::json& result = test["result"];
  ASSERT_TRUE(result.contains("replica_loss")) << sub.out;
  const nlohmann::json& loss = result["replica_loss"];
  SCOPED_TRACE(loss.dump(2));
  std::cout << "replica loss result: " << result["summary"].get<std::string>() << "\n";

  EXPECT_EQ(loss["endpoints"].get<int>(), 3);
  EXPECT_EQ(loss["removed_endpoint"].get<std::string>(), lost);
  const double survivor = loss.value("survivor_capacity_qps", 0.0);
  const double full_fleet = loss.value("full_fleet_held_qps", 0.0);
  EXPECT_GT(survivor, 0);
  EXPECT_LT(survivor, full_fleet);
  EXPECT_LT(survivor, kFleetCapacity);
  EXPECT_EQ(result.value("max_sustainable_qps", 0.0), 0) << "not the model's capacity";
  // Every trial whose loss ran reports its recovery: the held ones recovered in time, a
  // failed one never did or took longer than max_recovery.
  bool some_loss_held = false, some_loss_failed = false;
  for (const nlohmann::json& trial : loss["trials"]) {
    if (!trial.value("lost", false)) continue;
    ASSERT_TRUE(trial.contains("recovery_seconds") || trial.value("recovered", false))
        << trial.dump();
    if (trial.value("held", false)) {
      some_loss_held = true;
      EXPECT_TRUE(trial.value("recovered", false));
      EXPECT_LE(trial.value("recovery_seconds", 0.0), 1.0);
    } else {
      some_loss_failed = true;
      EXPECT_TRUE(!trial.value("recovered", false) || trial.value("recovery_seconds", 0.0) > 1.0);
    }
  }
  EXPECT_TRUE(some_loss_held);
  EXPECT_TRUE(some_loss_failed);

  // The loss steps went to the survivors only.
  for (const nlohmann::json& step : test["steps"]) {
    if (step["endpoints"].size() == 2u) {
      for (const nlohmann::json& e : step["endpoints"]) EXPECT_NE(e["target"], lost);
    }
  }

  // Stored with the result's detail, and left out of the capacity views.
  pqxx::connection conn(db_->conninfo());
  pqxx::work tx(conn);
  const int64_t id = std::stoll(test["id"].is_string() ? test["id"].get<std::string>()
                                                       : std::to_string(test["id"].get<int64_t>()));
  auto row = tx.exec_params1(
      "SELECT (detail #>> '{replica_loss,survivor_capacity_qps}')::float8 FROM results "
      "WHERE test_id = $1",
      id);
  EXPECT_DOUBLE_EQ(row[0].as<double>(), survivor);
  auto in_views = tx.exec_params1("SELECT count(*) FROM capacity_results WHERE test_id = $1", id);
  EXPECT_EQ(in_views[0].as<int64_t>(), 0);
  std::cout << "replica loss e2e took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

}  // namespace
}  // namespace vanguard
