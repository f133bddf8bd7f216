// Tests of render.h: JSON that parses back into the message with the .proto's field names,
// and tables that show what a user looks for (every step row, the result).
#include "orchestrator/cli/render.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vanguard::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

v1::Test FinishedTest() {
  v1::Test test;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        id: 42
        state: TEST_STATE_SUCCEEDED
        attempt: 1
        spec {
          model: "resnet50"
          sweep { rates_qps: [ 100, 200, 300 ] }
          step_duration { seconds: 10 }
          step_warmup { seconds: 2 }
        }
        model { name: "resnet50" version: "v3" }
        steps {
          index: 0
          target_qps: 100
          achieved_qps: 99.8
          latency { p50_ms: 4.25 p99_ms: 12.5 max_ms: 20.75 }
          error_rate: 0
          health_state: HEALTH_STATE_HEALTHY
          passed: true
          verdict: "p99 12.5ms <= 100ms"
          attempt: 1
        }
        steps {
          index: 1
          target_qps: 200
          achieved_qps: 199.1
          latency { p50_ms: 6.5 p99_ms: 48.0 max_ms: 70 }
          error_rate: 0.001
          health_state: HEALTH_STATE_WARN
          passed: true
          verdict: "ok"
          attempt: 1
        }
        steps {
          index: 2
          target_qps: 300
          achieved_qps: 241.7
          latency { p50_ms: 80 p99_ms: 950.5 max_ms: 1200 }
          error_rate: 0.0525
          health_state: HEALTH_STATE_OVERLOADED
          passed: false
          verdict: "achieved 80.6% of offered < 99%"
          attempt: 1
        }
        result {
          max_sustainable_qps: 200
          converged: true
          steps_taken: 3
          test_duration { seconds: 37 }
          summary: "highest passing rate 200 qps"
        }
        create_time { seconds: 1700000000 }
        start_time { seconds: 1700000001 }
        end_time { seconds: 1700000038 }
      )pb",
      &test));
  return test;
}

TEST(RenderJsonTest, ParsesBackIntoTheSameMessage) {
  const v1::Test test = FinishedTest();
  const std::string json = RenderJson(test);
  v1::Test parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, test));
}

TEST(RenderJsonTest, UsesProtoFieldNamesAndPrintsZeroValues) {
  const nlohmann::json json = nlohmann::json::parse(RenderJson(FinishedTest()));
  EXPECT_EQ(json["state"], "TEST_STATE_SUCCEEDED");
  EXPECT_EQ(json["result"]["max_sustainable_qps"], 200);
  ASSERT_EQ(json["steps"].size(), 3u);
  const nlohmann::json& step = json["steps"][2];
  EXPECT_EQ(step["target_qps"], 300);
  EXPECT_EQ(step["achieved_qps"], 241.7);
  EXPECT_EQ(step["latency"]["p99_ms"], 950.5);
  EXPECT_EQ(step["error_rate"], 0.0525);
  EXPECT_EQ(step["health_state"], "HEALTH_STATE_OVERLOADED");
  // Zero values are present, not omitted: a script can read them without a default.
  EXPECT_EQ(json["steps"][0]["error_rate"], 0);
  EXPECT_EQ(json["steps"][0]["timeouts"], "0");  // int64 is a string in the JSON mapping
  EXPECT_EQ(json["error"], "");
  const std::string text = RenderJson(FinishedTest());
  EXPECT_THAT(text, Not(HasSubstr("maxSustainableQps")));
  EXPECT_THAT(text, HasSubstr("\n  "));  // pretty-printed
}

TEST(RenderJsonTest, ListIsTheResponseMessage) {
  v1::ListTestsResponse list;
  *list.add_tests() = FinishedTest();
  const nlohmann::json json = nlohmann::json::parse(RenderJson(list));
  ASSERT_TRUE(json.contains("tests"));
  EXPECT_EQ(json["tests"][0]["id"], "42");

  const nlohmann::json empty = nlohmann::json::parse(RenderJson(v1::ListModelsResponse()));
  EXPECT_TRUE(empty["models"].is_array());
  EXPECT_TRUE(empty["models"].empty());
}

