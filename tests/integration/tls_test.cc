// TLS and mutual TLS through the real binaries: an orchestrator (fresh PostgreSQL database,
// $VANGUARD_TEST_PG, auth on) and a replayer that both require client certificates, a worker
// and the `vanguard` tool presenting theirs, all signed by a CA made at test time (openssl,
// common/testing/test_certificates.h). Checks that a test runs to the end over TLS, that a
// client trusting another CA, a client without a certificate and a worker whose certificate
// names another worker are refused, that bad TLS files stop each binary at start with a message
// naming the flag, and that tokens sent in clear are warned about.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_tls.h"
#include "common/testing/test_certificates.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/health_check.h"
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::vanguard::testing::CertificateFiles;
using ::vanguard::testing::HealthCheck;
using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;
using ::vanguard::testing::TestCertificates;
using ::vanguard::testing::TestDatabase;

constexpr char kAdmin[] = "tls-test-admin-secret-0123456789";
constexpr char kWorkerName[] = "tls-worker";  // the worker token's name and its certificate's CN
constexpr char kPlaintextWarning[] = "WARNING: bearer-token auth without TLS";
constexpr char kTokenInClearWarning[] = "bearer token is sent to the orchestrator in clear";

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = TestCertificates::Create("vanguard-tls-test-ca");
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = std::move(*certs);
    auto other = TestCertificates::Create("some-other-ca");
    ASSERT_TRUE(other.ok()) << other.status();
    other_ca_ = std::move(*other);
    for (auto [name, files] : {std::pair{"localhost", &server_}, std::pair{kWorkerName, &worker_},
                               std::pair{"other-worker", &impostor_}, std::pair{"cli", &cli_}}) {
      auto issued = certs_->Issue(name);
      ASSERT_TRUE(issued.ok()) << issued.status();
      *files = *issued;
    }
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto* p : {worker_process_.get(), replayer_.get(), orch_.get()}) {
        if (p != nullptr) std::cerr << "---- pid " << p->pid() << " stderr:\n" << p->Stderr();
      }
    }
    worker_process_.reset();
    replayer_.reset();
    orch_.reset();
    sim_.reset();
  }

  // The orchestrator with TLS (and client certificates required when `mutual`), or plaintext
  // when `tls` is false; auth on with the bootstrap admin token.
  void StartOrchestrator(bool tls, bool mutual) {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    std::vector<std::string> args = {"--listen=127.0.0.1:0",
                                     absl::StrCat("--database_url=", db_->conninfo())};
    if (tls) {
      args.push_back("--tls_cert=" + server_.cert);
      args.push_back("--tls_key=" + server_.key);
    }
    if (mutual) args.push_back("--tls_client_ca=" + certs_->ca_cert());
    auto orch = Subprocess::StartServer("vanguard-orchestrator", args,
                                        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdmin)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = std::move(*orch);
  }

  // The replayer over TLS requiring client certificates from our CA.
  void StartMutualTlsReplayer() {
    auto replayer = Subprocess::StartServer(
        "vanguard-replayer", {"serve", "--listen=127.0.0.1:0", "--tls_cert=" + server_.cert,
                              "--tls_key=" + server_.key, "--tls_client_ca=" + certs_->ca_cert()});
    ASSERT_TRUE(replayer.ok()) << replayer.status();
    replayer_ = std::move(*replayer);
  }

  // A channel to `address` trusting `ca` (empty: plaintext) and presenting `client` (if any).
  static std::shared_ptr<grpc::Channel> Channel(const std::string& address, const std::string& ca,
                                                const CertificateFiles& client = {}) {
    absl::StatusOr<ChannelTls> tls =
        LoadChannelTls({.ca = ca, .cert = client.cert, .key = client.key});
    EXPECT_TRUE(tls.ok()) << tls.status();
    return grpc::CreateChannel(address, ChannelCredentials(tls.ok() ? *tls : ChannelTls()));
  }

  std::unique_ptr<v1::Orchestrator::Stub> Stub(const std::string& ca,
                                               const CertificateFiles& client = {}) {
    return v1::Orchestrator::NewStub(Channel(orch_->address(), ca, client));
  }

  static std::unique_ptr<grpc::ClientContext> Context(const std::string& token,
                                                      absl::Duration deadline = absl::Seconds(10)) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    return context;
  }

  // `vanguard ARGS` against the orchestrator over mutual TLS with the CLI's certificate.
  RunResult Vanguard(std::vector<std::string> args, const std::string& token) {
    args.push_back("--orchestrator=" + orch_->address());
    args.push_back("--tls_ca=" + certs_->ca_cert());
    args.push_back("--tls_client_cert=" + cli_.cert);
    args.push_back("--tls_client_key=" + cli_.key);
    auto run = RunBinary("vanguard", args, {absl::StrCat("VANGUARD_TOKEN=", token)});
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunResult{};
  }

  // A worker token named kWorkerName, created with the CLI over mutual TLS.
  std::string CreateWorkerToken() {
    RunResult r = Vanguard(
        {"tokens", "create", absl::StrCat("--name=", kWorkerName), "--role=worker"}, kAdmin);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
    return secret;
  }

  // Polls `done` every 100 ms up to `limit` (the processes run on their own time).
  template <typename Pred>
  static bool WaitFor(absl::Duration limit, Pred done) {
    const absl::Time until = absl::Now() + limit;
    while (!done()) {
      if (absl::Now() > until) return false;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return true;
  }

  std::unique_ptr<TestCertificates> certs_, other_ca_;
  CertificateFiles server_, worker_, impostor_, cli_;
  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Subprocess> sim_, orch_, replayer_, worker_process_;
};

