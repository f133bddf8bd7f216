// Tests of `vanguard compare` against the generated MockOrchestratorStub: which tests it
// fetches (by id, or the latest succeeded test of each version), what it prints in each
// format, and its usage errors and exit codes.
#include "orchestrator/cli/compare_command.h"

#include <sstream>
#include <string>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "orchestrator/cli/testing/command_test.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Return;

v1::Step Step(int index, double rate, double p50, double p99) {
  v1::Step step;
  step.set_index(index);
  step.set_attempt(1);
  step.set_target_qps(rate);
  step.mutable_latency()->set_p50_ms(p50);
  step.mutable_latency()->set_p90_ms(p50 * 2);
  step.mutable_latency()->set_p99_ms(p99);
  step.mutable_latency()->set_max_ms(p99 * 2);
  return step;
}

// A: steps at 100/200/300 qps, capacity in [200, 300). B (v2): steps at 150/250, in [300, 400).
v1::Test TestA() {
  v1::Test test;
  test.set_id(12);
  test.set_state(v1::TEST_STATE_SUCCEEDED);
  test.mutable_model()->set_name("resnet50");
  test.mutable_model()->set_version("v1");
  *test.add_steps() = Step(0, 100, 5, 10);
  *test.add_steps() = Step(1, 200, 6, 20);
  *test.add_steps() = Step(2, 300, 10, 40);
  test.mutable_result()->set_max_sustainable_qps(200);
  test.mutable_result()->set_confidence_low_qps(200);
  test.mutable_result()->set_confidence_high_qps(300);
  return test;
}

v1::Test TestB() {
  v1::Test test;
  test.set_id(15);
  test.set_state(v1::TEST_STATE_SUCCEEDED);
  test.mutable_model()->set_name("resnet50");
  test.mutable_model()->set_version("v2");
  *test.add_steps() = Step(0, 150, 4, 12);
  *test.add_steps() = Step(1, 250, 9, 30);
  test.mutable_result()->set_max_sustainable_qps(300);
  test.mutable_result()->set_confidence_low_qps(300);
  test.mutable_result()->set_confidence_high_qps(400);
  return test;
}

class CompareCommandTest : public CommandTest {
 protected:
  // Runs `vanguard compare ARGS` with the given flags against the mock.
  int Compare(const std::vector<std::string>& args, const GivenFlags& flags = {}) {
    std::vector<std::string> words = {"compare"};
    words.insert(words.end(), args.begin(), args.end());
    return RunCommand(words, flags);
  }

  // GetTest answers with `tests` by id.
  void ServeTests(const std::vector<v1::Test>& tests) {
    EXPECT_CALL(stub_, GetTest(_, _, _))
        .WillRepeatedly(Invoke([tests](grpc::ClientContext*, const v1::GetTestRequest& request,
                                       v1::GetTestResponse* response) {
          for (const v1::Test& test : tests) {
            if (test.id() != request.id()) continue;
            *response->mutable_test() = test;
            return grpc::Status::OK;
          }
          return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such test");
        }));
  }
};

TEST_F(CompareCommandTest, TwoIdsPrintCapacityLatencyAndVerdict) {
  ServeTests({TestA(), TestB()});
  EXPECT_EQ(Compare({"12", "15"}), kExitOk) << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("model                resnet50/v1         resnet50/v2"));
  EXPECT_THAT(out, HasSubstr("capacity             200.0 qps           300.0 qps"));
  EXPECT_THAT(out, HasSubstr("confidence interval  200.0 to 300.0 qps  300.0 to 400.0 qps"));
  // min(300, 250) = 250; A has no step there: halfway between 200 (p99 20) and 300 (p99 40).
  EXPECT_THAT(out, HasSubstr("Latency at 250.0 qps, the highest offered rate both tests measured"));
  EXPECT_THAT(out, HasSubstr("A is interpolated between its steps at 200.0 and 300.0 qps"));
  EXPECT_THAT(out, Not(HasSubstr("B is interpolated")));
  EXPECT_THAT(out, HasSubstr("p99 ms  30.0  30.0"));
  EXPECT_THAT(out, HasSubstr("Verdict: B is higher by 50.0% \u2014 beyond both tests' confidence "
                             "intervals"));
}

