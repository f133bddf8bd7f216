// Unit tests of the orchestrator's Prometheus metrics, read from the registry.
#include "orchestrator/metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace vanguard {
namespace {

std::string Scrape(const OrchestratorMetrics& metrics) {
  return prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
}

TEST(OrchestratorMetricsTest, CountsRpcsByMethodAndCodeAndTimesThem) {
  OrchestratorMetrics metrics;
  metrics.RecordRpc("LeaseTest", grpc::StatusCode::OK, absl::Milliseconds(2));
  metrics.RecordRpc("LeaseTest", grpc::StatusCode::OK, absl::Milliseconds(3));
  metrics.RecordRpc("SubmitTest", grpc::StatusCode::PERMISSION_DENIED, absl::Milliseconds(1));
  const std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_rpcs_total{code=\"OK\",method=\"LeaseTest\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_rpcs_total{code=\"PERMISSION_DENIED\","
                      "method=\"SubmitTest\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_rpc_duration_seconds_count{method=\"LeaseTest\"} 2"),
            std::string::npos)
      << text;
}

TEST(OrchestratorMetricsTest, OpenWatchStreamsIsAGauge) {
  OrchestratorMetrics metrics;
  EXPECT_NE(Scrape(metrics).find("vanguard_orchestrator_watch_streams 0"), std::string::npos);
  metrics.SetOpenWatchStreams(3);
  metrics.SetOpenWatchStreams(2);
  const std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_watch_streams 2"), std::string::npos) << text;
}

TEST(OrchestratorMetricsTest, QueueDepthGaugesDropToZeroWhenARowDisappears) {
  OrchestratorMetrics metrics;
  metrics.SetQueueDepth({{"queued", 5, 7}, {"running", 0, 2}});
  std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_queue_tests{priority=\"5\",state=\"queued\"} 7"),
            std::string::npos)
      << text;
  metrics.SetQueueDepth({{"running", 0, 3}});
  text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_queue_tests{priority=\"5\",state=\"queued\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_queue_tests{priority=\"0\",state=\"running\"} 3"),
            std::string::npos)
      << text;
}

TEST(OrchestratorMetricsTest, ReleasedLeasesByOutcome) {
  OrchestratorMetrics metrics;
  using Outcome = OrchestratorMetrics::ReleaseOutcome;
  metrics.RecordReleased(Outcome::kRequeued);
  metrics.RecordReleased(Outcome::kRequeued);
  metrics.RecordReleased(Outcome::kCancelled);
  metrics.RecordReleased(Outcome::kFailed);
  const std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_released_leases_total{outcome=\"requeued\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_released_leases_total{outcome=\"cancelled\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_released_leases_total{outcome=\"failed\"} 1"),
            std::string::npos)
      << text;
}

TEST(OrchestratorMetricsTest, ReapedLeasesAndLeaseWait) {
  OrchestratorMetrics metrics;
  metrics.RecordReaped(2, 1, 0);
  metrics.RecordLeaseWait(absl::Milliseconds(40));
  const std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_reaped_leases_total{outcome=\"requeued\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_lease_wait_seconds_count 1"), std::string::npos)
      << text;
}

TEST(OrchestratorMetricsTest, ScheduledTestsAndWebhookAttempts) {
  OrchestratorMetrics metrics;
  metrics.RecordScheduled(3);
  metrics.RecordWebhookAttempts(1, 2, 0);
  metrics.RecordWebhookAttempts(1, 0, 1);
  const std::string text = Scrape(metrics);
  EXPECT_NE(text.find("vanguard_orchestrator_scheduled_tests_total 3"), std::string::npos) << text;
  EXPECT_NE(text.find("vanguard_orchestrator_webhook_attempts_total{outcome=\"delivered\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_webhook_attempts_total{outcome=\"retrying\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vanguard_orchestrator_webhook_attempts_total{outcome=\"failed\"} 1"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace vanguard
