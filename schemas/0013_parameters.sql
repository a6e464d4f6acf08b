-- Parameters (docs/scheduling.md, "Parameters"): a job's defaults and a
-- run's payload are bounded, like a run's result.
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_parameters_small
  CHECK (jsonb_typeof(parameters) = 'object' AND pg_column_size(parameters) <= 65536);
ALTER TABLE job_runs ADD CONSTRAINT job_runs_payload_small CHECK (pg_column_size(payload) <= 131072);
