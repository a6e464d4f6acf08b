-- Two corrections to the run lifecycle (docs/fencing.md, "Attempts" and
-- "The continuation deadline").
--
-- 1. An assignment that never started is not an attempt. ORPHANED is only
--    ever reached from ASSIGNED (no process ran), so the reassignment from
--    ORPHANED keeps the attempt number and rotates the lease token; the
--    token alone fences the abandoned grant. `max_attempts` therefore counts
--    executions, and a run with the default of 1 is no longer failed because
--    its worker vanished before starting it. Runs that are orphaned again
--    and again (a worker that dies on every assignment) are bounded by their
--    own budget, counted here and compared by the leader.
-- 2. The worker process that started the attempt (its `instance`, sent in
--    hello) is kept with the run, so that a new leader knows which process
--    may speak for the attempt: a second process using the same worker id
--    cannot make it look lost by attaching first (docs/protocol.md).
-- 3. The continuation timeout a worker applies to an attempt is the one the
--    assigning leader sent with that attempt; it is kept in the run so that
--    every later leader measures the same deadline, whatever its own
--    configuration says (a rolling change of continuation_timeout must never
--    let a new leader retry before the worker's own deadline has passed).
ALTER TABLE job_runs
  ADD COLUMN unstarted_assignments INTEGER NOT NULL DEFAULT 0
    CONSTRAINT job_runs_unstarted_chk CHECK (unstarted_assignments >= 0),
  ADD COLUMN continuation_timeout_ms BIGINT
    CONSTRAINT job_runs_continuation_timeout_chk CHECK (continuation_timeout_ms IS NULL OR continuation_timeout_ms > 0),
  ADD COLUMN worker_instance TEXT;

ALTER TABLE job_run_transitions ADD COLUMN continuation_timeout_ms BIGINT;

CREATE OR REPLACE FUNCTION baton_job_runs_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch,
                                   continuation_state, continuation_timeout_ms)
  SELECT n.id, o.state, n.state, o.version, n.version, n.attempt, n.leader_epoch, n.continuation_state,
         n.continuation_timeout_ms
  FROM new_rows n JOIN old_rows o ON o.id = n.id
  ORDER BY n.id;
  RETURN NULL;
END $$;

-- A run that can never be dispatched (its definition no longer decodes) is
-- failed from where it waits, with a dead letter, instead of blocking the
-- runs queued behind it.
CREATE OR REPLACE FUNCTION baton_run_transition_allowed(from_state TEXT, to_state TEXT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE from_state
    WHEN 'PENDING'       THEN to_state IN ('ASSIGNED', 'FAILED', 'CANCELED')
    WHEN 'ASSIGNED'      THEN to_state IN ('RUNNING', 'ORPHANED', 'CANCELED')
    WHEN 'ORPHANED'      THEN to_state IN ('ASSIGNED', 'FAILED', 'CANCELED')
    WHEN 'RUNNING'       THEN to_state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'RETRY_WAITING', 'CANCELED')
    WHEN 'RETRY_WAITING' THEN to_state IN ('ASSIGNED', 'SUCCEEDED', 'FAILED', 'CANCELED')
    ELSE false
  END
$$;
