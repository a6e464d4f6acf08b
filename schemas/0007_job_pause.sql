-- An operator's pause of a job (POST /api/v1/jobs/{name}/pause) is its own
-- column, apart from `live` (the job file's switch): a node that upserts its
-- job files at start must not resume a job an operator paused. A paused
-- job's schedule creates no runs; manual triggers still do; runs already
-- created go on.
ALTER TABLE job_definitions ADD COLUMN paused BOOLEAN NOT NULL DEFAULT false;
