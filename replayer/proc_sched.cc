// /proc parsers and the real reader; see proc_sched.h.
#include "replayer/proc_sched.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vanguard::replayer {
namespace {

absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Non-negative decimal; false on anything else (sign, junk, overflow).
bool ParseCount(std::string_view token, int64_t* out) {
  if (token.empty() || token.size() > 19) return false;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(Absl(token), out) && *out >= 0;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Whitespace-separated fields.
std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > start) fields.push_back(s.substr(start, i - start));
  }
  return fields;
}

// Lines without their '\n'.
std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    lines.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

absl::Status ErrnoStatus(const std::string& what, int error) {
  std::string message = absl::StrCat(what, ": ", strerror(error));
  return error == ENOENT || error == ESRCH ? absl::NotFoundError(message)
                                           : absl::UnavailableError(message);
}

}  // namespace

TaskSched& TaskSched::operator+=(const TaskSched& other) {
  cpu_ns += other.cpu_ns;
  run_queue_wait_ns += other.run_queue_wait_ns;
  timeslices += other.timeslices;
  voluntary_switches += other.voluntary_switches;
  nonvoluntary_switches += other.nonvoluntary_switches;
  return *this;
}

TaskSched operator-(const TaskSched& a, const TaskSched& b) {
  TaskSched d;
  d.cpu_ns = a.cpu_ns - b.cpu_ns;
  d.run_queue_wait_ns = a.run_queue_wait_ns - b.run_queue_wait_ns;
  d.timeslices = a.timeslices - b.timeslices;
  d.voluntary_switches = a.voluntary_switches - b.voluntary_switches;
  d.nonvoluntary_switches = a.nonvoluntary_switches - b.nonvoluntary_switches;
  return d;
}

double MachineCpu::busy_cores() const {
  int64_t total = total_ticks();
  return total > 0 ? static_cast<double>(busy_ticks) * cpus / static_cast<double>(total) : 0;
}

double MachineCpu::steal_cores() const {
  int64_t total = total_ticks();
  return total > 0 ? static_cast<double>(steal_ticks) * cpus / static_cast<double>(total) : 0;
}

MachineCpu operator-(const MachineCpu& a, const MachineCpu& b) {
  MachineCpu d;
  d.busy_ticks = a.busy_ticks - b.busy_ticks;
  d.idle_ticks = a.idle_ticks - b.idle_ticks;
  d.steal_ticks = a.steal_ticks - b.steal_ticks;
  d.cpus = a.cpus;
  return d;
}

absl::StatusOr<TaskSched> ParseSchedstat(std::string_view text) {
  std::vector<std::string_view> fields = Fields(text);
  if (fields.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedstat: expected 3 fields, got ", fields.size()));
  }
  TaskSched sample;
  if (!ParseCount(fields[0], &sample.cpu_ns) || !ParseCount(fields[1], &sample.run_queue_wait_ns) ||
      !ParseCount(fields[2], &sample.timeslices)) {
    return absl::InvalidArgumentError("schedstat: fields must be non-negative integers");
  }
  return sample;
}

absl::Status ParseContextSwitches(std::string_view status, TaskSched* sample) {
  bool voluntary = false, nonvoluntary = false;
  for (std::string_view line : Lines(status)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    std::string_view value = Strip(line.substr(colon + 1));
    int64_t* into = nullptr;
    if (name == "voluntary_ctxt_switches") {
      into = &sample->voluntary_switches;
      voluntary = true;
    } else if (name == "nonvoluntary_ctxt_switches") {
      into = &sample->nonvoluntary_switches;
      nonvoluntary = true;
    } else {
      continue;
    }
    if (!ParseCount(value, into)) {
      return absl::InvalidArgumentError(
          absl::StrCat("status: ", Absl(name), " is not a non-negative integer"));
    }
  }
  if (!voluntary || !nonvoluntary) {
    return absl::InvalidArgumentError(
        "status: voluntary_ctxt_switches or nonvoluntary_ctxt_switches missing");
  }
  return absl::OkStatus();
}

