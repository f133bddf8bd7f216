-- Vanguard schema, version 13: cost and autoscale results (issue 23).
--
-- A price per accelerator-hour per hardware type, and vanguard_plan's
-- cost_per_million_requests from it: one replica of the model at its measured capacity
-- serves capacity_qps * 3600 requests an hour on accelerator_count accelerators (a model
-- registered without a count counts as one), so
--   cost_per_million_requests = price_per_hour * max(accelerator_count, 1)
--                               / (capacity_qps * 3600) * 1e6
-- (NULL when the accelerator has no price or the version no converged capacity). Stored
-- results carry no output-token rate, so there is no per-token cost (docs/planning.md).
--
-- Autoscale tests (TestResult.autoscale) store a result whose max_sustainable_qps is 0: it is
-- not a capacity, and the capacity views (latest, trend, verdicts, plans) leave it out.
CREATE TABLE IF NOT EXISTS accelerator_prices (
  accelerator     text PRIMARY KEY,  -- as in Model.hardware.accelerator, e.g. 'nvidia-l4'
  price_per_hour  double precision NOT NULL
                  CHECK (price_per_hour >= 0 AND price_per_hour < 'Infinity'),
  currency        text NOT NULL DEFAULT 'USD',
  updated_at      timestamptz NOT NULL DEFAULT now()
);

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
WHERE t.state = 'succeeded' AND NOT (r.detail ? 'autoscale');

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
WHERE t.state = 'succeeded' AND NOT (r.detail ? 'autoscale');

-- Replica sizing, now with cost: version 10's function, kept under another name, priced.
-- (Idempotent: applied again, version 10 has just replaced vanguard_plan with its own body,
-- which the renamed copy already holds.)
DO $$
BEGIN
  IF to_regprocedure('vanguard_plan_unpriced(text,double precision,double precision,integer)')
     IS NULL THEN
    ALTER FUNCTION vanguard_plan(text, double precision, double precision, integer)
      RENAME TO vanguard_plan_unpriced;
  END IF;
END
$$;
CREATE OR REPLACE FUNCTION vanguard_plan(
    p_model text, peak_qps double precision, headroom double precision DEFAULT 0.3,
    survive_loss integer DEFAULT 1)
RETURNS TABLE (accelerator text, accelerator_count integer, pool text, model_version text,
               test_id bigint, capacity_qps double precision, at_least boolean,
               required_qps double precision, replicas bigint, accelerators bigint,
               cost_per_million_requests double precision, measured_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT p.accelerator, p.accelerator_count, p.pool, p.model_version, p.test_id,
         p.capacity_qps, p.at_least, p.required_qps, p.replicas, p.accelerators,
         (ap.price_per_hour::numeric * greatest(p.accelerator_count, 1)
          / (NULLIF(p.capacity_qps, 0)::numeric * 3600) * 1000000)::double precision,
         p.measured_at
  FROM vanguard_plan_unpriced(p_model, peak_qps, headroom, survive_loss) p
  LEFT JOIN accelerator_prices ap ON ap.accelerator = p.accelerator
  ORDER BY p.accelerator, p.accelerator_count, p.pool;
$$;

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON accelerator_prices TO vanguard_reader;
  END IF;
END
$$;
