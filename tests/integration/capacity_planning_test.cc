// Capacity planning against a real PostgreSQL ($VANGUARD_TEST_PG): the classification rule
// (vanguard_capacity_verdict) on hand-made interval pairs, the baseline in force for each
// test (capacity_verdicts), and replica sizing (vanguard_plan) checked against hand
// computation, all through OrchestratorService's planning RPCs where an RPC exists.
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/capacity_repository.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

constexpr double kNone = 0;  // a result's interval end that is not stated

class CapacityPlanningTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    capacity_ = std::make_unique<CapacityRepository>(pool_.get());
    planner_ =
        std::make_unique<OrchestratorService>(models_.get(), tests_.get(), nullptr, nullptr,
                                              capacity_.get(), OrchestratorService::Options());
  }

  // vanguard_capacity_verdict on a baseline and a new result (0 for an end not stated).
  std::string Verdict(double base_qps, double base_low, double base_high, bool base_at_least,
                      double new_qps, double new_low, double new_high, bool new_at_least) {
    pqxx::result r = SqlParams(
        "SELECT vanguard_capacity_verdict($1, NULLIF($2::float8, 0), NULLIF($3::float8, 0), $4,"
        "                                 $5, NULLIF($6::float8, 0), NULLIF($7::float8, 0), $8)",
        base_qps, base_low, base_high, base_at_least, new_qps, new_low, new_high, new_at_least);
    return r[0][0].c_str();
  }

  int64_t Register(const std::string& version, const std::string& accelerator, int count) {
    v1::Model model = ValidModel("resnet50", version);
    model.mutable_hardware()->set_accelerator(accelerator);
    model.mutable_hardware()->set_accelerator_count(count);
    return RegisterModelId(model);
  }

  // Runs a test of `version` to the end as a worker would, with these steps and this
  // result; its id.
  int64_t Completed(const std::string& version, double qps, double low, double high,
                    bool converged = true, bool at_least = false,
                    const std::vector<v1::Step>& steps = {},
                    v1::CapacityCondition condition = v1::CAPACITY_CONDITION_UNSPECIFIED) {
    v1::TestSpec spec = ValidSpec();
    spec.set_model_version(version);
    spec.set_capacity_condition(condition);
    absl::StatusOr<RegisteredModel> model = models_->Get("resnet50", version);
    EXPECT_TRUE(model.ok()) << model.status();
    absl::StatusOr<v1::Test> submitted = tests_->Submit(spec, model->id, "");
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("w1", absl::Seconds(30));
    EXPECT_TRUE(leased.ok() && leased->has_value());
    for (const v1::Step& step : steps) {
      absl::Status reported = tests_->ReportStep(submitted->id(), (**leased).attempt(), step);
      EXPECT_TRUE(reported.ok()) << reported;
    }
    v1::TestResult result;
    result.set_max_sustainable_qps(qps);
    result.set_confidence_low_qps(low);
    result.set_confidence_high_qps(high);
    result.set_converged(converged);
    result.set_at_least(at_least);
    absl::StatusOr<v1::Test> done =
        tests_->Complete(submitted->id(), (**leased).attempt(), result, "");
    EXPECT_TRUE(done.ok()) << done.status();
    return submitted->id();
  }

  v1::CapacityBaseline Accept(int64_t test_id, const std::string& who = "ci") {
    v1::AcceptBaselineRequest request;
    request.set_test_id(test_id);
    absl::StatusOr<v1::AcceptBaselineResponse> r =
        planner_->AcceptBaseline(request, TokenIdentity{.id = 1, .name = who});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->baseline() : v1::CapacityBaseline();
  }

  std::map<int64_t, v1::CapacityPoint> Trend() {
    v1::GetCapacityTrendRequest request;
    request.set_model("resnet50");
    absl::StatusOr<v1::GetCapacityTrendResponse> r = planner_->GetCapacityTrend(request);
    EXPECT_TRUE(r.ok()) << r.status();
    std::map<int64_t, v1::CapacityPoint> by_id;
    if (r.ok()) {
      for (const v1::CapacityPoint& p : r->points()) by_id[p.test_id()] = p;
    }
    return by_id;
  }

  absl::StatusOr<v1::PlanCapacityResponse> Plan(double peak, std::optional<double> headroom,
                                                std::optional<int> loss) {
    v1::PlanCapacityRequest request;
    request.set_model("resnet50");
    request.set_peak_qps(peak);
    if (headroom.has_value()) request.set_headroom(*headroom);
    if (loss.has_value()) request.set_survive_loss(*loss);
    return planner_->PlanCapacity(request);
  }

  std::unique_ptr<CapacityRepository> capacity_;
  std::unique_ptr<OrchestratorService> planner_;
};