TEST(RenderJsonLineTest, OneObjectPerLine) {
  const std::string line = RenderJsonLine(FinishedTest());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(nlohmann::json::parse(line)["id"], "42");
}

TEST(RenderTestTableTest, HeaderStepRowsAndResult) {
  const std::string table = RenderTestTable(FinishedTest());
  EXPECT_THAT(table, HasSubstr("Test 42  resnet50/v3  SUCCEEDED  (attempt 1)"));
  EXPECT_THAT(table, HasSubstr("sweep 100.0, 200.0, 300.0 qps"));
  EXPECT_THAT(table, HasSubstr("10s measured, warmup 2s"));
  EXPECT_THAT(table, HasSubstr("2023-11-14 22:13:20 UTC"));
  EXPECT_THAT(table, HasSubstr("TARGET QPS"));
  // One row per step, in order, with the numbers a user compares.
  const size_t row0 = table.find("100.0          99.8");
  const size_t row1 = table.find("200.0         199.1");
  const size_t row2 = table.find("300.0         241.7");
  ASSERT_NE(row0, std::string::npos) << table;
  ASSERT_NE(row1, std::string::npos) << table;
  ASSERT_NE(row2, std::string::npos) << table;
  EXPECT_LT(row0, row1);
  EXPECT_LT(row1, row2);
  EXPECT_THAT(table, HasSubstr("950.5"));
  EXPECT_THAT(table, HasSubstr("5.25"));  // error %
  EXPECT_THAT(table, HasSubstr("OVERLOADED  FAIL    achieved 80.6% of offered < 99%"));
  EXPECT_THAT(table, HasSubstr("HEALTHY     pass    p99 12.5ms <= 100ms"));
  EXPECT_THAT(table, HasSubstr("Result: max sustainable 200.0 qps, converged yes, 3 steps, took "
                               "37s"));
}

TEST(RenderTestTableTest, TheScheduleShownIsTheOneTheStepsRan) {
  // No schedule in the spec: the worker runs Poisson arrivals, and the table says so.
  v1::Test test = FinishedTest();
  test.mutable_spec()->clear_schedule();
  EXPECT_THAT(RenderTestTable(test), HasSubstr("schedule poisson"));
  test.mutable_spec()->set_schedule(v1::SCHEDULE_CONSTANT);
  EXPECT_THAT(RenderTestTable(test), HasSubstr("schedule constant"));
  test.mutable_spec()->set_schedule(v1::SCHEDULE_TRACE);
  EXPECT_THAT(RenderTestTable(test), HasSubstr("schedule trace"));
}

TEST(RenderTestTableTest, AResultAtTheTopOfTheRangeSaysAtLeastAndHowItWasVerified) {
  v1::Test test = FinishedTest();
  v1::TestResult& result = *test.mutable_result();
  result.set_at_least(true);
  result.set_converged(false);
  result.set_verification("held 300.0 qps for 60s: p99 41ms <= 100ms");
  result.mutable_model_warmup()->set_seconds(70);
  result.mutable_more_time_needed()->set_seconds(120);
  result.add_drift_flags("reading at 250 qps (step 2) expired: contradicted by step 5");
  const std::string table = RenderTestTable(test);
  EXPECT_THAT(table, HasSubstr("Result: max sustainable at least 200.0 qps (the top of the range "
                               "held), converged no"));
  EXPECT_THAT(table, HasSubstr("verified: held 300.0 qps for 60s"));
  EXPECT_THAT(table, HasSubstr("model warmup: 1m10s"));
  EXPECT_THAT(table, HasSubstr("undecided: about 2m"));
  EXPECT_THAT(table, HasSubstr("drift: reading at 250 qps (step 2) expired"));
}

