// Prometheus text parser: real exporter pages, label escapes, special values, errors.
#include "common/prometheus_text.h"

#include <cmath>

#include "gtest/gtest.h"

namespace vanguard {
namespace {

TEST(PrometheusTextTest, ParsesTritonAndVllmPagesAndSumsOverLabelSets) {
  const char* page =
      "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n"
      "# TYPE nv_gpu_utilization gauge\n"
      "nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.5\n"
      "nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 0.25\n"
      "nv_inference_pending_request_count{model=\"resnet\",version=\"1\"} 3\r\n"
      "\n"
      "vllm:num_requests_waiting{model_name=\"Qwen/Qwen2.5-7B\"} 2.0 1712345678000\n"
      "process_resident_memory_bytes 1.5e+09\n";
  auto samples = ParsePrometheusText(page);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 5u);
  EXPECT_EQ((*samples)[0].labels.at("gpu_uuid"), "GPU-a");
  EXPECT_DOUBLE_EQ(*SumSamples(*samples, "nv_gpu_utilization"), 0.75);
  EXPECT_DOUBLE_EQ(*SumSamples(*samples, "nv_inference_pending_request_count"), 3);
  EXPECT_DOUBLE_EQ(*SumSamples(*samples, "vllm:num_requests_waiting"), 2);
  EXPECT_DOUBLE_EQ(*SumSamples(*samples, "process_resident_memory_bytes"), 1.5e9);
  EXPECT_FALSE(SumSamples(*samples, "vllm:num_requests_running").has_value());
}

TEST(PrometheusTextTest, EscapedLabelValuesAndSpecialValues) {
  auto samples = ParsePrometheusText(
      "m{path=\"C:\\\\x\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",} NaN\n"
      "m{a=\"1\"} +Inf\n"
      "m{a=\"2\"} -Inf\n"
      "n 7\n");
  ASSERT_TRUE(samples.ok()) << samples.status();
  EXPECT_EQ((*samples)[0].labels.at("path"), "C:\\x");
  EXPECT_EQ((*samples)[0].labels.at("q"), "say \"hi\"");
  EXPECT_EQ((*samples)[0].labels.at("nl"), "a\nb");
  EXPECT_TRUE(std::isnan((*samples)[0].value));
  EXPECT_TRUE(std::isinf((*samples)[1].value));
  EXPECT_DOUBLE_EQ(*SumSamples(*samples, "n"), 7);
}

TEST(PrometheusTextTest, MalformedLinesNameTheLine) {
  for (const char* bad : {"ok 1\nm{a=\"1\" 2\n", "ok 1\nm{a=1} 2\n", "ok 1\nm abc\n",
                          "ok 1\n9m 1\n", "ok 1\nm 1 2 3\n"}) {
    auto samples = ParsePrometheusText(bad);
    ASSERT_FALSE(samples.ok()) << bad;
    EXPECT_NE(samples.status().message().find("line 2"), std::string::npos) << bad;
  }
}

TEST(PrometheusTextTest, EmptyPageHasNoSamples) {
  auto samples = ParsePrometheusText("# only a comment\n\n");
  ASSERT_TRUE(samples.ok());
  EXPECT_TRUE(samples->empty());
}

}  // namespace
}  // namespace vanguard
