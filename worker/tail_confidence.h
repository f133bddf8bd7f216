// How sure a step's tail reading is, counted over independent units rather than requests.
//
// A p99 verdict reads the share of requests over the limit. Treating the requests as
// independent (binomial) understates its uncertainty when the slow ones come together: a
// stall of half a second holds every request that arrives during it, and near capacity the
// queue it leaves drains for seconds. Batch means count the step's windows as the units
// instead: the share is the pooled ratio over the windows, and its standard error comes from
// how the windows' own counts scatter about it (the ratio estimator of cluster sampling). One
// window holding all the slow requests then reads far less certain than the same count
// spread evenly. Adjacent windows can still be correlated (a queue that drains over several
// of them), so the windows are also merged into batches of 2, 4, ... consecutive windows
// while at least min_units batches remain, and the largest standard error of those batch
// sizes is reported with its number of batches (blocking: the error grows with the batch
// size until the batches are longer than the correlation, then stays).
//
//   std::vector<TailUnit> windows = {{100, 0}, {100, 40}, {100, 0}, ...};
//   TailConfidence c = TailConfidenceOf(windows, kTailAllowedFraction);
//   // c.ratio: share over the limit / 1%; c.ratio_se: its standard error; c.units: batches
//
// Pure; no state.
#ifndef VANGUARD_WORKER_TAIL_CONFIDENCE_H_
#define VANGUARD_WORKER_TAIL_CONFIDENCE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vanguard::worker {

// One window's requests (samples) and how many of them were over the limit.
struct TailUnit {
  int64_t samples = 0;
  int64_t over = 0;
};

// The samples of a serialized common/histogram (microseconds) and those above `limit_ms`;
// {0, 0} when the histogram is missing, unreadable or the limit is not positive.
TailUnit TailUnitOf(const std::string& histogram, double limit_ms);

struct TailConfidence {
  // Pooled share over the limit / allowed_fraction (the tail ratio), and its standard error
  // in the same unit. ratio_se is 0 when units < 2, and when no unit had a sample over the
  // limit (batch means cannot say how rare "none" is; bound it by the samples instead).
  double ratio = 0;
  double ratio_se = 0;
  // Batches the standard error was computed over (windows with samples when not merged).
  int units = 0;
  int64_t samples = 0;
};

// Batches of consecutive windows are merged (sizes 1, 2, 4, ...) while at least `min_units`
// of them remain; the leftover windows join the last batch. Windows without samples are
// skipped. allowed_fraction > 0 (1% for a p99 limit).
TailConfidence TailConfidenceOf(const std::vector<TailUnit>& windows, double allowed_fraction,
                                int min_units = 8);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_TAIL_CONFIDENCE_H_
