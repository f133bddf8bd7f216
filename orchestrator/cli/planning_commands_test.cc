// Tests of `vanguard baseline`, `regressions`, `trend` and `plan` against the generated
// MockOrchestratorStub: what each sends (parsing and defaults), what it prints in each format,
// the --fail_on_regression gate's exit code, and usage errors.
#include "orchestrator/cli/planning_commands.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "orchestrator/cli/plan_profile.h"
#include "orchestrator/cli/testing/command_test.h"
#include "orchestrator/cli/usage.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Not;

// Test 15 (resnet50/v2 on nvidia-l4x1) in [250, 300) against baseline 12 (v1) in [300, 350).
v1::CapacityPoint Regressed() {
  v1::CapacityPoint p;
  p.set_test_id(15);
  p.set_model("resnet50");
  p.set_model_version("v2");
  p.mutable_hardware()->set_accelerator("nvidia-l4");
  p.mutable_hardware()->set_accelerator_count(1);
  p.set_max_sustainable_qps(250);
  p.set_confidence_low_qps(250);
  p.set_confidence_high_qps(300);
  p.set_converged(true);
  p.mutable_record_time()->set_seconds(1714564800);  // 2024-05-01 12:00 UTC
  p.set_verdict(v1::CAPACITY_VERDICT_REGRESSED);
  v1::CapacityBaseline* b = p.mutable_baseline();
  b->set_test_id(12);
  b->set_model("resnet50");
  b->set_model_version("v1");
  b->set_max_sustainable_qps(300);
  b->set_confidence_low_qps(300);
  b->set_confidence_high_qps(350);
  p.set_change_fraction(-50.0 / 300.0);
  return p;
}

class PlanningCommandsTest : public CommandTest {
 protected:
  // ListRegressions answers with `points` and keeps the request.
  void ServeRegressions(std::vector<v1::CapacityPoint> points) {
    EXPECT_CALL(stub_, ListRegressions(_, _, _))
        .WillOnce(
            Invoke([this, points](grpc::ClientContext*, const v1::ListRegressionsRequest& request,
                                  v1::ListRegressionsResponse* response) {
              regressions_request_ = request;
              for (const v1::CapacityPoint& p : points) *response->add_regressions() = p;
              return grpc::Status::OK;
            }));
  }

  // PlanCapacity keeps the request and answers with two hardware rows: L4 x2 measured at
  // 100 qps per replica (test 7), cpu not measured.
  void ServePlan() {
    EXPECT_CALL(stub_, PlanCapacity(_, _, _))
        .WillOnce(Invoke([this](grpc::ClientContext*, const v1::PlanCapacityRequest& request,
                                v1::PlanCapacityResponse* response) {
          plan_request_ = request;
          response->set_model(request.model());
          response->set_peak_qps(request.peak_qps());
          response->set_headroom(request.has_headroom() ? request.headroom() : 0.3);
          response->set_survive_loss(request.has_survive_loss() ? request.survive_loss() : 1);
          response->set_required_qps(520);
          v1::ReplicaPlan* cpu = response->add_plans();
          cpu->mutable_hardware()->set_accelerator("cpu");
          cpu->set_model_version("v1-cpu");
          v1::ReplicaPlan* l4 = response->add_plans();
          l4->mutable_hardware()->set_accelerator("nvidia-l4");
          l4->mutable_hardware()->set_accelerator_count(2);
          l4->set_model_version("v2");
          l4->set_test_id(7);
          l4->set_capacity_qps(100);
          l4->set_replicas(7);
          l4->set_accelerators(14);
          return grpc::Status::OK;
        }));
  }

  v1::ListRegressionsRequest regressions_request_;
  v1::PlanCapacityRequest plan_request_;
};