TEST_F(CapacityPlanningTest, ARegressionIsADropBeyondBothIntervalsNotAnyDrop) {
  // Baseline held 300 and failed at 350: [300, 350).
  // New failed at 300, where the baseline held: wholly below.
  EXPECT_EQ(Verdict(300, 300, 350, false, 250, 250, 300, false), "regressed");
  // New failed at 310: it shares [300, 310) with the baseline, a 10% lower estimate is noise.
  EXPECT_EQ(Verdict(300, 300, 350, false, 270, 260, 310, false), "unchanged");
  // Held 350, where the baseline failed: wholly above.
  EXPECT_EQ(Verdict(300, 300, 350, false, 360, 350, 400, false), "improved");
  // An "at least 200" result may be anything above 200: never a regression of [300, 350).
  EXPECT_EQ(Verdict(300, 300, 350, false, 200, 200, kNone, true), "unchanged");
  // An "at least 300" baseline has no upper end: a higher result is no improvement.
  EXPECT_EQ(Verdict(300, 300, kNone, true, 900, 800, 1000, false), "unchanged");
  // ... but a result wholly below it is a regression.
  EXPECT_EQ(Verdict(300, 300, kNone, true, 100, 90, 120, false), "regressed");
  // A result that states no interval cannot be told from the noise.
  EXPECT_EQ(Verdict(300, kNone, kNone, false, 100, 90, 120, false), "undecided");
  EXPECT_EQ(Verdict(300, 300, 350, false, 100, kNone, kNone, false), "undecided");
  // A point interval [300, 300] lies inside [300, 350), and [350, 350] outside it.
  EXPECT_EQ(Verdict(300, 300, 350, false, 300, 300, 300, false), "unchanged");
  EXPECT_EQ(Verdict(300, 300, 350, false, 350, 350, 350, false), "improved");
}

// The SQL of the provisioned Grafana alert rule's query A (its `rawSql: |-` block), as the
// file deploy/grafana/provisioning/alerting/vanguard-regressions.yaml holds it.
std::string GrafanaAlertSql() {
  std::ifstream in(VANGUARD_GRAFANA_ALERT_RULES);
  EXPECT_TRUE(in.good()) << VANGUARD_GRAFANA_ALERT_RULES;
  std::string line, sql;
  size_t indent = std::string::npos;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (indent == std::string::npos) {
      if (absl::StrContains(line, "rawSql: |-")) indent = first;
      continue;
    }
    if (first != std::string::npos && first <= indent) break;  // the block ended
    absl::StrAppend(&sql, line, "\n");
  }
  EXPECT_FALSE(sql.empty()) << "no rawSql block in " << VANGUARD_GRAFANA_ALERT_RULES;
  return sql;
}

