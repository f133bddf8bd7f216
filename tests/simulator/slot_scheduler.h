// The simulated predictor's scheduling model as a pure discrete-event simulation: `slots`
// parallel executors, each serving one request at a time for exactly `service_time`, fed by
// one FIFO queue that rejects arrivals beyond `max_queue` waiting requests. The true capacity
// of such a server is slots / service_time requests per second, and tests rely on it.
//
// Time is an input (a monotonic duration since an arbitrary epoch), never read from a clock,
// so the model runs in virtual time in tests and the server only decides *when* to call it:
//
//   SlotScheduler scheduler({.slots = 4, .service_time = absl::Milliseconds(10)});
//   scheduler.Arrive(/*request_id=*/7, now);            // kStarted, kQueued or kRejected
//   std::vector<SlotScheduler::Completion> done;
//   scheduler.AdvanceTo(now + absl::Milliseconds(10), &done);   // done[0].request_id == 7
//   std::optional<absl::Duration> wake = scheduler.NextCompletionTime();
//
// Completions happen at their exact virtual times: a queued request starts the instant a slot
// frees (its predecessor's start + service_time), not when the caller got around to calling
// AdvanceTo, so a late timer delays responses but never lowers the simulated throughput.
//
// Not thread-safe: the server calls it from one strand only.
#ifndef VANGUARD_TESTS_SIMULATOR_SLOT_SCHEDULER_H_
#define VANGUARD_TESTS_SIMULATOR_SLOT_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::sim {

class SlotScheduler {
 public:
  struct Config {
    int slots = 4;
    absl::Duration service_time = absl::Milliseconds(10);
    // Waiting requests beyond which arrivals are rejected; 0 means unlimited.
    int64_t max_queue = 0;
  };

  enum class Admission { kStarted, kQueued, kRejected };

  struct Completion {
    uint64_t request_id = 0;
    absl::Duration arrival;
    absl::Duration start;
    absl::Duration finish;
  };

  // Running totals since construction, in virtual time.
  struct Stats {
    uint64_t arrived = 0;
    uint64_t rejected = 0;
    uint64_t completed = 0;
    absl::Duration total_queue_time;    // sum of (start - arrival) over completed requests
    absl::Duration total_service_time;  // sum of (finish - start) over completed requests
    int64_t queued = 0;                 // waiting now
    int64_t in_service = 0;             // busy slots now
  };

  // INVALID_ARGUMENT naming the field when slots < 1, service_time <= 0 (or infinite) or
  // max_queue < 0.
  static absl::StatusOr<SlotScheduler> Create(const Config& config);
  // Prefer Create; crashes on an invalid config.
  explicit SlotScheduler(const Config& config);

  // Moves virtual time to `now` (earlier values are treated as the current time), completing
  // every request whose service ends at or before it; completions are appended to `completed`
  // in finish order. Requests queued behind them start at the exact instants slots free up.
  void AdvanceTo(absl::Duration now, std::vector<Completion>* completed);

  // Advances to `now` (appending completions as AdvanceTo does), then admits the request:
  // kStarted if a slot was free, kQueued if it waits, kRejected if the queue is full.
  Admission Arrive(uint64_t request_id, absl::Duration now, std::vector<Completion>* completed);

  // When the earliest request in service finishes, or nullopt when all slots are idle.
  std::optional<absl::Duration> NextCompletionTime() const;

  // Busy slots / slots, averaged over the last second before `now` (over less when the
  // scheduler is younger than that). Call after AdvanceTo(now); a `now` beyond the last
  // event extrapolates with the current number of busy slots.
  double Utilization(absl::Duration now) const;

  const Stats& stats() const { return stats_; }
  const Config& config() const { return config_; }
  // slots * 1000 / service_ms: requests per second the model serves at saturation.
  double TrueCapacityRps() const;

 private:
  struct Waiting {
    uint64_t request_id;
    absl::Duration arrival;
  };
  struct InService {
    uint64_t request_id;
    absl::Duration arrival;
    absl::Duration start;
    absl::Duration finish;
    bool operator>(const InService& other) const { return finish > other.finish; }
  };

  // Moves time_ forward to t with the current number of busy slots, integrating busy time.
  void AccountUntil(absl::Duration t);
  void StartService(uint64_t request_id, absl::Duration arrival, absl::Duration start);
  // Cumulative busy slot-time at `t` >= time_.
  absl::Duration BusyIntegralAt(absl::Duration t) const;

  Config config_;
  Stats stats_;
  absl::Duration time_;  // virtual time of the last event processed
  bool started_ = false;
  absl::Duration first_time_;
  std::deque<Waiting> waiting_;
  std::priority_queue<InService, std::vector<InService>, std::greater<InService>> in_service_;

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
