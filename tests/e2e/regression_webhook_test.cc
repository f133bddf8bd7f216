// End to end: continuous regression testing through the real orchestrator binary (auth on, a
// fresh Postgres database from $VANGUARD_TEST_PG) and the `vanguard` tool. A submitter sets an
// on_new_version schedule and a webhook; registering v2 queues the scheduled test with no
// other action; the test plays that test's worker over the real worker protocol and reports a
// capacity beyond the noise below v1's accepted baseline; the orchestrator then POSTs the
// regression, signed with the webhook's secret, to an HTTP server in this test, and `vanguard
// regressions` lists it. (How a capacity is measured is e2e_capacity_test's subject.)
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "openssl/evp.h"
#include "openssl/hmac.h"
#include "tests/testing/postgres_fixture.h"
#include "tests/testing/recording_http_server.h"
#include "tests/testing/subprocess.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::vanguard::testing::RecordingHttpServer;
using ::vanguard::testing::RunBinary;
using ::vanguard::testing::RunResult;
using ::vanguard::testing::Subprocess;
using ::vanguard::testing::TestDatabase;

constexpr char kAdminToken[] = "e2e-hook-admin-secret-0123456789";
constexpr char kModel[] = "e2e-hook";
constexpr char kSecret[] = "e2e-webhook-shared-secret-0123456789";

// HMAC-SHA256 as a receiver computes it, with OpenSSL directly (not the orchestrator's code).
std::string ExpectedSignature(const std::string& secret, const std::string& body) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = "sha256=";
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

class RegressionWebhookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto orch = Subprocess::StartServer(
        "vanguard-orchestrator",
        {"--listen=127.0.0.1:0", absl::StrCat("--database_url=", db_->conninfo()),
         "--webhook_interval=200ms", "--schedule_interval=200ms"},
        {absl::StrCat("VANGUARD_BOOTSTRAP_ADMIN_TOKEN=", kAdminToken)});
    ASSERT_TRUE(orch.ok()) << orch.status();
    orch_ = std::move(*orch);
    submitter_ = CreateToken("hook-ci", "submitter");
    worker_ = CreateToken("fake-worker", "worker");
    ASSERT_FALSE(submitter_.empty() || worker_.empty());
    stub_ = v1::Orchestrator::NewStub(
        grpc::CreateChannel(orch_->address(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (HasFailure() && orch_ != nullptr) std::cerr << "orchestrator stderr:\n" << orch_->Stderr();
    orch_.reset();
  }

  RunResult Vanguard(std::vector<std::string> args, const std::string& token) {
    args.push_back(absl::StrCat("--orchestrator=", orch_->address()));
    auto r =
        RunBinary("vanguard", args, {absl::StrCat("VANGUARD_TOKEN=", token)}, absl::Seconds(30));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunResult{};
  }

  nlohmann::json Json(std::vector<std::string> args, const std::string& token) {
    args.push_back("--output=json");
    RunResult r = Vanguard(std::move(args), token);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }

  std::string CreateToken(const std::string& name, const std::string& role) {
    RunResult r =
        Vanguard({"tokens", "create", absl::StrCat("--name=", name), absl::StrCat("--role=", role)},
                 kAdminToken);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string secret = r.out;
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == ' ')) secret.pop_back();
    return r.exit_code == 0 ? secret : "";
  }

  void Register(const std::string& version) {
    RunResult r = Vanguard({"models", "register", absl::StrCat("--name=", kModel),
                            absl::StrCat("--version=", version), "--endpoint=http://127.0.0.1:9",
                            "--p99_ms=100", "--accelerator=nvidia-l4", "--accelerator_count=2"},
                           submitter_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // As the worker: leases the next test (waiting up to 10 s), checks it is `expected_version`'s,
  // and completes it with this converged result. Returns its id (0 on failure).
  int64_t LeaseAndComplete(const std::string& expected_version, double qps, double low,
                           double high) {
    grpc::ClientContext lease_ctx;
    lease_ctx.AddMetadata("authorization", absl::StrCat("Bearer ", worker_));
    lease_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::LeaseTestRequest lease;
    lease.set_worker_id("fake-worker-1");
    lease.mutable_wait()->set_seconds(10);
    v1::LeaseTestResponse leased;
    grpc::Status status = stub_->LeaseTest(&lease_ctx, lease, &leased);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(leased.test().spec().model_version(), expected_version);
    if (!status.ok() || leased.test().id() == 0) return 0;

    grpc::ClientContext complete_ctx;
    complete_ctx.AddMetadata("authorization", absl::StrCat("Bearer ", worker_));
    complete_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::CompleteTestRequest complete;
    complete.set_test_id(leased.test().id());
    complete.set_attempt(leased.attempt());
    complete.mutable_result()->set_max_sustainable_qps(qps);
    complete.mutable_result()->set_confidence_low_qps(low);
    complete.mutable_result()->set_confidence_high_qps(high);
    complete.mutable_result()->set_converged(true);
    v1::CompleteTestResponse completed;
    status = stub_->CompleteTest(&complete_ctx, complete, &completed);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return status.ok() ? leased.test().id() : 0;
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Subprocess> orch_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
  std::string submitter_, worker_;
};

TEST_F(RegressionWebhookTest, ANewVersionIsTestedByItsScheduleAndItsRegressionIsPostedSigned) {
  RecordingHttpServer receiver({503});  // the first attempt is refused; the retry is answered
  Register("v1");
  const std::string spec =
      WriteFile("e2e_hook_spec.json", R"({"sweep": {"rates_qps": [100]}, "step_duration": "1s"})");
  nlohmann::json schedule = Json({"schedules", "set", absl::StrCat("--model=", kModel),
                                  "--on_new_version", absl::StrCat("--spec_file=", spec)},
                                 submitter_);
  EXPECT_EQ(schedule["schedule"]["team"], "default");
  const std::string secret = WriteFile("e2e_hook_secret", kSecret);
  nlohmann::json webhook =
      Json({"webhooks", "add", absl::StrCat("--model=", kModel),
            absl::StrCat("--url=", receiver.Url("/hook")), absl::StrCat("--secret_file=", secret)},
           submitter_);
  EXPECT_EQ(webhook["webhook"].value("secret", ""), "");  // never returned
  EXPECT_EQ(webhook.dump().find(kSecret), std::string::npos);

  // v1's baseline, measured by a test submitted by hand: held 300, failed at 350.
  nlohmann::json submitted = Json({"submit", absl::StrCat("--model=", kModel), "--version=v1",
                                   "--rates=100", "--step_duration=1s"},
                                  submitter_);
  const int64_t base = LeaseAndComplete("v1", 300, 300, 350);
  ASSERT_NE(base, 0);
  ASSERT_EQ(Vanguard({"baseline", absl::StrCat(base)}, submitter_).exit_code, 0);

  // Registering v2 is the only action: its scheduled test is waiting for a worker.
  Register("v2");
  nlohmann::json queued =
      Json({"list", absl::StrCat("--model=", kModel), "--state=queued"}, submitter_);
  ASSERT_EQ(queued["tests"].size(), 1u);
  EXPECT_EQ(queued["tests"][0]["spec"]["model_version"], "v2");
  const int64_t scheduled = LeaseAndComplete("v2", 250, 250, 300);  // failed where v1 held
  ASSERT_NE(scheduled, 0);
  EXPECT_EQ(std::to_string(scheduled), queued["tests"][0]["id"].get<std::string>());

  // The regression reaches the receiver at the retry (10 s after the refused attempt).
  std::vector<RecordingHttpServer::Request> got = receiver.WaitForRequests(2, absl::Seconds(60));
  ASSERT_EQ(got.size(), 2u) << orch_->Stderr();
  EXPECT_EQ(got[0].body, got[1].body);
  EXPECT_EQ(got[1].target, "/hook");
  EXPECT_EQ(got[1].headers["x-vanguard-signature"], ExpectedSignature(kSecret, got[1].body));
  nlohmann::json payload = nlohmann::json::parse(got[1].body);
  EXPECT_EQ(payload["test_id"], scheduled);
  EXPECT_EQ(payload["model"], kModel);
  EXPECT_EQ(payload["model_version"], "v2");
  EXPECT_EQ(payload["verdict"], "regressed");
  EXPECT_EQ(payload["capacity"]["confidence_high_qps"], 300);
  EXPECT_EQ(payload["baseline"]["test_id"], base);
  EXPECT_EQ(payload["baseline"]["confidence_low_qps"], 300);

  RunResult gate = Vanguard(
      {"regressions", absl::StrCat("--model=", kModel), "--fail_on_regression", "--output=json"},
      submitter_);
  EXPECT_EQ(gate.exit_code, 4) << gate.err;
  nlohmann::json regressions = nlohmann::json::parse(gate.out);
  ASSERT_EQ(regressions["regressions"].size(), 1u);
  EXPECT_EQ(regressions["regressions"][0]["test_id"], std::to_string(scheduled));
}

}  // namespace
}  // namespace vanguard