TEST(ParseHeadroomPercentTest, TakesAPercentageWithOrWithoutTheSign) {
  EXPECT_DOUBLE_EQ(*ParseHeadroomPercent("30%"), 0.3);
  EXPECT_DOUBLE_EQ(*ParseHeadroomPercent(" 30 "), 0.3);
  EXPECT_DOUBLE_EQ(*ParseHeadroomPercent("0%"), 0);
  EXPECT_DOUBLE_EQ(*ParseHeadroomPercent("150%"), 1.5);
  for (const char* bad : {"-5%", "abc", "nan", "inf%", "", "%"}) {
    absl::StatusOr<double> parsed = ParseHeadroomPercent(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--headroom")) << bad;
  }
}

TEST_F(PlanningCommandsTest, PlanSendsTheFlagsAndPrintsReplicasPerHardware) {
  ServePlan();
  EXPECT_EQ(
      RunCommand(
          {"plan"},
          {{"model", "resnet50"}, {"peak_qps", "400"}, {"headroom", "25%"}, {"survive_loss", "2"}}),
      kExitOk)
      << err_.str();
  EXPECT_EQ(plan_request_.model(), "resnet50");
  EXPECT_EQ(plan_request_.peak_qps(), 400);
  EXPECT_TRUE(plan_request_.has_headroom());
  EXPECT_DOUBLE_EQ(plan_request_.headroom(), 0.25);
  EXPECT_EQ(plan_request_.survive_loss(), 2);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("resnet50: peak 400.0 qps + 25% headroom = 520.0 qps, surviving "
                             "the loss of 2 replicas"));
  EXPECT_THAT(out, HasSubstr("HARDWARE     VERSION  CAPACITY/REPLICA  TEST  REPLICAS  "
                             "ACCELERATORS  COST/1M REQ"));
  EXPECT_THAT(out, HasSubstr("nvidia-l4x2  v2                  100.0     7         7            "
                             "14            -"));
  EXPECT_THAT(out, HasSubstr("cpu          v1-cpu       not measured     -         -             "
                             "-            -"));
  EXPECT_THAT(out, HasSubstr("replicas = ceil(520.0 / capacity per replica) + 2"));
  EXPECT_THAT(out, HasSubstr("not measured: that version has no converged test"));
  EXPECT_THAT(out, HasSubstr("cost: the registry stores no price per accelerator-hour"));
}

TEST_F(PlanningCommandsTest, PlanLeavesTheDefaultsToTheOrchestratorAndPrintsCsvAndJson) {
  ServePlan();
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "resnet50"}, {"peak_qps", "400"}, {"output", "csv"}}),
            kExitOk);
  EXPECT_FALSE(plan_request_.has_headroom());
  EXPECT_FALSE(plan_request_.has_survive_loss());
  EXPECT_EQ(out_.str(),
            "model,peak_qps,headroom,survive_loss,required_qps,accelerator,accelerator_count,pool,"
            "version,test_id,capacity_qps,at_least,replicas,accelerators,"
            "cost_per_million_requests,output_tokens_per_request,cost_per_million_output_tokens\n"
            "resnet50,400,0.3,1,520,cpu,0,,v1-cpu,,,,,,,,\n"
            "resnet50,400,0.3,1,520,nvidia-l4,2,,v2,7,100,false,7,14,,,\n");
  out_.str("");
  ServePlan();
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"peak_qps", "400"}, {"output", "json"}}),
            kExitOk);
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["plans"][1]["replicas"], "7");  // int64 as protobuf's JSON mapping has it
  EXPECT_FALSE(json["plans"][1].contains("cost_per_million_requests"));
}

