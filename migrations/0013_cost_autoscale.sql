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

-- Replica sizing, now with cost (see above; otherwise as in version 10).
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
           (SELECT ap.price_per_hour FROM accelerator_prices ap
             WHERE ap.accelerator = v.accelerator) AS price_per_hour,
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
         (ms.price_per_hour::numeric * greatest(ms.accelerator_count, 1)
          / (NULLIF(ms.max_sustainable_qps, 0)::numeric * 3600) * 1000000)::double precision,
         ms.recorded_at
  FROM measured ms
  ORDER BY ms.accelerator, ms.accelerator_count, ms.pool;
END
$$;

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON accelerator_prices TO vanguard_reader;
  END IF;
END
$$;
