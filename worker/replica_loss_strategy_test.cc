// The replica-loss strategy as a sequence of Next() calls against a fake fleet (no I/O, no
// clock), and its reading of the survivors' windows on hand-made series.
#include "worker/replica_loss_strategy.h"

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

vanguard::v1::ReplicaLossStrategy Config(double min_qps, double max_qps) {
  vanguard::v1::ReplicaLossStrategy c;
  c.set_min_qps(min_qps);
  c.set_max_qps(max_qps);
  c.set_tolerance_qps(1);
  c.set_remove_url("http://r2:8000/admin/down?seconds=30");
  *c.mutable_after_loss() = ToProtoDuration(absl::Seconds(10));
  *c.mutable_max_recovery() = ToProtoDuration(absl::Seconds(3));
  return c;
}

// One-second windows: p99 500 ms in the first `bad` of them, 20 ms after.
std::vector<ShapeWindow> Windows(int count, int bad, double rate = 10) {
  std::vector<ShapeWindow> out;
  for (int i = 0; i < count; ++i) {
    ShapeWindow w;
    w.seconds = 1;
    w.scheduled = static_cast<int64_t>(rate);
    w.completed = w.scheduled;
    w.p99_ms = i < bad ? 500 : 20;
    out.push_back(w);
  }
  return out;
}

// A fleet of `replicas` replicas carrying `per_replica_qps` each: the whole fleet holds a rate
// up to replicas * per_replica_qps; after a loss the survivors take 2 s to absorb the lost
// share when it fits them, and never recover when it does not.
class FakeFleet {
 public:
  FakeFleet(int replicas, double per_replica_qps)
      : replicas_(replicas), per_replica_qps_(per_replica_qps) {}

  StepOutcome Run(const RunStep& step) {
    StepOutcome o;
    o.rate_qps = step.rate_qps;
    o.achieved_qps = step.rate_qps;
    if (!step.removal) {
      o.passed = step.rate_qps <= replicas_ * per_replica_qps_;
      o.p99_ms = o.passed ? 20 : 500;
      return o;
    }
    ++losses;
    const bool fits = step.rate_qps <= (replicas_ - 1) * per_replica_qps_;
    const int count = static_cast<int>(step.duration_s);
    o.windows = Windows(count, fits ? 2 : count, step.rate_qps);
    o.passed = fits;
    return o;
  }

  int losses = 0;

 private:
  int replicas_;
  double per_replica_qps_;
};

// Drives the strategy against the fleet to its Done (at most 100 steps).
Done RunToDone(Strategy& strategy, FakeFleet& fleet, std::vector<RunStep>* steps = nullptr) {
  std::optional<StepOutcome> last;
  for (int i = 0; i < 100; ++i) {
    Decision d = strategy.Next(last);
    if (const Done* done = std::get_if<Done>(&d)) return *done;
    const RunStep& step = std::get<RunStep>(d);
    if (steps != nullptr) steps->push_back(step);
    last = fleet.Run(step);
  }
  ADD_FAILURE() << "no Done after 100 steps";
  return {};
}

TEST(ReplicaLossStrategyTest, FindsTheSurvivorCapacityBelowTheFullFleets) {
  auto s = ReplicaLossStrategy::Create(Config(5, 40), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3, 10);  // whole fleet 30 qps, two survivors 20 qps
  const Done done = RunToDone(**s, fleet);
  ASSERT_TRUE(done.replica_loss.has_value());
  const vanguard::v1::ReplicaLossResult& r = *done.replica_loss;
  EXPECT_TRUE(done.converged) << done.summary;
  EXPECT_EQ(done.max_sustainable_qps, 0);  // not the model's capacity
  EXPECT_LE(r.survivor_capacity_qps(), 20);
  EXPECT_GE(r.survivor_capacity_qps(), 19);
  EXPECT_LE(done.confidence_high_qps - done.confidence_low_qps, 1);
  EXPECT_GT(r.full_fleet_held_qps(), r.survivor_capacity_qps());
  EXPECT_EQ(r.endpoints(), 3);
  EXPECT_EQ(r.removed_endpoint(), "http://r2:8000");
  ASSERT_GE(r.trials_size(), 3);
  EXPECT_TRUE(r.trials(0).held());
  EXPECT_DOUBLE_EQ(r.trials(0).recovery_seconds(), 2);
  EXPECT_THAT(done.summary, HasSubstr("survivor capacity"));
}

