// Contract tests of TestRepository (the queue, leases, steps, results) and LeaseReaper
// against a real PostgreSQL ($VANGUARD_TEST_PG).
#include "orchestrator/test_repository.h"

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "database_test_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/lease_reaper.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;

class TestRepositoryTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    model_id_ = RegisterModelId(ValidModel());
  }

  v1::Test Submit(int priority = 0, const std::string& request_id = "", int max_attempts = 3) {
    v1::TestSpec spec = ValidSpec();
    spec.set_priority(priority);
    spec.set_max_attempts(max_attempts);
    absl::StatusOr<v1::Test> test = tests_->Submit(spec, model_id_, request_id);
    EXPECT_TRUE(test.ok()) << test.status();
    return test.ok() ? *test : v1::Test();
  }

  v1::Test Lease(const std::string& worker = "worker-1") {
    absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease(worker, absl::Seconds(30));
    EXPECT_TRUE(leased.ok()) << leased.status();
    EXPECT_TRUE(leased.ok() && leased->has_value()) << "nothing to lease";
    return leased.ok() && leased->has_value() ? **leased : v1::Test();
  }

  bool QueueIsEmpty() {
    absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("probe", absl::Seconds(30));
    EXPECT_TRUE(leased.ok()) << leased.status();
    return leased.ok() && !leased->has_value();
  }

  v1::Test Get(int64_t id) {
    absl::StatusOr<v1::Test> test = tests_->Get(id);
    EXPECT_TRUE(test.ok()) << test.status();
    return test.ok() ? *test : v1::Test();
  }

  // Everything a lease call could change about test `id`.
  auto LeaseRow(int64_t id) {
    pqxx::row r = SqlParams(
        "SELECT state, attempt, coalesce(lease_owner, ''), lease_expires_at::text, max_attempts,"
        "   coalesce(requeue_reason, ''), (SELECT count(*) FROM steps WHERE test_id = t.id),"
        "   (SELECT count(*) FROM results WHERE test_id = t.id)"
        " FROM tests t WHERE id = $1",
        id)[0];
    return std::make_tuple(std::string(r[0].c_str()), r[1].as<int>(), std::string(r[2].c_str()),
                           std::string(r[3].is_null() ? "" : r[3].c_str()), r[4].as<int>(),
                           std::string(r[5].c_str()), r[6].as<int64_t>(), r[7].as<int64_t>());
  }

  int64_t model_id_ = 0;
};

TEST_F(TestRepositoryTest, SubmitQueuesTheTestWithItsModel) {
  v1::Test test = Submit(5, "req-1");
  EXPECT_GT(test.id(), 0);
  EXPECT_EQ(test.state(), v1::TEST_STATE_QUEUED);
  EXPECT_EQ(test.attempt(), 0);
  EXPECT_EQ(test.request_id(), "req-1");
  EXPECT_EQ(test.spec().priority(), 5);
  EXPECT_EQ(test.spec().sweep().rates_qps_size(), 2);
  EXPECT_EQ(test.model().name(), "resnet50");
  EXPECT_EQ(test.model().endpoints(0), "http://127.0.0.1:8000");
  EXPECT_GT(test.create_time().seconds(), 1'600'000'000);
  EXPECT_FALSE(test.has_start_time());
  EXPECT_EQ(test.steps_size(), 0);
  EXPECT_FALSE(test.has_result());
}

TEST_F(TestRepositoryTest, SubmitIsIdempotentOnRequestId) {
  v1::Test first = Submit(0, "ci-run-42");
  v1::TestSpec other = ValidSpec();
  other.set_priority(9);
  absl::StatusOr<v1::Test> second = tests_->Submit(other, model_id_, "ci-run-42");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->id(), first.id());
  EXPECT_EQ(second->spec().priority(), 0) << "the first submit's test is returned unchanged";
  EXPECT_EQ(Sql("SELECT count(*) FROM tests")[0][0].as<int>(), 1);

  // A different request_id, or none at all, queues new tests.
  EXPECT_NE(Submit(0, "ci-run-43").id(), first.id());
  int64_t a = Submit().id(), b = Submit().id();
  EXPECT_NE(a, b);
  EXPECT_EQ(Sql("SELECT count(*) FROM tests")[0][0].as<int>(), 4);
}

