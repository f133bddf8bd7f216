#include "replayer/proc_sched.h"

#include <map>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "replayer/testing/fake_proc_reader.h"

namespace vanguard::replayer {
namespace {

using testing::FakeProcReader;

constexpr char kStatus[] =
    "Name:\tvanguard-replay\nState:\tS (sleeping)\nThreads:\t3\n"
    "voluntary_ctxt_switches:\t5012\nnonvoluntary_ctxt_switches:\t37\n";

TEST(ProcSchedTest, ParsesSchedstatFields) {
  absl::StatusOr<TaskSched> s = ParseSchedstat("3996570 35153506 2\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cpu_ns, 3996570);
  EXPECT_EQ(s->run_queue_wait_ns, 35153506);
  EXPECT_EQ(s->timeslices, 2);
}

TEST(ProcSchedTest, MalformedSchedstatIsAnErrorNotACrash) {
  for (const char* text :
       {"", "\n", "1 2", "1 2 3 4", "1 -2 3", "1 x 3", "1 2 3x", "99999999999999999999 1 1"}) {
    absl::StatusOr<TaskSched> s = ParseSchedstat(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << text << "\"";
  }
}

TEST(ProcSchedTest, ParsesContextSwitchesFromStatus) {
  TaskSched s;
  ASSERT_TRUE(ParseContextSwitches(kStatus, &s).ok());
  EXPECT_EQ(s.voluntary_switches, 5012);
  EXPECT_EQ(s.nonvoluntary_switches, 37);
}

TEST(ProcSchedTest, StatusWithoutSwitchesOrWithJunkIsAnError) {
  TaskSched s;
  EXPECT_EQ(ParseContextSwitches("Name:\tx\nvoluntary_ctxt_switches:\t1\n", &s).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ParseContextSwitches("voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\tmany\n", &s)
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseContextSwitches("", &s).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProcSchedTest, ParsesProcStatIntoBusyIdleAndStealTicks) {
  absl::StatusOr<MachineCpu> cpu = ParseProcStat(
      "cpu  100 10 50 800 40 5 5 20 0 0\n"
      "cpu0 50 5 25 400 20 2 3 10 0 0\n"
      "cpu1 50 5 25 400 20 3 2 10 0 0\n"
      "intr 12345\nctxt 999\n");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->busy_ticks, 100 + 10 + 50 + 5 + 5);
  EXPECT_EQ(cpu->idle_ticks, 800 + 40);
  EXPECT_EQ(cpu->steal_ticks, 20);
  EXPECT_EQ(cpu->cpus, 2);
}

TEST(ProcSchedTest, BusyAndStealCoresComeFromADifferenceOfTwoReadings) {
  MachineCpu before{.busy_ticks = 1000, .idle_ticks = 1000, .steal_ticks = 0, .cpus = 2};
  MachineCpu after{.busy_ticks = 1150, .idle_ticks = 1040, .steal_ticks = 10, .cpus = 2};
  MachineCpu d = after - before;
  EXPECT_DOUBLE_EQ(d.busy_cores(), 2.0 * 150 / 200);
  EXPECT_DOUBLE_EQ(d.steal_cores(), 2.0 * 10 / 200);
  EXPECT_DOUBLE_EQ(MachineCpu{}.busy_cores(), 0.0);
}

TEST(ProcSchedTest, MalformedProcStatIsAnError) {
  for (const char* text :
       {"", "intr 1\n", "cpu 1 2 3\ncpu0 1 2 3 4 5 6 7 8\n",
        "cpu 1 2 3 4 5 6 7 x\ncpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7 8\n"}) {
    EXPECT_EQ(ParseProcStat(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(ProcSchedTest, ReadsATaskThroughTheReader) {
  FakeProcReader proc;
  proc.SetFile("/proc/thread-self/schedstat", "10 20 3\n");
  proc.SetFile("/proc/thread-self/status", kStatus);
  absl::StatusOr<TaskSched> s = ReadTaskSched(proc, kThreadSelf);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->run_queue_wait_ns, 20);
  EXPECT_EQ(s->nonvoluntary_switches, 37);

  proc.SetFile("/proc/thread-self/status", "garbage");
  EXPECT_EQ(ReadTaskSched(proc, kThreadSelf).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProcSchedTest, ProcessReadingSkipsThreadsThatExitedAndSumsCommonThreads) {
  FakeProcReader proc;
  proc.SetDirectory("/proc/self/task", {"100", "101", "102"});  // 102 exits before it is read
  proc.SetFile("/proc/self/task/100/schedstat", "1000 500 10\n");
  proc.SetFile("/proc/self/task/100/status", kStatus);
  proc.SetFile("/proc/self/task/101/schedstat", "2000 700 20\n");
  proc.SetFile("/proc/self/task/101/status", kStatus);
  absl::StatusOr<std::map<int64_t, TaskSched>> before = ReadProcessSched(proc);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->size(), 2u);

  std::map<int64_t, TaskSched> after = *before;
  after[100].run_queue_wait_ns += 4'000'000;
  after[100].nonvoluntary_switches += 3;
  after[101].run_queue_wait_ns += 1'000'000;
  after[103] = TaskSched{.cpu_ns = 5, .run_queue_wait_ns = 99'000'000};  // started since
  after.erase(101);
  after[101] = TaskSched{.cpu_ns = 1, .run_queue_wait_ns = 1};  // id reused: counts back
  TaskSched sum = SumOfCommonThreads(*before, after);
  EXPECT_EQ(sum.run_queue_wait_ns, 4'000'000);
  EXPECT_EQ(sum.nonvoluntary_switches, 3);
}

TEST(ProcSchedTest, RealProcOfThisThreadParses) {
  // Not a timing: only that the kernel's own text goes through the parsers. A thread's
  // schedstat can still read 0 ns of CPU right after the test binary starts (seen under
  // load); reading /proc until it shows some work gives it some.
  absl::StatusOr<TaskSched> s = ReadTaskSched(DefaultProcReader(), kThreadSelf);
  for (int i = 0; i < 1000 && s.ok() && s->cpu_ns == 0; ++i) {
    s = ReadTaskSched(DefaultProcReader(), kThreadSelf);
  }
  if (absl::IsNotFound(s.status())) GTEST_SKIP() << "no schedstat here: " << s.status();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->cpu_ns, 0);
  absl::StatusOr<MachineCpu> cpu = ReadMachineCpu(DefaultProcReader());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_GE(cpu->cpus, 1);
}

}  // namespace
}  // namespace vanguard::replayer
