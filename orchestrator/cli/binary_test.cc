// Runs the real `vanguard` binary against an in-process fake Orchestrator on a loopback port
// (port 0): checks main.cc's wiring of flags, environment, exit codes and output, which the
// library tests cannot see.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;
using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;

// Test 1 has finished; test 2 is what SubmitTest creates and has succeeded when polled.
class FakeOrchestrator final : public v1::Orchestrator::Service {
 public:
  grpc::Status GetTest(grpc::ServerContext* context, const v1::GetTestRequest* request,
                       v1::GetTestResponse* response) override {
    RecordAuthorization(*context);
    if (request->id() != 1 && request->id() != 2) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("test ", request->id()));
    }
    *response->mutable_test() = FinishedTest(request->id());
    return grpc::Status::OK;
  }

  // No model is registered any more: the report goes without its registry entry.
  grpc::Status GetModel(grpc::ServerContext*, const v1::GetModelRequest* request,
                        v1::GetModelResponse*) override {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("model ", request->name()));
  }

  grpc::Status SubmitTest(grpc::ServerContext* context, const v1::SubmitTestRequest* request,
                          v1::SubmitTestResponse* response) override {
    RecordAuthorization(*context);
    {
      absl::MutexLock lock(&mu_);
      last_submit_ = *request;
    }
    v1::Test* test = response->mutable_test();
    test->set_id(2);
    test->set_state(v1::TEST_STATE_QUEUED);
    *test->mutable_spec() = request->spec();
    return grpc::Status::OK;
  }

  std::string authorization() {
    absl::MutexLock lock(&mu_);
    return authorization_;
  }
  v1::SubmitTestRequest last_submit() {
    absl::MutexLock lock(&mu_);
    return last_submit_;
  }

 private:
  static v1::Test FinishedTest(int64_t id) {
    v1::Test test;
    test.set_id(id);
    test.set_state(v1::TEST_STATE_SUCCEEDED);
    test.set_attempt(1);
    test.mutable_spec()->set_model("resnet50");
    v1::Step* step = test.add_steps();
    step->set_target_qps(100);
    step->set_achieved_qps(99.5);
    step->mutable_latency()->set_p99_ms(12.5);
    step->set_health_state(v1::HEALTH_STATE_HEALTHY);
    step->set_passed(true);
    test.mutable_result()->set_max_sustainable_qps(100);
    return test;
  }

  void RecordAuthorization(const grpc::ServerContext& context) {
    absl::MutexLock lock(&mu_);
    auto it = context.client_metadata().find("authorization");
    authorization_ = it == context.client_metadata().end()
                         ? ""
                         : std::string(it->second.data(), it->second.size());
  }

  absl::Mutex mu_;
  std::string authorization_ ABSL_GUARDED_BY(mu_);
  v1::SubmitTestRequest last_submit_ ABSL_GUARDED_BY(mu_);
};

class VanguardBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("VANGUARD_TOKEN");
    unsetenv("VANGUARD_ORCHESTRATOR");
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::string Address() const { return absl::StrCat("127.0.0.1:", port_); }

  RunResult Vanguard(const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {}) {
    absl::StatusOr<RunResult> result = RunBinary("vanguard", args, env);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : RunResult{};
  }

  FakeOrchestrator service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(VanguardBinaryTest, GetJsonParsesAndCarriesTheBearerToken) {
  RunResult result = Vanguard({"get", "1", "--output", "json"},
                              {"VANGUARD_ORCHESTRATOR=" + Address(), "VANGUARD_TOKEN=tok-1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  v1::Test test;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(result.out, &test).ok()) << result.out;
  EXPECT_EQ(test.id(), 1);
  EXPECT_EQ(test.state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_THAT(result.out, HasSubstr("\"max_sustainable_qps\": 100"));
  EXPECT_EQ(service_.authorization(), "Bearer tok-1");
}

TEST_F(VanguardBinaryTest, RpcErrorExitsOneWithCode) {
  RunResult result = Vanguard({"get", "9", "--orchestrator=" + Address()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "error: NOT_FOUND: test 9\n");
  EXPECT_EQ(service_.authorization(), "");
}

TEST_F(VanguardBinaryTest, SubmitWaitSendsFlagsAndExitsZeroWhenSucceeded) {
  RunResult result =
      Vanguard({"submit", "--orchestrator=" + Address(), "--model=resnet50", "--version", "v3",
                "--rates=100,200", "--step_duration=2s", "--wait"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const v1::SubmitTestRequest sent = service_.last_submit();
  EXPECT_EQ(sent.spec().model(), "resnet50");
  EXPECT_EQ(sent.spec().model_version(), "v3");
  ASSERT_EQ(sent.spec().sweep().rates_qps_size(), 2);
  EXPECT_EQ(sent.spec().step_duration().seconds(), 2);
  EXPECT_THAT(result.err, HasSubstr("submitted test 2"));
  EXPECT_THAT(result.err, HasSubstr("step 0: target 100.0 qps"));
  EXPECT_THAT(result.out, HasSubstr("SUCCEEDED"));
}

TEST_F(VanguardBinaryTest, FailBelowGateExitsFour) {
  // Test 2 ends SUCCEEDED with a max sustainable rate of 100 qps.
  RunResult failed = Vanguard({"submit", "--orchestrator=" + Address(), "--model=resnet50",
                               "--rates=100", "--wait", "--fail_below=150", "--output=json"});
  EXPECT_EQ(failed.exit_code, 4) << failed.err;
  EXPECT_THAT(failed.err, HasSubstr("gate --fail_below=150: FAILED: max sustainable 100.0 qps"));
  v1::Test test;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(failed.out, &test).ok()) << failed.out;

  RunResult passed = Vanguard({"submit", "--orchestrator=" + Address(), "--model=resnet50",
                               "--rates=100", "--wait", "--fail_below=100"});
  EXPECT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_THAT(passed.err, HasSubstr("gate --fail_below=100: passed"));
}

TEST_F(VanguardBinaryTest, ReportWritesThePageWhereDashOSays) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/binary_report_", getpid(), ".html");
  RunResult result = Vanguard({"report", "1", "-o", path, "--orchestrator=" + Address()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, path + "\n");
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  EXPECT_EQ(first_line, "<!DOCTYPE html>");
  std::remove(path.c_str());
}

TEST_F(VanguardBinaryTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"frobnicate"},
        std::vector<std::string>{"get", "abc"}, std::vector<std::string>{"get", "1", "--bogus"},
        std::vector<std::string>{"submit", "--model=m", "--rates=1", "--wait=maybe"},
        std::vector<std::string>{"submit", "--model=m", "--rates=1", "--step_duration=10"}}) {
    RunResult result = Vanguard(args);
    EXPECT_EQ(result.exit_code, 2) << ::testing::PrintToString(args) << result.err;
    EXPECT_THAT(result.err, HasSubstr("error: ")) << ::testing::PrintToString(args);
  }
  RunResult result = Vanguard({"submit", "--model=m", "--rates=1", "--step_duration=10"});
  EXPECT_THAT(result.err, HasSubstr("--step_duration"));
}

TEST_F(VanguardBinaryTest, HelpListsCommandsAndFlags) {
  RunResult result = Vanguard({"--help"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* text : {"models register", "submit", "watch ID", "--step_duration",
                           "--orchestrator", "--version", "--request_template"}) {
    EXPECT_THAT(result.out, HasSubstr(text));
  }
}

TEST_F(VanguardBinaryTest, CommandHelpAndCompletionComeFromTheTable) {
  RunResult help = Vanguard({"models", "register", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("Usage: vanguard models register"));
  EXPECT_THAT(help.out, HasSubstr("--request_template='{...}'\n      Request body sent"));
  RunResult bash = Vanguard({"completion", "bash"});
  EXPECT_EQ(bash.exit_code, 0) << bash.err;
  EXPECT_THAT(bash.out, HasSubstr("complete -F _vanguard vanguard"));
}

TEST_F(VanguardBinaryTest, YamlAndCsvOutputs) {
  const std::vector<std::string> env = {"VANGUARD_ORCHESTRATOR=" + Address()};
  RunResult json = Vanguard({"get", "1", "--output=json"}, env);
  RunResult yaml = Vanguard({"get", "1", "--output", "yaml"}, env);
  RunResult csv = Vanguard({"get", "1", "--output=csv"}, env);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(yaml.out, HasSubstr("state: TEST_STATE_SUCCEEDED\n"));
  EXPECT_THAT(csv.out, HasSubstr("\n1,0,0,100,99.5,0,0,12.5,0,0,0,HEALTHY,true,false,\n"));
  // A YAML reader sees the object the JSON output prints.
  absl::StatusOr<RunResult> same = RunBinary(
      "/usr/bin/python3", {"-c",
                           "import json, sys, yaml\n"
                           "print(yaml.safe_load(sys.argv[1]) == json.loads(sys.argv[2]))\n",
                           yaml.out, json.out});
  if (!same.ok() || same->exit_code != 0) GTEST_SKIP() << "python3 with PyYAML is not installed";
  EXPECT_EQ(same->out, "True\n");
}

}  // namespace
}  // namespace vanguard::cli
