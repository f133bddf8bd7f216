// The version-transition strategy as a sequence of Next() calls against a fake fleet whose
// restarted replicas come back cold (no I/O, no clock: the windows carry their own seconds).
#include "worker/version_transition_strategy.h"

#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/proto_time.h"

namespace vanguard::worker {
namespace {

using ::testing::HasSubstr;

constexpr double kP99LimitMs = 100;

StrategyContext Fleet(int replicas) {
  StrategyContext c{.slo_p99_ms = kP99LimitMs, .slo_max_error_rate = 0.01};
  for (int i = 0; i < replicas; ++i) c.endpoints.push_back(absl::StrCat("http://r", i, ":8000"));
  return c;
}

vanguard::v1::VersionTransitionStrategy Config(double min_qps, double max_qps, int replicas = 3) {
  vanguard::v1::VersionTransitionStrategy c;
  c.set_min_qps(min_qps);
  c.set_max_qps(max_qps);
  c.set_tolerance_qps(1);
  for (int i = 0; i < replicas; ++i) {
    c.add_restart_urls(absl::StrCat("http://r", i, ":8000/admin/restart?warmup_s=5&factor=4"));
  }
  *c.mutable_per_replica() = ToProtoDuration(absl::Seconds(10));
  *c.mutable_max_recovery() = ToProtoDuration(absl::Seconds(3));
  return c;
}

// A fleet of `replicas` replicas of 10 qps each when warm. A restarted replica is down for a
// moment (its first window has 10% errors) and comes back cold: when its share of the rate is
// at most 5 qps it recovers with the next window, up to 8 qps it takes 3 windows, beyond that
// its backlog never drains within the step. So a rolling update is safe up to replicas * 8.
class FakeFleet {
 public:
  explicit FakeFleet(int replicas) : replicas_(replicas) {}

  StepOutcome Run(const RunStep& step) {
    StepOutcome o;
    o.rate_qps = step.rate_qps;
    o.achieved_qps = step.rate_qps;
    if (invalid_left > 0) {
      --invalid_left;
      o.client_valid = false;
      return o;
    }
    if (!step.restart) {
      o.passed = step.rate_qps <= replicas_ * 10.0;
      o.p99_ms = o.passed ? 20 : 500;
      return o;
    }
    restarted.push_back(step.restart->restart_url);
    const double share = step.rate_qps / replicas_;
    const int count = static_cast<int>(step.duration_s);
    const int bad = share <= 5 ? 1 : share <= 8 ? 3 : count;
    for (int i = 0; i < count; ++i) {
      ShapeWindow w;
      w.seconds = 1;
      w.scheduled = 100;
      w.completed = i == 0 ? 90 : 100;
      w.error_rate = i == 0 ? 0.1 : 0;
      w.p99_ms = i < bad ? 400 + i : 20;
      o.windows.push_back(w);
    }
    return o;
  }

  std::vector<std::string> restarted;
  int invalid_left = 0;

