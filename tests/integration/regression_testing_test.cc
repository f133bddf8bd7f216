// Continuous regression testing against a real PostgreSQL ($VANGUARD_TEST_PG): schedules
// that queue a model's test on a new version (the registration trigger of migration 0012)
// and at an interval (ScheduleEnqueuer, on a FakeClock, under the reaper's advisory lock);
// webhooks told of a `regressed` verdict, POSTed by WebhookDispatcher to an HTTP server in
// this test (Boost.Beast), signed, retried on the backoff, and claimed again after a
// dispatcher that died. The regressed result is stored through TestRepository as a worker
// would report it; the orchestrator binary is not started (tests/e2e covers the processes).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status_macros.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "orchestrator/capacity_repository.h"
#include "orchestrator/lease_reaper.h"
#include "orchestrator/proto_json.h"
#include "orchestrator/schedule_enqueuer.h"
#include "orchestrator/schedule_repository.h"
#include "orchestrator/webhook_dispatcher.h"
#include "orchestrator/webhook_repository.h"
#include "orchestrator/webhook_sender.h"
#include "orchestrator/webhook_signature.h"
#include "tests/testing/recording_http_server.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::vanguard::testing::RecordingHttpServer;

constexpr char kSecret[] = "a-shared-secret-of-32-characters";
class RegressionTestingTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    capacity_ = std::make_unique<CapacityRepository>(pool_.get());
    schedules_ = std::make_unique<ScheduleRepository>(pool_.get());
    webhooks_ = std::make_unique<WebhookRepository>(pool_.get());
    OrchestratorService::Options options;
    options.clock = &clock_;
    service_ = std::make_unique<OrchestratorService>(models_.get(), tests_.get(), nullptr, nullptr,
                                                     capacity_.get(), nullptr, schedules_.get(),
                                                     webhooks_.get(), options);
  }

  v1::Model Register(const std::string& name, const std::string& version,
                     const Caller& caller = std::nullopt) {
    v1::RegisterModelRequest request;
    *request.mutable_model() = ValidModel(name, version);
    absl::StatusOr<v1::RegisterModelResponse> r = service_->RegisterModel(request, caller);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->model() : v1::Model();
  }

  absl::StatusOr<v1::TestSchedule> SetSchedule(const std::string& model, bool on_new_version,
                                               absl::Duration interval,
                                               const Caller& caller = std::nullopt) {
    v1::SetScheduleRequest request;
    v1::TestSchedule& s = *request.mutable_schedule();
    s.set_model(model);
    s.set_on_new_version(on_new_version);
    if (interval > absl::ZeroDuration()) *s.mutable_interval() = ToProtoDuration(interval);
    *s.mutable_spec() = ValidSpec(model);
    s.mutable_spec()->set_priority(5);
    ASSIGN_OR_RETURN(v1::SetScheduleResponse response, service_->SetSchedule(request, caller));
    return response.schedule();
  }

  absl::StatusOr<v1::TestSchedule> SetCronSchedule(const std::string& model,
                                                   const std::string& cron) {
    v1::SetScheduleRequest request;
    v1::TestSchedule& s = *request.mutable_schedule();
    s.set_model(model);
    s.set_cron(cron);
    *s.mutable_spec() = ValidSpec(model);
    ASSIGN_OR_RETURN(v1::SetScheduleResponse response, service_->SetSchedule(request));
    return response.schedule();
  }

  int64_t NextRunSeconds(int64_t schedule_id) {
    absl::StatusOr<v1::TestSchedule> s = schedules_->Get(schedule_id);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? s->next_run_time().seconds() : 0;
  }

  // Every test of `model`, oldest first: (id, state, stored spec).
  struct StoredTest {
    int64_t id;
    std::string state;
    std::string team;
    int priority;
    v1::TestSpec spec;
  };
  std::vector<StoredTest> TestsOf(const std::string& model) {
    pqxx::result rows = SqlParams(
        "SELECT t.id, t.state, t.team, t.priority, t.spec::text FROM tests t"
        " JOIN models m ON m.id = t.model_id WHERE m.name = $1 ORDER BY t.id",
        model);
    std::vector<StoredTest> out;
    for (const pqxx::row& row : rows) {
      StoredTest t{row[0].as<int64_t>(), row[1].c_str(), row[2].c_str(), row[3].as<int>(), {}};
      EXPECT_TRUE(ProtoFromJson(row[4].c_str(), &t.spec).ok());
      out.push_back(std::move(t));
    }
    return out;
  }

  // Leases test `id` (the only one queued) and completes it with this result.
  void Complete(int64_t id, double qps, double low, double high) {
    absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("w1", absl::Seconds(30));
    ASSERT_TRUE(leased.ok() && leased->has_value());
    ASSERT_EQ((**leased).id(), id);
    v1::TestResult result;
    result.set_max_sustainable_qps(qps);
    result.set_confidence_low_qps(low);
    result.set_confidence_high_qps(high);
    result.set_converged(true);
    absl::StatusOr<v1::Test> done = tests_->Complete(id, (**leased).attempt(), result, "");
    ASSERT_TRUE(done.ok()) << done.status();
  }

  int64_t Submit(const std::string& model, const std::string& version) {
    v1::SubmitTestRequest request;
    *request.mutable_spec() = ValidSpec(model);
    request.mutable_spec()->set_model_version(version);
    absl::StatusOr<v1::SubmitTestResponse> r = service_->SubmitTest(request);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->test().id() : 0;
  }

  // resnet50 v1 with an accepted baseline [300, 350), and v2 measured at [250, 300): a
  // regression beyond both intervals (v1 registered first unless it is). Returns v2's test.
  int64_t StoreRegression() {
    if (!models_->Get("resnet50", "v1").ok()) Register("resnet50", "v1");
    const int64_t baseline = Submit("resnet50", "v1");
    Complete(baseline, 300, 300, 350);
    EXPECT_TRUE(capacity_->AcceptBaseline(baseline, "ci").ok());
    Register("resnet50", "v2");
    const int64_t regressed = Submit("resnet50", "v2");
    Complete(regressed, 250, 250, 300);
    return regressed;
  }

  v1::Webhook AddWebhook(const std::string& url, const std::string& model = "") {
    v1::AddWebhookRequest request;
    request.mutable_webhook()->set_url(url);
    request.mutable_webhook()->set_secret(kSecret);
    request.mutable_webhook()->set_model(model);
    absl::StatusOr<v1::AddWebhookResponse> r = service_->AddWebhook(request);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->webhook() : v1::Webhook();
  }

  // Whole seconds: the database keeps microseconds.
  FakeClock clock_{absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()))};
  std::unique_ptr<CapacityRepository> capacity_;
  std::unique_ptr<ScheduleRepository> schedules_;
  std::unique_ptr<WebhookRepository> webhooks_;
};

