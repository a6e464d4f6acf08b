-- Every write to a run is in its history, not only state, continuation,
-- epoch and attempt changes: heartbeats, result, error, lease token and
-- worker changes bump the version too, and a history that skipped them
-- could not show that each write's from_version is the previous write's
-- to_version (a write that bypassed the log would leave a gap no one could
-- see). The chaos checker checks that chain (docs/chaos.md).
CREATE OR REPLACE FUNCTION baton_job_runs_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state)
  SELECT n.id, o.state, n.state, o.version, n.version, n.attempt, n.leader_epoch, n.continuation_state
  FROM new_rows n JOIN old_rows o ON o.id = n.id
  ORDER BY n.id;
  RETURN NULL;
END $$;
