// ProgressReporter on a FakeClock with a recording sender: at most one call a second, the
// windows in between batched, the step's start sent at once, what each call says (rate,
// health, elapsed, time left, errors), and what failures do (retry later with the batch
// kept, stop on a lost lease).
#include "worker/progress_reporter.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

vanguard::v1::StepWindow Window(
    bool warmup, int64_t scheduled = 50, int64_t errors = 0,
    vanguard::v1::HealthState health = vanguard::v1::HEALTH_STATE_HEALTHY) {
  vanguard::v1::StepWindow w;
  w.set_index(99);  // the reporter numbers windows itself
  w.set_warmup(warmup);
  w.set_offered_qps(100);
  w.set_achieved_qps(99);
  w.set_scheduled(scheduled);
  w.set_errors(errors);
  w.set_health_state(warmup ? vanguard::v1::HEALTH_STATE_UNSPECIFIED : health);
  return w;
}

std::vector<int> Indices(const vanguard::v1::ReportProgressRequest& r) {
  std::vector<int> out;
  for (const auto& w : r.progress().windows()) out.push_back(w.index());
  return out;
}

class ProgressReporterTest : public ::testing::Test {
 protected:
  ProgressReporterTest() : started_(clock_.Monotonic()) {}

  ProgressReporter MakeReporter() {
    return ProgressReporter(
        [this](const vanguard::v1::ReportProgressRequest& request, absl::Duration timeout) {
          sent_.push_back(request);
          timeouts_.push_back(timeout);
          return next_status_;
        },
        &clock_, /*test_id=*/7, /*attempt=*/2, started_,
        {.worker_id = "w-1", .max_batch_windows = 4, .log = [this](const std::string& line) {
           log_.push_back(line);
         }});
  }

  FakeClock clock_;
  const absl::Duration started_;
  std::vector<vanguard::v1::ReportProgressRequest> sent_;
  std::vector<absl::Duration> timeouts_;
  std::vector<std::string> log_;
  absl::Status next_status_ = absl::OkStatus();
};

TEST_F(ProgressReporterTest, SendsTheStepsStartAtOnceThenBatchesWindowsToOneCallASecond) {
  ProgressReporter progress = MakeReporter();
  progress.StartStep(3, 400, absl::Seconds(30), std::nullopt, 2);
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].test_id(), 7);
  EXPECT_EQ(sent_[0].attempt(), 2);
  EXPECT_EQ(sent_[0].worker_id(), "w-1");
  EXPECT_EQ(sent_[0].progress().step_index(), 3);
  EXPECT_DOUBLE_EQ(sent_[0].progress().offered_qps(), 400);
  EXPECT_THAT(Indices(sent_[0]), IsEmpty());
  EXPECT_EQ(timeouts_[0], absl::Seconds(2));

  // Windows every 0.25 s: nothing goes out until a second has passed since the last call.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Milliseconds(250));
    progress.OnWindow(Window(/*warmup=*/true));
  }
  EXPECT_EQ(sent_.size(), 1u);
  clock_.Advance(absl::Milliseconds(250));
  progress.OnWindow(Window(/*warmup=*/false));
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_THAT(Indices(sent_[1]), ElementsAre(0, 1, 2, 3));

  // The next batch holds only the windows since, and the count goes on.
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(absl::Milliseconds(250));
    progress.OnWindow(Window(false));
  }
  ASSERT_EQ(sent_.size(), 3u);
  EXPECT_THAT(Indices(sent_[2]), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(progress.calls(), 3);
}

TEST_F(ProgressReporterTest, NeverMoreThanOneCallPerIntervalHoweverManyWindows) {
  ProgressReporter progress = MakeReporter();
  progress.StartStep(1, 100, absl::Seconds(10), std::nullopt, 0);
  for (int i = 0; i < 1000; ++i) {
    clock_.Advance(absl::Milliseconds(10));
    progress.OnWindow(Window(false));
  }
  // 10 s of windows: the start, then one call a second.
  EXPECT_EQ(sent_.size(), 11u);
}

