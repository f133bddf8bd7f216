// Queues the tests of interval and cron schedules when they fall due
// (ScheduleRepository::EnqueueDue), every `interval`, at the time of the injected Clock. Schedules
// on new versions need no enqueuer: a trigger on registration queues them (migration 0012).
//
//   ScheduleEnqueuer enqueuer(&schedules, Clock::Real(), {.interval = absl::Seconds(10)});
//   enqueuer.Start();   // background thread; Stop() or the destructor ends it
//   ASSIGN_OR_RETURN(ScheduleRepository::EnqueuePass pass, enqueuer.RunOnce());  // tests
//
// Every orchestrator replica runs one; each pass holds the lease reaper's advisory lock, so
// one replica enqueues at a time (the others skip that pass). Start/Stop from the owning
// thread; RunOnce from any thread.
#ifndef VANGUARD_ORCHESTRATOR_SCHEDULE_ENQUEUER_H_
#define VANGUARD_ORCHESTRATOR_SCHEDULE_ENQUEUER_H_

#include <functional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "orchestrator/schedule_repository.h"

namespace vanguard {

class ScheduleEnqueuer {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(10);
    // Told how many tests each background pass queued; called on the enqueuer thread.
    std::function<void(int queued)> on_queued;
  };

  ScheduleEnqueuer(ScheduleRepository* schedules, Clock* clock, Options options)
      : schedules_(schedules), clock_(clock), options_(std::move(options)) {}
  ~ScheduleEnqueuer() { Stop(); }
  ScheduleEnqueuer(const ScheduleEnqueuer&) = delete;
  ScheduleEnqueuer& operator=(const ScheduleEnqueuer&) = delete;

  // One pass at clock->Now().
  absl::StatusOr<ScheduleRepository::EnqueuePass> RunOnce() {
    return schedules_->EnqueueDue(clock_->Now());
  }

  // A pass every interval on a background thread until Stop(). Errors (database down, a
  // cron expression written with SQL that does not parse) are logged to stderr; the pass is
  // retried next interval.
  void Start();
  void Stop();

 private:
  ScheduleRepository* schedules_;
  Clock* clock_;
  const Options options_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_SCHEDULE_ENQUEUER_H_
