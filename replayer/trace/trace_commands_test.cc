// Tests of the `convert` subcommand's function: exit status follows the log's quality.
#include "replayer/trace/trace_commands.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using ::testing::HasSubstr;

std::string WriteLog(absl::string_view name, absl::string_view text) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", name, ".", getpid(), ".jsonl");
  std::ofstream(path) << text;
  return path;
}

TEST(RunConvertTest, CleanLogSucceedsBadLinesAndEmptyLogsFail) {
  std::string out = absl::StrCat(::testing::TempDir(), "/cmd.", getpid(), ".vtr");
  EXPECT_TRUE(RunConvert(WriteLog("clean", "{\"timestamp\":1,\"model\":\"m\"}\n"), out).ok());
  EXPECT_EQ(SummarizeTrace(out)->records, 1);

  absl::Status some_bad =
      RunConvert(WriteLog("somebad", "{\"timestamp\":1,\"model\":\"m\"}\n{oops\n"), out);
  EXPECT_EQ(some_bad.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(some_bad.message(), HasSubstr("1 bad lines skipped"));
  EXPECT_EQ(SummarizeTrace(out)->records, 1);  // the good line is still converted

  EXPECT_EQ(RunConvert(WriteLog("allbad", "{oops\n"), out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(RunConvert("", out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(RunConvert(WriteLog("x", ""), "").message(), HasSubstr("output"));
}

}  // namespace
}  // namespace vanguard::replayer