TEST_F(TestRepositoryTest, GetUnknownTestIsNotFound) {
  EXPECT_EQ(tests_->Get(12345).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TestRepositoryTest, LeaseTakesHighestPriorityFirstThenOldest) {
  int64_t a = Submit(0).id();
  int64_t b = Submit(5).id();
  int64_t c = Submit(0).id();
  int64_t d = Submit(5).id();
  int64_t e = Submit(-1).id();
  EXPECT_EQ(Lease().id(), b);
  EXPECT_EQ(Lease().id(), d);
  EXPECT_EQ(Lease().id(), a);
  EXPECT_EQ(Lease().id(), c);
  EXPECT_EQ(Lease().id(), e);
  EXPECT_TRUE(QueueIsEmpty());
}

TEST_F(TestRepositoryTest, LeaseMarksRunningAndBumpsTheAttempt) {
  int64_t id = Submit().id();
  absl::StatusOr<std::optional<v1::Test>> leased = tests_->Lease("worker-7", absl::Seconds(45));
  ASSERT_TRUE(leased.ok() && leased->has_value()) << leased.status();
  const v1::Test& t = **leased;
  EXPECT_EQ(t.id(), id);
  EXPECT_EQ(t.state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(t.attempt(), 1);
  EXPECT_EQ(t.lease_owner(), "worker-7");
  EXPECT_TRUE(t.has_start_time());
  EXPECT_EQ(t.model().name(), "resnet50") << "the leased test carries the resolved model";
  // The lease expiry is about 45 s out (database clock).
  double seconds_left =
      SqlParams(
          "SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM tests WHERE id = $1",
          id)[0][0]
          .as<double>();
  EXPECT_GT(seconds_left, 30);
  EXPECT_LE(seconds_left, 45);
}

TEST_F(TestRepositoryTest, LeaseSkipsTestsNotReadyYet) {
  int64_t later = Submit(10).id();
  SqlParams("UPDATE tests SET not_before = now() + interval '1 hour' WHERE id = $1", later);
  int64_t now = Submit(0).id();
  EXPECT_EQ(Lease().id(), now);
  EXPECT_TRUE(QueueIsEmpty());
}

TEST_F(TestRepositoryTest, HeartbeatExtendsTheLeaseOfTheHolderOnly) {
  int64_t id = Submit().id();
  v1::Test t = Lease("worker-1");
  absl::StatusOr<bool> cancel = tests_->Heartbeat(id, t.attempt(), "worker-1", absl::Minutes(10));
  ASSERT_TRUE(cancel.ok()) << cancel.status();
  EXPECT_FALSE(*cancel);
  double seconds_left =
      SqlParams(
          "SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM tests WHERE id = $1",
          id)[0][0]
          .as<double>();
  EXPECT_GT(seconds_left, 500);

  absl::StatusOr<bool> other = tests_->Heartbeat(id, t.attempt(), "worker-2", absl::Seconds(30));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("worker-1"));
  absl::StatusOr<bool> wrong =
      tests_->Heartbeat(id, t.attempt() + 1, "worker-1", absl::Seconds(30));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tests_->Heartbeat(999999, 1, "worker-1", absl::Seconds(30)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TestRepositoryTest, StaleAttemptIsFencedOffAfterTheTestIsReleased) {
  int64_t id = Submit().id();
  v1::Test first = Lease("worker-old");
  ASSERT_EQ(first.attempt(), 1);
  ASSERT_TRUE(tests_->ReportStep(id, 1, ValidStep(0, 10)).ok());

  // worker-old goes silent; its lease expires and the reaper returns the test.
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->requeued, 1);
  v1::Test second = Lease("worker-new");
  ASSERT_EQ(second.id(), id);
  EXPECT_EQ(second.attempt(), 2);
  // Attempt 2 resumes from the step attempt 1 completed (measured by attempt 1).
  ASSERT_EQ(second.steps_size(), 1);
  EXPECT_EQ(second.steps(0).attempt(), 1);

  // Everything worker-old still sends with attempt 1 is refused.
  absl::StatusOr<bool> hb = tests_->Heartbeat(id, 1, "worker-old", absl::Seconds(30));
  EXPECT_EQ(hb.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(hb.status().message(), HasSubstr("attempt 2"));
  absl::Status step = tests_->ReportStep(id, 1, ValidStep(1, 20));
  EXPECT_EQ(step.code(), absl::StatusCode::kFailedPrecondition) << step;
  v1::TestResult result;
  result.set_max_sustainable_qps(20);
  EXPECT_EQ(tests_->Complete(id, 1, result, "").status().code(),
            absl::StatusCode::kFailedPrecondition);

  // worker-new is unaffected.
  EXPECT_TRUE(tests_->Heartbeat(id, 2, "worker-new", absl::Seconds(30)).ok());
  EXPECT_TRUE(tests_->ReportStep(id, 2, ValidStep(0, 10)).ok());
  v1::Test now = Get(id);
  EXPECT_EQ(now.state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(now.attempt(), 2);
  ASSERT_EQ(now.steps_size(), 1);
  EXPECT_EQ(now.steps(0).attempt(), 2);
}

TEST_F(TestRepositoryTest, ReportStepIsIdempotentAndGetOrdersStepsByIndex) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  std::string histogram("\x01\x00\x02\xff\x00", 5);  // bytes with NULs must survive
  v1::Step step2 = ValidStep(2, 30);
  step2.set_latency_histogram(histogram);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step2).ok());
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(0, 10)).ok());
  v1::Step step1 = ValidStep(1, 20);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step1).ok());
  // A retried report of step 1 (say, after a lost reply) replaces it instead of adding one.
  step1.set_achieved_qps(19.5);
  step1.set_passed(false);
  step1.set_health_state(v1::HEALTH_STATE_OVERLOADED);
  absl::Status again = tests_->ReportStep(id, t.attempt(), step1);
  ASSERT_TRUE(again.ok()) << again;

  v1::Test got = Get(id);
  ASSERT_EQ(got.steps_size(), 3);
  EXPECT_EQ(got.steps(0).index(), 0);
  EXPECT_EQ(got.steps(1).index(), 1);
  EXPECT_EQ(got.steps(2).index(), 2);
  EXPECT_DOUBLE_EQ(got.steps(1).achieved_qps(), 19.5);
  EXPECT_FALSE(got.steps(1).passed());
  EXPECT_EQ(got.steps(1).health_state(), v1::HEALTH_STATE_OVERLOADED);
  EXPECT_DOUBLE_EQ(got.steps(0).latency().p99_ms(), 40.25);
  EXPECT_EQ(got.steps(2).latency_histogram(), histogram);
  EXPECT_EQ(got.steps(0).attempt(), t.attempt());

  pqxx::result rows = SqlParams(
      "SELECT step_index, target_qps, achieved_qps, p99_ms, health_state, passed,"
      "   length(histogram) AS hist_len FROM steps WHERE test_id = $1 ORDER BY step_index",
      id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[1]["achieved_qps"].as<double>(), 19.5);
  EXPECT_STREQ(rows[1]["health_state"].c_str(), "overloaded");
  EXPECT_DOUBLE_EQ(rows[0]["p99_ms"].as<double>(), 40.25);
  EXPECT_EQ(rows[2]["hist_len"].as<int>(), 5);
  EXPECT_TRUE(rows[0]["hist_len"].is_null());
}

