// Crash tests (issue 20, "nothing lost"): the real binaries on loopback (E2eStack), with the
// orchestrator's and the worker's default lease settings, and a process or a reply lost in
// the middle of a test. Each test checks what a user would: the test finishes, every step is
// listed once (none measured twice, none lost), and the test is taken over within 15 s.
//
// Timing: steps are short (1 s warmup + 2 s measured); the only time bound asserted is the
// 15 s takeover the issue asks for, which the defaults (10 s lease, 1 s reaper) meet with
// margin on a loaded machine. The waits are deadlines on real processes, polled in the
// database.
#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "e2e_stack.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"
#include "tests/testing/tcp_proxy.h"

namespace vanguard::testing {
namespace {

using ::testing::HasSubstr;

// What the database says about a test, polled while processes die and take over.
struct TestRow {
  std::string state;
  int attempt = 0;
  std::string owner;
  int steps = 0;          // stored under the current attempt
  int progress_step = 0;  // the step in flight the worker reported progress for; 0: none
};

class CrashTest : public E2eStack {
 protected:
  // No steady-state settling: each step is its 1 s warmup and its 2 s measured part.
  const std::vector<std::string> kWorkerFlags = {"--steady_state_detection=false"};

  void RegisterModel() {
    RunResult reg =
        Vanguard({"models", "register", "--name=e2e", "--version=v1",
                  absl::StrCat("--endpoint=http://", sim_->address()), "--protocol=kserve_v2_rest",
                  "--p99_ms=100", "--max_error_rate=0.01", "--output=json"});
    ASSERT_EQ(reg.exit_code, 0) << reg.err;
  }

  // Submits a sweep over `rates` (all well under the simulator's 400 req/s); its id.
  int64_t Submit(const std::string& rates) {
    RunResult sub =
        Vanguard({"submit", "--model=e2e", "--version=v1", absl::StrCat("--rates=", rates),
                  "--step_duration=2s", "--step_warmup=1s", "--output=json"});
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    if (sub.exit_code != 0) return 0;
    nlohmann::json test = nlohmann::json::parse(sub.out);
    return test["id"].is_string() ? std::stoll(test["id"].get<std::string>())
                                  : test["id"].get<int64_t>();
  }

  // The row of test `id`; reconnects once if the database restarted under the connection.
  TestRow Row(int64_t id) {
    try {
      return ReadRow(id);
    } catch (const pqxx::broken_connection&) {
      conn_.reset();
      return ReadRow(id);
    }
  }

  TestRow ReadRow(int64_t id) {
    if (conn_ == nullptr) conn_ = std::make_unique<pqxx::connection>(conninfo());
    pqxx::nontransaction txn(*conn_);
    pqxx::row r = txn.exec_params1(
        "SELECT t.state, t.attempt, coalesce(t.lease_owner, ''),"
        "   (SELECT count(*) FROM steps s WHERE s.test_id = t.id AND s.attempt = t.attempt),"
        "   coalesce((SELECT step_index FROM test_progress p"
        "             WHERE p.test_id = t.id AND p.attempt = t.attempt), 0)"
        " FROM tests t WHERE t.id = $1",
        id);
    return {r[0].c_str(), r[1].as<int>(), r[2].c_str(), r[3].as<int>(), r[4].as<int>()};
  }

  // Polls Row every 100 ms until `done` holds or `limit` passes; the last row seen.
  template <typename Pred>
  TestRow WaitFor(int64_t id, absl::Duration limit, Pred done) {
    const absl::Time until = absl::Now() + limit;
    TestRow row = Row(id);
    while (!done(row) && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(100));
      row = Row(id);
    }
    return row;
  }

  // The finished test as `vanguard get --output=json` prints it.
  nlohmann::json Get(int64_t id) {
    RunResult get = Vanguard({"get", absl::StrCat(id), "--output=json"});
    EXPECT_EQ(get.exit_code, 0) << get.err;
    return get.exit_code == 0 ? nlohmann::json::parse(get.out) : nlohmann::json();
  }

  // Every step of `test` once, in index order 1..n, at `rates` in that order; the attempt
  // that measured each.
  static std::vector<int> ExpectEachStepOnce(const nlohmann::json& test,
                                             const std::vector<double>& rates) {
    std::vector<int> attempts;
    const nlohmann::json& steps = test["steps"];
    EXPECT_EQ(steps.size(), rates.size()) << test.dump(1);
    for (size_t i = 0; i < steps.size() && i < rates.size(); ++i) {
      EXPECT_EQ(steps[i]["index"].get<int>(), static_cast<int>(i + 1)) << steps[i].dump();
      EXPECT_EQ(steps[i]["target_qps"].get<double>(), rates[i]) << steps[i].dump();
      EXPECT_FALSE(steps[i].value("interrupted", false)) << steps[i].dump();
      EXPECT_TRUE(steps[i]["passed"].get<bool>()) << steps[i].dump();
      attempts.push_back(steps[i].value("attempt", 0));
    }
    return attempts;
  }

