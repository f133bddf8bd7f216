-- Vanguard schema, version 16: cost per million output tokens at the SLO (issue 23).
--
-- Each step's detail (vanguard.v1.Step) now carries output_chunks: the content chunks the
-- measured part's completed responses streamed (one output token each from a server that
-- streams a token per event, as vLLM and TGI do). A capacity test's output length is the sum
-- of its steps' chunks over the sum of their completed requests, and with it:
--   output tokens per second at the SLO = capacity_qps * output_tokens_per_request
--   cost_per_million_output_tokens      = price_per_hour * max(accelerator_count, 1) * 1e6
--                                         / (capacity_qps * 3600 * output_tokens_per_request)
--                                       = cost_per_million_requests / output_tokens_per_request
-- NULL when the test's steps recorded no chunks (not a streaming protocol, or steps stored
-- before this), or when the hardware has no price. docs/planning.md section 4.

-- Output length per completed request of every test whose steps recorded chunks. Steps
-- interrupted by a worker's shutdown are left out, as they are from every estimate.
CREATE OR REPLACE VIEW capacity_output_tokens AS
SELECT s.test_id,
       sum(coalesce((s.detail ->> 'output_chunks')::bigint, 0))::bigint AS output_chunks,
       sum(s.completed)::bigint AS completed,
       (sum(coalesce((s.detail ->> 'output_chunks')::bigint, 0))::numeric
        / NULLIF(sum(s.completed), 0))::double precision AS output_tokens_per_request
FROM steps s
WHERE NOT coalesce((s.detail ->> 'interrupted')::boolean, false)
GROUP BY s.test_id
HAVING sum(coalesce((s.detail ->> 'output_chunks')::bigint, 0)) > 0;

-- vanguard_plan of migration 0013 with two more columns. Its return type changes, so it is
-- dropped and created (0010 drops it too before creating its own, so applying every
-- migration again still works).
DROP FUNCTION IF EXISTS vanguard_plan(text, double precision, double precision, integer);
CREATE FUNCTION vanguard_plan(
    p_model text, peak_qps double precision, headroom double precision DEFAULT 0.3,
    survive_loss integer DEFAULT 1)
RETURNS TABLE (accelerator text, accelerator_count integer, pool text, model_version text,
               test_id bigint, capacity_qps double precision, at_least boolean,
               required_qps double precision, replicas bigint, accelerators bigint,
               cost_per_million_requests double precision, measured_at timestamptz,
               output_tokens_per_request double precision,
               cost_per_million_output_tokens double precision)
LANGUAGE sql STABLE AS $$
  SELECT p.accelerator, p.accelerator_count, p.pool, p.model_version, p.test_id,
         p.capacity_qps, p.at_least, p.required_qps, p.replicas, p.accelerators,
         (ap.price_per_hour::numeric * greatest(p.accelerator_count, 1) * 1000000
          / (NULLIF(p.capacity_qps, 0)::numeric * 3600))::double precision,
         p.measured_at,
         tok.output_tokens_per_request,
         (ap.price_per_hour::numeric * greatest(p.accelerator_count, 1) * 1000000
          / (NULLIF(p.capacity_qps, 0)::numeric * 3600
             * tok.output_tokens_per_request::numeric))::double precision
  FROM vanguard_plan_unpriced(p_model, peak_qps, headroom, survive_loss) p
  LEFT JOIN accelerator_prices ap ON ap.accelerator = p.accelerator
  LEFT JOIN capacity_output_tokens tok ON tok.test_id = p.test_id
  ORDER BY p.accelerator, p.accelerator_count, p.pool;
$$;

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'vanguard_reader') THEN
    GRANT SELECT ON capacity_output_tokens TO vanguard_reader;
  END IF;
END
$$;
