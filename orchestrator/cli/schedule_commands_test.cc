// Tests of `vanguard schedules ...` and `vanguard webhooks ...` against the generated
// MockOrchestratorStub: what each sends, what it prints (never a webhook's secret), and
// usage errors.
#include "orchestrator/cli/schedule_commands.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/cli/testing/command_test.h"

namespace vanguard::cli {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Not;

std::string WriteTempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

class ScheduleCommandsTest : public CommandTest {};

TEST_F(ScheduleCommandsTest, SetSendsTheSpecFileAndTriggersAndPrintsTheSchedule) {
  const std::string spec = WriteTempFile(
      "schedule_spec.json", R"({"sweep": {"rates_qps": [10, 20]}, "step_duration": "30s"})");
  v1::SetScheduleRequest sent;
  EXPECT_CALL(stub_, SetSchedule(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::SetScheduleRequest& request,
                           v1::SetScheduleResponse* response) {
        sent = request;
        v1::TestSchedule& s = *response->mutable_schedule();
        s = request.schedule();
        s.set_id(3);
        s.set_name("default");
        s.set_team("vision");
        s.mutable_next_run_time()->set_seconds(1'796'234'400);  // 2026-12-02 18:00 UTC
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"schedules", "set"}, {{"model", "resnet50"},
                                              {"on_new_version", "true"},
                                              {"every", "6h"},
                                              {"spec_file", spec}}),
            kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.schedule().model(), "resnet50");
  EXPECT_TRUE(sent.schedule().on_new_version());
  EXPECT_EQ(sent.schedule().interval().seconds(), 6 * 3600);
  ASSERT_EQ(sent.schedule().spec().sweep().rates_qps_size(), 2);
  EXPECT_EQ(sent.schedule().spec().step_duration().seconds(), 30);
  EXPECT_THAT(out_.str(), HasSubstr("ID  MODEL     NAME     TEAM    ON NEW VERSION  EVERY"));
  EXPECT_THAT(out_.str(), HasSubstr("3  resnet50  default  vision  yes"));
  EXPECT_THAT(out_.str(), HasSubstr("6h  2026-12-02 18:00"));
}

TEST_F(ScheduleCommandsTest, SetSendsACronExpressionAndPrintsIt) {
  const std::string spec = WriteTempFile("schedule_spec3.json", R"({"sweep": {"rates_qps": [1]}})");
  v1::SetScheduleRequest sent;
  EXPECT_CALL(stub_, SetSchedule(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::SetScheduleRequest& request,
                           v1::SetScheduleResponse* response) {
        sent = request;
        *response->mutable_schedule() = request.schedule();
        response->mutable_schedule()->set_id(4);
        response->mutable_schedule()->mutable_next_run_time()->set_seconds(
            1'796'956'200);  // 2026-12-11 02:30 UTC
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"schedules", "set"},
                       {{"model", "resnet50"}, {"cron", "30 2 * * 1-5"}, {"spec_file", spec}}),
            kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.schedule().cron(), "30 2 * * 1-5");
  EXPECT_FALSE(sent.schedule().has_interval());
  EXPECT_FALSE(sent.schedule().on_new_version());
  EXPECT_THAT(out_.str(), HasSubstr("cron 30 2 * * 1-5  2026-12-11 02:30"));
}

TEST_F(ScheduleCommandsTest, SetTakesAnIntervalOrACronNotBoth) {
  const std::string spec = WriteTempFile("schedule_spec4.json", R"({"sweep": {"rates_qps": [1]}})");
  EXPECT_EQ(RunCommand({"schedules", "set"},
                       {{"model", "m"}, {"every", "6h"}, {"cron", "@daily"}, {"spec_file", spec}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--cron"));
  EXPECT_THAT(usage_error_, HasSubstr("not both"));
}

TEST_F(ScheduleCommandsTest, SetNeedsATriggerAndASpecFile) {
  const std::string spec = WriteTempFile("schedule_spec2.json", R"({"sweep": {"rates_qps": [1]}})");
  EXPECT_EQ(RunCommand({"schedules", "set"}, {{"model", "m"}, {"spec_file", spec}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--every"));
  EXPECT_EQ(RunCommand({"schedules", "set"}, {{"model", "m"}, {"on_new_version", "true"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--spec_file"));
}

TEST_F(ScheduleCommandsTest, DeleteSendsTheId) {
  int64_t sent = 0;
  EXPECT_CALL(stub_, DeleteSchedule(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::DeleteScheduleRequest& request,
                           v1::DeleteScheduleResponse*) {
        sent = request.id();
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"schedules", "delete", "7"}), kExitOk) << err_.str() << usage_error_;
  EXPECT_EQ(sent, 7);
  EXPECT_EQ(RunCommand({"schedules", "delete", "x"}), kExitUsage);
}

TEST_F(ScheduleCommandsTest, WebhooksAddReadsTheSecretFromAFileAndNeverPrintsIt) {
  const std::string secret =
      WriteTempFile("webhook_secret", "  a-shared-secret-of-32-characters\n");
  v1::AddWebhookRequest sent;
  EXPECT_CALL(stub_, AddWebhook(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::AddWebhookRequest& request,
                           v1::AddWebhookResponse* response) {
        sent = request;
        v1::Webhook& w = *response->mutable_webhook();
        w.set_id(2);
        w.set_team("vision");
        w.set_model(request.webhook().model());
        w.set_url(request.webhook().url());
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"webhooks", "add"}, {{"model", "resnet50"},
                                             {"url", "http://hooks.internal:8080/vanguard"},
                                             {"secret_file", secret},
                                             {"output", "json"}}),
            kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.webhook().secret(), "a-shared-secret-of-32-characters");
  EXPECT_EQ(sent.webhook().model(), "resnet50");
  EXPECT_THAT(out_.str(), HasSubstr("http://hooks.internal:8080/vanguard"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("a-shared-secret")));
}

TEST_F(ScheduleCommandsTest, WebhooksAddTakesAModelOrATeamNotBoth) {
  const std::string secret = WriteTempFile("webhook_secret2", "a-shared-secret-of-32-characters");
  EXPECT_EQ(
      RunCommand(
          {"webhooks", "add"},
          {{"model", "m"}, {"team", "t"}, {"url", "http://127.0.0.1:1/"}, {"secret_file", secret}}),
      kExitUsage);
  EXPECT_EQ(RunCommand({"webhooks", "add"},
                       {{"url", "http://127.0.0.1:1/"}, {"secret_file", "/nonexistent/secret"}}),
            kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--secret_file"));
}

TEST_F(ScheduleCommandsTest, WebhooksListPrintsOneRowEach) {
  EXPECT_CALL(stub_, ListWebhooks(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::ListWebhooksRequest& request,
                           v1::ListWebhooksResponse* response) {
        EXPECT_EQ(request.team(), "vision");
        v1::Webhook& w = *response->add_webhooks();
        w.set_id(2);
        w.set_team("vision");
        w.set_url("http://hooks.internal:8080/vanguard");
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"webhooks", "list"}, {{"team", "vision"}}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(),
              HasSubstr("2  vision  (every model)  http://hooks.internal:8080/vanguard"));
}

TEST_F(ScheduleCommandsTest, WebhooksDeliveriesSendsTheFiltersAndPrintsEachAnswer) {
  v1::ListWebhookDeliveriesRequest sent;
  EXPECT_CALL(stub_, ListWebhookDeliveries(_, _, _))
      .WillOnce(Invoke([&](grpc::ClientContext*, const v1::ListWebhookDeliveriesRequest& request,
                           v1::ListWebhookDeliveriesResponse* response) {
        sent = request;
        v1::WebhookDelivery& failed = *response->add_deliveries();
        failed.set_id(17);
        failed.set_test_id(3);
        failed.set_state(v1::WEBHOOK_DELIVERY_STATE_FAILED);
        failed.set_attempts(8);
        failed.set_last_status(503);
        failed.set_last_error("HTTP 503: the endpoint did not answer 2xx");
        failed.mutable_create_time()->set_seconds(1796272200);  // 2026-12-03 04:30:00
        failed.mutable_finish_time()->set_seconds(1796273460);  // 04:51:00
        v1::WebhookDelivery& delivered = *response->add_deliveries();
        delivered.set_id(16);
        delivered.set_test_id(2);
        delivered.set_state(v1::WEBHOOK_DELIVERY_STATE_DELIVERED);
        delivered.set_attempts(1);
        delivered.set_last_status(204);
        return grpc::Status::OK;
      }));
  EXPECT_EQ(RunCommand({"webhooks", "deliveries", "2"}, {{"state", "failed"}, {"limit", "5"}}),
            kExitOk)
      << err_.str() << usage_error_;
  EXPECT_EQ(sent.webhook_id(), 2);
  EXPECT_EQ(sent.state(), v1::WEBHOOK_DELIVERY_STATE_FAILED);
  EXPECT_EQ(sent.page_size(), 5);
  EXPECT_THAT(out_.str(), HasSubstr("17     3  failed            8  HTTP 503: the endpoint did "
                                    "not answer 2xx  2026-12-03 04:30  2026-12-03 04:51"));
  EXPECT_THAT(out_.str(), HasSubstr("16     2  delivered         1  HTTP 204"));
  EXPECT_EQ(RunCommand({"webhooks", "deliveries", "2"}, {{"state", "lost"}}), kExitUsage);
  EXPECT_THAT(usage_error_, HasSubstr("--state"));
  EXPECT_EQ(RunCommand({"webhooks", "deliveries"}), kExitUsage);
}

}  // namespace
}  // namespace vanguard::cli
