// Orchestrator processes (the real binary) on a real PostgreSQL: two replicas on one
// database serve one queue, a long poll on one wakes for a submit on the other, and a
// database restart gives UNAVAILABLE meanwhile and heals without restarting the orchestrator.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "database_test_base.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/queue_notifier.h"
#include "tests/testing/health_check.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::vanguard::testing::Subprocess;

constexpr char kAdmin[] = "replicas-test-admin-secret";

std::unique_ptr<grpc::ClientContext> Context(absl::Duration deadline = absl::Seconds(30)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  ctx->AddMetadata("authorization", absl::StrCat("Bearer ", kAdmin));
  return ctx;
}

std::unique_ptr<v1::Orchestrator::Stub> StubFor(const Subprocess& server) {
  return v1::Orchestrator::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
}

absl::StatusOr<std::unique_ptr<Subprocess>> StartOrchestrator(const std::string& conninfo,
                                                              std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--database_url=" + conninfo,
                                   "--reaper_interval=1s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return Subprocess::StartServer("vanguard-orchestrator", args,
                                 {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdmin)});
}

// grpc.health.v1.Health/Check for the whole server: 1 SERVING, 2 NOT_SERVING, -1 on error.
int HealthStatus(const std::shared_ptr<grpc::Channel>& channel) {
  std::string bytes;
  if (!testing::HealthCheck(channel, "", &bytes).ok()) return -1;
  if (bytes.empty()) return 0;  // UNKNOWN (the default value is not sent)
  return bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : -1;
}

// Polls until HealthStatus is `want` (at most ~30 s); returns the last status seen.
int WaitForHealth(const std::shared_ptr<grpc::Channel>& channel, int want) {
  int status = HealthStatus(channel);
  for (int i = 0; i < 150 && status != want; ++i) {
    absl::SleepFor(absl::Milliseconds(200));
    status = HealthStatus(channel);
  }
  return status;
}

class ReplicasTest : public DatabaseTest {};

TEST_F(ReplicasTest, TwoOrchestratorProcessesServeOneQueue) {
  auto a = StartOrchestrator(db_->conninfo());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = StartOrchestrator(db_->conninfo());
  ASSERT_TRUE(b.ok()) << b.status();
  std::unique_ptr<v1::Orchestrator::Stub> stubs[2] = {StubFor(**a), StubFor(**b)};

  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(stubs[0]->RegisterModel(Context().get(), reg, &registered).ok());

  // A long poll on B wakes for a submit through A.
  v1::LeaseTestResponse first;
  grpc::Status first_status;
  std::thread poller([&] {
    v1::LeaseTestRequest lease;
    lease.set_worker_id("poller");
    first_status = stubs[1]->LeaseTest(Context(absl::Seconds(25)).get(), lease, &first);
  });
  absl::SleepFor(absl::Milliseconds(300));
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stubs[0]->SubmitTest(Context().get(), submit, &submitted).ok());
  poller.join();
  ASSERT_TRUE(first_status.ok()) << first_status.error_message();
  ASSERT_TRUE(first.has_test());
  EXPECT_EQ(first.test().id(), submitted.test().id());

  // 40 more tests submitted through both; 4 workers (2 per replica) run them, each one
  // completing through the other replica.
  constexpr int kTests = 40;
  for (int i = 0; i < kTests; ++i) {
    v1::SubmitTestResponse s;
    ASSERT_TRUE(stubs[i % 2]->SubmitTest(Context().get(), submit, &s).ok());
  }
  std::mutex mu;
  std::map<int64_t, int> leased;
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      v1::Orchestrator::Stub& lease_via = *stubs[w % 2];
      v1::Orchestrator::Stub& complete_via = *stubs[1 - w % 2];
      v1::LeaseTestRequest lease;
      lease.set_worker_id(absl::StrCat("worker-", w));
      lease.mutable_wait()->set_nanos(200'000'000);
      while (true) {
        v1::LeaseTestResponse got;
        if (!lease_via.LeaseTest(Context().get(), lease, &got).ok()) {
          ++failures;
          return;
        }
        if (!got.has_test()) return;
        {
          std::lock_guard<std::mutex> lock(mu);
          ++leased[got.test().id()];
        }
        v1::CompleteTestRequest complete;
        complete.set_test_id(got.test().id());
        complete.set_attempt(got.attempt());
        complete.mutable_result()->set_max_sustainable_qps(100);
        v1::CompleteTestResponse done;
        if (!complete_via.CompleteTest(Context().get(), complete, &done).ok() ||
            done.test().state() != v1::TEST_STATE_SUCCEEDED) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(leased.size(), static_cast<size_t>(kTests));
  for (const auto& [id, count] : leased) EXPECT_EQ(count, 1) << "test " << id;
  EXPECT_EQ(Sql("SELECT count(*) FROM tests WHERE state = 'succeeded'")[0][0].as<int>(), kTests);
}