TEST(RenderTestTableTest, AStepOverSeveralReplicasShowsEachAndTheFleetsTailUtilisation) {
  v1::Test test = FinishedTest();
  v1::Step* step = test.mutable_steps(1);
  for (double utilization : {0.42, 0.91}) {
    v1::EndpointTelemetry* e = step->add_endpoints();
    e->set_target(utilization < 0.5 ? "http://r0:8000" : "http://r1:8000");
    e->set_share(0.5);
    e->set_achieved_qps(99.5);
    e->mutable_latency()->set_p99_ms(utilization < 0.5 ? 12 : 48);
    e->set_errors(1);
    e->set_timeouts(2);
    e->set_peak_in_flight(7);
    e->mutable_scraped()->set_gpu_utilization(utilization);
  }
  step->set_endpoint_imbalance(1.01);
  step->set_tail_utilization(0.91);
  step->set_mean_utilization(0.665);
  const std::string table = RenderTestTable(test);
  EXPECT_THAT(table, HasSubstr("GPU UTIL %"));
  EXPECT_THAT(table, ContainsRegex("1 +http://r1:8000 +50.00 +99.5 +48.0 +3 +7 +91.0 +-"));
  EXPECT_THAT(table, HasSubstr("step 1: load imbalance 1.01; tail utilisation 91.0% (p95 across "
                               "replicas, mean 66.5%)"));
  // One endpoint per step (the other steps): no endpoint table.
  EXPECT_EQ(RenderStepEndpoints(FinishedTest()), "");
}

TEST(RenderTestTableTest, QueuedTestWithoutSteps) {
  v1::Test test;
  test.set_id(5);
  test.set_state(v1::TEST_STATE_QUEUED);
  test.mutable_spec()->set_model("bert");
  test.mutable_spec()->mutable_sweep()->set_min_qps(10);
  test.mutable_spec()->mutable_sweep()->set_max_qps(50);
  test.mutable_spec()->mutable_sweep()->set_steps(5);
  const std::string table = RenderTestTable(test);
  EXPECT_THAT(table, HasSubstr("Test 5  bert/latest  QUEUED"));
  EXPECT_THAT(table, HasSubstr("sweep 10.0 to 50.0 qps in 5 steps"));
  EXPECT_THAT(table, HasSubstr("(no steps yet)"));
  EXPECT_THAT(table, HasSubstr("Result: pending"));
}

TEST(RenderTestTableTest, FailedTestShowsItsError) {
  v1::Test test;
  test.set_id(6);
  test.set_state(v1::TEST_STATE_FAILED);
  test.set_error("model resnet50/v9 is not registered");
  const std::string table = RenderTestTable(test);
  EXPECT_THAT(table, HasSubstr("FAILED"));
  EXPECT_THAT(table, HasSubstr("error      model resnet50/v9 is not registered"));
  EXPECT_THAT(table, HasSubstr("Result: none"));
}

TEST(RenderTestListTableTest, OneRowPerTest) {
  v1::ListTestsResponse list;
  *list.add_tests() = FinishedTest();
  v1::Test* queued = list.add_tests();
  queued->set_id(43);
  queued->set_state(v1::TEST_STATE_QUEUED);
  queued->mutable_spec()->set_model("bert");
  const std::string table = RenderTestListTable(list);
  EXPECT_THAT(table, HasSubstr("ID  STATE"));
  EXPECT_THAT(table, HasSubstr("42  SUCCEEDED  resnet50/v3"));
  EXPECT_THAT(table, HasSubstr("43  QUEUED     bert/latest"));
  EXPECT_THAT(table, HasSubstr("200.0"));
  EXPECT_EQ(RenderTestListTable(v1::ListTestsResponse()), "(no tests)\n");
}

TEST(RenderModelTableTest, ShowsEndpointsAndSlo) {
  v1::Model model;
  model.set_name("resnet50");
  model.set_version("v3");
  model.set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  model.add_endpoints("http://127.0.0.1:8000");
  model.mutable_slo()->mutable_p99_latency()->set_nanos(100'000'000);
  model.mutable_slo()->set_max_error_rate(0.01);
  model.mutable_hardware()->set_accelerator("nvidia-l40");
  model.mutable_hardware()->set_accelerator_count(2);
  const std::string table = RenderModelTable(model);
  EXPECT_THAT(table, HasSubstr("Model resnet50/v3"));
  EXPECT_THAT(table, HasSubstr("kserve_v2_rest"));
  EXPECT_THAT(table, HasSubstr("http://127.0.0.1:8000"));
  EXPECT_THAT(table, HasSubstr("p99 <= 100ms, errors <= 1.00%"));
  EXPECT_THAT(table, HasSubstr("nvidia-l40 x2"));

  v1::ListModelsResponse list;
  *list.add_models() = model;
  EXPECT_THAT(RenderModelListTable(list), HasSubstr("resnet50  v3       kserve_v2_rest"));
}

