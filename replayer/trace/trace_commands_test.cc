// Tests of the `convert` subcommand's function (exit status follows the log's quality) and of
// the `trace` subcommands: `trace index` indexes a trace, usage and --help come from the table.
#include "replayer/trace/trace_commands.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replayer/trace/trace_index.h"

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

TEST(TraceSubcommandTest, IndexWritesTheIndexOfATraceThatHasNone) {
  const std::string trace = absl::StrCat(::testing::TempDir(), "/cmd_index.", getpid(), ".vtr");
  {
    auto writer = TraceWriter::Create(trace);
    ASSERT_TRUE(writer.ok());
    for (int i = 0; i < 3; ++i) {
      TraceRecord record;
      record.interarrival_us = 1000;
      record.payload = absl::StrCat(i);
      ASSERT_TRUE((*writer)->Append(record).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ASSERT_EQ(::unlink(TraceIndexPath(trace).c_str()), 0);
  std::ostringstream out, err;
  EXPECT_EQ(RunTraceSubcommand({"index", trace}, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr(absl::StrCat("wrote ", TraceIndexPath(trace), ": 3 records")));
  auto index = TraceIndex::Open(TraceIndexPath(trace));
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE((*index)->Validate().ok());
  EXPECT_EQ((*index)->records(), 3);

  std::ostringstream missing_err;
  EXPECT_EQ(RunTraceSubcommand({"index", trace + ".missing"}, out, missing_err), 1);
  EXPECT_THAT(missing_err.str(), HasSubstr("NOT_FOUND"));
}

TEST(TraceSubcommandTest, UsageAndHelpComeFromTheTable) {
  EXPECT_THAT(TraceSubcommandsUsage(), HasSubstr("vanguard-replayer trace index FILE"));
  std::ostringstream out, err;
  EXPECT_EQ(RunTraceSubcommand({"index", "--help"}, out, err), 0);
  EXPECT_THAT(out.str(), HasSubstr("vanguard-replayer trace index FILE"));
  EXPECT_EQ(RunTraceSubcommand({"--help"}, out, err), 0);
  EXPECT_TRUE(err.str().empty());
  EXPECT_EQ(RunTraceSubcommand({}, out, err), 2);
  EXPECT_EQ(RunTraceSubcommand({"index"}, out, err), 2);
  EXPECT_EQ(RunTraceSubcommand({"index", "a.vtr", "b.vtr"}, out, err), 2);
  std::ostringstream unknown_err;
  EXPECT_EQ(RunTraceSubcommand({"split"}, out, unknown_err), 2);
  EXPECT_THAT(unknown_err.str(), HasSubstr("unknown subcommand \"split\""));
}

}  // namespace
}  // namespace vanguard::replayer
