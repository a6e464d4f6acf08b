-- Indexes that match the dispatcher's query exactly (store/pg/pg_leader_store.cpp,
-- due_runs): one slice per dispatchable state, each read in dispatch order
-- and cut by LIMIT, so finding the next runs costs the same with 20 or
-- 2,000,000 rows in job_runs. The order is priority, then the time the run
-- became due (its slot for cron runs, its creation for API runs), then id.
CREATE INDEX job_runs_dispatch_pending_idx
  ON job_runs (priority DESC, (coalesce(scheduled_for, created_at)), id)
  WHERE state = 'PENDING';
CREATE INDEX job_runs_dispatch_retry_idx
  ON job_runs (priority DESC, next_attempt_at, id)
  WHERE state = 'RETRY_WAITING';
CREATE INDEX job_runs_dispatch_orphaned_idx
  ON job_runs (priority DESC, id)
  WHERE state = 'ORPHANED';

-- Superseded by the two above: every index on job_runs is written on each
-- state change (three per run), so one that no query uses is pure cost.
DROP INDEX job_runs_due_pending_idx;
DROP INDEX job_runs_due_retry_idx;

-- The transition log, once per statement instead of once per row: a batched
-- write of 100 runs runs one INSERT ... SELECT over the statement's
-- transition tables rather than 100 trigger calls each running an INSERT.
-- Same rows, same columns (xid and clock_timestamp() are per transaction and
-- per row as before); the per-row guard trigger is unchanged.
DROP TRIGGER job_runs_log ON job_runs;
DROP FUNCTION baton_job_runs_log();
CREATE FUNCTION baton_job_runs_log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state)
  SELECT n.id, NULL, n.state, NULL, n.version, n.attempt, n.leader_epoch, n.continuation_state
  FROM new_rows n ORDER BY n.id;
  RETURN NULL;
END $$;
CREATE FUNCTION baton_job_runs_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state)
  SELECT n.id, o.state, n.state, o.version, n.version, n.attempt, n.leader_epoch, n.continuation_state
  FROM new_rows n JOIN old_rows o ON o.id = n.id
  WHERE n.state <> o.state OR n.continuation_state <> o.continuation_state
     OR n.leader_epoch <> o.leader_epoch OR n.attempt <> o.attempt
  ORDER BY n.id;
  RETURN NULL;
END $$;
CREATE TRIGGER job_runs_log_insert AFTER INSERT ON job_runs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION baton_job_runs_log_insert();
CREATE TRIGGER job_runs_log_update AFTER UPDATE ON job_runs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION baton_job_runs_log_update();
