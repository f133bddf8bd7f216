// Live progress over a real PostgreSQL ($VANGUARD_TEST_PG) and, for WatchTest, real gRPC:
// ReportProgress keeps the step in flight (its latest windows and the flat columns
// dashboards read), is fenced like a heartbeat (a stale attempt, another worker_id, a test
// no longer running are refused and change nothing), is checked field by field, and
// WatchTest with progress streams each report once, with only the windows not sent yet,
// until the step is reported. Token identity (another worker's token) is covered with
// every other lease call in lease_identity_test.cc.
#include <memory>
#include <string>
#include <vector>

#include "database_test_base.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "orchestrator/grpc_service.h"
#include "vanguard/v1/orchestrator.grpc.pb.h"

namespace vanguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::StepWindow Window(int index, bool warmup, double achieved, double p99_ms) {
  v1::StepWindow w;
  w.set_index(index);
  w.set_warmup(warmup);
  w.set_offered_qps(100);
  w.set_achieved_qps(achieved);
  w.mutable_latency()->set_p50_ms(p99_ms / 2);
  w.mutable_latency()->set_p99_ms(p99_ms);
  w.set_scheduled(50);
  w.set_errors(index % 2);
  w.set_health_state(warmup ? v1::HEALTH_STATE_UNSPECIFIED : v1::HEALTH_STATE_WARN);
  return w;
}

v1::TestProgress Progress(int step_index, std::vector<v1::StepWindow> windows) {
  v1::TestProgress p;
  p.set_step_index(step_index);
  p.set_offered_qps(100);
  p.set_health_state(v1::HEALTH_STATE_WARN);
  p.mutable_elapsed()->set_seconds(95);
  p.mutable_step_elapsed()->set_seconds(12);
  p.mutable_step_remaining()->set_seconds(18);
  p.set_step_scheduled(600);
  p.set_step_errors(6);
  for (v1::StepWindow& w : windows) *p.add_windows() = std::move(w);
  return p;
}

std::vector<int> Indices(const v1::TestProgress& p) {
  std::vector<int> out;
  for (const v1::StepWindow& w : p.windows()) out.push_back(w.index());
  return out;
}

class ProgressTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_GT(RegisterModelId(ValidModel()), 0);
  }

  // Submits a test and leases it as worker "w-1"; the lease response.
  v1::LeaseTestResponse SubmitAndLease() {
    v1::SubmitTestRequest submit;
    *submit.mutable_spec() = ValidSpec();
    EXPECT_TRUE(service_->SubmitTest(submit).ok());
    v1::LeaseTestRequest lease;
    lease.set_worker_id("w-1");
    absl::StatusOr<v1::LeaseTestResponse> leased = service_->LeaseTest(lease);
    EXPECT_TRUE(leased.ok() && leased->has_test());
    return leased.ok() ? *leased : v1::LeaseTestResponse();
  }

  absl::Status Report(const v1::LeaseTestResponse& lease, const v1::TestProgress& progress,
                      const std::string& worker_id = "w-1", int32_t attempt = 0) {
    v1::ReportProgressRequest request;
    request.set_test_id(lease.test().id());
    request.set_attempt(attempt != 0 ? attempt : lease.attempt());
    request.set_worker_id(worker_id);
    *request.mutable_progress() = progress;
    return service_->ReportProgress(request).status();
  }

  std::optional<v1::TestProgress> Latest(int64_t id) {
    absl::StatusOr<std::optional<v1::TestProgress>> p = tests_->LatestProgress(id);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : std::nullopt;
  }

  int ProgressRows() { return Sql("SELECT count(*) FROM test_progress")[0][0].as<int>(); }
};

