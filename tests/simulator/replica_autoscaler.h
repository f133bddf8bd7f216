// The simulated fleet's autoscaler: a pure rule that decides how many replicas serve, from
// the work in flight, so the autoscale strategy can be checked against a fleet whose
// reaction is known. Like a Kubernetes HPA on an in-flight metric:
//  - desired = ceil(in_flight / target_in_flight), clamped to [min_replicas, max_replicas];
//  - desired above the replicas provisioned (ready + starting) for scale_up_delay starts the
//    missing replicas; each serves cold_start after it was started;
//  - desired below the ready replicas for scale_down_delay (nothing starting) removes the
//    extra ones at once.
// So a step of load is carried scale_up_delay + cold_start after the in-flight work crossed
// the target.
//
//   ReplicaAutoscaler fleet({.min_replicas = 1, .max_replicas = 4, .target_in_flight = 2});
//   int ready = fleet.Observe(now, /*in_flight=*/7);   // time is an input, never read
//   std::optional<absl::Duration> wake = fleet.NextEventTime();
//
// Not thread-safe: the server calls it from its scheduler strand only.
#ifndef VANGUARD_TESTS_SIMULATOR_REPLICA_AUTOSCALER_H_
#define VANGUARD_TESTS_SIMULATOR_REPLICA_AUTOSCALER_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vanguard::sim {

class ReplicaAutoscaler {
 public:
  struct Config {
    int min_replicas = 1;
    int max_replicas = 4;
    // Requests in flight (queued + in service) one ready replica is sized for.
    double target_in_flight = 2;
    absl::Duration scale_up_delay = absl::Seconds(2);
    absl::Duration cold_start = absl::Seconds(2);
    absl::Duration scale_down_delay = absl::Seconds(30);
  };

  // INVALID_ARGUMENT naming the field: min_replicas < 1, max_replicas < min_replicas,
  // target_in_flight <= 0, or a negative (or infinite) delay.
  static absl::StatusOr<ReplicaAutoscaler> Create(const Config& config);

  // The load at `now` (a monotonic duration; earlier values count as the last one): applies
  // the rule and returns the replicas ready to serve.
  int Observe(absl::Duration now, double in_flight);

  // When a starting replica becomes ready or a pending delay ends; nullopt when nothing is
  // due. The server wakes then and calls Observe.
  std::optional<absl::Duration> NextEventTime() const;

  int ready() const { return ready_; }
  int starting() const { return static_cast<int>(ready_at_.size()); }
  int desired() const { return desired_; }
  const Config& config() const { return config_; }

 private:
  explicit ReplicaAutoscaler(const Config& config);

  // Starting replicas whose cold start has ended join the ready ones.
  void PromoteReady(absl::Duration now);

  Config config_;
  int ready_;
  int desired_;
  std::vector<absl::Duration> ready_at_;       // starting replicas, ascending
  std::optional<absl::Duration> above_since_;  // desired > provisioned since
  std::optional<absl::Duration> below_since_;  // desired < ready since
  absl::Duration now_;
};

}  // namespace vanguard::sim

#endif  // VANGUARD_TESTS_SIMULATOR_REPLICA_AUTOSCALER_H_
