// Unit tests of the simulated predictor's slot/queue model, in virtual time (no sleeping).
#include "tests/simulator/slot_scheduler.h"

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

}  // namespace
}  // namespace vanguard::sim
