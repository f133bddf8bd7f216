// StepRunner implementation; see step_runner.h. Run() is called on the caller's thread and
// starts one event-loop thread per shard; they meet the caller only in WindowMailbox.
#include "replayer/step_runner.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "replayer/load_loop.h"
#include "replayer/open_files.h"

namespace vanguard::replayer {
namespace {

constexpr absl::Duration kCancelPollInterval = absl::Milliseconds(20);

// The process's threads and the machine's CPU at one moment; see StepRunner::Run.
struct ProcessReading {
  bool ok = false;
  std::map<int64_t, TaskSched> threads;
  MachineCpu machine;
  absl::Time at;
};

ProcessReading ReadProcess(const ProcReader& proc) {
  ProcessReading reading;
  absl::StatusOr<std::map<int64_t, TaskSched>> threads = ReadProcessSched(proc);
  absl::StatusOr<MachineCpu> machine = ReadMachineCpu(proc);
  if (!threads.ok() || !machine.ok()) return reading;
  reading.ok = true;
  reading.threads = *std::move(threads);
  reading.machine = *machine;
  reading.at = absl::Now();
  return reading;
}

// What happened between the two readings: the threads present in both (the loops, which
// have exited by the end, are left out: they measure themselves) and the machine.
void AddProcessConditions(const ProcessReading& start, const ProcessReading& end,
                          ClientConditions* conditions) {
  if (!start.ok || !end.ok) return;
  conditions->others = SumOfCommonThreads(start.threads, end.threads);
  conditions->machine_known = true;
  conditions->machine = end.machine - start.machine;
  conditions->machine_seconds = absl::ToDoubleSeconds(end.at - start.at);
}

// Closed windows travel from the loop threads (Push) to the caller's thread (Wait).
class WindowMailbox {
 public:
  void Push(int loop, std::vector<WindowTally> windows) {
    absl::MutexLock lock(&mu_);
    for (WindowTally& window : windows) windows_.emplace_back(loop, std::move(window));
  }
  void MarkDone() {
    absl::MutexLock lock(&mu_);
    ++done_;
  }
  // Waits up to `timeout` for windows or the end; returns what arrived and how many loops
  // are done (everything they pushed has then been returned).
  std::vector<std::pair<int, WindowTally>> Wait(absl::Duration timeout, int* done) {
    absl::MutexLock lock(&mu_);
    int seen = done_;
    auto ready = [this, seen]()
                     ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !windows_.empty() || done_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    std::vector<std::pair<int, WindowTally>> out;
    out.reserve(windows_.size());
    for (auto& window : windows_) out.push_back(std::move(window));
    windows_.clear();
    *done = done_;
    return out;
  }

 private:
  absl::Mutex mu_;
  std::deque<std::pair<int, WindowTally>> windows_ ABSL_GUARDED_BY(mu_);
  int done_ ABSL_GUARDED_BY(mu_) = 0;
};

// Merges the windows of several loops by index and releases them in index order once every
// loop has closed the window. Caller's thread only.
class WindowMerger {
 public:
  explicit WindowMerger(int loops) : loops_(loops) {}
  void Add(WindowTally window) {
    Slot& slot = slots_[window.span.index];
    if (slot.count == 0) {
      slot.merged = std::move(window);
    } else {
      slot.merged.Merge(window);
    }
    ++slot.count;
  }
  std::vector<WindowTally> TakeReady() {
    std::vector<WindowTally> ready;
    while (true) {
      auto it = slots_.find(next_);
      if (it == slots_.end() || it->second.count < loops_) break;
      ready.push_back(std::move(it->second.merged));
      slots_.erase(it);
      ++next_;
    }
    return ready;
  }

 private:
  struct Slot {
    WindowTally merged;
    int count = 0;
  };
  const int loops_;
  std::map<int, Slot> slots_;
  int next_ = 0;
};

// Resolves `target` and judges the address by `policy`: a refused target (its name before
// resolution — so a never-allowed name is not even looked up — or its address after) comes
// back marked refused, with the reason in *refusal (OK otherwise). UNAVAILABLE when an
// allowed name does not resolve.
absl::StatusOr<TargetAddress> ResolveAllowed(const TargetPolicy& policy, const HttpTarget& target,
                                             absl::Status* refusal) {
  *refusal = policy.MayResolve(target.host, target.port);
  if (!refusal->ok()) {
    TargetAddress refused;
    refused.refused = true;
    return refused;
  }
  absl::StatusOr<TargetAddress> address = ResolveTarget(target);
  if (!address.ok()) return address.status();
  std::optional<IpAddress> ip = IpAddress::FromSockaddr(
      reinterpret_cast<const sockaddr*>(&address->address), address->length);
  *refusal = ip ? policy.AllowsResolved(target.host, *ip, target.port)
                : absl::PermissionDeniedError("target: resolved to an address that is not IP");
  address->refused = !refusal->ok();
  return address;
}

// `address` as a gRPC channel target ("ipv4:1.2.3.4:80", "ipv6:[::1]:80"); empty for a
// refused target (nothing connects to it).
std::string GrpcAddress(const TargetAddress& address, int port) {
  std::optional<IpAddress> ip =
      IpAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&address.address), address.length);
  if (address.refused || !ip) return "";
  return ip->v6 ? absl::StrCat("ipv6:[", ip->ToString(), "]:", port)
                : absl::StrCat("ipv4:", ip->ToString(), ":", port);
}