TEST(RenderPlanTableTest, PrintsTheOutputTokensPerRequestAndTheirCost) {
  v1::PlanCapacityResponse plan;
  plan.set_model("llama");
  plan.set_peak_qps(400);
  plan.set_headroom(0.3);
  plan.set_survive_loss(1);
  plan.set_required_qps(520);
  v1::ReplicaPlan& l4 = *plan.add_plans();
  l4.mutable_hardware()->set_accelerator("nvidia-l4");
  l4.mutable_hardware()->set_accelerator_count(2);
  l4.set_model_version("v2");
  l4.set_test_id(7);
  l4.set_capacity_qps(100);
  l4.set_replicas(7);
  l4.set_accelerators(14);
  l4.set_cost_per_million_requests(13.888888888888889);
  l4.set_output_tokens_per_request(200);
  l4.set_cost_per_million_output_tokens(0.069444444444444448);
  const std::string out = RenderPlanTable(plan);
  EXPECT_THAT(out, HasSubstr("COST/1M REQ  OUT TOK/REQ  COST/1M OUT TOK"));
  EXPECT_THAT(out, HasSubstr("13.8889        200.0           0.0694"));
  EXPECT_THAT(RenderPlanCsv(plan), HasSubstr(",13.88888888888889,200,0.06944444444444445\n"));
}

TEST(RenderPlanTableTest, SaysWhichFactorsSizedAHardwareAndHow) {
  v1::PlanCapacityResponse plan;
  plan.set_model("resnet50");
  plan.set_peak_qps(400);
  plan.set_headroom(0.3);
  plan.set_survive_loss(1);
  plan.set_required_qps(520);
  v1::ReplicaPlan& cpu = *plan.add_plans();
  cpu.mutable_hardware()->set_accelerator("cpu");
  cpu.set_model_version("v1-cpu");
  cpu.set_test_id(5);
  cpu.set_capacity_qps(77);
  cpu.set_replicas(8);
  v1::ReplicaPlan& l4 = *plan.add_plans();
  l4.mutable_hardware()->set_accelerator("nvidia-l4");
  l4.mutable_hardware()->set_accelerator_count(2);
  l4.set_model_version("v2");
  l4.set_test_id(3);
  l4.set_capacity_qps(100);
  l4.set_colocation_factor(0.8);
  l4.set_colocation_test_id(4);
  l4.set_survivor_factor(0.75);
  l4.set_survivor_test_id(2);
  l4.set_effective_capacity_qps(80);
  l4.set_survivor_capacity_qps(60);
  l4.set_replicas(10);
  l4.set_accelerators(20);
  const std::string out = RenderPlanTable(plan);
  EXPECT_THAT(out, HasSubstr("nvidia-l4x2: co-located 0.80 (test 4) -> 80.0 qps a replica; "
                             "survivor 0.75 (test 2) -> 60.0 qps; replicas = max(ceil(520.0 / "
                             "80.0), ceil(520.0 / 60.0) + 1) = 10\n"));
  EXPECT_THAT(out, Not(HasSubstr("cpu:")));  // no factor measured: the general line holds
  // The profile and the trace's rates size each rate the same way: at 400 req/s, 10.
  EXPECT_EQ(PlanReplicasAt(plan, plan.plans(1), 400), 10);
  EXPECT_EQ(PlanReplicasAt(plan, plan.plans(1), 100), 4);  // max(ceil(1.625), ceil(2.17) + 1)
  EXPECT_EQ(PlanReplicasAt(plan, plan.plans(0), 400), 8);  // no factors: ceil(520 / 77) + 1
}

