// The queue across orchestrator replicas (real PostgreSQL via $VANGUARD_TEST_PG): long-poll
// leases woken by a submit through another replica, not_before, priority, and 16 leasers
// on two replicas taking 2,000 tests each exactly once.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "database_test_base.h"
#include "gtest/gtest.h"
#include "orchestrator/queue_notifier.h"

namespace vanguard {
namespace {

// One orchestrator replica: its own pool, repositories, notifier and service.
struct Replica {
  Replica(const std::string& conninfo, OrchestratorService::Options options) {
    pool = *PostgresPool::Create({.conninfo = conninfo, .size = 4});
    models = std::make_unique<ModelRepository>(pool.get());
    tests = std::make_unique<TestRepository>(pool.get());
    queue = std::make_unique<QueueNotifier>(QueueNotifier::Options{.conninfo = conninfo});
    queue->Start();
    service = std::make_unique<OrchestratorService>(models.get(), tests.get(), nullptr, queue.get(),
                                                    options);
  }
  std::unique_ptr<PostgresPool> pool;
  std::unique_ptr<ModelRepository> models;
  std::unique_ptr<TestRepository> tests;
  std::unique_ptr<QueueNotifier> queue;
  std::unique_ptr<OrchestratorService> service;
};

class QueueTest : public DatabaseTest {
 protected:
  void WaitUntilListening(const Replica& replica) {
    for (int i = 0; i < 500 && !replica.queue->listening(); ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_TRUE(replica.queue->listening());
  }
};

TEST_F(QueueTest, LongPollingLeaseWakesWhenAnotherReplicaQueuesATest) {
  ASSERT_GT(RegisterModelId(ValidModel()), 0);
  OrchestratorService::Options no_polling;
  no_polling.lease_poll_interval = absl::Hours(1);  // only a notification can wake it
  Replica waiting(db_->conninfo(), no_polling);
  Replica submitting(db_->conninfo(), OrchestratorService::Options());
  WaitUntilListening(waiting);

  absl::StatusOr<v1::LeaseTestResponse> leased;
  std::thread worker([&] {
    v1::LeaseTestRequest request;
    request.set_worker_id("long-poller");
    request.mutable_wait()->set_seconds(25);
    leased = waiting.service->LeaseTest(request);
  });
  // Let the lease call start waiting; a submit before it would be found by its first try,
  // which is fine too (the test then checks the plain path).
  absl::SleepFor(absl::Milliseconds(300));
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  absl::StatusOr<v1::SubmitTestResponse> submitted = submitting.service->SubmitTest(submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  worker.join();
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_TRUE(leased->has_test()) << "the long poll was not woken by the other replica";
  EXPECT_EQ(leased->test().id(), submitted->test().id());
}

TEST_F(QueueTest, LongPollingLeaseWakesWhenAnotherReplicaTakesAReleasedLease) {
  ASSERT_GT(RegisterModelId(ValidModel()), 0);
  OrchestratorService::Options no_polling;
  no_polling.lease_poll_interval = absl::Hours(1);  // only a notification can wake it
  Replica waiting(db_->conninfo(), no_polling);
  Replica releasing(db_->conninfo(), OrchestratorService::Options());
  WaitUntilListening(waiting);
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  ASSERT_TRUE(releasing.service->SubmitTest(submit).ok());
  v1::LeaseTestRequest first;
  first.set_worker_id("stopping-worker");
  absl::StatusOr<v1::LeaseTestResponse> held = releasing.service->LeaseTest(first);
  ASSERT_TRUE(held.ok() && held->has_test()) << held.status();

  absl::StatusOr<v1::LeaseTestResponse> leased;
  std::thread worker([&] {
    v1::LeaseTestRequest request;
    request.set_worker_id("long-poller");
    request.mutable_wait()->set_seconds(25);
    leased = waiting.service->LeaseTest(request);
  });
  absl::SleepFor(absl::Milliseconds(300));
  v1::ReleaseTestRequest release;
  release.set_test_id(held->test().id());
  release.set_attempt(held->attempt());
  release.set_worker_id("stopping-worker");
  absl::StatusOr<v1::ReleaseTestResponse> released = releasing.service->ReleaseTest(release);
  ASSERT_TRUE(released.ok()) << released.status();
  worker.join();
  ASSERT_TRUE(leased.ok()) << leased.status();
  ASSERT_TRUE(leased->has_test()) << "the long poll was not woken by the release";
  EXPECT_EQ(leased->test().id(), held->test().id());
  EXPECT_EQ(leased->attempt(), held->attempt() + 1);
}

TEST_F(QueueTest, StoppingTheNotifierEndsWaitingLeasesEmpty) {
  Replica replica(db_->conninfo(), OrchestratorService::Options());
  WaitUntilListening(replica);
  absl::StatusOr<v1::LeaseTestResponse> leased;
  std::thread worker([&] {
    v1::LeaseTestRequest request;
    request.set_worker_id("w");
    request.mutable_wait()->set_seconds(25);
    leased = replica.service->LeaseTest(request);
  });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time stopped = absl::Now();
  replica.queue->Stop();  // as at server shutdown
  worker.join();
  ASSERT_TRUE(leased.ok()) << leased.status();
  EXPECT_FALSE(leased->has_test());
  // Not woken, it would run out its 25 s wait (re-polling the database); the bound is loose
  // on purpose (a busy CI box), the difference is an order of magnitude.
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(12));
}

TEST_F(QueueTest, LeaseWithoutWaitOrDeadlineAnswersAtOnceWhenEmpty) {
  Replica replica(db_->conninfo(), OrchestratorService::Options());
  v1::LeaseTestRequest request;
  request.set_worker_id("w");
  absl::StatusOr<v1::LeaseTestResponse> leased = replica.service->LeaseTest(request);
  ASSERT_TRUE(leased.ok()) << leased.status();
  EXPECT_FALSE(leased->has_test());

  request.mutable_wait()->set_seconds(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(replica.service->LeaseTest(request).status()));
}

TEST_F(QueueTest, NotBeforeHoldsATestBackAndPriorityOrdersTheRest) {
  ASSERT_GT(RegisterModelId(ValidModel()), 0);
  v1::SubmitTestRequest later;
  *later.mutable_spec() = ValidSpec();
  later.mutable_spec()->set_priority(100);
  later.mutable_spec()->mutable_not_before()->set_seconds(absl::ToUnixSeconds(absl::Now()) + 3600);
  absl::StatusOr<v1::SubmitTestResponse> held = service_->SubmitTest(later);
  ASSERT_TRUE(held.ok()) << held.status();
  std::vector<int64_t> ids;
  for (int priority : {1, 5, 3}) {
    v1::SubmitTestRequest submit;
    *submit.mutable_spec() = ValidSpec();
    submit.mutable_spec()->set_priority(priority);
    absl::StatusOr<v1::SubmitTestResponse> s = service_->SubmitTest(submit);
    ASSERT_TRUE(s.ok()) << s.status();
    ids.push_back(s->test().id());
  }
  std::vector<int64_t> order;
  while (true) {
    v1::LeaseTestRequest request;
    request.set_worker_id("w");
    absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(request);
    ASSERT_TRUE(leased.ok()) << leased.status();
    if (!leased->has_test()) break;
    order.push_back(leased->test().id());
  }
  EXPECT_EQ(order, (std::vector<int64_t>{ids[1], ids[2], ids[0]}));  // 5, 3, 1; held not leased

  // Once its time has come, the held test is leased.
  SqlParams("UPDATE tests SET not_before = now() - interval '1 second' WHERE id = $1",
            held->test().id());
  v1::LeaseTestRequest request;
  request.set_worker_id("w");
  absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(request);
  ASSERT_TRUE(leased.ok());
  ASSERT_TRUE(leased->has_test());
  EXPECT_EQ(leased->test().id(), held->test().id());

  v1::SubmitTestRequest bad;
  *bad.mutable_spec() = ValidSpec();
  bad.mutable_spec()->mutable_not_before()->set_nanos(-5);
  absl::Status status = service_->SubmitTest(bad).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("spec.not_before"), std::string::npos) << status;
}

TEST_F(QueueTest, SixteenLeasersOnTwoReplicasLeaseEachOf2000TestsExactlyOnce) {
  constexpr int kTests = 2000;
  constexpr int kLeasers = 16;
  const int64_t model_id = RegisterModelId(ValidModel());
  ASSERT_GT(model_id, 0);
  // Finished history in the table as well: it must not be leased or slow the queue.
  SqlParams(
      "INSERT INTO tests (model_id, spec, priority, state, finished_at)"
      " SELECT $1, '{\"model\":\"resnet50\"}', 0, 'succeeded', now()"
      " FROM generate_series(1, 3000)",
      model_id);
  SqlParams(
      "INSERT INTO tests (model_id, spec, priority)"
      " SELECT $1, '{\"model\":\"resnet50\",\"sweep\":{\"rates_qps\":[10]}}', g % 4"
      " FROM generate_series(1, $2) g",
      model_id, kTests);
  Replica a(db_->conninfo(), OrchestratorService::Options());
  Replica b(db_->conninfo(), OrchestratorService::Options());

  std::mutex mu;
  std::map<int64_t, int> lease_count;
  std::vector<absl::Status> errors(kLeasers);
  std::vector<std::thread> leasers;
  for (int w = 0; w < kLeasers; ++w) {
    leasers.emplace_back([&, w] {
      OrchestratorService& service = *(w % 2 == 0 ? a.service : b.service);
      v1::LeaseTestRequest request;
      request.set_worker_id("worker-" + std::to_string(w));
      while (true) {
        absl::StatusOr<v1::LeaseTestResponse> leased = service.LeaseTest(request);
        if (!leased.ok()) {
          errors[w] = leased.status();
          return;
        }
        if (!leased->has_test()) return;  // drained
        std::lock_guard<std::mutex> lock(mu);
        ++lease_count[leased->test().id()];
      }
    });
  }
  for (std::thread& t : leasers) t.join();
  for (const absl::Status& e : errors) EXPECT_TRUE(e.ok()) << e;
  EXPECT_EQ(lease_count.size(), static_cast<size_t>(kTests));
  for (const auto& [id, count] : lease_count) EXPECT_EQ(count, 1) << "test " << id;
  EXPECT_EQ(Sql("SELECT count(*) FROM tests WHERE state = 'queued'")[0][0].as<int>(), 0);
  EXPECT_EQ(
      Sql("SELECT count(*) FROM tests WHERE attempt <> 1 AND state = 'running'")[0][0].as<int>(),
      0);
}

}  // namespace
}  // namespace vanguard