TEST_F(RegressionTestingTest, RegisteringANewVersionQueuesTheScheduledTestWithTheTemplatesSpec) {
  Register("resnet50", "v1");
  absl::StatusOr<v1::TestSchedule> schedule =
      SetSchedule("resnet50", /*on_new_version=*/true, absl::ZeroDuration());
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(schedule->name(), "default");
  EXPECT_EQ(schedule->team(), "default");
  EXPECT_EQ(schedule->spec().model_version(), "");
  EXPECT_TRUE(TestsOf("resnet50").empty());  // setting a schedule queues nothing

  Register("resnet50", "v2");  // the only action

  std::vector<StoredTest> queued = TestsOf("resnet50");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].state, "queued");
  EXPECT_EQ(queued[0].team, "default");
  EXPECT_EQ(queued[0].priority, 5);
  const v1::TestSpec& spec = queued[0].spec;
  EXPECT_EQ(spec.model(), "resnet50");
  EXPECT_EQ(spec.model_version(), "v2");  // pinned to the new version
  ASSERT_EQ(spec.sweep().rates_qps_size(), 2);
  EXPECT_EQ(spec.sweep().rates_qps(0), 10);
  EXPECT_EQ(spec.sweep().rates_qps(1), 20);
  EXPECT_EQ(spec.step_duration().seconds(), 5);
  EXPECT_EQ(spec.step_warmup().seconds(), 7);  // the version's default warmup
  EXPECT_EQ(spec.max_attempts(), 3);           // SubmitTest's defaults
  EXPECT_EQ(spec.request_timeout().seconds(), 10);

  // A worker can lease it like any other test.
  absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("w1", absl::Seconds(30));
  ASSERT_TRUE(leased.ok() && leased->has_value());
  EXPECT_EQ((**leased).id(), queued[0].id);
  EXPECT_EQ((**leased).spec().model_version(), "v2");

  absl::StatusOr<v1::TestSchedule> after = schedules_->Get(schedule->id());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->last_test_id(), queued[0].id);
}

