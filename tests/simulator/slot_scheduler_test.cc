// Unit tests of the simulated predictor's slot/queue model, in virtual time (no sleeping).
#include "tests/simulator/slot_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vanguard::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Admission = SlotScheduler::Admission;

absl::Duration Ms(double ms) { return absl::Microseconds(ms * 1000); }

std::vector<uint64_t> Ids(const std::vector<SlotScheduler::Completion>& completions) {
  std::vector<uint64_t> ids;
  for (const auto& c : completions) ids.push_back(c.request_id);
  return ids;
}

TEST(SlotSchedulerTest, RejectsInvalidConfigNamingTheField) {
  auto no_slots = SlotScheduler::Create({.slots = 0, .service_time = Ms(1)});
  ASSERT_FALSE(no_slots.ok());
  EXPECT_EQ(no_slots.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_slots.status().message(), HasSubstr("slots"));

  auto zero_service = SlotScheduler::Create({.slots = 1, .service_time = absl::ZeroDuration()});
  ASSERT_FALSE(zero_service.ok());
  EXPECT_THAT(zero_service.status().message(), HasSubstr("service_time"));

  auto negative_queue = SlotScheduler::Create({.slots = 1, .service_time = Ms(1), .max_queue = -1});
  ASSERT_FALSE(negative_queue.ok());
  EXPECT_THAT(negative_queue.status().message(), HasSubstr("max_queue"));

  EXPECT_TRUE(SlotScheduler::Create({.slots = 1, .service_time = Ms(0.01)}).ok());
}