 private:
  int replicas_;
};

// Drives the strategy against the fleet to its Done (at most 200 steps).
Done RunToDone(Strategy& strategy, FakeFleet& fleet, std::vector<RunStep>* steps = nullptr) {
  std::optional<StepOutcome> last;
  for (int i = 0; i < 200; ++i) {
    Decision d = strategy.Next(last);
    if (const Done* done = std::get_if<Done>(&d)) return *done;
    const RunStep& step = std::get<RunStep>(d);
    if (steps != nullptr) steps->push_back(step);
    last = fleet.Run(step);
  }
  ADD_FAILURE() << "no Done after 200 steps";
  return {};
}

TEST(VersionTransitionStrategyTest, FindsTheSafeRateBelowTheWarmFleetsCapacity) {
  auto s = VersionTransitionStrategy::Create(Config(6, 30), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);  // warm 30 qps; a rolling update is safe up to 24 qps
  const Done done = RunToDone(**s, fleet);
  ASSERT_TRUE(done.version_transition.has_value());
  const vanguard::v1::VersionTransitionResult& r = *done.version_transition;
  EXPECT_TRUE(done.converged) << done.summary;
  EXPECT_EQ(done.max_sustainable_qps, 0);  // not the model's capacity
  EXPECT_LE(r.safe_rate_qps(), 24);
  EXPECT_GE(r.safe_rate_qps(), 23);
  EXPECT_LE(done.confidence_high_qps - done.confidence_low_qps, 1);
  EXPECT_GT(r.full_fleet_held_qps(), r.safe_rate_qps());
  EXPECT_EQ(r.endpoints(), 3);
  // The first trial (6 qps, 2 per replica): every replica restarted, each back after the
  // window it went down in.
  const vanguard::v1::VersionTransitionTrial& first = r.trials(0);
  EXPECT_TRUE(first.held());
  ASSERT_EQ(first.restarts_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(first.restarts(i).endpoint(), absl::StrCat("http://r", i, ":8000"));
    EXPECT_TRUE(first.restarts(i).held());
    EXPECT_DOUBLE_EQ(first.restarts(i).recovery_seconds(), 1);
    EXPECT_DOUBLE_EQ(first.restarts(i).worst_p99_ms(), 400);
    EXPECT_DOUBLE_EQ(first.restarts(i).p99_ms(), 20);
  }
  EXPECT_DOUBLE_EQ(first.worst_window_p99_ms(), 400);
  EXPECT_DOUBLE_EQ(first.max_recovery_seconds(), 1);
  EXPECT_NEAR(first.error_rate(), 0.01, 1e-12);  // 10 of 1000 per restart, merged
  EXPECT_THAT(done.summary, HasSubstr("safe at"));
}

TEST(VersionTransitionStrategyTest, ATrialIsAWarmStepThenOneRestartPerEndpointInOrder) {
  auto s = VersionTransitionStrategy::Create(Config(6, 30), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);
  std::vector<RunStep> steps;
  RunToDone(**s, fleet, &steps);
  ASSERT_GE(steps.size(), 8u);
  EXPECT_EQ(steps[0].rate_qps, 6);
  EXPECT_FALSE(steps[0].as_is);
  EXPECT_FALSE(steps[0].restart.has_value());
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(steps[i].rate_qps, 6);
    EXPECT_TRUE(steps[i].as_is);
    EXPECT_EQ(steps[i].duration_s, 10);
    ASSERT_TRUE(steps[i].restart.has_value());
    EXPECT_EQ(steps[i].restart->restart_url,
              absl::StrCat("http://r", i - 1, ":8000/admin/restart?warmup_s=5&factor=4"));
    EXPECT_EQ(steps[i].restart->field,
              absl::StrCat("version_transition.restart_urls[", i - 1, "]"));
    EXPECT_FALSE(steps[i].removal.has_value());  // every endpoint keeps its share
  }
  EXPECT_EQ(steps[4].rate_qps, 18);  // the midpoint of [6, 30]: the next trial's warm step
  EXPECT_FALSE(steps[4].restart.has_value());
}

TEST(VersionTransitionStrategyTest, TheRollingUpdateHaltsAtTheFirstRestartThatFails) {
  auto s = VersionTransitionStrategy::Create(Config(27, 30), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);  // 9 qps per replica: the cold one never catches up
  const Done done = RunToDone(**s, fleet);
  ASSERT_TRUE(done.version_transition.has_value());
  const vanguard::v1::VersionTransitionResult& r = *done.version_transition;
  EXPECT_FALSE(done.converged);
  EXPECT_EQ(r.safe_rate_qps(), 0);
  EXPECT_THAT(done.summary, HasSubstr("not safe even at min_qps 27"));
  ASSERT_EQ(r.trials_size(), 1);
  EXPECT_TRUE(r.trials(0).before_passed());
  EXPECT_FALSE(r.trials(0).held());
  ASSERT_EQ(r.trials(0).restarts_size(), 1);  // halted after the first replica
  EXPECT_FALSE(r.trials(0).restarts(0).recovered());
  EXPECT_DOUBLE_EQ(r.trials(0).restarts(0).recovery_seconds(), 10);  // the whole part
  EXPECT_DOUBLE_EQ(r.trials(0).max_recovery_seconds(), 10);
  EXPECT_DOUBLE_EQ(r.trials(0).worst_window_p99_ms(), 409);
  EXPECT_EQ(fleet.restarted.size(), 1u);
}

TEST(VersionTransitionStrategyTest, ASlowRecoveryFailsTheRestartThoughTheReplicaCameBack) {
  auto config = Config(21, 30);  // 7 qps per replica: back after 3 windows
  *config.mutable_max_recovery() = ToProtoDuration(absl::Seconds(2));
  auto s = VersionTransitionStrategy::Create(config, Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);
  const Done done = RunToDone(**s, fleet);
  const vanguard::v1::VersionTransitionTrial& t = done.version_transition->trials(0);
  ASSERT_EQ(t.restarts_size(), 1);
  EXPECT_TRUE(t.restarts(0).recovered());
  EXPECT_DOUBLE_EQ(t.restarts(0).recovery_seconds(), 3);
  EXPECT_FALSE(t.restarts(0).held());
  EXPECT_FALSE(t.held());
}

TEST(VersionTransitionStrategyTest, AFleetThatFailsWarmIsNotRestarted) {
  auto s = VersionTransitionStrategy::Create(Config(6, 60), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);
  const Done done = RunToDone(**s, fleet);
  bool some_warm_failure = false;
  for (const auto& t : done.version_transition->trials()) {
    if (t.before_passed()) continue;
    some_warm_failure = true;
    EXPECT_GT(t.rate_qps(), 30);
    EXPECT_EQ(t.restarts_size(), 0);
    EXPECT_FALSE(t.held());
  }
  EXPECT_TRUE(some_warm_failure);
  EXPECT_LE(done.version_transition->full_fleet_held_qps(), 30);
}

TEST(VersionTransitionStrategyTest, AnInvalidStepRunsAgainOnceThenFailsTheTrial) {
  auto s = VersionTransitionStrategy::Create(Config(6, 30), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);
  fleet.invalid_left = 1;  // the first warm step: run again, then judged
  std::vector<RunStep> steps;
  const Done once = RunToDone(**s, fleet, &steps);
  EXPECT_EQ(steps[0].rate_qps, steps[1].rate_qps);
  EXPECT_FALSE(steps[1].restart.has_value());
  EXPECT_TRUE(once.version_transition->trials(0).held());

  auto again = VersionTransitionStrategy::Create(Config(6, 30), Fleet(3));
  ASSERT_TRUE(again.ok());
  FakeFleet invalid(3);
  invalid.invalid_left = 2;  // invalid twice: the trial fails, at min_qps that ends the test
  const Done done = RunToDone(**again, invalid);
  EXPECT_EQ(done.version_transition->safe_rate_qps(), 0);
  EXPECT_FALSE(done.version_transition->trials(0).before_passed());
}

TEST(VersionTransitionStrategyTest, StepsLeftCountsTheRestartsAndEndsAtZero) {
  auto s = VersionTransitionStrategy::Create(Config(6, 30), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3);
  Decision d = (*s)->Next(std::nullopt);
  const std::optional<int> at_start = (*s)->StepsLeft();
  ASSERT_TRUE(at_start.has_value());
  EXPECT_GE(*at_start, 3);  // at least this trial's three restarts
  d = (*s)->Next(fleet.Run(std::get<RunStep>(d)));
  EXPECT_EQ(*(*s)->StepsLeft(), *at_start - 1);
  RunToDone(**s, fleet);
  EXPECT_EQ((*s)->StepsLeft(), 0);
}

TEST(VersionTransitionStrategyTest, BadSpecsNameTheirField) {
  auto error = [](const vanguard::v1::VersionTransitionStrategy& c, int replicas) {
    auto s = VersionTransitionStrategy::Create(c, Fleet(replicas));
    EXPECT_FALSE(s.ok());
    if (!s.ok()) EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    return s.ok() ? std::string() : std::string(s.status().message());
  };
  EXPECT_THAT(error(Config(0, 30), 3), HasSubstr("version_transition.min_qps"));
  EXPECT_THAT(error(Config(30, 30), 3), HasSubstr("version_transition.max_qps"));
  auto no_urls = Config(6, 30);
  no_urls.clear_restart_urls();
  EXPECT_THAT(error(no_urls, 3), HasSubstr("version_transition.restart_urls is required"));
  EXPECT_THAT(error(Config(6, 30, 2), 3),
              HasSubstr("restart_urls has 2 URL(s) but the model has 3 endpoints"));
  EXPECT_THAT(error(Config(6, 30, 1), 1), HasSubstr("needs at least 2"));
  auto empty_url = Config(6, 30);
  empty_url.set_restart_urls(1, "");
  EXPECT_THAT(error(empty_url, 3), HasSubstr("restart_urls[1] is empty"));
  auto long_recovery = Config(6, 30);
  *long_recovery.mutable_max_recovery() = ToProtoDuration(absl::Seconds(10));
  EXPECT_THAT(error(long_recovery, 3), HasSubstr("version_transition.max_recovery"));
  auto no_part = Config(6, 30);
  *no_part.mutable_per_replica() = ToProtoDuration(absl::ZeroDuration());
  EXPECT_THAT(error(no_part, 3), HasSubstr("version_transition.per_replica"));
  auto trials = Config(6, 30);
  trials.set_max_trials(13);
  EXPECT_THAT(error(trials, 3), HasSubstr("version_transition.max_trials"));
}

TEST(VersionTransitionStrategyTest, TheRegistryBuildsItFromTheSpec) {
  vanguard::v1::TestSpec spec;
  *spec.mutable_version_transition() = Config(6, 30);
  auto s = CreateStrategy(spec, Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->name(), "version_transition");
  spec.mutable_version_transition()->clear_restart_urls();
  EXPECT_FALSE(CreateStrategy(spec, Fleet(3)).ok());
}

}  // namespace
}  // namespace vanguard::worker
