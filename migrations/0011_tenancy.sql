-- Vanguard schema, version 11: tenancy. Models and tests belong to a team; a token acts
-- for one team (an admin for every team); quotas are kept per team.
--
-- Rows from before this migration belong to the team "default": every token (the
-- bootstrap admin acts on all teams whatever its team), every model name and every test.

-- The team a token acts for.
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS team text NOT NULL DEFAULT 'default'
  CHECK (team <> '');

-- Who owns a model name: the team of the token that first registered a version of it. A
-- table of its own (not a column of models) so that the first registration of a name by
-- two teams at once is decided by one primary key: the second INSERT ... ON CONFLICT finds
-- the first team's row.
CREATE TABLE IF NOT EXISTS model_owners (
  name        text PRIMARY KEY,
  team        text NOT NULL CHECK (team <> ''),
  created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO model_owners (name, team)
  SELECT DISTINCT name, 'default' FROM models
  ON CONFLICT (name) DO NOTHING;

-- A test's team is its model's team, fixed at submission. request_id is unique within a
-- team (NULLs, tests without one, never collide).
ALTER TABLE tests ADD COLUMN IF NOT EXISTS team text NOT NULL DEFAULT 'default'
  CHECK (team <> '');
ALTER TABLE tests DROP CONSTRAINT IF EXISTS tests_request_id_key;
CREATE UNIQUE INDEX IF NOT EXISTS tests_team_request_id_idx ON tests (team, request_id);
-- The quota on concurrent tests counts a team's unfinished tests at each submit.
CREATE INDEX IF NOT EXISTS tests_team_unfinished_idx
  ON tests (team) WHERE state IN ('queued', 'running');

-- Per-team quotas, set by an admin (SetTeamQuota, `vanguard team set-quota`). NULL: the
-- default (orchestrator/tenancy.h, docs/security.md), so a team without a row, or a limit
-- never set, follows the defaults. SubmitTest locks the team's row (creating it) while it
-- counts the team's unfinished tests, so concurrent submits cannot pass the count together.
CREATE TABLE IF NOT EXISTS team_quotas (
  team                    text PRIMARY KEY CHECK (team <> ''),
  max_rate_qps            double precision,
  max_step_seconds        double precision,
  max_test_seconds        double precision,
  max_concurrent_tests    integer,
  max_submitter_priority  integer,
  max_admin_priority      integer,
  updated_at              timestamptz NOT NULL DEFAULT now()
);

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON model_owners, team_quotas TO vanguard_reader;
  END IF;
END
$$;
