// EndpointAccounting: what each endpoint (replica) of a step was given and how it answered,
// beside StepAccounting, which keeps the step as a whole. Pure (no I/O, no clock): the load
// loop passes intended offsets and latencies it measured.
//
// Rules, the same as StepAccounting's so the endpoints sum to the step:
//  * A request belongs to the endpoint it was dispatched to (the EndpointChooser's pick).
//    Dropped and never-dispatched requests were given to none.
//  * It counts when its *intended* time is in the measured part (>= warmup); warmup
//    requests still count as in flight (they load the endpoint).
//  * Each dispatched request ends in exactly one of completed (latency recorded, from the
//    intended send), error, timeout.
//  * peak_in_flight: the most requests open to the endpoint at the dispatch of a measured
//    request.
//
//   EndpointAccounting endpoints(/*count=*/3, warmup);
//   endpoints.OnDispatched(e, intended);
//   endpoints.OnSent(e, intended);
//   endpoints.OnSuccess(e, intended, latency);  // or OnError / OnTimeout
//   int e = chooser.Choose(endpoints.in_flight());
//
// Not thread-safe: one per event loop; EndpointTally merges exactly (StepRunner merges the
// loops' tallies by endpoint). No allocation after construction.
#ifndef VANGUARD_REPLAYER_ENDPOINT_ACCOUNTING_H_
#define VANGUARD_REPLAYER_ENDPOINT_ACCOUNTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/histogram.h"
#include "common/step_figures.h"
#include "vanguard/v1/replayer.pb.h"

namespace vanguard::replayer {

// One endpoint over the measured part. Merge() sums (peak_in_flight too: loops do not
// share their in-flight, so the sum bounds the endpoint's peak from above).
struct EndpointTally {
  int64_t dispatched = 0;
  int64_t sent = 0;
  int64_t completed = 0;
  int64_t errors = 0;  // excludes timeouts
  int64_t timeouts = 0;
  int64_t peak_in_flight = 0;
  LatencyHistogram latency;  // completion - intended, us

  void Merge(const EndpointTally& other);
};

class EndpointAccounting {
 public:
  EndpointAccounting(int endpoints, absl::Duration warmup);

  void OnDispatched(int endpoint, absl::Duration intended);
  void OnSent(int endpoint, absl::Duration intended);
  // Terminal outcomes of a dispatched request.
  void OnSuccess(int endpoint, absl::Duration intended, absl::Duration latency);
  void OnError(int endpoint, absl::Duration intended);
  void OnTimeout(int endpoint, absl::Duration intended);

  // Requests open to each endpoint now (warmup ones included): what p2c reads.
  absl::Span<const int> in_flight() const { return in_flight_; }
  const std::vector<EndpointTally>& tallies() const { return tallies_; }

 private:
  bool IsMeasured(absl::Duration intended) const { return intended >= warmup_; }
  void Resolved(int endpoint);

  absl::Duration warmup_;
  std::vector<int> in_flight_;
  std::vector<EndpointTally> tallies_;
};

// Fills result->endpoints (one per target, in order: share of dispatched, achieved rate
// over `measured`, latency summary and histogram) and result->endpoint_imbalance (largest
// share / mean share; 0 with fewer than two endpoints or nothing dispatched).
// `tallies.size()` must equal `targets.size()`.
void AddEndpointTelemetry(const std::vector<EndpointTally>& tallies,
                          const std::vector<std::string>& targets, absl::Duration measured,
                          v1::StepResult* result);

// max share / mean share of `dispatched` counts (common/step_figures.h).
using ::vanguard::LoadImbalance;

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_ENDPOINT_ACCOUNTING_H_
