// The schedules table (`test_schedules`, migrations 0012 and 0015): tests queued for a model
// without anyone submitting them. Registering a version queues every on_new_version schedule
// of its name in the registration's transaction (a trigger of 0012); EnqueueDue queues the
// interval and cron schedules that are due.
//
//   ScheduleRepository schedules(pool);
//   ASSIGN_OR_RETURN(v1::TestSchedule s, schedules.Set(schedule, "ci-token", clock->Now()));
//   ASSIGN_OR_RETURN(ScheduleRepository::EnqueuePass pass, schedules.EnqueueDue(clock->Now()));
//
// Stores what it is given: validation, defaults and the team check are the service's.
// Thread-safe (all state is in Postgres); any thread may call. Database errors map as in
// common/postgres.h (UNAVAILABLE when the database is unreachable).
#ifndef VANGUARD_ORCHESTRATOR_SCHEDULE_REPOSITORY_H_
#define VANGUARD_ORCHESTRATOR_SCHEDULE_REPOSITORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/postgres.h"
#include "vanguard/v1/orchestrator.pb.h"

namespace vanguard {

class ScheduleRepository {
 public:
  struct EnqueuePass {
    bool ran = false;  // false: another replica held the advisory lock
    int queued = 0;
    // Due but not queued: its previous test is still queued or running (it is queued once
    // that one ends), or its model has no version that is not deprecated (it waits another
    // interval).
    int skipped = 0;
    // Why a due schedule was skipped, when that is a fault: a cron expression written with
    // SQL that does not parse (tried again in a day). The enqueuer logs them.
    std::vector<std::string> errors;
  };

  explicit ScheduleRepository(PostgresPool* pool) : pool_(pool) {}

  // Creates the schedule of (schedule.model, schedule.name) or replaces its spec,
  // on_new_version, interval and cron. With an interval it is first due at now + interval,
  // with a cron expression at its first minute after now. FAILED_PRECONDITION when the model
  // name was never registered; INVALID_ARGUMENT for a cron expression that does not parse.
  absl::StatusOr<v1::TestSchedule> Set(const v1::TestSchedule& schedule,
                                       const std::string& created_by, absl::Time now);
  // NOT_FOUND for an unknown id.
  absl::StatusOr<v1::TestSchedule> Get(int64_t id);
  // By model, then name; only `model` when not empty, only `team`'s models when not empty.
  absl::StatusOr<std::vector<v1::TestSchedule>> List(const std::string& model,
                                                     const std::string& team);
  // NOT_FOUND for an unknown id. The tests it queued stay.
  absl::Status Delete(int64_t id);

  // Queues the test of each interval or cron schedule due at `now` (next_run_at <= now)
  // against its model's newest version that is not deprecated, and sets it next due at
  // now + interval, or at the cron expression's first minute after now (a run missed while
  // no orchestrator ran is made up once, not once per missed minute).
  // Runs only while holding the lease reaper's transaction-scoped advisory lock
  // (LeaseReaper::kAdvisoryLockKey), so one replica enqueues at a time; returns ran = false
  // when another holds it. At most `limit` schedules a pass.
  absl::StatusOr<EnqueuePass> EnqueueDue(absl::Time now, int limit = 100);

 private:
  PostgresPool* pool_;
};

}  // namespace vanguard

#endif  // VANGUARD_ORCHESTRATOR_SCHEDULE_REPOSITORY_H_
