-- Vanguard schema, version 8: each step window kept whole, so GetTest returns it as reported.
--
-- The columns of step_windows hold what dashboards and views query (rates, p50..max,
-- counts, p99 of TTFT and inter-token, gauges, health); detail holds the whole StepWindow
-- (protobuf JSON mapping, .proto field names) so that GetTest gives the window back as the
-- worker reported it (sent, p999 and mean, every TTFT and inter-token percentile). NULL for
-- windows stored before this migration: GetTest rebuilds those from the columns. Written by
-- ReportStep with the columns; not indexed.
ALTER TABLE step_windows ADD COLUMN IF NOT EXISTS detail jsonb;