TEST_F(ProgressReporterTest, SaysTheHealthElapsedTimeLeftAndErrorsOfTheStepSoFar) {
  clock_.Advance(absl::Seconds(100));  // the test has run 100 s: two steps of 50 s
  ProgressReporter progress = MakeReporter();
  progress.StartStep(3, 400, absl::Seconds(30), /*steps_left=*/2, /*steps_done=*/2);
  clock_.Advance(absl::Seconds(1));
  progress.OnWindow(Window(/*warmup=*/true, 100, 1));
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[1].progress().health_state(), vanguard::v1::HEALTH_STATE_UNSPECIFIED)
      << "settle windows are not assessed";

  clock_.Advance(absl::Seconds(11));
  progress.OnWindow(Window(false, 100, 3, vanguard::v1::HEALTH_STATE_UNHEALTHY));
  ASSERT_EQ(sent_.size(), 3u);
  const vanguard::v1::TestProgress& p = sent_[2].progress();
  EXPECT_EQ(p.health_state(), vanguard::v1::HEALTH_STATE_UNHEALTHY);
  EXPECT_EQ(FromProtoDuration(p.elapsed()), absl::Seconds(112));
  EXPECT_EQ(FromProtoDuration(p.step_elapsed()), absl::Seconds(12));
  EXPECT_EQ(FromProtoDuration(p.step_remaining()), absl::Seconds(18));
  // 18 s of this step plus two more at the 50 s the first two took.
  EXPECT_EQ(FromProtoDuration(p.test_remaining()), absl::Seconds(118));
  EXPECT_EQ(p.step_scheduled(), 200);
  EXPECT_EQ(p.step_errors(), 4);

  // Past its plan (settling longer) the step has nothing left, never a negative time.
  clock_.Advance(absl::Seconds(40));
  progress.OnWindow(Window(false));
  EXPECT_EQ(FromProtoDuration(sent_.back().progress().step_remaining()), absl::ZeroDuration());
  EXPECT_EQ(FromProtoDuration(sent_.back().progress().test_remaining()), absl::Seconds(100));
}

TEST_F(ProgressReporterTest, WithoutAStepCountTheTestsTimeLeftIsUnset) {
  ProgressReporter progress = MakeReporter();
  progress.StartStep(1, 100, absl::Seconds(10), std::nullopt, 0);
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_FALSE(sent_[0].progress().has_test_remaining());
  EXPECT_EQ(FromProtoDuration(sent_[0].progress().step_remaining()), absl::Seconds(10));
}

TEST_F(ProgressReporterTest, ANewStepStartsItsWindowsAndCountsAfreshAndDropsTheOldBatch) {
  ProgressReporter progress = MakeReporter();
  progress.StartStep(1, 100, absl::Seconds(10), std::nullopt, 0);
  clock_.Advance(absl::Milliseconds(500));
  progress.OnWindow(Window(false, 50, 5));  // batched, not sent
  progress.EndStep();
  clock_.Advance(absl::Milliseconds(600));
  progress.OnWindow(Window(false));  // between steps: ignored
  progress.StartStep(2, 200, absl::Seconds(10), std::nullopt, 1);
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_EQ(sent_[1].progress().step_index(), 2);
  EXPECT_THAT(Indices(sent_[1]), IsEmpty());
  EXPECT_EQ(sent_[1].progress().step_errors(), 0);
  clock_.Advance(absl::Seconds(1));
  progress.OnWindow(Window(false));
  ASSERT_EQ(sent_.size(), 3u);
  EXPECT_THAT(Indices(sent_[2]), ElementsAre(0));
}

TEST_F(ProgressReporterTest, ATransientFailureKeepsTheNewestWindowsAndRetriesLater) {
  ProgressReporter progress = MakeReporter();
  next_status_ = absl::UnavailableError("orchestrator down");
  progress.StartStep(1, 100, absl::Seconds(60), std::nullopt, 0);
  ASSERT_EQ(sent_.size(), 1u);
  // Nothing is tried for retry_after_failure (5 s); the batch keeps the newest 4 windows.
  for (int i = 0; i < 9; ++i) {
    clock_.Advance(absl::Milliseconds(500));
    progress.OnWindow(Window(false));
  }
  EXPECT_EQ(sent_.size(), 1u);
  next_status_ = absl::OkStatus();
  clock_.Advance(absl::Milliseconds(500));
  progress.OnWindow(Window(false));
  ASSERT_EQ(sent_.size(), 2u);
  EXPECT_THAT(Indices(sent_[1]), ElementsAre(6, 7, 8, 9));
  EXPECT_FALSE(progress.stopped());
  ASSERT_EQ(log_.size(), 2u);  // the failure once, and the recovery
  EXPECT_THAT(log_[0], ::testing::HasSubstr("will retry"));
}

TEST_F(ProgressReporterTest, ALostLeaseStopsEveryLaterReport) {
  ProgressReporter progress = MakeReporter();
  next_status_ = absl::FailedPreconditionError("lease lost");
  progress.StartStep(1, 100, absl::Seconds(60), std::nullopt, 0);
  EXPECT_TRUE(progress.stopped());
  next_status_ = absl::OkStatus();
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(2));
    progress.OnWindow(Window(false));
  }
  progress.StartStep(2, 100, absl::Seconds(60), std::nullopt, 1);
  EXPECT_EQ(sent_.size(), 1u);
  EXPECT_EQ(log_.size(), 1u);
}

TEST_F(ProgressReporterTest, AnOrchestratorWithoutTheRpcIsNotAskedAgain) {
  ProgressReporter progress = MakeReporter();
  next_status_ = absl::UnimplementedError("unknown method ReportProgress");
  progress.StartStep(1, 100, absl::Seconds(60), std::nullopt, 0);
  clock_.Advance(absl::Seconds(2));
  progress.OnWindow(Window(false));
  EXPECT_EQ(sent_.size(), 1u);
  EXPECT_TRUE(progress.stopped());
}

}  // namespace
}  // namespace vanguard::worker
