// TestRunner against gmock orchestrator and replayer stubs and a FakeClock: what the
// orchestrator is told (steps, completion, heartbeats) for the ways a test can go.
#include "worker/test_runner.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/testing/orchestrator_stub_mock.h"
#include "vanguard/v1/replayer_mock.grpc.pb.h"
#include "worker/proto_time.h"
#include "worker/testing/scripted_stream.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::AtLeast;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Not;
using ::testing::Return;
using ::testing::Truly;
using testing_util::MakeStepResult;
using testing_util::NewScriptedReader;
using testing_util::ResultEvent;
using testing_util::StreamScript;
using testing_util::WindowEvent;

constexpr int64_t kTestId = 7;
constexpr int32_t kAttempt = 2;
constexpr int kWindowsPerStep = 5;

class TestRunnerTest : public ::testing::Test {
 protected:
  TestRunnerTest() : client_(&orchestrator_), executor_(&replayer_, &clock_) {
    options_.worker_id = "worker-a";
    options_.lease_duration = absl::Seconds(3);  // a heartbeat is due every second
    options_.heartbeat_thread = false;           // beats come from windows, in fake time
    // One replayer call per step (the replayer runs the warmup), as the scripts expect;
    // settling is covered by measured_step_runner_test.
    options_.measured.steady_state_detection = false;

    ON_CALL(orchestrator_, Heartbeat(_, _, _)).WillByDefault(Return(grpc::Status::OK));
    ON_CALL(orchestrator_, ReportStep(_, _, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::ReportStepRequest& r,
                              vanguard::v1::ReportStepResponse*) {
          reports_.push_back(r);
          return grpc::Status::OK;
        });
    ON_CALL(orchestrator_, CompleteTest(_, _, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::CompleteTestRequest& r,
                              vanguard::v1::CompleteTestResponse*) {
          completions_.push_back(r);
          return grpc::Status::OK;
        });
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          return NewScriptedReader(PredictorStep(r.rate_qps()));
        });
  }

  // A predictor that holds its SLO up to capacity_ qps; every window takes one second.
  std::shared_ptr<StreamScript> PredictorStep(double rate) {
    auto script = std::make_shared<StreamScript>();
    for (int i = 0; i < kWindowsPerStep; ++i) script->events.push_back(WindowEvent(i));
    script->events.push_back(ResultEvent(rate <= capacity_
                                             ? MakeStepResult(rate, rate, 10, 40)
                                             : MakeStepResult(rate, capacity_, 200, 900)));
    script->before_read = [this] { clock_.Advance(absl::Seconds(1)); };
    last_script_ = script;
    return script;
  }

  static vanguard::v1::LeaseTestResponse Lease() {
    vanguard::v1::LeaseTestResponse lease;
    lease.set_attempt(kAttempt);
    vanguard::v1::Test* test = lease.mutable_test();
    test->set_id(kTestId);
    test->set_attempt(kAttempt);
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

  TestRunner& runner() {
    if (runner_ == nullptr) {
      runner_ = std::make_unique<TestRunner>(&client_, &executor_, &clock_, options_);
    }
    return *runner_;
  }

  NiceMock<vanguard::v1::OrchestratorStubMock> orchestrator_;
  NiceMock<vanguard::v1::MockReplayerStub> replayer_;
  FakeClock clock_;
  OrchestratorClient client_;
  StepExecutor executor_;
  TestRunnerOptions options_;
  std::unique_ptr<TestRunner> runner_;
  double capacity_ = 250;
  std::vector<vanguard::v1::ReportStepRequest> reports_;
  std::vector<vanguard::v1::CompleteTestRequest> completions_;
  std::shared_ptr<StreamScript> last_script_;
};

TEST_F(TestRunnerTest, ReportsEveryStepAndCompletesWithHighestPassingRate) {
  EXPECT_CALL(orchestrator_, Heartbeat(_, Truly([](const vanguard::v1::HeartbeatRequest& r) {
                                         return r.test_id() == kTestId && r.attempt() == kAttempt &&
                                                r.worker_id() == "worker-a";
                                       }),
                                       _))
      .Times(AtLeast(3));

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);

  ASSERT_EQ(reports_.size(), 3u);
  const double targets[] = {100, 200, 300};
  for (int i = 0; i < 3; ++i) {
    const vanguard::v1::ReportStepRequest& r = reports_[i];
    EXPECT_EQ(r.test_id(), kTestId);
    EXPECT_EQ(r.attempt(), kAttempt);
    EXPECT_EQ(r.step().index(), i + 1);
    EXPECT_EQ(r.step().attempt(), kAttempt);
    EXPECT_EQ(r.step().target_qps(), targets[i]);
    EXPECT_EQ(r.step().passed(), i < 2) << r.step().verdict();
    EXPECT_TRUE(r.step().client_valid());
    EXPECT_EQ(r.step().latency_histogram(), "histogram-bytes");
    EXPECT_EQ(FromProtoDuration(r.step().warmup()), absl::Seconds(1));
    EXPECT_EQ(FromProtoDuration(r.step().duration()), absl::Seconds(10));  // as measured
    EXPECT_LT(absl::FromUnixSeconds(r.step().start_time().seconds()),
              absl::FromUnixSeconds(r.step().end_time().seconds()));
  }
  EXPECT_EQ(reports_[0].step().achieved_qps(), 100);
  EXPECT_EQ(reports_[0].step().latency().p99_ms(), 40);
  EXPECT_EQ(reports_[0].step().health_state(), vanguard::v1::HEALTH_STATE_HEALTHY);
  EXPECT_EQ(reports_[2].step().achieved_qps(), 250);
  EXPECT_EQ(reports_[2].step().health_state(), vanguard::v1::HEALTH_STATE_OVERLOADED);
  EXPECT_THAT(reports_[2].step().verdict(), HasSubstr("p99 900.0 ms > 100 ms"));
  EXPECT_GT(reports_[2].step().error_rate(), 0.1);

  ASSERT_EQ(completions_.size(), 1u);
  const vanguard::v1::CompleteTestRequest& done = completions_[0];
  EXPECT_EQ(done.test_id(), kTestId);
  EXPECT_EQ(done.attempt(), kAttempt);
  ASSERT_TRUE(done.has_result());
  EXPECT_EQ(done.result().max_sustainable_qps(), 200);
  EXPECT_TRUE(done.result().converged());
  EXPECT_EQ(done.result().confidence_low_qps(), 200);
  EXPECT_EQ(done.result().confidence_high_qps(), 300);
  EXPECT_EQ(done.result().steps_taken(), 3);
  // Three steps of seven one-second reads each (five windows, the result, end of stream).
  EXPECT_EQ(FromProtoDuration(done.result().test_duration()), absl::Seconds(21));
  EXPECT_FALSE(done.result().summary().empty());
}