TEST_F(CapacityPlanningTest, TheGrafanaAlertFiresOnTheNewestRegressionAndResolvesAfterIt) {
  Register("v1", "nvidia-l4", 2);
  Register("v2", "nvidia-l4", 2);
  const std::string alert = GrafanaAlertSql();
  Accept(Completed("v1", 300, 300, 350));
  EXPECT_EQ(Sql(alert).size(), 0u) << "no regression yet";

  Completed("v2", 250, 250, 300);  // wholly below [300, 350)
  pqxx::result firing = Sql(alert);
  ASSERT_EQ(firing.size(), 1u);
  EXPECT_EQ(std::string(firing[0]["model"].c_str()), "resnet50");
  EXPECT_EQ(std::string(firing[0]["model_version"].c_str()), "v2");
  EXPECT_EQ(std::string(firing[0]["hardware"].c_str()), "nvidia-l4x2");
  // The rule's condition: the last column below 0.
  EXPECT_DOUBLE_EQ(firing[0]["change_percent"].as<double>(), -16.7);

  // v2 measured again, within the noise of the baseline: the instance resolves.
  Completed("v2", 310, 300, 350);
  EXPECT_EQ(Sql(alert).size(), 0u);
}

TEST_F(CapacityPlanningTest, EachTestIsJudgedAgainstTheBaselineInForce) {
  Register("v1", "nvidia-l4", 1);
  Register("v2", "nvidia-l4", 1);
  Register("v3", "cpu", 0);  // other hardware: no baseline applies
  const int64_t base = Completed("v1", 300, 300, 350);
  const int64_t v1_retest = Completed("v1", 290, 280, 320);
  const int64_t v2_slow = Completed("v2", 250, 250, 300);
  const int64_t v3 = Completed("v3", 100, 100, 120);
  EXPECT_TRUE(Trend()[v2_slow].baseline().model_version().empty()) << "nothing accepted yet";

  const v1::CapacityBaseline accepted = Accept(base, "ci-bot");
  EXPECT_EQ(accepted.test_id(), base);
  EXPECT_EQ(accepted.model_version(), "v1");
  EXPECT_EQ(accepted.hardware().accelerator(), "nvidia-l4");
  EXPECT_EQ(accepted.max_sustainable_qps(), 300);
  EXPECT_EQ(accepted.confidence_low_qps(), 300);
  EXPECT_EQ(accepted.confidence_high_qps(), 350);
  EXPECT_EQ(accepted.accepted_by(), "ci-bot");

  std::map<int64_t, v1::CapacityPoint> trend = Trend();
  ASSERT_EQ(trend.size(), 4u);
  EXPECT_EQ(trend[base].verdict(), v1::CAPACITY_VERDICT_UNSPECIFIED) << "its own baseline";
  EXPECT_EQ(trend[v1_retest].verdict(), v1::CAPACITY_VERDICT_UNCHANGED);
  EXPECT_EQ(trend[v2_slow].verdict(), v1::CAPACITY_VERDICT_REGRESSED);
  EXPECT_EQ(trend[v2_slow].baseline().test_id(), base);
  EXPECT_DOUBLE_EQ(trend[v2_slow].change_fraction(), (250.0 - 300.0) / 300.0);
  EXPECT_EQ(trend[v3].verdict(), v1::CAPACITY_VERDICT_UNSPECIFIED) << "cpu has no baseline";

  v1::ListRegressionsRequest request;
  absl::StatusOr<v1::ListRegressionsResponse> regressions = planner_->ListRegressions(request);
  ASSERT_TRUE(regressions.ok()) << regressions.status();
  ASSERT_EQ(regressions->regressions_size(), 1);
  EXPECT_EQ(regressions->regressions(0).test_id(), v2_slow);
  EXPECT_EQ(regressions->regressions(0).baseline().max_sustainable_qps(), 300);

  // Measured again and fine: the regression stays listed, but is no longer the latest.
  const int64_t v2_fine = Completed("v2", 310, 300, 330);
  request.set_latest_only(true);
  regressions = planner_->ListRegressions(request);
  ASSERT_TRUE(regressions.ok()) << regressions.status();
  EXPECT_EQ(regressions->regressions_size(), 0);
  EXPECT_EQ(Trend()[v2_fine].verdict(), v1::CAPACITY_VERDICT_UNCHANGED);
  request.set_latest_only(false);
  regressions = planner_->ListRegressions(request);
  ASSERT_TRUE(regressions.ok()) << regressions.status();
  EXPECT_EQ(regressions->regressions_size(), 1);

  // A baseline of v2 itself now takes over for v2's tests: the nearest version wins.
  const int64_t v2_retest = Completed("v2", 255, 250, 300);
  Accept(v2_retest);
  trend = Trend();
  EXPECT_EQ(trend[v2_slow].verdict(), v1::CAPACITY_VERDICT_UNCHANGED);
  EXPECT_EQ(trend[v2_slow].baseline().test_id(), v2_retest);
  EXPECT_EQ(trend[v2_retest].baseline().test_id(), base) << "its own baseline does not count";
  EXPECT_EQ(trend[v2_retest].verdict(), v1::CAPACITY_VERDICT_REGRESSED);
}

