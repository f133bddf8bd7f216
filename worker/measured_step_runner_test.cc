// MeasuredStepRunner: settling until steady (and its cap), per-window health and spikes,
// scraped gauges in the verdict and outcome, closed-loop requests, goodput.
#include "worker/measured_step_runner.h"

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vanguard/v1/replayer_mock.grpc.pb.h"
#include "worker/proto_time.h"
#include "worker/testing/scripted_stream.h"

namespace vanguard::worker {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::StartsWith;
using testing_util::MakeStepResult;
using testing_util::NewScriptedReader;
using testing_util::ResultEvent;
using testing_util::StreamScript;

vanguard::v1::Slo Slo() {
  vanguard::v1::Slo slo;
  slo.mutable_p99_latency()->set_nanos(100'000'000);  // 100 ms
  slo.set_max_error_rate(0.01);
  return slo;
}

vanguard::v1::RunStepEvent Window(double p50_ms, double p99_ms, double offered = 100,
                                  double achieved = 100) {
  vanguard::v1::RunStepEvent e;
  vanguard::v1::WindowMetrics* w = e.mutable_window();
  w->mutable_latency()->set_p50_ms(p50_ms);
  w->mutable_latency()->set_p99_ms(p99_ms);
  w->set_offered_qps(offered);
  w->set_achieved_qps(achieved);
  w->set_scheduled(100);
  w->set_completed(100);
  return e;
}

absl::Duration Window(const vanguard::v1::RunStepRequest& r) {
  const absl::Duration w = FromProtoDuration(r.window());
  return w > absl::ZeroDuration() ? w : absl::Seconds(1);
}

// The windows a replayer sends for `r`: its warmup's (flagged), then the measured part's, all
// at the same latency.
void AddWindows(StreamScript& script, const vanguard::v1::RunStepRequest& r, double p50_ms,
                double p99_ms) {
  const int warmup = static_cast<int>(FromProtoDuration(r.warmup()) / Window(r));
  const int measured = static_cast<int>(FromProtoDuration(r.duration()) / Window(r));
  for (int i = 0; i < warmup + measured; ++i) {
    vanguard::v1::RunStepEvent e = Window(p50_ms, p99_ms);
    e.mutable_window()->set_warmup(i < warmup);
    script.events.push_back(e);
  }
}

class MeasuredStepRunnerTest : public ::testing::Test {
 protected:
  MeasuredStepRunnerTest()
      : executor_(&replayer_, &clock_),
        judge_(*StepJudge::Create(
            Slo(), std::make_unique<WeightedHealthScorer>(vanguard::v1::HealthWeights()))),
        assessor_(*HealthAssessor::Create(Slo())) {
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          requests_.push_back(r);
          auto script = std::make_shared<StreamScript>();
          // The model's latency follows settle_p50 through every window the replayer sends,
          // warmup or measured, across calls; measured windows of a measured call (10 s)
          // carry measured_p99_.
          const bool measured = FromProtoDuration(r.duration()) == absl::Seconds(10);
          const int warmup_windows = static_cast<int>(FromProtoDuration(r.warmup()) / Window(r));
          const int windows = static_cast<int>(FromProtoDuration(r.duration()) / Window(r));
          for (int i = 0; i < warmup_windows + windows; ++i) {
            const double p50 = settle_p50(settle_window_++);
            const bool warmup = i < warmup_windows;
            const double p99 = measured && !warmup
                                   ? measured_p99_[(i - warmup_windows) % measured_p99_.size()]
                                   : 3 * p50;
            vanguard::v1::RunStepEvent e = Window(p50, p99);
            e.mutable_window()->set_warmup(warmup);
            script->events.push_back(e);
          }
          vanguard::v1::StepResult result = MakeStepResult(r.rate_qps(), r.rate_qps(), 10, 40);
          for (const std::string& t : result_targets_) result.add_endpoints()->set_target(t);
          script->events.push_back(ResultEvent(result));
          return NewScriptedReader(script);
        });
  }

  vanguard::v1::RunStepRequest Request() {
    vanguard::v1::RunStepRequest r;
    r.set_rate_qps(100);
    *r.mutable_warmup() = ToProtoDuration(absl::Seconds(3));
    *r.mutable_duration() = ToProtoDuration(absl::Seconds(10));
    return r;
  }

  MeasuredStep MustRun(MeasuredStepOptions options, MetricsCollector* collector = nullptr,
                       bool first = false, double hold = 1) {
    MeasuredStepRunner runner(&executor_, &judge_, &assessor_, collector, Slo(), options);
    auto step = runner.Run(Request(), first, nullptr, nullptr, hold);
    EXPECT_TRUE(step.ok()) << step.status();
    return std::move(*step);
  }

  NiceMock<vanguard::v1::MockReplayerStub> replayer_;
  FakeClock clock_;
  StepExecutor executor_;
  StepJudge judge_;
  HealthAssessor assessor_;
  std::vector<vanguard::v1::RunStepRequest> requests_;
  // p50 of settle window i: decays 40 -> 10 ms over the first 12 windows, then flat.
  std::function<double(int)> settle_p50 = [](int i) { return i < 12 ? 40.0 - 2.5 * i : 10.0; };
  int settle_window_ = 0;
  std::vector<double> measured_p99_ = {40};
  std::vector<std::string> result_targets_;  // the result's EndpointTelemetry targets
};

TEST_F(MeasuredStepRunnerTest, SettledAtOnceTheStepIsOneContinuousCall) {
  // The model settles within the fixed warmup (two slow windows): one call, 3 s of warmup
  // (0.5 s windows, fed to the detector) and the measured part right behind it.
  settle_p50 = [](int i) { return i < 2 ? 40.0 - 10 * i : 10.0; };
  MeasuredStep step = MustRun({});
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(3));
  EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(10));
  EXPECT_EQ(FromProtoDuration(requests_[0].window()), absl::Milliseconds(500));
  EXPECT_TRUE(step.steady);
  EXPECT_EQ(step.settle_time, absl::Seconds(3));
  // Settle windows kept but flagged; measured ones scored.
  ASSERT_EQ(step.windows.size(), 6u + 20u);
  EXPECT_TRUE(step.windows[5].warmup());
  EXPECT_FALSE(step.windows[6].warmup());
  EXPECT_EQ(step.windows[25].health_state(), vanguard::v1::HEALTH_STATE_HEALTHY);
  EXPECT_EQ(step.windows[0].health_state(), vanguard::v1::HEALTH_STATE_UNSPECIFIED);
  EXPECT_EQ(FromProtoDuration(step.executed.request.warmup()), absl::Seconds(3));
  EXPECT_TRUE(step.outcome.passed);
}

