-- No statement trigger with transition tables on job_runs (docs/performance.md,
-- "No transition tables").
--
-- Two AFTER UPDATE statement triggers (overlap control's check, 0020; what
-- a success sets off, 0018) read the statement's transition tables. For
-- those, PostgreSQL copies every row every UPDATE of job_runs writes, its
-- old and its new version, into two tuple stores, whatever the statement:
-- an assignment, a start, a finish, a heartbeat. Measured in the
-- throughput phase: 12 µs of the database's time per run for the finish,
-- 16 in all. Each rule now lives where it costs what it must:
--
-- * A run that stays ASSIGNED or RUNNING keeps what it holds: a row trigger
--   whose WHEN the executor evaluates (no call unless a write breaks it).
-- * A run becoming ASSIGNED holds what its job requires (an instance number
--   within max_instances, the exclusive lock): checked by the statements
--   that assign (store/pg/run_transitions.cpp: every statement that writes
--   a run is there), in the same statement, over the rows it wrote, with
--   baton_refuse_activation raising the error the trigger raised. The
--   unique indexes on the holds are unchanged: two holders of one number or
--   of the lock are refused by the database whoever writes.
-- * A success's event (`job.succeeded:<job>` when some job runs after it)
--   and the retirement of a self-destructing job: written by the
--   statements that end a run SUCCEEDED, in the same statement.

DROP TRIGGER job_runs_overlap ON job_runs;
DROP FUNCTION baton_job_runs_overlap_check();
DROP TRIGGER job_runs_succeeded ON job_runs;
DROP FUNCTION baton_job_runs_succeeded();

CREATE FUNCTION baton_job_runs_holds_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run % must keep its instance number and exclusive lock while ASSIGNED or RUNNING (% -> %)',
    NEW.id, OLD.state, NEW.state USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER job_runs_holds_kept AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (OLD.state IN ('ASSIGNED', 'RUNNING') AND NEW.state IN ('ASSIGNED', 'RUNNING')
                     AND (NEW.instance_no IS DISTINCT FROM OLD.instance_no
                          OR NEW.exclusive_lock IS DISTINCT FROM OLD.exclusive_lock))
  EXECUTE FUNCTION baton_job_runs_holds_changed();

-- Raised by an assigning statement for the first run it wrote that does not
-- hold what its job requires (the statement, and its transaction, fail):
-- an instance number within the job's limit `lim`, or else the exclusive
-- lock.
CREATE FUNCTION baton_refuse_activation(run bigint, job text, lim int, instance_no int, state text) RETURNS int
  LANGUAGE plpgsql AS $$
BEGIN
  IF lim IS NOT NULL AND (instance_no IS NULL OR instance_no > lim) THEN
    RAISE EXCEPTION 'run % of job % must hold an instance number from 1 to % to become %', run, job, lim, state
      USING ERRCODE = 'check_violation';
  END IF;
  RAISE EXCEPTION 'run % of exclusive job % must hold the exclusive lock to become %', run, job, state
    USING ERRCODE = 'check_violation';
END $$;