TEST(SlotSchedulerTest, AddedSlotsStartWaitingRequestsAndRemovedOnesDrain) {
  SlotScheduler s({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  EXPECT_EQ(s.Arrive(1, Ms(0), &done), Admission::kStarted);
  EXPECT_EQ(s.Arrive(2, Ms(0), &done), Admission::kQueued);
  EXPECT_EQ(s.Arrive(3, Ms(0), &done), Admission::kQueued);
  s.SetSlots(3, Ms(4), &done);  // two more replicas: both waiting requests start at 4 ms
  EXPECT_EQ(s.stats().queued, 0);
  EXPECT_EQ(s.stats().busy_slots, 3);
  s.SetSlots(1, Ms(5), &done);  // the busy ones finish; none is refilled until under 1
  EXPECT_EQ(s.Arrive(4, Ms(6), &done), Admission::kQueued);
  s.AdvanceTo(Ms(14), &done);  // 2 and 3 finished; 1 finished at 10; 4 waits for a slot
  EXPECT_THAT(Ids(done), ElementsAre(1, 2, 3));
  EXPECT_EQ(s.stats().busy_slots, 1);  // 4 started at 14, when the busy count fell to 0
  s.AdvanceTo(Ms(24), &done);
  EXPECT_THAT(Ids(done), ElementsAre(1, 2, 3, 4));
}

TEST(SlotSchedulerTest, SaturationIsSlotsOverServiceTime) {
  EXPECT_DOUBLE_EQ(SlotScheduler({.slots = 4, .service_time = Ms(10)}).SaturationRps(), 400.0);
  EXPECT_DOUBLE_EQ(SlotScheduler({.slots = 4, .service_time = Ms(5)}).SaturationRps(), 800.0);
  EXPECT_DOUBLE_EQ(SlotScheduler({.slots = 64, .service_time = Ms(0.01)}).SaturationRps(), 6.4e6);
}

TEST(SlotSchedulerTest, ServesOneRequestForExactlyTheServiceTime) {
  SlotScheduler scheduler({.slots = 2, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  EXPECT_EQ(scheduler.Arrive(1, Ms(100), &done), Admission::kStarted);
  EXPECT_EQ(scheduler.NextEventTime(), Ms(110));

  scheduler.AdvanceTo(Ms(109.999), &done);
  EXPECT_TRUE(done.empty());
  scheduler.AdvanceTo(Ms(110), &done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].request_id, 1u);
  EXPECT_EQ(done[0].arrival, Ms(100));
  EXPECT_EQ(done[0].start, Ms(100));
  EXPECT_EQ(done[0].finish, Ms(110));
  EXPECT_EQ(scheduler.NextEventTime(), std::nullopt);
  EXPECT_EQ(scheduler.stats().completed, 1u);
  EXPECT_EQ(scheduler.stats().total_service_time, Ms(10));
  EXPECT_EQ(scheduler.stats().total_queue_time, absl::ZeroDuration());
}

TEST(SlotSchedulerTest, ARequestsCostScalesItsServiceAndABatchPadsToItsLargest) {
  SlotScheduler one({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  one.Arrive(1, absl::ZeroDuration(), &done, /*cost=*/2.5);
  one.AdvanceTo(Ms(100), &done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].finish - done[0].start, Ms(25));

  SlotScheduler batched(
      {.slots = 1, .service_time = Ms(10), .max_batch = 2, .max_queue_delay = Ms(5)});
  done.clear();
  batched.Arrive(1, absl::ZeroDuration(), &done, /*cost=*/1);
  batched.Arrive(2, Ms(1), &done, /*cost=*/3);
  batched.AdvanceTo(Ms(100), &done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].finish - done[0].start, Ms(30));  // padded to the cost-3 member
  EXPECT_EQ(done[1].finish, done[0].finish);
}

TEST(SlotSchedulerTest, NeverServesMoreThanSlotsAtOnceAndQueuesTheRest) {
  SlotScheduler scheduler({.slots = 3, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(scheduler.Arrive(id, Ms(0), &done), Admission::kStarted);
  }
  for (uint64_t id = 4; id <= 10; ++id) {
    EXPECT_EQ(scheduler.Arrive(id, Ms(1), &done), Admission::kQueued);
  }
  EXPECT_EQ(scheduler.stats().in_service, 3);
  EXPECT_EQ(scheduler.stats().queued, 7);

  // Step through time finely: at every instant at most 3 requests overlap in service.
  for (double t = 0; t <= 50; t += 0.5) {
    scheduler.AdvanceTo(Ms(t), &done);
    EXPECT_LE(scheduler.stats().in_service, 3);
  }
  ASSERT_EQ(done.size(), 10u);
  for (size_t i = 0; i < done.size(); ++i) {
    int overlapping = 0;
    for (const auto& other : done) {
      if (other.start <= done[i].start && done[i].start < other.finish) ++overlapping;
    }
    EXPECT_LE(overlapping, 3) << "request " << done[i].request_id;
  }
}

TEST(SlotSchedulerTest, ServesQueuedRequestsInArrivalOrder) {
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(2)});
  std::vector<SlotScheduler::Completion> done;
  EXPECT_EQ(scheduler.Arrive(30, Ms(0), &done), Admission::kStarted);
  EXPECT_EQ(scheduler.Arrive(10, Ms(0.1), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.Arrive(20, Ms(0.2), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.Arrive(5, Ms(0.3), &done), Admission::kQueued);
  scheduler.AdvanceTo(Ms(100), &done);
  EXPECT_THAT(Ids(done), ElementsAre(30, 10, 20, 5));
}

TEST(SlotSchedulerTest, QueuedRequestStartsWhenTheSlotFreesNotWhenTheCallerNotices) {
  // A late timer (AdvanceTo called long after the finish) must not stretch service time, or
  // the simulated capacity would depend on the host's timer latency.
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, Ms(0), &done);
  scheduler.Arrive(2, Ms(1), &done);
  scheduler.Arrive(3, Ms(2), &done);
  scheduler.AdvanceTo(Ms(25), &done);  // 15 ms late for the first finish
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].finish, Ms(10));
  EXPECT_EQ(done[1].start, Ms(10));
  EXPECT_EQ(done[1].finish, Ms(20));
  EXPECT_EQ(scheduler.NextEventTime(), Ms(30));  // request 3 started at 20
  // Queue time is what each request waited in virtual time: 2 waited 9 ms, 3 waited 18 ms.
  scheduler.AdvanceTo(Ms(30), &done);
  EXPECT_EQ(scheduler.stats().total_queue_time, Ms(9) + Ms(18));
  EXPECT_EQ(scheduler.stats().total_service_time, Ms(30));
}

TEST(SlotSchedulerTest, ArrivalFirstCompletesWhatFinishedBeforeIt) {
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, Ms(0), &done);
  // The timer has not fired yet but the slot is free at t=12: request 2 starts right away.
  EXPECT_EQ(scheduler.Arrive(2, Ms(12), &done), Admission::kStarted);
  EXPECT_THAT(Ids(done), ElementsAre(1));
  EXPECT_EQ(scheduler.NextEventTime(), Ms(22));
}