TEST_F(MeasuredStepRunnerTest, NotSettledTheMeasuredPartIsSettlingAndAContinuousCallFollows) {
  // Latency decays over the first 12 windows (6 s): still drifting when the first call's
  // measured part begins (after 3 s), so that part counts as settling; steady by its end,
  // the step is measured in a second call behind one continuous 2 s span (4 windows).
  MeasuredStep step = MustRun({});
  ASSERT_EQ(requests_.size(), 2u);
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(3));
  EXPECT_EQ(FromProtoDuration(requests_[1].warmup()), absl::Seconds(2));
  EXPECT_EQ(FromProtoDuration(requests_[1].duration()), absl::Seconds(10));
  EXPECT_NE(requests_[0].seed(), requests_[1].seed());
  EXPECT_TRUE(step.steady);
  EXPECT_EQ(step.settle_time, absl::Seconds(3 + 10 + 2));
  ASSERT_EQ(step.windows.size(), 6u + 20u + 4u + 20u);
  EXPECT_TRUE(step.windows[29].warmup());
  EXPECT_EQ(step.windows[29].health_state(), vanguard::v1::HEALTH_STATE_UNSPECIFIED);
  EXPECT_FALSE(step.windows[30].warmup());
  EXPECT_TRUE(step.outcome.passed);
}

TEST_F(MeasuredStepRunnerTest, FirstStepWaitsForTheModelsWarmup) {
  // A model warming up: 30 -> 10 ms over 60 windows (30 s), flat after. Four-window spans
  // would call it steady early; the first step's WarmupDetector (10 s spans) sees it fall
  // until 30 s and says warm once its horizon (50 s) is flat: at 80 s.
  settle_p50 = [](int i) { return i < 60 ? 30.0 - i / 3.0 : 10.0; };
  MeasuredStep step = MustRun({}, nullptr, /*first=*/true);
  EXPECT_TRUE(step.steady);
  EXPECT_EQ(step.model_warmup, absl::Seconds(30));
  EXPECT_FALSE(step.model_warming);
  // The 40 s lead (the detector's evidence), the 10 s part it led, chunks to 80 s, then the
  // 2 s span leading the measured part.
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(40));
  EXPECT_EQ(step.settle_time, absl::Seconds(80 + 2));
  // The same decay after a rate change is called steady far sooner, and no warmup is
  // reported but on the first step.
  requests_.clear();
  settle_window_ = 0;
  step = MustRun({});
  EXPECT_LT(step.settle_time, absl::Seconds(30));
  EXPECT_EQ(step.model_warmup, absl::ZeroDuration());
}

TEST_F(MeasuredStepRunnerTest, AWarmModelIsMeasuredRightAfterTheWarmupEvidence) {
  settle_p50 = [](int i) { return 10.0 + (i % 3); };  // flat, a little noise
  MeasuredStep step = MustRun({}, nullptr, /*first=*/true);
  ASSERT_EQ(requests_.size(), 1u);  // one call: the 40 s lead, then the measured part
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(40));
  EXPECT_TRUE(step.steady);
  EXPECT_EQ(step.model_warmup, absl::ZeroDuration());
  EXPECT_FALSE(step.model_warming);
}

TEST_F(MeasuredStepRunnerTest, AModelStillWarmingAtItsCapIsReportedAsSuch) {
  settle_p50 = [](int i) { return 100.0 * std::pow(0.99, i); };  // falling all along
  MeasuredStepOptions options;
  // While the latency falls the first step settles up to the warmup's cap, beyond
  // max_initial_settle.
  options.model_warmup.max_warmup = absl::Seconds(70);
  options.max_initial_settle = absl::Seconds(50);
  MeasuredStep step = MustRun(options, nullptr, /*first=*/true);
  EXPECT_FALSE(step.steady);
  EXPECT_TRUE(step.model_warming);
  EXPECT_EQ(step.settle_time, absl::Seconds(70 + 2));
  // All it watched (the settling and the span leading the measured part): a lower bound.
  EXPECT_EQ(step.model_warmup, absl::Seconds(72));
  // Without warmup detection the first step's four-window drift test calls this slow
  // decline (3% per 2 s) steady at once: measured after the 3 s warmup.
  requests_.clear();
  settle_window_ = 0;
  options.detect_model_warmup = false;
  step = MustRun(options, nullptr, /*first=*/true);
  EXPECT_TRUE(step.steady);
  EXPECT_EQ(step.settle_time, absl::Seconds(3));
  EXPECT_FALSE(step.model_warming);
  EXPECT_EQ(step.model_warmup, absl::ZeroDuration());
}

TEST_F(MeasuredStepRunnerTest, SettlingIsCapped) {
  settle_p50 = [](int i) { return 100.0 * std::pow(0.9, i); };  // never steady
  MeasuredStepOptions options;
  options.max_settle = absl::Seconds(17);
  MeasuredStep step = MustRun(options);
  EXPECT_FALSE(step.steady);
  // 3 s warmup + the 10 s part it led, then 2 s chunks to the 17 s cap; then the 2 s span
  // leading the measured part.
  EXPECT_EQ(step.settle_time, absl::Seconds(17 + 2));
  EXPECT_EQ(requests_.size(), 1u + 2u + 1u);
}

