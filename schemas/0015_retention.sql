-- Retention (docs/scheduling.md, "Retention"): old finished runs and their
-- history can be pruned, and a job can be hard-deleted.

-- Deleting a job detaches its runs (job_definition_id SET NULL). That update
-- is the database's own, not a write of the run: it keeps the version and
-- is not logged, so the write guard lets exactly that through.
DROP TRIGGER job_runs_guard ON job_runs;
CREATE TRIGGER job_runs_guard_insert BEFORE INSERT ON job_runs
  FOR EACH ROW EXECUTE FUNCTION baton_job_runs_guard();
CREATE TRIGGER job_runs_guard BEFORE UPDATE ON job_runs
  FOR EACH ROW WHEN (NOT (OLD.job_definition_id IS NOT NULL AND NEW.job_definition_id IS NULL
                          AND NEW.version = OLD.version AND NEW.state = OLD.state AND NEW.attempt = OLD.attempt
                          AND NEW.leader_epoch = OLD.leader_epoch))
  EXECUTE FUNCTION baton_job_runs_guard();

CREATE OR REPLACE FUNCTION baton_job_runs_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch,
                                   continuation_state, continuation_timeout_ms)
  SELECT n.id, o.state, n.state, o.version, n.version, n.attempt, n.leader_epoch, n.continuation_state,
         n.continuation_timeout_ms
  FROM new_rows n JOIN old_rows o ON o.id = n.id
  WHERE n.version <> o.version  -- a detach by a job's deletion is not a write of the run
  ORDER BY n.id;
  RETURN NULL;
END $$;

-- Pruning finds old ledger entries and processed events by time (finished
-- runs by job_runs_finished_idx).
CREATE INDEX decision_ledger_at_idx ON decision_ledger (at);
CREATE INDEX events_processed_idx ON events (processed_at) WHERE processed_at IS NOT NULL;

-- How long finished runs, their history, ledger entries, processed events
-- and triaged dead letters are kept; a live setting (the leader reads it
-- every pruning pass).
INSERT INTO settings (key, value, updated_by) VALUES ('retention_days', '30', 'migration 0015')
  ON CONFLICT (key) DO NOTHING;
