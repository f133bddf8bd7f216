// How many replayers of a worker's pool a step needs: k chosen from the step's rate and each
// replayer's headroom as measured on the steps it ran (issue 22: "k chosen from the rate and
// each replayer's measured headroom, or set in the spec").
//
//   ReplayerHeadroom headroom(clock);
//   std::vector<int> members = headroom.Choose(rate, addresses, /*requested=*/0);
//   ... run shard i of members.size() on addresses[members[i]] ...
//   headroom.Observe(address, shard_rate, result.max_client_cpu_share());
//
// A replayer's capacity is estimated from its last step: the rate its shard carried over the
// busiest event loop's share of a core (StepResult.max_client_cpu_share), scaled to
// kTargetLoopShare, well under the validity gate's 0.70 so a chosen replayer stays valid.
// The cost of a request falls as the rate rises (a timed wake-up serves several), so the
// linear estimate errs low: more replayers than needed, never fewer. Shares under
// kMinLoopShare are read as kMinLoopShare (a nearly idle loop says little). An estimate older
// than kMaxAge (on the injected clock) is forgotten: the machine under a replayer changes.
//
// Choose: `requested` > 0 (the spec's) takes the first min(requested, n) replayers. Otherwise
// the replayers with a fresh estimate, largest first, and the fewest k of them whose k-th
// largest capacity carries rate / k (the shards split the rate evenly); when they cannot
// (or none is known, as before the first step), every replayer, as a pool always did.
// Indices are returned in ascending order (shard i runs on the ith of them).
//
// Thread-compatible: the test runner's thread calls Choose and Observe (through the pool's
// Execute); not shared across threads.
#ifndef VANGUARD_WORKER_REPLAYER_HEADROOM_H_
#define VANGUARD_WORKER_REPLAYER_HEADROOM_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"

namespace vanguard::worker {

class ReplayerHeadroom {
 public:
  static constexpr double kTargetLoopShare = 0.5;
  static constexpr double kMinLoopShare = 0.05;
  static constexpr absl::Duration kMaxAge = absl::Minutes(10);

  // `clock` must outlive this.
  explicit ReplayerHeadroom(Clock* clock) : clock_(clock) {}

  // A step in which `replayer` carried `shard_rate_qps` with its busiest loop at
  // `loop_share` of a core. Ignored unless both are > 0 and finite.
  void Observe(const std::string& replayer, double shard_rate_qps, double loop_share);

  // The estimated rate `replayer` carries at kTargetLoopShare; nullopt when never measured
  // or the measurement is older than kMaxAge.
  std::optional<double> Capacity(const std::string& replayer) const;

  // Indices into `replayers` of the ones a step at `rate_qps` runs on (see the file
  // comment); never empty when `replayers` is not.
  std::vector<int> Choose(double rate_qps, const std::vector<std::string>& replayers,
                          int requested) const;

 private:
  struct Estimate {
    double capacity_qps;
    absl::Time measured;
  };
  Clock* const clock_;
  std::map<std::string, Estimate> estimates_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_REPLAYER_HEADROOM_H_
