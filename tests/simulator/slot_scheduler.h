// The simulated predictor's batch-serving model as a pure discrete-event simulation: `slots`
// parallel executors fed by one FIFO queue with dynamic batching (Triton's dynamic batcher):
// an idle slot takes up to `max_batch` queued requests, waiting at most `max_queue_delay`
// after the oldest one arrived for a fuller batch. A batch of n takes
// `service_time + per_item_time * n`, perturbed by a ServiceTimeModel (jitter, warmup,
// co-location, stalls). Arrivals that find `max_queue` requests waiting are rejected.
//
// With the defaults (max_batch 1, no perturbations) every request takes exactly
// `service_time` and the capacity is slots / service_time, as the e2e tests rely on.
//
// Time is an input (a monotonic duration since the model started), never read from a clock,
// so the model runs in virtual time in tests and in the ground truth, and the server only
// decides *when* to call it:
//
//   SlotScheduler scheduler({.slots = 4, .service_time = absl::Milliseconds(10)});
//   scheduler.Arrive(/*request_id=*/7, now, &done);      // kStarted, kQueued or kRejected
//   scheduler.AdvanceTo(now + absl::Milliseconds(10), &done);   // done[0].request_id == 7
//   std::optional<absl::Duration> wake = scheduler.NextEventTime();
//
// Events happen at their exact virtual times: a queued request starts the instant a slot
// frees, not when the caller got around to calling AdvanceTo, so a late timer delays
// responses but never lowers the simulated throughput.
//
// Not thread-safe: the server calls it from one strand only.
#ifndef VANGUARD_TESTS_SIMULATOR_SLOT_SCHEDULER_H_
#define VANGUARD_TESTS_SIMULATOR_SLOT_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/simulator/service_time_model.h"

namespace vanguard::sim {

class SlotScheduler {
 public:
  struct Config {
    int slots = 4;
    // Fixed cost of one batch (of one request when max_batch is 1).
    absl::Duration service_time = absl::Milliseconds(10);
    // Waiting requests beyond which arrivals are rejected; 0 means unlimited.
    int64_t max_queue = 0;
    // Added per request in the batch.
    absl::Duration per_item_time = absl::ZeroDuration();
    int max_batch = 1;
    // How long an idle slot waits, from the oldest waiting arrival, for a fuller batch.
    absl::Duration max_queue_delay = absl::ZeroDuration();
    Perturbations perturbations;
  };

  enum class Admission { kStarted, kQueued, kRejected };

  struct Completion {
    uint64_t request_id = 0;
    absl::Duration arrival;
    absl::Duration start;
    absl::Duration finish;
    int batch_size = 1;
    bool failed = false;  // served, but the model returns an error (error_rate)
  };

  // Running totals since construction, in virtual time.
  struct Stats {
    uint64_t arrived = 0;
    uint64_t rejected = 0;
    uint64_t completed = 0;  // served, including `failed`
    uint64_t failed = 0;
    uint64_t batches = 0;
    absl::Duration total_queue_time;    // sum of (start - arrival) over completed requests
    absl::Duration total_service_time;  // sum of (finish - start) over completed requests
    int64_t queued = 0;                 // waiting now
    int64_t in_service = 0;             // requests in service now
    int64_t busy_slots = 0;             // slots running a batch now
  };

  // INVALID_ARGUMENT naming the field when slots < 1, service_time <= 0 (or infinite),
  // per_item_time < 0, max_batch < 1, max_queue_delay < 0, max_queue < 0 or a perturbation
  // is out of range.
  static absl::StatusOr<SlotScheduler> Create(const Config& config);
  static absl::Status Validate(const Config& config);
  // Prefer Create; crashes on an invalid config.
  explicit SlotScheduler(const Config& config);

  // Moves virtual time to `now` (earlier values are treated as the current time), completing
  // every request whose batch ends at or before it and starting batches whose time has come;
  // completions are appended to `completed` in finish order.
  void AdvanceTo(absl::Duration now, std::vector<Completion>* completed);