// A window with every field set (sent, p999 and mean, every stream percentile: what the
// step_windows columns alone would not keep).
v1::StepWindow FullWindow(int index, bool warmup) {
  v1::StepWindow w;
  w.set_index(index);
  w.set_warmup(warmup);
  w.mutable_start_time()->set_seconds(1'700'000'000 + index);
  w.mutable_start_time()->set_nanos(500'000'000);
  w.mutable_duration()->set_nanos(500'000'000);
  w.set_offered_qps(100);
  w.set_achieved_qps(97.5 + index);
  for (v1::LatencySummary* l : {w.mutable_latency(), w.mutable_ttft(), w.mutable_inter_token()}) {
    l->set_p50_ms(10 + index);
    l->set_p90_ms(20 + index);
    l->set_p99_ms(30 + index);
    l->set_p999_ms(40 + index);
    l->set_max_ms(50 + index);
    l->set_mean_ms(12.25 + index);
  }
  w.set_scheduled(50);
  w.set_sent(49);
  w.set_completed(48);
  w.set_errors(1);
  w.set_timeouts(index);
  w.set_dropped(1);
  w.set_censored(2);
  w.set_gpu_utilization(0.75);
  w.set_queue_depth(3.5);
  w.set_health_score(0.25 * index);
  w.set_health_state(warmup ? v1::HEALTH_STATE_UNSPECIFIED : v1::HEALTH_STATE_WARN);
  return w;
}

TEST_F(TestRepositoryTest, GetReturnsEachStepsWindowsAsReported) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  v1::Step step1 = ValidStep(1, 20);
  for (int w = 0; w < 3; ++w) *step1.add_windows() = FullWindow(w, /*warmup=*/w == 0);
  v1::Step step2 = ValidStep(2, 30);
  *step2.add_windows() = FullWindow(0, false);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step2).ok());
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step1).ok());
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(3, 40)).ok());  // no windows

  absl::StatusOr<v1::Test> got = tests_->Get(id, {.windows = true});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->steps_size(), 3);
  ASSERT_EQ(got->steps(0).windows_size(), 3);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(got->steps(0).windows(w).SerializeAsString(),
              FullWindow(w, w == 0).SerializeAsString())
        << "window " << w << ": " << got->steps(0).windows(w).DebugString();
  }
  ASSERT_EQ(got->steps(1).windows_size(), 1);
  EXPECT_EQ(got->steps(1).windows(0).achieved_qps(), 97.5);
  EXPECT_EQ(got->steps(2).windows_size(), 0);

  // Without asking, and in lists, no windows.
  EXPECT_EQ(Get(id).steps(0).windows_size(), 0);
  absl::StatusOr<std::vector<v1::Test>> listed = tests_->List({.limit = 10});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].steps_size(), 0);
}

TEST_F(TestRepositoryTest, GetReturnsEachStepsEndpointTelemetryAsReported) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  v1::Step step = ValidStep(0, 10);
  for (int e = 0; e < 2; ++e) {
    v1::EndpointTelemetry* endpoint = step.add_endpoints();
    endpoint->set_target(e == 0 ? "http://10.0.0.5:8000" : "http://10.0.0.6:8000");
    endpoint->set_dispatched(300 + e);
    endpoint->set_completed(290 + e);
    endpoint->set_errors(10);
    endpoint->set_achieved_qps(29.5);
    endpoint->mutable_latency()->set_p99_ms(42.5 + e);
    endpoint->set_peak_in_flight(7);
    endpoint->set_share(e == 0 ? 0.4992 : 0.5008);
    endpoint->mutable_scraped()->set_gpu_utilization(e == 0 ? 0.41 : 0.87);
    endpoint->mutable_scraped()->set_scrapes(10);
    if (e == 1) endpoint->mutable_scraped()->set_scrape_failures(1);
  }
  step.set_endpoint_imbalance(1.0017);
  step.set_tail_utilization(0.87);
  step.set_mean_utilization(0.64);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step).ok());

  v1::Test got = Get(id);
  ASSERT_EQ(got.steps_size(), 1);
  ASSERT_EQ(got.steps(0).endpoints_size(), 2);
  for (int e = 0; e < 2; ++e) {
    EXPECT_EQ(got.steps(0).endpoints(e).SerializeAsString(), step.endpoints(e).SerializeAsString())
        << got.steps(0).endpoints(e).DebugString();
  }
  EXPECT_EQ(got.steps(0).endpoint_imbalance(), 1.0017);
  EXPECT_EQ(got.steps(0).tail_utilization(), 0.87);
  EXPECT_EQ(got.steps(0).mean_utilization(), 0.64);
  EXPECT_FALSE(got.steps(0).endpoints(0).scraped().has_queue_depth());  // never scraped
}

