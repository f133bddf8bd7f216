#include "orchestrator/cli/report_html.h"

#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

TEST(ReportHtmlTest, RejectsNoSubjectsAndThree) {
  EXPECT_EQ(RenderReportHtml({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<ReportSubject> three(3);
  EXPECT_EQ(RenderReportHtml(three, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::cli
