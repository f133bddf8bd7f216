// What the kernel's scheduler saw of the replayer's own threads and of the machine, read
// from /proc: the evidence the client-validity gate names when it fires (a loop that waited
// on the run queue because other processes held the CPUs, a loop that was preempted, CPUs
// that were busy with work that is not ours, time the hypervisor stole).
//
//  * /proc/<task>/schedstat: "<ns on a CPU> <ns runnable but waiting for a CPU> <timeslices>"
//  * /proc/<task>/status: the voluntary_ctxt_switches and nonvoluntary_ctxt_switches lines
//  * /proc/stat: the aggregate "cpu" line (user nice system idle iowait irq softirq steal ...)
//    and one "cpuN" line per CPU
//
// Files are read through a ProcReader so the parsers run on fixed text in tests. The parsers
// return INVALID_ARGUMENT naming what was wrong on anything unexpected; they never throw.
//
//   LinuxProcReader proc;
//   absl::StatusOr<TaskSched> before = ReadTaskSched(proc, kThreadSelf);
//   ...  // the step
//   absl::StatusOr<TaskSched> after = ReadTaskSched(proc, kThreadSelf);
//   TaskSched during = *after - *before;
//
// Pure functions plus a stateless reader: any thread.
#ifndef VANGUARD_REPLAYER_PROC_SCHED_H_
#define VANGUARD_REPLAYER_PROC_SCHED_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vanguard::replayer {

// The calling thread's /proc directory.
inline constexpr std::string_view kThreadSelf = "/proc/thread-self";

// One thread's scheduler counters (cumulative since it started, or a difference of two).
struct TaskSched {
  int64_t cpu_ns = 0;                 // schedstat field 1: time on a CPU
  int64_t run_queue_wait_ns = 0;      // schedstat field 2: runnable, but waiting for a CPU
  int64_t timeslices = 0;             // schedstat field 3: times it was put on a CPU
  int64_t voluntary_switches = 0;     // it slept (blocked, waited for a timer)
  int64_t nonvoluntary_switches = 0;  // it was preempted while it still wanted to run

  TaskSched& operator+=(const TaskSched& other);
  friend TaskSched operator-(const TaskSched& a, const TaskSched& b);
};

// The machine's CPU time from /proc/stat, in clock ticks (cumulative, or a difference).
struct MachineCpu {
  int64_t busy_ticks = 0;   // user + nice + system + irq + softirq
  int64_t idle_ticks = 0;   // idle + iowait
  int64_t steal_ticks = 0;  // taken by the hypervisor while this VM wanted to run
  int cpus = 0;             // "cpuN" lines

  int64_t total_ticks() const { return busy_ticks + idle_ticks + steal_ticks; }
  // Cores busy / stolen on average over a difference of two readings (0 when it is empty).
  double busy_cores() const;
  double steal_cores() const;
  friend MachineCpu operator-(const MachineCpu& a, const MachineCpu& b);
};

absl::StatusOr<TaskSched> ParseSchedstat(std::string_view text);
// Fills sample->voluntary_switches and nonvoluntary_switches from a status file.
absl::Status ParseContextSwitches(std::string_view status, TaskSched* sample);
absl::StatusOr<MachineCpu> ParseProcStat(std::string_view text);

// Reads files under /proc (or, in tests, fixed text).
class ProcReader {
 public:
  virtual ~ProcReader() = default;
  // The whole file. NOT_FOUND when it does not exist (a thread that has exited),
  // UNAVAILABLE on any other failure.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) const = 0;
  // The names in a directory, without "." and "..". Errors as ReadFile.
  virtual absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const = 0;
};

// The real /proc. Stateless; any thread.
class LinuxProcReader final : public ProcReader {
 public:
  absl::StatusOr<std::string> ReadFile(const std::string& path) const override;
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override;
};

// A process-wide LinuxProcReader.
const ProcReader& DefaultProcReader();

// One task's counters from `task_dir` ("/proc/thread-self", "/proc/self/task/123").
absl::StatusOr<TaskSched> ReadTaskSched(const ProcReader& proc, std::string_view task_dir);
// Every thread of this process by thread id (/proc/self/task). Threads that exit while it
// reads are left out.
absl::StatusOr<std::map<int64_t, TaskSched>> ReadProcessSched(const ProcReader& proc);
absl::StatusOr<MachineCpu> ReadMachineCpu(const ProcReader& proc);

// What the threads present in both readings did between them (threads that started or
// ended in between are left out), summed.
TaskSched SumOfCommonThreads(const std::map<int64_t, TaskSched>& before,
                             const std::map<int64_t, TaskSched>& after);

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_PROC_SCHED_H_
