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
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/subprocess.h"

namespace vanguard {
namespace {

using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;
using ::vanguard::testing::TestDatabase;

constexpr int kSlots = 4;
constexpr double kServiceMs = 10.0;
constexpr double kTrueCapacity = kSlots * 1000.0 / kServiceMs;  // 400 req/s

class CapacityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);

    auto sim = Subprocess::StartServer(
        "vanguard-sim-predictor",
        {"--listen=127.0.0.1:0", "--model_name=e2e", absl::StrCat("--slots=", kSlots),
         absl::StrCat("--service_ms=", kServiceMs)});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = std::move(*sim);

    // Auth on, as in production: a bootstrap admin token creates the submitter and worker
    // tokens through `vanguard tokens create`.
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {"--listen=127.0.0.1:0", absl::StrCat("--database_url=", db_->conninfo())},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdminToken)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = std::move(*orch);
    submitter_token_ = CreateToken("e2e-submitter", "submitter");
    const std::string worker_token = CreateToken("e2e-worker", "worker");
    ASSERT_FALSE(submitter_token_.empty());
    ASSERT_FALSE(worker_token.empty());

    auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
    ASSERT_TRUE(replayer.ok()) << replayer.status();
    replayer_ = std::move(*replayer);

    auto worker = Subprocess::Start("vanguard-worker",
                                    {absl::StrCat("--orchestrator=", orch_->address()),
                                     absl::StrCat("--replayer=", replayer_->address()),
                                     "--worker_id=e2e-worker", "--poll_interval=200ms"},
                                    {absl::StrCat("VANGUARD_TOKEN=", worker_token)});
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = std::move(*worker);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {worker_.get(), replayer_.get(), orch_.get(), sim_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    worker_.reset();
    replayer_.reset();
    orch_.reset();
    sim_.reset();
  }

  RunResult Vanguard(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(30),
                     const std::string& token = "") {
    args.push_back(absl::StrCat("--orchestrator=", orch_->address()));
    auto r = RunBinary("vanguard", args,
                       {absl::StrCat("VANGUARD_TOKEN=", token.empty() ? submitter_token_ : token)},
                       timeout);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  // The secret of a new token (printed alone on stdout), or "" on failure.
  std::string CreateToken(const std::string& name, const std::string& role) {
    RunResult r =
        Vanguard({"tokens", "create", absl::StrCat("--name=", name), absl::StrCat("--role=", role)},
                 absl::Seconds(30), kAdminToken);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
    return r.exit_code == 0 ? secret : "";
  }

  static constexpr char kAdminToken[] = "e2e-admin-secret-0123456789";
  std::string submitter_token_;

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Subprocess> sim_, orch_, replayer_, worker_;
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