TEST_F(CompareCommandTest, VersionsPickTheLatestSucceededTestOfEach) {
  v1::ListTestsRequest listed;
  EXPECT_CALL(stub_, ListTests(_, _, _))
      .WillRepeatedly(Invoke([&listed](grpc::ClientContext*, const v1::ListTestsRequest& request,
                                       v1::ListTestsResponse* response) {
        listed = request;
        for (auto [id, version] : std::vector<std::pair<int, std::string>>{
                 {16, "v3"}, {15, "v2"}, {13, "v2"}, {12, "v1"}, {11, "v1"}}) {
          v1::Test* test = response->add_tests();  // newest first, as ListTests answers
          test->set_id(id);
          test->mutable_model()->set_name("resnet50");
          test->mutable_model()->set_version(version);
        }
        return grpc::Status::OK;
      }));
  ServeTests({TestA(), TestB()});
  EXPECT_EQ(Compare({}, {{"model", "resnet50"}, {"versions", "v1,v2"}}), kExitOk) << err_.str();
  EXPECT_EQ(listed.state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_EQ(listed.model(), "resnet50");
  EXPECT_EQ(listed.page_size(), kSucceededTestsSearched);
  EXPECT_THAT(out_.str(), HasSubstr("test                 12                  15"));
}

TEST_F(CompareCommandTest, AVersionWithoutASucceededTestIsNotFound) {
  EXPECT_CALL(stub_, ListTests(_, _, _)).WillRepeatedly(Return(grpc::Status::OK));
  EXPECT_EQ(Compare({}, {{"model", "bert"}, {"versions", "v1,v9"}}), kExitRpcError);
  EXPECT_THAT(err_.str(),
              HasSubstr("error: NOT_FOUND: no succeeded test of bert/v1 among the model's 1000 "
                        "newest succeeded tests"));
}

TEST_F(CompareCommandTest, ATestWithoutAResultExitsThree) {
  v1::Test running = TestB();
  running.set_state(v1::TEST_STATE_RUNNING);
  running.clear_result();
  ServeTests({TestA(), running});
  EXPECT_EQ(Compare({"12", "15"}), kExitTestNotSucceeded);
  EXPECT_THAT(err_.str(), HasSubstr("error: test 15 has no result (RUNNING)"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(CompareCommandTest, RpcErrorExitsOne) {
  ServeTests({TestA()});
  EXPECT_EQ(Compare({"12", "99"}), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: NOT_FOUND: no such test\n");
}

TEST_F(CompareCommandTest, JsonAndYamlCarryTheSameComparison) {
  ServeTests({TestA(), TestB()});
  EXPECT_EQ(Compare({"12", "15"}, {{"output", "json"}}), kExitOk);
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["a"]["id"], "12");
  EXPECT_EQ(json["b"]["version"], "v2");
  EXPECT_EQ(json["a"]["confidence_high_qps"], 300);
  EXPECT_EQ(json["capacity_change_pct"], 50);
  EXPECT_EQ(json["beyond_confidence_intervals"], true);
  EXPECT_EQ(json["latency_at_rate"]["rate_qps"], 250);
  EXPECT_EQ(json["latency_at_rate"]["a"]["interpolated"], true);
  EXPECT_EQ(json["latency_at_rate"]["a"]["between_qps"], nlohmann::json::array({200, 300}));
  EXPECT_EQ(json["latency_at_rate"]["b"]["p99_ms"], 30);

  out_.str("");
  EXPECT_EQ(Compare({"12", "15"}, {{"output", "yaml"}}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("a:\n  id: \"12\"\n  model: resnet50\n  version: v1\n"));
  EXPECT_THAT(out_.str(), HasSubstr("beyond_confidence_intervals: true\n"));
}

TEST_F(CompareCommandTest, UsageErrors) {
  EXPECT_EQ(Compare({"12"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("'compare' needs two test IDs"));
  EXPECT_EQ(Compare({}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("or --model=M --versions=V1,V2"));
  EXPECT_EQ(Compare({"12", "15"}, {{"model", "m"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("not both"));
  EXPECT_EQ(Compare({}, {{"model", "m"}, {"versions", "v1"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--versions: 'v1' must name two versions"));
  EXPECT_EQ(Compare({}, {{"versions", "v1,v2"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--model: is required with --versions"));
  EXPECT_EQ(Compare({"12", "x"}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("'x' is not a test id"));
  EXPECT_EQ(Compare({"12", "15"}, {{"output", "csv"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("'csv' is not printed by 'compare'"));
}

}  // namespace
}  // namespace vanguard::cli
