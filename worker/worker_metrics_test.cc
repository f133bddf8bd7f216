// The worker's Prometheus metrics, read from the registry after driving the lease loop and
// the test runner against gmock orchestrator and replayer stubs in fake time.
#include "worker/worker_metrics.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "proto/testing/orchestrator_stub_mock.h"
#include "vanguard/v1/replayer_mock.grpc.pb.h"
#include "worker/lease_loop.h"
#include "worker/proto_time.h"
#include "worker/test_runner.h"
#include "worker/testing/scripted_stream.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::NiceMock;
using ::testing::Return;
using testing_util::MakeStepResult;
using testing_util::NewScriptedReader;
using testing_util::ResultEvent;
using testing_util::StreamScript;
using testing_util::WindowEvent;

constexpr int64_t kTestId = 7;

std::string Scrape(const WorkerMetrics& metrics) {
  return prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
}

// The value of one series ("name{labels}" as serialized) on the page; -1 when absent.
double Value(const std::string& page, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      return std::stod(std::string(line.substr(series.size() + 1)));
    }
  }
  return -1;
}

// One sweep test (100, 200, 300... qps) leased once, against a predictor that holds its SLO
// (p99 100 ms) up to 250 qps; each replayer read takes a second of fake time.
class WorkerMetricsTest : public ::testing::Test {
 protected:
  WorkerMetricsTest() : client_(&orchestrator_), executor_(&replayer_, &clock_) {
    runner_options_.worker_id = "w";
    runner_options_.lease_duration = absl::Seconds(3);
    runner_options_.heartbeat_thread = false;
    runner_options_.report_progress = false;
    runner_options_.measured.steady_state_detection = false;
    runner_options_.metrics = &metrics_;
    loop_options_.worker_id = "w";
    loop_options_.max_tests = 1;
    loop_options_.metrics = &metrics_;

    ON_CALL(orchestrator_, LeaseTest(_, _, _))
        .WillByDefault([](grpc::ClientContext*, const vanguard::v1::LeaseTestRequest&,
                          vanguard::v1::LeaseTestResponse* response) {
          *response = Lease();
          return grpc::Status::OK;
        });
    ON_CALL(orchestrator_, Heartbeat(_, _, _)).WillByDefault(Return(grpc::Status::OK));
    ON_CALL(orchestrator_, ReportStep(_, _, _)).WillByDefault(Return(grpc::Status::OK));
    ON_CALL(orchestrator_, CompleteTest(_, _, _)).WillByDefault(Return(grpc::Status::OK));
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          return NewScriptedReader(PredictorStep(r.rate_qps()));
        });
  }

  std::shared_ptr<StreamScript> PredictorStep(double rate) {
    auto script = std::make_shared<StreamScript>();
    for (int i = 0; i < 5; ++i) script->events.push_back(WindowEvent(i));
    script->events.push_back(ResultEvent(rate <= 250 ? MakeStepResult(rate, rate, 10, 40)
                                                     : MakeStepResult(rate, 250, 200, 900)));
    script->before_read = [this] { clock_.Advance(absl::Seconds(1)); };
    return script;
  }

  static vanguard::v1::LeaseTestResponse Lease() {
    vanguard::v1::LeaseTestResponse lease;
    lease.set_attempt(1);
    vanguard::v1::Test* test = lease.mutable_test();
    test->set_id(kTestId);
    test->set_attempt(1);
    vanguard::v1::Model* model = test->mutable_model();
    model->set_name("resnet50");
    model->set_version("v1");
    model->add_endpoints("http://127.0.0.1:8000");
    model->mutable_slo()->mutable_p99_latency()->set_nanos(100'000'000);
    model->mutable_slo()->set_max_error_rate(0.01);
    vanguard::v1::TestSpec* spec = test->mutable_spec();
    spec->mutable_sweep()->set_min_qps(100);
    spec->mutable_sweep()->set_max_qps(500);
    spec->mutable_sweep()->set_steps(5);
    *spec->mutable_step_duration() = ToProtoDuration(absl::Seconds(5));
    *spec->mutable_step_warmup() = ToProtoDuration(absl::Seconds(1));
    return lease;
  }

  void RunLoop() {
    TestRunner runner(&client_, &executor_, &clock_, runner_options_);
    LeaseLoop loop(&client_, &runner, &clock_, loop_options_);
    loop.Run();
  }

  WorkerMetrics metrics_;
  NiceMock<vanguard::v1::OrchestratorStubMock> orchestrator_;
  NiceMock<vanguard::v1::MockReplayerStub> replayer_;
  FakeClock clock_;
  OrchestratorClient client_;
  StepExecutor executor_;
  TestRunnerOptions runner_options_;
  LeaseLoopOptions loop_options_;
};

