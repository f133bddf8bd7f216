-- Vanguard schema, version 1: model registry, test queue with leases, steps, results.
-- Applied by vanguard-orchestrator at start, in file order, inside one transaction per file,
-- and recorded in schema_migrations; every statement is written to be safe to re-run.

CREATE TABLE IF NOT EXISTS models (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  version     text NOT NULL,
  protocol    text NOT NULL,
  spec        jsonb NOT NULL,          -- the vanguard.v1.Model in proto JSON mapping
  created_at  timestamptz NOT NULL DEFAULT now(),
  deprecated  boolean NOT NULL DEFAULT false,
  UNIQUE (name, version)
);

-- The queue. Hot columns are small; lease_expires_at is deliberately not indexed so that
-- heartbeats stay HOT updates. Finished tests keep their row (results reference them).
CREATE TABLE IF NOT EXISTS tests (
  id                bigserial PRIMARY KEY,
  request_id        text UNIQUE,
  model_id          bigint NOT NULL REFERENCES models(id),
  spec              jsonb NOT NULL,     -- the vanguard.v1.TestSpec
  state             text NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  priority          integer NOT NULL DEFAULT 0,
  attempt           integer NOT NULL DEFAULT 0,
  max_attempts      integer NOT NULL DEFAULT 3,
  not_before        timestamptz NOT NULL DEFAULT now(),
  lease_owner       text,
  lease_expires_at  timestamptz,
  cancel_requested  boolean NOT NULL DEFAULT false,
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  finished_at       timestamptz
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01);

-- Only queued rows are polled by leasers: keep that index small.
CREATE INDEX IF NOT EXISTS tests_queued_idx
  ON tests (priority DESC, created_at, id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS tests_running_idx ON tests (id) WHERE state = 'running';
CREATE INDEX IF NOT EXISTS tests_model_idx ON tests (model_id, created_at DESC);

CREATE TABLE IF NOT EXISTS steps (
  test_id       bigint NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
  attempt       integer NOT NULL,
  step_index    integer NOT NULL,
  target_qps    double precision NOT NULL,
  achieved_qps  double precision NOT NULL,
  p50_ms        double precision,
  p90_ms        double precision,
  p99_ms        double precision,
  p999_ms       double precision,
  max_ms        double precision,
  error_rate    double precision NOT NULL,
  scheduled     bigint NOT NULL,
  completed     bigint NOT NULL,
  errors        bigint NOT NULL,
  timeouts      bigint NOT NULL,
  dropped       bigint NOT NULL,
  health_state  text NOT NULL,
  passed        boolean NOT NULL,
  client_valid  boolean NOT NULL,
  histogram     bytea,                 -- common/histogram serialization, microseconds
  detail        jsonb NOT NULL,        -- the full vanguard.v1.Step
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (test_id, attempt, step_index)
);

CREATE TABLE IF NOT EXISTS results (
  test_id              bigint PRIMARY KEY REFERENCES tests(id) ON DELETE CASCADE,
  model_id             bigint NOT NULL REFERENCES models(id),
  max_sustainable_qps  double precision NOT NULL,
  converged            boolean NOT NULL,
  confidence_low_qps   double precision,
  confidence_high_qps  double precision,
  steps_taken          integer NOT NULL,
  test_seconds         double precision NOT NULL,
  detail               jsonb NOT NULL,  -- the full vanguard.v1.TestResult
  recorded_at          timestamptz NOT NULL DEFAULT now()
);
