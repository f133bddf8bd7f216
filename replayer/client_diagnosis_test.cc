#include "replayer/client_diagnosis.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace vanguard::replayer {
namespace {

using absl::Milliseconds;
using absl::Seconds;

// A 10 s measured part at 50/s where 2% of the sends left 6 ms late (skew p99 over 5 ms).
StepTally LateSteps() {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(10), Seconds(1)));
  for (int i = 0; i < 500; ++i) {
    absl::Duration t = Milliseconds(20) * i;
    a.OnScheduled(t);
    a.OnDispatched(t, t + (i % 50 == 7 ? Milliseconds(6) : absl::Microseconds(60)));
  }
  return a.measured();
}

// The loops measured themselves over the 10 s and the runner saw the machine.
void Measure(StepTally* tally, int64_t loop_wait_ms, double machine_busy_cores,
             double replayer_cores, double steal_cores = 0) {
  ClientConditions& c = tally->conditions;
  c.loops_measured = 1;
  c.loops.run_queue_wait_ns = loop_wait_ms * 1'000'000;
  c.loops.nonvoluntary_switches = 12;
  c.loops.cpu_ns = static_cast<int64_t>(replayer_cores * 10e9);
  c.loop_span_ns = 10'000'000'000;
  c.machine_known = true;
  c.machine.cpus = 2;
  c.machine.busy_ticks = static_cast<int64_t>(machine_busy_cores * 500);
  c.machine.steal_ticks = static_cast<int64_t>(steal_cores * 500);
  c.machine.idle_ticks = 1000 - c.machine.busy_ticks - c.machine.steal_ticks;
  c.machine_seconds = 10;
}

TEST(ClientDiagnosisTest, LateSendsAreCountedWithTheirLatenessAndBursts) {
  StepAccounting a(WindowLayout(Seconds(1), Seconds(1), Seconds(1)));
  a.OnDispatched(Milliseconds(10), Milliseconds(30));  // warmup: not counted
  absl::Duration t = Milliseconds(1000);
  a.OnDispatched(t, t + Milliseconds(3));                    // late
  a.OnDispatched(t + Milliseconds(1), t + Milliseconds(3));  // late, burst
  a.OnDispatched(t + Milliseconds(2), t + Milliseconds(2) + absl::Microseconds(80));
  a.OnDispatched(t + Milliseconds(20), t + Milliseconds(22));  // late
  const ClientConditions& c = a.measured().conditions;
  EXPECT_EQ(c.late_sends, 3);
  EXPECT_EQ(c.late_sends_in_bursts, 1);
  // [1000, 1003] and [1001, 1003] overlap: 3 ms; then [1020, 1022]: 2 ms.
  EXPECT_EQ(c.late_stall_us, 3000 + 2000);
}

TEST(ClientDiagnosisTest, RunQueueWaitWhileOthersHeldTheCpusIsOutsideContention) {
  StepTally tally = LateSteps();
  Measure(&tally, /*loop_wait_ms=*/410, /*machine_busy_cores=*/1.9, /*replayer_cores=*/0.05);
  ClientValidity v = JudgeClientValidity(tally);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  EXPECT_TRUE(v.outside);
  EXPECT_TRUE(absl::StrContains(v.reason, "send skew p99")) << v.reason;
  EXPECT_TRUE(absl::StrContains(v.reason, "CPU contention from other processes")) << v.reason;
  EXPECT_TRUE(absl::StrContains(v.reason, "waited 410.0 ms on the run queue")) << v.reason;
  EXPECT_TRUE(absl::StrContains(v.reason, "pause and retry")) << v.reason;

  v1::StepResult r = BuildStepResult(tally, 50, Seconds(10));
  EXPECT_EQ(r.client_invalid_cause(), v1::CLIENT_INVALID_CAUSE_CPU_CONTENTION);
  EXPECT_TRUE(r.client_invalid_outside());
  EXPECT_EQ(r.client_conditions().loop_run_queue_wait().nanos(), 410'000'000);
  EXPECT_EQ(r.client_conditions().late_sends(), 10);
  EXPECT_NEAR(r.client_conditions().machine_busy_cores(), 1.9, 0.01);
}

TEST(ClientDiagnosisTest, RunQueueWaitFromTheReplayersOwnThreadsIsItsOwnLoad) {
  StepTally tally = LateSteps();
  Measure(&tally, /*loop_wait_ms=*/410, /*machine_busy_cores=*/1.9, /*replayer_cores=*/1.5);
  ClientValidity v = JudgeClientValidity(tally);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CLIENT_OVERLOADED);
  EXPECT_FALSE(v.outside);
}