TEST(BuildStepReportTest, CarriesTheMeasuredPartsOutputChunks) {
  ExecutedStep executed;
  executed.request.set_rate_qps(40);
  executed.result.set_completed(400);
  executed.result.set_output_chunks(100'000);  // 250 per completed request
  const vanguard::v1::Step step = BuildStepReport(3, 1, executed, StepJudgement());
  EXPECT_EQ(step.completed(), 400);
  EXPECT_EQ(step.output_chunks(), 100'000);
}

TEST_F(TestRunnerTest, EachStepsWindowsReachTheOrchestratorAsMeasuredBeforeItsReport) {
  // One log of what the orchestrator hears, in order: "p<step>:<window indices>" per
  // progress call, "s<step>" per step report.
  std::vector<std::string> heard;
  std::vector<vanguard::v1::ReportProgressRequest> progress;
  ON_CALL(orchestrator_, ReportProgress(_, _, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::ReportProgressRequest& r,
                         vanguard::v1::ReportProgressResponse*) {
        std::string entry = absl::StrCat("p", r.progress().step_index(), ":");
        for (const auto& w : r.progress().windows()) absl::StrAppend(&entry, w.index());
        heard.push_back(entry);
        progress.push_back(r);
        return grpc::Status::OK;
      });
  ON_CALL(orchestrator_, ReportStep(_, _, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::ReportStepRequest& r,
                         vanguard::v1::ReportStepResponse*) {
        heard.push_back(absl::StrCat("s", r.step().index()));
        return grpc::Status::OK;
      });

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);

  // A window a second: each goes out on its own, right after it is measured (the step's
  // start first, then its five windows), and all before the step's report.
  EXPECT_THAT(heard, ::testing::ElementsAre("p1:", "p1:0", "p1:1", "p1:2", "p1:3", "p1:4", "s1",
                                            "p2:", "p2:0", "p2:1", "p2:2", "p2:3", "p2:4", "s2",
                                            "p3:", "p3:0", "p3:1", "p3:2", "p3:3", "p3:4", "s3"));
  for (const vanguard::v1::ReportProgressRequest& r : progress) {
    EXPECT_EQ(r.test_id(), kTestId);
    EXPECT_EQ(r.attempt(), kAttempt);
    EXPECT_EQ(r.worker_id(), "worker-a");
    EXPECT_EQ(r.progress().offered_qps(), 100.0 * r.progress().step_index());
  }
  // Step 2 after one second of it: 6 s planned (1 s warmup, 5 s measured), 5 s left, and
  // three more steps of the sweep at the 7 s the first one took.
  const vanguard::v1::TestProgress& p = progress[7].progress();
  ASSERT_EQ(p.step_index(), 2);
  EXPECT_EQ(FromProtoDuration(p.step_remaining()), absl::Seconds(5));
  EXPECT_EQ(FromProtoDuration(p.test_remaining()), absl::Seconds(5 + 3 * 7));
  EXPECT_EQ(FromProtoDuration(p.elapsed()), absl::Seconds(8));
}

TEST_F(TestRunnerTest, ProgressCanBeTurnedOff) {
  options_.report_progress = false;
  EXPECT_CALL(orchestrator_, ReportProgress(_, _, _)).Times(0);
  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
}

TEST_F(TestRunnerTest, AnOrchestratorRefusingProgressDoesNotDisturbTheTest) {
  EXPECT_CALL(orchestrator_, ReportProgress(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method")));
  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
  EXPECT_EQ(reports_.size(), 3u);
}

TEST_F(TestRunnerTest, CancelInHeartbeatStopsTheStepAndCompletesAsCancelled) {
  vanguard::v1::HeartbeatResponse cancel;
  cancel.set_cancel_requested(true);
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::HeartbeatRequest&,
                    vanguard::v1::HeartbeatResponse* response) {
        *response = cancel;
        return grpc::Status::OK;
      })
      .WillRepeatedly(Return(grpc::Status::OK));
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(1);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kCancelled);

  // The heartbeat after the first window cancelled the step: nothing more was read.
  EXPECT_EQ(last_script_->reads, 1);
  EXPECT_TRUE(reports_.empty());
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].error(), "cancelled by user");
  EXPECT_EQ(completions_[0].attempt(), kAttempt);
}

TEST_F(TestRunnerTest, LeaseLostOnReportAbandonsWithoutCompleting) {
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "stale fencing token")));
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(1);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kAbandoned);
}

TEST_F(TestRunnerTest, RejectedReportFailsTheTestWithTheReason) {
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "step.error_rate: bad")));
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(1);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kFailed);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(), HasSubstr("step.error_rate: bad"));
}

TEST_F(TestRunnerTest, LeaseLostOnHeartbeatStopsTheStepAndAbandons) {
  EXPECT_CALL(orchestrator_, Heartbeat(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "lease expired")));
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _)).Times(0);
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kAbandoned);
  EXPECT_EQ(last_script_->reads, 1);
}

// A replica-loss test over three endpoints, one trial at 100 qps.
vanguard::v1::LeaseTestResponse ReplicaLossLease(vanguard::v1::LeaseTestResponse lease) {
  vanguard::v1::Model* model = lease.mutable_test()->mutable_model();
  model->add_endpoints("http://127.0.0.1:8001");
  model->add_endpoints("http://127.0.0.1:8002");
  vanguard::v1::ReplicaLossStrategy* loss =
      lease.mutable_test()->mutable_spec()->mutable_replica_loss();
  loss->set_min_qps(100);
  loss->set_max_qps(200);
  loss->set_max_trials(1);
  loss->set_remove_url("http://127.0.0.1:8002/admin/down?seconds=30");
  loss->set_restore_url("http://127.0.0.1:8002/admin/up");
  *loss->mutable_after_loss() = ToProtoDuration(absl::Seconds(5));
  return lease;
}

