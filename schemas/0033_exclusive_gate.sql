-- exclusive_execution as pg_timetable means it (docs/scheduling.md,
-- "Exclusive execution"): while a run of an exclusive job is active
-- (ASSIGNED or RUNNING) no other run is, and it becomes active only when no
-- other run is. The narrower rule it used to name, no two runs of such jobs
-- at once (schemas/0010, the exclusive lock), is kept as
-- `mutually_exclusive`, and every job that had it keeps it.
ALTER TABLE job_definitions ADD COLUMN mutually_exclusive BOOLEAN NOT NULL DEFAULT false;
UPDATE job_definitions SET mutually_exclusive = exclusive_execution, exclusive_execution = false
 WHERE exclusive_execution;

-- The gate. While some live job is exclusive, every run made active takes
-- a gate: an exclusive job's run the whole line, any other run the point of
-- its own id. The exclusion constraint refuses two gates that overlap,
-- whoever writes them: an exclusive run beside any gated run, and any run
-- beside an exclusive one. A point never overlaps another point, so other
-- runs never stand in each other's way. Like the instance number, the gate
-- is given back (set NULL) by every statement that moves a run out of
-- ASSIGNED or RUNNING, and kept unchanged while it stays there.
--
-- While no job is exclusive nothing takes a gate, so the run table's writes
-- stay what they were (a gate is a column of the partial index below: a run
-- written with one is not a HOT update, docs/performance.md).
ALTER TABLE job_runs ADD COLUMN gate int8range;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_gate_exclusive
  EXCLUDE USING gist (gate WITH &&) WHERE (gate IS NOT NULL);
ALTER TABLE job_runs DROP CONSTRAINT job_runs_holds_only_while_active;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_holds_only_while_active
  CHECK (state IN ('ASSIGNED', 'RUNNING') OR (instance_no IS NULL AND exclusive_lock IS NULL AND gate IS NULL));

DROP TRIGGER job_runs_holds_kept ON job_runs;
CREATE OR REPLACE FUNCTION baton_job_runs_holds_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run % must keep its instance number, exclusive lock and gate while ASSIGNED or RUNNING (% -> %)',
    NEW.id, OLD.state, NEW.state USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER job_runs_holds_kept AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (OLD.state IN ('ASSIGNED', 'RUNNING') AND NEW.state IN ('ASSIGNED', 'RUNNING')
                     AND (NEW.instance_no IS DISTINCT FROM OLD.instance_no
                          OR NEW.exclusive_lock IS DISTINCT FROM OLD.exclusive_lock
                          OR NEW.gate IS DISTINCT FROM OLD.gate))
  EXECUTE FUNCTION baton_job_runs_holds_changed();

-- The live exclusive jobs, read once per assigning statement.
CREATE INDEX job_definitions_exclusive_idx ON job_definitions (id) WHERE exclusive_execution AND deleted_at IS NULL;

-- The runs made active before a job became exclusive hold no gate. An
-- exclusive run's assignment is refused while any other run is active
-- without one (store/pg/run_transitions.cpp), and so that no assignment it
-- cannot see yet escapes that check, a job becomes exclusive only once every
-- write of the run table under way has committed: its write takes a SHARE
-- lock on job_runs (which waits for them, and holds back the next ones
-- until it commits; each of those then reads the job as exclusive and takes
-- a gate). Whoever writes the job: ctl apply, the API, or SQL.
CREATE FUNCTION baton_job_becomes_exclusive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE job_runs IN SHARE MODE;
  RETURN NEW;
END $$;
CREATE TRIGGER job_definitions_exclusive BEFORE INSERT OR UPDATE OF exclusive_execution, deleted_at
  ON job_definitions FOR EACH ROW WHEN (NEW.exclusive_execution AND NEW.deleted_at IS NULL)
  EXECUTE FUNCTION baton_job_becomes_exclusive();

-- Raised by an assigning statement for the first run it wrote that does not
-- hold what its job requires (0023), now with the gate: an instance number
-- within the job's limit `lim`, the exclusive lock of a mutually exclusive
-- job, or, for an exclusive job, no other run active without a gate.
DROP FUNCTION baton_refuse_activation(bigint, text, int, int, text);
CREATE FUNCTION baton_refuse_activation(run bigint, job text, lim int, instance_no int, state text,
                                        ungated bigint) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF lim IS NOT NULL AND (instance_no IS NULL OR instance_no > lim) THEN
    RAISE EXCEPTION 'run % of job % must hold an instance number from 1 to % to become %', run, job, lim, state
      USING ERRCODE = 'check_violation';
  END IF;
  IF ungated IS NOT NULL THEN
    RAISE EXCEPTION 'run % of exclusive job % cannot become % while run % is active (exclusive_execution)',
      run, job, state, ungated USING ERRCODE = 'exclusion_violation';
  END IF;
  RAISE EXCEPTION 'run % of mutually exclusive job % must hold the exclusive lock to become %', run, job, state
    USING ERRCODE = 'check_violation';
END $$;
