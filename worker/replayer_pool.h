// One step over several replayers. The pool splits a RunStepRequest into one shard per
// replayer (shard i of k: the replayer's schedule is an independent Poisson stream at
// rate/k, or every kth request of a constant, ramp or trace schedule, all seeded by the
// step's seed, so the shards together are the step's schedule), runs the shards at once,
// merges their windows by index as every shard closes them and their results exactly
// (shard_merge.h), and returns one ExecutedStep as one replayer would have.
//
//   StepExecutor a(stub_a.get(), clock), b(stub_b.get(), clock);
//   ReplayerPool pool({{"10.0.0.1:50052", &a}, {"10.0.0.2:50052", &b}});
//   ASSIGN_OR_RETURN(ExecutedStep step, pool.Execute(request, &cancel, on_window));
//
// All or nothing: a shard that fails (its replayer died, RPC error) cancels the others and
// the step fails with that shard's status code, the message naming its replayer, so the
// caller retries or fails the step as it does for one replayer; no partial measurement is
// returned. A closed-loop request (concurrency > 0, the ablation) runs on the first replayer
// alone. A pool of one passes the request through untouched.
//
// How many: k = request.replayers() when set (the spec's, at most the pool's size), else
// chosen per step by ReplayerHeadroom (replayer_headroom.h) from the step's rate and what
// each replayer's busiest loop used on its last step: every replayer until they are
// measured, then the fewest that carry the rate with headroom. Each finished shard updates
// its replayer's estimate. The shards run on the chosen replayers in pool order; a step
// chosen onto one replayer is passed through untouched.
//
// Execute is called from one thread (the test runner's) at a time; it runs one thread per
// shard and calls `on_window` on the calling thread only. `cancel` may fire from any thread.
#ifndef VANGUARD_WORKER_REPLAYER_POOL_H_
#define VANGUARD_WORKER_REPLAYER_POOL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "vanguard/v1/replayer.pb.h"
#include "worker/cancellation.h"
#include "worker/replayer_headroom.h"
#include "worker/step_executor.h"

namespace vanguard::worker {

struct PoolMember {
  std::string address;     // names the replayer in errors and invalid-shard reasons
  ReplayerClient* client;  // not owned; outlives the pool
};

struct ReplayerPoolOptions {
  // How often the waiting caller thread looks at the caller's CancellationToken (the shards'
  // own tokens are cancelled from there).
  absl::Duration cancel_poll = absl::Milliseconds(50);
  // Ages the headroom estimates (ReplayerHeadroom::kMaxAge); null: Clock::Real().
  Clock* clock = nullptr;
};

class ReplayerPool : public ReplayerClient {
 public:
  // `members` must not be empty.
  explicit ReplayerPool(std::vector<PoolMember> members, ReplayerPoolOptions options = {});

  // Shard i of `shards` of `request`: the same step with shard/shard_count set.
  static vanguard::v1::RunStepRequest Shard(const vanguard::v1::RunStepRequest& request, int shard,
                                            int shards);

  // Runs the step on every member (see the file comment). Errors: CANCELLED when `cancel`
  // fired; the first failing shard's code with "replayer ADDRESS (shard i of k): ..." before
  // its message; DATA_LOSS when a shard's histograms cannot be merged.
  absl::StatusOr<ExecutedStep> Execute(const vanguard::v1::RunStepRequest& request,
                                       CancellationToken* cancel,
                                       const WindowCallback& on_window) override;

  int size() const { return static_cast<int>(members_.size()); }
  // What the pool has measured of its replayers (for logs and tests).
  const ReplayerHeadroom& headroom() const { return headroom_; }

 private:
  struct Run;  // one Execute's shared state (replayer_pool.cc)
  // Waits on the caller thread for windows and shard ends, merging windows whose every shard
  // arrived and handing them to `on_window` in index order.
  void Collect(Run& run, CancellationToken* cancel, const WindowCallback& on_window);
  // The merged step, or the failure that ended it.
  absl::StatusOr<ExecutedStep> Finish(Run& run, const vanguard::v1::RunStepRequest& request,
                                      CancellationToken* cancel);
  // Each shard's rate and busiest loop into the headroom estimates.
  void Observe(const std::vector<PoolMember>& members, double shard_rate_qps,
               const std::vector<const vanguard::v1::StepResult*>& results);

  const std::vector<PoolMember> members_;
  const ReplayerPoolOptions options_;
  ReplayerHeadroom headroom_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_REPLAYER_POOL_H_