TEST_F(MeasuredStepRunnerTest, APartThatWouldSpendTheSettleBudgetIsKept) {
  // Never steady, and the 3 s lead with the 10 s part it led already reach the 13 s cap: a
  // second call would start from a drained queue behind a 2 s span, less settled than the
  // first part was. That part is judged; the step is not steady.
  settle_p50 = [](int i) { return 100.0 * std::pow(0.9, i); };
  MeasuredStepOptions options;
  options.max_settle = absl::Seconds(13);
  MeasuredStep step = MustRun(options);
  EXPECT_FALSE(step.steady);
  EXPECT_EQ(requests_.size(), 1u);
  EXPECT_EQ(step.settle_time, absl::Seconds(3));
  ASSERT_EQ(step.windows.size(), 6u + 20u);
  EXPECT_FALSE(step.windows[6].warmup());
  // The test's first step still settles on (the model's own warmup may be what drifts).
  requests_.clear();
  options.max_initial_settle = absl::Seconds(13);
  options.detect_model_warmup = false;
  MustRun(options, nullptr, /*first=*/true);
  EXPECT_EQ(requests_.size(), 2u);
}

TEST_F(MeasuredStepRunnerTest, TheFirstStepSettlesLonger) {
  settle_p50 = [](int i) { return 100.0 * std::pow(0.9, i); };  // never steady
  MeasuredStepOptions options;
  options.detect_model_warmup = false;
  // The first step of a test may wait longer (the model's own warmup): 3 s warmup + 10 s,
  // then 2 s chunks to the 23 s cap, then the 2 s span leading the measured part.
  options.max_initial_settle = absl::Seconds(23);
  EXPECT_EQ(MustRun(options, nullptr, /*first=*/true).settle_time, absl::Seconds(23 + 2));
  EXPECT_EQ(requests_.size(), 1u + 5u + 1u);
}

TEST_F(MeasuredStepRunnerTest, OverloadWithRisingLatencyStopsSettling) {
  settle_p50 = [](int i) { return 30.0 + 5 * i; };  // p99 = 3 x p50: above 100 ms, rising
  MeasuredStep step = MustRun({});
  EXPECT_TRUE(step.overloaded_while_settling);
  EXPECT_FALSE(step.steady);
  EXPECT_EQ(step.settle_time, absl::Seconds(3));  // the fixed warmup only, not the 30 s cap
  // A backlog draining (overloaded but falling) is waited for.
  requests_.clear();
  settle_window_ = 0;
  settle_p50 = [](int i) { return i < 8 ? 200.0 - 20 * i : 40.0; };
  step = MustRun({});
  EXPECT_FALSE(step.overloaded_while_settling);
  EXPECT_TRUE(step.steady);
  // 3 s falling, then the 10 s part (falling, then flat) is settling, then the 2 s span.
  EXPECT_EQ(step.settle_time, absl::Seconds(15));
}

TEST_F(MeasuredStepRunnerTest, FirstStepWaitsOutOverloadOfAColdModel) {
  // The test's first step at a rate the model carries once warm: overloaded, latency rising
  // while it warms (12 windows), then falling and flat. The first step does not give up.
  settle_p50 = [](int i) { return i < 12 ? 40.0 + 5 * i : (i < 20 ? 100.0 - 7 * (i - 12) : 40.0); };
  MeasuredStep step = MustRun({}, nullptr, /*first=*/true);
  EXPECT_FALSE(step.overloaded_while_settling);
  EXPECT_TRUE(step.steady);
  EXPECT_GT(step.settle_time, absl::Seconds(10));
  EXPECT_EQ(step.model_warmup, absl::Seconds(10));  // the first span rose and fell
}

TEST_F(MeasuredStepRunnerTest, WithoutWarmupHandlingTheStepIsMeasuredAtOnce) {
  MeasuredStepOptions options;
  options.fixed_warmup = false;
  options.steady_state_detection = false;
  MustRun(options);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::ZeroDuration());
}

// Measured calls (10 s, or longer for a hold) pass at p99 85 ms (UNHEALTHY, limit 100); the mean
// latency of their windows climbs 20 -> 40 ms in the first `rising_calls` of them and is flat
// after.
class RemeasureTest : public MeasuredStepRunnerTest {
 protected:
  void Script(int rising_calls) {
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault(
            [this, rising_calls](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
              requests_.push_back(r);
              auto script = std::make_shared<StreamScript>();
              const int lead = static_cast<int>(FromProtoDuration(r.warmup()) / Window(r));
              const int n = static_cast<int>(FromProtoDuration(r.duration()) / Window(r));
              const bool measured = FromProtoDuration(r.duration()) >= absl::Seconds(10);
              const bool rising = measured && measured_calls_++ < rising_calls;
              for (int i = 0; i < lead; ++i) {
                vanguard::v1::RunStepEvent e = Window(10, 30);
                e.mutable_window()->set_warmup(true);
                e.mutable_window()->mutable_latency()->set_mean_ms(20);
                script->events.push_back(e);
              }
              for (int i = 0; i < n; ++i) {
                vanguard::v1::RunStepEvent e = Window(10, measured ? 85 : 30);
                e.mutable_window()->mutable_latency()->set_mean_ms(rising ? 20 + 20.0 * i / n : 20);
                script->events.push_back(e);
              }
              script->events.push_back(
                  ResultEvent(MakeStepResult(r.rate_qps(), r.rate_qps(), 10, measured ? 85 : 30)));
              return NewScriptedReader(script);
            });
  }
  int measured_calls_ = 0;
};

TEST_F(RemeasureTest, APassNearTheLimitWithLatencyStillRisingIsMeasuredAgain) {
  Script(/*rising_calls=*/1);
  MeasuredStep step = MustRun({});
  EXPECT_TRUE(step.remeasured);
  EXPECT_EQ(measured_calls_, 2);
  // The first measured part joins the settle windows; only the second is judged.
  int measured_windows = 0;
  for (const vanguard::v1::StepWindow& w : step.windows) measured_windows += !w.warmup();
  EXPECT_EQ(measured_windows, 20);
  EXPECT_NE(requests_.back().seed(), requests_[requests_.size() - 2].seed());
  // Between calls the arrivals pause and the queue drains: the second part is led by a
  // continuous span as long as everything before it (3 s warmup + the 10 s part).
  EXPECT_EQ(FromProtoDuration(requests_.back().warmup()), absl::Seconds(13));
  EXPECT_EQ(step.settle_time, absl::Seconds(3 + 10 + 13));
  EXPECT_TRUE(step.outcome.passed);
}

