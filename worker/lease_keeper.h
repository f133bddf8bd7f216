// Keeps one leased test's lease alive: sends Heartbeat every lease_duration / 3, and turns
// the replies into two sticky facts the runner acts on:
//   - cancel_requested(): a user cancelled the test (heartbeat reply);
//   - lease_lost(): the orchestrator refused the heartbeat with FAILED_PRECONDITION or
//     NOT_FOUND (lease expired and taken over, stale fencing token).
// Either one cancels the step in flight through the CancellationToken given at
// construction, so the runner stops promptly.
//
// MaybeBeat() is cheap when no beat is due; the runner calls it between steps and on
// every streamed window, and StartBackgroundBeats() also calls it from a thread so a
// replayer that stalls cannot let the lease expire. Due-ness is judged on the injected
// Clock; the background thread's polling tick is real time (it only decides how often
// to look).
//
// Thread-safe.
#ifndef VANGUARD_WORKER_LEASE_KEEPER_H_
#define VANGUARD_WORKER_LEASE_KEEPER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "worker/cancellation.h"
#include "worker/orchestrator_client.h"

namespace vanguard::worker {

struct LeaseKeeperOptions {
  std::string worker_id;
  absl::Duration lease_duration = absl::Seconds(10);
  // How often the background thread checks whether a beat is due.
  absl::Duration background_tick = absl::Seconds(1);
  std::function<void(const std::string&)> log;  // nullable
};

class LeaseKeeper {
 public:
  // Pointers must outlive the keeper. `step_cancel` is cancelled on cancel or lease loss.
  LeaseKeeper(OrchestratorClient* orchestrator, Clock* clock, int64_t test_id, int32_t attempt,
              LeaseKeeperOptions options, CancellationToken* step_cancel);
  ~LeaseKeeper();  // stops the background thread

  absl::Duration interval() const { return interval_; }

  // Sends a heartbeat if lease_duration / 3 has passed since the last one (a failed one is
  // retried after a third of that). A beat already in flight on another thread is not
  // duplicated.
  void MaybeBeat();

  bool cancel_requested() const;
  bool lease_lost() const;

  void StartBackgroundBeats();
  void StopBackgroundBeats();

 private:
  void Beat();
  void BackgroundLoop();

  OrchestratorClient* const orchestrator_;
  Clock* const clock_;
  const int64_t test_id_;
  const int32_t attempt_;
  const LeaseKeeperOptions options_;
  const absl::Duration interval_;
  CancellationToken* const step_cancel_;

  mutable absl::Mutex mu_;
  absl::Duration next_beat_ ABSL_GUARDED_BY(mu_);  // on clock_->Monotonic()
  bool beat_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool lease_lost_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_background_ ABSL_GUARDED_BY(mu_) = false;
  std::thread background_;
};

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_LEASE_KEEPER_H_