TEST(SlotSchedulerTest, ThroughputAtSaturationEqualsTrueCapacity) {
  // Closed loop with more clients than slots: each client re-sends the moment its response
  // arrives. Over 10 simulated seconds the completions match slots/service_time exactly.
  SlotScheduler scheduler({.slots = 4, .service_time = Ms(5)});
  std::vector<SlotScheduler::Completion> done;
  uint64_t next_id = 0;
  for (int client = 0; client < 16; ++client) scheduler.Arrive(next_id++, Ms(0), &done);
  uint64_t completed = 0;
  while (true) {
    const absl::Duration t = *scheduler.NextEventTime();
    if (t > absl::Seconds(10)) break;
    done.clear();
    scheduler.AdvanceTo(t, &done);
    completed += done.size();
    for (size_t i = 0; i < done.size(); ++i) scheduler.Arrive(next_id++, t, &done);
  }
  EXPECT_EQ(completed, 8000u);  // 800 rps * 10 s
  EXPECT_EQ(scheduler.stats().completed, 8000u);
  EXPECT_EQ(scheduler.stats().in_service + scheduler.stats().queued, 16);
}

TEST(SlotSchedulerTest, RejectsArrivalsBeyondMaxQueue) {
  SlotScheduler scheduler({.slots = 2, .service_time = Ms(10), .max_queue = 3});
  std::vector<SlotScheduler::Completion> done;
  std::vector<Admission> admissions;
  for (uint64_t id = 0; id < 8; ++id) admissions.push_back(scheduler.Arrive(id, Ms(0), &done));
  EXPECT_THAT(admissions, ElementsAre(Admission::kStarted, Admission::kStarted, Admission::kQueued,
                                      Admission::kQueued, Admission::kQueued, Admission::kRejected,
                                      Admission::kRejected, Admission::kRejected));
  EXPECT_EQ(scheduler.stats().rejected, 3u);
  EXPECT_EQ(scheduler.stats().arrived, 8u);

  // Once a slot frees, a queue place opens again.
  scheduler.AdvanceTo(Ms(10), &done);
  EXPECT_EQ(scheduler.stats().queued, 1);
  EXPECT_EQ(scheduler.Arrive(100, Ms(10), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.Arrive(101, Ms(10), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.Arrive(102, Ms(10), &done), Admission::kRejected);
  // Rejected requests are never served.
  scheduler.AdvanceTo(absl::Seconds(1), &done);
  EXPECT_THAT(Ids(done), ElementsAre(0, 1, 2, 3, 4, 100, 101));
}

TEST(SlotSchedulerTest, UnlimitedQueueWhenMaxQueueIsZero) {
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(1), .max_queue = 0});
  std::vector<SlotScheduler::Completion> done;
  for (uint64_t id = 0; id < 10000; ++id) {
    EXPECT_NE(scheduler.Arrive(id, Ms(0), &done), Admission::kRejected);
  }
  EXPECT_EQ(scheduler.stats().queued, 9999);
}