TEST_F(TestRepositoryTest, GetRebuildsWindowsStoredBeforeTheirDetailWasKept) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  v1::Step step = ValidStep(1, 20);
  *step.add_windows() = FullWindow(4, false);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step).ok());
  Sql("UPDATE step_windows SET detail = NULL");  // as stored before migration 0008

  absl::StatusOr<v1::Test> got = tests_->Get(id, {.windows = true});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->steps(0).windows_size(), 1);
  const v1::StepWindow& w = got->steps(0).windows(0);
  EXPECT_EQ(w.index(), 4);
  EXPECT_FALSE(w.warmup());
  EXPECT_EQ(w.start_time().seconds(), 1'700'000'004);
  EXPECT_EQ(w.start_time().nanos(), 500'000'000);
  EXPECT_EQ(w.duration().nanos(), 500'000'000);
  EXPECT_DOUBLE_EQ(w.achieved_qps(), 101.5);
  EXPECT_DOUBLE_EQ(w.latency().p50_ms(), 14);
  EXPECT_DOUBLE_EQ(w.latency().p99_ms(), 34);
  EXPECT_DOUBLE_EQ(w.latency().max_ms(), 54);
  EXPECT_DOUBLE_EQ(w.ttft().p99_ms(), 34);
  EXPECT_EQ(w.scheduled(), 50);
  EXPECT_EQ(w.timeouts(), 4);
  EXPECT_DOUBLE_EQ(w.queue_depth(), 3.5);
  EXPECT_EQ(w.health_state(), v1::HEALTH_STATE_WARN);
}

TEST_F(TestRepositoryTest, GetTestReturnsWindowsUnlessSkippedOrTooLarge) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  v1::Step step = ValidStep(1, 20);
  for (int w = 0; w < 40; ++w) *step.add_windows() = FullWindow(w, false);
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), step).ok());

  v1::GetTestRequest request;
  request.set_id(id);
  absl::StatusOr<v1::GetTestResponse> full = service_->GetTest(request);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->test().steps(0).windows_size(), 40);
  EXPECT_FALSE(full->windows_omitted());

  request.set_skip_windows(true);
  absl::StatusOr<v1::GetTestResponse> skipped = service_->GetTest(request);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->test().steps(0).windows_size(), 0);
  EXPECT_FALSE(skipped->windows_omitted());

  // A reply past the size limit keeps its steps and says the windows were left out.
  OrchestratorService::Options options;
  options.max_get_test_bytes = full->ByteSizeLong() - 1;
  OrchestratorService small(models_.get(), tests_.get(), options);
  request.set_skip_windows(false);
  absl::StatusOr<v1::GetTestResponse> omitted = small.GetTest(request);
  ASSERT_TRUE(omitted.ok());
  ASSERT_EQ(omitted->test().steps_size(), 1);
  EXPECT_EQ(omitted->test().steps(0).windows_size(), 0);
  EXPECT_TRUE(omitted->windows_omitted());
}

TEST_F(TestRepositoryTest, ReportStepOnATestNotRunningIsRefused) {
  int64_t id = Submit().id();
  absl::Status s = tests_->ReportStep(id, 1, ValidStep(0, 10));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(tests_->ReportStep(424242, 1, ValidStep(0, 10)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Sql("SELECT count(*) FROM steps")[0][0].as<int>(), 0);
}

TEST_F(TestRepositoryTest, CompleteWithResultSucceedsAndFillsStepsTakenAndDuration) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(0, 10)).ok());
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(1, 20)).ok());
  v1::TestResult result;
  result.set_max_sustainable_qps(20);
  result.set_converged(true);
  result.set_summary("highest passing rate 20 qps");
  absl::StatusOr<v1::Test> done = tests_->Complete(id, t.attempt(), result, "");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_TRUE(done->has_end_time());
  EXPECT_TRUE(done->error().empty());
  EXPECT_DOUBLE_EQ(done->result().max_sustainable_qps(), 20);
  EXPECT_EQ(done->result().steps_taken(), 2);
  EXPECT_TRUE(done->result().has_test_duration());
  EXPECT_EQ(done->steps_size(), 2);

  pqxx::result row = SqlParams(
      "SELECT r.max_sustainable_qps, r.converged, r.steps_taken, r.model_id = t.model_id AS same,"
      "   r.detail->>'summary' AS summary"
      " FROM results r JOIN tests t ON t.id = r.test_id WHERE r.test_id = $1",
      id);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_DOUBLE_EQ(row[0]["max_sustainable_qps"].as<double>(), 20);
  EXPECT_TRUE(row[0]["converged"].as<bool>());
  EXPECT_EQ(row[0]["steps_taken"].as<int>(), 2);
  EXPECT_TRUE(row[0]["same"].as<bool>());
  EXPECT_STREQ(row[0]["summary"].c_str(), "highest passing rate 20 qps");

  // Finished: no second completion, no more steps, nothing to lease.
  EXPECT_EQ(tests_->Complete(id, t.attempt(), result, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tests_->ReportStep(id, t.attempt(), ValidStep(2, 30)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(QueueIsEmpty());
  // Get after the fact shows the same.
  v1::Test got = Get(id);
  EXPECT_EQ(got.state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(got.result().max_sustainable_qps(), 20);
}

TEST_F(TestRepositoryTest, CompleteWithErrorFails) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  absl::StatusOr<v1::Test> done =
      tests_->Complete(id, t.attempt(), std::nullopt, "predictor unreachable");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TEST_STATE_FAILED);
  EXPECT_EQ(done->error(), "predictor unreachable");
  EXPECT_FALSE(done->has_result());
  EXPECT_EQ(Sql("SELECT count(*) FROM results")[0][0].as<int>(), 0);
}

TEST_F(TestRepositoryTest, CancelQueuedEndsItAtOnce) {
  int64_t id = Submit().id();
  absl::StatusOr<v1::Test> cancelled = tests_->Cancel(id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::TEST_STATE_CANCELLED);
  EXPECT_TRUE(cancelled->has_end_time());
  EXPECT_TRUE(QueueIsEmpty());
  EXPECT_EQ(tests_->Cancel(id).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tests_->Cancel(777777).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TestRepositoryTest, CancelRunningReachesTheWorkerThroughItsHeartbeat) {
  int64_t id = Submit().id();
  v1::Test t = Lease("worker-1");
  absl::StatusOr<v1::Test> requested = tests_->Cancel(id);
  ASSERT_TRUE(requested.ok()) << requested.status();
  EXPECT_EQ(requested->state(), v1::TEST_STATE_RUNNING) << "still running until the worker stops";
  EXPECT_TRUE(requested->cancel_requested());

  absl::StatusOr<bool> cancel = tests_->Heartbeat(id, t.attempt(), "worker-1", absl::Seconds(30));
  ASSERT_TRUE(cancel.ok()) << cancel.status();
  EXPECT_TRUE(*cancel);
  // The worker may still store what it measured, then ends the test: it ends cancelled.
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(0, 10)).ok());
  absl::StatusOr<v1::Test> done = tests_->Complete(id, t.attempt(), std::nullopt, "cancelled");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TEST_STATE_CANCELLED);
  EXPECT_EQ(done->steps_size(), 1);
  EXPECT_EQ(tests_->Cancel(id).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TestRepositoryTest, ListIsNewestFirstWithoutStepsAndFilters) {
  const int64_t other_model = RegisterModelId(ValidModel("bert", "v1"));
  int64_t a = Submit().id();
  int64_t b = Submit().id();
  absl::StatusOr<v1::Test> c = tests_->Submit(ValidSpec("bert"), other_model, "");
  ASSERT_TRUE(c.ok());
  v1::Test leased = Lease();  // a: the oldest of the equal-priority tests
  ASSERT_EQ(leased.id(), a);
  ASSERT_TRUE(tests_->ReportStep(a, 1, ValidStep(0, 10)).ok());

  absl::StatusOr<std::vector<v1::Test>> all = tests_->List({.limit = 10});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id(), c->id());
  EXPECT_EQ((*all)[1].id(), b);
  EXPECT_EQ((*all)[2].id(), a);
  for (const v1::Test& t : *all) EXPECT_EQ(t.steps_size(), 0);
  EXPECT_EQ((*all)[0].model().name(), "bert");

  absl::StatusOr<std::vector<v1::Test>> running =
      tests_->List({.state = v1::TEST_STATE_RUNNING, .limit = 10});
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].id(), a);

  absl::StatusOr<std::vector<v1::Test>> bert = tests_->List({.model = "bert", .limit = 10});
  ASSERT_TRUE(bert.ok());
  ASSERT_EQ(bert->size(), 1u);
  EXPECT_EQ((*bert)[0].id(), c->id());

  absl::StatusOr<std::vector<v1::Test>> limited = tests_->List({.limit = 2});
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 2u);
}