TEST_F(RegressionTestingTest, ARegistrationThatFailsQueuesNothing) {
  Register("resnet50", "v1");
  ASSERT_TRUE(SetSchedule("resnet50", true, absl::ZeroDuration()).ok());
  v1::RegisterModelRequest again;
  *again.mutable_model() = ValidModel("resnet50", "v1");
  EXPECT_EQ(service_->RegisterModel(again).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(TestsOf("resnet50").empty());
}

TEST_F(RegressionTestingTest, IntervalScheduleQueuesWhenDueAndNeverTwiceWhileItsTestWaits) {
  Register("resnet50", "v1");
  Register("resnet50", "v2");
  ASSERT_TRUE(SetSchedule("resnet50", /*on_new_version=*/false, absl::Hours(6)).ok());
  ScheduleEnqueuer enqueuer(schedules_.get(), &clock_, {});

  absl::StatusOr<ScheduleRepository::EnqueuePass> pass = enqueuer.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->ran);
  EXPECT_EQ(pass->queued, 0);  // due 6 h after it was set
  clock_.Advance(absl::Hours(6) - absl::Seconds(1));
  EXPECT_EQ(enqueuer.RunOnce()->queued, 0);

  clock_.Advance(absl::Seconds(1));
  pass = enqueuer.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->queued, 1);
  std::vector<StoredTest> queued = TestsOf("resnet50");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].spec.model_version(), "v2");  // the newest version

  // Due again 6 h later, but its test still waits in the queue: skipped, not doubled.
  clock_.Advance(absl::Hours(6));
  pass = enqueuer.RunOnce();
  EXPECT_EQ(pass->queued, 0);
  EXPECT_EQ(pass->skipped, 1);
  EXPECT_EQ(TestsOf("resnet50").size(), 1u);

  // Once it ended, the late run is queued at the next pass.
  SqlParams("UPDATE tests SET state = 'cancelled', finished_at = now() WHERE id = $1",
            queued[0].id);
  EXPECT_EQ(enqueuer.RunOnce()->queued, 1);
  EXPECT_EQ(TestsOf("resnet50").size(), 2u);
}

TEST_F(RegressionTestingTest, CronScheduleQueuesAtItsMinutesAndMakesUpAMissedRunOnce) {
  // The fake clock to the next Tuesday 22:13:20 UTC.
  const absl::TimeZone utc = absl::UTCTimeZone();
  absl::CivilDay tuesday = absl::ToCivilDay(clock_.Now(), utc) + 1;
  while (absl::GetWeekday(tuesday) != absl::Weekday::tuesday) ++tuesday;
  clock_.Advance(absl::FromCivil(absl::CivilSecond(tuesday) + (22 * 3600 + 13 * 60 + 20), utc) -
                 clock_.Now());
  Register("resnet50", "v1");
  absl::StatusOr<v1::TestSchedule> set = SetCronSchedule("resnet50", "0 3 * * *");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->cron(), "0 3 * * *");
  EXPECT_FALSE(set->has_interval());
  // Wednesday 03:00: 4 h 46 min 40 s later.
  const int64_t wednesday_3am = absl::ToUnixSeconds(clock_.Now()) + 4 * 3600 + 46 * 60 + 40;
  EXPECT_EQ(set->next_run_time().seconds(), wednesday_3am);
  ScheduleEnqueuer enqueuer(schedules_.get(), &clock_, {});

  clock_.Advance(absl::Seconds(wednesday_3am - absl::ToUnixSeconds(clock_.Now()) - 1));
  // 02:59:59
  EXPECT_EQ(enqueuer.RunOnce()->queued, 0);
  clock_.Advance(absl::Seconds(1));
  absl::StatusOr<ScheduleRepository::EnqueuePass> pass = enqueuer.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->queued, 1);
  EXPECT_EQ(NextRunSeconds(set->id()), wednesday_3am + 86400);  // Thursday 03:00
  std::vector<StoredTest> queued = TestsOf("resnet50");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_EQ(queued[0].spec.model_version(), "v1");
  SqlParams("UPDATE tests SET state = 'cancelled', finished_at = now() WHERE id = $1",
            queued[0].id);

  // No orchestrator ran for three days (to Saturday 12:00): one test, not three, and the next
  // run is Sunday 03:00.
  clock_.Advance(absl::Hours(3 * 24 + 9));
  EXPECT_EQ(enqueuer.RunOnce()->queued, 1);
  EXPECT_EQ(TestsOf("resnet50").size(), 2u);
  EXPECT_EQ(NextRunSeconds(set->id()), wednesday_3am + 4 * 86400);
}

