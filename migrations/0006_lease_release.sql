-- Vanguard schema, version 6: why a test went back to the queue.
--
-- A worker that shuts down reports its step in flight and gives its lease back
-- (ReleaseTest): the test is queued again at once instead of waiting for the lease to
-- expire. requeue_reason keeps why the test last went back to the queue (a release, or an
-- expiry the reaper found), so users see why a running test is queued again. Not indexed:
-- the column is only read with the row.
ALTER TABLE tests ADD COLUMN IF NOT EXISTS requeue_reason text;
