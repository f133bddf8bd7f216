-- Vanguard schema, version 17: survivor capacity and co-location factors in replica sizing
-- (issue 23; docs/planning.md section 3).
--
-- Co-location: a test's spec may say its capacity was measured while a neighbour model loaded
-- the same accelerators (TestSpec.capacity_condition = CAPACITY_CONDITION_COLOCATED). Such a
-- test is not the model's capacity: the capacity views (and so baselines, verdicts, the trend
-- and the plan's capacity) leave it out.
-- Survivor: a replica-loss test (the replica-loss strategy, issue 22) stores
-- results.detail -> 'replica_loss' with survivor_capacity_qps, the fleet rate its N endpoints
-- held through the loss of one, and endpoints = N; each survivor then carried
-- survivor_capacity_qps / (N - 1). Its max_sustainable_qps is 0 and the capacity views leave
-- it out too.
-- capacity_conditions turns each into a factor on the capacity of its own version alone (that
-- version's latest converged ordinary test):
--   factor = least(1, capacity per replica under the condition / capacity alone)
-- (a condition never adds capacity: a factor above 1 is noise). vanguard_plan takes, per
-- hardware, the latest factor of each kind from any version of the model on that hardware:
--   effective_capacity_qps = capacity_qps * colocation_factor          (1 when not measured)
--   survivor_capacity_qps  = effective_capacity_qps * survivor_factor  (1 when not measured)
--   replicas = ceil(required / effective)                                 when survive_loss = 0
--            = max(ceil(required / effective), ceil(required / survivor) + survive_loss)
-- which is version 10's ceil(required / capacity) + survive_loss when nothing is measured.

-- The condition of a test's spec (proto JSON leaves the default out).
CREATE OR REPLACE FUNCTION vanguard_capacity_condition(spec jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(spec ->> 'capacity_condition', 'CAPACITY_CONDITION_UNSPECIFIED')
$$;

-- Version 13's views, without co-located and replica-loss tests (same columns).
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
WHERE t.state = 'succeeded' AND NOT (r.detail ? 'autoscale') AND NOT (r.detail ? 'replica_loss')
  AND vanguard_capacity_condition(t.spec) = 'CAPACITY_CONDITION_UNSPECIFIED';

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
WHERE t.state = 'succeeded' AND NOT (r.detail ? 'autoscale') AND NOT (r.detail ? 'replica_loss')
  AND vanguard_capacity_condition(t.spec) = 'CAPACITY_CONDITION_UNSPECIFIED';

-- Every converged co-located test and every converged replica-loss test, with the capacity
-- per replica it measured, the capacity of its own version alone (that version's latest
-- converged ordinary test) and the factor between them (NULL when the version has none).
CREATE OR REPLACE VIEW capacity_conditions AS
WITH measured AS (
  SELECT r.test_id, r.model_id, r.recorded_at, 'colocated'::text AS condition,
         r.max_sustainable_qps AS per_replica_qps
  FROM results r JOIN tests t ON t.id = r.test_id
  WHERE t.state = 'succeeded' AND r.converged AND r.max_sustainable_qps > 0
    AND NOT (r.detail ? 'autoscale') AND NOT (r.detail ? 'replica_loss')
    AND vanguard_capacity_condition(t.spec) = 'CAPACITY_CONDITION_COLOCATED'
  UNION ALL
  SELECT r.test_id, r.model_id, r.recorded_at, 'survivor'::text,
         (r.detail #>> '{replica_loss,survivor_capacity_qps}')::double precision
           / ((r.detail #>> '{replica_loss,endpoints}')::integer - 1)
  FROM results r JOIN tests t ON t.id = r.test_id
  WHERE t.state = 'succeeded' AND r.converged
    AND coalesce((r.detail #>> '{replica_loss,survivor_capacity_qps}')::double precision, 0) > 0
    AND coalesce((r.detail #>> '{replica_loss,endpoints}')::integer, 0) >= 2
)
SELECT m.id AS model_id,
       m.name AS model,
       m.version AS model_version,
       coalesce(m.spec #>> '{hardware,accelerator}', '') AS accelerator,
       coalesce((m.spec #>> '{hardware,accelerator_count}')::integer, 0) AS accelerator_count,
       coalesce(m.spec #>> '{hardware,pool}', '') AS pool,
       c.condition,
       c.test_id,
       c.per_replica_qps AS conditioned_qps,
       alone.test_id AS alone_test_id,
       alone.max_sustainable_qps AS alone_qps,
       least(1, c.per_replica_qps::numeric
                / NULLIF(alone.max_sustainable_qps, 0)::numeric)::double precision AS factor,
       c.recorded_at
FROM measured c
JOIN models m ON m.id = c.model_id
LEFT JOIN LATERAL (
  SELECT ci.test_id, ci.max_sustainable_qps
  FROM capacity_intervals ci
  WHERE ci.model_id = m.id AND ci.converged AND ci.max_sustainable_qps > 0
  ORDER BY ci.recorded_at DESC, ci.test_id DESC
  LIMIT 1
) alone ON true;

-- vanguard_plan of migration 0016 with the factors (its return type changes: dropped and
-- created; 0010 drops it too, so applying every migration again still works).
DROP FUNCTION IF EXISTS vanguard_plan(text, double precision, double precision, integer);
CREATE FUNCTION vanguard_plan(
    p_model text, peak_qps double precision, headroom double precision DEFAULT 0.3,
    survive_loss integer DEFAULT 1)
RETURNS TABLE (accelerator text, accelerator_count integer, pool text, model_version text,
               test_id bigint, capacity_qps double precision, at_least boolean,
               required_qps double precision, replicas bigint, accelerators bigint,
               cost_per_million_requests double precision, measured_at timestamptz,
               output_tokens_per_request double precision,
               cost_per_million_output_tokens double precision,
               colocation_factor double precision, colocation_test_id bigint,
               survivor_factor double precision, survivor_test_id bigint,
               effective_capacity_qps double precision, survivor_capacity_qps double precision)
LANGUAGE sql STABLE AS $$
  WITH base AS (
    -- Validates the arguments (invalid_parameter_value) and picks version and capacity.
    SELECT p.* FROM vanguard_plan_unpriced(p_model, peak_qps, headroom, survive_loss) p
  ), factored AS (
    SELECT b.*, co.factor AS co_factor, co.test_id AS co_test,
           sv.factor AS sv_factor, sv.test_id AS sv_test,
           b.capacity_qps::numeric * coalesce(co.factor, 1)::numeric AS effective,
           b.capacity_qps::numeric * coalesce(co.factor, 1)::numeric
             * coalesce(sv.factor, 1)::numeric AS survivor,
           peak_qps::numeric * (1 + headroom::numeric) AS required
    FROM base b
    LEFT JOIN LATERAL (
      SELECT cc.factor, cc.test_id FROM capacity_conditions cc
      WHERE cc.model = p_model AND cc.condition = 'colocated' AND cc.factor IS NOT NULL
        AND cc.accelerator = b.accelerator AND cc.accelerator_count = b.accelerator_count
        AND cc.pool = b.pool
      ORDER BY cc.recorded_at DESC, cc.test_id DESC LIMIT 1) co ON b.test_id IS NOT NULL
    LEFT JOIN LATERAL (
      SELECT cc.factor, cc.test_id FROM capacity_conditions cc
      WHERE cc.model = p_model AND cc.condition = 'survivor' AND cc.factor IS NOT NULL
        AND cc.accelerator = b.accelerator AND cc.accelerator_count = b.accelerator_count
        AND cc.pool = b.pool
      ORDER BY cc.recorded_at DESC, cc.test_id DESC LIMIT 1) sv ON b.test_id IS NOT NULL
  ), sized AS (
    SELECT f.*,
           CASE
             WHEN f.test_id IS NULL THEN NULL
             WHEN survive_loss = 0 THEN ceil(f.required / NULLIF(f.effective, 0))::bigint
             ELSE greatest(ceil(f.required / NULLIF(f.effective, 0)),
                           ceil(f.required / NULLIF(f.survivor, 0)) + survive_loss)::bigint
           END AS sized_replicas
    FROM factored f
  )
  SELECT s.accelerator, s.accelerator_count, s.pool, s.model_version, s.test_id,
         s.capacity_qps, s.at_least, s.required_qps, s.sized_replicas,
         CASE WHEN s.accelerator_count > 0 THEN s.sized_replicas * s.accelerator_count END,
         (ap.price_per_hour::numeric * greatest(s.accelerator_count, 1) * 1000000
          / (NULLIF(s.capacity_qps, 0)::numeric * 3600))::double precision,
         s.measured_at,
         tok.output_tokens_per_request,
         (ap.price_per_hour::numeric * greatest(s.accelerator_count, 1) * 1000000
          / (NULLIF(s.capacity_qps, 0)::numeric * 3600
             * tok.output_tokens_per_request::numeric))::double precision,
         s.co_factor, s.co_test, s.sv_factor, s.sv_test,
         s.effective::double precision, s.survivor::double precision
  FROM sized s
  LEFT JOIN accelerator_prices ap ON ap.accelerator = s.accelerator
  LEFT JOIN capacity_output_tokens tok ON tok.test_id = s.test_id
  ORDER BY s.accelerator, s.accelerator_count, s.pool;
$$;

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON capacity_conditions TO vanguard_reader;
  END IF;
END
$$;