TEST_F(RemeasureTest, OnlyOnceNeverWhenFlatNorForAHold) {
  Script(/*rising_calls=*/100);
  MeasuredStep step = MustRun({});
  EXPECT_TRUE(step.remeasured);
  EXPECT_EQ(measured_calls_, 2);  // still rising after the second part: judged as it is
  measured_calls_ = 0;
  Script(/*rising_calls=*/0);
  step = MustRun({});
  EXPECT_FALSE(step.remeasured);
  EXPECT_EQ(measured_calls_, 1);
  measured_calls_ = 0;
  Script(/*rising_calls=*/1);
  step = MustRun({}, nullptr, /*first=*/false, /*hold=*/2);  // a confirmation hold: 20 s
  EXPECT_FALSE(step.remeasured);
  EXPECT_EQ(measured_calls_, 1);
  EXPECT_TRUE(step.outcome.passed);
  measured_calls_ = 0;
  Script(/*rising_calls=*/1);
  MeasuredStepOptions off;
  off.remeasure_rising_near_limit = false;
  step = MustRun(off);
  EXPECT_FALSE(step.remeasured);
  EXPECT_EQ(measured_calls_, 1);
}

// A histogram of `n` requests at `fast_ms`, `slow` of them at 300 ms (over the 100 ms limit).
std::string Requests(int n, int slow, double fast_ms = 10) {
  LatencyHistogram h;
  h.RecordN(static_cast<int64_t>(fast_ms * 1000), n - slow);
  h.RecordN(300'000, slow);
  return h.Serialize();
}

class TailEvidenceTest : public MeasuredStepRunnerTest {
 protected:
  // One call: six flat settle windows of 100 requests each (the slow ones of window i are
  // lead_slow[i]), then the measured part whose result holds 1000 requests, `measured_slow`
  // of them slow.
  // With `stream`, the slow requests are slow to their first token (latency stays fast).
  void Script(std::vector<int> lead_slow, int measured_slow, bool stream = false) {
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([=, this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          requests_.push_back(r);
          auto script = std::make_shared<StreamScript>();
          const int warmup_windows = static_cast<int>(FromProtoDuration(r.warmup()) / Window(r));
          const int windows = static_cast<int>(FromProtoDuration(r.duration()) / Window(r));
          for (int i = 0; i < warmup_windows + windows; ++i) {
            vanguard::v1::RunStepEvent e = Window(10, 30);
            e.mutable_window()->set_warmup(i < warmup_windows);
            if (i < warmup_windows) {
              const std::string slow = Requests(100, lead_slow[i % lead_slow.size()]);
              e.mutable_window()->set_latency_histogram(stream ? Requests(100, 0) : slow);
              if (stream) e.mutable_window()->set_ttft_histogram(slow);
            }
            script->events.push_back(e);
          }
          vanguard::v1::StepResult result = MakeStepResult(r.rate_qps(), r.rate_qps(), 10, 40);
          result.set_latency_histogram(Requests(1000, stream ? 0 : measured_slow));
          if (stream) {
            result.mutable_ttft()->set_p50_ms(10);
            result.mutable_ttft()->set_p99_ms(10);
            result.set_ttft_histogram(Requests(1000, measured_slow));
          }
          script->events.push_back(ResultEvent(result));
          return NewScriptedReader(script);
        });
  }
};

TEST_F(TailEvidenceTest, OnlyTheMeasuredPartIsTailEvidence) {
  // A stall in the settle span just before the measured part (window 3 of 6, steady) does
  // not count: taking the worse of the part alone and the part with its lead reads a tail set
  // by rare stalls high (see the header).
  Script({0, 0, 0, 50, 0, 0}, /*measured_slow=*/2);
  MeasuredStep step = MustRun({});
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_DOUBLE_EQ(step.outcome.tail_ratio, 0.2);  // 2 of 1000 over the limit / 1%
  EXPECT_EQ(step.outcome.tail_samples, 1000);
  EXPECT_THAT(step.judgement.verdict, HasSubstr("(tail 0.20 of allowed, 1000 requests)"));
}

TEST_F(TailEvidenceTest, StreamsAreJudgedOnTheMeasuredTimeToFirstToken) {
  Script({0, 0, 0, 50, 0, 0}, /*measured_slow=*/20, /*stream=*/true);
  vanguard::v1::Slo slo = Slo();
  slo.mutable_ttft_p99()->set_nanos(100'000'000);
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, slo, {});
  auto step = runner.Run(Request(), false, nullptr, nullptr);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_DOUBLE_EQ(step->outcome.tail_ratio, 2.0);  // 20 of 1000 slow to their first token
  EXPECT_EQ(step->outcome.tail_samples, 1000);
}

TEST_F(TailEvidenceTest, ACalmerLeadNeverDilutesTheMeasuredPart) {
  Script({0, 0, 0, 0, 0, 0}, /*measured_slow=*/20);
  MeasuredStep step = MustRun({});
  EXPECT_DOUBLE_EQ(step.outcome.tail_ratio, 2.0);
  EXPECT_EQ(step.outcome.tail_samples, 1000);
}

// One call with a flat 3 s lead; each measured window holds 50 requests, slow[i % size] of
// them over the 100 ms limit (its own histogram), the result the sum of them.
class TailConfidenceTest : public MeasuredStepRunnerTest {
 protected:
  void Script(std::vector<int> slow, double result_p50_ms = 10, double result_p99_ms = 40) {
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([=, this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          requests_.push_back(r);
          auto script = std::make_shared<StreamScript>();
          const int lead = static_cast<int>(FromProtoDuration(r.warmup()) / Window(r));
          const int n = static_cast<int>(FromProtoDuration(r.duration()) / Window(r));
          int total_slow = 0;
          for (int i = 0; i < lead + n; ++i) {
            vanguard::v1::RunStepEvent e = Window(10, 30);
            e.mutable_window()->set_warmup(i < lead);
            if (i >= lead) {
              const int s = slow[(i - lead) % slow.size()];
              total_slow += s;
              e.mutable_window()->set_latency_histogram(Requests(50, s));
            }
            script->events.push_back(e);
          }
          vanguard::v1::StepResult result =
              MakeStepResult(r.rate_qps(), r.rate_qps(), result_p50_ms, result_p99_ms);
          result.set_latency_histogram(Requests(50 * n, total_slow));
          script->events.push_back(ResultEvent(result));
          return NewScriptedReader(script);
        });
  }
};