TEST_F(PlanningCommandsTest, PlanWithAProfileSizesForItsPeakAndPrintsTheDay) {
  const std::string path = ::testing::TempDir() + "/plan_profile_day.csv";
  std::ofstream(path) << "time,qps\n00:00,100\n06:00,400\n18:00,150\n";
  ServePlan();
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "resnet50"}, {"profile", path}}), kExitOk)
      << err_.str();
  EXPECT_EQ(plan_request_.peak_qps(), 400);  // the profile's highest rate
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("replicas over the day"));
  // L4 x2 at 100 req/s, 30% headroom, one spare: 3, 7, 3 replicas for 6, 12, 6 hours.
  EXPECT_THAT(out, ::testing::ContainsRegex("replica-hours +120\\.00\n"));
  EXPECT_THAT(out, ::testing::ContainsRegex("accelerator-hours +240\\.00\n"));
  EXPECT_THAT(out, ::testing::ContainsRegex("06:00 +400\\.0 +7\n"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"profile", "/nonexistent/day.csv"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--profile"));
}

TEST_F(PlanningCommandsTest, PlanWithRatesFromATraceSizesForItsPeakAndPrintsItsHours) {
  const std::string path = ::testing::TempDir() + "/plan_rates.csv";
  std::ofstream(path) << "start_s,duration_s,qps\n0,3600,100\n3600,3600,400\n7200,1800,150\n";
  ServePlan();
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "resnet50"}, {"rates", path}}), kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(plan_request_.peak_qps(), 400);  // the trace's highest rate
  // L4 x2 at 100 req/s, 30% headroom, one spare: 3, 7 and 3 replicas for 1, 1 and 0.5 h.
  EXPECT_THAT(out_.str(), ::testing::ContainsRegex("nvidia-l4x2 +3 +7 +11\\.50 +23\\.00 +-\n"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"rates", path}, {"profile", path}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("not both"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"rates", "/nonexistent/rates.csv"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--rates"));
}

TEST_F(PlanningCommandsTest, PlanRefusesBadFlagsBeforeAnyCall) {
  EXPECT_CALL(stub_, PlanCapacity(_, _, _)).Times(0);
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--peak_qps"));
  EXPECT_EQ(RunCommand({"plan"}, {{"peak_qps", "10"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--model"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"peak_qps", "nan"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--peak_qps: 'nan' is not a number"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"peak_qps", "-3"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--peak_qps: '-3' must be > 0"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"peak_qps", "3"}, {"headroom", "-1%"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--headroom: '-1%' is not a percentage >= 0"));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "m"}, {"peak_qps", "3"}, {"survive_loss", "-1"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--survive_loss"));
}

TEST_F(PlanningCommandsTest, PlanOfAnUnknownModelIsAnRpcError) {
  EXPECT_CALL(stub_, PlanCapacity(_, _, _))
      .WillOnce(::testing::Return(
          grpc::Status(grpc::StatusCode::NOT_FOUND, "model nope is not registered")));
  EXPECT_EQ(RunCommand({"plan"}, {{"model", "nope"}, {"peak_qps", "3"}}), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("model nope is not registered"));
}

TEST_F(PlanningCommandsTest, RegressionsTableAndTheGate) {
  ServeRegressions({Regressed()});
  EXPECT_EQ(RunCommand({"regressions"}, {{"model", "resnet50"}, {"fail_on_regression", "true"}}),
            kExitGateFailed);
  EXPECT_EQ(regressions_request_.model(), "resnet50");
  EXPECT_FALSE(regressions_request_.latest_only());
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("TEST  MODEL     VERSION  HARDWARE       QPS  INTERVAL        "
                             "BASELINE  BASELINE QPS  BASELINE INTERVAL  CHANGE  RECORDED (UTC)"));
  EXPECT_THAT(out, HasSubstr("15  resnet50  v2       nvidia-l4x1  250.0  250.0 to 300.0  "
                             "12 (v1)          300.0  300.0 to 350.0     -16.7%  "
                             "2024-05-01 12:00"));
  EXPECT_THAT(err_.str(), HasSubstr("gate --fail_on_regression: FAILED: 1 test regressed"));
}

TEST_F(PlanningCommandsTest, NoRegressionPassesTheGateAndLatestIsSent) {
  ServeRegressions({});
  EXPECT_EQ(RunCommand({"regressions"}, {{"latest", "true"}, {"fail_on_regression", "true"}}),
            kExitOk);
  EXPECT_TRUE(regressions_request_.latest_only());
  EXPECT_EQ(out_.str(), "No test regressed against its baseline.\n");
  EXPECT_THAT(err_.str(), HasSubstr("gate --fail_on_regression: passed"));
  // Without the gate a regression is only listed.
  out_.str("");
  ServeRegressions({Regressed()});
  EXPECT_EQ(RunCommand({"regressions"}, {{"output", "csv"}}), kExitOk);
  EXPECT_THAT(
      out_.str(),
      HasSubstr("\n15,resnet50,v2,nvidia-l4,1,,250,false,250,300,true,"
                "2024-05-01T12:00:00+00:00,regressed,12,v1,300,300,350,-0.16666666666666666\n"));
}

TEST_F(PlanningCommandsTest, TrendPrintsEachTestWithItsVerdict) {
  EXPECT_CALL(stub_, GetCapacityTrend(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext*, const v1::GetCapacityTrendRequest& request,
                          v1::GetCapacityTrendResponse* response) {
        EXPECT_EQ(request.model(), "resnet50");
        EXPECT_EQ(request.page_size(), 20);
        v1::CapacityPoint* base = response->add_points();
        base->set_test_id(12);
        base->set_model_version("v1");
        base->set_max_sustainable_qps(300);
        base->set_at_least(true);
        base->set_confidence_low_qps(300);
        *response->add_points() = Regressed();
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"trend", "resnet50"}, {{"limit", "20"}}), kExitOk) << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("TEST  RECORDED (UTC)    VERSION  HARDWARE          QPS  INTERVAL  "
                             "      CONVERGED  VERDICT    BASELINE  CHANGE"));
  EXPECT_THAT(out, HasSubstr("12  -                 v1       -            >= 300.0  at least "
                             "300.0  no         -          -              -"));
  EXPECT_THAT(out, HasSubstr("15  2024-05-01 12:00  v2       nvidia-l4x1     250.0  250.0 to "
                             "300.0  yes        regressed  12 (v1)   -16.7%"));
}