TEST_F(RegressionTestingTest, CronSchedulesAreValidatedAndABadOneWrittenWithSqlIsSkipped) {
  Register("resnet50", "v1");
  absl::StatusOr<v1::TestSchedule> bad = SetCronSchedule("resnet50", "0 25 * * *");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("schedule.cron: cron's hour field: 25"));
  EXPECT_EQ(SetCronSchedule("resnet50", "0 0 31 2 *").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetCronSchedule("resnet50", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(SetCronSchedule("resnet50", "CRON_TZ=Mars/Olympus 0 9 * * *").status().message(),
              HasSubstr("schedule.cron: cron: time zone \"Mars/Olympus\" is not known"));
  // 09:00 in Tokyo (UTC+9, no daylight saving time) is the next midnight UTC.
  absl::StatusOr<v1::TestSchedule> tokyo =
      SetCronSchedule("resnet50", "CRON_TZ=Asia/Tokyo 0 9 * * *");
  ASSERT_TRUE(tokyo.ok()) << tokyo.status();
  EXPECT_EQ(tokyo->cron(), "CRON_TZ=Asia/Tokyo 0 9 * * *");
  EXPECT_EQ(NextRunSeconds(tokyo->id()),
            absl::ToUnixSeconds(absl::FromCivil(
                absl::ToCivilDay(clock_.Now(), absl::UTCTimeZone()) + 1, absl::UTCTimeZone())));

  // Only the orchestrator parses cron; a row written with SQL may not parse. The enqueuer
  // skips it, says why, and tries again a day later.
  absl::StatusOr<v1::TestSchedule> set = SetCronSchedule("resnet50", "@hourly");
  ASSERT_TRUE(set.ok()) << set.status();
  SqlParams("UPDATE test_schedules SET cron = 'every tuesday' WHERE id = $1", set->id());
  clock_.Advance(absl::Hours(1));
  ScheduleEnqueuer enqueuer(schedules_.get(), &clock_, {});
  absl::StatusOr<ScheduleRepository::EnqueuePass> pass = enqueuer.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->queued, 0);
  EXPECT_EQ(pass->skipped, 1);
  ASSERT_EQ(pass->errors.size(), 1u);
  EXPECT_THAT(pass->errors[0], HasSubstr("5 fields"));
  EXPECT_TRUE(TestsOf("resnet50").empty());
  EXPECT_EQ(NextRunSeconds(set->id()), absl::ToUnixSeconds(clock_.Now() + absl::Hours(24)));

  // The table refuses a schedule that repeats both ways.
  EXPECT_ANY_THROW(
      SqlParams("UPDATE test_schedules SET interval_seconds = 60 WHERE id = $1", set->id()));
}

TEST_F(RegressionTestingTest, TheEnqueuerSkipsItsPassWhileAnotherReplicaHoldsTheReaperLock) {
  Register("resnet50", "v1");
  ASSERT_TRUE(SetSchedule("resnet50", false, absl::Minutes(1)).ok());
  clock_.Advance(absl::Minutes(2));
  ScheduleEnqueuer enqueuer(schedules_.get(), &clock_, {});
  {
    pqxx::connection other(db_->conninfo());
    pqxx::work txn(other);
    txn.exec_params("SELECT pg_advisory_xact_lock($1)", LeaseReaper::kAdvisoryLockKey);
    absl::StatusOr<ScheduleRepository::EnqueuePass> pass = enqueuer.RunOnce();
    ASSERT_TRUE(pass.ok()) << pass.status();
    EXPECT_FALSE(pass->ran);
    EXPECT_TRUE(TestsOf("resnet50").empty());
  }  // the other replica's transaction ends
  EXPECT_EQ(enqueuer.RunOnce()->queued, 1);
}

