// A worker told to stop (SIGTERM) in the middle of a step, with the real binaries: simulated
// predictor, orchestrator on a fresh PostgreSQL database ($VANGUARD_TEST_PG), replayer and
// worker, auth on (the worker runs with a worker-role token). The worker must report the step
// in flight as interrupted, give its lease back and exit 0 within a few seconds, and the test
// must be queued again at once -- a second worker leases it long before the 30 s lease of the
// first would have expired. While its step runs, the first worker's /metrics page
// (--metrics_listen) shows the test in flight.
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"
#include "worker/http_get.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::vanguard::testing::Subprocess;
using ::vanguard::testing::TestDatabase;

constexpr char kAdmin[] = "worker-shutdown-test-admin-secret";

class WorkerShutdownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto sim = Subprocess::StartServer(
        "vanguard-sim-predictor",
        {"--listen=127.0.0.1:0", "--model_name=shutdown", "--slots=4", "--service_ms=5"});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = std::move(*sim);
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {"--listen=127.0.0.1:0", absl::StrCat("--database_url=", db_->conninfo())},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdmin)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = std::move(*orch);
    stub_ = v1::Orchestrator::NewStub(
        grpc::CreateChannel(orch_->address(), grpc::InsecureChannelCredentials()));
    auto replayer = Subprocess::StartServer("vanguard-replayer", {"serve", "--listen=127.0.0.1:0"});
    ASSERT_TRUE(replayer.ok()) << replayer.status();
    replayer_ = std::move(*replayer);

    v1::CreateTokenRequest token;
    token.set_name("worker");
    token.set_role(v1::ROLE_WORKER);
    v1::CreateTokenResponse created;
    grpc::Status s = stub_->CreateToken(Context().get(), token, &created);
    ASSERT_TRUE(s.ok()) << s.error_message();
    worker_token_ = created.secret();
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {first_worker_.get(), second_worker_.get(), replayer_.get(), orch_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    first_worker_.reset();
    second_worker_.reset();
    replayer_.reset();
    orch_.reset();
    sim_.reset();
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    ctx->AddMetadata("authorization", absl::StrCat("Bearer ", kAdmin));
    return ctx;
  }

  std::unique_ptr<Subprocess> StartWorker(const std::string& id,
                                          const std::vector<std::string>& extra_args = {}) {
    std::vector<std::string> args = {absl::StrCat("--orchestrator=", orch_->address()),
                                     absl::StrCat("--replayer=", replayer_->address()),
                                     absl::StrCat("--worker_id=", id),
                                     "--poll_interval=100ms",
                                     "--steady_state_detection=false",
                                     "--scrape_metrics=false"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    auto worker = Subprocess::Start("vanguard-worker", args,
                                    {absl::StrCat("VANGUARD_TOKEN=", worker_token_)});
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? std::move(*worker) : nullptr;
  }

  v1::Test GetTest(int64_t id) {
    v1::GetTestRequest request;
    request.set_id(id);
    v1::GetTestResponse response;
    grpc::Status s = stub_->GetTest(Context().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.test();
  }

  // Polls GetTest (every 100 ms, up to `limit`) until `done` holds; the last test seen.
  template <typename Pred>
  v1::Test WaitForTest(int64_t id, absl::Duration limit, Pred done) {
    const absl::Time until = absl::Now() + limit;
    v1::Test test = GetTest(id);
    while (!done(test) && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(100));
      test = GetTest(id);
    }
    return test;
  }

  // The worker's /metrics page: the port from its "/metrics (port N)" log line, then a GET;
  // empty when either fails.
  static std::string ScrapeWorker(const Subprocess& worker) {
    constexpr char kMarker[] = "/metrics (port ";
    const std::string err = worker.Stderr();
    const size_t at = err.find(kMarker);
    if (at == std::string::npos) return "";
    const int port = std::atoi(err.c_str() + at + std::strlen(kMarker));
    absl::StatusOr<worker::HttpResponse> page =
        worker::HttpGet(absl::StrCat("http://127.0.0.1:", port, "/metrics"), absl::Seconds(5));
    if (!page.ok() || page->status != 200) return "";
    return page->body;
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Subprocess> sim_, orch_, replayer_, first_worker_, second_worker_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
  std::string worker_token_;
};

TEST_F(WorkerShutdownTest, SigtermReportsTheInterruptedStepAndGivesTheLeaseBack) {
  v1::RegisterModelRequest model;
  model.mutable_model()->set_name("shutdown");
  model.mutable_model()->set_version("v1");
  model.mutable_model()->set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  model.mutable_model()->add_endpoints(absl::StrCat("http://", sim_->address()));
  model.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(100'000'000);
  model.mutable_model()->mutable_slo()->set_max_error_rate(0.01);
  v1::RegisterModelResponse registered;
  grpc::Status s = stub_->RegisterModel(Context().get(), model, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // Steps far longer than the test runs: only a shutdown can end the first one early.
  v1::SubmitTestRequest submit;
  submit.mutable_spec()->set_model("shutdown");
  submit.mutable_spec()->mutable_sweep()->add_rates_qps(50);
  submit.mutable_spec()->mutable_sweep()->add_rates_qps(100);
  submit.mutable_spec()->mutable_step_duration()->set_seconds(120);
  submit.mutable_spec()->mutable_step_warmup()->set_seconds(0);
  v1::SubmitTestResponse submitted;
  s = stub_->SubmitTest(Context().get(), submit, &submitted);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t id = submitted.test().id();

  first_worker_ = StartWorker("first", {"--metrics_listen=127.0.0.1:0"});
  ASSERT_NE(first_worker_, nullptr);
  v1::Test running = WaitForTest(
      id, absl::Seconds(30), [](const v1::Test& t) { return t.state() == v1::TEST_STATE_RUNNING; });
  ASSERT_EQ(running.state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(running.lease_owner(), "first");
  ASSERT_EQ(running.attempt(), 1);
  // Let the first step send load for a few windows.
  absl::SleepFor(absl::Seconds(2));
  const std::string page = ScrapeWorker(*first_worker_);
  EXPECT_THAT(page, HasSubstr("vanguard_worker_test_in_flight 1")) << first_worker_->Stderr();
  EXPECT_THAT(page, HasSubstr(absl::StrCat("vanguard_worker_current_test_id ", id)));
  EXPECT_THAT(page, HasSubstr("vanguard_worker_current_step 1"));
  EXPECT_THAT(page, HasSubstr("vanguard_worker_leases_total{event=\"taken\"} 1"));
  for (const char* name :
       {"vanguard_worker_tests_total", "vanguard_worker_steps_total",
        "vanguard_worker_step_duration_seconds", "vanguard_worker_last_step_offered_qps",
        "vanguard_worker_last_step_achieved_qps", "vanguard_worker_last_step_p99_seconds",
        "vanguard_worker_replayer_errors_total"}) {
    EXPECT_THAT(page, HasSubstr(absl::StrCat("# TYPE ", name, " "))) << name;
  }

  ASSERT_EQ(kill(first_worker_->pid(), SIGTERM), 0);
  absl::StatusOr<int> exit_code = first_worker_->Wait(absl::Seconds(10));
  ASSERT_TRUE(exit_code.ok()) << "the worker did not exit within 10 s of SIGTERM";
  EXPECT_EQ(*exit_code, 0);
  EXPECT_THAT(first_worker_->Stderr(), HasSubstr("lease given back"));

  // Back in the queue at once (no worker is running now), with the interrupted step stored.
  v1::Test queued = GetTest(id);
  EXPECT_EQ(queued.state(), v1::TEST_STATE_QUEUED);
  EXPECT_EQ(queued.attempt(), 1);
  EXPECT_TRUE(queued.lease_owner().empty());
  EXPECT_THAT(queued.requeue_reason(), HasSubstr("lease released by worker first"));
  ASSERT_EQ(queued.steps_size(), 1);
  const v1::Step& step = queued.steps(0);
  EXPECT_TRUE(step.interrupted());
  EXPECT_FALSE(step.passed());
  EXPECT_EQ(step.target_qps(), 50);
  EXPECT_THAT(step.verdict(), HasSubstr("interrupted after"));
  EXPECT_GT(step.duration().seconds() + step.duration().nanos() / 1e9, 1.0);
  EXPECT_LT(step.duration().seconds(), 60);
  {
    pqxx::connection conn(db_->conninfo());
    pqxx::work tx(conn);
    pqxx::row row = tx.exec_params1(
        "SELECT count(*), bool_and((detail->>'interrupted')::boolean) FROM steps"
        " WHERE test_id = $1 AND attempt = 1",
        id);
    EXPECT_EQ(row[0].as<int64_t>(), 1);
    EXPECT_TRUE(row[1].as<bool>());
  }

  // A second worker takes it over well inside the 30 s the first worker's lease had left.
  const absl::Time second_started = absl::Now();
  second_worker_ = StartWorker("second");
  ASSERT_NE(second_worker_, nullptr);
  v1::Test retried = WaitForTest(id, absl::Seconds(15), [](const v1::Test& t) {
    return t.state() == v1::TEST_STATE_RUNNING && t.lease_owner() == "second";
  });
  EXPECT_EQ(retried.state(), v1::TEST_STATE_RUNNING);
  EXPECT_EQ(retried.lease_owner(), "second");
  EXPECT_EQ(retried.attempt(), 2);
  EXPECT_LT(absl::Now() - second_started, absl::Seconds(20));
}

}  // namespace
}  // namespace vanguard