TEST_F(TestRunnerTest, AReplicaLossPostsTheRemovalThenSendsToTheSurvivorsThenRestores) {
  std::vector<std::string> heard;  // RunStep targets and POSTed hooks, in order
  options_.fault_poster = [&](const std::string& url) {
    heard.push_back(absl::StrCat("POST ", url));
    return absl::OkStatus();
  };
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        std::string entry = absl::StrCat("step ", r.target(), " over");
        for (const std::string& t : r.targets()) absl::StrAppend(&entry, " ", t);
        heard.push_back(entry);
        return NewScriptedReader(PredictorStep(r.rate_qps()));
      });

  EXPECT_EQ(runner().Run(ReplicaLossLease(Lease())), TestRunOutcome::kSucceeded);

  EXPECT_THAT(heard,
              ::testing::ElementsAre(
                  "step http://127.0.0.1:8000 over http://127.0.0.1:8000 http://127.0.0.1:8001 "
                  "http://127.0.0.1:8002",
                  "POST http://127.0.0.1:8002/admin/down?seconds=30",
                  "step http://127.0.0.1:8000 over http://127.0.0.1:8000 http://127.0.0.1:8001",
                  "POST http://127.0.0.1:8002/admin/up"));
  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(FromProtoDuration(reports_[1].step().warmup()), absl::ZeroDuration());  // as is
  ASSERT_EQ(completions_.size(), 1u);
  const vanguard::v1::TestResult& result = completions_[0].result();
  EXPECT_EQ(result.max_sustainable_qps(), 0);
  ASSERT_EQ(result.replica_loss().trials_size(), 1);
  EXPECT_TRUE(result.replica_loss().trials(0).lost());
  EXPECT_EQ(result.replica_loss().endpoints(), 3);
  EXPECT_EQ(result.replica_loss().removed_endpoint(), "http://127.0.0.1:8002");
}

TEST_F(TestRunnerTest, ARemovalHookThatFailsFailsTheTestNamingTheField) {
  options_.fault_poster = [](const std::string&) {
    return absl::FailedPreconditionError("POST 127.0.0.1:8002: answered HTTP 500");
  };
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(1);  // the step before the loss only

  EXPECT_EQ(runner().Run(ReplicaLossLease(Lease())), TestRunOutcome::kFailed);

  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].error(),
            "step 2: replica_loss.remove_url: FAILED_PRECONDITION: POST 127.0.0.1:8002: "
            "answered HTTP 500");
}

TEST_F(TestRunnerTest, AReplicaLossTestOfAModelWithOneEndpointFailsBeforeAnyStep) {
  vanguard::v1::LeaseTestResponse lease = ReplicaLossLease(Lease());
  lease.mutable_test()->mutable_model()->mutable_endpoints()->DeleteSubrange(1, 2);
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kFailed);

  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(), HasSubstr("needs at least 2"));
}

vanguard::v1::LeaseTestResponse VersionTransitionLease(vanguard::v1::LeaseTestResponse lease) {
  vanguard::v1::Model* model = lease.mutable_test()->mutable_model();
  model->add_endpoints("http://127.0.0.1:8001");
  vanguard::v1::VersionTransitionStrategy* transition =
      lease.mutable_test()->mutable_spec()->mutable_version_transition();
  transition->set_min_qps(100);
  transition->set_max_qps(200);
  transition->set_max_trials(1);
  transition->add_restart_urls("http://127.0.0.1:8000/admin/restart?factor=4");
  transition->add_restart_urls("http://127.0.0.1:8001/admin/restart?factor=4");
  *transition->mutable_per_replica() = ToProtoDuration(absl::Seconds(5));
  return lease;
}

TEST_F(TestRunnerTest, AVersionTransitionPostsEachRestartBeforeItsStepOverEveryEndpoint) {
  std::vector<std::string> heard;  // RunStep targets and POSTed hooks, in order
  options_.fault_poster = [&](const std::string& url) {
    heard.push_back(absl::StrCat("POST ", url));
    return absl::OkStatus();
  };
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        std::string entry = "step over";
        for (const std::string& t : r.targets()) absl::StrAppend(&entry, " ", t);
        heard.push_back(entry);
        return NewScriptedReader(PredictorStep(r.rate_qps()));
      });

  EXPECT_EQ(runner().Run(VersionTransitionLease(Lease())), TestRunOutcome::kSucceeded);

  const std::string every = "step over http://127.0.0.1:8000 http://127.0.0.1:8001";
  EXPECT_THAT(heard, ::testing::ElementsAre(
                         every, "POST http://127.0.0.1:8000/admin/restart?factor=4", every,
                         "POST http://127.0.0.1:8001/admin/restart?factor=4", every));
  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(FromProtoDuration(reports_[1].step().warmup()), absl::ZeroDuration());  // as is
  ASSERT_EQ(completions_.size(), 1u);
  const vanguard::v1::TestResult& result = completions_[0].result();
  EXPECT_EQ(result.max_sustainable_qps(), 0);
  ASSERT_EQ(result.version_transition().trials_size(), 1);
  EXPECT_EQ(result.version_transition().trials(0).restarts_size(), 2);
  EXPECT_EQ(result.version_transition().endpoints(), 2);
}

TEST_F(TestRunnerTest, ARestartHookThatFailsFailsTheTestNamingTheURL) {
  int posts = 0;
  options_.fault_poster = [&](const std::string&) {
    return ++posts == 2 ? absl::UnavailableError("POST 127.0.0.1:8001: connection refused")
                        : absl::OkStatus();
  };
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(2);  // the warm step and the first restart's

  EXPECT_EQ(runner().Run(VersionTransitionLease(Lease())), TestRunOutcome::kFailed);

  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].error(),
            "step 3: version_transition.restart_urls[1]: UNAVAILABLE: POST 127.0.0.1:8001: "
            "connection refused");
}