TEST_F(RegressionTestingTest, SchedulesFollowTheModelsTeam) {
  Register(
      "resnet50", "v1",
      TokenIdentity{.id = 1, .name = "vision-ci", .role = v1::ROLE_SUBMITTER, .team = "vision"});
  const Caller other_team =
      TokenIdentity{.id = 2, .name = "nlp-ci", .role = v1::ROLE_SUBMITTER, .team = "nlp"};
  const Caller owner =
      TokenIdentity{.id = 1, .name = "vision-ci", .role = v1::ROLE_SUBMITTER, .team = "vision"};
  const Caller admin =
      TokenIdentity{.id = 3, .name = "root", .role = v1::ROLE_ADMIN, .team = "default"};
  EXPECT_EQ(SetSchedule("resnet50", true, absl::ZeroDuration(), other_team).status().code(),
            absl::StatusCode::kPermissionDenied);
  absl::StatusOr<v1::TestSchedule> mine =
      SetSchedule("resnet50", true, absl::ZeroDuration(), owner);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->team(), "vision");
  EXPECT_TRUE(SetSchedule("resnet50", true, absl::Hours(1), admin).ok());  // replaces it

  absl::StatusOr<v1::ListSchedulesResponse> theirs =
      service_->ListSchedules(v1::ListSchedulesRequest(), other_team);
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(theirs->schedules_size(), 0);
  absl::StatusOr<v1::ListSchedulesResponse> listed =
      service_->ListSchedules(v1::ListSchedulesRequest(), owner);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->schedules_size(), 1);
  EXPECT_EQ(listed->schedules(0).interval().seconds(), 3600);

  v1::DeleteScheduleRequest del;
  del.set_id(mine->id());
  EXPECT_EQ(service_->DeleteSchedule(del, other_team).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(service_->DeleteSchedule(del, owner).ok());
  EXPECT_EQ(service_->DeleteSchedule(del, owner).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RegressionTestingTest, ScheduleRequestsAreValidated) {
  Register("resnet50", "v1");
  EXPECT_EQ(SetSchedule("resnet50", false, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);  // neither trigger
  EXPECT_EQ(SetSchedule("resnet50", false, absl::Seconds(30)).status().code(),
            absl::StatusCode::kInvalidArgument);  // below a minute
  EXPECT_EQ(SetSchedule("unknown", true, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kNotFound);
  v1::SetScheduleRequest pinned;
  pinned.mutable_schedule()->set_model("resnet50");
  pinned.mutable_schedule()->set_on_new_version(true);
  *pinned.mutable_schedule()->mutable_spec() = ValidSpec();
  pinned.mutable_schedule()->mutable_spec()->set_model_version("v1");
  absl::Status status = service_->SetSchedule(pinned).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("schedule.spec.model_version"));
  v1::SetScheduleRequest bad_spec = pinned;
  bad_spec.mutable_schedule()->mutable_spec()->clear_model_version();
  bad_spec.mutable_schedule()->mutable_spec()->mutable_sweep()->set_rates_qps(0, -1);
  EXPECT_EQ(service_->SetSchedule(bad_spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RegressionTestingTest, WebhookUrlsMustPassTheTargetPolicy) {
  Register("resnet50", "v1");
  v1::AddWebhookRequest request;
  request.mutable_webhook()->set_secret(kSecret);
  for (const char* url :
       {"http://169.254.169.254/latest/meta-data", "http://metadata/x", "http://[fe80::1]:80/",
        "ftp://127.0.0.1/", "http://user:pw@127.0.0.1/"}) {
    request.mutable_webhook()->set_url(url);
    absl::Status status = service_->AddWebhook(request).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(status.message(), Not(HasSubstr("meta-data"))) << url;
    EXPECT_THAT(status.message(), Not(HasSubstr("pw"))) << url;
  }
  request.mutable_webhook()->set_url("http://127.0.0.1:9/hook");
  request.mutable_webhook()->set_secret("short");
  EXPECT_EQ(service_->AddWebhook(request).status().code(), absl::StatusCode::kInvalidArgument);

  // With --allowed_targets, a webhook outside the list is refused too.
  OrchestratorService::Options options;
  options.target_policy = *TargetPolicy::Parse("127.0.0.0/8");
  OrchestratorService strict(models_.get(), tests_.get(), nullptr, nullptr, nullptr, nullptr,
                             schedules_.get(), webhooks_.get(), options);
  request.mutable_webhook()->set_secret(kSecret);
  request.mutable_webhook()->set_url("http://10.1.2.3:8080/hook");
  EXPECT_EQ(strict.AddWebhook(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_webhook()->set_url("http://127.0.0.1:8080/hook");
  absl::StatusOr<v1::AddWebhookResponse> added = strict.AddWebhook(request);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->webhook().secret(), "");  // never returned
  EXPECT_EQ(added->webhook().team(), "default");
}

TEST_F(RegressionTestingTest, ARegressedResultIsPostedSignedAndRetriedUntilAnswered) {
  RecordingHttpServer server({500});  // the first attempt fails, the second is answered 204
  Register("resnet50", "v1");
  const v1::Webhook webhook = AddWebhook(server.Url("/hooks/vanguard?team=default"), "resnet50");
  const int64_t regressed = StoreRegression();

  std::unique_ptr<HttpWebhookSender> sender =
      *HttpWebhookSender::Create({.timeout = absl::Seconds(10)});
  WebhookDispatcher dispatcher(webhooks_.get(), sender.get(), &clock_,
                               {.retry = {.initial_backoff = absl::Seconds(30),
                                          .max_backoff = absl::Hours(1),
                                          .max_attempts = 3}});
  absl::StatusOr<WebhookDispatcher::Pass> pass = dispatcher.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->created, 1);
  EXPECT_EQ(pass->retrying, 1);
  absl::StatusOr<std::vector<WebhookDeliveryState>> deliveries =
      webhooks_->Deliveries(webhook.id());
  ASSERT_TRUE(deliveries.ok()) << deliveries.status();
  ASSERT_EQ(deliveries->size(), 1u);
  EXPECT_EQ((*deliveries)[0].state, "pending");
  EXPECT_EQ((*deliveries)[0].attempts, 1);
  EXPECT_EQ((*deliveries)[0].last_status, 500);
  EXPECT_EQ((*deliveries)[0].next_attempt, clock_.Now() + absl::Seconds(30));
  EXPECT_THAT((*deliveries)[0].last_error, Not(HasSubstr("internal detail")));

  // Not due yet: nothing is sent, and the regression is not delivered twice.
  clock_.Advance(absl::Seconds(29));
  pass = dispatcher.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->created + pass->delivered + pass->retrying, 0);
  clock_.Advance(absl::Seconds(1));
  pass = dispatcher.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->delivered, 1);
  deliveries = webhooks_->Deliveries(webhook.id());
  ASSERT_TRUE(deliveries.ok());
  EXPECT_EQ((*deliveries)[0].state, "delivered");
  EXPECT_EQ((*deliveries)[0].attempts, 2);
  EXPECT_EQ((*deliveries)[0].last_status, 204);

  // What the receiver saw: the same signed body twice, verifiable with the shared secret.
  std::vector<RecordingHttpServer::Request> received = server.requests();
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0].body, received[1].body);
  EXPECT_EQ(received[1].method, "POST");
  EXPECT_EQ(received[1].target, "/hooks/vanguard?team=default");
  EXPECT_EQ(received[1].headers["content-type"], "application/json");
  const std::string signature = received[1].headers["x-vanguard-signature"];
  EXPECT_EQ(signature, "sha256=" + HmacSha256Hex(kSecret, received[1].body));
  EXPECT_NE(signature,
            "sha256=" + HmacSha256Hex("another-secret-of-32-characters!", received[1].body));
  nlohmann::json payload = nlohmann::json::parse(received[1].body);
  EXPECT_EQ(payload["event"], "capacity.regressed");
  EXPECT_EQ(payload["test_id"], regressed);
  EXPECT_EQ(payload["model"], "resnet50");
  EXPECT_EQ(payload["model_version"], "v2");
  EXPECT_EQ(payload["verdict"], "regressed");
  EXPECT_EQ(payload["capacity"]["qps"], 250);
  EXPECT_EQ(payload["capacity"]["confidence_low_qps"], 250);
  EXPECT_EQ(payload["capacity"]["confidence_high_qps"], 300);
  EXPECT_EQ(payload["baseline"]["model_version"], "v1");
  EXPECT_EQ(payload["baseline"]["qps"], 300);
  EXPECT_EQ(payload["baseline"]["confidence_low_qps"], 300);
  EXPECT_EQ(payload["baseline"]["confidence_high_qps"], 350);
  EXPECT_NEAR(payload["change_fraction"].get<double>(), -1.0 / 6, 1e-9);
  EXPECT_TRUE(payload["timestamp"].is_string());
}

