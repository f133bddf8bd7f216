-- Vanguard schema, version 9: live progress of the step each running test is in.
--
-- A worker reports the step in flight while it is measured (ReportProgress: its windows
-- since the last call, about once a second); ReportStep still stores the finished step in
-- steps and step_windows. One row per test, replaced by each report (fenced like a
-- heartbeat: only the lease's holder at its attempt writes), deleted when the test
-- completes or its lease is given back. The flat columns are the latest window and the step
-- so far, for dashboards ("test in flight"); detail is the TestProgress without windows
-- (protobuf JSON mapping), windows the step's latest windows (at most 60, oldest first),
-- which WatchTest streams. Hot (a write a second per running test) and small: no index but
-- the key, so updates stay HOT; free space on every page for them, and vacuumed often.
CREATE TABLE IF NOT EXISTS test_progress (
  test_id           bigint PRIMARY KEY REFERENCES tests(id) ON DELETE CASCADE,
  attempt           integer NOT NULL,
  step_index        integer NOT NULL,
  offered_qps       double precision NOT NULL,   -- the step's target rate
  achieved_qps      double precision,            -- latest window (NULL: none yet)
  p50_ms            double precision,            -- latest window
  p99_ms            double precision,            -- latest window
  settling          boolean,                     -- latest window is a settle (warmup) window
  error_rate        double precision,            -- (errors + timeouts) / scheduled, step so far
  health_state      text NOT NULL,               -- latest measured window's; unspecified while settling
  elapsed_s         double precision NOT NULL,   -- since this attempt's lease
  step_elapsed_s    double precision NOT NULL,
  step_remaining_s  double precision,            -- planned; settling may add to it
  test_remaining_s  double precision,            -- NULL: the strategy cannot say
  detail            jsonb NOT NULL,
  windows           jsonb NOT NULL,
  updated_at        timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.0,
        autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.0,
        autovacuum_analyze_threshold = 500);

-- Dashboards read it like the other tables (the role exists when migration 0004 could
-- create it).
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON test_progress TO vanguard_reader;
  END IF;
END
$$;