TEST_F(TestRunnerTest, UnavailableReplayerIsRetriedTwiceThenTheTestFails) {
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(3).WillRepeatedly([](auto*, auto&) {
    auto script = std::make_shared<StreamScript>();
    script->final_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
    return NewScriptedReader(script);
  });
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _)).Times(0);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kFailed);

  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(), HasSubstr("connection refused"));
  EXPECT_THAT(completions_[0].error(), HasSubstr("step 1"));
  EXPECT_EQ(clock_.Monotonic(), absl::Seconds(1 + 2));  // backoff 1 s, then 2 s
}

TEST_F(TestRunnerTest, ReplayerThatRecoversDoesNotFailTheTest) {
  EXPECT_CALL(replayer_, RunStepRaw(_, _))
      .WillOnce([](auto*, auto&) {
        auto script = std::make_shared<StreamScript>();
        script->final_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting");
        return NewScriptedReader(script);
      })
      .WillRepeatedly([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        return NewScriptedReader(PredictorStep(r.rate_qps()));
      });

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(reports_[0].step().index(), 1);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 200);
}

TEST_F(TestRunnerTest, InvalidClientStepIsReportedAndRerun) {
  int calls = 0;
  EXPECT_CALL(replayer_, RunStepRaw(_, _))
      .WillRepeatedly([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        auto script = PredictorStep(r.rate_qps());
        if (calls++ == 0) {
          vanguard::v1::StepResult* result = script->events.back().mutable_result();
          result->set_client_valid(false);
          result->set_client_invalid_reason("send skew p99 40 ms");
        }
        return NewScriptedReader(script);
      });

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);

  ASSERT_EQ(reports_.size(), 4u);
  EXPECT_EQ(reports_[0].step().index(), 1);
  EXPECT_EQ(reports_[0].step().target_qps(), 100);
  EXPECT_FALSE(reports_[0].step().client_valid());
  EXPECT_FALSE(reports_[0].step().passed());
  EXPECT_THAT(reports_[0].step().verdict(), HasSubstr("not judged"));
  EXPECT_EQ(reports_[1].step().index(), 2);
  EXPECT_EQ(reports_[1].step().target_qps(), 100);
  EXPECT_TRUE(reports_[1].step().passed());
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 200);
  EXPECT_EQ(completions_[0].result().steps_taken(), 4);
}

TEST_F(TestRunnerTest, UnavailableOrchestratorOnReportIsRetried) {
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "orchestrator restarting")))
      .WillRepeatedly([this](grpc::ClientContext*, const vanguard::v1::ReportStepRequest& r,
                             vanguard::v1::ReportStepResponse*) {
        reports_.push_back(r);
        return grpc::Status::OK;
      });

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(reports_[0].step().index(), 1);
}

TEST_F(TestRunnerTest, SpecWithoutStrategyFailsWithoutRunningSteps) {
  vanguard::v1::LeaseTestResponse lease = Lease();
  lease.mutable_test()->mutable_spec()->clear_sweep();
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kFailed);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(), HasSubstr("spec.strategy"));
}

TEST_F(TestRunnerTest, ModelWithoutP99SloFailsWithoutRunningSteps) {
  vanguard::v1::LeaseTestResponse lease = Lease();
  lease.mutable_test()->mutable_model()->mutable_slo()->clear_p99_latency();
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kFailed);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(), HasSubstr("slo.p99_latency"));
}

// The fixture's replayer behind a BeginTest that answers `begin` (a DNS pool of replayers).
class PoolBeginningWith : public ReplayerClient {
 public:
  PoolBeginningWith(ReplayerClient* inner, absl::Status begin)
      : inner_(inner), begin_(std::move(begin)) {}
  absl::StatusOr<TestReplayers> BeginTest(int wanted_replayers,
                                          CancellationToken* cancel) override {
    ++begun;
    wanted.push_back(wanted_replayers);
    if (while_waiting) while_waiting();
    if (cancel != nullptr && cancel->IsCancelled()) {
      cancelled = true;
      return absl::CancelledError("stopped waiting");
    }
    if (!begin_.ok()) return begin_;
    return TestReplayers{shortfall};
  }
  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override {
    return inner_->Execute(request, cancel, on_window);
  }
  int begun = 0;
  std::vector<int> wanted;              // each BeginTest's wanted_replayers
  std::string shortfall;                // what BeginTest answers
  std::function<void()> while_waiting;  // nullable: runs inside BeginTest
  bool cancelled = false;               // BeginTest's token had fired after while_waiting

 private:
  ReplayerClient* const inner_;
  const absl::Status begin_;
};

TEST_F(TestRunnerTest, TheReplayersAreMadeReadyOnceAtTheStartOfEachTest) {
  PoolBeginningWith pool(&executor_, absl::OkStatus());
  TestRunner runner(&client_, &pool, &clock_, options_);
  EXPECT_EQ(runner.Run(Lease()), TestRunOutcome::kSucceeded);
  EXPECT_EQ(pool.begun, 1);
  EXPECT_EQ(runner.Run(Lease()), TestRunOutcome::kSucceeded);
  EXPECT_EQ(pool.begun, 2);
}

TEST_F(TestRunnerTest, AReplayerPoolThatCannotBeResolvedFailsTheTestWithoutRunningSteps) {
  PoolBeginningWith pool(&executor_,
                         absl::FailedPreconditionError(
                             "replayer pool --replayer=dns:replayers.test:50052: replayers.test "
                             "resolves to no address"));
  TestRunner runner(&client_, &pool, &clock_, options_);
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);

  EXPECT_EQ(runner.Run(Lease()), TestRunOutcome::kFailed);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_THAT(completions_[0].error(),
              HasSubstr("FAILED_PRECONDITION: replayer pool --replayer=dns:replayers.test:50052: "
                        "replayers.test resolves to no address"));
}