TEST_F(TlsTest, ATestRunsToTheEndOverMutualTlsEverywhere) {
  ASSERT_NO_FATAL_FAILURE(StartOrchestrator(/*tls=*/true, /*mutual=*/true));
  ASSERT_NO_FATAL_FAILURE(StartMutualTlsReplayer());
  auto sim = Subprocess::StartServer(
      "vanguard-sim-predictor",
      {"--listen=127.0.0.1:0", "--model_name=tls", "--slots=4", "--service_ms=5"});
  ASSERT_TRUE(sim.ok()) << sim.status();
  sim_ = std::move(*sim);
  const std::string worker_token = CreateWorkerToken();
  ASSERT_FALSE(worker_token.empty());

  auto admin = Stub(certs_->ca_cert(), cli_);
  v1::RegisterModelRequest model;
  model.mutable_model()->set_name("tls");
  model.mutable_model()->set_version("v1");
  model.mutable_model()->set_protocol(v1::PROTOCOL_KSERVE_V2_REST);
  model.mutable_model()->add_endpoints(absl::StrCat("http://", sim_->address()));
  model.mutable_model()->mutable_slo()->mutable_p99_latency()->set_nanos(100'000'000);
  model.mutable_model()->mutable_slo()->set_max_error_rate(0.01);
  v1::RegisterModelResponse registered;
  grpc::Status s = admin->RegisterModel(Context(kAdmin).get(), model, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::SubmitTestRequest submit;
  submit.mutable_spec()->set_model("tls");
  submit.mutable_spec()->mutable_sweep()->add_rates_qps(20);
  submit.mutable_spec()->mutable_step_duration()->set_seconds(2);
  submit.mutable_spec()->mutable_step_warmup()->set_seconds(0);
  v1::SubmitTestResponse submitted;
  s = admin->SubmitTest(Context(kAdmin).get(), submit, &submitted);
  ASSERT_TRUE(s.ok()) << s.error_message();

  auto worker = Subprocess::Start(
      "vanguard-worker",
      {"--orchestrator=" + orch_->address(), "--replayer=" + replayer_->address(),
       absl::StrCat("--worker_id=", kWorkerName), "--poll_interval=100ms",
       "--steady_state_detection=false", "--scrape_metrics=false",
       "--orchestrator_tls_ca=" + certs_->ca_cert(), "--replayer_tls_ca=" + certs_->ca_cert(),
       "--tls_client_cert=" + worker_.cert, "--tls_client_key=" + worker_.key},
      {absl::StrCat("VANGUARD_TOKEN=", worker_token)});
  ASSERT_TRUE(worker.ok()) << worker.status();
  worker_process_ = std::move(*worker);

  v1::Test test;
  const bool finished = WaitFor(absl::Seconds(60), [&] {
    v1::GetTestRequest get;
    get.set_id(submitted.test().id());
    v1::GetTestResponse got;
    if (admin->GetTest(Context(kAdmin).get(), get, &got).ok()) test = got.test();
    return test.state() == v1::TEST_STATE_SUCCEEDED || test.state() == v1::TEST_STATE_FAILED;
  });
  ASSERT_TRUE(finished) << test.DebugString();
  EXPECT_EQ(test.state(), v1::TEST_STATE_SUCCEEDED) << test.error();
  ASSERT_EQ(test.steps_size(), 1);
  EXPECT_GT(test.steps(0).completed(), 0);  // the load went through the TLS replayer
  EXPECT_THAT(orch_->Stderr(), Not(HasSubstr(kPlaintextWarning)));
  EXPECT_THAT(worker_process_->Stderr(), Not(HasSubstr(kTokenInClearWarning)));
  EXPECT_THAT(worker_process_->Stderr(), HasSubstr("(TLS), replayer"));
}

TEST_F(TlsTest, AWorkerCertificateNamingAnotherWorkerIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartOrchestrator(/*tls=*/true, /*mutual=*/true));
  const std::string worker_token = CreateWorkerToken();
  ASSERT_FALSE(worker_token.empty());
  v1::LeaseTestRequest lease;
  lease.set_worker_id(kWorkerName);
  v1::LeaseTestResponse leased;

  grpc::Status impostor =
      Stub(certs_->ca_cert(), impostor_)->LeaseTest(Context(worker_token).get(), lease, &leased);
  EXPECT_EQ(impostor.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(impostor.error_message(), HasSubstr("other-worker"));
  EXPECT_THAT(impostor.error_message(), HasSubstr(kWorkerName));
  v1::HeartbeatRequest beat;
  beat.set_test_id(1);
  beat.set_worker_id(kWorkerName);
  v1::HeartbeatResponse beaten;
  EXPECT_EQ(Stub(certs_->ca_cert(), impostor_)
                ->Heartbeat(Context(worker_token).get(), beat, &beaten)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  // The same token from the certificate that names it: an empty queue, no test to lease.
  grpc::Status own = Stub(certs_->ca_cert(), worker_)
                         ->LeaseTest(Context(worker_token, absl::Seconds(3)).get(), lease, &leased);
  EXPECT_TRUE(own.ok()) << own.error_code() << " " << own.error_message();
  EXPECT_FALSE(leased.has_test());
}

TEST_F(TlsTest, ClientsWithoutACertificateOrTrustingAnotherCaAreRefused) {
  ASSERT_NO_FATAL_FAILURE(StartOrchestrator(/*tls=*/true, /*mutual=*/true));
  ASSERT_NO_FATAL_FAILURE(StartMutualTlsReplayer());
  v1::ListModelsResponse listed;
  EXPECT_TRUE(Stub(certs_->ca_cert(), cli_)
                  ->ListModels(Context(kAdmin).get(), v1::ListModelsRequest(), &listed)
                  .ok());
  EXPECT_EQ(Stub(certs_->ca_cert())
                ->ListModels(Context(kAdmin).get(), v1::ListModelsRequest(), &listed)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);  // no client certificate
  EXPECT_EQ(Stub(other_ca_->ca_cert(), cli_)
                ->ListModels(Context(kAdmin).get(), v1::ListModelsRequest(), &listed)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);  // the server's certificate is not trusted
  EXPECT_EQ(
      Stub("")->ListModels(Context(kAdmin).get(), v1::ListModelsRequest(), &listed).error_code(),
      grpc::StatusCode::UNAVAILABLE);  // plaintext

  auto cli = RunBinary("vanguard",
                       {"models", "list", "--orchestrator=" + orch_->address(),
                        "--tls_ca=" + certs_->ca_cert(), "--timeout=5s"},
                       {absl::StrCat("VANGUARD_TOKEN=", kAdmin)});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_NE(cli->exit_code, 0) << cli->out;
  EXPECT_EQ(Vanguard({"models", "list"}, kAdmin).exit_code, 0);

  std::string reply;
  grpc::Status with_cert =
      HealthCheck(Channel(replayer_->address(), certs_->ca_cert(), worker_), "", &reply);
  EXPECT_TRUE(with_cert.ok()) << with_cert.error_message();
  EXPECT_EQ(reply, std::string("\x08\x01", 2));  // SERVING
  EXPECT_EQ(HealthCheck(Channel(replayer_->address(), certs_->ca_cert()), "", &reply).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(HealthCheck(Channel(replayer_->address(), other_ca_->ca_cert(), worker_), "", &reply)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, TokensSentInClearAreWarnedAbout) {
  ASSERT_NO_FATAL_FAILURE(StartOrchestrator(/*tls=*/false, /*mutual=*/false));
  EXPECT_THAT(orch_->Stderr(), HasSubstr(kPlaintextWarning));
  auto worker = Subprocess::Start("vanguard-worker",
                                  {"--orchestrator=" + orch_->address(), "--replayer=127.0.0.1:1"},
                                  {"VANGUARD_TOKEN=some-worker-token"});
  ASSERT_TRUE(worker.ok()) << worker.status();
  worker_process_ = std::move(*worker);
  EXPECT_TRUE(WaitFor(absl::Seconds(20), [&] {
    return worker_process_->Stderr().find(kTokenInClearWarning) != std::string::npos;
  })) << worker_process_->Stderr();
}

TEST_F(TlsTest, OrchestratorOverTlsDoesNotWarn) {
  ASSERT_NO_FATAL_FAILURE(StartOrchestrator(/*tls=*/true, /*mutual=*/false));
  EXPECT_THAT(orch_->Stderr(), Not(HasSubstr(kPlaintextWarning)));
  v1::ListModelsResponse listed;
  EXPECT_TRUE(Stub(certs_->ca_cert())
                  ->ListModels(Context(kAdmin).get(), v1::ListModelsRequest(), &listed)
                  .ok());
}

TEST_F(TlsTest, BadTlsFilesStopEachBinaryAtStartNamingTheFlag) {
  auto orch = RunBinary("vanguard-orchestrator",
                        {"--listen=127.0.0.1:0", "--database_url=host=127.0.0.1 port=1",
                         "--tls_cert=" + server_.cert, "--tls_key=" + worker_.key});
  ASSERT_TRUE(orch.ok()) << orch.status();
  EXPECT_EQ(orch->exit_code, 2);
  EXPECT_THAT(orch->err, HasSubstr("the private key does not belong to the certificate"));

  auto replayer = RunBinary("vanguard-replayer",
                            {"serve", "--listen=127.0.0.1:0", "--tls_cert=" + server_.cert,
                             "--tls_key=" + server_.key, "--tls_client_ca=/nonexistent/ca.pem"});
  ASSERT_TRUE(replayer.ok()) << replayer.status();
  EXPECT_EQ(replayer->exit_code, 2);
  EXPECT_THAT(replayer->err, HasSubstr("--tls_client_ca /nonexistent/ca.pem: cannot be read"));

  auto worker = RunBinary("vanguard-worker", {"--orchestrator_tls_ca=" + server_.key});
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(worker->exit_code, 2);
  EXPECT_THAT(worker->err, HasSubstr("--orchestrator_tls_ca"));
  EXPECT_THAT(worker->err, HasSubstr("no PEM certificate"));

  auto half = RunBinary("vanguard-worker", {"--tls_client_cert=" + worker_.cert});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->exit_code, 2);
  EXPECT_THAT(half->err, HasSubstr("need --orchestrator_tls_ca or --replayer_tls_ca"));
}

}  // namespace
}  // namespace vanguard
