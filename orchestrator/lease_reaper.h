// Returns tests whose worker stopped heartbeating to the queue: a running test whose lease
// expired is queued again (at once the first time, after a backoff growing with each later
// expiry so that a test that kills its workers slows down; attempt bumped by its next
// lease, with requeue_reason "lease of <worker> expired at attempt N"), or failed with
// "lease expired after N attempts" once it used max_attempts, or cancelled if cancellation
// had been requested.
//
//   LeaseReaper reaper(pool, {.interval = absl::Seconds(1)});
//   reaper.Start();   // background thread; Stop() or the destructor ends it
//   ASSIGN_OR_RETURN(LeaseReaper::Pass pass, reaper.RunOnce());   // tests call this directly
//
// A lease that expired while the reaper could not reach the database (or before this reaper
// started: the orchestrator itself was down) expired because its worker's heartbeats could
// not be stored either, not because the worker died. With outage_grace set, the reaper's
// first pass after a failed pass (and its very first pass) reaps nothing: it extends every
// lease of a running test to at least now + outage_grace, so that workers that lived
// through the outage renew their leases; passes after it reap as usual.
//
// Every orchestrator replica runs one; a transaction-scoped pg_try_advisory_xact_lock makes
// sure only one replica reaps at a time (the others skip that pass). Start/Stop from the
// owning thread; RunOnce from any thread.
#ifndef VANGUARD_ORCHESTRATOR_LEASE_REAPER_H_
#define VANGUARD_ORCHESTRATOR_LEASE_REAPER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/postgres.h"

namespace vanguard {

class LeaseReaper {
 public:
  // The advisory lock key a reaping pass holds ("VGREAPER").
  static constexpr int64_t kAdvisoryLockKey = 0x5647524541504552;

  struct Options {
    absl::Duration interval = absl::Seconds(1);
    // A requeued test becomes leasable after backoff * (attempts-so-far - 1): the first
    // expiry (most often the worker's own death) is retried at once.
    absl::Duration backoff = absl::Seconds(2);
    // After an outage (see above): how long running tests' leases are extended before a
    // silent worker's test is reaped; 0: reap at once.
    absl::Duration outage_grace = absl::ZeroDuration();
    // Told how many expired leases each background pass requeued, failed and cancelled
    // (e.g. for metrics); called on the reaper thread.
    std::function<void(int requeued, int failed, int cancelled)> on_reaped;
  };

  struct Pass {
    bool ran = false;  // false: another replica held the lock
    int requeued = 0;
    int failed = 0;
    int cancelled = 0;
    // A grace pass (after an outage): leases extended instead of reaped.
    int extended = 0;
  };

  LeaseReaper(PostgresPool* pool, Options options) : pool_(pool), options_(options) {}
  ~LeaseReaper() { Stop(); }
  LeaseReaper(const LeaseReaper&) = delete;
  LeaseReaper& operator=(const LeaseReaper&) = delete;

  // One pass over the expired leases (or the grace pass due after an outage).
  absl::StatusOr<Pass> RunOnce();

  // Runs a pass every interval on a background thread until Stop(). Errors (database
  // down) are logged to stderr and retried next interval.
  void Start();
  void Stop();

 private:
  PostgresPool* pool_;
  const Options options_;
  // The next pass extends leases instead of reaping them (outage_grace > 0): set at start
  // and by a failed pass, cleared by the grace pass.
  std::atomic<bool> grace_due_{true};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_LEASE_REAPER_H_