TEST_F(CapacityPlanningTest, AcceptBaselineRefusesWhatCannotBeOne) {
  Register("v1", "cpu", 1);
  v1::AcceptBaselineRequest request;
  request.set_test_id(0);
  EXPECT_THAT(planner_->AcceptBaseline(request).status().message(), HasSubstr("test_id: must be"));
  request.set_test_id(9999);
  EXPECT_TRUE(absl::IsNotFound(planner_->AcceptBaseline(request).status()));
  absl::StatusOr<v1::Test> queued = tests_->Submit(ValidSpec(), 1, "");
  ASSERT_TRUE(queued.ok());
  request.set_test_id(queued->id());
  absl::Status s = planner_->AcceptBaseline(request).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("is queued"));
  // Without auth the acceptor is "".
  ASSERT_TRUE(tests_->Cancel(queued->id()).ok());
  request.set_test_id(Completed("v1", 100, 100, 110));
  absl::StatusOr<v1::AcceptBaselineResponse> ok = planner_->AcceptBaseline(request);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->baseline().accepted_by(), "");
}

// Hand computation: replicas = ceil(peak * (1 + headroom) / capacity) + survive_loss.
TEST_F(CapacityPlanningTest, PlanSizesReplicasPerHardwareFromTheLatestConvergedCapacity) {
  Register("v1", "nvidia-l4", 2);
  Register("v2", "nvidia-l4", 2);                  // the newest version on L4
  Register("v1-cpu", "cpu", 0);                    // accelerator count unknown
  Completed("v1", 500, 500, 550);                  // older version: not planned on
  Completed("v2", 100, 100, 110);                  // the capacity used
  Completed("v2", 90, 0, 0, /*converged=*/false);  // newer but unconverged: ignored
  const int64_t cpu_test = Completed("v1-cpu", 77, 77, 80);

  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(400, std::nullopt, std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->headroom(), 0.3);  // the defaults, as applied
  EXPECT_EQ(plan->survive_loss(), 1);
  EXPECT_EQ(plan->required_qps(), 520);  // 400 * 1.3
  ASSERT_EQ(plan->plans_size(), 2);
  const v1::ReplicaPlan& cpu = plan->plans(0);  // ordered by accelerator
  const v1::ReplicaPlan& l4 = plan->plans(1);
  EXPECT_EQ(l4.model_version(), "v2");
  EXPECT_EQ(l4.capacity_qps(), 100);
  EXPECT_EQ(l4.replicas(), 7);       // ceil(520 / 100) = 6, + 1
  EXPECT_EQ(l4.accelerators(), 14);  // 7 replicas x 2
  EXPECT_FALSE(l4.has_cost_per_million_requests()) << "the registry has no price";
  EXPECT_EQ(cpu.test_id(), cpu_test);
  EXPECT_EQ(cpu.replicas(), 8);  // ceil(520 / 77) = ceil(6.75...) = 7, + 1
  EXPECT_EQ(cpu.accelerators(), 0);

  // 70 * 1.1 / 77 is exactly 1; in doubles it is 1.0000000000000002, which ceil makes 2.
  plan = Plan(70, 0.1, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->plans(0).replicas(), 1);
  // No headroom, survive the loss of 3: ceil(1000 / 100) + 3 = 13 on L4.
  plan = Plan(1000, 0, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->plans(1).replicas(), 13);
  EXPECT_EQ(plan->plans(1).accelerators(), 26);
}