TEST(RenderStepProgressTest, SaysTargetAchievedP99AndVerdict) {
  const std::string line = RenderStepProgress(FinishedTest().steps(2));
  EXPECT_EQ(line,
            "step 2: target 300.0 qps, achieved 241.7 qps, p99 950.5 ms, errors 5.25%, "
            "OVERLOADED, FAIL (achieved 80.6% of offered < 99%)");
}

TEST(RenderStateLineTest, StateAttemptAndWorker) {
  v1::Test test;
  test.set_id(9);
  test.set_state(v1::TEST_STATE_RUNNING);
  test.set_attempt(2);
  test.set_lease_owner("worker-a");
  EXPECT_EQ(RenderStateLine(test), "test 9: RUNNING (attempt 2, worker worker-a)");
  test.set_cancel_requested(true);
  EXPECT_EQ(RenderStateLine(test),
            "test 9: RUNNING (attempt 2, worker worker-a, cancel requested)");
  EXPECT_THAT(RenderTestTable(test), HasSubstr("cancel     requested"));
}

// A running test whose model's SLO is p50 50 ms, p99 250 ms, 1% errors, and its worker's
// progress in step 3 at 400 qps after 92 s.
v1::Test RunningTest() {
  v1::Test test;
  test.set_id(7);
  test.set_state(v1::TEST_STATE_RUNNING);
  test.mutable_model()->mutable_slo()->mutable_p50_latency()->set_nanos(50'000'000);
  test.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(250'000'000);
  test.mutable_model()->mutable_slo()->set_max_error_rate(0.01);
  return test;
}

v1::TestProgress StepInFlight() {
  v1::TestProgress p;
  p.set_step_index(3);
  p.set_offered_qps(400);
  p.set_health_state(v1::HEALTH_STATE_WARN);
  p.mutable_elapsed()->set_seconds(92);
  p.mutable_step_remaining()->set_seconds(18);
  p.mutable_test_remaining()->set_seconds(190);
  p.set_step_scheduled(4000);
  p.set_step_errors(4);
  v1::StepWindow* old = p.add_windows();
  old->set_achieved_qps(1);
  v1::StepWindow* w = p.add_windows();
  w->set_achieved_qps(398.24);
  w->mutable_latency()->set_p50_ms(12.1);
  w->mutable_latency()->set_p99_ms(45.3);
  return p;
}

TEST(RenderProgressLineTest, SaysTheStepRatesLatencyAndErrorsAgainstTheSloHealthAndTime) {
  EXPECT_EQ(RenderProgressLine(RunningTest(), StepInFlight()),
            "step 3 at 400.0 qps: achieved 398.2 qps, p50 12.1/50.0 ms, p99 45.3/250.0 ms, "
            "errors 0.10%/1.00%, WARN, 1m32s elapsed, 18s+ left in step, ~3m10s in test");
}

TEST(RenderProgressLineTest, WithoutLimitsEstimatesOrWindowsItSaysLess) {
  v1::Test test;  // no SLO known
  v1::TestProgress p = StepInFlight();
  p.clear_test_remaining();
  EXPECT_EQ(RenderProgressLine(test, p),
            "step 3 at 400.0 qps: achieved 398.2 qps, p50 12.1 ms, p99 45.3 ms, errors 0.10%, "
            "WARN, 1m32s elapsed, 18s+ left in step");
  p.clear_windows();
  p.set_step_scheduled(0);
  p.set_health_state(v1::HEALTH_STATE_UNSPECIFIED);
  EXPECT_EQ(RenderProgressLine(test, p),
            "step 3 at 400.0 qps: waiting for the first window, 1m32s elapsed, 18s+ left in step");
}