absl::StatusOr<MachineCpu> ParseProcStat(std::string_view text) {
  MachineCpu cpu;
  bool aggregate = false;
  for (std::string_view line : Lines(text)) {
    if (line.substr(0, 3) != "cpu") continue;
    std::vector<std::string_view> fields = Fields(line);
    if (fields[0] != "cpu") {
      ++cpu.cpus;  // "cpuN"
      continue;
    }
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice] (guest time is
    // already inside user and nice).
    if (fields.size() < 9) {
      return absl::InvalidArgumentError(
          absl::StrCat("stat: the cpu line has ", fields.size() - 1, " fields, expected >= 8"));
    }
    int64_t v[8];
    for (int i = 0; i < 8; ++i) {
      if (!ParseCount(fields[i + 1], &v[i])) {
        return absl::InvalidArgumentError("stat: cpu fields must be non-negative integers");
      }
    }
    cpu.busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6];
    cpu.idle_ticks = v[3] + v[4];
    cpu.steal_ticks = v[7];
    aggregate = true;
  }
  if (!aggregate) return absl::InvalidArgumentError("stat: no aggregate cpu line");
  if (cpu.cpus == 0) return absl::InvalidArgumentError("stat: no cpuN lines");
  return cpu;
}

absl::StatusOr<std::string> LinuxProcReader::ReadFile(const std::string& path) const {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, errno);
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return ErrnoStatus(path, error);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) {
      close(fd);
      return absl::UnavailableError(absl::StrCat(path, ": larger than 1 MiB"));
    }
  }
  close(fd);
  return text;
}

absl::StatusOr<std::vector<std::string>> LinuxProcReader::ListDirectory(
    const std::string& path) const {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoStatus(path, errno);
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  closedir(dir);
  return names;
}

const ProcReader& DefaultProcReader() {
  static const LinuxProcReader* const reader = new LinuxProcReader();
  return *reader;
}

absl::StatusOr<TaskSched> ReadTaskSched(const ProcReader& proc, std::string_view task_dir) {
  absl::StatusOr<std::string> schedstat = proc.ReadFile(absl::StrCat(Absl(task_dir), "/schedstat"));
  if (!schedstat.ok()) return schedstat.status();
  absl::StatusOr<TaskSched> sample = ParseSchedstat(*schedstat);
  if (!sample.ok()) return sample.status();
  absl::StatusOr<std::string> status = proc.ReadFile(absl::StrCat(Absl(task_dir), "/status"));
  if (!status.ok()) return status.status();
  absl::Status parsed = ParseContextSwitches(*status, &*sample);
  if (!parsed.ok()) return parsed;
  return sample;
}

absl::StatusOr<std::map<int64_t, TaskSched>> ReadProcessSched(const ProcReader& proc) {
  absl::StatusOr<std::vector<std::string>> tasks = proc.ListDirectory("/proc/self/task");
  if (!tasks.ok()) return tasks.status();
  std::map<int64_t, TaskSched> samples;
  for (const std::string& name : *tasks) {
    int64_t tid;
    if (!ParseCount(name, &tid)) continue;
    absl::StatusOr<TaskSched> sample = ReadTaskSched(proc, absl::StrCat("/proc/self/task/", name));
    if (absl::IsNotFound(sample.status())) continue;  // exited meanwhile
    if (!sample.ok()) return sample.status();
    samples[tid] = *sample;
  }
  return samples;
}

absl::StatusOr<MachineCpu> ReadMachineCpu(const ProcReader& proc) {
  absl::StatusOr<std::string> text = proc.ReadFile("/proc/stat");
  if (!text.ok()) return text.status();
  return ParseProcStat(*text);
}

TaskSched SumOfCommonThreads(const std::map<int64_t, TaskSched>& before,
                             const std::map<int64_t, TaskSched>& after) {
  TaskSched sum;
  for (const auto& [tid, end] : after) {
    auto start = before.find(tid);
    if (start == before.end()) continue;
    TaskSched delta = end - start->second;
    // A thread id reused by a newer thread counts backwards: not the same thread.
    if (delta.cpu_ns < 0 || delta.run_queue_wait_ns < 0 || delta.nonvoluntary_switches < 0) {
      continue;
    }
    sum += delta;
  }
  return sum;
}

}  // namespace vanguard::replayer
