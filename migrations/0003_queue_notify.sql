-- Vanguard schema, version 3: queue wake-ups and hot-table tuning.
--
-- Every row that becomes queued (submit through any replica, a lease returned by the
-- reaper, a plain SQL insert) notifies channel `vanguard_queue`, so long-polling LeaseTest
-- calls on every orchestrator replica wake at once. Postgres folds identical notifications
-- of one transaction into one. Leases (queued -> running) and heartbeats (which do not
-- touch `state`) do not fire it.
CREATE OR REPLACE FUNCTION vanguard_notify_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('vanguard_queue', '');
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tests_queued_notify ON tests;
CREATE TRIGGER tests_queued_notify
  AFTER INSERT OR UPDATE OF state ON tests
  FOR EACH ROW WHEN (NEW.state = 'queued')
  EXECUTE FUNCTION vanguard_notify_queued();

-- Heartbeats rewrite running rows every few seconds: vacuum the queue table eagerly and
-- without throttling so dead tuples do not pile up; fillfactor 80 (0001) leaves room for
-- HOT updates. Finished rows leave the partial indexes the leaser scans, so history does
-- not slow leasing down.
ALTER TABLE tests SET (autovacuum_vacuum_scale_factor = 0.01,
                       autovacuum_analyze_scale_factor = 0.02,
                       autovacuum_vacuum_cost_delay = 0);
-- The reaper scans running rows by lease expiry through tests_running_idx (0001); the
-- expiry itself stays unindexed so heartbeats remain HOT updates.