TEST_F(TestRunnerTest, TheReplayersAreReadiedForTheSpecsCountAndAShortfallIsInTheResult) {
  PoolBeginningWith pool(&executor_, absl::OkStatus());
  TestRunner runner(&client_, &pool, &clock_, options_);
  vanguard::v1::LeaseTestResponse lease = Lease();
  lease.mutable_test()->mutable_spec()->set_replayers(3);
  pool.shortfall = "ran on 2 of the 3 replayers the test wants: dns:replayers.test:50052 had 2";
  EXPECT_EQ(runner.Run(lease), TestRunOutcome::kSucceeded);
  pool.shortfall.clear();
  EXPECT_EQ(runner.Run(Lease()), TestRunOutcome::kSucceeded);  // no count: nothing to wait for

  EXPECT_THAT(pool.wanted, ElementsAre(3, 0));
  ASSERT_EQ(completions_.size(), 2u);
  EXPECT_THAT(
      completions_[0].result().drift_flags(),
      Contains("ran on 2 of the 3 replayers the test wants: dns:replayers.test:50052 had 2"));
  EXPECT_THAT(completions_[1].result().drift_flags(), Not(Contains(HasSubstr("replayers"))));
}

TEST_F(TestRunnerTest, StopWhileWaitingForTheReplayersGivesTheLeaseBackWithoutSteps) {
  PoolBeginningWith pool(&executor_, absl::OkStatus());
  TestRunner runner(&client_, &pool, &clock_, options_);
  pool.while_waiting = [&] { runner.Stop(); };  // SIGTERM while the pool is still growing
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _)).Times(0);
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _)).WillOnce(Return(grpc::Status::OK));

  EXPECT_EQ(runner.Run(Lease()), TestRunOutcome::kReleased);
  EXPECT_EQ(pool.begun, 1);
  EXPECT_TRUE(pool.cancelled);  // the wait was given the token Stop() cancels
}

// SIGTERM during the third window of the first step (reads 0 and 1 returned windows).
void StopOnThirdRead(StreamScript* script, TestRunner* runner, FakeClock* clock,
                     absl::Duration* stopped_at) {
  script->before_read = [=] {
    clock->Advance(absl::Seconds(1));
    if (script->reads == 2) {
      *stopped_at = clock->Monotonic();
      runner->Stop();
    }
  };
}

TEST_F(TestRunnerTest, StopDuringAStepReportsItInterruptedThenGivesTheLeaseBack) {
  absl::Duration stopped_at;
  EXPECT_CALL(replayer_, RunStepRaw(_, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        auto script = PredictorStep(r.rate_qps());
        StopOnThirdRead(script.get(), &runner(), &clock_, &stopped_at);
        return NewScriptedReader(script);
      });
  std::vector<vanguard::v1::ReleaseTestRequest> releases;
  {
    ::testing::InSequence in_order;
    EXPECT_CALL(orchestrator_, ReportStep(_, _, _));  // recorded into reports_ (ON_CALL)
    EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _))
        .WillOnce([&](grpc::ClientContext*, const vanguard::v1::ReleaseTestRequest& r,
                      vanguard::v1::ReleaseTestResponse* response) {
          releases.push_back(r);
          response->mutable_test()->set_state(vanguard::v1::TEST_STATE_QUEUED);
          return grpc::Status::OK;
        });
  }
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kReleased);

  // The step stopped at once: nothing was read after the stop.
  EXPECT_EQ(last_script_->reads, 3);
  ASSERT_EQ(reports_.size(), 1u);
  const vanguard::v1::ReportStepRequest& report = reports_[0];
  EXPECT_EQ(report.test_id(), kTestId);
  EXPECT_EQ(report.attempt(), kAttempt);
  const vanguard::v1::Step& step = report.step();
  EXPECT_TRUE(step.interrupted());
  EXPECT_FALSE(step.passed());
  EXPECT_EQ(step.index(), 1);
  EXPECT_EQ(step.attempt(), kAttempt);
  EXPECT_EQ(step.target_qps(), 100);
  EXPECT_EQ(step.health_state(), vanguard::v1::HEALTH_STATE_UNSPECIFIED);
  EXPECT_THAT(step.verdict(), HasSubstr("interrupted after 3s (3 windows received)"));
  EXPECT_THAT(step.verdict(), HasSubstr("worker worker-a shutting down"));
  EXPECT_EQ(FromProtoDuration(step.duration()), absl::Seconds(3));
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].test_id(), kTestId);
  EXPECT_EQ(releases[0].attempt(), kAttempt);
  EXPECT_EQ(releases[0].worker_id(), "worker-a");
  EXPECT_EQ(releases[0].reason(), "shutting down (step 1 interrupted)");
  // No time was spent waiting once the orchestrator answered.
  EXPECT_EQ(clock_.Monotonic(), stopped_at);
}

TEST_F(TestRunnerTest, AStoppedRunnerGivesANewLeaseBackWithoutRunningIt) {
  runner().Stop();
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _)).Times(0);
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _)).WillOnce(Return(grpc::Status::OK));
  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kReleased);
}

TEST_F(TestRunnerTest, StopBetweenStepsGivesTheLeaseBackWithoutAnInterruptedStep) {
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillOnce([this](grpc::ClientContext*, const vanguard::v1::ReportStepRequest& r,
                       vanguard::v1::ReportStepResponse*) {
        reports_.push_back(r);
        runner().Stop();  // SIGTERM while the finished step 1 was being reported
        return grpc::Status::OK;
      });
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _))
      .WillOnce([](grpc::ClientContext*, const vanguard::v1::ReleaseTestRequest& r,
                   vanguard::v1::ReleaseTestResponse*) {
        EXPECT_EQ(r.reason(), "shutting down");
        return grpc::Status::OK;
      });
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(1);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kReleased);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_FALSE(reports_[0].step().interrupted());
  EXPECT_TRUE(reports_[0].step().passed());
}

TEST_F(TestRunnerTest, UnreachableOrchestratorEndsTheStopWithinTheShutdownTimeout) {
  options_.shutdown_timeout = absl::Seconds(4);
  options_.shutdown_retry = absl::Seconds(1);
  absl::Duration stopped_at;
  EXPECT_CALL(replayer_, RunStepRaw(_, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        auto script = PredictorStep(r.rate_qps());
        StopOnThirdRead(script.get(), &runner(), &clock_, &stopped_at);
        return NewScriptedReader(script);
      });
  int report_calls = 0;
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillRepeatedly([&](grpc::ClientContext* ctx, const vanguard::v1::ReportStepRequest&,
                          vanguard::v1::ReportStepResponse*) {
        ++report_calls;
        // A hung orchestrator cannot hold the call longer than what is left of the budget.
        EXPECT_LE(ctx->deadline(), std::chrono::system_clock::now() + std::chrono::seconds(4));
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
      });
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _)).Times(0);
  EXPECT_CALL(orchestrator_, CompleteTest(_, _, _)).Times(0);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kStopped);
  EXPECT_GE(report_calls, 2);  // retried while the budget lasted
  EXPECT_LE(clock_.Monotonic() - stopped_at, options_.shutdown_timeout);
}