// Every endpoint of `config` resolved and judged (ResolveAllowed); *refusal is the first
// refusal, OK when none was refused.
absl::StatusOr<std::vector<TargetAddress>> ResolveEndpoints(const TargetPolicy& policy,
                                                            const StepConfig& config,
                                                            absl::Status* refusal) {
  *refusal = absl::OkStatus();
  std::vector<TargetAddress> targets;
  const std::vector<HttpTarget> single = {config.target};
  const std::vector<HttpTarget>& endpoints = config.endpoints.empty() ? single : config.endpoints;
  for (const HttpTarget& endpoint : endpoints) {
    absl::Status why;
    absl::StatusOr<TargetAddress> target = ResolveAllowed(policy, endpoint, &why);
    if (!target.ok()) return target.status();
    if (refusal->ok()) *refusal = why;
    targets.push_back(*target);
  }
  return targets;
}

// Each endpoint's tally summed over the loops.
std::vector<EndpointTally> MergeEndpoints(const std::vector<std::unique_ptr<LoadLoop>>& loops,
                                          size_t endpoints) {
  std::vector<EndpointTally> merged(endpoints);
  for (const auto& loop : loops) {
    const std::vector<EndpointTally>& tallies = loop->endpoint_accounting().tallies();
    for (size_t i = 0; i < endpoints && i < tallies.size(); ++i) merged[i].Merge(tallies[i]);
  }
  return merged;
}

// One load loop per thread of this replayer: loop t is shard (config.shard * threads + t) of
// the whole step, so several replayers with several loops each still split one schedule (or
// trace) exactly; each hands its closed windows to `mailbox`.
absl::StatusOr<std::vector<std::unique_ptr<LoadLoop>>> BuildLoops(
    const StepConfig& config, const ProtocolBinding& binding,
    const std::vector<TargetAddress>& targets, const ProcReader* proc, WindowMailbox* mailbox) {
  const int shards = config.threads;
  const int global_shards = config.shard_count * shards;
  std::vector<std::unique_ptr<LoadLoop>> loops;
  for (int shard = 0; shard < shards; ++shard) {
    const int global_shard = config.shard * shards + shard;
    LoopParts parts;
    absl::StatusOr<std::unique_ptr<RequestSource>> source =
        binding.sources(global_shard, global_shards);
    if (!source.ok()) return source.status();
    parts.source = *std::move(source);
    parts.handlers = binding.handlers;
    parts.proc = proc;
    if (binding.transport) {
      absl::StatusOr<std::unique_ptr<AsyncTransport>> transport =
          binding.transport(global_shard, global_shards);
      if (!transport.ok()) return transport.status();
      parts.transport = *std::move(transport);
    }
    loops.push_back(std::make_unique<LoadLoop>(config, global_shard, global_shards, targets,
                                               std::move(parts),
                                               [mailbox, shard](std::vector<WindowTally> windows) {
                                                 mailbox->Push(shard, std::move(windows));
                                               }));
  }
  return loops;
}