// Hand computation: cost per million requests = price per accelerator-hour * accelerators
// per replica (at least one) / (capacity * 3600) * 1e6.
TEST_F(CapacityPlanningTest, PlanPricesAMillionRequestsAtTheMeasuredCapacity) {
  Register("v2", "nvidia-l4", 2);
  Register("v1-cpu", "cpu", 0);  // no count registered: one accelerator per replica
  Register("v1-tpu", "tpu-v5e", 4);
  Completed("v2", 100, 100, 110);
  Completed("v1-cpu", 77, 77, 80);
  Completed("v1-tpu", 400, 400, 420);
  Sql("INSERT INTO accelerator_prices (accelerator, price_per_hour) VALUES "
      "('nvidia-l4', 2.5), ('cpu', 0.36)");
  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(400, 0.3, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->plans_size(), 3);
  const v1::ReplicaPlan& cpu = plan->plans(0);  // ordered by accelerator
  const v1::ReplicaPlan& l4 = plan->plans(1);
  const v1::ReplicaPlan& tpu = plan->plans(2);
  ASSERT_TRUE(l4.has_cost_per_million_requests());
  EXPECT_NEAR(l4.cost_per_million_requests(), 13.888888888888889, 1e-9);  // 5 / 360000 * 1e6
  ASSERT_TRUE(cpu.has_cost_per_million_requests());
  EXPECT_NEAR(cpu.cost_per_million_requests(), 1.2987012987012987, 1e-9);  // 0.36 / 277200 * 1e6
  EXPECT_FALSE(tpu.has_cost_per_million_requests()) << "tpu-v5e has no price";
  // The same from the SQL function, as a planner runs it.
  EXPECT_NEAR(Sql("SELECT cost_per_million_requests FROM vanguard_plan('resnet50', 400, 0.3, 1)"
                  " WHERE accelerator = 'nvidia-l4'")[0][0]
                  .as<double>(),
              13.888888888888889, 1e-9);
  EXPECT_THROW(Sql("INSERT INTO accelerator_prices VALUES ('gpu', -1)"), pqxx::check_violation);
}

