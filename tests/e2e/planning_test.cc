// End to end: capacity planning through the real orchestrator binary (auth on, a fresh
// Postgres database from $VANGUARD_TEST_PG) and the `vanguard` tool, as a planner and a CI job
// use them. Models are registered and tests submitted with `vanguard`; the test itself plays
// the worker over the real worker protocol (LeaseTest, CompleteTest with a worker token), so
// each result is known exactly and the verdicts and plan numbers can be checked against hand
// computation. (How a capacity is measured is e2e_capacity_test's subject.) Then `vanguard
// baseline`, `regressions`, `trend` and `plan`, and the SQL of docs/planning.md on the same
// database, must agree with the hand-computed figures.
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;
using ::vanguard::testing::TestDatabase;

constexpr char kAdminToken[] = "e2e-plan-admin-secret-0123456789";
constexpr char kModel[] = "e2e-plan";

class PlanningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {"--listen=127.0.0.1:0", absl::StrCat("--database_url=", db_->conninfo())},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdminToken)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = std::move(*orch);
    submitter_ = CreateToken("planner-ci", "submitter");
    reader_ = CreateToken("planner", "reader");
    worker_ = CreateToken("fake-worker", "worker");
    ASSERT_FALSE(submitter_.empty() || reader_.empty() || worker_.empty());
    stub_ = v1::Orchestrator::NewStub(
        grpc::CreateChannel(orch_->address(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (HasFailure() && orch_ != nullptr) std::cerr << "orchestrator stderr:\n" << orch_->Stderr();
    orch_.reset();
  }

  RunResult Vanguard(std::vector<std::string> args, const std::string& token) {
    args.push_back(absl::StrCat("--orchestrator=", orch_->address()));
    auto r =
        RunBinary("vanguard", args, {absl::StrCat("VANGUARD_TOKEN=", token)}, absl::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  nlohmann::json Json(std::vector<std::string> args, const std::string& token) {
    args.push_back("--output=json");
    RunResult r = Vanguard(std::move(args), token);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }

  std::string CreateToken(const std::string& name, const std::string& role) {
    RunResult r =
        Vanguard({"tokens", "create", absl::StrCat("--name=", name), absl::StrCat("--role=", role)},
                 kAdminToken);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
    return r.exit_code == 0 ? secret : "";
  }

  void Register(const std::string& version, const std::string& accelerator, int count) {
    RunResult r = Vanguard(
        {"models", "register", absl::StrCat("--name=", kModel), absl::StrCat("--version=", version),
         "--endpoint=http://127.0.0.1:9", "--p99_ms=100",
         absl::StrCat("--accelerator=", accelerator), absl::StrCat("--accelerator_count=", count)},
        submitter_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Submits a test of `version` with `vanguard submit`, then, as its worker, leases it and
  // completes it with this (converged) result. Returns the test id (0 on failure).
  int64_t RunTest(const std::string& version, double qps, double low, double high) {
    nlohmann::json submitted =
        Json({"submit", absl::StrCat("--model=", kModel), absl::StrCat("--version=", version),
              "--rates=100", "--step_duration=1s"},
             submitter_);
    if (!submitted.contains("id")) return 0;
    const int64_t id = std::stoll(submitted["id"].get<std::string>());

    grpc::ClientContext lease_ctx;
    lease_ctx.AddMetadata("authorization", absl::StrCat("Bearer ", worker_));
    lease_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::LeaseTestRequest lease;
    lease.set_worker_id("fake-worker-1");
    lease.mutable_wait()->set_seconds(10);
    v1::LeaseTestResponse leased;
    grpc::Status status = stub_->LeaseTest(&lease_ctx, lease, &leased);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(leased.test().id(), id);

    grpc::ClientContext complete_ctx;
    complete_ctx.AddMetadata("authorization", absl::StrCat("Bearer ", worker_));
    complete_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::CompleteTestRequest complete;
    complete.set_test_id(id);
    complete.set_attempt(leased.attempt());
    complete.mutable_result()->set_max_sustainable_qps(qps);
    complete.mutable_result()->set_confidence_low_qps(low);
    complete.mutable_result()->set_confidence_high_qps(high);
    complete.mutable_result()->set_converged(true);
    v1::CompleteTestResponse completed;
    status = stub_->CompleteTest(&complete_ctx, complete, &completed);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(completed.test().state(), v1::TEST_STATE_SUCCEEDED);
    return status.ok() ? id : 0;
  }

  pqxx::result Sql(const std::string& sql) {
    pqxx::connection conn(db_->conninfo());
    pqxx::nontransaction txn(conn);
    return txn.exec(sql);
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Subprocess> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
  std::string submitter_, reader_, worker_;
};

int64_t Id(const nlohmann::json& value) { return std::stoll(value.get<std::string>()); }

TEST_F(PlanningTest, BaselineVerdictsAndPlanMatchHandComputation) {
  Register("v1", "nvidia-l4", 2);
  Register("v2", "nvidia-l4", 2);
  Register("v1-cpu", "cpu", 0);
  const int64_t base = RunTest("v1", 300, 300, 350);    // held 300, failed at 350
  const int64_t retest = RunTest("v1", 290, 280, 320);  // 3% lower, intervals overlap
  const int64_t slower = RunTest("v2", 250, 250, 300);  // failed at 300, where v1 held
  const int64_t cpu = RunTest("v1-cpu", 77, 77, 80);
  ASSERT_TRUE(base && retest && slower && cpu);

  // Nothing accepted yet: nothing regressed, and the gate passes.
  RunResult gate = Vanguard({"regressions", "--fail_on_regression"}, reader_);
  EXPECT_EQ(gate.exit_code, 0) << gate.err;
  EXPECT_EQ(gate.out, "No test regressed against its baseline.\n");

  // A reader may not accept a baseline; the submitter may.
  RunResult denied = Vanguard({"baseline", absl::StrCat(base)}, reader_);
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_NE(denied.err.find("PERMISSION_DENIED"), std::string::npos) << denied.err;
  nlohmann::json accepted = Json({"baseline", absl::StrCat(base)}, submitter_);
  EXPECT_EQ(Id(accepted["baseline"]["test_id"]), base);
  EXPECT_EQ(accepted["baseline"]["accepted_by"], "planner-ci");
  EXPECT_EQ(accepted["baseline"]["max_sustainable_qps"], 300);

  // The trend: the baseline itself has no verdict, the re-test is unchanged, v2 regressed by
  // (250 - 300) / 300, and cpu has no baseline on its hardware.
  nlohmann::json trend = Json({"trend", kModel}, reader_);
  std::map<int64_t, nlohmann::json> points;
  for (const nlohmann::json& p : trend["points"]) points[Id(p["test_id"])] = p;
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[base]["verdict"], "CAPACITY_VERDICT_UNSPECIFIED");
  EXPECT_EQ(points[retest]["verdict"], "CAPACITY_VERDICT_UNCHANGED");
  EXPECT_EQ(points[slower]["verdict"], "CAPACITY_VERDICT_REGRESSED");
  EXPECT_EQ(Id(points[slower]["baseline"]["test_id"]), base);
  EXPECT_DOUBLE_EQ(points[slower]["change_fraction"].get<double>(), -50.0 / 300.0);
  EXPECT_EQ(points[cpu]["verdict"], "CAPACITY_VERDICT_UNSPECIFIED");

  // The CI gate fails with the documented code, and --latest keeps v2's test (nothing newer).
  gate = Vanguard({"regressions", absl::StrCat("--model=", kModel), "--latest",
                   "--fail_on_regression", "--output=json"},
                  reader_);
  EXPECT_EQ(gate.exit_code, 4) << gate.err;
  nlohmann::json regressions = nlohmann::json::parse(gate.out);
  ASSERT_EQ(regressions["regressions"].size(), 1u);
  EXPECT_EQ(Id(regressions["regressions"][0]["test_id"]), slower);
  EXPECT_NE(gate.err.find("gate --fail_on_regression: FAILED: 1 test regressed"), std::string::npos)
      << gate.err;

  // Plan for 400 qps with the defaults (30%, survive 1): 400 * 1.3 = 520.
  //   nvidia-l4x2, newest version v2 at 250/replica: ceil(520 / 250) = 3, + 1 = 4; x2 = 8.
  //   cpu, v1-cpu at 77/replica: ceil(520 / 77) = ceil(6.75) = 7, + 1 = 8; count unknown.
  nlohmann::json plan = Json({"plan", absl::StrCat("--model=", kModel), "--peak_qps=400"}, reader_);
  EXPECT_EQ(plan["headroom"], 0.3);
  EXPECT_EQ(plan["survive_loss"], 1);
  EXPECT_EQ(plan["required_qps"], 520);
  ASSERT_EQ(plan["plans"].size(), 2u);
  const nlohmann::json& cpu_plan = plan["plans"][0];
  const nlohmann::json& l4_plan = plan["plans"][1];
  EXPECT_EQ(l4_plan["model_version"], "v2");
  EXPECT_EQ(Id(l4_plan["test_id"]), slower);
  EXPECT_EQ(l4_plan["capacity_qps"], 250);
  EXPECT_EQ(l4_plan["replicas"], "4");
  EXPECT_EQ(l4_plan["accelerators"], "8");
  EXPECT_FALSE(l4_plan.contains("cost_per_million_requests"));
  EXPECT_EQ(cpu_plan["replicas"], "8");
  // Exactly on a boundary: 500 qps, no headroom, no loss on L4: 500 / 250 = 2 replicas; and
  // 70 * 1.1 / 77 is exactly 1 on cpu (1.0000000000000002 in doubles would make it 2).
  plan = Json({"plan", absl::StrCat("--model=", kModel), "--peak_qps=500", "--headroom=0%",
               "--survive_loss=0"},
              reader_);
  EXPECT_EQ(plan["plans"][1]["replicas"], "2");
  plan = Json({"plan", absl::StrCat("--model=", kModel), "--peak_qps=70", "--headroom=10%",
               "--survive_loss=0"},
              reader_);
  EXPECT_EQ(plan["plans"][0]["replicas"], "1");

  // docs/planning.md's SQL gives the same answers.
  pqxx::result verdicts =
      Sql("SELECT test_id, verdict, baseline_test_id, change_fraction FROM capacity_verdicts"
          " WHERE model = 'e2e-plan' ORDER BY test_id");
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0]["test_id"].as<int64_t>(), retest);
  EXPECT_STREQ(verdicts[0]["verdict"].c_str(), "unchanged");
  EXPECT_EQ(verdicts[1]["test_id"].as<int64_t>(), slower);
  EXPECT_STREQ(verdicts[1]["verdict"].c_str(), "regressed");
  EXPECT_EQ(verdicts[1]["baseline_test_id"].as<int64_t>(), base);
  pqxx::result sql_plan =
      Sql("SELECT accelerator, replicas, accelerators FROM vanguard_plan('e2e-plan', 400, 0.3, 1)");
  ASSERT_EQ(sql_plan.size(), 2u);
  EXPECT_EQ(sql_plan[1]["replicas"].as<int64_t>(), 4);
  EXPECT_EQ(sql_plan[1]["accelerators"].as<int64_t>(), 8);
  EXPECT_EQ(sql_plan[0]["replicas"].as<int64_t>(), 8);

  // Unknown model and bad input, as the orchestrator names them.
  RunResult unknown = Vanguard({"plan", "--model=nope", "--peak_qps=10"}, reader_);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
  RunResult nan = Vanguard({"plan", absl::StrCat("--model=", kModel), "--peak_qps=nan"}, reader_);
  EXPECT_EQ(nan.exit_code, 2) << nan.err;
}

}  // namespace
}  // namespace vanguard