TEST_F(ProgressTest, ReportsAccumulateTheStepsLatestWindowsAndANewStepStartsAfresh) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  const int64_t id = lease.test().id();
  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, true, 90, 40), Window(1, true, 95, 30)})).ok());
  ASSERT_TRUE(Report(lease, Progress(1, {Window(2, false, 99, 20)})).ok());

  std::optional<v1::TestProgress> p = Latest(id);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->attempt(), lease.attempt());
  EXPECT_EQ(p->step_index(), 1);
  EXPECT_DOUBLE_EQ(p->offered_qps(), 100);
  EXPECT_EQ(p->health_state(), v1::HEALTH_STATE_WARN);
  EXPECT_EQ(p->step_remaining().seconds(), 18);
  EXPECT_FALSE(p->has_test_remaining());
  EXPECT_THAT(Indices(*p), ElementsAre(0, 1, 2));
  EXPECT_DOUBLE_EQ(p->windows(2).latency().p99_ms(), 20);
  EXPECT_GT(p->update_time().seconds(), 1'600'000'000);

  // What a dashboard reads: the latest window and the step so far.
  pqxx::row row = SqlParams(
      "SELECT achieved_qps, p50_ms, p99_ms, settling, error_rate, health_state, elapsed_s,"
      "   step_remaining_s, test_remaining_s, jsonb_array_length(windows)"
      " FROM test_progress WHERE test_id = $1",
      id)[0];
  EXPECT_DOUBLE_EQ(row[0].as<double>(), 99);
  EXPECT_DOUBLE_EQ(row[1].as<double>(), 10);
  EXPECT_DOUBLE_EQ(row[2].as<double>(), 20);
  EXPECT_FALSE(row[3].as<bool>());
  EXPECT_DOUBLE_EQ(row[4].as<double>(), 0.01);
  EXPECT_STREQ(row[5].c_str(), "warn");
  EXPECT_DOUBLE_EQ(row[6].as<double>(), 95);
  EXPECT_DOUBLE_EQ(row[7].as<double>(), 18);
  EXPECT_TRUE(row[8].is_null());
  EXPECT_EQ(row[9].as<int>(), 3);

  // The next step replaces the windows; a report without windows (the step just began)
  // leaves the latest-window columns empty.
  v1::TestProgress next = Progress(2, {});
  next.mutable_test_remaining()->set_seconds(300);
  ASSERT_TRUE(Report(lease, next).ok());
  p = Latest(id);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step_index(), 2);
  EXPECT_EQ(p->windows_size(), 0);
  EXPECT_EQ(p->test_remaining().seconds(), 300);
  row = SqlParams(
      "SELECT achieved_qps, settling, test_remaining_s FROM test_progress WHERE test_id = $1",
      id)[0];
  EXPECT_TRUE(row[0].is_null());
  EXPECT_TRUE(row[1].is_null());
  EXPECT_DOUBLE_EQ(row[2].as<double>(), 300);
  EXPECT_EQ(ProgressRows(), 1);
}

TEST_F(ProgressTest, TheRowKeepsTheLatestSixtyWindowsOfTheStep) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  std::vector<v1::StepWindow> first, second;
  for (int i = 0; i < 50; ++i) first.push_back(Window(i, false, 100, 10));
  for (int i = 50; i < 75; ++i) second.push_back(Window(i, false, 100, 10));
  ASSERT_TRUE(Report(lease, Progress(1, first)).ok());
  ASSERT_TRUE(Report(lease, Progress(1, second)).ok());
  std::optional<v1::TestProgress> p = Latest(lease.test().id());
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->windows_size(), 60);
  EXPECT_EQ(p->windows(0).index(), 15);
  EXPECT_EQ(p->windows(59).index(), 74);
}

TEST_F(ProgressTest, ProgressIsFencedLikeAHeartbeatAndChangesNothingWhenRefused) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  const int64_t id = lease.test().id();
  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, false, 99, 20)})).ok());
  const std::optional<v1::TestProgress> before = Latest(id);
  ASSERT_TRUE(before.has_value());

  absl::Status other_worker = Report(lease, Progress(1, {Window(1, false, 1, 1)}), "w-2");
  EXPECT_EQ(other_worker.code(), absl::StatusCode::kFailedPrecondition) << other_worker;
  EXPECT_THAT(other_worker.message(), HasSubstr("leased to w-1, not w-2"));
  absl::Status stale =
      Report(lease, Progress(1, {Window(1, false, 1, 1)}), "w-1", lease.attempt() + 1);
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  v1::LeaseTestResponse unknown = lease;
  unknown.mutable_test()->set_id(424242);
  EXPECT_EQ(Report(unknown, Progress(1, {})).code(), absl::StatusCode::kNotFound);
  const std::optional<v1::TestProgress> after = Latest(id);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->SerializeAsString(), before->SerializeAsString());

  // A test that completes loses its progress, and later reports are refused.
  v1::CompleteTestRequest complete;
  complete.set_test_id(id);
  complete.set_attempt(lease.attempt());
  complete.set_error("gave up");
  ASSERT_TRUE(service_->CompleteTest(complete).ok());
  EXPECT_EQ(ProgressRows(), 0);
  absl::Status finished = Report(lease, Progress(1, {Window(1, false, 1, 1)}));
  EXPECT_EQ(finished.code(), absl::StatusCode::kFailedPrecondition) << finished;
  EXPECT_EQ(ProgressRows(), 0);
}

