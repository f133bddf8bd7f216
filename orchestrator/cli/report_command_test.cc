// Tests of `vanguard report` against the generated MockOrchestratorStub: what it fetches, the
// page it writes and where, the path it prints, and the files it refuses to overwrite.
#include "orchestrator/cli/report_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/testing/command_test.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Return;
using ::testing::StartsWith;

v1::Test TestWithSteps(int64_t id) {
  v1::Test test;
  test.set_id(id);
  test.set_state(v1::TEST_STATE_SUCCEEDED);
  test.mutable_spec()->set_model("resnet50");
  test.mutable_model()->set_name("resnet50");
  test.mutable_model()->set_version("v3");
  for (int i = 0; i < 3; ++i) {
    v1::Step* step = test.add_steps();
    step->set_index(i);
    step->set_attempt(1);
    step->set_target_qps(100 * (i + 1));
    step->set_achieved_qps(99 * (i + 1));
    step->mutable_latency()->set_p99_ms(10 * (i + 1));
    step->set_passed(i < 2);
  }
  test.mutable_result()->set_max_sustainable_qps(200);
  return test;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class ReportCommandTest : public CommandTest {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/report_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `vanguard report ARGS` with the given flags against the mock.
  int Report(const std::vector<std::string>& args, const GivenFlags& flags = {}) {
    std::vector<std::string> words = {"report"};
    words.insert(words.end(), args.begin(), args.end());
    return RunCommand(words, flags);
  }

  void ServeTests() {
    EXPECT_CALL(stub_, GetTest(_, _, _))
        .WillRepeatedly(Invoke([](grpc::ClientContext*, const v1::GetTestRequest& request,
                                  v1::GetTestResponse* response) {
          *response->mutable_test() = TestWithSteps(request.id());
          return grpc::Status::OK;
        }));
  }

  std::string dir_;
};

TEST_F(ReportCommandTest, WritesThePageAndPrintsItsPath) {
  ServeTests();
  v1::GetModelRequest asked;
  v1::Model registered;
  registered.set_name("resnet50");
  registered.set_version("v3");
  registered.set_framework("onnx-framework-marker");
  EXPECT_CALL(stub_, GetModel(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::GetModelRequest& request,
                           v1::GetModelResponse* response) {
        asked = request;
        *response->mutable_model() = registered;
        return grpc::Status::OK;
      }));
  const std::string path = dir_ + "/page.html";
  EXPECT_EQ(Report({"12"}, {{"o", path}}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), path + "\n");
  EXPECT_EQ(asked.name(), "resnet50");
  EXPECT_EQ(asked.version(), "v3");
  const std::string html = ReadAll(path);
  EXPECT_THAT(html, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("id=\"search\""));
  EXPECT_THAT(html, HasSubstr("onnx-framework-marker"));  // the registry entry reached the page
}

TEST_F(ReportCommandTest, TwoTestsAndAModelNoLongerRegistered) {
  ServeTests();
  EXPECT_CALL(stub_, GetModel(_, _, _))
      .Times(2)
      .WillRepeatedly(Return(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such model")));
  const std::string path = dir_ + "/" + DefaultReportPath({12, 15});
  EXPECT_EQ(Report({"12", "15"}, {{"o", path}}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  EXPECT_THAT(ReadAll(path), HasSubstr("<!DOCTYPE html>"));
}

TEST_F(ReportCommandTest, OtherRpcErrorsExitOneAndWriteNothing) {
  ServeTests();
  EXPECT_CALL(stub_, GetModel(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no")));
  const std::string path = dir_ + "/page.html";
  EXPECT_EQ(Report({"12"}, {{"o", path}}), kExitRpcError);
  EXPECT_EQ(err_.str(), "error: PERMISSION_DENIED: no\n");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ReportCommandTest, AWindowStepThatIsNoStepIsAUsageError) {
  ServeTests();
  EXPECT_CALL(stub_, GetModel(_, _, _)).WillOnce(Return(grpc::Status::OK));
  EXPECT_EQ(Report({"12"}, {{"o", dir_ + "/page.html"}, {"window_step", "7"}}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("error: "));
}

TEST_F(ReportCommandTest, RefusesToWriteOverADirectoryALinkOrAFifo) {
  ServeTests();
  EXPECT_CALL(stub_, GetModel(_, _, _)).WillRepeatedly(Return(grpc::Status::OK));
  const std::string target = dir_ + "/target.html";
  std::ofstream(target) << "keep me";
  const std::string link = dir_ + "/link.html";
  std::filesystem::create_symlink(target, link);
  const std::string fifo = dir_ + "/fifo.html";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {dir_, link, fifo}) {
    err_.str("");
    EXPECT_EQ(Report({"12"}, {{"o", path}}), kExitRpcError) << path;
    EXPECT_THAT(err_.str(), HasSubstr("exists and is not a regular file")) << path;
  }
  EXPECT_EQ(ReadAll(target), "keep me");
  EXPECT_EQ(out_.str(), "");
}

TEST(WriteReportFileTest, ReplacesARegularFileWhole) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/report_replace_", getpid(), ".html");
  ASSERT_TRUE(WriteReportFile(path, "a much longer first version").ok());
  ASSERT_TRUE(WriteReportFile(path, "short").ok());
  EXPECT_EQ(ReadAll(path), "short");
  std::filesystem::remove(path);
  EXPECT_FALSE(WriteReportFile("/nonexistent-dir/x.html", "x").ok());
}

TEST(ReportArgsTest, DefaultPathAndUsageErrors) {
  EXPECT_EQ(DefaultReportPath({12}), "report-12.html");
  EXPECT_EQ(DefaultReportPath({12, 15}), "report-12-15.html");
  const auto parse = [](const std::vector<std::string>& words, const GivenFlags& flags) {
    absl::StatusOr<CommandWords> command = IdentifyCommand(words);
    return command.ok() ? ParseCommand(*command, flags, Environment{}).status() : command.status();
  };
  absl::StatusOr<CommandWords> command = IdentifyCommand({"report", "12"});
  ASSERT_TRUE(command.ok());
  absl::StatusOr<ParsedCommand> parsed = ParseCommand(*command, {}, Environment{});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Options<ReportCommandOptions>().path, "report-12.html");
  EXPECT_EQ(parsed->Options<ReportCommandOptions>().window_step, -1);
  EXPECT_THAT(std::string(parse({"report"}, {}).message()), HasSubstr("needs a test ID"));
  EXPECT_THAT(std::string(parse({"report", "1", "2", "3"}, {}).message()),
              HasSubstr("unexpected argument '3'"));
  EXPECT_THAT(std::string(parse({"report", "1"}, {{"o", ""}}).message()),
              HasSubstr("-o: must not be empty"));
  EXPECT_THAT(std::string(parse({"report", "1"}, {{"window_step", "-1"}}).message()),
              HasSubstr("--window_step"));
  EXPECT_THAT(std::string(parse({"report", "1"}, {{"output", "json"}}).message()),
              HasSubstr("'json' is not printed by 'report'"));
}

}  // namespace
}  // namespace vanguard::cli