TEST(ReplicaLossStrategyTest, TheLossStepRemovesTheLastEndpointAsIsForAfterLoss) {
  auto s = ReplicaLossStrategy::Create(Config(5, 40), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  const RunStep before = std::get<RunStep>((*s)->Next(std::nullopt));
  EXPECT_EQ(before.rate_qps, 5);
  EXPECT_FALSE(before.removal.has_value());
  EXPECT_FALSE(before.as_is);
  FakeFleet fleet(3, 10);
  const RunStep loss = std::get<RunStep>((*s)->Next(fleet.Run(before)));
  EXPECT_EQ(loss.rate_qps, 5);
  EXPECT_TRUE(loss.as_is);
  EXPECT_EQ(loss.duration_s, 10);
  ASSERT_TRUE(loss.removal.has_value());
  EXPECT_EQ(loss.removal->remove_url, "http://r2:8000/admin/down?seconds=30");
  EXPECT_EQ(loss.removal->removed_endpoint, "http://r2:8000");
  EXPECT_EQ(loss.removal->restore_url, "");
}

TEST(ReplicaLossStrategyTest, AFleetThatFailsBeforeTheLossFailsTheTrialWithoutALoss) {
  auto s = ReplicaLossStrategy::Create(Config(5, 100), Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3, 10);
  std::vector<RunStep> steps;
  const Done done = RunToDone(**s, fleet, &steps);
  ASSERT_TRUE(done.replica_loss.has_value());
  bool some_trial_skipped_the_loss = false;
  for (const auto& t : done.replica_loss->trials()) {
    if (t.rate_qps() > 30) {
      EXPECT_FALSE(t.before_passed());
      EXPECT_FALSE(t.lost());
      EXPECT_FALSE(t.held());
      some_trial_skipped_the_loss = true;
    }
  }
  EXPECT_TRUE(some_trial_skipped_the_loss);
  for (const RunStep& step : steps) {
    if (step.removal) EXPECT_LE(step.rate_qps, 30) << "a loss after the fleet failed the rate";
  }
}

TEST(ReplicaLossStrategyTest, ARecoverySlowerThanMaxRecoveryFailsTheTrial) {
  vanguard::v1::ReplicaLossStrategy c = Config(5, 40);
  c.set_max_trials(1);
  auto s = ReplicaLossStrategy::Create(c, Fleet(2));
  ASSERT_TRUE(s.ok()) << s.status();
  StepOutcome before;
  before.passed = true;
  ASSERT_TRUE(std::holds_alternative<RunStep>((*s)->Next(std::nullopt)));
  ASSERT_TRUE(std::holds_alternative<RunStep>((*s)->Next(before)));
  StepOutcome loss;
  loss.windows = Windows(10, 5);  // recovers after 5 s, max_recovery 3 s
  const Decision d = (*s)->Next(loss);
  ASSERT_TRUE(std::holds_alternative<Done>(d));
  const Done& done = std::get<Done>(d);
  ASSERT_EQ(done.replica_loss->trials_size(), 1);
  EXPECT_TRUE(done.replica_loss->trials(0).recovered());
  EXPECT_DOUBLE_EQ(done.replica_loss->trials(0).recovery_seconds(), 5);
  EXPECT_FALSE(done.replica_loss->trials(0).held());
  EXPECT_EQ(done.replica_loss->survivor_capacity_qps(), 0);
  EXPECT_FALSE(done.converged);
  EXPECT_THAT(done.summary, HasSubstr("did not hold even min_qps"));
}

TEST(ReplicaLossStrategyTest, AStepWithAnInvalidClientIsRunAgainOnceThenFailsTheTrial) {
  vanguard::v1::ReplicaLossStrategy c = Config(5, 40);
  auto s = ReplicaLossStrategy::Create(c, Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  const RunStep first = std::get<RunStep>((*s)->Next(std::nullopt));
  StepOutcome invalid;
  invalid.client_valid = false;
  const RunStep again = std::get<RunStep>((*s)->Next(invalid));
  EXPECT_EQ(again.rate_qps, first.rate_qps);
  EXPECT_FALSE(again.removal.has_value());
  const Decision d = (*s)->Next(invalid);
  ASSERT_TRUE(std::holds_alternative<Done>(d));  // min_qps failed: nothing held
  EXPECT_FALSE(std::get<Done>(d).replica_loss->trials(0).held());
}

TEST(ReplicaLossStrategyTest, ASpentBudgetIsNotConverged) {
  vanguard::v1::ReplicaLossStrategy c = Config(5, 400);
  c.set_max_trials(2);
  auto s = ReplicaLossStrategy::Create(c, Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  FakeFleet fleet(3, 10);
  const Done done = RunToDone(**s, fleet);
  EXPECT_FALSE(done.converged);
  EXPECT_EQ(done.replica_loss->trials_size(), 2);
  EXPECT_THAT(done.summary, HasSubstr("budget of 2 trials spent"));
}

TEST(ReplicaLossStrategyTest, ReadLossTimesTheRecoveryFromTheLossToTheLastGoodRun) {
  // A good window between bad ones does not end the recovery: the last bad one does.
  std::vector<ShapeWindow> w = Windows(8, 0);
  w[0].p99_ms = 300;
  w[2].p99_ms = 300;
  w[3].error_rate = 0.5;  // over max_error_rate
  w[5].p99_ms = 60;
  const auto r = ReplicaLossStrategy::ReadLoss(w, kP99LimitMs, 0.01);
  EXPECT_TRUE(r.recovered);
  EXPECT_DOUBLE_EQ(r.recovery_s, 4);
  EXPECT_DOUBLE_EQ(r.p99_ms, 60);
  EXPECT_DOUBLE_EQ(r.peak_p99_ms, 300);
  EXPECT_NEAR(r.error_rate, 0.5 / 8, 1e-12);
  EXPECT_DOUBLE_EQ(r.achieved_qps, 10);

  const auto never = ReplicaLossStrategy::ReadLoss(Windows(6, 6), kP99LimitMs, 0.01);
  EXPECT_FALSE(never.recovered);
  EXPECT_DOUBLE_EQ(never.recovery_s, 6);

  const auto at_once = ReplicaLossStrategy::ReadLoss(Windows(6, 0), kP99LimitMs, 0.01);
  EXPECT_TRUE(at_once.recovered);
  EXPECT_DOUBLE_EQ(at_once.recovery_s, 0);

  std::vector<ShapeWindow> silent = Windows(3, 0);
  silent[2].completed = 0;  // scheduled, none completed: the survivors stopped answering
  EXPECT_FALSE(ReplicaLossStrategy::ReadLoss(silent, kP99LimitMs, 0.01).recovered);
  EXPECT_FALSE(ReplicaLossStrategy::ReadLoss({}, kP99LimitMs, 0.01).recovered);
}

TEST(ReplicaLossStrategyTest, BadSpecsAreRefusedNamingTheField) {
  struct Case {
    std::function<void(vanguard::v1::ReplicaLossStrategy&)> edit;
    int replicas;
    const char* field;
  };
  const Case cases[] = {
      {[](auto&) {}, 0, "replica_loss.model has 0 endpoint(s)"},
      {[](auto&) {}, 1, "replica_loss.model has 1 endpoint(s)"},
      {[](auto& c) { c.clear_remove_url(); }, 3, "replica_loss.remove_url is required"},
      {[](auto& c) { c.set_min_qps(0); }, 3, "replica_loss.min_qps"},
      {[](auto& c) { c.set_min_qps(-1); }, 3, "replica_loss.min_qps"},
      {[](auto& c) { c.set_max_qps(5); }, 3, "replica_loss.max_qps"},
      {[](auto& c) { c.set_max_qps(std::nan("")); }, 3, "replica_loss.max_qps"},
      {[](auto& c) { c.set_tolerance_qps(-1); }, 3, "replica_loss.tolerance_qps"},
      {[](auto& c) { c.set_max_trials(100); }, 3, "replica_loss.max_trials"},
      {[](auto& c) { c.set_removed_endpoint("http://elsewhere:1"); }, 3,
       "replica_loss.removed_endpoint"},
      {[](auto& c) { *c.mutable_max_recovery() = ToProtoDuration(absl::Seconds(10)); }, 3,
       "replica_loss.max_recovery"},
      {[](auto& c) { *c.mutable_after_loss() = ToProtoDuration(absl::Seconds(-1)); }, 3,
       "replica_loss.after_loss"},
  };
  for (const Case& c : cases) {
    vanguard::v1::ReplicaLossStrategy config = Config(5, 40);
    c.edit(config);
    auto s = ReplicaLossStrategy::Create(config, Fleet(c.replicas));
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr(c.field));
  }
}

TEST(ReplicaLossStrategyTest, IsRegisteredForTheSpecsReplicaLoss) {
  vanguard::v1::TestSpec spec;
  *spec.mutable_replica_loss() = Config(5, 40);
  auto s = CreateStrategy(spec, Fleet(3));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->name(), "replica_loss");
  auto one = CreateStrategy(spec, Fleet(1));
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vanguard::worker