TEST_F(RegressionTestingTest, ADeliveryIsGivenUpAfterItsAttemptsWithTheStatusOnly) {
  RecordingHttpServer server({503, 503});
  const v1::Webhook webhook = AddWebhook(server.Url("/hook"));  // the team's webhook
  StoreRegression();
  std::unique_ptr<HttpWebhookSender> sender =
      *HttpWebhookSender::Create({.timeout = absl::Seconds(10)});
  WebhookDispatcher dispatcher(
      webhooks_.get(), sender.get(), &clock_,
      {.retry = {.initial_backoff = absl::Seconds(10), .max_attempts = 2}});
  ASSERT_EQ(dispatcher.RunOnce()->retrying, 1);
  clock_.Advance(absl::Seconds(10));
  absl::StatusOr<WebhookDispatcher::Pass> pass = dispatcher.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->failed, 1);
  absl::StatusOr<std::vector<WebhookDeliveryState>> deliveries =
      webhooks_->Deliveries(webhook.id());
  ASSERT_TRUE(deliveries.ok());
  ASSERT_EQ(deliveries->size(), 1u);
  EXPECT_EQ((*deliveries)[0].state, "failed");
  EXPECT_EQ((*deliveries)[0].last_status, 503);
  EXPECT_EQ((*deliveries)[0].last_error, "HTTP 503: the endpoint did not answer 2xx");
  clock_.Advance(absl::Hours(24));
  EXPECT_EQ(dispatcher.RunOnce()->retrying + dispatcher.RunOnce()->delivered, 0);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(RegressionTestingTest, OperatorsListADeliveryWithItsAttemptsAndHowItWasAnswered) {
  RecordingHttpServer server({503, 503});
  const v1::Webhook webhook = AddWebhook(server.Url("/hook"));
  const int64_t regressed = StoreRegression();
  std::unique_ptr<HttpWebhookSender> sender =
      *HttpWebhookSender::Create({.timeout = absl::Seconds(10)});
  WebhookDispatcher dispatcher(
      webhooks_.get(), sender.get(), &clock_,
      {.retry = {.initial_backoff = absl::Seconds(10), .max_attempts = 2}});
  ASSERT_EQ(dispatcher.RunOnce()->retrying, 1);

  v1::ListWebhookDeliveriesRequest request;
  request.set_webhook_id(webhook.id());
  absl::StatusOr<v1::ListWebhookDeliveriesResponse> listed =
      service_->ListWebhookDeliveries(request);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->deliveries_size(), 1);
  const v1::WebhookDelivery& pending = listed->deliveries(0);
  EXPECT_EQ(pending.test_id(), regressed);
  EXPECT_EQ(pending.webhook_id(), webhook.id());
  EXPECT_EQ(pending.state(), v1::WEBHOOK_DELIVERY_STATE_PENDING);
  EXPECT_EQ(pending.attempts(), 1);
  EXPECT_EQ(pending.last_status(), 503);
  EXPECT_EQ(pending.next_attempt_time().seconds(),
            absl::ToUnixSeconds(clock_.Now() + absl::Seconds(10)));
  EXPECT_FALSE(pending.has_finish_time());
  EXPECT_EQ(pending.body(), server.requests()[0].body);  // the bytes that were POSTed

  clock_.Advance(absl::Seconds(10));
  ASSERT_EQ(dispatcher.RunOnce()->failed, 1);
  request.set_state(v1::WEBHOOK_DELIVERY_STATE_FAILED);
  listed = service_->ListWebhookDeliveries(request);
  ASSERT_TRUE(listed.ok() && listed->deliveries_size() == 1);
  EXPECT_EQ(listed->deliveries(0).attempts(), 2);
  EXPECT_EQ(listed->deliveries(0).last_error(), "HTTP 503: the endpoint did not answer 2xx");
  EXPECT_EQ(listed->deliveries(0).finish_time().seconds(), absl::ToUnixSeconds(clock_.Now()));
  EXPECT_FALSE(listed->deliveries(0).has_next_attempt_time());
  request.set_state(v1::WEBHOOK_DELIVERY_STATE_DELIVERED);
  EXPECT_EQ(service_->ListWebhookDeliveries(request)->deliveries_size(), 0);

  // Only its team sees them; bad requests name the field.
  const Caller nlp_submitter =
      TokenIdentity{.id = 2, .name = "nlp-ci", .role = v1::ROLE_SUBMITTER, .team = "nlp"};
  EXPECT_EQ(service_->ListWebhookDeliveries(request, nlp_submitter).status().code(),
            absl::StatusCode::kPermissionDenied);
  request.set_state(static_cast<v1::WebhookDeliveryState>(99));
  EXPECT_THAT(service_->ListWebhookDeliveries(request).status().message(), HasSubstr("state"));
  request.clear_state();
  request.set_webhook_id(webhook.id() + 1000);
  EXPECT_EQ(service_->ListWebhookDeliveries(request).status().code(), absl::StatusCode::kNotFound);
  request.set_webhook_id(0);
  EXPECT_EQ(service_->ListWebhookDeliveries(request).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(RegressionTestingTest, ADeliveryClaimedByADispatcherThatDiedIsClaimedAgainLater) {
  const v1::Webhook webhook = AddWebhook("http://127.0.0.1:9/hook");
  const int64_t regressed = StoreRegression();
  ASSERT_EQ(*webhooks_->CreateDeliveries(clock_.Now()), 1);
  EXPECT_EQ(*webhooks_->CreateDeliveries(clock_.Now()), 0);  // idempotent

  // A dispatcher claims it and dies before recording anything.
  absl::StatusOr<std::optional<WebhookDelivery>> first =
      webhooks_->Claim(clock_.Now(), absl::Minutes(2));
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->test_id, regressed);
  EXPECT_EQ((*first)->secret, kSecret);

  // Held while the claim lasts, by this or another replica.
  clock_.Advance(absl::Minutes(2) - absl::Seconds(1));
  absl::StatusOr<std::optional<WebhookDelivery>> held =
      webhooks_->Claim(clock_.Now(), absl::Minutes(2));
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());

  // After the restart, once the claim lapsed, the same delivery is claimed again.
  clock_.Advance(absl::Seconds(1));
  absl::StatusOr<std::optional<WebhookDelivery>> again =
      webhooks_->Claim(clock_.Now(), absl::Minutes(2));
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->id, (*first)->id);
  EXPECT_EQ((*again)->attempts, 2);
  EXPECT_EQ((*again)->body, (*first)->body);

  // The first claimer, back late, cannot record over the live claim; the live one can.
  ASSERT_TRUE(webhooks_->MarkDelivered(**first, 200, clock_.Now()).ok());
  absl::StatusOr<std::vector<WebhookDeliveryState>> state = webhooks_->Deliveries(webhook.id());
  ASSERT_TRUE(state.ok() && state->size() == 1u);
  EXPECT_EQ((*state)[0].state, "pending");
  ASSERT_TRUE(webhooks_->MarkDelivered(**again, 200, clock_.Now()).ok());
  state = webhooks_->Deliveries(webhook.id());
  ASSERT_TRUE(state.ok() && state->size() == 1u);
  EXPECT_EQ((*state)[0].state, "delivered");
}

