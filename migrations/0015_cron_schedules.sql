-- Vanguard schema, version 15: cron-like schedules (issue 23). A test schedule may repeat at
-- the minutes a cron expression matches (five crontab(5) fields in UTC, or a macro such as
-- @daily; orchestrator/cron_expression.h) instead of at a fixed interval. The orchestrator
-- parses the expression: SetSchedule refuses one that does not parse, and computes
-- next_run_at (the first matching minute after the schedule was set, then after each pass
-- that queued it). The ScheduleEnqueuer queues due cron schedules like interval ones, under
-- the lease reaper's advisory lock. docs/planning.md section 5.
ALTER TABLE test_schedules ADD COLUMN IF NOT EXISTS cron text;

-- 0012's two unnamed table checks (on_new_version or an interval; next_run_at exactly when
-- an interval) become one that counts cron too: a schedule repeats by an interval or by cron,
-- never both, and has a next run exactly when it repeats.
ALTER TABLE test_schedules DROP CONSTRAINT IF EXISTS test_schedules_check;
ALTER TABLE test_schedules DROP CONSTRAINT IF EXISTS test_schedules_check1;
ALTER TABLE test_schedules DROP CONSTRAINT IF EXISTS test_schedules_repeat_check;
ALTER TABLE test_schedules ADD CONSTRAINT test_schedules_repeat_check CHECK (
  (cron IS NULL OR cron <> '')
  AND (on_new_version OR interval_seconds IS NOT NULL OR cron IS NOT NULL)
  AND (interval_seconds IS NULL OR cron IS NULL)
  AND ((interval_seconds IS NULL AND cron IS NULL) = (next_run_at IS NULL)));
