-- Overlap control (docs/scheduling.md, "Overlap"): how many runs of a job
-- may be active (ASSIGNED or RUNNING) at once, and exclusive jobs, enforced
-- by the database rather than by the leader's memory.
--
-- An active run of a limited job holds an instance number, 1..limit, unique
-- per job; an active run of an exclusive job holds the one exclusive lock,
-- unique across all jobs. The leader picks free numbers when it assigns; the
-- unique indexes make a second holder impossible whatever any leader
-- believes, and the trigger below refuses to make a run of a limited or
-- exclusive job active without holding them. Both are released (set NULL)
-- by the same trigger whenever a run leaves ASSIGNED/RUNNING.

-- max_instances was stored and never enforced (default 1, which nothing
-- applied); NULL now means "no limit", the behaviour every job had.
ALTER TABLE job_definitions DROP CONSTRAINT job_definitions_max_instances_check;
ALTER TABLE job_definitions ALTER COLUMN max_instances DROP NOT NULL;
ALTER TABLE job_definitions ALTER COLUMN max_instances SET DEFAULT NULL;
UPDATE job_definitions SET max_instances = NULL;
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_max_instances_check
  CHECK (max_instances IS NULL OR max_instances BETWEEN 1 AND 10000);
-- forbid: a cron slot is skipped while a run of the job is unfinished;
-- replace: the unfinished runs are canceled and the new one waits for them.
-- Both allow one active run at a time.
ALTER TABLE job_definitions DROP CONSTRAINT job_definitions_concurrency_policy_check;
ALTER TABLE job_definitions ADD CONSTRAINT job_definitions_concurrency_policy_check
  CHECK (concurrency_policy IN ('allow', 'forbid', 'replace'));

ALTER TABLE job_runs ADD COLUMN instance_no INTEGER CHECK (instance_no IS NULL OR instance_no >= 1);
ALTER TABLE job_runs ADD COLUMN exclusive_lock BOOLEAN CHECK (exclusive_lock IS NULL OR exclusive_lock);
CREATE UNIQUE INDEX job_runs_instance_idx ON job_runs (job_definition_id, instance_no)
  WHERE instance_no IS NOT NULL;
CREATE UNIQUE INDEX job_runs_exclusive_idx ON job_runs (exclusive_lock) WHERE exclusive_lock;
-- A job's unfinished runs, read when a cron slot of a forbid or replace job
-- is created: without it that read walks every run the job ever had.
CREATE INDEX job_runs_unfinished_job_idx ON job_runs (job_definition_id)
  WHERE state IN ('PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED');

-- The limit a job's active runs are held to: max_instances, and 1 under
-- forbid and replace. NULL: no limit.
CREATE FUNCTION baton_instance_limit(j job_definitions) RETURNS INTEGER LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN j.concurrency_policy IN ('forbid', 'replace') THEN 1 ELSE j.max_instances END
$$;

CREATE FUNCTION baton_job_runs_overlap() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  j job_definitions;
  lim INTEGER;
BEGIN
  IF NEW.state NOT IN ('ASSIGNED', 'RUNNING') THEN
    NEW.instance_no := NULL;
    NEW.exclusive_lock := NULL;
    RETURN NEW;
  END IF;
  -- Already active: it keeps what it holds (a limit set while it ran does
  -- not stop it).
  IF TG_OP = 'UPDATE' AND OLD.state IN ('ASSIGNED', 'RUNNING') THEN
    NEW.instance_no := OLD.instance_no;
    NEW.exclusive_lock := OLD.exclusive_lock;
    RETURN NEW;
  END IF;
  IF NEW.job_definition_id IS NULL THEN
    RETURN NEW;
  END IF;
  SELECT * INTO j FROM job_definitions WHERE id = NEW.job_definition_id;
  lim := baton_instance_limit(j);
  IF lim IS NOT NULL AND (NEW.instance_no IS NULL OR NEW.instance_no > lim) THEN
    RAISE EXCEPTION 'run % of job % must hold an instance number from 1 to % to become %',
      NEW.id, j.name, lim, NEW.state USING ERRCODE = 'check_violation';
  END IF;
  IF lim IS NULL THEN
    NEW.instance_no := NULL;
  END IF;
  IF j.exclusive_execution AND NEW.exclusive_lock IS NOT TRUE THEN
    RAISE EXCEPTION 'run % of exclusive job % must hold the exclusive lock to become %',
      NEW.id, j.name, NEW.state USING ERRCODE = 'check_violation';
  END IF;
  IF NOT j.exclusive_execution THEN
    NEW.exclusive_lock := NULL;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER job_runs_overlap BEFORE INSERT OR UPDATE OF state ON job_runs
  FOR EACH ROW EXECUTE FUNCTION baton_job_runs_overlap();