TEST_F(RegressionTestingTest, WebhooksHearOnlyOfTheirTeamsRegressionsRecordedAfterThem) {
  StoreRegression();  // before any webhook: not announced
  v1::AddWebhookRequest request;
  request.mutable_webhook()->set_url("http://127.0.0.1:9/hook");
  request.mutable_webhook()->set_secret(kSecret);
  request.mutable_webhook()->set_team("nlp");
  absl::StatusOr<v1::AddWebhookResponse> nlp = service_->AddWebhook(request);
  ASSERT_TRUE(nlp.ok()) << nlp.status();
  const v1::Webhook mine = AddWebhook("http://127.0.0.1:9/hook");
  EXPECT_EQ(*webhooks_->CreateDeliveries(clock_.Now()), 0);

  const int64_t again = Submit("resnet50", "v2");
  Complete(again, 240, 240, 290);
  EXPECT_EQ(*webhooks_->CreateDeliveries(clock_.Now()), 1);
  EXPECT_EQ(webhooks_->Deliveries(mine.id())->size(), 1u);
  EXPECT_EQ(webhooks_->Deliveries(nlp->webhook().id())->size(), 0u);

  const Caller nlp_submitter =
      TokenIdentity{.id = 2, .name = "nlp-ci", .role = v1::ROLE_SUBMITTER, .team = "nlp"};
  absl::StatusOr<v1::ListWebhooksResponse> listed =
      service_->ListWebhooks(v1::ListWebhooksRequest(), nlp_submitter);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->webhooks_size(), 1);
  EXPECT_EQ(listed->webhooks(0).team(), "nlp");
  v1::DeleteWebhookRequest del;
  del.set_id(mine.id());
  EXPECT_EQ(service_->DeleteWebhook(del, nlp_submitter).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace vanguard
