-- Vanguard schema, version 4: per-window telemetry, views for capacity planners and a
-- read-only role for dashboards.

-- One row per window of a step (Step.windows), written by ReportStep together with the
-- step, idempotently on (test, attempt, step, window).
CREATE TABLE IF NOT EXISTS step_windows (
  test_id             bigint NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
  attempt             integer NOT NULL,
  step_index          integer NOT NULL,
  window_index        integer NOT NULL,
  warmup              boolean NOT NULL,
  start_time          timestamptz,
  duration_s          double precision,
  offered_qps         double precision NOT NULL,
  achieved_qps        double precision NOT NULL,
  p50_ms              double precision,
  p90_ms              double precision,
  p99_ms              double precision,
  max_ms              double precision,
  scheduled           bigint NOT NULL,
  completed           bigint NOT NULL,
  errors              bigint NOT NULL,
  timeouts            bigint NOT NULL,
  dropped             bigint NOT NULL,
  censored            bigint NOT NULL,
  ttft_p99_ms         double precision,
  inter_token_p99_ms  double precision,
  gpu_utilization     double precision,
  queue_depth         double precision,
  health_score        double precision,
  health_state        text NOT NULL,
  recorded_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (test_id, attempt, step_index, window_index)
);

-- Capacity regressions are reported when a version's capacity is this fraction below the
-- previous version's on the same hardware. One row; change it with UPDATE.
CREATE TABLE IF NOT EXISTS capacity_settings (
  singleton             boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  regression_threshold  double precision NOT NULL DEFAULT 0.10
                        CHECK (regression_threshold > 0 AND regression_threshold < 1)
);
INSERT INTO capacity_settings DEFAULT VALUES ON CONFLICT DO NOTHING;

-- Every succeeded test's capacity with its model version and hardware, flattened.
CREATE OR REPLACE VIEW capacity_results AS
SELECT m.name AS model,
       m.version AS model_version,
       m.created_at AS version_created_at,
       coalesce(m.spec #>> '{hardware,accelerator}', '') AS accelerator,
       coalesce((m.spec #>> '{hardware,accelerator_count}')::integer, 0) AS accelerator_count,
       coalesce(m.spec #>> '{hardware,pool}', '') AS pool,
       r.test_id,
       r.max_sustainable_qps,
       r.converged,
       r.confidence_low_qps,
       r.confidence_high_qps,
       r.steps_taken,
       r.test_seconds,
       r.recorded_at
FROM results r
JOIN tests t ON t.id = r.test_id
JOIN models m ON m.id = r.model_id
WHERE t.state = 'succeeded';

-- The latest measured capacity of each model version on each hardware.
CREATE OR REPLACE VIEW capacity_latest AS
SELECT DISTINCT ON (model, model_version, accelerator, accelerator_count, pool) *
FROM capacity_results
ORDER BY model, model_version, accelerator, accelerator_count, pool, recorded_at DESC, test_id DESC;

-- Daily trend per model version and hardware (UTC days).
CREATE OR REPLACE VIEW capacity_daily AS
SELECT model, model_version, accelerator, accelerator_count, pool,
       date_trunc('day', recorded_at AT TIME ZONE 'UTC')::date AS day,
       count(*) AS tests,
       avg(max_sustainable_qps) AS mean_qps,
       min(max_sustainable_qps) AS min_qps,
       max(max_sustainable_qps) AS max_qps
FROM capacity_results
GROUP BY model, model_version, accelerator, accelerator_count, pool, day;

-- Latest capacity of each version next to the previous version (by registration time) of
-- the same model on the same hardware.
CREATE OR REPLACE VIEW capacity_version_changes AS
SELECT model, accelerator, accelerator_count, pool,
       previous_version, previous_qps, model_version, max_sustainable_qps AS qps,
       (max_sustainable_qps - previous_qps) / previous_qps AS change_fraction
FROM (
  SELECT l.*,
         lag(model_version) OVER w AS previous_version,
         lag(max_sustainable_qps) OVER w AS previous_qps
  FROM capacity_latest l
  WINDOW w AS (PARTITION BY model, accelerator, accelerator_count, pool
               ORDER BY version_created_at, model_version)
) consecutive
WHERE previous_version IS NOT NULL AND previous_qps > 0;

-- Consecutive versions whose capacity dropped by more than the configured threshold.
CREATE OR REPLACE VIEW capacity_regressions AS
SELECT c.*
FROM capacity_version_changes c, capacity_settings s
WHERE c.change_fraction < -s.regression_threshold;

-- Read-only role for dashboards (Grafana etc.): every table but the token hashes, and the
-- views. Roles are cluster-wide and need CREATEROLE: skipped with a notice without it.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
      BEGIN
        CREATE ROLE vanguard_reader NOLOGIN;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;  -- another database of this cluster created it meanwhile
      END;
    ELSE
      RAISE NOTICE 'role vanguard_reader not created: % lacks CREATEROLE', current_user;
    END IF;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO vanguard_reader', current_database());
    GRANT USAGE ON SCHEMA public TO vanguard_reader;
    GRANT SELECT ON models, tests, steps, results, step_windows, capacity_settings,
      capacity_results, capacity_latest, capacity_daily, capacity_version_changes,
      capacity_regressions TO vanguard_reader;
  END IF;
END
$$;
