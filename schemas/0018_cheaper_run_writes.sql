-- Cheaper writes of a run (docs/performance.md, "Cheaper rows"): the same
-- rules, checked by the executor instead of a PL/pgSQL call per row.
--
-- Every state change of a run fired up to four row triggers, each a
-- PL/pgSQL call, on every row of every batched write. A trigger's WHEN
-- condition is evaluated by the executor itself; a function named there is
-- called only when the condition holds. So each rule below is written as
-- "fire when something is wrong (or must be changed)", and the function that
-- raises or changes it runs only then.

-- The write guard (0001, 0015): the function is unchanged and still raises
-- the error that names the rule; it is now called only for a write that
-- breaks one. `IS NOT TRUE`: a condition that is NULL fires as well.
DROP TRIGGER job_runs_guard ON job_runs;
CREATE TRIGGER job_runs_guard BEFORE UPDATE ON job_runs
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

-- Overlap control (0010): the function changes or refuses something only
-- when a run becomes active (it checks the job's limit and the holds), when
-- a run that is not active still holds an instance number or the exclusive
-- lock (released), or when an active run's holds would change (kept). A
-- start (ASSIGNED -> RUNNING) and a finish of a run without holds are none
-- of these.
DROP TRIGGER job_runs_overlap ON job_runs;
CREATE TRIGGER job_runs_overlap BEFORE UPDATE OF state ON job_runs
  FOR EACH ROW WHEN (
    (NEW.state IN ('ASSIGNED', 'RUNNING') AND OLD.state NOT IN ('ASSIGNED', 'RUNNING'))
    OR (NEW.state NOT IN ('ASSIGNED', 'RUNNING') AND (NEW.instance_no IS NOT NULL OR NEW.exclusive_lock IS NOT NULL))
    OR (NEW.state IN ('ASSIGNED', 'RUNNING')
        AND (NEW.instance_no IS DISTINCT FROM OLD.instance_no OR NEW.exclusive_lock IS DISTINCT FROM OLD.exclusive_lock)))
  EXECUTE FUNCTION baton_job_runs_overlap();
CREATE TRIGGER job_runs_overlap_insert BEFORE INSERT ON job_runs
  FOR EACH ROW WHEN (NEW.state IN ('ASSIGNED', 'RUNNING') OR NEW.instance_no IS NOT NULL OR NEW.exclusive_lock IS NOT NULL)
  EXECUTE FUNCTION baton_job_runs_overlap();

-- What a success sets off (0012: the event `job.succeeded:<job>` when some
-- job runs after it; 0014: a self-destructing job retired by its first
-- success), once per statement over its transition tables instead of two
-- PL/pgSQL calls per successful row. Same transaction, same rows: one event
-- per successful run (deduplicated by run), and a job retired once, by the
-- first of its runs to succeed (the smallest id when several succeed in one
-- statement), with one audit record.
DROP TRIGGER job_runs_succeeded_event ON job_runs;
DROP TRIGGER job_runs_self_destruct ON job_runs;
DROP FUNCTION baton_run_succeeded_event();
DROP FUNCTION baton_job_self_destruct();
CREATE FUNCTION baton_job_runs_succeeded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Most statements (assignments, starts, heartbeats) have no success.
  IF NOT EXISTS (SELECT 1 FROM new_rows WHERE state = 'SUCCEEDED' AND job_definition_id IS NOT NULL) THEN
    RETURN NULL;
  END IF;
  WITH succeeded AS (
    SELECT n.id, n.job_definition_id, n.leader_epoch
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.state = 'SUCCEEDED' AND o.state IS DISTINCT FROM 'SUCCEEDED' AND n.job_definition_id IS NOT NULL),
  events_made AS (
    INSERT INTO events (kind, payload, dedupe_key, created_by)
    SELECT 'job.succeeded:' || j.name, jsonb_build_object('run_id', s.id, 'job', j.name),
           'run-succeeded:' || s.id, 'run ' || s.id
    FROM succeeded s JOIN job_definitions j ON j.id = s.job_definition_id
    WHERE EXISTS (SELECT 1 FROM job_definitions d WHERE d.run_after @> ARRAY[j.name] AND d.deleted_at IS NULL)
    ORDER BY s.id
    ON CONFLICT (dedupe_key) DO NOTHING),
  first_success AS (
    SELECT DISTINCT ON (job_definition_id) job_definition_id, id, leader_epoch
    FROM succeeded ORDER BY job_definition_id, id),
  retired AS (
    UPDATE job_definitions d SET deleted_at = now(), updated_at = now(), version = d.version + 1
    FROM first_success f
    WHERE d.id = f.job_definition_id AND d.self_destruct AND d.deleted_at IS NULL
    RETURNING d.name, f.id AS run_id, f.leader_epoch)
  INSERT INTO audit_log (actor, action, subject, epoch, details)
  SELECT 'system', 'job.self_destruct', 'job:' || name, leader_epoch, jsonb_build_object('run_id', run_id)
  FROM retired;
  RETURN NULL;
END $$;
CREATE TRIGGER job_runs_succeeded AFTER UPDATE ON job_runs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION baton_job_runs_succeeded();

-- UNIQUE (job_definition_id, scheduled_for) is the key of time-triggered
-- runs (SPEC section 2); a run without a slot (API, event, retry) can never
-- conflict on it (NULLs are distinct), yet every write of every run added
-- an entry to it. As a partial unique index it holds the slotted runs only,
-- and `ON CONFLICT DO NOTHING` (no target) still honours it.
CREATE UNIQUE INDEX job_runs_slot_idx ON job_runs (job_definition_id, scheduled_for)
  WHERE scheduled_for IS NOT NULL;
ALTER TABLE job_runs DROP CONSTRAINT job_runs_slot_unique;
