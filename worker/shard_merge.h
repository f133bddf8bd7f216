// Merges what several replayers measured of one step (each ran a shard of its schedule,
// RunStepRequest.shard/shard_count) into what one replayer would have reported for the whole
// step, plus what each shard measured (StepResult.shards): counts summed, histograms merged
// exactly (common/histogram Merge, then the percentiles read once through
// common/step_figures.h; never averaged), windows merged by index (all shards run the same
// window layout, so an index is a span of time), endpoints merged by target.
//
//   std::vector<ShardResult> shards = {{"10.0.0.1:50052", r0}, {"10.0.0.2:50052", r1}};
//   ASSIGN_OR_RETURN(v1::StepResult step, MergeShardResults(shards));
//   ASSIGN_OR_RETURN(v1::WindowMetrics w, MergeShardWindows({w0, w1}));
//
// The client-validity gate counts per shard: the merged step is valid only when every shard
// was, and client_invalid_reason names each invalid shard by its replayer's address ("replayer
// 10.0.0.2:50052 (shard 2 of 2): send skew p99 ..."). Figures without a histogram in the
// protocol (the wake-up lateness and machine figures of ClientConditions) take the worst
// shard's value.
//
// Pure; any thread. Errors: INVALID_ARGUMENT for an empty input; DATA_LOSS naming the shard
// when a histogram a shard sent cannot be read (a merge without it would not be exact).
#ifndef VANGUARD_WORKER_SHARD_MERGE_H_
#define VANGUARD_WORKER_SHARD_MERGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::worker {

struct ShardResult {
  std::string replayer;  // the replayer's address, as the pool names it
  vanguard::v1::StepResult result;
};

// The step as a whole from its shards' results, in shard order.
absl::StatusOr<vanguard::v1::StepResult> MergeShardResults(const std::vector<ShardResult>& shards);

// One window from the shards' windows of the same index.
absl::StatusOr<vanguard::v1::WindowMetrics> MergeShardWindows(
    const std::vector<vanguard::v1::WindowMetrics>& windows);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_SHARD_MERGE_H_
