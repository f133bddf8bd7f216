// Tests of gates.h: each gate's pass and failure, the line that says why, and that a test that
// did not succeed fails both.
#include "orchestrator/cli/gates.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::cli {
namespace {

using ::testing::HasSubstr;

v1::Test Finished(int64_t id, const std::string& version, double qps, double low, double high,
                  bool at_least = false) {
  v1::Test test;
  test.set_id(id);
  test.set_state(v1::TEST_STATE_SUCCEEDED);
  test.mutable_model()->set_name("resnet50");
  test.mutable_model()->set_version(version);
  test.mutable_result()->set_max_sustainable_qps(qps);
  test.mutable_result()->set_confidence_low_qps(low);
  test.mutable_result()->set_confidence_high_qps(high);
  test.mutable_result()->set_at_least(at_least);
  return test;
}

TEST(FailBelowTest, PassesAtOrAboveTheThreshold) {
  GateVerdict v = JudgeFailBelow(Finished(8, "v2", 300, 300, 350), 250);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.line, "gate --fail_below=250: passed: max sustainable 300.0 qps >= 250.0 qps");
  EXPECT_TRUE(JudgeFailBelow(Finished(8, "v2", 250, 250, 300), 250).passed);
  v = JudgeFailBelow(Finished(8, "v2", 400, 400, 0, /*at_least=*/true), 250);
  EXPECT_TRUE(v.passed);  // at least 400 is at least 250
  EXPECT_THAT(v.line, HasSubstr("max sustainable at least 400.0 qps >= 250.0 qps"));
}

TEST(FailBelowTest, FailsBelowTheThreshold) {
  const GateVerdict v = JudgeFailBelow(Finished(8, "v2", 200, 200, 250), 250.5);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.line,
            "gate --fail_below=250.5: FAILED: max sustainable 200.0 qps is below 250.5 qps");
}

TEST(FailBelowTest, AnAtLeastResultBelowTheThresholdFails) {
  const GateVerdict v = JudgeFailBelow(Finished(8, "v2", 200, 200, 0, /*at_least=*/true), 250);
  EXPECT_FALSE(v.passed);
  EXPECT_THAT(v.line, HasSubstr("FAILED: the capacity is only known to be at least 200.0 qps "
                                "(the top of the range held), below 250.0 qps"));
}

TEST(FailBelowTest, ATestThatDidNotSucceedFails) {
  v1::Test failed = Finished(8, "v2", 300, 300, 350);
  failed.set_state(v1::TEST_STATE_FAILED);
  GateVerdict v = JudgeFailBelow(failed, 250);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.line, "gate --fail_below=250: FAILED: test 8 ended FAILED");
  v1::Test no_result = Finished(8, "v2", 300, 300, 350);
  no_result.clear_result();
  EXPECT_THAT(JudgeFailBelow(no_result, 250).line, HasSubstr("test 8 has no result"));
}

TEST(RegressionTest, FailsWhenLowerByMoreThanAllowedAndBeyondTheIntervals) {
  // Baseline in [300, 330), new in [270, 300): 10% lower, the intervals only touch at 300,
  // which the new test failed.
  const GateVerdict v =
      JudgeRegression(Finished(20, "v2", 270, 270, 300), Finished(19, "v1", 300, 300, 330), 5);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.line,
            "gate --fail_if_regressed=5%: FAILED: 270.0 qps is 10.0% below test 19's 300.0 qps "
            "(resnet50/v1), more than the 5% allowed and beyond both tests' confidence "
            "intervals");
}

TEST(RegressionTest, PassesWithinTheAllowedDrop) {
  // (280 - 290) / 290 = -3.4%.
  const GateVerdict v =
      JudgeRegression(Finished(20, "v2", 280, 280, 300), Finished(18, "v2", 290, 290, 310), 5);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.line,
            "gate --fail_if_regressed=5%: passed: 280.0 qps is 3.4% below test 18's 290.0 qps "
            "(resnet50/v2), within the 5% allowed");
  EXPECT_THAT(
      JudgeRegression(Finished(20, "v2", 330, 330, 360), Finished(18, "v2", 300, 300, 330), 5).line,
      HasSubstr("passed: 330.0 qps is 10.0% above test 18's"));
}

TEST(RegressionTest, PassesALargerDropWithinTheNoise) {
  // 10% lower, but [270, 320) and [300, 330) overlap.
  GateVerdict v =
      JudgeRegression(Finished(20, "v2", 270, 270, 320), Finished(19, "v2", 300, 300, 330), 5);
  EXPECT_TRUE(v.passed);
  EXPECT_THAT(v.line, HasSubstr("270.0 qps is 10.0% below test 19's 300.0 qps (resnet50/v2), "
                                "but within the noise (the confidence intervals overlap)"));
  // A baseline without an interval cannot show the drop is beyond the noise.
  v = JudgeRegression(Finished(20, "v2", 270, 270, 280), Finished(19, "v2", 300, 0, 0), 5);
  EXPECT_TRUE(v.passed);
  EXPECT_THAT(v.line, HasSubstr("a test states no confidence interval"));
}

TEST(RegressionTest, NoBaselinePassesAndAFailedTestFails) {
  GateVerdict v = JudgeRegression(Finished(20, "v2", 270, 270, 300), std::nullopt, 5);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.line,
            "gate --fail_if_regressed=5%: passed: no earlier succeeded test of resnet50/v2 or "
            "its model to compare with");
  v1::Test cancelled = Finished(20, "v2", 0, 0, 0);
  cancelled.set_state(v1::TEST_STATE_CANCELLED);
  v = JudgeRegression(cancelled, Finished(19, "v2", 300, 300, 330), 2.5);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.line, "gate --fail_if_regressed=2.5%: FAILED: test 20 ended CANCELLED");
}

}  // namespace
}  // namespace vanguard::cli