TEST(SlotSchedulerTest, UtilizationIsBusySlotsOverSlotsInTheLastSecond) {
  SlotScheduler scheduler({.slots = 4, .service_time = Ms(100)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.AdvanceTo(absl::Seconds(10), &done);
  EXPECT_DOUBLE_EQ(scheduler.Utilization(absl::Seconds(10)), 0.0);

  // Keep 2 of 4 slots busy for 3 seconds: 50%.
  absl::Duration t = absl::Seconds(10);
  for (int i = 0; i < 30; ++i, t += Ms(100)) {
    scheduler.Arrive(2 * i, t, &done);
    scheduler.Arrive(2 * i + 1, t, &done);
  }
  scheduler.AdvanceTo(absl::Seconds(13), &done);
  EXPECT_NEAR(scheduler.Utilization(absl::Seconds(13)), 0.5, 1e-9);

  // Half a second of idleness: the last second was busy only in its first half, 25%.
  scheduler.AdvanceTo(Ms(13500), &done);
  EXPECT_NEAR(scheduler.Utilization(Ms(13500)), 0.25, 1e-9);
  // A second later nothing was busy in the window.
  EXPECT_NEAR(scheduler.Utilization(Ms(14500)), 0.0, 1e-9);

  // Saturate all 4 slots with a deep queue: 100% within a second.
  for (int i = 0; i < 100; ++i) scheduler.Arrive(1000 + i, absl::Seconds(20), &done);
  scheduler.AdvanceTo(Ms(21000), &done);
  EXPECT_NEAR(scheduler.Utilization(Ms(21000)), 1.0, 1e-9);
}

TEST(SlotSchedulerTest, UtilizationOfAYoungSchedulerCoversOnlyItsLifetime) {
  SlotScheduler scheduler({.slots = 2, .service_time = absl::Seconds(5)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, absl::Seconds(100), &done);
  scheduler.AdvanceTo(Ms(100200), &done);
  EXPECT_NEAR(scheduler.Utilization(Ms(100200)), 0.5, 1e-9);
}

TEST(SlotSchedulerTest, TimeNeverMovesBackwards) {
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, Ms(50), &done);
  // A caller whose clock reading is older than the last event is treated as "now".
  EXPECT_EQ(scheduler.Arrive(2, Ms(40), &done), Admission::kQueued);
  scheduler.AdvanceTo(Ms(70), &done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].arrival, Ms(50));
  EXPECT_EQ(done[1].finish, Ms(70));
}

// Closed loop with `clients` outstanding requests from `from` to `until`: returns completions
// per second over the run.
double ClosedLoopRps(SlotScheduler& scheduler, int clients, absl::Duration from,
                     absl::Duration until) {
  std::vector<SlotScheduler::Completion> done;
  uint64_t next_id = 0;
  for (int c = 0; c < clients; ++c) scheduler.Arrive(next_id++, from, &done);
  uint64_t completed = 0;
  while (true) {
    const absl::Duration t = *scheduler.NextEventTime();
    if (t > until) break;
    done.clear();
    scheduler.AdvanceTo(t, &done);
    completed += done.size();
    const size_t finished = done.size();
    for (size_t i = 0; i < finished; ++i) scheduler.Arrive(next_id++, t, &done);
    completed += done.size() - finished;
  }
  return completed / absl::ToDoubleSeconds(until - from);
}

TEST(SlotSchedulerTest, RejectsInvalidBatchingAndPerturbationsNamingTheField) {
  auto check = [](SlotScheduler::Config config, const char* field) {
    auto scheduler = SlotScheduler::Create(config);
    ASSERT_FALSE(scheduler.ok()) << field;
    EXPECT_EQ(scheduler.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(scheduler.status().message(), HasSubstr(field));
  };
  SlotScheduler::Config base{.slots = 1, .service_time = Ms(1)};
  SlotScheduler::Config c = base;
  c.max_batch = 0;
  check(c, "max_batch");
  c = base;
  c.per_item_time = -Ms(1);
  check(c, "per_item_time");
  c = base;
  c.max_queue_delay = -Ms(1);
  check(c, "max_queue_delay");
  c = base;
  c.perturbations.colocation = 1.0;
  check(c, "colocation");
  c = base;
  c.perturbations.jitter_sigma = -0.1;
  check(c, "jitter_sigma");
  c = base;
  c.perturbations.warmup_factor = 0.5;
  check(c, "warmup_factor");
  c = base;
  c.perturbations.error_rate = 1.5;
  check(c, "error_rate");
}

TEST(SlotSchedulerTest, IdleSlotTakesUpToMaxBatchQueuedRequests) {
  SlotScheduler scheduler(
      {.slots = 1, .service_time = Ms(10), .per_item_time = Ms(1), .max_batch = 4});
  std::vector<SlotScheduler::Completion> done;
  EXPECT_EQ(scheduler.Arrive(0, Ms(0), &done), Admission::kStarted);  // a batch of one
  for (uint64_t id = 1; id <= 6; ++id) scheduler.Arrive(id, Ms(1), &done);
  scheduler.AdvanceTo(Ms(1000), &done);
  ASSERT_EQ(done.size(), 7u);
  // Batch of 1 (11 ms), then 4 (14 ms) from t=11, then the remaining 2 (12 ms) from t=25.
  EXPECT_EQ(done[0].finish, Ms(11));
  EXPECT_EQ(done[0].batch_size, 1);
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(done[i].batch_size, 4);
    EXPECT_EQ(done[i].start, Ms(11));
    EXPECT_EQ(done[i].finish, Ms(25));
  }
  EXPECT_EQ(done[5].batch_size, 2);
  EXPECT_EQ(done[6].finish, Ms(37));
  EXPECT_EQ(scheduler.stats().batches, 3u);
}

TEST(SlotSchedulerTest, WaitsAtMostMaxQueueDelayForAFullerBatch) {
  SlotScheduler scheduler(
      {.slots = 1, .service_time = Ms(10), .max_batch = 3, .max_queue_delay = Ms(5)});
  std::vector<SlotScheduler::Completion> done;
  // The slot is idle but waits (up to 5 ms after the oldest arrival) for more requests.
  EXPECT_EQ(scheduler.Arrive(1, Ms(0), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.NextEventTime(), Ms(5));
  EXPECT_EQ(scheduler.Arrive(2, Ms(2), &done), Admission::kQueued);
  EXPECT_EQ(scheduler.stats().busy_slots, 0);
  scheduler.AdvanceTo(Ms(5), &done);
  EXPECT_EQ(scheduler.stats().in_service, 2);  // started at the deadline with 2
  // A full batch starts at once, without waiting for the delay.
  SlotScheduler full(
      {.slots = 1, .service_time = Ms(10), .max_batch = 2, .max_queue_delay = Ms(5)});
  EXPECT_EQ(full.Arrive(1, Ms(0), &done), Admission::kQueued);
  EXPECT_EQ(full.Arrive(2, Ms(1), &done), Admission::kStarted);
  EXPECT_EQ(full.stats().in_service, 2);
  EXPECT_EQ(full.NextEventTime(), Ms(11));
}

TEST(SlotSchedulerTest, SaturationWithBatchingAndJitterMatchesTheFormula) {
  SlotScheduler::Config config{.slots = 2,
                               .service_time = Ms(6),
                               .per_item_time = Ms(2),
                               .max_batch = 8,
                               .max_queue_delay = Ms(2)};
  config.perturbations.jitter_sigma = 0.2;
  SlotScheduler scheduler(config);
  const double expected = 2 * 8 / 0.022;  // 727.3 rps
  EXPECT_NEAR(scheduler.SaturationRps(), expected, 1e-6);
  const double measured = ClosedLoopRps(scheduler, 64, Ms(0), absl::Seconds(200));
  EXPECT_NEAR(measured, expected, 0.01 * expected);
}

TEST(SlotSchedulerTest, ColocationAndStallsLowerSaturationAsPredicted) {
  SlotScheduler::Config config{.slots = 4, .service_time = Ms(4)};
  config.perturbations.colocation = 0.25;
  config.perturbations.stall_rate_per_s = 2;
  config.perturbations.stall_duration = Ms(50);
  SlotScheduler scheduler(config);
  const double expected = 1000 * 0.75 * std::exp(-0.1);
  EXPECT_NEAR(scheduler.SaturationRps(), expected, 1e-6);
  EXPECT_NEAR(ClosedLoopRps(scheduler, 16, Ms(0), absl::Seconds(300)), expected, 0.02 * expected);
}

TEST(SlotSchedulerTest, WarmupSlowsServiceThenFades) {
  SlotScheduler::Config config{.slots = 1, .service_time = Ms(10)};
  config.perturbations.warmup_factor = 3;
  config.perturbations.warmup = absl::Seconds(10);
  SlotScheduler scheduler(config);
  EXPECT_DOUBLE_EQ(scheduler.WarmupFactor(absl::ZeroDuration()), 3.0);
  EXPECT_DOUBLE_EQ(scheduler.WarmupFactor(absl::Seconds(5)), 2.0);
  EXPECT_DOUBLE_EQ(scheduler.WarmupFactor(absl::Seconds(10)), 1.0);
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, absl::ZeroDuration(), &done);
  scheduler.Arrive(2, absl::Seconds(20), &done);
  scheduler.AdvanceTo(absl::Seconds(30), &done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].finish - done[0].start, Ms(30));
  EXPECT_EQ(done[1].finish - done[1].start, Ms(10));
}