// Runs every loop on a thread of its own until all end, merging their windows by index and
// handing each merged window to `on_window` on this thread. Every loop stops when one fails,
// when `on_window` returns false or when `is_cancelled` says so. *start: the process reading
// taken once `measured_from` passed (once, even if it failed). Returns CANCELLED when the
// caller stopped the step, else the first real loop failure (over the cancellations it caused
// in the other loops), else OK.
absl::Status DriveLoops(std::vector<std::unique_ptr<LoadLoop>>& loops, absl::Time measured_from,
                        const ProcReader& proc, WindowMailbox* mailbox, ProcessReading* start,
                        const StepRunner::WindowCallback& on_window,
                        const StepRunner::CancelledCallback& is_cancelled) {
  const int shards = static_cast<int>(loops.size());
  std::vector<absl::Status> statuses(shards);
  std::vector<std::thread> threads;
  for (int shard = 0; shard < shards; ++shard) {
    threads.emplace_back([&, shard] {
      statuses[shard] = loops[shard]->Run();
      // A loop that failed takes the others down with it: its shard of the step is gone.
      if (!statuses[shard].ok()) {
        for (auto& loop : loops) loop->Stop();
      }
      mailbox->MarkDone();
    });
  }
  WindowMerger merger(shards);
  bool stopping = false;
  bool start_read = false;
  int done = 0;
  while (done < shards) {
    if (!start_read && absl::Now() >= measured_from) {
      *start = ReadProcess(proc);
      start_read = true;
    }
    std::vector<std::pair<int, WindowTally>> windows = mailbox->Wait(kCancelPollInterval, &done);
    for (auto& [loop, window] : windows) merger.Add(std::move(window));
    if (stopping) continue;
    for (const WindowTally& window : merger.TakeReady()) {
      if (on_window && !on_window(ToWindowMetrics(window))) {
        stopping = true;
        break;
      }
    }
    if (!stopping && is_cancelled && is_cancelled()) stopping = true;
    if (stopping) {
      for (auto& loop : loops) loop->Stop();
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (stopping) return absl::CancelledError("step cancelled by the caller");
  for (const absl::Status& status : statuses) {
    if (!status.ok() && status.code() != absl::StatusCode::kCancelled) return status;
  }
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::StepResult> StepRunner::Run(const v1::RunStepRequest& request,
                                               const WindowCallback& on_window,
                                               const CancelledCallback& is_cancelled) {
  absl::StatusOr<StepConfig> config = ParseStepConfig(request);
  if (!config.ok()) return config.status();
  return Run(*config, on_window, is_cancelled);
}

absl::StatusOr<v1::StepResult> StepRunner::Run(const StepConfig& config,
                                               const WindowCallback& on_window,
                                               const CancelledCallback& is_cancelled) {
  absl::StatusOr<std::vector<TargetAddress>> targets =
      ResolveEndpoints(policy_, config, &last_refusal_);
  if (!targets.ok()) return targets.status();
  // Protocols with their own resolver connect to the judged address only.
  StepConfig pinned = config;
  pinned.connect_to = GrpcAddress(targets->front(), config.target.port);
  absl::StatusOr<ProtocolBinding> binding = BindProtocol(pinned);
  if (!binding.ok()) return binding.status();
  return RunResolved(pinned, *binding, *targets, on_window, is_cancelled);
}

absl::StatusOr<v1::StepResult> StepRunner::Run(const StepConfig& config,
                                               const ProtocolBinding& binding,
                                               const WindowCallback& on_window,
                                               const CancelledCallback& is_cancelled) {
  absl::StatusOr<std::vector<TargetAddress>> targets =
      ResolveEndpoints(policy_, config, &last_refusal_);
  if (!targets.ok()) return targets.status();
  return RunResolved(config, binding, *targets, on_window, is_cancelled);
}

absl::StatusOr<v1::StepResult> StepRunner::RunResolved(const StepConfig& config,
                                                       const ProtocolBinding& binding,
                                                       const std::vector<TargetAddress>& targets,
                                                       const WindowCallback& on_window,
                                                       const CancelledCallback& is_cancelled) {
  if (!binding.sources) return absl::InvalidArgumentError("protocol: no request source");
  if (binding.transport && targets.size() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        "targets: several endpoints are supported over HTTP protocols only, not ",
        v1::Protocol_Name(config.protocol), " (use endpoint_policy single and a router)"));
  }
  // Past the open-file budget socket() fails: a capped pool waits and names the cap instead.
  StepConfig bounded = config;
  bounded.max_connections = std::min(config.max_connections, ConnectionBudget());
  WindowMailbox mailbox;
  absl::StatusOr<std::vector<std::unique_ptr<LoadLoop>>> loops =
      BuildLoops(bounded, binding, targets, proc_, &mailbox);
  if (!loops.ok()) return loops.status();
  ProcessReading start;
  const absl::Status status = DriveLoops(*loops, absl::Now() + config.warmup, *proc_, &mailbox,
                                         &start, on_window, is_cancelled);
  if (!status.ok()) return status;
  StepTally merged;
  for (const auto& loop : *loops) merged.Merge(loop->accounting().measured());
  AddProcessConditions(start, ReadProcess(*proc_), &merged.conditions);
  last_tally_ = merged;
  v1::StepResult result = BuildStepResult(merged, config.rate_qps, config.duration);
  result.set_closed_loop(config.closed_loop());
  result.set_threads(config.threads);
  const std::vector<std::string> single = {config.target_url};
  AddEndpointTelemetry(MergeEndpoints(*loops, targets.size()),
                       config.endpoint_urls.empty() ? single : config.endpoint_urls,
                       config.duration, &result);
  result.set_endpoint_policy(config.endpoint_policy);
  return result;
}

}  // namespace vanguard::replayer
