-- Vanguard schema, version 10: capacity planning on the stored results (issue 23): accepted
-- baselines, each succeeded test's verdict against the baseline in force, and replica sizing.
-- docs/planning.md shows the queries a planner runs; the orchestrator's AcceptBaseline,
-- ListRegressions, GetCapacityTrend and PlanCapacity read the same objects.

-- A result's confidence interval, as compare.h (the `vanguard compare` tool) reads it: the
-- capacity held at the low end and failed at the high end, so the interval is [low, high).
-- A result states an interval when it is "at least" or has a low or high end (results store
-- 0 as NULL); an "at least" result, or one without a high end, has no upper end (+Infinity).
-- A result that states none is the point [estimate, estimate].
CREATE OR REPLACE FUNCTION vanguard_interval_stated(
    low double precision, high double precision, at_least boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(at_least, false) OR coalesce(low, 0) > 0 OR coalesce(high, 0) > 0
$$;

CREATE OR REPLACE FUNCTION vanguard_interval_low(
    estimate double precision, low double precision, high double precision, at_least boolean)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN NOT vanguard_interval_stated(low, high, at_least) THEN estimate
    WHEN coalesce(at_least, false) THEN CASE WHEN coalesce(low, 0) > 0 THEN low ELSE estimate END
    ELSE coalesce(low, 0)
  END
$$;

CREATE OR REPLACE FUNCTION vanguard_interval_high(
    estimate double precision, low double precision, high double precision, at_least boolean)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN NOT vanguard_interval_stated(low, high, at_least) THEN estimate
    WHEN coalesce(at_least, false) OR coalesce(high, 0) <= 0 THEN 'Infinity'::double precision
    ELSE greatest(high, coalesce(low, 0))
  END
$$;

-- The classification rule. Both intervals must be stated, else 'undecided' (no figure can be
-- told from the noise). 'regressed' when the new interval lies wholly below the baseline's:
-- its upper end (the lowest rate the new test failed at) is at or below the baseline's lower
-- end (the rate the baseline held); 'improved' when it lies wholly above (its lower end at or
-- above the baseline's upper end); 'unchanged' when the two intervals share a rate, however
-- far apart the estimates are. A point interval [x, x] contains x; [low, high) does not
-- contain high. This is compare.h's Overlap, so `vanguard compare BASELINE NEW` calls the
-- same pairs beyond the noise.
CREATE OR REPLACE FUNCTION vanguard_capacity_verdict(
    baseline_qps double precision, baseline_low double precision,
    baseline_high double precision, baseline_at_least boolean,
    new_qps double precision, new_low double precision,
    new_high double precision, new_at_least boolean)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  WITH i AS (
    SELECT vanguard_interval_low(baseline_qps, baseline_low, baseline_high, baseline_at_least) AS bl,
           vanguard_interval_high(baseline_qps, baseline_low, baseline_high, baseline_at_least) AS bh,
           vanguard_interval_low(new_qps, new_low, new_high, new_at_least) AS nl,
           vanguard_interval_high(new_qps, new_low, new_high, new_at_least) AS nh
  ), o AS (
    SELECT i.*, greatest(bl, nl) AS lo, least(bh, nh) AS hi FROM i
  )
  SELECT CASE
    WHEN NOT vanguard_interval_stated(baseline_low, baseline_high, baseline_at_least)
      OR NOT vanguard_interval_stated(new_low, new_high, new_at_least) THEN 'undecided'
    WHEN lo < hi THEN 'unchanged'
    WHEN lo = hi
      AND (CASE WHEN bl = bh THEN lo = bl ELSE lo >= bl AND lo < bh END)
      AND (CASE WHEN nl = nh THEN lo = nl ELSE lo >= nl AND lo < nh END) THEN 'unchanged'
    WHEN nh <= bl THEN 'regressed'
    ELSE 'improved'
  END
  FROM o
$$;

-- Accepted baselines: a succeeded test whose capacity a model version is held to. The
-- figures are copied from its result when accepted. Accepting the same test again makes it
-- the newest baseline again (accepted_by and accepted_at are replaced).
CREATE TABLE IF NOT EXISTS capacity_baselines (
  id                   bigserial PRIMARY KEY,
  model_id             bigint NOT NULL REFERENCES models(id),
  test_id              bigint NOT NULL UNIQUE REFERENCES tests(id) ON DELETE CASCADE,
  max_sustainable_qps  double precision NOT NULL,
  confidence_low_qps   double precision,
  confidence_high_qps  double precision,
  at_least             boolean NOT NULL DEFAULT false,
  accepted_by          text NOT NULL,     -- the token's name; '' when auth is off
  accepted_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS capacity_baselines_model_idx
  ON capacity_baselines (model_id, accepted_at DESC);

-- Every succeeded test's capacity with its interval (the functions above), model version
-- and hardware.
CREATE OR REPLACE VIEW capacity_intervals AS
SELECT m.id AS model_id,
       m.name AS model,
       m.version AS model_version,
       m.created_at AS version_created_at,
       coalesce(m.spec #>> '{hardware,accelerator}', '') AS accelerator,
       coalesce((m.spec #>> '{hardware,accelerator_count}')::integer, 0) AS accelerator_count,
       coalesce(m.spec #>> '{hardware,pool}', '') AS pool,
       r.test_id,
       r.max_sustainable_qps,
       r.converged,
       coalesce((r.detail ->> 'at_least')::boolean, false) AS at_least,
       r.confidence_low_qps,
       r.confidence_high_qps,
       vanguard_interval_stated(r.confidence_low_qps, r.confidence_high_qps,
                                coalesce((r.detail ->> 'at_least')::boolean, false))
         AS interval_stated,
       vanguard_interval_low(r.max_sustainable_qps, r.confidence_low_qps, r.confidence_high_qps,
                             coalesce((r.detail ->> 'at_least')::boolean, false)) AS interval_low,
       vanguard_interval_high(r.max_sustainable_qps, r.confidence_low_qps, r.confidence_high_qps,
                              coalesce((r.detail ->> 'at_least')::boolean, false)) AS interval_high,
       r.recorded_at
FROM results r
JOIN tests t ON t.id = r.test_id
JOIN models m ON m.id = r.model_id
WHERE t.state = 'succeeded';

-- Each succeeded test that has a baseline in force, with the verdict and the figures. The
-- baseline in force for a test of version V on hardware H: among the baselines of the same
-- model on the same hardware (accelerator, accelerator_count, pool) whose version is V or
-- was registered before V, those of the most recently registered such version, the latest
-- accepted; the test's own baseline does not count. Tests without one are not listed.
-- change_fraction = (qps - baseline_qps) / baseline_qps (NULL when the baseline is 0).
CREATE OR REPLACE VIEW capacity_verdicts AS
SELECT n.model, n.model_version, n.accelerator, n.accelerator_count, n.pool,
       n.test_id, n.max_sustainable_qps AS qps, n.at_least, n.confidence_low_qps,
       n.confidence_high_qps, n.converged, n.recorded_at,
       b.test_id AS baseline_test_id, b.model_version AS baseline_version,
       b.max_sustainable_qps AS baseline_qps, b.at_least AS baseline_at_least,
       b.confidence_low_qps AS baseline_low_qps, b.confidence_high_qps AS baseline_high_qps,
       b.accepted_by AS baseline_accepted_by, b.accepted_at AS baseline_accepted_at,
       (n.max_sustainable_qps - b.max_sustainable_qps) / NULLIF(b.max_sustainable_qps, 0)
         AS change_fraction,
       vanguard_capacity_verdict(b.max_sustainable_qps, b.confidence_low_qps,
                                 b.confidence_high_qps, b.at_least, n.max_sustainable_qps,
                                 n.confidence_low_qps, n.confidence_high_qps, n.at_least)
         AS verdict
FROM capacity_intervals n
CROSS JOIN LATERAL (
  SELECT bl.*, bm.version AS model_version
  FROM capacity_baselines bl
  JOIN models bm ON bm.id = bl.model_id
  WHERE bm.name = n.model
    AND coalesce(bm.spec #>> '{hardware,accelerator}', '') = n.accelerator
    AND coalesce((bm.spec #>> '{hardware,accelerator_count}')::integer, 0) = n.accelerator_count
    AND coalesce(bm.spec #>> '{hardware,pool}', '') = n.pool
    AND (bm.created_at, bm.id) <= (n.version_created_at, n.model_id)
    AND bl.test_id <> n.test_id
  ORDER BY bm.created_at DESC, bm.id DESC, bl.accepted_at DESC, bl.id DESC
  LIMIT 1
) b;

-- The drops beyond the noise.
CREATE OR REPLACE VIEW capacity_baseline_regressions AS
SELECT * FROM capacity_verdicts WHERE verdict = 'regressed';

-- Replica sizing. For each hardware the model is registered on: its most recently registered
-- version that is not deprecated, and that version's latest converged capacity (a succeeded
-- test whose result converged; an "at least" result counts at its stated rate). The capacity
-- is that of one replica: the worker loads the version's first endpoint only.
--   required_qps = peak_qps * (1 + headroom)
--   replicas     = ceil(required_qps / capacity_qps) + survive_loss
--   accelerators = replicas * accelerator_count (NULL when the count is not registered)
-- computed in numeric, so 120 / 40 is exactly 3 (not 3.0000000000000004 rounded up to 4).
-- capacity_qps, replicas and accelerators are NULL when that version has no converged
-- capacity. cost_per_million_requests is NULL: the registry stores no price per
-- accelerator-hour (with a price P it would be P * accelerators / (peak_qps * 0.0036)).
-- headroom is a fraction (0.3 = 30%). Invalid input raises invalid_parameter_value.
-- (Dropped first: a later migration gives vanguard_plan more columns, and applying this one
-- again must not fail on that.)
DROP FUNCTION IF EXISTS vanguard_plan(text, double precision, double precision, integer);
CREATE OR REPLACE FUNCTION vanguard_plan(
    p_model text, peak_qps double precision, headroom double precision DEFAULT 0.3,
    survive_loss integer DEFAULT 1)
RETURNS TABLE (accelerator text, accelerator_count integer, pool text, model_version text,
               test_id bigint, capacity_qps double precision, at_least boolean,
               required_qps double precision, replicas bigint, accelerators bigint,
               cost_per_million_requests double precision, measured_at timestamptz)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  IF peak_qps IS NULL OR peak_qps = 'NaN' OR peak_qps <= 0 OR peak_qps = 'Infinity' THEN
    RAISE EXCEPTION 'peak_qps must be a positive finite rate, got %', peak_qps
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF headroom IS NULL OR headroom = 'NaN' OR headroom < 0 OR headroom = 'Infinity' THEN
    RAISE EXCEPTION 'headroom must be a finite fraction >= 0 (0.3 = 30%%), got %', headroom
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF survive_loss IS NULL OR survive_loss < 0 THEN
    RAISE EXCEPTION 'survive_loss must be >= 0 replicas, got %', survive_loss
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN QUERY
  WITH versions AS (
    SELECT DISTINCT ON (hw.accelerator, hw.accelerator_count, hw.pool)
           m.id, m.version, hw.accelerator, hw.accelerator_count, hw.pool
    FROM models m
    CROSS JOIN LATERAL (
      SELECT coalesce(m.spec #>> '{hardware,accelerator}', '') AS accelerator,
             coalesce((m.spec #>> '{hardware,accelerator_count}')::integer, 0) AS accelerator_count,
             coalesce(m.spec #>> '{hardware,pool}', '') AS pool) hw
    WHERE m.name = p_model AND NOT m.deprecated
    ORDER BY hw.accelerator, hw.accelerator_count, hw.pool, m.created_at DESC, m.id DESC
  ), measured AS (
    SELECT v.*, c.test_id, c.max_sustainable_qps, c.at_least, c.recorded_at,
           ceil(peak_qps::numeric * (1 + headroom::numeric)
                / NULLIF(c.max_sustainable_qps, 0)::numeric)::bigint + survive_loss AS replicas
    FROM versions v
    LEFT JOIN LATERAL (
      SELECT ci.test_id, ci.max_sustainable_qps, ci.at_least, ci.recorded_at
      FROM capacity_intervals ci
      WHERE ci.model_id = v.id AND ci.converged AND ci.max_sustainable_qps > 0
      ORDER BY ci.recorded_at DESC, ci.test_id DESC
      LIMIT 1
    ) c ON true
  )
  SELECT ms.accelerator, ms.accelerator_count, ms.pool, ms.version, ms.test_id,
         ms.max_sustainable_qps, ms.at_least,
         (peak_qps::numeric * (1 + headroom::numeric))::double precision,
         ms.replicas,
         CASE WHEN ms.accelerator_count > 0 THEN ms.replicas * ms.accelerator_count END,
         NULL::double precision,
         ms.recorded_at
  FROM measured ms
  ORDER BY ms.accelerator, ms.accelerator_count, ms.pool;
END
$$;

-- Dashboards read the new table and views like the others (the role exists when migration
-- 0004 could create it); functions are executable by everyone by default.
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON capacity_baselines, capacity_intervals, capacity_verdicts,
      capacity_baseline_regressions TO vanguard_reader;
  END IF;
END
$$;
