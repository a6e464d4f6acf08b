-- A run's own timeout (docs/clients.md, "What a trigger may say"): set by
-- its trigger (the API's, its batch, baton.trigger), at most its job's
-- timeout (baton_trigger_options_refused, schemas/0036). NULL: the job's.
-- The assignment carries it to the worker and the leader enforces it after
-- a failover, as it does the job's.
ALTER TABLE job_runs ADD COLUMN timeout_ms BIGINT CHECK (timeout_ms IS NULL OR timeout_ms > 0);
