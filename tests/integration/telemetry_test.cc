// Telemetry for capacity planners (real PostgreSQL via $VANGUARD_TEST_PG): step windows land
// in step_windows idempotently, and the capacity views answer latest capacity, daily trend
// and regressions between consecutive versions. Also model deprecation.
#include <string>

#include "database_test_base.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

class TelemetryTest : public DatabaseTest {
 protected:
  // Runs one test of model `version` to success with the given capacity; returns its id.
  int64_t RunTest(const std::string& version, double capacity) {
    v1::SubmitTestRequest submit;
    *submit.mutable_spec() = ValidSpec();
    submit.mutable_spec()->set_model_version(version);
    absl::StatusOr<v1::SubmitTestResponse> s = service_->SubmitTest(submit);
    EXPECT_TRUE(s.ok()) << s.status();
    v1::LeaseTestRequest lease;
    lease.set_worker_id("w");
    absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
    EXPECT_TRUE(leased.ok() && leased->has_test());
    if (!leased.ok() || !leased->has_test()) return 0;
    v1::CompleteTestRequest complete;
    complete.set_test_id(leased->test().id());
    complete.set_attempt(leased->attempt());
    complete.mutable_result()->set_max_sustainable_qps(capacity);
    complete.mutable_result()->set_converged(true);
    EXPECT_TRUE(service_->CompleteTest(complete).ok());
    return leased->test().id();
  }
};

TEST_F(TelemetryTest, StepWindowsAreStoredOncePerWindowEvenWhenReportedTwice) {
  ASSERT_GT(RegisterModelId(ValidModel()), 0);
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  ASSERT_TRUE(service_->SubmitTest(submit).ok());
  v1::LeaseTestRequest lease;
  lease.set_worker_id("w");
  absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
  ASSERT_TRUE(leased.ok() && leased->has_test());

  v1::ReportStepRequest report;
  report.set_test_id(leased->test().id());
  report.set_attempt(leased->attempt());
  *report.mutable_step() = ValidStep(0, 100);
  for (int w = 0; w < 3; ++w) {
    v1::StepWindow* window = report.mutable_step()->add_windows();
    window->set_index(w);
    window->set_warmup(w == 0);
    window->mutable_start_time()->set_seconds(1'700'000'000 + w);
    window->mutable_duration()->set_seconds(1);
    window->set_offered_qps(100);
    window->set_achieved_qps(98 + w);
    window->mutable_latency()->set_p99_ms(20 + w);
    window->set_scheduled(100);
    window->set_completed(99);
    window->set_errors(1);
    window->set_censored(w);
    window->mutable_ttft()->set_p99_ms(7.5);
    window->set_gpu_utilization(0.5 + 0.1 * w);
    window->set_queue_depth(2);
    window->set_health_score(0.3);
    window->set_health_state(w == 2 ? v1::HEALTH_STATE_WARN : v1::HEALTH_STATE_HEALTHY);
  }
  ASSERT_TRUE(service_->ReportStep(report).ok());
  ASSERT_TRUE(service_->ReportStep(report).ok());  // a retried report changes nothing

  pqxx::result rows =
      Sql("SELECT window_index, warmup, achieved_qps, p99_ms, censored, ttft_p99_ms,"
          " gpu_utilization, health_state, duration_s, extract(epoch FROM start_time)::bigint"
          " FROM step_windows ORDER BY window_index");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0][1].as<bool>());
  EXPECT_FALSE(rows[1][1].as<bool>());
  EXPECT_DOUBLE_EQ(rows[2][2].as<double>(), 100);
  EXPECT_DOUBLE_EQ(rows[1][3].as<double>(), 21);
  EXPECT_EQ(rows[2][4].as<int64_t>(), 2);
  EXPECT_DOUBLE_EQ(rows[0][5].as<double>(), 7.5);
  EXPECT_NEAR(rows[2][6].as<double>(), 0.7, 1e-9);
  EXPECT_STREQ(rows[2][7].c_str(), "warn");
  EXPECT_DOUBLE_EQ(rows[0][8].as<double>(), 1.0);
  EXPECT_EQ(rows[1][9].as<int64_t>(), 1'700'000'001);

  // The step itself is kept once, without the windows in its JSON; GetTest adds them back.
  EXPECT_EQ(Sql("SELECT count(*) FROM steps WHERE detail ? 'windows'")[0][0].as<int>(), 0);
  absl::StatusOr<v1::Test> test = tests_->Get(leased->test().id());
  ASSERT_TRUE(test.ok());
  ASSERT_EQ(test->steps_size(), 1);
  EXPECT_EQ(test->steps(0).windows_size(), 0);
  test = tests_->Get(leased->test().id(), {.windows = true});
  ASSERT_TRUE(test.ok());
  ASSERT_EQ(test->steps(0).windows_size(), 3);
  EXPECT_EQ(test->steps(0).windows(2).health_state(), v1::HEALTH_STATE_WARN);
}