TEST(SlotSchedulerTest, RestartServesColdAgainWhileTheBatchInServiceKeepsItsTime) {
  SlotScheduler scheduler({.slots = 1, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, absl::Seconds(1), &done);
  scheduler.Restart(absl::Seconds(1) + Ms(5), 3, absl::Seconds(10));  // mid-service of 1
  scheduler.Arrive(2, absl::Seconds(1) + Ms(5), &done);               // starts cold at 10 ms
  scheduler.Arrive(3, absl::Seconds(11) + Ms(5), &done);              // warm again
  scheduler.AdvanceTo(absl::Seconds(20), &done);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].finish - done[0].start, Ms(10));
  // Started 5 ms after the restart: 1 + 2 * (1 - 0.005 / 10) = 2.999 times 10 ms.
  EXPECT_NEAR(absl::ToDoubleMilliseconds(done[1].finish - done[1].start), 29.99, 1e-6);
  EXPECT_EQ(done[2].finish - done[2].start, Ms(10));
  EXPECT_DOUBLE_EQ(scheduler.WarmupFactor(absl::Seconds(6) + Ms(5)), 2.0);
}

TEST(SlotSchedulerTest, InjectedStallDelaysRequestsInService) {
  SlotScheduler scheduler({.slots = 2, .service_time = Ms(10)});
  std::vector<SlotScheduler::Completion> done;
  scheduler.Arrive(1, Ms(0), &done);
  scheduler.InjectStall(Ms(5), Ms(100), &done);
  // Arrives during the stall: its work starts when the stall ends.
  scheduler.Arrive(2, Ms(20), &done);
  scheduler.AdvanceTo(Ms(1000), &done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].finish, Ms(110));
  EXPECT_EQ(done[1].finish, Ms(115));
}