// A streaming model's steps record their output chunks; the plan divides the cost of a
// million requests by the output tokens per request.
TEST_F(CapacityPlanningTest, PlanPricesAMillionOutputTokensFromTheTestsStreamedChunks) {
  Register("v2", "nvidia-l4", 2);
  Register("v1-cpu", "cpu", 0);
  // 200 output tokens per completed request over the measured steps: (199'800 + 400'000) /
  // (999 + 2000). The interrupted step (no chunks) is left out of both sums.
  v1::Step first = ValidStep(0, 50);
  first.set_output_chunks(199'800);  // 999 completed
  v1::Step second = ValidStep(1, 100);
  second.set_completed(2000);
  second.set_output_chunks(400'000);
  v1::Step interrupted = ValidStep(2, 110);
  interrupted.set_interrupted(true);
  interrupted.set_completed(500);
  Completed("v2", 100, 100, 110, true, false, {first, second, interrupted});
  Completed("v1-cpu", 77, 77, 80, true, false, {ValidStep(0, 77)});  // not streamed
  Sql("INSERT INTO accelerator_prices (accelerator, price_per_hour) VALUES "
      "('nvidia-l4', 2.5), ('cpu', 0.36)");

  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(400, 0.3, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->plans_size(), 2);
  const v1::ReplicaPlan& cpu = plan->plans(0);
  const v1::ReplicaPlan& l4 = plan->plans(1);
  ASSERT_TRUE(l4.has_output_tokens_per_request());
  EXPECT_NEAR(l4.output_tokens_per_request(), 200, 1e-12);
  // 2.5 $/h * 2 accelerators / (100 req/s * 3600 s * 200 tokens) * 1e6 = 0.069444...
  ASSERT_TRUE(l4.has_cost_per_million_output_tokens());
  EXPECT_NEAR(l4.cost_per_million_output_tokens(), 5.0 / 72'000'000 * 1e6, 1e-12);
  EXPECT_NEAR(l4.cost_per_million_requests() / l4.output_tokens_per_request(),
              l4.cost_per_million_output_tokens(), 1e-12);
  EXPECT_FALSE(cpu.has_output_tokens_per_request()) << "its steps streamed no chunks";
  EXPECT_FALSE(cpu.has_cost_per_million_output_tokens());
  EXPECT_TRUE(cpu.has_cost_per_million_requests());

  // The same from SQL, as a planner runs it.
  pqxx::result row =
      Sql("SELECT output_tokens_per_request, cost_per_million_output_tokens"
          "  FROM vanguard_plan('resnet50', 400, 0.3, 1) WHERE accelerator = 'nvidia-l4'");
  EXPECT_NEAR(row[0][0].as<double>(), 200, 1e-12);
  EXPECT_NEAR(row[0][1].as<double>(), 0.069444444444444444, 1e-12);
  // Unpriced hardware has a token count but no cost.
  Sql("DELETE FROM accelerator_prices WHERE accelerator = 'nvidia-l4'");
  plan = Plan(400, 0.3, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->plans(1).has_output_tokens_per_request());
  EXPECT_FALSE(plan->plans(1).has_cost_per_million_output_tokens());
}

// Co-located and replica-loss tests are not the capacity; they scale it. The co-location
// factor comes from v2 (80 next to a neighbour / 100 alone), the survivor factor from v1's
// replica-loss test (4 replicas held 270 req/s through the loss of one: 90 per survivor / 120
// alone): both apply to the newest version on L4 x2.
TEST_F(CapacityPlanningTest, PlanScalesTheCapacityByTheMeasuredCoLocationAndSurvivorFactors) {
  Register("v1", "nvidia-l4", 2);
  Register("v2", "nvidia-l4", 2);
  Register("v1-cpu", "cpu", 0);
  const int64_t v1_alone = Completed("v1", 120, 120, 130);
  // A replica-loss result as that strategy stores it (TestResult.replica_loss, issue 22):
  // max_sustainable_qps 0, the survivor capacity of the fleet in detail.
  const int64_t v1_survivor = Completed("v1", 0, 0, 0);
  SqlParams(
      "UPDATE results SET detail = detail || '{\"replica_loss\": {\"survivor_capacity_qps\": 270,"
      " \"full_fleet_held_qps\": 400, \"endpoints\": 4}}'::jsonb WHERE test_id = $1",
      v1_survivor);
  const int64_t v2_alone = Completed("v2", 100, 100, 110);
  const int64_t v2_colocated =
      Completed("v2", 80, 80, 90, true, false, {}, v1::CAPACITY_CONDITION_COLOCATED);
  Completed("v1-cpu", 77, 77, 80);
  // Measured higher next to a neighbour (noise): a neighbour never adds capacity, factor 1.
  Completed("v1-cpu", 85, 85, 90, true, false, {}, v1::CAPACITY_CONDITION_COLOCATED);

  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(400, 0.3, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->plans_size(), 2);
  const v1::ReplicaPlan& cpu = plan->plans(0);
  const v1::ReplicaPlan& l4 = plan->plans(1);
  // L4: capacity 100 (v2 alone, not the later co-located 80); effective 100 * 0.8 = 80,
  // survivor 80 * 0.75 = 60; required 520: max(ceil(520 / 80), ceil(520 / 60) + 1)
  // = max(7, 9 + 1) = 10 replicas (without the factors: ceil(520 / 100) + 1 = 7).
  EXPECT_EQ(l4.test_id(), v2_alone);
  EXPECT_DOUBLE_EQ(l4.capacity_qps(), 100);
  ASSERT_TRUE(l4.has_colocation_factor());
  EXPECT_NEAR(l4.colocation_factor(), 0.8, 1e-12);
  EXPECT_EQ(l4.colocation_test_id(), v2_colocated);
  ASSERT_TRUE(l4.has_survivor_factor());
  EXPECT_NEAR(l4.survivor_factor(), 0.75, 1e-12);
  EXPECT_EQ(l4.survivor_test_id(), v1_survivor);
  EXPECT_NEAR(l4.effective_capacity_qps(), 80, 1e-9);
  EXPECT_NEAR(l4.survivor_capacity_qps(), 60, 1e-9);
  EXPECT_EQ(l4.replicas(), 10);
  EXPECT_EQ(l4.accelerators(), 20);
  // cpu: factor 1, no survivor measurement: ceil(520 / 77) + 1 = 8, as before.
  EXPECT_NEAR(cpu.colocation_factor(), 1, 1e-12);
  EXPECT_FALSE(cpu.has_survivor_factor());
  EXPECT_DOUBLE_EQ(cpu.effective_capacity_qps(), 77);
  EXPECT_EQ(cpu.replicas(), 8);

  // No loss to survive: the survivor capacity does not count, ceil(520 / 80) = 7. Two: 9 + 2.
  EXPECT_EQ(Plan(400, 0.3, 0)->plans(1).replicas(), 7);
  EXPECT_EQ(Plan(400, 0.3, 2)->plans(1).replicas(), 11);

  // The same from SQL.
  pqxx::result row =
      Sql("SELECT replicas, colocation_factor, survivor_factor, effective_capacity_qps,"
          "       survivor_capacity_qps FROM vanguard_plan('resnet50', 400, 0.3, 1)"
          " WHERE accelerator = 'nvidia-l4'");
  EXPECT_EQ(row[0][0].as<int64_t>(), 10);
  EXPECT_NEAR(row[0][1].as<double>(), 0.8, 1e-12);
  EXPECT_NEAR(row[0][2].as<double>(), 0.75, 1e-12);
  EXPECT_NEAR(row[0][3].as<double>(), 80, 1e-9);
  EXPECT_NEAR(row[0][4].as<double>(), 60, 1e-9);
  pqxx::result survivor = SqlParams(
      "SELECT condition, alone_test_id, factor FROM capacity_conditions WHERE test_id = $1",
      v1_survivor);
  ASSERT_EQ(survivor.size(), 1u);
  EXPECT_STREQ(survivor[0][0].c_str(), "survivor");
  EXPECT_EQ(survivor[0][1].as<int64_t>(), v1_alone);
  EXPECT_NEAR(survivor[0][2].as<double>(), 0.75, 1e-12);

  // Conditioned tests are not capacities: the trend (and verdicts) leave them out.
  std::map<int64_t, v1::CapacityPoint> trend = Trend();
  EXPECT_EQ(trend.size(), 3u);
  EXPECT_EQ(trend.count(v1_survivor), 0u);
  EXPECT_EQ(trend.count(v2_colocated), 0u);
}

// An autoscale test's result (max_sustainable_qps 0, TestResult.autoscale set) is stored like
// any other, but it is not a capacity: the views, the trend and the plan leave it out.
TEST_F(CapacityPlanningTest, AnAutoscaleResultIsNotACapacity) {
  Register("v1", "nvidia-l4", 1);
  const int64_t measured = Completed("v1", 100, 100, 110);
  v1::TestSpec spec = ValidSpec();
  spec.set_model_version("v1");
  absl::StatusOr<RegisteredModel> model = models_->Get("resnet50", "v1");
  ASSERT_TRUE(model.ok());
  absl::StatusOr<v1::Test> submitted = tests_->Submit(spec, model->id, "");
  ASSERT_TRUE(submitted.ok());
  absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("w1", absl::Seconds(30));
  ASSERT_TRUE(leased.ok() && leased->has_value());
  v1::TestResult result;
  result.set_converged(true);
  result.mutable_autoscale()->set_violation_seconds(4.5);
  ASSERT_TRUE(tests_->Complete(submitted->id(), (**leased).attempt(), result, "").ok());

  EXPECT_EQ(Sql("SELECT (detail #>> '{autoscale,violation_seconds}')::float8 FROM results "
                "WHERE test_id = " +
                std::to_string(submitted->id()))[0][0]
                .as<double>(),
            4.5);
  EXPECT_EQ(Sql("SELECT test_id FROM capacity_latest")[0][0].as<int64_t>(), measured);
  EXPECT_EQ(Sql("SELECT count(*) FROM capacity_intervals")[0][0].as<int>(), 1);
  EXPECT_EQ(Trend().size(), 1u);
  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(100, 0.3, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->plans(0).test_id(), measured);
}

TEST_F(CapacityPlanningTest, PlanOfAnUnmeasuredVersionSaysSoAndBadInputIsRefused) {
  Register("v1", "nvidia-l4", 1);
  absl::StatusOr<v1::PlanCapacityResponse> plan = Plan(100, 0.3, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->plans_size(), 1);
  EXPECT_EQ(plan->plans(0).model_version(), "v1");
  EXPECT_EQ(plan->plans(0).test_id(), 0);
  EXPECT_EQ(plan->plans(0).replicas(), 0);

  EXPECT_TRUE(absl::IsInvalidArgument(Plan(std::nan(""), 0.3, 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Plan(-5, 0.3, 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Plan(100, -0.1, 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Plan(100, 0.3, -1).status()));
  v1::PlanCapacityRequest unknown;
  unknown.set_model("no-such-model");
  unknown.set_peak_qps(10);
  EXPECT_TRUE(absl::IsNotFound(planner_->PlanCapacity(unknown).status()));
  v1::GetCapacityTrendRequest trend;
  trend.set_model("no-such-model");
  EXPECT_TRUE(absl::IsNotFound(planner_->GetCapacityTrend(trend).status()));
  v1::ListRegressionsRequest regressions;
  regressions.set_model("no-such-model");
  EXPECT_TRUE(absl::IsNotFound(planner_->ListRegressions(regressions).status()));
  // The SQL function refuses bad input on its own, for planners who call it directly.
  EXPECT_THROW(Sql("SELECT * FROM vanguard_plan('resnet50', 'NaN', 0.3, 1)"), pqxx::sql_error);
  EXPECT_THROW(Sql("SELECT * FROM vanguard_plan('resnet50', 100, 0.3, -1)"), pqxx::sql_error);
}

TEST_F(CapacityPlanningTest, TheDashboardRoleReadsVerdictsAndPlans) {
  Register("v1", "cpu", 1);
  const int64_t base = Completed("v1", 300, 300, 350);
  Completed("v1", 200, 200, 250);
  Accept(base);
  pqxx::connection conn(db_->conninfo());
  pqxx::work txn(conn);
  txn.exec("SET LOCAL ROLE vanguard_reader");
  EXPECT_EQ(txn.exec1("SELECT count(*) FROM capacity_baseline_regressions")[0].as<int>(), 1);
  EXPECT_EQ(txn.exec1("SELECT count(*) FROM capacity_baselines")[0].as<int>(), 1);
  // 100 * 1.3 / 200 = 0.65: 1 replica, + 1.
  EXPECT_EQ(txn.exec1("SELECT replicas FROM vanguard_plan('resnet50', 100, 0.3, 1)")[0].as<int>(),
            2);
  EXPECT_THROW(txn.exec("INSERT INTO capacity_baselines (model_id, test_id, max_sustainable_qps,"
                        " accepted_by) VALUES (1, 1, 1, 'x')"),
               pqxx::insufficient_privilege);
}

}  // namespace
}  // namespace vanguard