TEST_F(WorkerMetricsTest, EverySeriesReadsZeroBeforeAnyTest) {
  const std::string page = Scrape(metrics_);
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"taken\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_tests_total{outcome=\"succeeded\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_steps_total{verdict=\"error\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_test_in_flight"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_step_duration_seconds_count"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_replayer_errors_total{code=\"UNAVAILABLE\"}"), 0) << page;
}

TEST_F(WorkerMetricsTest, ASweepCountsItsLeaseTestAndStepsByVerdict) {
  RunLoop();
  const std::string page = Scrape(metrics_);
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"taken\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"completed\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"lost\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_tests_total{outcome=\"succeeded\"}"), 1) << page;
  // 100 and 200 qps pass, 300 qps fails and ends the sweep.
  EXPECT_EQ(Value(page, "vanguard_worker_steps_total{verdict=\"passed\"}"), 2) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_steps_total{verdict=\"failed\"}"), 1) << page;
  // Seven one-second reads a step (five windows, the result, the end of the stream).
  EXPECT_EQ(Value(page, "vanguard_worker_step_duration_seconds_count"), 3) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_step_duration_seconds_sum"), 21) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_step_duration_seconds_bucket{le=\"5\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_step_duration_seconds_bucket{le=\"10\"}"), 3) << page;
  // The last step: 300 offered, 250 achieved, p99 900 ms against 100 ms.
  EXPECT_EQ(Value(page, "vanguard_worker_last_step_offered_qps"), 300) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_last_step_achieved_qps"), 250) << page;
  EXPECT_DOUBLE_EQ(Value(page, "vanguard_worker_last_step_p99_seconds"), 0.9) << page;
  EXPECT_DOUBLE_EQ(Value(page, "vanguard_worker_last_step_slo_p99_seconds"), 0.1) << page;
  // Nothing in flight once it ended.
  EXPECT_EQ(Value(page, "vanguard_worker_test_in_flight"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_current_test_id"), 0) << page;
}

TEST_F(WorkerMetricsTest, TheTestInFlightAndItsStepShowWhileItRuns) {
  std::vector<std::string> seen;  // "in_flight test step" at each step report
  ON_CALL(orchestrator_, ReportStep(_, _, _)).WillByDefault([&](auto...) {
    const std::string page = Scrape(metrics_);
    seen.push_back(absl::StrCat(Value(page, "vanguard_worker_test_in_flight"), " ",
                                Value(page, "vanguard_worker_current_test_id"), " ",
                                Value(page, "vanguard_worker_current_step"), " ",
                                Value(page, "vanguard_worker_last_step_offered_qps")));
    return grpc::Status::OK;
  });
  RunLoop();
  EXPECT_THAT(seen, ::testing::ElementsAre("1 7 1 100", "1 7 2 200", "1 7 3 300"));
}

TEST_F(WorkerMetricsTest, AnUnavailableReplayerCountsEachCallAndTheStepAsAnError) {
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([](grpc::ClientContext*, const vanguard::v1::RunStepRequest&) {
        auto script = std::make_shared<StreamScript>();
        script->final_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
        return NewScriptedReader(script);
      });
  RunLoop();
  const std::string page = Scrape(metrics_);
  // The call and its two retries.
  EXPECT_EQ(Value(page, "vanguard_worker_replayer_errors_total{code=\"UNAVAILABLE\"}"), 3) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_steps_total{verdict=\"error\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_tests_total{outcome=\"failed\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"completed\"}"), 1) << page;
}

TEST_F(WorkerMetricsTest, ALeaseTheOrchestratorRefusesIsCountedLost) {
  ON_CALL(orchestrator_, ReportStep(_, _, _))
      .WillByDefault(Return(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "stale token")));
  RunLoop();
  const std::string page = Scrape(metrics_);
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"taken\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"lost\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"completed\"}"), 0) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_tests_total{outcome=\"abandoned\"}"), 1) << page;
}

TEST_F(WorkerMetricsTest, AStopMidStepCountsItInterruptedAndTheLeaseReleased) {
  TestRunner runner(&client_, &executor_, &clock_, runner_options_);
  LeaseLoop loop(&client_, &runner, &clock_, loop_options_);
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        std::shared_ptr<StreamScript> script = PredictorStep(r.rate_qps());
        script->before_read = [&, script] {
          clock_.Advance(absl::Seconds(1));
          if (script->reads == 2) loop.Stop();  // SIGTERM two windows in
        };
        return NewScriptedReader(script);
      });
  ON_CALL(orchestrator_, ReleaseTest(_, _, _)).WillByDefault(Return(grpc::Status::OK));
  loop.Run();
  const std::string page = Scrape(metrics_);
  EXPECT_EQ(Value(page, "vanguard_worker_steps_total{verdict=\"interrupted\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_replayer_errors_total{code=\"CANCELLED\"}"), -1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_leases_total{event=\"released\"}"), 1) << page;
  EXPECT_EQ(Value(page, "vanguard_worker_tests_total{outcome=\"released\"}"), 1) << page;
}

}  // namespace
}  // namespace vanguard::worker