TEST_F(TailConfidenceTest, AStallReadsFarLessCertainThanTheSameCountSpread) {
  // 20 windows, 20 slow requests of 1000 either way: tail ratio 2.
  Script({2, 0});
  const StepOutcome spread = MustRun({}).outcome;
  EXPECT_DOUBLE_EQ(spread.tail_ratio, 2.0);
  EXPECT_EQ(spread.tail_units, 20);
  // Window counts 2, 0, 2, ... of 50 about a share of 2%: sqrt(20 / (20 * 19)) / 50 / 1%.
  EXPECT_NEAR(spread.tail_ratio_se, 0.459, 0.001);
  std::vector<int> stall(20, 0);
  stall[5] = 20;
  Script(stall);
  const StepOutcome stalled = MustRun({}).outcome;
  EXPECT_DOUBLE_EQ(stalled.tail_ratio, 2.0);
  EXPECT_NEAR(stalled.tail_ratio_se, 2.0, 0.001);
  EXPECT_GT(stalled.tail_ratio_se, 4 * spread.tail_ratio_se);
}

TEST_F(TailConfidenceTest, AP50LimitIsATailOfHalfTheRequests) {
  // A median limit of 100 ms with a p99 limit far above: 30 of every 50 requests over it is
  // 60% over the 50% a median allows, a tail ratio of 1.2 the strategies pool like a p99's
  // (not a breach of some other check), with its error over the windows.
  vanguard::v1::Slo slo;
  slo.mutable_p99_latency()->set_seconds(3600);
  slo.mutable_p50_latency()->set_nanos(100'000'000);
  StepJudge judge = *StepJudge::Create(
      slo, std::make_unique<WeightedHealthScorer>(vanguard::v1::HealthWeights()));
  const auto run = [&] {
    MeasuredStepRunner runner(&executor_, &judge, &assessor_, nullptr, slo, {});
    absl::StatusOr<MeasuredStep> step = runner.Run(Request(), false, nullptr, nullptr);
    EXPECT_TRUE(step.ok()) << step.status();
    return step.ok() ? *step : MeasuredStep{};
  };
  Script({30, 30, 20, 40}, /*result_p50_ms=*/300, /*result_p99_ms=*/300);
  MeasuredStep over = run();
  EXPECT_FALSE(over.outcome.passed);
  EXPECT_THAT(over.judgement.verdict, StartsWith("p50 300.0 ms > 100 ms"));
  EXPECT_TRUE(over.outcome.passed_apart_from_tail);
  EXPECT_DOUBLE_EQ(over.outcome.tail_ratio, 1.2);
  EXPECT_DOUBLE_EQ(over.outcome.tail_allowed, 0.5);
  EXPECT_GE(over.outcome.tail_units, 2);
  EXPECT_GT(over.outcome.tail_ratio_se, 0);
  // 10 of 50 over the median limit: a pass at 0.4 of what it allows, not the 1% of a p99.
  Script({10}, /*result_p50_ms=*/10, /*result_p99_ms=*/300);
  MeasuredStep under = run();
  EXPECT_TRUE(under.outcome.passed) << under.judgement.verdict;
  EXPECT_DOUBLE_EQ(under.outcome.tail_ratio, 0.4);
  EXPECT_DOUBLE_EQ(under.outcome.tail_allowed, 0.5);
}

// Steps whose results time requests out at rates over 300 req/s, and drain probes (calls
// at a small share of a step's rate) answered from a queue that empties over the probes
// listed in probe_p50_ (-1: every probe request timed out).
class DrainTest : public MeasuredStepRunnerTest {
 protected:
  void SetUp() override {
    ON_CALL(replayer_, RunStepRaw(_, _))
        .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
          requests_.push_back(r);
          auto script = std::make_shared<StreamScript>();
          AddWindows(*script, r, 10, 40);
          const bool probe = r.rate_qps() < 50;
          const double p50 = probe ? probe_p50_[std::min(probes_++, probe_p50_.size() - 1)] : 10;
          vanguard::v1::StepResult result =
              MakeStepResult(r.rate_qps(), r.rate_qps(), std::max(p50, 0.0), 40);
          if (p50 < 0 || r.rate_qps() > 300) {
            result.set_timeouts(result.scheduled());
            result.set_completed(0);
          }
          script->events.push_back(ResultEvent(result));
          return NewScriptedReader(script);
        });
  }

  MeasuredStep RunAt(MeasuredStepRunner& runner, double rate) {
    vanguard::v1::RunStepRequest r = Request();
    r.set_rate_qps(rate);
    absl::StatusOr<MeasuredStep> step = runner.Run(r, false, nullptr, nullptr);
    EXPECT_TRUE(step.ok()) << step.status();
    return step.ok() ? *step : MeasuredStep{};
  }

  // The rates of the calls made since `from`.
  std::vector<double> RatesSince(size_t from) const {
    std::vector<double> rates;
    for (size_t i = from; i < requests_.size(); ++i) rates.push_back(requests_[i].rate_qps());
    return rates;
  }

  std::vector<double> probe_p50_ = {-1, 500, 400, 15};
  size_t probes_ = 0;
};

TEST_F(DrainTest, AStepAfterTimeoutsWaitsUntilTheModelAnswersLikeWhenItPassed) {
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  EXPECT_TRUE(RunAt(runner, 100).judgement.passed);   // p50 10 ms: the drain's reference
  EXPECT_FALSE(RunAt(runner, 400).judgement.passed);  // every request timed out
  const size_t before = requests_.size();
  const MeasuredStep step = RunAt(runner, 200);
  // Probes at 5% of 200 req/s until one answers at most twice the passing median (15 ms
  // after 500 and 400 ms), then the step's own call.
  const std::vector<double> rates = RatesSince(before);
  ASSERT_GE(rates.size(), 5u);
  EXPECT_EQ(std::vector<double>(rates.begin(), rates.begin() + 5),
            (std::vector<double>{10, 10, 10, 10, 200}));
  EXPECT_EQ(step.drain_time, 4 * FromProtoDuration(requests_[before].duration()));
  EXPECT_TRUE(step.judgement.passed) << step.judgement.verdict;
  EXPECT_THAT(step.judgement.verdict,
              HasSubstr("(first drained the previous step's backlog: 8s of probes)"));
  // Nothing timed out in that step: the next one starts at once.
  const size_t after = requests_.size();
  EXPECT_EQ(RunAt(runner, 150).drain_time, absl::ZeroDuration());
  EXPECT_EQ(requests_[after].rate_qps(), 150);
}