TEST_F(TestRepositoryTest, ReaperRequeuesExpiredLeasesAndLeavesLiveOnesAlone) {
  int64_t expired = Submit().id();
  int64_t live = Submit().id();
  Lease("worker-1");
  Lease("worker-2");
  ExpireLease(expired);

  LeaseReaper reaper(pool_.get(), {.backoff = absl::Seconds(60)});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->ran);
  EXPECT_EQ(pass->requeued, 1);
  EXPECT_EQ(pass->failed, 0);

  v1::Test e = Get(expired);
  EXPECT_EQ(e.state(), v1::TEST_STATE_QUEUED);
  EXPECT_TRUE(e.lease_owner().empty());
  EXPECT_EQ(e.requeue_reason(), "lease of worker-1 expired at attempt 1");
  EXPECT_EQ(Get(live).state(), v1::TEST_STATE_RUNNING);
  // The first expiry is retried at once (most often it was the worker that died)...
  v1::Test again = Lease("worker-3");
  EXPECT_EQ(again.id(), expired);
  EXPECT_EQ(again.attempt(), 2);
  // ... a second one only after the backoff: not leasable until not_before.
  ExpireLease(expired);
  pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->requeued, 1);
  EXPECT_EQ(Get(expired).state(), v1::TEST_STATE_QUEUED);
  EXPECT_TRUE(QueueIsEmpty());
  double wait_s =
      SqlParams("SELECT extract(epoch FROM not_before - now())::float8 FROM tests WHERE id = $1",
                expired)[0][0]
          .as<double>();
  EXPECT_GT(wait_s, 30);

  // A second pass finds nothing more.
  pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->requeued, 0);
}