TEST(PostgresRestartTest, OrchestratorAnswersUnavailableThenRecoversByItself) {
  auto server = testing::PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto orch =
      StartOrchestrator((*server)->conninfo(), {"--insecure_no_auth", "--health_interval=200ms"});
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = StubFor(**orch);
  auto channel = grpc::CreateChannel((*orch)->address(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(WaitForHealth(channel, 1), 1);
  auto list = [&] {
    v1::ListModelsRequest request;
    v1::ListModelsResponse response;
    grpc::ClientContext ctx;  // no token: --insecure_no_auth
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    return stub->ListModels(&ctx, request, &response).error_code();
  };
  ASSERT_EQ(list(), grpc::StatusCode::OK);

  ASSERT_TRUE((*server)->Stop().ok());
  grpc::StatusCode down = list();
  for (int i = 0; i < 5 && down == grpc::StatusCode::OK; ++i) down = list();
  EXPECT_EQ(down, grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(list(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(WaitForHealth(channel, 2), 2) << "health should say NOT_SERVING without a database";

  ASSERT_TRUE((*server)->Restart().ok());
  grpc::StatusCode up = list();
  for (int i = 0; i < 60 && up != grpc::StatusCode::OK; ++i) {
    absl::SleepFor(absl::Milliseconds(500));
    up = list();
  }
  EXPECT_EQ(up, grpc::StatusCode::OK) << (*orch)->Stderr();
  EXPECT_EQ(WaitForHealth(channel, 1), 1);
}

// Postgres down for longer than a lease while a test runs: the worker's heartbeats fail
// with the database, not because it died, so the reaper's first pass once the database is
// back gives the lease a grace period to be renewed instead of requeueing the test under
// its worker's feet.
TEST(PostgresRestartTest, ARunningTestIsNotRequeuedUnderItsWorkerAfterAnOutage) {
  auto server = testing::PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto orch =
      StartOrchestrator((*server)->conninfo(), {"--insecure_no_auth", "--health_interval=200ms"});
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = StubFor(**orch);
  auto channel = grpc::CreateChannel((*orch)->address(), grpc::InsecureChannelCredentials());
  auto call = [](absl::Duration deadline = absl::Seconds(20)) {
    auto ctx = std::make_unique<grpc::ClientContext>();  // no token: --insecure_no_auth
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return ctx;
  };
  v1::RegisterModelRequest reg;
  *reg.mutable_model() = ValidModel();
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(stub->RegisterModel(call().get(), reg, &registered).ok());
  v1::SubmitTestRequest submit;
  *submit.mutable_spec() = ValidSpec();
  v1::SubmitTestResponse submitted;
  ASSERT_TRUE(stub->SubmitTest(call().get(), submit, &submitted).ok());
  // The test plays a worker with a 3 s lease.
  v1::LeaseTestRequest lease;
  lease.set_worker_id("survivor");
  lease.mutable_lease_duration()->set_seconds(3);
  v1::LeaseTestResponse leased;
  ASSERT_TRUE(stub->LeaseTest(call().get(), lease, &leased).ok());
  ASSERT_TRUE(leased.has_test());
  v1::HeartbeatRequest beat;
  beat.set_test_id(leased.test().id());
  beat.set_attempt(leased.attempt());
  beat.set_worker_id("survivor");
  beat.mutable_lease_duration()->set_seconds(3);
  auto heartbeat = [&] {
    v1::HeartbeatResponse response;
    return stub->Heartbeat(call(absl::Seconds(5)).get(), beat, &response).error_code();
  };
  ASSERT_EQ(heartbeat(), grpc::StatusCode::OK);

  // Down for twice the lease; the worker's heartbeats fail meanwhile.
  ASSERT_TRUE((*server)->Stop().ok());
  EXPECT_EQ(WaitForHealth(channel, 2), 2);
  const absl::Time down = absl::Now();
  while (absl::Now() - down < absl::Seconds(6)) {
    EXPECT_NE(heartbeat(), grpc::StatusCode::OK);
    absl::SleepFor(absl::Seconds(1));
  }
  ASSERT_TRUE((*server)->Restart().ok());
  EXPECT_EQ(WaitForHealth(channel, 1), 1);
  // The reaper (every 1 s) has had its passes by the time the worker's next heartbeat comes.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(heartbeat(), grpc::StatusCode::OK) << (*orch)->Stderr();
  v1::GetTestRequest get;
  get.set_id(leased.test().id());
  v1::GetTestResponse got;
  ASSERT_TRUE(stub->GetTest(call().get(), get, &got).ok());
  EXPECT_EQ(got.test().state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(got.test().attempt(), 1);
  EXPECT_EQ(got.test().lease_owner(), "survivor");
  EXPECT_TRUE(got.test().requeue_reason().empty()) << got.test().requeue_reason();
}

TEST(PostgresRestartTest, QueueNotifierListensAgainAfterARestart) {
  auto server = testing::PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  QueueNotifier notifier(
      {.conninfo = (*server)->conninfo(), .reconnect_backoff = absl::Milliseconds(100)});
  notifier.Start();
  auto wait_for = [&](bool listening) {
    for (int i = 0; i < 600 && notifier.listening() != listening; ++i) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    return notifier.listening() == listening;
  };
  ASSERT_TRUE(wait_for(true));
  ASSERT_TRUE((*server)->Stop().ok());
  EXPECT_TRUE(wait_for(false)) << "the notifier did not notice the lost connection";
  ASSERT_TRUE((*server)->Restart().ok());
  ASSERT_TRUE(wait_for(true)) << "the notifier did not reconnect";

  // And it hears notifications on the new connection.
  const uint64_t seen = notifier.generation();
  pqxx::connection conn((*server)->conninfo());
  pqxx::nontransaction txn(conn);
  txn.exec(absl::StrCat("NOTIFY ", QueueNotifier::kChannel));
  EXPECT_TRUE(notifier.WaitForChange(seen, absl::Now() + absl::Seconds(20)));
  notifier.Stop();
}

}  // namespace
}  // namespace vanguard