  int StoredSteps(int64_t id) {
    pqxx::nontransaction txn(*conn_);
    return txn.exec_params1("SELECT count(*) FROM steps WHERE test_id = $1", id)[0].as<int>();
  }

  std::unique_ptr<pqxx::connection> conn_;
};

TEST_F(CrashTest, AWorkerKilledMidStepIsTakenOverAndEveryStepIsListedOnce) {
  ASSERT_NO_FATAL_FAILURE(StartStack({.worker_flags = kWorkerFlags}));
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  const int64_t id = Submit("100,150,200,250");
  ASSERT_GT(id, 0);

  // The stack's worker leases it; a second worker, beside its own replayer, waits idle.
  TestRow row = WaitFor(id, absl::Seconds(30), [](const TestRow& r) { return r.attempt == 1; });
  ASSERT_EQ(row.owner, "e2e-worker");
  std::unique_ptr<Subprocess> standby_replayer = StartReplayer();
  ASSERT_NE(standby_replayer, nullptr);
  std::unique_ptr<Subprocess> standby = StartWorker("standby", *standby_replayer, kWorkerFlags);
  ASSERT_NE(standby, nullptr);

  // Kill the first worker in the middle of step 3 (steps 1 and 2 stored, step 3 measuring).
  row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) {
    return r.state != "running" || (r.steps == 2 && r.progress_step == 3);
  });
  ASSERT_EQ(row.state, "running");
  ASSERT_EQ(row.attempt, 1);
  ASSERT_EQ(row.steps, 2);
  ASSERT_EQ(kill(worker_->pid(), SIGKILL), 0);
  ASSERT_TRUE(worker_->Wait(absl::Seconds(10)).ok());
  const absl::Time killed = absl::Now();

  // Taken over within 15 s of the death (waiting longer only to say how long it took).
  row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) { return r.attempt >= 2; });
  const absl::Duration takeover = absl::Now() - killed;
  EXPECT_EQ(row.owner, "standby");
  EXPECT_LT(takeover, absl::Seconds(15)) << "taken over " << takeover << " after the kill";
  std::cerr << "takeover " << takeover << " after SIGKILL" << std::endl;

  row = WaitFor(id, absl::Seconds(90), [](const TestRow& r) { return r.state != "running"; });
  ASSERT_EQ(row.state, "succeeded");
  const nlohmann::json test = Get(id);
  EXPECT_EQ(test["attempt"].get<int>(), 2);
  EXPECT_THAT(test["requeue_reason"].get<std::string>(),
              HasSubstr("lease of e2e-worker expired at attempt 1"));
  // Steps 1 and 2 as the dead worker measured them, 3 and 4 by the standby: each once.
  EXPECT_THAT(ExpectEachStepOnce(test, {100, 150, 200, 250}), ::testing::ElementsAre(1, 1, 2, 2));
  EXPECT_EQ(test["result"]["steps_taken"].get<int>(), 4);
  EXPECT_EQ(test["result"]["max_sustainable_qps"].get<double>(), 250);
  EXPECT_EQ(StoredSteps(id), 4) << "a step stored twice, or one of the dead attempt left over";
}

TEST_F(CrashTest, ALostLeaseReplyIsLeasedAgainAndTheTestRunsOnce) {
  ASSERT_NO_FATAL_FAILURE(StartStack({.start_worker = false}));
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  // The worker talks to the orchestrator through a proxy that loses the first reply that
  // names the model's endpoint: LeaseTest's, after the lease is committed.
  absl::StatusOr<std::unique_ptr<TcpProxy>> proxy = TcpProxy::Start(orch_->address());
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  (*proxy)->DropReplyContaining(absl::StrCat("http://", sim_->address()));
  worker_ = StartWorker("behind-proxy", *replayer_, kWorkerFlags, (*proxy)->address());
  ASSERT_NE(worker_, nullptr);

  const int64_t id = Submit("100,200");
  ASSERT_GT(id, 0);
  TestRow row = WaitFor(id, absl::Seconds(30), [](const TestRow& r) { return r.attempt >= 1; });
  const absl::Time lost = absl::Now();
  ASSERT_EQ(row.attempt, 1);
  ASSERT_EQ(row.owner, "behind-proxy");
  row = WaitFor(id, absl::Seconds(10), [&](const TestRow&) { return (*proxy)->replies_dropped(); });
  ASSERT_EQ((*proxy)->replies_dropped(), 1) << "the lease reply reached the worker";

  // Not stuck: nobody heartbeats attempt 1, so its lease expires and the same worker, still
  // polling, leases the test again within 15 s.
  row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) { return r.attempt >= 2; });
  const absl::Duration released = absl::Now() - lost;
  EXPECT_EQ(row.owner, "behind-proxy");
  EXPECT_LT(released, absl::Seconds(15)) << "leased again " << released << " after the lost reply";
  std::cerr << "leased again " << released << " after the lost reply" << std::endl;

  row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) { return r.state != "running"; });
  ASSERT_EQ(row.state, "succeeded");
  const nlohmann::json test = Get(id);
  EXPECT_EQ(test["attempt"].get<int>(), 2);
  EXPECT_THAT(test["requeue_reason"].get<std::string>(),
              HasSubstr("lease of behind-proxy expired at attempt 1"));
  // Run once: every step by attempt 2, none by the attempt whose reply was lost.
  EXPECT_THAT(ExpectEachStepOnce(test, {100, 200}), ::testing::ElementsAre(2, 2));
  EXPECT_EQ(StoredSteps(id), 2);
  EXPECT_THAT(worker_->Stderr(), HasSubstr("lease failed"));
}