TEST_F(TestRepositoryTest, ALeaseAgainResumesFromTheStepsEarlierAttemptsCompleted) {
  int64_t id = Submit(0, "", /*max_attempts=*/5).id();
  ASSERT_EQ(Lease("worker-1").attempt(), 1);
  v1::Step step1 = ValidStep(1, 20);
  *step1.add_windows() = FullWindow(0, false);
  *step1.add_windows() = FullWindow(1, false);
  ASSERT_TRUE(tests_->ReportStep(id, 1, step1).ok());
  ASSERT_TRUE(tests_->ReportStep(id, 1, ValidStep(2, 30)).ok());
  v1::Step cut = ValidStep(3, 40);
  cut.set_interrupted(true);
  cut.set_passed(false);
  ASSERT_TRUE(tests_->ReportStep(id, 1, cut).ok());

  // worker-1 dies; the reaper returns the test and worker-2 leases it.
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  ASSERT_TRUE(reaper.RunOnce().ok());
  v1::Test second = Lease("worker-2");
  ASSERT_EQ(second.id(), id);
  ASSERT_EQ(second.attempt(), 2);
  // The lease hands over the two completed steps (as measured by attempt 1), not the
  // interrupted one, which is measured again.
  ASSERT_EQ(second.steps_size(), 2);
  EXPECT_EQ(second.steps(0).index(), 1);
  EXPECT_EQ(second.steps(0).attempt(), 1);
  EXPECT_EQ(second.steps(0).target_qps(), 20);
  EXPECT_EQ(second.steps(1).index(), 2);
  EXPECT_EQ(second.steps(0).windows_size(), 0);  // the worker needs no windows
  // They are the new attempt's now, with their windows: listed once, stored once.
  absl::StatusOr<v1::Test> got = tests_->Get(id, {.windows = true});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->steps_size(), 2);
  EXPECT_EQ(got->steps(0).windows_size(), 2);
  EXPECT_EQ(SqlParams("SELECT count(*) FROM steps WHERE test_id = $1 AND attempt = 2", id)[0][0]
                .as<int>(),
            2);
  EXPECT_EQ(
      SqlParams("SELECT count(*) FROM step_windows WHERE test_id = $1 AND attempt = 2", id)[0][0]
          .as<int>(),
      2);
  // The interrupted step stays with the attempt that cut it short.
  EXPECT_EQ(SqlParams("SELECT step_index FROM steps WHERE test_id = $1 AND attempt = 1", id)[0][0]
                .as<int>(),
            3);

  // worker-2 measures step 3 and gives the lease back; attempt 3 resumes after step 3.
  ASSERT_TRUE(tests_->ReportStep(id, 2, ValidStep(3, 40)).ok());
  ASSERT_TRUE(tests_->Release(id, 2, "worker-2", "shutting down").ok());
  v1::Test third = Lease("worker-3");
  ASSERT_EQ(third.attempt(), 3);
  ASSERT_EQ(third.steps_size(), 3);
  EXPECT_EQ(third.steps(2).index(), 3);
  EXPECT_EQ(third.steps(2).attempt(), 2);
  EXPECT_FALSE(third.steps(2).interrupted());
  EXPECT_EQ(SqlParams("SELECT count(*) FROM steps WHERE test_id = $1", id)[0][0].as<int>(), 4);

  // Completing counts every step of the test once.
  v1::TestResult result;
  result.set_max_sustainable_qps(30);
  absl::StatusOr<v1::Test> done = tests_->Complete(id, 3, result, "");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->result().steps_taken(), 3);
  EXPECT_EQ(done->steps_size(), 3);
}

TEST_F(TestRepositoryTest, AReaperThatJustStartedGivesExpiredLeasesAGraceFirst) {
  // The orchestrator was down (or the database: a failed pass does the same) for longer
  // than the lease, so the worker's heartbeats failed although it lived.
  int64_t id = Submit().id();
  Lease("worker-1");
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(),
                     {.backoff = absl::ZeroDuration(), .outage_grace = absl::Seconds(60)});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->ran);
  EXPECT_EQ(pass->extended, 1);
  EXPECT_EQ(pass->requeued, 0);
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_RUNNING);
  EXPECT_GT(SqlParams("SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM tests"
                      " WHERE id = $1",
                      id)[0][0]
                .as<double>(),
            30);
  EXPECT_TRUE(tests_->Heartbeat(id, 1, "worker-1", absl::Seconds(30)).ok());

  // Once: a worker that stays silent loses its test at the next expiry.
  ExpireLease(id);
  pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->extended, 0);
  EXPECT_EQ(pass->requeued, 1);
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_QUEUED);
}

TEST_F(TestRepositoryTest, ReaperFailsTheTestAfterItsLastAttempt) {
  int64_t id = Submit(0, "", /*max_attempts=*/2).id();
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  for (int attempt = 1; attempt <= 2; ++attempt) {
    v1::Test t = Lease();
    ASSERT_EQ(t.id(), id);
    ASSERT_EQ(t.attempt(), attempt);
    ExpireLease(id);
    absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
    ASSERT_TRUE(pass.ok()) << pass.status();
    EXPECT_EQ(pass->requeued, attempt < 2 ? 1 : 0);
    EXPECT_EQ(pass->failed, attempt < 2 ? 0 : 1);
  }
  v1::Test failed = Get(id);
  EXPECT_EQ(failed.state(), v1::TEST_STATE_FAILED);
  EXPECT_EQ(failed.error(), "lease expired after 2 attempts");
  EXPECT_TRUE(failed.has_end_time());
  EXPECT_TRUE(QueueIsEmpty());
}

TEST_F(TestRepositoryTest, ReaperCancelsAnExpiredTestWhoseCancellationWasRequested) {
  int64_t id = Submit().id();
  Lease();
  ASSERT_TRUE(tests_->Cancel(id).ok());
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->cancelled, 1);
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_CANCELLED);
  EXPECT_TRUE(QueueIsEmpty());
}

