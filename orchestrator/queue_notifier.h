// Wakes long-polling LeaseTest calls as soon as a test becomes ready, on every replica:
// a dedicated PostgreSQL connection LISTENs on channel `vanguard_queue`, which a trigger
// (migrations/0003) notifies whenever a row becomes queued, whichever replica or SQL
// client queued it. Each notification bumps a generation counter; waiters block until the
// generation moves or their deadline passes.
//
//   QueueNotifier notifier({.conninfo = url});
//   notifier.Start();
//   uint64_t seen = notifier.generation();
//   ... try to lease; nothing ready ...
//   notifier.WaitForChange(seen, absl::Now() + absl::Seconds(1));
//
// Notifications can be missed (connection lost and re-established, a test whose not_before
// passes): callers re-check on a short poll as well. Start/Stop from the main thread; the
// listener runs on its own thread; generation/WaitForChange/Poke from any thread.
#ifndef VANGUARD_ORCHESTRATOR_QUEUE_NOTIFIER_H_
#define VANGUARD_ORCHESTRATOR_QUEUE_NOTIFIER_H_

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace vanguard {

class QueueNotifier {
 public:
  static constexpr char kChannel[] = "vanguard_queue";

  struct Options {
    std::string conninfo;
    // Wait before reconnecting after the listening connection failed.
    absl::Duration reconnect_backoff = absl::Seconds(1);
  };

  explicit QueueNotifier(Options options) : options_(std::move(options)) {}
  ~QueueNotifier() { Stop(); }

  void Start();
  // Stops the listener and wakes every waiter; WaitForChange returns at once afterwards.
  void Stop();

  uint64_t generation() const;
  // Blocks until the generation differs from `seen`, Stop() was called, or `deadline`.
  // True when the generation moved.
  bool WaitForChange(uint64_t seen, absl::Time deadline) const;
  // Bumps the generation (e.g. after a local submit, before the notification arrives).
  void Poke();
  // True while the listening connection is up (for health reporting and tests).
  bool listening() const;
  // True once Stop() was called: waiters should give up instead of waiting again.
  bool stopped() const;

 private:
  void Listen();

  const Options options_;
  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool listening_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_QUEUE_NOTIFIER_H_
