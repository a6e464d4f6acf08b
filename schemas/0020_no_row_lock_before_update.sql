-- No row lock before a run's update (docs/performance.md, "WAL records per
-- run"): the same rules, checked after the write instead of before it.
--
-- For any BEFORE UPDATE row trigger, PostgreSQL fetches and locks the old
-- row (a heap LOCK record in the WAL, the page dirtied once more) before it
-- evaluates the triggers' WHEN conditions, so each of a run's three updates
-- (assign, start, finish) paid for a lock even when no trigger function
-- ran. AFTER triggers lock nothing. A rule that only raises is the same rule
-- AFTER the write: the statement, and the transaction, fail all the same,
-- and nothing of them is ever seen by anyone else.

-- The write guard (0001, 0015, 0018): unchanged, fired after the write.
DROP TRIGGER job_runs_guard ON job_runs;
CREATE TRIGGER job_runs_guard AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (
    -- a detach by a job's deletion is the database's own update (0015)
    NOT (OLD.job_definition_id IS NOT NULL AND NEW.job_definition_id IS NULL
         AND NEW.version = OLD.version AND NEW.state = OLD.state AND NEW.attempt = OLD.attempt
         AND NEW.leader_epoch = OLD.leader_epoch)
    AND (NEW.id = OLD.id
         AND NEW.version = OLD.version + 1
         AND CASE WHEN NEW.state = OLD.state
                  THEN OLD.state NOT IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')
                  ELSE baton_run_transition_allowed(OLD.state, NEW.state) END
         AND NEW.attempt >= OLD.attempt
         AND (NEW.attempt = OLD.attempt OR (NEW.state = 'ASSIGNED' AND OLD.state IN ('ORPHANED', 'RETRY_WAITING')))
         AND NEW.leader_epoch >= OLD.leader_epoch) IS NOT TRUE)
  EXECUTE FUNCTION baton_job_runs_guard();

-- Overlap control (0010, 0018). The BEFORE trigger changed the row in three
-- ways; each is now the writer's job, and the database refuses a write that
-- does not do it instead of doing it for the writer:
--
-- 1. A run that is not active (ASSIGNED or RUNNING) holds no instance
--    number and not the exclusive lock. Every statement that moves a run
--    out of ASSIGNED or RUNNING sets both NULL (store/pg/run_transitions.cpp);
--    a CHECK constraint refuses any row that keeps them.
-- 2. A run that stays active keeps what it holds (a limit changed while it
--    runs does not stop it): a write that changes them is refused.
-- 3. A run of an unlimited job, or of a job that is not exclusive, no longer
--    has a number or the lock taken from it as it becomes active: the
--    leader asks for neither for such a job (leader/core/overlap.cpp), and
--    if the job's settings changed between the leader's read and the write,
--    what the run holds is kept until it leaves ASSIGNED/RUNNING, as if the
--    write had come first (docs/scheduling.md, "Overlap").
--
-- The check of a run becoming active (a limited job's run holds a number
-- within the limit, an exclusive job's run holds the lock) runs once per
-- statement over its transition tables, instead of a PL/pgSQL call and a
-- read of job_definitions for every row of every assignment.
DROP TRIGGER job_runs_overlap ON job_runs;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_holds_only_while_active
  CHECK (state IN ('ASSIGNED', 'RUNNING') OR (instance_no IS NULL AND exclusive_lock IS NULL));

CREATE FUNCTION baton_job_runs_overlap_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad RECORD;
BEGIN
  -- Finishes, orphanings and cancels make nothing active.
  IF NOT EXISTS (SELECT 1 FROM new_rows WHERE state IN ('ASSIGNED', 'RUNNING')) THEN
    RETURN NULL;
  END IF;
  SELECT n.id, n.state, o.state AS old_state, j.name, baton_instance_limit(j) AS lim,
         j.exclusive_execution AS exclusive, n.instance_no, n.exclusive_lock
    INTO bad
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    LEFT JOIN job_definitions j ON j.id = n.job_definition_id
   WHERE n.state IN ('ASSIGNED', 'RUNNING')
     AND CASE WHEN o.state IN ('ASSIGNED', 'RUNNING')
              THEN n.instance_no IS DISTINCT FROM o.instance_no OR n.exclusive_lock IS DISTINCT FROM o.exclusive_lock
              ELSE j.id IS NOT NULL
                   AND ((baton_instance_limit(j) IS NOT NULL
                         AND (n.instance_no IS NULL OR n.instance_no > baton_instance_limit(j)))
                        OR (j.exclusive_execution AND n.exclusive_lock IS NOT TRUE)) END
   ORDER BY n.id
   LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF bad.old_state IN ('ASSIGNED', 'RUNNING') THEN
    RAISE EXCEPTION 'run % must keep its instance number and exclusive lock while ASSIGNED or RUNNING (% -> %)',
      bad.id, bad.old_state, bad.state USING ERRCODE = 'check_violation';
  END IF;
  IF bad.lim IS NOT NULL AND (bad.instance_no IS NULL OR bad.instance_no > bad.lim) THEN
    RAISE EXCEPTION 'run % of job % must hold an instance number from 1 to % to become %',
      bad.id, bad.name, bad.lim, bad.state USING ERRCODE = 'check_violation';
  END IF;
  RAISE EXCEPTION 'run % of exclusive job % must hold the exclusive lock to become %',
    bad.id, bad.name, bad.state USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER job_runs_overlap AFTER UPDATE ON job_runs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION baton_job_runs_overlap_check();
