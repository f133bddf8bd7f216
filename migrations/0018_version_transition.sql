-- Vanguard schema, version 18: version-transition results leave the capacity views (issue 22).
--
-- A version-transition test (the version-transition strategy, worker/
-- version_transition_strategy.h) stores results.detail -> 'version_transition' with the rate at
-- which a rolling update of the model's replicas kept the SLO. That is not the model's capacity:
-- its max_sustainable_qps is 0, and, like replica-loss and autoscale tests, it is left out of
-- capacity_results and capacity_intervals (and so of the baselines, verdicts, trend and plan
-- built on them). capacity_conditions needs no change: it takes only tests with a positive
-- max_sustainable_qps or a replica_loss detail.

-- Version 17's views, without version-transition tests (same columns).
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
  AND NOT (r.detail ? 'version_transition')
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
  AND NOT (r.detail ? 'version_transition')
  AND vanguard_capacity_condition(t.spec) = 'CAPACITY_CONDITION_UNSPECIFIED';