TEST_F(ProgressTest, ReleasingTheLeaseDropsItsProgress) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, false, 99, 20)})).ok());
  v1::ReleaseTestRequest release;
  release.set_test_id(lease.test().id());
  release.set_attempt(lease.attempt());
  release.set_worker_id("w-1");
  ASSERT_TRUE(service_->ReleaseTest(release).ok());
  EXPECT_EQ(ProgressRows(), 0);
}

TEST_F(ProgressTest, BadProgressIsRefusedNamingTheField) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  v1::ReportProgressRequest request;
  request.set_test_id(lease.test().id());
  request.set_attempt(lease.attempt());
  request.set_worker_id("w-1");
  EXPECT_THAT(service_->ReportProgress(request).status().message(), HasSubstr("progress: must"));

  const auto refused = [&](v1::TestProgress p) {
    *request.mutable_progress() = std::move(p);
    absl::Status s = service_->ReportProgress(request).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  v1::TestProgress p = Progress(1, {});
  p.set_offered_qps(-1);
  EXPECT_THAT(refused(p), HasSubstr("progress.offered_qps: must be >= 0"));
  p = Progress(1, {});
  p.mutable_step_remaining()->set_seconds(-3);
  EXPECT_THAT(refused(p), HasSubstr("progress.step_remaining: must be >= 0"));
  p = Progress(1, {Window(0, false, 1, 1), Window(1, false, -1, 1)});
  EXPECT_THAT(refused(p), HasSubstr("progress.windows[1].achieved_qps: must be >= 0"));
  p = Progress(1, {Window(0, false, 1, 1)});
  p.mutable_windows(0)->set_health_state(static_cast<v1::HealthState>(42));
  EXPECT_THAT(refused(p), HasSubstr("progress.windows[0].health_state"));
  p = Progress(1, std::vector<v1::StepWindow>(601, Window(0, false, 1, 1)));
  EXPECT_THAT(refused(p), HasSubstr("progress.windows: must hold at most 600"));
  EXPECT_EQ(ProgressRows(), 0);
}

TEST_F(ProgressTest, GetTestOfARunningTestCarriesTheStepInFlightWithItsLatestWindow) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  v1::GetTestRequest get;
  get.set_id(lease.test().id());
  absl::StatusOr<v1::GetTestResponse> got = service_->GetTest(get);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_progress()) << "nothing reported yet";

  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, true, 90, 40), Window(1, false, 99, 20)})).ok());
  got = service_->GetTest(get);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_progress());
  EXPECT_EQ(got->progress().step_index(), 1);
  EXPECT_THAT(Indices(got->progress()), ElementsAre(1));

  // Once the step is reported its progress is history.
  v1::ReportStepRequest step;
  step.set_test_id(lease.test().id());
  step.set_attempt(lease.attempt());
  *step.mutable_step() = ValidStep(1, 100);
  ASSERT_TRUE(service_->ReportStep(step).ok());
  got = service_->GetTest(get);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_progress());
}