// The orchestrator stores a test's result, and the reply never reaches the worker (the
// orchestrator killed between its commit and its reply looks the same to the worker): the
// worker's retry is refused (the test is no longer running), the result stands once, and
// the worker goes on to lease the next test.
TEST_F(CrashTest, ALostCompleteTestReplyLeavesOneResultAndTheWorkerGoesOn) {
  ASSERT_NO_FATAL_FAILURE(StartStack({.start_worker = false}));
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  absl::StatusOr<std::unique_ptr<TcpProxy>> proxy = TcpProxy::Start(orch_->address());
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  // The first reply naming the endpoint is LeaseTest's, the second CompleteTest's.
  (*proxy)->DropReplyContaining(absl::StrCat("http://", sim_->address()), /*skip=*/1);
  worker_ = StartWorker("behind-proxy", *replayer_, kWorkerFlags, (*proxy)->address());
  ASSERT_NE(worker_, nullptr);

  const int64_t first = Submit("100");
  ASSERT_GT(first, 0);
  TestRow row =
      WaitFor(first, absl::Seconds(60), [](const TestRow& r) { return r.state == "succeeded"; });
  ASSERT_EQ(row.state, "succeeded");
  const int64_t second = Submit("150");
  ASSERT_GT(second, 0);
  row = WaitFor(second, absl::Seconds(60), [](const TestRow& r) { return r.state == "succeeded"; });
  EXPECT_EQ(row.state, "succeeded");
  EXPECT_EQ((*proxy)->replies_dropped(), 1) << "the CompleteTest reply reached the worker";

  const nlohmann::json test = Get(first);
  EXPECT_EQ(test["attempt"].get<int>(), 1);
  EXPECT_EQ(test.value("requeue_reason", ""), "") << "never requeued";
  EXPECT_THAT(ExpectEachStepOnce(test, {100}), ::testing::ElementsAre(1));
  EXPECT_EQ(test["result"]["max_sustainable_qps"].get<double>(), 100);
  EXPECT_EQ(StoredSteps(first), 1);
  pqxx::nontransaction txn(*conn_);
  EXPECT_EQ(txn.exec_params1("SELECT count(*) FROM results WHERE test_id = $1", first)[0].as<int>(),
            1);
  EXPECT_THAT(worker_->Stderr(), HasSubstr("could not complete, abandoning"));
}