TEST(ClientDiagnosisTest, RunQueueWaitTooSmallForTheLatenessIsNotBlamed) {
  StepTally tally = LateSteps();  // 10 late sends, 60 ms behind schedule in all
  Measure(&tally, /*loop_wait_ms=*/5, /*machine_busy_cores=*/0.3, /*replayer_cores=*/0.05);
  tally.conditions.wakeup_late.Record(40);
  ClientValidity v = JudgeClientValidity(tally);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_UNKNOWN);
  EXPECT_FALSE(v.outside);
}

TEST(ClientDiagnosisTest, StealIsOutsideAndLateTimersAndChurnAreNamed) {
  StepTally steal = LateSteps();
  Measure(&steal, 5, 0.5, 0.05, /*steal_cores=*/0.3);
  ClientValidity v = JudgeClientValidity(steal);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CPU_STEAL);
  EXPECT_TRUE(v.outside);

  StepTally timer = LateSteps();
  Measure(&timer, 5, 0.3, 0.05);
  for (int i = 0; i < 98; ++i) timer.conditions.wakeup_late.Record(50);
  for (int i = 0; i < 2; ++i) timer.conditions.wakeup_late.Record(6000);
  v = JudgeClientValidity(timer);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_TIMER_WAKEUP);
  EXPECT_FALSE(v.outside);

  StepTally churn = LateSteps();
  Measure(&churn, 5, 0.3, 0.05);
  churn.conditions.connections_opened = 40;
  v = JudgeClientValidity(churn);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CONNECTION_CHURN);
  EXPECT_TRUE(absl::StrContains(v.reason, "40 new connections")) << v.reason;
}

TEST(ClientDiagnosisTest, DropsAreTheReplayersOwnLoadAndUnknownSchedulerIsSaid) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(1));
  a.OnDropped(Milliseconds(1));
  a.OnLoopSchedUnknown("NOT_FOUND: /proc/thread-self/schedstat");
  ClientValidity v = JudgeClientValidity(a.measured());
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CLIENT_OVERLOADED);
  EXPECT_FALSE(v.outside);
  EXPECT_TRUE(absl::StrContains(v.reason, "scheduler counters unknown (NOT_FOUND")) << v.reason;
}

TEST(ClientDiagnosisTest, AConnectionWaitIsTheConnectionCapEvenWhenSendsWereLate) {
  // Late sends and run-queue wait from other processes would read as outside contention;
  // a request that waited for a connection names the cap first: the replayer's own doing.
  StepTally tally = LateSteps();
  Measure(&tally, /*loop_wait_ms=*/500, /*machine_busy_cores=*/1.9, /*replayer_cores=*/0.1);
  StepAccounting a(WindowLayout(Seconds(1), Seconds(1), Seconds(1)));
  a.SetConnectionCap(256);
  a.OnScheduled(Milliseconds(500));  // in the warmup: not counted
  a.OnDispatched(Milliseconds(500), Milliseconds(500));
  a.OnConnectionWait(Milliseconds(500));
  EXPECT_EQ(a.measured().connection_waits, 0);
  for (int i = 0; i < 3; ++i) {
    a.OnScheduled(Milliseconds(1100));
    a.OnDispatched(Milliseconds(1100), Milliseconds(1100));
    a.OnConnectionWait(Milliseconds(1100));
  }
  tally.Merge(a.measured());
  ClientValidity v = JudgeClientValidity(tally);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.cause, v1::CLIENT_INVALID_CAUSE_CONNECTION_CAP);
  EXPECT_FALSE(v.outside);
  EXPECT_FALSE(v.late_only);
  EXPECT_TRUE(absl::StrContains(v.reason, "3 requests waited for a free connection (all 256 of"))
      << v.reason;
  EXPECT_TRUE(absl::StrContains(v.reason, "raise max_connections")) << v.reason;
  v1::StepResult r = BuildStepResult(tally, 50, Seconds(11));
  EXPECT_EQ(r.connection_waits(), 3);
  EXPECT_EQ(r.connection_cap(), 256);
}

TEST(ClientDiagnosisTest, AValidStepHasNoCauseButKeepsItsConditions) {
  StepAccounting a(WindowLayout(absl::ZeroDuration(), Seconds(1), Seconds(1)));
  a.OnScheduled(Milliseconds(1));
  a.OnDispatched(Milliseconds(1), Milliseconds(1));
  a.OnConnectionOpened(Milliseconds(1));
  a.OnWakeup(Milliseconds(1), absl::Microseconds(30));
  v1::StepResult r = BuildStepResult(a.measured(), 1, Seconds(1));
  EXPECT_TRUE(r.client_valid());
  EXPECT_EQ(r.client_invalid_cause(), v1::CLIENT_INVALID_CAUSE_UNSPECIFIED);
  EXPECT_EQ(r.client_conditions().connections_opened(), 1);
  EXPECT_EQ(r.client_conditions().wakeups(), 1);
  EXPECT_NEAR(r.client_conditions().wakeup_late_p99_us(), 30, 1);
}

}  // namespace
}  // namespace vanguard::replayer