TEST_F(TestRunnerTest, LeaseLostWhileStoppingGivesNothingBack) {
  EXPECT_CALL(replayer_, RunStepRaw(_, _))
      .WillOnce([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        auto script = PredictorStep(r.rate_qps());
        script->before_read = [this, s = script.get()] {
          if (s->reads == 1) runner().Stop();
        };
        return NewScriptedReader(script);
      });
  EXPECT_CALL(orchestrator_, ReportStep(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "lease lost")));
  EXPECT_CALL(orchestrator_, ReleaseTest(_, _, _)).Times(0);

  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kAbandoned);
}

TEST(BuildTestResultTest, ReportsHowLongTheModelTookToWarmUp) {
  Done done;
  done.max_sustainable_qps = 100;
  MeasuredStep first;
  first.model_warmup = absl::Seconds(120);
  vanguard::v1::TestResult result = BuildTestResult(done, 5, absl::Minutes(10), &first);
  EXPECT_EQ(FromProtoDuration(result.model_warmup()), absl::Seconds(120));
  EXPECT_TRUE(result.drift_flags().empty());
  // Still falling when the first step was measured: a lower bound, and said so.
  first.model_warming = true;
  first.model_warmup = absl::Seconds(300);
  result = BuildTestResult(done, 5, absl::Minutes(10), &first);
  EXPECT_EQ(FromProtoDuration(result.model_warmup()), absl::Seconds(300));
  ASSERT_EQ(result.drift_flags_size(), 1);
  EXPECT_THAT(result.drift_flags(0), ::testing::HasSubstr("model still warming after 5m"));
  EXPECT_FALSE(BuildTestResult(done, 0, absl::Minutes(1)).has_model_warmup());
}

TEST(BuildTestResultTest, AModelStillWarmingThroughAStepIsWarmOnlyAfterIt) {
  // The warmup phase saw a steady latency (0 s), but step 1 read the model slower than a
  // later step at its rate: warm no earlier than step 1's end.
  Done done;
  done.max_sustainable_qps = 100;
  done.warming_through_step = 1;
  MeasuredStep first;
  vanguard::v1::TestResult result =
      BuildTestResult(done, 3, absl::Minutes(10), &first, {absl::Seconds(55), absl::Seconds(70)});
  EXPECT_EQ(FromProtoDuration(result.model_warmup()), absl::Seconds(55));
  ASSERT_EQ(result.drift_flags_size(), 1);
  EXPECT_THAT(result.drift_flags(0), ::testing::HasSubstr("model still warming through step 1"));
  // The detector's longer warmup stands; a step an earlier attempt measured has no time here.
  first.model_warmup = absl::Seconds(90);
  result = BuildTestResult(done, 3, absl::Minutes(10), &first, {absl::Seconds(55)});
  EXPECT_EQ(FromProtoDuration(result.model_warmup()), absl::Seconds(90));
  EXPECT_EQ(result.drift_flags_size(), 0);
  first.model_warmup = absl::ZeroDuration();
  result = BuildTestResult(done, 3, absl::Minutes(10), &first, {absl::InfiniteDuration()});
  EXPECT_EQ(FromProtoDuration(result.model_warmup()), absl::ZeroDuration());
}

TEST_F(TestRunnerTest, AStepDisturbedFromOutsideIsMeasuredAgainAfterAPause) {
  options_.outside_pause = absl::Seconds(10);
  int calls = 0;
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        std::shared_ptr<StreamScript> script = PredictorStep(r.rate_qps());
        if (calls++ == 0) {  // the first call: other processes held the CPUs
          vanguard::v1::StepResult* result = script->events.back().mutable_result();
          result->set_client_valid(false);
          result->set_client_invalid_outside(true);
          result->set_client_invalid_reason("send skew p99 20 ms; CPU contention");
        }
        return NewScriptedReader(script);
      });
  const absl::Time start = clock_.Now();
  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
  // Three steps reported, as without the disturbance; one replayer call more, and the pause.
  EXPECT_EQ(reports_.size(), 3u);
  EXPECT_EQ(calls, 4);
  for (const vanguard::v1::ReportStepRequest& r : reports_) EXPECT_TRUE(r.step().client_valid());
  EXPECT_GE(clock_.Now() - start, absl::Seconds(10) + 4 * absl::Seconds(kWindowsPerStep));
}

TEST(BuildTestResultTest, CarriesAtLeastVerificationAndTheTimeAnUndecidedRunNeeds) {
  Done done;
  done.max_sustainable_qps = 400;
  done.at_least = true;
  done.verification = "held 400 req/s for 5m: passed";
  done.more_time_needed_s = 90;
  done.drift_flags = {"reading at 380 req/s (step 2) expired: contradicted by step 6"};
  const vanguard::v1::TestResult result = BuildTestResult(done, 7, absl::Minutes(9));
  EXPECT_TRUE(result.at_least());
  EXPECT_EQ(result.verification(), "held 400 req/s for 5m: passed");
  EXPECT_EQ(FromProtoDuration(result.more_time_needed()), absl::Seconds(90));
  ASSERT_EQ(result.drift_flags_size(), 1);
  EXPECT_FALSE(BuildTestResult(Done{}, 1, absl::Minutes(1)).has_more_time_needed());
}

