-- A late success: an attempt the leader declared lost (its worker was gone
-- past the continuation deadline, or it was not listed) whose process in
-- fact ended successfully, and whose finish arrives while the run still
-- waits to retry that same attempt (RETRY_WAITING, same attempt, worker and
-- lease token: nothing has run since). Recording it SUCCEEDED instead of
-- acknowledging it without a write keeps the success and prevents the
-- retry from executing the work a second time. The transition is forward
-- (to a final state) and fenced like every other (docs/fencing.md).
CREATE OR REPLACE FUNCTION baton_run_transition_allowed(from_state TEXT, to_state TEXT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE from_state
    WHEN 'PENDING'       THEN to_state IN ('ASSIGNED', 'CANCELED')
    WHEN 'ASSIGNED'      THEN to_state IN ('RUNNING', 'ORPHANED', 'CANCELED')
    WHEN 'ORPHANED'      THEN to_state IN ('ASSIGNED', 'FAILED', 'CANCELED')
    WHEN 'RUNNING'       THEN to_state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'RETRY_WAITING', 'CANCELED')
    WHEN 'RETRY_WAITING' THEN to_state IN ('ASSIGNED', 'SUCCEEDED', 'CANCELED')
    ELSE false
  END
$$;
