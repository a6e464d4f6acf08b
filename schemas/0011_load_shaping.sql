-- Load shaping (docs/scheduling.md, "Load shaping"): a cron run with a
-- jitter keeps its slot (scheduled_for, the key that makes a slot run once)
-- and is not started before start_after = slot + the job's jitter for that
-- slot.
ALTER TABLE job_runs ADD COLUMN start_after TIMESTAMPTZ;
ALTER TABLE job_definitions DROP CONSTRAINT job_definitions_jitter_ms_check;
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_jitter_ms_check
  CHECK (jitter_ms BETWEEN 0 AND 3600000);