TEST_F(DrainTest, NoDrainBeforeAnyStepPassed) {
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  EXPECT_FALSE(RunAt(runner, 400).judgement.passed);
  const size_t before = requests_.size();
  EXPECT_EQ(RunAt(runner, 200).drain_time, absl::ZeroDuration());
  EXPECT_EQ(requests_[before].rate_qps(), 200);
}

TEST_F(DrainTest, TheDrainStopsAtItsCap) {
  probe_p50_ = {-1};  // the model never answers the probes
  MeasuredStepOptions options;
  options.max_drain = absl::Seconds(20);
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), options);
  RunAt(runner, 100);
  RunAt(runner, 400);
  const MeasuredStep step = RunAt(runner, 200);
  EXPECT_GE(step.drain_time, absl::Seconds(20));
  EXPECT_LE(step.drain_time, absl::Seconds(30));
  options.max_drain = absl::ZeroDuration();  // off: no probe at all
  MeasuredStepRunner off(&executor_, &judge_, &assessor_, nullptr, Slo(), options);
  RunAt(off, 100);
  RunAt(off, 400);
  const size_t before = requests_.size();
  EXPECT_EQ(RunAt(off, 200).drain_time, absl::ZeroDuration());
  EXPECT_EQ(requests_[before].rate_qps(), 200);
}

TEST_F(TailConfidenceTest, WindowsWithoutHistogramsGiveNoUnits) {
  const StepOutcome o = MustRun({}).outcome;  // the fixture's windows carry no histograms
  EXPECT_EQ(o.tail_units, 0);
  EXPECT_EQ(o.tail_ratio_se, 0);
}

TEST_F(RemeasureTest, ARisingMeanLatencyIsABacklogBuilding) {
  MeasuredStepOptions off;
  off.remeasure_rising_near_limit = false;
  Script(/*rising_calls=*/1);
  EXPECT_TRUE(MustRun(off).outcome.backlog_rising);
  measured_calls_ = 0;
  Script(/*rising_calls=*/0);
  EXPECT_FALSE(MustRun(off).outcome.backlog_rising);
}

TEST_F(MeasuredStepRunnerTest, ARisingQueueGaugeIsABacklogBuilding) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  options.window = absl::Seconds(1);
  int scrape = 0;
  double growth = 0.5;  // queued requests per window
  MetricsCollector collector(
      [&]() -> absl::StatusOr<std::string> {
        return absl::StrCat("vllm:num_requests_waiting ", 2 + growth * scrape++, "\n");
      },
      GaugeMappingFor({}));
  // Three warmup windows scraped, then ten measured: 4.5 more queued over the part.
  EXPECT_TRUE(MustRun(options, &collector).outcome.backlog_rising);
  scrape = 0;
  growth = 0.05;  // 0.45 more: within a request of flat
  EXPECT_FALSE(MustRun(options, &collector).outcome.backlog_rising);
  scrape = 0;
  growth = 0;
  EXPECT_FALSE(MustRun(options, &collector).outcome.backlog_rising);
}

TEST_F(MeasuredStepRunnerTest, LoneSpikesAreCountedAndSustainedBreachEscalates) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  options.window = absl::Seconds(1);
  measured_p99_ = {40, 40, 300, 40, 40, 40, 40, 300, 40, 40};
  MeasuredStep step = MustRun(options);
  EXPECT_EQ(step.outcome.spikes, 2);
  EXPECT_EQ(step.outcome.window_state, vanguard::v1::HEALTH_STATE_HEALTHY);
  requests_.clear();
  measured_p99_ = {40, 40, 300, 300, 300, 40, 40, 40, 40, 40};
  step = MustRun(options);
  EXPECT_EQ(step.outcome.spikes, 0);
  EXPECT_EQ(step.outcome.window_state, vanguard::v1::HEALTH_STATE_OVERLOADED);
}

TEST_F(MeasuredStepRunnerTest, EachReplicasGaugesAreScrapedPerMeasuredWindowOntoItsEndpoint) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  options.window = absl::Seconds(1);
  result_targets_ = {"http://a:1", "http://b:2"};
  std::map<std::string, int> scrapes;
  ReplicaGaugeCollector replicas(
      result_targets_,
      [&](const std::string& url) -> MetricsCollector::Fetcher {
        return [&, url]() -> absl::StatusOr<std::string> {
          ++scrapes[url];
          return std::string(url == "http://a:1/metrics" ? "nv_gpu_utilization 0.2\n"
                                                         : "nv_gpu_utilization 0.8\n");
        };
      },
      GaugeMappingFor({}));
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), options, &replicas);
  absl::StatusOr<MeasuredStep> step = runner.Run(Request(), false, nullptr, nullptr);
  ASSERT_TRUE(step.ok()) << step.status();
  const vanguard::v1::StepResult& result = step->executed.result;
  ASSERT_EQ(result.endpoints_size(), 2);
  EXPECT_DOUBLE_EQ(result.endpoints(0).scraped().gpu_utilization(), 0.2);
  EXPECT_DOUBLE_EQ(result.endpoints(1).scraped().gpu_utilization(), 0.8);
  EXPECT_EQ(result.endpoints(1).scraped().scrapes(), 10);  // the 10 measured windows only
  EXPECT_EQ(scrapes["http://b:2/metrics"], 10);
}