TEST(BuildInterruptedStepReportTest, CarriesRateTimesAndWhyButNoVerdictOfPassing) {
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  vanguard::v1::StepWindow window;
  window.set_index(17);
  window.set_warmup(true);
  window.set_scheduled(350);
  const vanguard::v1::Step step = BuildInterruptedStepReport(
      4, 2, 350, start, start + absl::Milliseconds(7250), {window}, "w1 shutting down");
  // The window measured before the stop is kept, renumbered within the step.
  ASSERT_EQ(step.windows_size(), 1);
  EXPECT_EQ(step.windows(0).index(), 0);
  EXPECT_TRUE(step.windows(0).warmup());
  EXPECT_EQ(step.windows(0).scheduled(), 350);
  EXPECT_TRUE(step.interrupted());
  EXPECT_FALSE(step.passed());
  EXPECT_EQ(step.index(), 4);
  EXPECT_EQ(step.attempt(), 2);
  EXPECT_EQ(step.target_qps(), 350);
  EXPECT_EQ(FromProtoDuration(step.duration()), absl::Milliseconds(7250));
  EXPECT_EQ(step.verdict(),
            "interrupted after 7.2s (1 window received): w1 shutting down; not judged");
  EXPECT_EQ(FormatStepLine(9, step),
            "test 9 step 4: target 350 qps: interrupted after 7.2s (1 window received): w1 "
            "shutting down; not judged");
}

TEST(FormatStepLineTest, NamesTestStepRatesLatencyAndVerdict) {
  vanguard::v1::Step step;
  step.set_index(3);
  step.set_target_qps(400);
  step.set_achieved_qps(371.25);
  step.mutable_latency()->set_p99_ms(182.3);
  step.set_health_state(vanguard::v1::HEALTH_STATE_OVERLOADED);
  step.set_verdict("p99 182.3 ms > 100 ms");
  EXPECT_EQ(FormatStepLine(9, step),
            "test 9 step 3: target 400 qps, achieved 371.2 qps, p99 182.3 ms, OVERLOADED: "
            "p99 182.3 ms > 100 ms");
}

// A step an earlier attempt measured, as the lease hands it back (Step.outcome included).
vanguard::v1::Step StoredStep(int index, double rate, bool passed) {
  vanguard::v1::Step step;
  step.set_index(index);
  step.set_attempt(1);
  step.set_target_qps(rate);
  step.set_passed(passed);
  step.set_client_valid(true);
  StepOutcome outcome;
  outcome.rate_qps = rate;
  outcome.passed = passed;
  outcome.achieved_qps = rate;
  *step.mutable_outcome() = StepOutcomeToProto(outcome);
  return step;
}

TEST_F(TestRunnerTest, ALeaseOfAnEarlierAttemptsTestGoesOnAfterTheStepsItMeasured) {
  // Attempt 1 measured 100 and 200 qps, then its worker died.
  vanguard::v1::LeaseTestResponse lease = Lease();
  *lease.mutable_test()->add_steps() = StoredStep(1, 100, true);
  *lease.mutable_test()->add_steps() = StoredStep(2, 200, true);
  std::vector<double> rates;
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([&](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        rates.push_back(r.rate_qps());
        return NewScriptedReader(PredictorStep(r.rate_qps()));
      });

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kSucceeded);

  // Only the step after them is measured and reported, under the next index.
  EXPECT_THAT(rates, ::testing::ElementsAre(300));
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].step().index(), 3);
  EXPECT_EQ(reports_[0].step().target_qps(), 300);
  EXPECT_EQ(reports_[0].attempt(), kAttempt);
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 200);
  EXPECT_EQ(completions_[0].result().steps_taken(), 3);
  EXPECT_EQ(runner().last_steps().size(), 3u);
}

TEST_F(TestRunnerTest, TheStrategyDecidesFromTheStoredOutcomesNotByMeasuringAgain) {
  // The stored 200 qps step failed: the sweep is over without a single replayer call.
  vanguard::v1::LeaseTestResponse lease = Lease();
  *lease.mutable_test()->add_steps() = StoredStep(1, 100, true);
  *lease.mutable_test()->add_steps() = StoredStep(2, 200, false);
  EXPECT_CALL(replayer_, RunStepRaw(_, _)).Times(0);

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kSucceeded);

  EXPECT_TRUE(reports_.empty());
  ASSERT_EQ(completions_.size(), 1u);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 100);
}

TEST_F(TestRunnerTest, AnInterruptedStoredStepIsMeasuredAgainUnderItsIndex) {
  vanguard::v1::LeaseTestResponse lease = Lease();
  *lease.mutable_test()->add_steps() = StoredStep(1, 100, true);
  vanguard::v1::Step interrupted = StoredStep(2, 200, false);
  interrupted.set_interrupted(true);
  *lease.mutable_test()->add_steps() = interrupted;

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kSucceeded);

  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(reports_[0].step().index(), 2);
  EXPECT_EQ(reports_[0].step().target_qps(), 200);
  EXPECT_TRUE(reports_[0].step().passed());
  EXPECT_EQ(reports_[1].step().index(), 3);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 200);
}

TEST_F(TestRunnerTest, StoredStepsTheStrategyWouldNotTakeAreMeasuredAgain) {
  // Step 2 ran at a rate this worker's sweep does not ask for (another version's steps):
  // step 1 stands, measuring starts again at step 2.
  vanguard::v1::LeaseTestResponse lease = Lease();
  *lease.mutable_test()->add_steps() = StoredStep(1, 100, true);
  *lease.mutable_test()->add_steps() = StoredStep(2, 150, true);

  EXPECT_EQ(runner().Run(lease), TestRunOutcome::kSucceeded);

  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(reports_[0].step().index(), 2);
  EXPECT_EQ(reports_[0].step().target_qps(), 200);
  EXPECT_EQ(reports_[1].step().index(), 3);
  EXPECT_EQ(reports_[1].step().target_qps(), 300);
  EXPECT_EQ(completions_[0].result().max_sustainable_qps(), 200);
}

TEST_F(TestRunnerTest, EveryReportedStepCarriesTheOutcomeTheStrategySaw) {
  EXPECT_EQ(runner().Run(Lease()), TestRunOutcome::kSucceeded);
  ASSERT_EQ(reports_.size(), 3u);
  for (size_t i = 0; i < reports_.size(); ++i) {
    ASSERT_TRUE(reports_[i].step().has_outcome());
    const StepOutcome& seen = runner().last_steps()[i].outcome;
    const StepOutcome stored = StepOutcomeFromStep(reports_[i].step());
    EXPECT_EQ(stored.rate_qps, seen.rate_qps);
    EXPECT_EQ(stored.passed, seen.passed);
    EXPECT_EQ(stored.p99_ms, seen.p99_ms);
    EXPECT_EQ(stored.tail_ratio, seen.tail_ratio);
    EXPECT_EQ(stored.goodput, seen.goodput);
  }
}

