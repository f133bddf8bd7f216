// End to end: every process on loopback (simulated predictor, orchestrator on a fresh
// Postgres database, replayer, worker), driven by the `vanguard` submit tool exactly as a
// user would. The simulator's true capacity is slots * 1000 / service_ms, so the estimate
// can be checked against a known answer.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"
#include "tests/e2e/e2e_stack.h"

namespace vanguard {
namespace {

using ::vanguard::testing::E2eStack;
using ::vanguard::testing::RunResult;

class CapacityTest : public E2eStack {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartStack()); }
};

TEST_F(CapacityTest, SweepEstimatesTheSimulatorsTrueCapacity) {
  RunResult reg =
      Vanguard({"models", "register", "--name=e2e", "--version=v1",
                absl::StrCat("--endpoint=http://", sim_->address()), "--protocol=kserve_v2_rest",
                "--p99_ms=100", "--max_error_rate=0.01", "--warmup=1s", "--output=json"});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;

  // 60% .. 140% of capacity in 5% steps; the sweep stops at the first failed step.
  RunResult sub =
      Vanguard({"submit", "--model=e2e", "--version=v1", "--min_qps=240", "--max_qps=560",
                "--steps=17", "--step_duration=2s", "--step_warmup=1s", "--wait", "--output=json"},
               absl::Seconds(240));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  ASSERT_EQ(test["state"], "TEST_STATE_SUCCEEDED") << sub.out;
  double estimate = test["result"]["max_sustainable_qps"].get<double>();
  EXPECT_NEAR(estimate, kTrueCapacity, 0.15 * kTrueCapacity) << sub.out;

  const nlohmann::json& steps = test["steps"];
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(static_cast<int>(steps.size()), test["result"]["steps_taken"].get<int>());
  bool saw_fail = false;
  for (const auto& step : steps) {
    EXPECT_GT(step["target_qps"].get<double>(), 0);
    EXPECT_TRUE(step.contains("achieved_qps"));
    EXPECT_TRUE(step["latency"].contains("p99_ms"));
    EXPECT_TRUE(step.contains("error_rate"));
    EXPECT_NE(step["health_state"], "HEALTH_STATE_UNSPECIFIED");
    if (!step["passed"].get<bool>()) saw_fail = true;
  }
  // The sweep found the edge: the last step failed, and it ran above the estimate.
  EXPECT_TRUE(saw_fail);
  EXPECT_GT(steps.back()["target_qps"].get<double>(), estimate);

  // `vanguard get --output json` parses and shows the same test.
  std::string id = test["id"].is_string() ? test["id"].get<std::string>()
                                          : std::to_string(test["id"].get<int64_t>());
  RunResult get = Vanguard({"get", id, "--output=json"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  nlohmann::json again = nlohmann::json::parse(get.out);
  EXPECT_EQ(again["steps"].size(), steps.size());
  EXPECT_DOUBLE_EQ(again["result"]["max_sustainable_qps"].get<double>(), estimate);

  // Every step is stored in Postgres, with its histogram, as is the result row.
  pqxx::connection conn(db_->conninfo());
  pqxx::work tx(conn);
  auto row = tx.exec_params1("SELECT count(*), count(histogram) FROM steps WHERE test_id = $1",
                             std::stoll(id));
  EXPECT_EQ(row[0].as<int64_t>(), static_cast<int64_t>(steps.size()));
  EXPECT_EQ(row[1].as<int64_t>(), static_cast<int64_t>(steps.size()));
  auto result =
      tx.exec_params1("SELECT max_sustainable_qps FROM results WHERE test_id = $1", std::stoll(id));
  EXPECT_DOUBLE_EQ(result[0].as<double>(), estimate);
}

TEST_F(CapacityTest, InvalidSubmitIsRejectedNamingTheField) {
  RunResult sub =
      Vanguard({"submit", "--model=missing", "--rates=100", "--step_duration=2s", "--output=json"});
  EXPECT_NE(sub.exit_code, 0);
  EXPECT_NE(sub.err.find("NOT_FOUND"), std::string::npos) << sub.err;
}

}  // namespace
}  // namespace vanguard
