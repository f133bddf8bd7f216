// The end-to-end tests' stack: every process on loopback (simulated predictor, orchestrator on
// a fresh Postgres database with auth on, replayer, worker), driven by the `vanguard` tool as a
// user would. Auth is on as in production: a bootstrap admin token creates the submitter and
// worker tokens through `vanguard tokens create`.
//
//   class MyTest : public E2eStack {
//     void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartStack()); }
//   };
//   TEST_F(MyTest, X) { RunResult r = Vanguard({"list"}); }
//
// StartStack fails the test (fatally) when a process does not start; TearDown stops them all
// and prints their stderr when the test failed. Used from the test's thread only.
//
// Tests that need more workers (crash tests) start them with StartWorker, each beside a
// replayer of its own (StartReplayer), and own what they start; a worker may drive a pool
// of replayers, and more simulators (replicas) start with StartSimulator:
//
//   auto replayer = StartReplayer();
//   auto standby = StartWorker("standby", *replayer);
//   auto pooled = StartWorker("pooled", {replayer.get(), other.get()});
//
// Tests that stop the database run on a private PostgreSQL server (StackOptions
// private_postgres, then pg_server_->Stop()/Restart()); tests that kill an orchestrator start
// more on the same database with StartOrchestrator (a fixed port to restart one in place).
#ifndef VANGUARD_TESTS_E2E_E2E_STACK_H_
#define VANGUARD_TESTS_E2E_E2E_STACK_H_

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/subprocess.h"

namespace vanguard::testing {

class E2eStack : public ::testing::Test {
 protected:
  // The simulator's true capacity is slots * 1000 / service_ms.
  static constexpr int kSlots = 4;
  static constexpr double kServiceMs = 10.0;
  static constexpr double kTrueCapacity = kSlots * 1000.0 / kServiceMs;  // 400 req/s
  static constexpr char kAdminToken[] = "e2e-admin-secret-0123456789";

  struct StackOptions {
    // Added to the stack's worker's flags (e.g. "--steady_state_detection=false").
    std::vector<std::string> worker_flags;
    // false: no worker; the test starts its own (StartWorker).
    bool start_worker = true;
    // Added to the simulator's flags (later ones win, e.g. "--slots=1").
    std::vector<std::string> sim_flags;
    // true: the database is a private server (pg_server_) the test may stop and restart;
    // false: a fresh database on the shared $VANGUARD_TEST_PG server.
    bool private_postgres = false;
  };

  void StartStack() { StartStack(StackOptions()); }
  void StartStack(const StackOptions& options) {
    if (options.private_postgres) {
      auto server = PostgresServer::Start();
      ASSERT_TRUE(server.ok()) << server.status();
      pg_server_ = std::move(*server);
    } else {
      auto db = TestDatabase::Create();
      ASSERT_TRUE(db.ok()) << db.status();
      db_ = std::move(*db);
    }

    sim_ = StartSimulator(kServiceMs, options.sim_flags);
    ASSERT_NE(sim_, nullptr);

    orch_ = StartOrchestrator();
    ASSERT_NE(orch_, nullptr);
    submitter_token_ = CreateToken("e2e-submitter", "submitter");
    worker_token_ = CreateToken("e2e-worker", "worker");
    ASSERT_FALSE(submitter_token_.empty());
    ASSERT_FALSE(worker_token_.empty());

    replayer_ = StartReplayer();
    ASSERT_NE(replayer_, nullptr);
    if (!options.start_worker) return;
    worker_ = StartWorker("e2e-worker", *replayer_, options.worker_flags);
    ASSERT_NE(worker_, nullptr);
  }

  // The stack's database (either kind).
  const std::string& conninfo() const {
    return pg_server_ != nullptr ? pg_server_->conninfo() : db_->conninfo();
  }