TEST(RenderProgressLineTest, ASettlingStepSaysSoInsteadOfAHealthState) {
  v1::TestProgress p = StepInFlight();
  p.mutable_windows(1)->set_warmup(true);
  p.set_health_state(v1::HEALTH_STATE_UNSPECIFIED);
  const std::string line = RenderProgressLine(RunningTest(), p);
  EXPECT_THAT(line, HasSubstr("errors 0.10%/1.00%, settling, 1m32s elapsed"));
  EXPECT_THAT(line, Not(HasSubstr("WARN")));
  // Settling past the step's plan: its time left is unknown, the test's a lower bound.
  p.mutable_step_remaining()->set_seconds(0);
  EXPECT_THAT(RenderProgressLine(RunningTest(), p),
              HasSubstr("1m32s elapsed, step past its plan, ~3m10s+ in test"));
}

TEST(FormatElapsedTest, SecondsMinutesHours) {
  google::protobuf::Duration d;
  d.set_seconds(42);
  EXPECT_EQ(FormatElapsed(d), "42s");
  d.set_seconds(59);
  d.set_nanos(600'000'000);
  EXPECT_EQ(FormatElapsed(d), "1m00s");
  d.set_seconds(3 * 3600 + 5 * 60 + 7);
  d.set_nanos(0);
  EXPECT_EQ(FormatElapsed(d), "3h05m");
  d.set_seconds(-5);
  EXPECT_EQ(FormatElapsed(d), "0s");
}

TEST(RenderStepsTest, AnInterruptedStepIsShownAsInterruptedNotAsAFailure) {
  v1::Test test = FinishedTest();
  v1::Step* step = test.mutable_steps(2);
  step->set_interrupted(true);
  step->set_passed(false);
  step->set_verdict("interrupted after 3.0s: worker shutting down");
  EXPECT_EQ(RenderStepProgress(*step),
            "step 2: target 300.0 qps, achieved 241.7 qps, p99 950.5 ms, errors 5.25%, "
            "OVERLOADED, interrupted (interrupted after 3.0s: worker shutting down)");
  const std::string table = RenderTestTable(test);
  EXPECT_THAT(table, HasSubstr("interrupted"));
  EXPECT_THAT(table, Not(HasSubstr("FAIL")));
}

TEST(RenderStateLineTest, AQueuedTestSaysWhyItWentBackToTheQueue) {
  v1::Test test;
  test.set_id(9);
  test.set_state(v1::TEST_STATE_QUEUED);
  test.set_attempt(1);
  EXPECT_EQ(RenderStateLine(test), "test 9: QUEUED (attempt 1)");
  test.set_requeue_reason("lease released by worker w1: shutting down");
  EXPECT_EQ(RenderStateLine(test),
            "test 9: QUEUED (attempt 1, requeued: lease released by worker w1: shutting down)");
  EXPECT_THAT(RenderTestTable(test),
              HasSubstr("requeued   lease released by worker w1: shutting down"));
}

TEST(RenderTestCsvTest, OneRowPerStepWithQuotedVerdicts) {
  v1::Test test = FinishedTest();
  test.mutable_steps(2)->set_verdict("p99 950ms > 100ms, \"overloaded\"\nsee windows");
  const std::string csv = RenderTestCsv(test);
  EXPECT_EQ(csv,
            "test_id,attempt,step,target_qps,achieved_qps,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,"
            "error_rate,health,passed,interrupted,verdict\n"
            "42,1,0,100,99.8,4.25,0,12.5,0,20.75,0,HEALTHY,true,false,p99 12.5ms <= 100ms\n"
            "42,1,1,200,199.1,6.5,0,48,0,70,0.001,WARN,true,false,ok\n"
            "42,1,2,300,241.7,80,0,950.5,0,1200,0.0525,OVERLOADED,false,false,"
            "\"p99 950ms > 100ms, \"\"overloaded\"\"\nsee windows\"\n");
  v1::Test queued;
  queued.set_id(9);
  EXPECT_EQ(RenderTestCsv(queued).find('\n'), RenderTestCsv(queued).size() - 1);  // header only
}