TEST_F(MeasuredStepRunnerTest, GaugesFeedTheOutcomeAndTheVerdict) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  options.window = absl::Seconds(1);
  int scrape = 0;
  MetricsCollector collector(
      [&]() -> absl::StatusOr<std::string> {
        if (scrape++ == 4) return absl::UnavailableError("refused");
        return std::string("vllm:num_requests_waiting 2\nprocess_resident_memory_bytes 1e9\n");
      },
      GaugeMappingFor({}));
  MeasuredStep step = MustRun(options, &collector);
  EXPECT_DOUBLE_EQ(step.outcome.queue_mean, 2);
  EXPECT_DOUBLE_EQ(step.outcome.queue_samples_fraction, 0.9);  // one of ten scrapes failed
  EXPECT_DOUBLE_EQ(step.outcome.memory_bytes, 1e9);
  EXPECT_EQ(step.scrape_failures, 1);
  EXPECT_TRUE(step.outcome.passed);  // no queue limit in this SLO

  vanguard::v1::Slo slo = Slo();
  slo.set_max_queue_depth(1);
  MeasuredStepRunner strict(&executor_, &judge_, &assessor_, &collector, slo, options);
  auto failed = strict.Run(Request(), false, nullptr, nullptr);
  ASSERT_TRUE(failed.ok());
  EXPECT_FALSE(failed->outcome.passed);
  EXPECT_THAT(failed->judgement.verdict, HasSubstr("queue mean 2.00 > 1"));
}

TEST_F(MeasuredStepRunnerTest, StreamsAreJudgedOnTimeToFirstToken) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        auto script = std::make_shared<StreamScript>();
        vanguard::v1::StepResult result = MakeStepResult(r.rate_qps(), r.rate_qps(), 10, 40);
        result.mutable_ttft()->set_p99_ms(450);
        script->events.push_back(ResultEvent(result));
        return NewScriptedReader(script);
      });
  vanguard::v1::Slo slo = Slo();
  slo.mutable_ttft_p99()->set_nanos(300'000'000);
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, slo, options);
  auto step = runner.Run(Request(), false, nullptr, nullptr);
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->outcome.passed);
  EXPECT_THAT(step->judgement.verdict, HasSubstr("TTFT p99 450.0 ms > 300 ms"));
}

TEST_F(MeasuredStepRunnerTest, ClosedLoopRunsAFixedConcurrency) {
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  options.closed_loop = true;
  MustRun(options);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].concurrency(), 10);  // 100 qps * 100 ms
  EXPECT_EQ(requests_[0].rate_qps(), 0);
}

TEST(MeasuredStepGoodputTest, FromReplayerOrFromTheHistogram) {
  vanguard::v1::StepResult r;
  r.set_scheduled(100);
  r.set_completed(100);
  r.set_good(97);
  r.set_goodput(0.97);
  EXPECT_DOUBLE_EQ(MeasuredStepRunner::Goodput(r, 100), 0.97);
  LatencyHistogram h;
  for (int i = 0; i < 90; ++i) h.Record(50'000);   // 50 ms
  for (int i = 0; i < 10; ++i) h.Record(500'000);  // 500 ms
  vanguard::v1::StepResult old;
  old.set_scheduled(100);
  old.set_completed(100);
  old.set_latency_histogram(h.Serialize());
  EXPECT_NEAR(MeasuredStepRunner::Goodput(old, 100), 0.9, 0.01);
}

TEST_F(MeasuredStepRunnerTest, SlowRequestsStretchWindowsAndTheMeasuredPart) {
  // A generative model: every request takes 1.5 s, steadily.
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        requests_.push_back(r);
        auto script = std::make_shared<StreamScript>();
        AddWindows(*script, r, 1500, 2000);
        script->events.push_back(
            ResultEvent(MakeStepResult(r.rate_qps(), r.rate_qps(), 1500, 2000)));
        return NewScriptedReader(script);
      });
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  ASSERT_TRUE(runner.Run(Request(), false, nullptr, nullptr).ok());
  ASSERT_EQ(requests_.size(), 1u);                           // steady within the warmup: one call
  EXPECT_EQ(Window(requests_[0]), absl::Milliseconds(500));  // lifetime not known yet
  EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(10));

  requests_.clear();
  ASSERT_TRUE(runner.Run(Request(), false, nullptr, nullptr).ok());
  ASSERT_EQ(requests_.size(), 1u);
  // Now every window holds a lifetime, so the drift test's four windows span four of them,
  // the settle span lasts 10 lifetimes and so does the measured part (not the 10 s asked).
  EXPECT_EQ(Window(requests_[0]), absl::Milliseconds(1500));
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(15));
  EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(15));

  // A hold of three steps measures three times the stretched part.
  requests_.clear();
  ASSERT_TRUE(runner.Run(Request(), false, nullptr, nullptr, /*hold=*/3).ok());
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(15));
  EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(45));
}

TEST_F(MeasuredStepRunnerTest, FastRequestsKeepTheRequestedDuration) {
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  for (int run = 0; run < 2; ++run) {
    requests_.clear();
    ASSERT_TRUE(runner.Run(Request(), false, nullptr, nullptr).ok());
    ASSERT_FALSE(requests_.empty());
    EXPECT_EQ(FromProtoDuration(requests_.back().duration()), absl::Seconds(10));
    EXPECT_EQ(Window(requests_.back()), absl::Milliseconds(500));
  }
  requests_.clear();
  ASSERT_TRUE(runner.Run(Request(), false, nullptr, nullptr, /*hold=*/3).ok());
  ASSERT_FALSE(requests_.empty());
  EXPECT_EQ(FromProtoDuration(requests_.back().duration()), absl::Seconds(30));
}

TEST_F(MeasuredStepRunnerTest, LowRatesLengthenWindowsToHoldArrivals) {
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  vanguard::v1::RunStepRequest request = Request();
  request.set_rate_qps(4);  // 10 arrivals take 2.5 s
  ASSERT_TRUE(runner.Run(request, /*first_step=*/true, nullptr, nullptr).ok());
  ASSERT_FALSE(requests_.empty());
  EXPECT_EQ(Window(requests_[0]), absl::Milliseconds(2500));
  // The first step's lead is the model-warmup evidence: four 10 s spans of 2.5 s windows.
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::Seconds(40));
  EXPECT_EQ(Window(requests_.back()), absl::Milliseconds(2500));
}

