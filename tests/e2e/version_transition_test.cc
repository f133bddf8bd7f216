// End to end: the version-transition strategy against a simulated fleet of two replicas of 100
// req/s each (one slot of 10 ms), through the real binaries. Each trial holds a rate over both,
// then the worker POSTs each replica's /admin/restart in turn: the replica is down for 0.3 s
// (its requests fail), then serves 4x slower, warm again after 2 s. At 40 req/s (20 per
// replica, under the cold 25) each restart costs the window it was down in and nothing more:
// it recovers within max_recovery. At 100 req/s (50 per replica) the cold replica falls behind
// and its backlog keeps the p99 over the SLO: the rolling update halts at the first restart.
// So with min_qps 40, max_qps 160 and a tolerance of 60 the search takes two trials and the
// safe rate is 40 req/s, below the 100 the warm fleet held.
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

constexpr double kReplicaServiceMs = 10;  // one slot: 100 req/s per replica when warm
constexpr double kMaxRecoveryS = 1.5;

class VersionTransitionTest : public E2eStack {
 protected:
  void SetUp() override {
    StackOptions options;
    options.sim_flags = {"--slots=1", absl::StrCat("--service_ms=", kReplicaServiceMs)};
    // One measured call per step (no settling), to keep the test short.
    options.worker_flags = {"--steady_state_detection=false"};
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
    second_ = StartSimulator(kReplicaServiceMs, {"--slots=1"});
    ASSERT_TRUE(second_);
  }

  void TearDown() override {
    if (HasFailure() && second_ != nullptr) {
      std::cerr << "---- pid " << second_->pid() << " stderr:\n" << second_->Stderr();
    }
    E2eStack::TearDown();
    second_.reset();
  }

  std::unique_ptr<Subprocess> second_;
};

TEST_F(VersionTransitionTest, TheSafeRateIsBelowTheWarmFleetsAndEachRestartReportsItsRecovery) {
  const absl::Time began = absl::Now();
  const std::string first = absl::StrCat("http://", sim_->address());
  const std::string second = absl::StrCat("http://", second_->address());
  RunResult reg =
      Vanguard({"models", "register", "--name=e2e", "--version=v1",
                absl::StrCat("--endpoint=", first, ",", second), "--protocol=kserve_v2_rest",
                "--p99_ms=200", "--max_error_rate=0.01", "--warmup=1s", "--output=json"});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;

  const std::string restart = "/admin/restart?down_s=0.3&warmup_s=2&factor=4";
  const std::string spec_path = absl::StrCat(::testing::TempDir(), "/version_transition_spec.json");
  std::ofstream(spec_path) << R"({"version_transition": {"tolerance_qps": 60}})";
  RunResult sub = Vanguard(
      {"submit", absl::StrCat("--spec_file=", spec_path), "--model=e2e", "--version=v1",
       "--strategy=version_transition", "--min_qps=40", "--max_qps=160",
       absl::StrCat("--restart_url=", first, restart, ",", second, restart), "--per_replica=3s",
       absl::StrCat("--max_recovery=", kMaxRecoveryS, "s"), "--step_duration=2s",
       "--step_warmup=1s", "--endpoint_policy=round_robin", "--wait", "--output=json"},
      absl::Seconds(120));
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  nlohmann::json test = nlohmann::json::parse(sub.out);
  ASSERT_EQ(test["state"], "TEST_STATE_SUCCEEDED") << sub.out;
  const nlohmann::json& result = test["result"];
  ASSERT_TRUE(result.contains("version_transition")) << sub.out;
  const nlohmann::json& transition = result["version_transition"];
  SCOPED_TRACE(transition.dump(2));
  std::cout << "version transition result: " << result["summary"].get<std::string>() << "\n";

  EXPECT_EQ(transition["endpoints"].get<int>(), 2);
  const double safe = transition.value("safe_rate_qps", 0.0);
  const double warm = transition.value("full_fleet_held_qps", 0.0);
  EXPECT_GT(safe, 0);
  EXPECT_LT(safe, warm);
  EXPECT_EQ(result.value("max_sustainable_qps", 0.0), 0) << "not the model's capacity";

  // A held trial restarted both replicas in order, each back within max_recovery after the
  // window it was down in; a failed one that got to its restarts halted at one that was not.
  bool some_held = false, some_failed = false;
  for (const nlohmann::json& trial : transition["trials"]) {
    const nlohmann::json restarts = trial.value("restarts", nlohmann::json::array());
    if (trial.value("held", false)) {
      some_held = true;
      ASSERT_EQ(restarts.size(), 2u) << trial.dump();
      EXPECT_EQ(restarts[0]["endpoint"], first);
      EXPECT_EQ(restarts[1]["endpoint"], second);
      for (const nlohmann::json& r : restarts) {
        EXPECT_TRUE(r.value("held", false));
        EXPECT_GT(r.value("recovery_seconds", 0.0), 0) << "the down part breaks a window";
        EXPECT_LE(r.value("recovery_seconds", 0.0), kMaxRecoveryS);
      }
      EXPECT_GT(trial.value("worst_window_p99_ms", 0.0), 0);
    } else if (!restarts.empty()) {
      some_failed = true;
      EXPECT_FALSE(restarts.back().value("held", false));
      EXPECT_TRUE(!restarts.back().value("recovered", false) ||
                  restarts.back().value("recovery_seconds", 0.0) > kMaxRecoveryS);
      EXPECT_GT(trial.value("worst_window_p99_ms", 0.0), 200);
    }
  }
  EXPECT_TRUE(some_held);
  EXPECT_TRUE(some_failed);

  // Every step, restarts included, went to both replicas.
  for (const nlohmann::json& step : test["steps"]) EXPECT_EQ(step["endpoints"].size(), 2u);

  // Stored with the result's detail, and left out of the capacity views.
  pqxx::connection conn(db_->conninfo());
  pqxx::work tx(conn);
  const int64_t id = std::stoll(test["id"].is_string() ? test["id"].get<std::string>()
                                                       : std::to_string(test["id"].get<int64_t>()));
  auto row = tx.exec_params1(
      "SELECT (detail #>> '{version_transition,safe_rate_qps}')::float8 FROM results "
      "WHERE test_id = $1",
      id);
  EXPECT_DOUBLE_EQ(row[0].as<double>(), safe);
  auto in_views = tx.exec_params1("SELECT count(*) FROM capacity_results WHERE test_id = $1", id);
  EXPECT_EQ(in_views[0].as<int64_t>(), 0);
  std::cout << "version transition e2e took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

}  // namespace
}  // namespace vanguard
