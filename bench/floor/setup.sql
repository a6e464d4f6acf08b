-- The floor: what the spec's run table costs the database with nothing of
-- Baton around it (docs/performance.md, "The floor"). Three copies of the
-- run tables, without triggers, foreign keys or the lease fence:
--   floor_spec      job_runs' columns and checks, only the indexes SPEC
--                   section 2 asks for
--   floor_all       job_runs with every index it has today
--   floor_hot       job_runs' columns with a primary key and (created_at)
--                   only: no index names a column a transition changes, so
--                   the updates can be HOT (what a spec without `state` in
--                   its required indexes would allow)
--   floor_log,      the transition log and the attempt rows, with their
--   floor_attempts  primary keys
DROP TABLE IF EXISTS floor_spec, floor_all, floor_hot, floor_log, floor_attempts;
DROP SEQUENCE IF EXISTS floor_batch;
CREATE SEQUENCE floor_batch;
CREATE TABLE floor_spec (LIKE job_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 70);
ALTER TABLE floor_spec ADD PRIMARY KEY (id);
CREATE INDEX ON floor_spec (state, scheduled_for);
CREATE INDEX ON floor_spec (assigned_worker_id, state);
CREATE INDEX ON floor_spec (created_at);
CREATE INDEX ON floor_spec (stale_after) WHERE state = 'RUNNING';
CREATE INDEX ON floor_spec (next_attempt_at) WHERE state = 'RETRY_WAITING';
CREATE UNIQUE INDEX ON floor_spec (job_definition_id, scheduled_for) WHERE scheduled_for IS NOT NULL;
CREATE UNIQUE INDEX ON floor_spec (idempotency_key) WHERE idempotency_key IS NOT NULL
  AND state IN ('PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED');
CREATE TABLE floor_all (LIKE job_runs INCLUDING ALL) WITH (fillfactor = 70);
CREATE TABLE floor_hot (LIKE job_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 70);
ALTER TABLE floor_hot ADD PRIMARY KEY (id);
CREATE INDEX ON floor_hot (created_at);
CREATE TABLE floor_log (LIKE job_run_transitions INCLUDING ALL);
CREATE TABLE floor_attempts (LIKE job_run_attempts INCLUDING ALL);