TEST_F(TestRepositoryTest, ReleaseByTheHolderQueuesTheTestForAnyWorkerAtOnce) {
  int64_t id = Submit().id();
  v1::Test t = Lease("worker-1");
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(0, 10)).ok());
  v1::Step interrupted = ValidStep(1, 20);
  interrupted.set_passed(false);
  interrupted.set_interrupted(true);
  interrupted.set_verdict("interrupted: worker shutting down");
  ASSERT_TRUE(tests_->ReportStep(id, t.attempt(), interrupted).ok());

  absl::StatusOr<v1::Test> released =
      tests_->Release(id, t.attempt(), "worker-1", "worker-1 shutting down");
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->state(), v1::TEST_STATE_QUEUED);
  EXPECT_TRUE(released->lease_owner().empty());
  EXPECT_EQ(released->requeue_reason(), "worker-1 shutting down");
  EXPECT_TRUE(released->error().empty());
  // The steps of the released attempt stay stored, the interrupted one flagged.
  ASSERT_EQ(released->steps_size(), 2);
  EXPECT_FALSE(released->steps(0).interrupted());
  EXPECT_TRUE(released->steps(1).interrupted());
  EXPECT_EQ(Get(id).requeue_reason(), "worker-1 shutting down");

  // No backoff (unlike an expired lease): another worker leases it right away.
  v1::Test again = Lease("worker-2");
  EXPECT_EQ(again.id(), id);
  EXPECT_EQ(again.attempt(), t.attempt() + 1);
  EXPECT_EQ(again.lease_owner(), "worker-2");
  // The new attempt resumes from the completed step; the interrupted one stays behind.
  ASSERT_EQ(again.steps_size(), 1);
  EXPECT_EQ(again.steps(0).index(), 0);
  EXPECT_EQ(SqlParams("SELECT count(*) FROM steps WHERE test_id = $1 AND attempt = $2", id,
                      t.attempt())[0][0]
                .as<int>(),
            1);
  // The released attempt is fenced off like any stale one.
  EXPECT_EQ(tests_->ReportStep(id, t.attempt(), ValidStep(2, 30)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(TestRepositoryTest, ReleaseByAStaleHolderIsRefusedAndChangesNothing) {
  int64_t id = Submit().id();
  v1::Test t = Lease("worker-1");
  const auto snapshot = [&] {
    pqxx::row r = SqlParams(
        "SELECT state, attempt, lease_owner, max_attempts, lease_expires_at IS NOT NULL,"
        "   coalesce(requeue_reason, '') FROM tests WHERE id = $1",
        id)[0];
    return std::make_tuple(std::string(r[0].c_str()), r[1].as<int>(), std::string(r[2].c_str()),
                           r[3].as<int>(), r[4].as<bool>(), std::string(r[5].c_str()));
  };
  const auto before = snapshot();

  absl::StatusOr<v1::Test> stale = tests_->Release(id, t.attempt() + 1, "worker-1", "");
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition) << stale.status();
  absl::StatusOr<v1::Test> other = tests_->Release(id, t.attempt(), "worker-2", "");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition) << other.status();
  EXPECT_THAT(other.status().message(), HasSubstr("worker-1"));
  EXPECT_EQ(tests_->Release(999999, 1, "worker-1", "").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(snapshot(), before);
  EXPECT_TRUE(QueueIsEmpty());

  // After the reaper took the test back and another worker leased it, the old holder's
  // release bounces off too, and the new holder keeps its lease.
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  ASSERT_TRUE(reaper.RunOnce().ok());
  v1::Test second = Lease("worker-new");
  ASSERT_EQ(second.id(), id);
  EXPECT_EQ(tests_->Release(id, t.attempt(), "worker-1", "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  v1::Test now = Get(id);
  EXPECT_EQ(now.state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(now.lease_owner(), "worker-new");
}

TEST_F(TestRepositoryTest, ALeaseBelongsToTheTokenThatTookItAndOtherTokensChangeNothing) {
  constexpr int64_t kHolder = 11, kOther = 12;
  int64_t id = Submit().id();
  absl::StatusOr<std::optional<v1::Test>> leased =
      tests_->Lease("worker-1", absl::Seconds(30), kHolder);
  ASSERT_TRUE(leased.ok() && leased->has_value()) << leased.status();
  const int32_t attempt = (*leased)->attempt();
  EXPECT_EQ(SqlParams("SELECT lease_token_id FROM tests WHERE id = $1", id)[0][0].as<int64_t>(),
            kHolder);
  const auto before = LeaseRow(id);

  // Another token, even under the holder's worker_id, is refused by every call.
  absl::StatusOr<bool> beat = tests_->Heartbeat(id, attempt, "worker-1", absl::Hours(1), kOther);
  EXPECT_EQ(beat.status().code(), absl::StatusCode::kPermissionDenied) << beat.status();
  EXPECT_THAT(beat.status().message(), HasSubstr("another worker token"));
  absl::Status step = tests_->ReportStep(id, attempt, ValidStep(0, 10), kOther);
  EXPECT_EQ(step.code(), absl::StatusCode::kPermissionDenied) << step;
  v1::TestResult result;
  result.set_max_sustainable_qps(10);
  EXPECT_EQ(tests_->Complete(id, attempt, result, "", kOther).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tests_->Complete(id, attempt, std::nullopt, "boom", kOther).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tests_->Release(id, attempt, "worker-1", "", kOther).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(LeaseRow(id), before);
  // A stale attempt is a lost lease, whoever asks.
  EXPECT_EQ(tests_->ReportStep(id, attempt + 1, ValidStep(0, 10), kOther).code(),
            absl::StatusCode::kFailedPrecondition);

  // The holder's calls work.
  EXPECT_TRUE(tests_->Heartbeat(id, attempt, "worker-1", absl::Seconds(30), kHolder).ok());
  EXPECT_TRUE(tests_->ReportStep(id, attempt, ValidStep(0, 10), kHolder).ok());
  absl::StatusOr<v1::Test> done = tests_->Complete(id, attempt, result, "", kHolder);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TEST_STATE_SUCCEEDED);
  // After the end, the attempt still answers to its holder only.
  EXPECT_EQ(tests_->ReportStep(id, attempt, ValidStep(1, 20), kOther).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tests_->ReportStep(id, attempt, ValidStep(1, 20), kHolder).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(TestRepositoryTest, ALeaseTakenWithoutATokenIsFencedByAttemptAndWorkerIdAlone) {
  int64_t id = Submit().id();
  v1::Test t = Lease("worker-1");  // auth off: no token recorded
  EXPECT_TRUE(SqlParams("SELECT lease_token_id FROM tests WHERE id = $1", id)[0][0].is_null());
  EXPECT_TRUE(tests_->Heartbeat(id, t.attempt(), "worker-1", absl::Seconds(30), 12).ok());
  EXPECT_EQ(tests_->Heartbeat(id, t.attempt(), "worker-2", absl::Seconds(30), 12).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(tests_->ReportStep(id, t.attempt(), ValidStep(0, 10), 12).ok());
}

TEST_F(TestRepositoryTest, LeasingAgainBindsTheTestToTheNewHoldersToken) {
  int64_t id = Submit().id();
  absl::StatusOr<std::optional<v1::Test>> first = tests_->Lease("worker-1", absl::Seconds(30), 11);
  ASSERT_TRUE(first.ok() && first->has_value());
  ASSERT_TRUE(tests_->Release(id, (*first)->attempt(), "worker-1", "bye", 11).ok());
  absl::StatusOr<std::optional<v1::Test>> second = tests_->Lease("worker-2", absl::Seconds(30), 12);
  ASSERT_TRUE(second.ok() && second->has_value());
  const int32_t attempt = (*second)->attempt();
  EXPECT_EQ(tests_->Heartbeat(id, attempt, "worker-2", absl::Seconds(30), 11).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(tests_->Heartbeat(id, attempt, "worker-2", absl::Seconds(30), 12).ok());
}

TEST_F(TestRepositoryTest, ReleaseDoesNotUseUpAnAttempt) {
  int64_t id = Submit(0, "", /*max_attempts=*/1).id();
  v1::Test first = Lease();
  ASSERT_TRUE(tests_->Release(id, first.attempt(), "worker-1", "shutting down").ok());
  v1::Test second = Lease();
  ASSERT_EQ(second.attempt(), 2);
  // The one attempt the test has is the second lease: its expiry fails the test (without
  // the release it would be the first).
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->failed, 1);
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_FAILED);
}

// Releases are free attempts, so they are bounded: a test its workers keep giving back (a
// worker that quits on it, a token releasing in a loop) fails instead of running forever.
TEST_F(TestRepositoryTest, ATestReleasedMoreThanTheLimitFailsAtTheReleaseOverIt) {
  int64_t id = Submit(0, "", /*max_attempts=*/1).id();
  for (int i = 0; i < TestRepository::kMaxLeaseReleases; ++i) {
    v1::Test leased = Lease();
    ASSERT_EQ(leased.id(), id);
    absl::StatusOr<v1::Test> released =
        tests_->Release(id, leased.attempt(), "worker-1", "shutting down");
    ASSERT_TRUE(released.ok()) << released.status();
    ASSERT_EQ(released->state(), v1::TEST_STATE_QUEUED) << "release " << i + 1;
  }
  v1::Test last = Lease();
  ASSERT_EQ(last.id(), id);
  ASSERT_EQ(last.attempt(), TestRepository::kMaxLeaseReleases + 1);
  absl::StatusOr<v1::Test> over = tests_->Release(id, last.attempt(), "worker-1", "shutting down");
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_EQ(over->state(), v1::TEST_STATE_FAILED);
  EXPECT_THAT(over->error(),
              HasSubstr(absl::StrCat("lease given back ", TestRepository::kMaxLeaseReleases + 1,
                                     " times; a test may be given back ",
                                     TestRepository::kMaxLeaseReleases)));
  EXPECT_THAT(over->error(), HasSubstr("shutting down"));
  EXPECT_TRUE(over->has_end_time());
  EXPECT_TRUE(QueueIsEmpty());
  // The release over the limit added no attempt.
  EXPECT_EQ(std::get<4>(LeaseRow(id)), 1 + TestRepository::kMaxLeaseReleases);
  // Its attempt is over like any finished one.
  EXPECT_EQ(tests_->Release(id, last.attempt(), "worker-1", "").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(TestRepositoryTest, ReleaseOfATestWhoseCancellationWasRequestedCancelsIt) {
  int64_t id = Submit().id();
  v1::Test t = Lease();
  ASSERT_TRUE(tests_->Cancel(id).ok());
  absl::StatusOr<v1::Test> released = tests_->Release(id, t.attempt(), "worker-1", "bye");
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->state(), v1::TEST_STATE_CANCELLED);
  EXPECT_TRUE(released->has_end_time());
  EXPECT_TRUE(QueueIsEmpty());
}

TEST_F(TestRepositoryTest, OnlyOneReplicaReapsAtATime) {
  int64_t id = Submit().id();
  Lease();
  ExpireLease(id);
  // Another replica is mid-pass: it holds the reaper's advisory lock.
  pqxx::connection other(db_->conninfo());
  pqxx::work other_txn(other);
  ASSERT_TRUE(
      other_txn
          .exec_params1("SELECT pg_try_advisory_xact_lock($1)", LeaseReaper::kAdvisoryLockKey)[0]
          .as<bool>());
  LeaseReaper reaper(pool_.get(), {.backoff = absl::ZeroDuration()});
  absl::StatusOr<LeaseReaper::Pass> pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_FALSE(pass->ran);
  EXPECT_EQ(Get(id).state(), v1::TEST_STATE_RUNNING);

  other_txn.commit();  // the other replica finished
  pass = reaper.RunOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_TRUE(pass->ran);
  EXPECT_EQ(pass->requeued, 1);
}

TEST_F(TestRepositoryTest, BackgroundReaperRunsPeriodically) {
  int64_t id = Submit().id();
  Lease();
  ExpireLease(id);
  LeaseReaper reaper(pool_.get(),
                     {.interval = absl::Milliseconds(20), .backoff = absl::ZeroDuration()});
  reaper.Start();
  // Wait (bounded) for the background pass; this asserts that it happens, not how fast.
  bool requeued = false;
  for (int i = 0; i < 500 && !requeued; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
    requeued = Get(id).state() == v1::TEST_STATE_QUEUED;
  }
  reaper.Stop();
  EXPECT_TRUE(requeued);
}

}  // namespace
}  // namespace vanguard