TEST(SlotSchedulerTest, ErrorRateFailsThatFractionDeterministically) {
  SlotScheduler::Config config{.slots = 8, .service_time = Ms(1)};
  config.perturbations.error_rate = 0.1;
  config.perturbations.seed = 7;
  auto run = [&] {
    SlotScheduler scheduler(config);
    std::vector<SlotScheduler::Completion> done;
    for (uint64_t id = 0; id < 10000; ++id) scheduler.Arrive(id, Ms(id * 0.2), &done);
    scheduler.AdvanceTo(absl::Seconds(100), &done);
    std::vector<uint64_t> failed;
    for (const auto& c : done) {
      if (c.failed) failed.push_back(c.request_id);
    }
    EXPECT_EQ(scheduler.stats().failed, failed.size());
    return failed;
  };
  const std::vector<uint64_t> first = run();
  EXPECT_NEAR(first.size(), 1000.0, 100.0);
  EXPECT_EQ(run(), first);  // same seed, same failures
}

TEST(SlotSchedulerTest, JitterIsDeterministicGivenTheSeed) {
  SlotScheduler::Config config{.slots = 1, .service_time = Ms(10)};
  config.perturbations.jitter_sigma = 0.3;
  auto finishes = [&](uint64_t seed) {
    config.perturbations.seed = seed;
    SlotScheduler scheduler(config);
    std::vector<SlotScheduler::Completion> done;
    for (uint64_t id = 0; id < 50; ++id) scheduler.Arrive(id, Ms(id * 100), &done);
    scheduler.AdvanceTo(absl::Seconds(100), &done);
    std::vector<absl::Duration> result;
    for (const auto& c : done) result.push_back(c.finish - c.start);
    return result;
  };
  EXPECT_EQ(finishes(3), finishes(3));
  EXPECT_NE(finishes(3), finishes(4));
  const std::vector<absl::Duration> services = finishes(3);
  EXPECT_NE(*std::min_element(services.begin(), services.end()),
            *std::max_element(services.begin(), services.end()));
}

}  // namespace
}  // namespace vanguard::sim