TEST_F(MeasuredStepRunnerTest, StretchedPartsAreWholeWindowsNeverZero) {
  // 2 req/s: 5 s windows. The requested 3 s, and on the next step 10 lifetimes of 450 ms
  // (4.5 s), are less than one window: the measured part is one whole window.
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        requests_.push_back(r);
        auto script = std::make_shared<StreamScript>();
        AddWindows(*script, r, 450, 900);
        script->events.push_back(ResultEvent(MakeStepResult(r.rate_qps(), r.rate_qps(), 450, 900)));
        return NewScriptedReader(script);
      });
  MeasuredStepOptions options;
  options.min_measured_requests = 0;  // the arrivals' minimum would make it 60 s (below)
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), options);
  vanguard::v1::RunStepRequest request = Request();
  request.set_rate_qps(2);
  *request.mutable_duration() = ToProtoDuration(absl::Seconds(3));
  for (int run = 0; run < 2; ++run) {
    requests_.clear();
    ASSERT_TRUE(runner.Run(request, /*first_step=*/false, nullptr, nullptr).ok());
    ASSERT_EQ(requests_.size(), 1u);
    EXPECT_EQ(Window(requests_[0]), absl::Seconds(5));
    EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(5));
  }
}

TEST_F(MeasuredStepRunnerTest, LowRatesMeasureEnoughArrivalsForAVerdictUpToTheCap) {
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, nullptr, Slo(), {});
  vanguard::v1::RunStepRequest request = Request();
  request.set_rate_qps(10);  // 200 arrivals take 20 s, more than the 10 s asked
  ASSERT_TRUE(runner.Run(request, /*first_step=*/false, nullptr, nullptr).ok());
  EXPECT_EQ(FromProtoDuration(requests_.back().duration()), absl::Seconds(20));
  requests_.clear();
  request.set_rate_qps(0.5);  // 400 s would be needed: capped at max_measured
  ASSERT_TRUE(runner.Run(request, /*first_step=*/false, nullptr, nullptr).ok());
  EXPECT_EQ(FromProtoDuration(requests_.back().duration()), absl::Seconds(60));
  requests_.clear();
  request.set_rate_qps(1000);  // plenty in the 10 s asked
  ASSERT_TRUE(runner.Run(request, /*first_step=*/false, nullptr, nullptr).ok());
  EXPECT_EQ(FromProtoDuration(requests_.back().duration()), absl::Seconds(10));
}

// A step failing on errors set by a rare episode: errors are a tail ratio (errors over the
// 1% allowed), their uncertainty over the windows, and everything else held.
TEST_F(MeasuredStepRunnerTest, ErrorsAreATailRatioWithTheirWindowUncertainty) {
  ON_CALL(replayer_, RunStepRaw(_, _))
      .WillByDefault([this](grpc::ClientContext*, const vanguard::v1::RunStepRequest& r) {
        requests_.push_back(r);
        auto script = std::make_shared<StreamScript>();
        AddWindows(*script, r, 10, 30);
        // The measured part's windows: 100 scheduled each, all 40 errors in one of them.
        int measured = 0;
        for (vanguard::v1::RunStepEvent& e : script->events) {
          if (e.window().warmup()) continue;
          if (measured++ == 3) e.mutable_window()->set_errors(40);
        }
        vanguard::v1::StepResult result = MakeStepResult(r.rate_qps(), r.rate_qps(), 10, 30);
        result.set_errors(result.scheduled() / 50);  // 2% of the step's requests
        result.set_completed(result.scheduled() - result.errors());
        script->events.push_back(ResultEvent(result));
        return NewScriptedReader(script);
      });
  MeasuredStepOptions options;
  options.steady_state_detection = false;
  const StepOutcome o = MustRun(options).outcome;
  ASSERT_FALSE(o.passed);
  EXPECT_TRUE(o.passed_apart_from_tail);  // only the error share breached
  EXPECT_NEAR(o.tail_ratio, 2.0, 1e-9);
  EXPECT_EQ(o.tail_samples, 1000);
  EXPECT_GE(o.tail_units, 8);
  // All of it in one window: the share is barely known.
  EXPECT_GT(o.tail_ratio_se, 0.5 * o.tail_ratio);
}

TEST_F(MeasuredStepRunnerTest, AsIsAPhaseIsOneCallFromItsFirstRequestWithTheReplicaGauge) {
  // A load shape's phase: at 5 req/s Run would stretch the windows and the measured part and
  // settle behind the warmup; RunAsIs measures exactly what it was given, from the start.
  int scrape = 0;
  MetricsCollector collector(
      [&]() -> absl::StatusOr<std::string> {
        return absl::StrCat("vanguard_sim_replicas ", 1 + scrape++ / 2, "\n");
      },
      GaugeMappingFor({}));
  MeasuredStepRunner runner(&executor_, &judge_, &assessor_, &collector, Slo(), {});
  vanguard::v1::RunStepRequest request = Request();
  request.set_rate_qps(5);
  *request.mutable_duration() = ToProtoDuration(absl::Seconds(3));
  *request.mutable_warmup() = ToProtoDuration(absl::ZeroDuration());
  absl::StatusOr<MeasuredStep> step = runner.RunAsIs(request, nullptr, nullptr);
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(FromProtoDuration(requests_[0].warmup()), absl::ZeroDuration());
  EXPECT_EQ(FromProtoDuration(requests_[0].duration()), absl::Seconds(3));
  EXPECT_EQ(FromProtoDuration(requests_[0].window()), absl::Milliseconds(500));
  ASSERT_EQ(step->windows.size(), 6u);
  ASSERT_EQ(step->outcome.windows.size(), 6u);
  for (const vanguard::v1::StepWindow& w : step->windows) {
    EXPECT_FALSE(w.warmup());
    EXPECT_EQ(FromProtoDuration(w.duration()), absl::Milliseconds(500));
    EXPECT_NE(w.health_state(), vanguard::v1::HEALTH_STATE_UNSPECIFIED);  // every one scored
  }
  // The gauge read at each window's end: 1, 1, 2, 2, 3, 3.
  EXPECT_DOUBLE_EQ(step->outcome.windows[0].replicas, 1);
  EXPECT_DOUBLE_EQ(step->outcome.windows[5].replicas, 3);
  EXPECT_DOUBLE_EQ(step->outcome.windows[2].seconds, 0.5);
  EXPECT_TRUE(step->windows[4].has_replicas());
  EXPECT_EQ(step->windows[4].replicas(), 3);
}

}  // namespace
}  // namespace vanguard::worker
