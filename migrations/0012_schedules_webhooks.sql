-- Vanguard schema, version 12: continuous regression testing (issue 23). Schedules queue a
-- model's test on every new version registered and/or at a fixed interval; webhooks are told
-- of every test whose verdict against its baseline (0010's capacity_verdicts) is `regressed`,
-- through deliveries kept here until they are answered. docs/planning.md describes both.

-- A test queued without anyone submitting it. `spec` is a vanguard.v1.TestSpec (proto JSON
-- field names) with the service's defaults applied and no model_version: each queued test
-- pins the version it tests. A schedule queues on every version of `model` registered
-- (on_new_version), and/or every interval_seconds at next_run_at (a fixed interval, not
-- cron); the orchestrator's ScheduleEnqueuer runs the interval under the reaper's advisory
-- lock. The model's team (model_owners) owns the schedule and its tests.
CREATE TABLE IF NOT EXISTS test_schedules (
  id                bigserial PRIMARY KEY,
  model             text NOT NULL REFERENCES model_owners(name),
  name              text NOT NULL DEFAULT 'default' CHECK (name <> ''),
  spec              jsonb NOT NULL,
  on_new_version    boolean NOT NULL DEFAULT false,
  interval_seconds  double precision CHECK (interval_seconds IS NULL OR interval_seconds > 0),
  next_run_at       timestamptz,
  last_test_id      bigint REFERENCES tests(id) ON DELETE SET NULL,
  created_by        text NOT NULL DEFAULT '',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (model, name),
  CHECK (on_new_version OR interval_seconds IS NOT NULL),
  CHECK ((interval_seconds IS NULL) = (next_run_at IS NULL))
);
CREATE INDEX IF NOT EXISTS test_schedules_due_idx
  ON test_schedules (next_run_at) WHERE next_run_at IS NOT NULL;

-- Queues schedule `schedule_id`'s test against models row `model_id`: the template with the
-- version pinned and, when the template gives no step_warmup, that version's default warmup
-- (as SubmitTest does). The test belongs to the model's team; the schedule remembers it.
-- Returns the test's id.
CREATE OR REPLACE FUNCTION vanguard_enqueue_scheduled_test(schedule_id bigint, model_id bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  s test_schedules%ROWTYPE;
  m models%ROWTYPE;
  test_spec jsonb;
  queued bigint;
BEGIN
  SELECT * INTO STRICT s FROM test_schedules WHERE id = schedule_id;
  SELECT * INTO STRICT m FROM models WHERE id = model_id;
  test_spec := s.spec || jsonb_build_object('model', m.name, 'model_version', m.version);
  IF NOT test_spec ? 'step_warmup' THEN
    test_spec := test_spec || jsonb_build_object(
        'step_warmup', coalesce(m.spec -> 'default_warmup', '"0s"'::jsonb));
  END IF;
  INSERT INTO tests (team, model_id, spec, priority, max_attempts)
  VALUES (coalesce((SELECT team FROM model_owners WHERE name = m.name), 'default'), m.id,
          test_spec, coalesce((test_spec ->> 'priority')::integer, 0),
          coalesce((test_spec ->> 'max_attempts')::integer, 3))
  RETURNING id INTO queued;
  UPDATE test_schedules SET last_test_id = queued WHERE id = schedule_id;
  RETURN queued;
END
$$;

-- Registering a version queues every on_new_version schedule of its name, in the
-- registration's own transaction: the version and its tests are stored together or not at
-- all, whoever registers it (the orchestrator or plain SQL).
CREATE OR REPLACE FUNCTION vanguard_schedule_new_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM vanguard_enqueue_scheduled_test(s.id, NEW.id)
  FROM test_schedules s
  WHERE s.model = NEW.name AND s.on_new_version
  ORDER BY s.id;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS models_schedule_new_version ON models;
CREATE TRIGGER models_schedule_new_version
  AFTER INSERT ON models
  FOR EACH ROW EXECUTE FUNCTION vanguard_schedule_new_version();

-- Where a `regressed` verdict is POSTed: a team's webhook (model NULL) hears of every model of
-- the team, a model's of that model only. The secret signs each body (HMAC-SHA256); it is
-- needed in the clear to sign, so it is stored as given and never returned by the API.
CREATE TABLE IF NOT EXISTS webhooks (
  id          bigserial PRIMARY KEY,
  team        text NOT NULL CHECK (team <> ''),
  model       text REFERENCES model_owners(name),
  url         text NOT NULL CHECK (url <> ''),
  secret      text NOT NULL CHECK (secret <> ''),
  created_by  text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS webhooks_team_idx ON webhooks (team);

-- One row per (webhook, regressed test): the exact body to send (so every retry sends, and
-- signs, the same bytes), its state and its attempts. A sender claims a row (claimed_until)
-- before it POSTs; a row whose sender died is claimed again once the claim lapses, so an
-- orchestrator crash loses nothing. last_error holds a fixed message and the status code
-- only, never what the endpoint answered.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id               bigserial PRIMARY KEY,
  webhook_id       bigint NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  test_id          bigint NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
  body             text NOT NULL,
  state            text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  claimed_until    timestamptz,
  last_status      integer,
  last_error       text,
  created_at       timestamptz NOT NULL,
  finished_at      timestamptz,
  UNIQUE (webhook_id, test_id)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending_idx
  ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON test_schedules TO vanguard_reader;
    GRANT SELECT (id, webhook_id, test_id, state, attempts, next_attempt_at, last_status,
                  last_error, created_at, finished_at) ON webhook_deliveries TO vanguard_reader;
  END IF;
END
$$;
