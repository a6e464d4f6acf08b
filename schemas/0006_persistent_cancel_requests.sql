-- An operator's cancel of a RUNNING run is a request: the worker kills the
-- attempt and its finish decides (CANCELED, or SUCCEEDED if it had already
-- succeeded), or the attempt ends CANCELED at its continuation deadline if
-- the worker never returns. The request used to live in the leader's
-- memory only, so a leader change before the worker reported lost it and
-- the run went on. It is now a fenced write on the run itself (a RUNNING ->
-- RUNNING transition with a new version, like adopt), so every later
-- leader reads it with the active runs and carries it out.
ALTER TABLE job_runs
  ADD COLUMN cancel_requested_at TIMESTAMPTZ,
  ADD COLUMN cancel_reason TEXT;
