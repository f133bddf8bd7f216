// Splitting a step over several replayers; see replayer_pool.h.
#include "worker/replayer_pool.h"

#include <algorithm>
#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "worker/shard_merge.h"

namespace vanguard::worker {

// One Execute: the shards' tokens and outcomes, what they streamed, and (caller thread only)
// the windows waiting for their other shards.
struct ReplayerPool::Run {
  explicit Run(std::vector<PoolMember> chosen)
      : members(std::move(chosen)), k(static_cast<int>(members.size())), tokens(k) {}

  void CancelAll() {
    for (CancellationToken& token : tokens) token.Cancel();
  }

  const std::vector<PoolMember> members;  // the replayers the shards run on, in shard order
  const int k;
  std::vector<CancellationToken> tokens;

  absl::Mutex mu;
  std::deque<std::pair<int, vanguard::v1::WindowMetrics>> arrived ABSL_GUARDED_BY(mu);
  int finished ABSL_GUARDED_BY(mu) = 0;
  std::vector<absl::StatusOr<ExecutedStep>> outcomes ABSL_GUARDED_BY(mu);

  // Caller thread only: windows by index, each slot in shard order once all arrived.
  std::map<int, std::vector<std::pair<int, vanguard::v1::WindowMetrics>>> pending;
  std::vector<vanguard::v1::WindowMetrics> released;
  absl::Status merge_status;
};

ReplayerPool::ReplayerPool(std::vector<PoolMember> members, ReplayerPoolOptions options)
    : members_(std::move(members)),
      options_(options),
      headroom_(options.clock != nullptr ? options.clock : Clock::Real()) {}

vanguard::v1::RunStepRequest ReplayerPool::Shard(const vanguard::v1::RunStepRequest& request,
                                                 int shard, int shards) {
  vanguard::v1::RunStepRequest out = request;
  out.set_shard(shard);
  out.set_shard_count(shards);
  return out;
}

absl::StatusOr<ExecutedStep> ReplayerPool::Execute(const vanguard::v1::RunStepRequest& request,
                                                   CancellationToken* cancel,
                                                   const WindowCallback& on_window) {
  if (members_.size() == 1 || request.concurrency() > 0) {
    return members_.front().client->Execute(request, cancel, on_window);
  }
  std::vector<std::string> addresses;
  for (const PoolMember& m : members_) addresses.push_back(m.address);
  std::vector<PoolMember> chosen;
  for (int i : headroom_.Choose(request.rate_qps(), addresses, request.replayers())) {
    chosen.push_back(members_[i]);
  }
  if (chosen.size() == 1) {
    absl::StatusOr<ExecutedStep> alone = chosen[0].client->Execute(request, cancel, on_window);
    if (alone.ok()) Observe(chosen, request.rate_qps(), {&alone->result});
    return alone;
  }
  if (cancel != nullptr && cancel->IsCancelled()) return absl::CancelledError("step cancelled");
  Run run(std::move(chosen));
  {
    absl::MutexLock lock(&run.mu);
    run.outcomes.assign(run.k, absl::UnknownError("shard did not run"));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < run.k; ++i) {
    threads.emplace_back([&run, &request, i] {
      absl::StatusOr<ExecutedStep> outcome =
          run.members[i].client->Execute(Shard(request, i, run.k), &run.tokens[i],
                                         [&run, i](const vanguard::v1::WindowMetrics& w) {
                                           absl::MutexLock lock(&run.mu);
                                           run.arrived.emplace_back(i, w);
                                         });
      if (!outcome.ok()) run.CancelAll();  // the step is lost: stop the other shards now
      absl::MutexLock lock(&run.mu);
      run.outcomes[i] = std::move(outcome);
      ++run.finished;
    });
  }
  Collect(run, cancel, on_window);
  for (std::thread& t : threads) t.join();
  return Finish(run, request, cancel);
}

void ReplayerPool::Collect(Run& run, CancellationToken* cancel, const WindowCallback& on_window) {
  while (true) {
    std::deque<std::pair<int, vanguard::v1::WindowMetrics>> batch;
    bool all_finished;
    {
      absl::MutexLock lock(&run.mu);
      run.mu.AwaitWithTimeout(absl::Condition(
                                  +[](Run* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) {
                                    return !r->arrived.empty() || r->finished == r->k;
                                  },
                                  &run),
                              options_.cancel_poll);
      batch.swap(run.arrived);
      all_finished = run.finished == run.k;  // every window of every shard is in `batch` now
    }
    if (cancel != nullptr && cancel->IsCancelled()) run.CancelAll();
    for (auto& [shard, window] : batch) {
      const int index = window.index();
      run.pending[index].emplace_back(shard, std::move(window));
    }
    // Release, in index order, every window all shards have closed.
    while (!run.pending.empty() && run.merge_status.ok() &&
           static_cast<int>(run.pending.begin()->second.size()) == run.k) {
      std::vector<std::pair<int, vanguard::v1::WindowMetrics>>& slot = run.pending.begin()->second;
      std::sort(slot.begin(), slot.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<vanguard::v1::WindowMetrics> windows;
      for (auto& [shard, window] : slot) windows.push_back(std::move(window));
      run.pending.erase(run.pending.begin());
      absl::StatusOr<vanguard::v1::WindowMetrics> merged = MergeShardWindows(windows);
      if (!merged.ok()) {
        run.merge_status = merged.status();
        run.CancelAll();
        break;
      }
      run.released.push_back(*std::move(merged));
      if (on_window) on_window(run.released.back());
    }
    if (all_finished) return;
  }
}

absl::StatusOr<ExecutedStep> ReplayerPool::Finish(Run& run,
                                                  const vanguard::v1::RunStepRequest& request,
                                                  CancellationToken* cancel) {
  if (cancel != nullptr && cancel->IsCancelled()) return absl::CancelledError("step cancelled");
  absl::MutexLock lock(&run.mu);
  // The shard that failed first in its own right; the others were cancelled because of it.
  int failed = -1;
  for (int i = 0; i < run.k; ++i) {
    if (run.outcomes[i].ok()) continue;
    if (failed < 0 || (absl::IsCancelled(run.outcomes[failed].status()) &&
                       !absl::IsCancelled(run.outcomes[i].status()))) {
      failed = i;
    }
  }
  if (failed >= 0) {
    const absl::Status& s = run.outcomes[failed].status();
    return absl::Status(s.code(), absl::StrCat("replayer ", run.members[failed].address, " (shard ",
                                               failed + 1, " of ", run.k, "): ", s.message()));
  }
  if (!run.merge_status.ok()) return run.merge_status;
  if (!run.pending.empty()) {
    return absl::InternalError(
        absl::StrCat("the shards closed different windows (window ", run.pending.begin()->first,
                     " came from ", run.pending.begin()->second.size(), " of ", run.k, ")"));
  }
  std::vector<const vanguard::v1::StepResult*> shard_results;
  for (int i = 0; i < run.k; ++i) shard_results.push_back(&run.outcomes[i]->result);
  Observe(run.members, request.rate_qps() / run.k, shard_results);
  std::vector<ShardResult> results;
  ExecutedStep out;
  out.request = request;
  out.start_time = run.outcomes[0]->start_time;
  out.end_time = run.outcomes[0]->end_time;
  for (int i = 0; i < run.k; ++i) {
    results.push_back({run.members[i].address, std::move(run.outcomes[i]->result)});
    out.start_time = std::min(out.start_time, run.outcomes[i]->start_time);
    out.end_time = std::max(out.end_time, run.outcomes[i]->end_time);
  }
  absl::StatusOr<vanguard::v1::StepResult> merged = MergeShardResults(results);
  if (!merged.ok()) return merged.status();
  out.result = *std::move(merged);
  out.windows = std::move(run.released);
  return out;
}

void ReplayerPool::Observe(const std::vector<PoolMember>& members, double shard_rate_qps,
                           const std::vector<const vanguard::v1::StepResult*>& results) {
  for (size_t i = 0; i < members.size() && i < results.size(); ++i) {
    headroom_.Observe(members[i].address, shard_rate_qps, results[i]->max_client_cpu_share());
  }
}

}  // namespace vanguard::worker