class WatchProgressTest : public ProgressTest {
 protected:
  void SetUp() override {
    ProgressTest::SetUp();
    if (HasFatalFailure()) return;
    grpc_service_ = std::make_unique<OrchestratorGrpcService>(
        service_.get(),
        OrchestratorGrpcService::Options{.watch_poll_interval = absl::Milliseconds(20)},
        Clock::Real());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(grpc_service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Orchestrator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return context;
  }

  std::unique_ptr<OrchestratorGrpcService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Orchestrator::Stub> stub_;
};

TEST_F(WatchProgressTest, WatchStreamsEachProgressOnceUntilTheStepIsReported) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  const int64_t id = lease.test().id();
  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, true, 90, 40)})).ok());

  v1::WatchTestRequest request;
  request.set_id(id);
  request.set_progress(true);
  std::unique_ptr<grpc::ClientContext> context = Context();
  std::unique_ptr<grpc::ClientReaderInterface<v1::WatchTestResponse>> reader =
      stub_->WatchTest(context.get(), request);
  v1::WatchTestResponse update;

  // At once: the test, and the progress reported before the watch began.
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.test().state(), v1::TEST_STATE_RUNNING);
  ASSERT_TRUE(update.has_progress());
  EXPECT_EQ(update.progress().step_index(), 1);
  EXPECT_THAT(Indices(update.progress()), ElementsAre(0));

  // Each report arrives once, with only the windows this stream has not sent yet.
  ASSERT_TRUE(
      Report(lease, Progress(1, {Window(1, false, 98, 25), Window(2, false, 99, 20)})).ok());
  ASSERT_TRUE(reader->Read(&update));
  ASSERT_TRUE(update.has_progress());
  EXPECT_THAT(Indices(update.progress()), ElementsAre(1, 2));
  EXPECT_DOUBLE_EQ(update.progress().windows(1).achieved_qps(), 99);
  EXPECT_EQ(update.progress().attempt(), lease.attempt());
  EXPECT_EQ(update.test().id(), id);

  ASSERT_TRUE(Report(lease, Progress(1, {Window(3, false, 97, 22)})).ok());
  ASSERT_TRUE(reader->Read(&update));
  ASSERT_TRUE(update.has_progress());
  EXPECT_THAT(Indices(update.progress()), ElementsAre(3));

  // The step is reported: the update carries it, and no progress of it any more.
  v1::ReportStepRequest step;
  step.set_test_id(id);
  step.set_attempt(lease.attempt());
  *step.mutable_step() = ValidStep(1, 100);
  ASSERT_TRUE(service_->ReportStep(step).ok());
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.test().steps_size(), 1);
  EXPECT_FALSE(update.has_progress());
  EXPECT_EQ(update.test().steps(0).windows_size(), 0) << "watch updates carry no windows";

  // A new step's progress starts its windows afresh.
  ASSERT_TRUE(Report(lease, Progress(2, {Window(0, true, 150, 30)})).ok());
  ASSERT_TRUE(reader->Read(&update));
  ASSERT_TRUE(update.has_progress());
  EXPECT_EQ(update.progress().step_index(), 2);
  EXPECT_THAT(Indices(update.progress()), ElementsAre(0));

  v1::CompleteTestRequest complete;
  complete.set_test_id(id);
  complete.set_attempt(lease.attempt());
  complete.mutable_result()->set_max_sustainable_qps(100);
  ASSERT_TRUE(service_->CompleteTest(complete).ok());
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.test().state(), v1::TEST_STATE_SUCCEEDED);
  EXPECT_FALSE(update.has_progress());
  EXPECT_FALSE(reader->Read(&update));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(WatchProgressTest, AWatchThatDoesNotAskForProgressGetsNone) {
  const v1::LeaseTestResponse lease = SubmitAndLease();
  const int64_t id = lease.test().id();
  ASSERT_TRUE(Report(lease, Progress(1, {Window(0, false, 90, 40)})).ok());
  v1::WatchTestRequest request;
  request.set_id(id);
  std::unique_ptr<grpc::ClientContext> context = Context();
  auto reader = stub_->WatchTest(context.get(), request);
  v1::WatchTestResponse update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_FALSE(update.has_progress());
  // Progress alone does not wake a watcher that did not ask for it: the next update is the
  // reported step.
  ASSERT_TRUE(Report(lease, Progress(1, {Window(1, false, 90, 40)})).ok());
  v1::ReportStepRequest step;
  step.set_test_id(id);
  step.set_attempt(lease.attempt());
  *step.mutable_step() = ValidStep(1, 100);
  ASSERT_TRUE(service_->ReportStep(step).ok());
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.test().steps_size(), 1);
  EXPECT_FALSE(update.has_progress());
  context->TryCancel();
  reader->Finish();
}

}  // namespace
}  // namespace vanguard