  // An orchestrator on the stack's database listening on `port` (0: a free one); null (and a
  // test failure) if it does not start.
  std::unique_ptr<Subprocess> StartOrchestrator(int port = 0) {
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {absl::StrCat("--listen=127.0.0.1:", port), absl::StrCat("--database_url=", conninfo())},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdminToken)});
    EXPECT_TRUE(orch.ok()) << orch.status();
    return orch.ok() ? std::move(*orch) : nullptr;
  }

  // A simulated predictor (model "e2e", kSlots slots of `service_ms` each) on a free port;
  // null (and a test failure) if it does not start.
  std::unique_ptr<Subprocess> StartSimulator(double service_ms,
                                             const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--model_name=e2e",
                                     absl::StrCat("--slots=", kSlots),
                                     absl::StrCat("--service_ms=", service_ms)};
    args.insert(args.end(), flags.begin(), flags.end());
    auto sim = Subprocess::StartServer("vanguard-sim-predictor", args);
    EXPECT_TRUE(sim.ok()) << sim.status();
    return sim.ok() ? std::move(*sim) : nullptr;
  }

  // A replayer serving on a free port; null (and a test failure) if it does not start.
  std::unique_ptr<Subprocess> StartReplayer() {
    auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
    EXPECT_TRUE(replayer.ok()) << replayer.status();
    return replayer.ok() ? std::move(*replayer) : nullptr;
  }

  // A worker named `id` with the stack's worker token, running its steps on `replayer`, with
  // `flags` added; it leases from `orchestrator` ("host:port"; empty: the stack's).
  std::unique_ptr<Subprocess> StartWorker(const std::string& id, const Subprocess& replayer,
                                          const std::vector<std::string>& flags = {},
                                          const std::string& orchestrator = "") {
    return StartWorker(id, std::vector<const Subprocess*>{&replayer}, flags, orchestrator);
  }
  // The same with a pool of replayers: each step is split over all of them.
  std::unique_ptr<Subprocess> StartWorker(const std::string& id,
                                          const std::vector<const Subprocess*>& replayers,
                                          const std::vector<std::string>& flags = {},
                                          const std::string& orchestrator = "") {
    std::string addresses;
    for (const Subprocess* r : replayers) {
      absl::StrAppend(&addresses, addresses.empty() ? "" : ",", r->address());
    }
    std::vector<std::string> args = {
        absl::StrCat("--orchestrator=", orchestrator.empty() ? orch_->address() : orchestrator),
        absl::StrCat("--replayer=", addresses), absl::StrCat("--worker_id=", id),
        "--poll_interval=200ms"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto worker = Subprocess::Start("vanguard-worker", args,
                                    {absl::StrCat("VANGUARD_TOKEN=", worker_token_)});
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? std::move(*worker) : nullptr;
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {worker_.get(), replayer_.get(), orch_.get(), sim_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    worker_.reset();
    replayer_.reset();
    orch_.reset();
    sim_.reset();
    pg_server_.reset();
  }

  // Runs `vanguard ARGS --orchestrator=...` with the submitter's token (or `token`).
  RunResult Vanguard(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(30),
                     const std::string& token = "") {
    args.push_back(absl::StrCat("--orchestrator=", orch_->address()));
    auto r = RunBinary("vanguard", args,
                       {absl::StrCat("VANGUARD_TOKEN=", token.empty() ? submitter_token_ : token)},
                       timeout);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  // The secret of a new token (printed alone on stdout), or "" on failure.
  std::string CreateToken(const std::string& name, const std::string& role) {
    RunResult r =
        Vanguard({"tokens", "create", absl::StrCat("--name=", name), absl::StrCat("--role=", role)},
                 absl::Seconds(30), kAdminToken);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
    return r.exit_code == 0 ? secret : "";
  }

  std::string submitter_token_;
  std::string worker_token_;
  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<PostgresServer> pg_server_;  // private_postgres only
  std::unique_ptr<Subprocess> sim_, orch_, replayer_, worker_;
};

}  // namespace vanguard::testing

#endif  // VANGUARD_TESTS_E2E_E2E_STACK_H_