TEST_F(TelemetryTest, ViewsShowLatestCapacityDailyTrendAndRegressions) {
  ASSERT_GT(RegisterModelId(ValidModel("resnet50", "v1")), 0);
  ASSERT_GT(RegisterModelId(ValidModel("resnet50", "v2")), 0);
  ASSERT_GT(RegisterModelId(ValidModel("resnet50", "v3")), 0);
  RunTest("v1", 400);
  RunTest("v1", 420);  // the latest v1 measurement
  RunTest("v2", 410);  // -2%: within the 10% threshold
  RunTest("v3", 300);  // -27%: a regression

  pqxx::result latest =
      Sql("SELECT model_version, max_sustainable_qps, accelerator FROM capacity_latest"
          " ORDER BY model_version");
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_DOUBLE_EQ(latest[0][1].as<double>(), 420);
  EXPECT_STREQ(latest[0][2].c_str(), "cpu");

  pqxx::result daily = Sql("SELECT tests, mean_qps FROM capacity_daily WHERE model_version = 'v1'");
  ASSERT_EQ(daily.size(), 1u);
  EXPECT_EQ(daily[0][0].as<int>(), 2);
  EXPECT_DOUBLE_EQ(daily[0][1].as<double>(), 410);

  pqxx::result regressions =
      Sql("SELECT previous_version, model_version, change_fraction FROM capacity_regressions");
  ASSERT_EQ(regressions.size(), 1u);
  EXPECT_STREQ(regressions[0][0].c_str(), "v2");
  EXPECT_STREQ(regressions[0][1].c_str(), "v3");
  EXPECT_NEAR(regressions[0][2].as<double>(), (300.0 - 410.0) / 410.0, 1e-9);

  // A lower threshold reports the small drop too.
  Sql("UPDATE capacity_settings SET regression_threshold = 0.01");
  EXPECT_EQ(Sql("SELECT count(*) FROM capacity_regressions")[0][0].as<int>(), 2);
}

TEST_F(TelemetryTest, ReaderRoleCanReadViewsButNotTokens) {
  pqxx::result role = Sql("SELECT count(*) FROM pg_roles WHERE rolname = 'vanguard_reader'");
  ASSERT_EQ(role[0][0].as<int>(), 1) << "the test server's superuser should have created it";
  EXPECT_TRUE(
      Sql("SELECT has_table_privilege('vanguard_reader', 'capacity_latest', 'SELECT')")[0][0]
          .as<bool>());
  EXPECT_TRUE(Sql("SELECT has_table_privilege('vanguard_reader', 'step_windows', 'SELECT')")[0][0]
                  .as<bool>());
  EXPECT_FALSE(Sql("SELECT has_table_privilege('vanguard_reader', 'api_tokens', 'SELECT')")[0][0]
                   .as<bool>());
  EXPECT_FALSE(
      Sql("SELECT has_table_privilege('vanguard_reader', 'tests', 'UPDATE')")[0][0].as<bool>());
}

TEST_F(TelemetryTest, DeprecatedVersionIsNotTheLatestButStaysReadable) {
  ASSERT_GT(RegisterModelId(ValidModel("bert", "v1")), 0);
  ASSERT_GT(RegisterModelId(ValidModel("bert", "v2")), 0);
  v1::DeprecateModelRequest deprecate;
  deprecate.set_name("bert");
  deprecate.set_version("v2");
  absl::StatusOr<v1::DeprecateModelResponse> deprecated = service_->DeprecateModel(deprecate);
  ASSERT_TRUE(deprecated.ok()) << deprecated.status();
  EXPECT_TRUE(deprecated->model().deprecated());
  EXPECT_TRUE(deprecated->model().has_deprecate_time());

  v1::GetModelRequest latest;
  latest.set_name("bert");
  absl::StatusOr<v1::GetModelResponse> got = service_->GetModel(latest);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->model().version(), "v1");
  latest.set_version("v2");
  got = service_->GetModel(latest);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->model().deprecated());

  v1::ListModelsRequest list;
  list.set_name("bert");
  EXPECT_EQ(service_->ListModels(list)->models_size(), 1);
  list.set_include_deprecated(true);
  EXPECT_EQ(service_->ListModels(list)->models_size(), 2);

  deprecate.set_version("v9");
  EXPECT_TRUE(absl::IsNotFound(service_->DeprecateModel(deprecate).status()));
}

TEST_F(TelemetryTest, SloLimitsAreValidatedPerField) {
  v1::RegisterModelRequest request;
  *request.mutable_model() = ValidModel();
  request.mutable_model()->mutable_slo()->set_max_gpu_utilization(1.5);
  absl::Status s = service_->RegisterModel(request).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("model.slo.max_gpu_utilization"), std::string::npos) << s;

  *request.mutable_model() = ValidModel();
  request.mutable_model()->mutable_slo()->mutable_weights()->set_queue_depth(-1);
  s = service_->RegisterModel(request).status();
  EXPECT_NE(s.message().find("model.slo.weights.queue_depth"), std::string::npos) << s;

  *request.mutable_model() = ValidModel();
  request.mutable_model()->mutable_slo()->mutable_ttft_p99()->set_seconds(-1);
  s = service_->RegisterModel(request).status();
  EXPECT_NE(s.message().find("model.slo.ttft_p99"), std::string::npos) << s;

  *request.mutable_model() = ValidModel();
  request.mutable_model()->mutable_slo()->mutable_p50_latency()->set_seconds(1);  // > p99
  s = service_->RegisterModel(request).status();
  EXPECT_NE(s.message().find("model.slo.p50_latency"), std::string::npos) << s;

  *request.mutable_model() = ValidModel();
  request.mutable_model()->mutable_slo()->set_max_gpu_utilization(0.9);
  request.mutable_model()->mutable_slo()->set_max_queue_depth(8);
  request.mutable_model()->mutable_slo()->mutable_inter_token_p99()->set_nanos(50'000'000);
  request.mutable_model()->mutable_slo()->mutable_weights()->set_p99_latency(2);
  absl::StatusOr<v1::RegisterModelResponse> ok = service_->RegisterModel(request);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_DOUBLE_EQ(ok->model().slo().max_gpu_utilization(), 0.9);
  EXPECT_DOUBLE_EQ(ok->model().slo().weights().p99_latency(), 2);
}

}  // namespace
}  // namespace vanguard