TEST(StepOutcomeProtoTest, EveryFieldSurvivesTheRoundTrip) {
  StepOutcome o;
  o.rate_qps = 1;
  o.passed = true;
  o.client_valid = false;
  o.achieved_qps = 2;
  o.offered_qps = 3;
  o.p50_ms = 4;
  o.p99_ms = 5;
  o.error_rate = 6;
  o.health_score = 7;
  o.limit_ratio = 8;
  o.tail_ratio = 9;
  o.tail_samples = 10;
  o.tail_allowed = 0.05;
  o.passed_apart_from_tail = true;
  o.tail_ratio_se = 11;
  o.tail_units = 12;
  o.backlog_rising = true;
  o.health_state = vanguard::v1::HEALTH_STATE_WARN;
  o.spikes = 13;
  o.window_state = vanguard::v1::HEALTH_STATE_CRITICAL;
  o.goodput = -1;
  o.queue_mean = 14;
  o.queue_samples_fraction = 15;
  o.memory_bytes = -1;
  vanguard::v1::Step step;
  *step.mutable_outcome() = StepOutcomeToProto(o);
  const StepOutcome back = StepOutcomeFromStep(step);
  EXPECT_EQ(back.rate_qps, 1);
  EXPECT_TRUE(back.passed);
  EXPECT_FALSE(back.client_valid);
  EXPECT_EQ(back.achieved_qps, 2);
  EXPECT_EQ(back.offered_qps, 3);
  EXPECT_EQ(back.p50_ms, 4);
  EXPECT_EQ(back.p99_ms, 5);
  EXPECT_EQ(back.error_rate, 6);
  EXPECT_EQ(back.health_score, 7);
  EXPECT_EQ(back.limit_ratio, 8);
  EXPECT_EQ(back.tail_ratio, 9);
  EXPECT_EQ(back.tail_samples, 10);
  EXPECT_EQ(back.tail_allowed, 0.05);
  EXPECT_TRUE(back.passed_apart_from_tail);
  EXPECT_EQ(back.tail_ratio_se, 11);
  EXPECT_EQ(back.tail_units, 12);
  EXPECT_TRUE(back.backlog_rising);
  EXPECT_EQ(back.health_state, vanguard::v1::HEALTH_STATE_WARN);
  EXPECT_EQ(back.spikes, 13);
  EXPECT_EQ(back.window_state, vanguard::v1::HEALTH_STATE_CRITICAL);
  EXPECT_EQ(back.goodput, -1);
  EXPECT_EQ(back.queue_mean, 14);
  EXPECT_EQ(back.queue_samples_fraction, 15);
  EXPECT_EQ(back.memory_bytes, -1);

  // A step stored without an outcome: what its own fields say.
  vanguard::v1::Step old;
  old.set_target_qps(250);
  old.set_passed(true);
  old.set_client_valid(true);
  old.mutable_latency()->set_p99_ms(42);
  const StepOutcome from_old = StepOutcomeFromStep(old);
  EXPECT_EQ(from_old.rate_qps, 250);
  EXPECT_TRUE(from_old.passed);
  EXPECT_EQ(from_old.p99_ms, 42);
  EXPECT_EQ(from_old.goodput, -1);
  // An outcome stored before tail_allowed was: the p99's share.
  vanguard::v1::Step before;
  before.mutable_outcome()->set_tail_ratio(2);
  EXPECT_EQ(StepOutcomeFromStep(before).tail_allowed, kTailAllowedFraction);
}

TEST(BuildStepReportTest, CarriesEachEndpointsTelemetryAndTheImbalanceIntoTheStoredStep) {
  ExecutedStep executed;
  executed.request.set_rate_qps(100);
  executed.result = MakeStepResult(100, 100, 5, 10);
  for (const char* target : {"http://a:1", "http://b:2"}) {
    vanguard::v1::EndpointTelemetry* e = executed.result.add_endpoints();
    e->set_target(target);
    e->set_dispatched(500);
    e->set_completed(500);
    e->mutable_latency()->set_p99_ms(12);
    e->set_peak_in_flight(3);
    e->set_latency_histogram("per-endpoint-bytes");
  }
  executed.result.set_endpoint_imbalance(1.0);
  StepJudgement judgement;
  vanguard::v1::Step step = BuildStepReport(2, 1, executed, judgement);
  ASSERT_EQ(step.endpoints_size(), 2);
  EXPECT_EQ(step.endpoints(1).target(), "http://b:2");
  EXPECT_EQ(step.endpoints(1).completed(), 500);
  EXPECT_EQ(step.endpoints(1).latency().p99_ms(), 12);
  EXPECT_EQ(step.endpoints(1).peak_in_flight(), 3);
  EXPECT_TRUE(step.endpoints(0).latency_histogram().empty());  // the step's own is merged
  EXPECT_EQ(step.endpoint_imbalance(), 1.0);
}

TEST(BuildStepReportTest, ReportsTheTailUtilisationAcrossTheReplicasScrapedGauges) {
  ExecutedStep executed;
  executed.request.set_rate_qps(100);
  executed.result = MakeStepResult(100, 100, 5, 10);
  for (double utilization : {0.35, 0.9, 0.4}) {
    vanguard::v1::EndpointTelemetry* e = executed.result.add_endpoints();
    e->set_target(absl::StrCat("http://r", utilization, ":1"));
    e->mutable_scraped()->set_gpu_utilization(utilization);
    e->mutable_scraped()->set_scrapes(10);
  }
  vanguard::v1::Step step = BuildStepReport(1, 1, executed, StepJudgement());
  EXPECT_DOUBLE_EQ(step.tail_utilization(), 0.9);  // three replicas: the busiest
  EXPECT_DOUBLE_EQ(step.mean_utilization(), 0.55);
  EXPECT_DOUBLE_EQ(step.endpoints(1).scraped().gpu_utilization(), 0.9);
}

}  // namespace
}  // namespace vanguard::worker
