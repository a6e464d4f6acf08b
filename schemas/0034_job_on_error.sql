-- A job's own on_error (seed 002's chain-level on_error; docs/scheduling.md,
-- "When a run fails for good"): the name of a job of which one run is
-- created, in the statement that ends a run of this job FAILED or
-- TIMED_OUT for good, with what failed as its parameters. The column was
-- created by 0001 and never used; a value it may hold from then names a job
-- like any other.
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_on_error_check
  CHECK (on_error IS NULL OR length(on_error) BETWEEN 1 AND 200);
ALTER TABLE job_runs DROP CONSTRAINT job_runs_trigger_kind_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_trigger_kind_check
  CHECK (trigger_kind IN ('cron', 'api', 'event', 'retry', 'system', 'rerun', 'replay', 'on_error'));