TEST(RenderTestListCsvTest, OneRowPerTestAndEmptyCellsWithoutAResult) {
  v1::ListTestsResponse list;
  *list.add_tests() = FinishedTest();
  v1::Test* queued = list.add_tests();
  queued->set_id(43);
  queued->set_state(v1::TEST_STATE_QUEUED);
  queued->mutable_spec()->set_model("bert, large");
  queued->mutable_spec()->mutable_adaptive()->set_max_qps(10);
  EXPECT_EQ(RenderTestListCsv(list),
            "id,state,model,version,attempt,max_sustainable_qps,at_least,confidence_low_qps,"
            "confidence_high_qps,converged,created,strategy\n"
            "42,SUCCEEDED,resnet50,v3,1,200,false,0,0,true,2023-11-14T22:13:20+00:00,sweep\n"
            "43,QUEUED,\"bert, large\",,0,,,,,,,adaptive\n");
}

TEST(RenderModelCsvTest, OneRowPerModelVersion) {
  v1::ListModelsResponse list;
  v1::Model* model = list.add_models();
  model->set_name("resnet50");
  model->set_version("v3");
  model->set_protocol(v1::PROTOCOL_OPENAI_CHAT);
  model->add_endpoints("http://a:1");
  model->add_endpoints("http://b:2");
  model->mutable_slo()->mutable_p99_latency()->set_nanos(100'500'000);
  model->mutable_hardware()->set_accelerator("nvidia-l40");
  model->mutable_hardware()->set_accelerator_count(2);
  const std::string header =
      "name,version,protocol,endpoints,served_name,framework,p99_ms,p50_ms,max_error_rate,"
      "accelerator,accelerator_count,pool,created\n";
  const std::string row =
      "resnet50,v3,openai_chat,http://a:1 http://b:2,,,100.5,0,0,nvidia-l40,2,,\n";
  EXPECT_EQ(RenderModelListCsv(list), header + row);
  EXPECT_EQ(RenderModelCsv(*model), header + row);
}

TEST(RenderTokenListCsvTest, NoSecretsAndRevocationTime) {
  v1::ListTokensResponse list;
  v1::Token* token = list.add_tokens();
  token->set_id(2);
  token->set_name("old-ci");
  token->set_role(v1::ROLE_SUBMITTER);
  token->mutable_revoke_time()->set_seconds(1700000000);
  token->set_team("vision");
  EXPECT_EQ(RenderTokenListCsv(list),
            "id,name,role,created,revoked,team\n"
            "2,old-ci,submitter,,2023-11-14T22:13:20+00:00,vision\n");
}

TEST(RenderTokenListTableTest, ShowsEachTokensTeam) {
  v1::ListTokensResponse list;
  v1::Token* token = list.add_tokens();
  token->set_id(7);
  token->set_name("ci");
  token->set_role(v1::ROLE_SUBMITTER);
  token->set_team("vision");
  EXPECT_EQ(RenderTokenListTable(list),
            "ID     NAME                     ROLE       TEAM             STATE\n"
            "7      ci                       submitter  vision           valid\n");
}

TEST(RenderYamlTest, TheJsonObjectAsYaml) {
  v1::Test test = FinishedTest();
  test.set_error("yes");  // a YAML 1.1 bool unless quoted
  const std::string yaml = RenderYaml(test);
  EXPECT_THAT(yaml, HasSubstr("id: \"42\"\n"));  // int64 stays a string, as in the JSON
  EXPECT_THAT(yaml, HasSubstr("state: TEST_STATE_SUCCEEDED\n"));
  EXPECT_THAT(yaml, HasSubstr("error: \"yes\"\n"));
  EXPECT_THAT(yaml, HasSubstr("steps:\n  - index: 0\n    target_qps: 100\n"));
  EXPECT_THAT(yaml, HasSubstr("    latency:\n      p50_ms: 4.25\n"));
  EXPECT_THAT(yaml, HasSubstr("  max_sustainable_qps: 200\n"));
  EXPECT_THAT(yaml, HasSubstr("create_time: \"2023-11-14T22:13:20Z\"\n"));
}

}  // namespace
}  // namespace vanguard::cli