  // Advances to `now` (appending completions as AdvanceTo does), then admits the request:
  // kStarted if it went into service at once, kQueued if it waits, kRejected if the queue is
  // full. `cost` is what the request carries relative to a nominal one (sequence length,
  // tensor size): a batch's work is its nominal work times the largest cost in it (padded to
  // its longest member, as batched tensors are). Must be > 0.
  Admission Arrive(uint64_t request_id, absl::Duration now, std::vector<Completion>* completed,
                   double cost = 1);

  // When the next batch finishes or a waiting batch must start; nullopt when nothing is due.
  std::optional<absl::Duration> NextEventTime() const;

  // Stops every slot for `length` from `now` (batches in service finish `length` later).
  void InjectStall(absl::Duration now, absl::Duration length, std::vector<Completion>* completed);
  void SetColocation(double colocation) { service_model_.SetColocation(colocation); }
  // A new version cold from `at` (ServiceTimeModel::Restart): batches starting from then on
  // take `factor` times longer, decaying to 1 over `warmup`; batches in service are unchanged.
  void Restart(absl::Duration at, double factor, absl::Duration warmup) {
    service_model_.Restart(at, factor, warmup);
  }
  // Advances to `now`, then serves with `slots` (>= 1; smaller values count as 1) executors
  // from then on: more start waiting batches at once; with fewer, the batches in service
  // finish and their slots are not refilled until the busy ones are under the new count (a
  // replica drained, as the autoscaled fleet removes one).
  void SetSlots(int slots, absl::Duration now, std::vector<Completion>* completed);

  // Busy slots / slots, averaged over the last second before `now` (over less when the
  // scheduler is younger than that). Call after AdvanceTo(now); a `now` beyond the last
  // event extrapolates with the current number of busy slots.
  double Utilization(absl::Duration now) const;

  const Stats& stats() const { return stats_; }
  const Config& config() const { return config_; }
  double WarmupFactor(absl::Duration t) const { return service_model_.WarmupFactor(t); }
  // Requests per second served at saturation after warmup (full batches, every slot busy):
  // slots * max_batch / (service_time + per_item_time * max_batch) * (1 - colocation)
  // * exp(-stall_rate * stall_duration). Jitter has mean 1 and does not change it.
  double SaturationRps() const;

 private:
  struct Waiting {
    uint64_t request_id;
    absl::Duration arrival;
    double cost;
  };
  struct InService {
    absl::Duration finish;
    uint64_t request_id;
    absl::Duration arrival;
    absl::Duration start;
    int batch_size;
    bool ends_batch;  // exactly one member of each batch frees the slot
    bool failed;
  };
  struct LaterFinish {
    bool operator()(const InService& a, const InService& b) const { return a.finish > b.finish; }
  };

  // Moves time_ forward to t with the current number of busy slots, integrating busy time.
  void AccountUntil(absl::Duration t);
  // Starts batches at t while a slot is idle and a batch is due.
  void StartDueBatches(absl::Duration t);
  // When the oldest waiting request's batch must start if a slot is idle, else infinite.
  absl::Duration BatchDeadline() const;
  // Cumulative busy slot-time at `t` >= time_.
  absl::Duration BusyIntegralAt(absl::Duration t) const;

  Config config_;
  ServiceTimeModel service_model_;
  Stats stats_;
  absl::Duration time_;  // virtual time of the last event processed
  bool started_ = false;
  absl::Duration first_time_;
  std::deque<Waiting> waiting_;
  std::vector<InService> in_service_;  // min-heap on finish (LaterFinish)

  // Utilization: cumulative busy slot-time, sampled at every kSampleInterval boundary so the
  // average over the last second is one subtraction. Exact, since the busy count is constant
  // between events.
  static constexpr int kSamples = 128;  // > 1 s / kSampleInterval
  static constexpr absl::Duration kSampleInterval = absl::Milliseconds(10);
  absl::Duration busy_integral_;
  struct Sample {
    int64_t index = -1;  // boundary number (time / kSampleInterval), -1 when unused
    absl::Duration busy_integral;
  };
  Sample samples_[kSamples];
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_SLOT_SCHEDULER_H_