TEST_F(PlanningCommandsTest, BaselineAcceptsOneTestAndSaysWhat) {
  EXPECT_CALL(stub_, AcceptBaseline(_, _, _))
      .WillOnce(Invoke([](grpc::ClientContext*, const v1::AcceptBaselineRequest& request,
                          v1::AcceptBaselineResponse* response) {
        EXPECT_EQ(request.test_id(), 41);
        v1::CapacityBaseline* b = response->mutable_baseline();
        b->set_test_id(41);
        b->set_model("resnet50");
        b->set_model_version("v1");
        b->mutable_hardware()->set_accelerator("cpu");
        b->set_max_sustainable_qps(300);
        b->set_confidence_low_qps(300);
        b->set_confidence_high_qps(350);
        b->set_accepted_by("ci");
        b->mutable_accept_time()->set_seconds(1714564800);
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"baseline", "41"}), kExitOk);
  EXPECT_EQ(out_.str(),
            "Test 41 is the baseline of resnet50/v1 on cpu: 300.0 qps, interval 300.0 to 350.0 "
            "qps (accepted by ci, 2024-05-01 12:00 UTC)\n");
  EXPECT_EQ(RunCommand({"baseline", "x"}), kExitUsage);
  EXPECT_EQ(RunCommand({"baseline"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("a test ID (vanguard baseline 42)"));
}

TEST(PlanningCommandsTableTest, UsageListsTheCommandsAndTheGateExitCode) {
  const std::string usage = UsageText();
  for (const char* synopsis :
       {"baseline TEST_ID", "regressions [--model=N] [--latest] [--fail_on_regression]",
        "trend MODEL [--limit=N]",
        "plan --model=N [--peak_qps=QPS] [--profile=FILE] [--rates=FILE] [--headroom=30%]"}) {
    EXPECT_THAT(usage, HasSubstr(synopsis));
  }
  EXPECT_THAT(usage, HasSubstr("regressions --fail_on_regression listed a regression"));
  EXPECT_THAT(usage, Not(HasSubstr("plan --model=N --peak_qps=QPS [--limit")));
}

}  // namespace
}  // namespace vanguard::cli