// An orchestrator killed with SIGKILL in the middle of a test, twice: two orchestrators
// serve one database, the worker knows both (a gRPC target listing the two addresses, as a
// Service in front of the replicas would) and carries on through the other while the
// dead one restarts on its port. Calls in flight at the kill (heartbeat, progress, a step
// report) fail and are retried. The test must never be requeued (the worker's lease lives
// in Postgres, not in the orchestrator it talked to), and every step is listed once.
TEST_F(CrashTest, AnOrchestratorKilledMidTestLosesNothingAndTheTestKeepsItsLease) {
  ASSERT_NO_FATAL_FAILURE(StartStack({.start_worker = false}));
  std::unique_ptr<Subprocess> other = StartOrchestrator();
  ASSERT_NE(other, nullptr);
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  worker_ = StartWorker("e2e-worker", *replayer_, kWorkerFlags,
                        absl::StrCat("ipv4:", orch_->address(), ",", other->address()));
  ASSERT_NE(worker_, nullptr);
  const int64_t id = Submit("100,150,200,250");
  ASSERT_GT(id, 0);

  // Kills `orch` with SIGKILL once the test measures step `step`; restarts it on its port
  // 2 s later (the CLI and the test's checks go to orch_).
  auto kill_while_measuring = [&](std::unique_ptr<Subprocess>& orch, int step) {
    TestRow row = WaitFor(id, absl::Seconds(60), [&](const TestRow& r) {
      return r.progress_step >= step || (r.state != "running" && r.state != "queued");
    });
    ASSERT_EQ(row.state, "running");
    ASSERT_EQ(row.progress_step, step);
    const int port = orch->port();
    ASSERT_EQ(kill(orch->pid(), SIGKILL), 0);
    ASSERT_TRUE(orch->Wait(absl::Seconds(10)).ok());
    absl::SleepFor(absl::Seconds(2));
    orch = StartOrchestrator(port);
    ASSERT_NE(orch, nullptr);
  };
  ASSERT_NO_FATAL_FAILURE(kill_while_measuring(orch_, 2));
  ASSERT_NO_FATAL_FAILURE(kill_while_measuring(other, 4));

  TestRow row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) {
    return r.state != "running" && r.state != "queued";
  });
  ASSERT_EQ(row.state, "succeeded");
  const nlohmann::json test = Get(id);
  EXPECT_EQ(test["attempt"].get<int>(), 1) << "requeued: " << test.value("requeue_reason", "");
  EXPECT_EQ(test.value("requeue_reason", ""), "");
  EXPECT_THAT(ExpectEachStepOnce(test, {100, 150, 200, 250}), ::testing::ElementsAre(1, 1, 1, 1));
  EXPECT_EQ(test["result"]["steps_taken"].get<int>(), 4);
  EXPECT_EQ(StoredSteps(id), 4);
  pqxx::nontransaction txn(*conn_);
  EXPECT_EQ(txn.exec_params1("SELECT count(*) FROM results WHERE test_id = $1", id)[0].as<int>(),
            1);
}

// PostgreSQL down for longer than a lease (12 s against the default 10 s) while a worker
// measures step 2 of 3, with a second worker idle beside it: the running worker's
// heartbeats and its step report fail meanwhile, not because it died. Once the database is
// back the test is still its worker's (not requeued under its feet: the idle worker never
// gets it), it finishes, and every step is listed once, none lost.
TEST_F(CrashTest, PostgresDownLongerThanALeaseNeitherRequeuesUnderTheWorkerNorLosesAStep) {
  ASSERT_NO_FATAL_FAILURE(StartStack({.worker_flags = kWorkerFlags, .private_postgres = true}));
  ASSERT_NO_FATAL_FAILURE(RegisterModel());
  std::unique_ptr<Subprocess> standby_replayer = StartReplayer();
  ASSERT_NE(standby_replayer, nullptr);
  const int64_t id = Submit("100,150,200");
  ASSERT_GT(id, 0);
  TestRow row = WaitFor(id, absl::Seconds(30), [](const TestRow& r) { return r.attempt == 1; });
  ASSERT_EQ(row.owner, "e2e-worker");
  std::unique_ptr<Subprocess> standby = StartWorker("standby", *standby_replayer, kWorkerFlags);
  ASSERT_NE(standby, nullptr);

  row = WaitFor(id, absl::Seconds(60), [](const TestRow& r) {
    return r.state != "running" || (r.steps == 1 && r.progress_step == 2);
  });
  ASSERT_EQ(row.state, "running");
  ASSERT_EQ(row.progress_step, 2);
  conn_.reset();
  ASSERT_TRUE(pg_server_->Stop().ok());
  absl::SleepFor(absl::Seconds(12));
  ASSERT_TRUE(pg_server_->Restart().ok());

  row = WaitFor(id, absl::Seconds(60),
                [](const TestRow& r) { return r.state != "running" && r.state != "queued"; });
  ASSERT_EQ(row.state, "succeeded");
  const nlohmann::json test = Get(id);
  const int attempt = test["attempt"].get<int>();
  std::cerr << "after the outage: attempt " << attempt << ", owner " << row.owner << ", requeue '"
            << test.value("requeue_reason", "") << "'" << std::endl;
  // The reaper's first pass after the outage gives running leases a grace to be renewed.
  EXPECT_EQ(attempt, 1) << "requeued under its live worker";
  EXPECT_EQ(row.owner, "e2e-worker");
  EXPECT_EQ(test.value("requeue_reason", ""), "");
  const std::vector<int> attempts = ExpectEachStepOnce(test, {100, 150, 200});
  EXPECT_EQ(test["result"]["steps_taken"].get<int>(), 3);
  EXPECT_EQ(StoredSteps(id), 3) << "a step stored twice, or one of a dead attempt left over";
  EXPECT_THAT(attempts, ::testing::ElementsAre(1, 1, 1));
}

}  // namespace
}  // namespace vanguard::testing
