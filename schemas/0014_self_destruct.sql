-- self_destruct (docs/scheduling.md, "Chains"): a job marked so is retired
-- (soft-deleted: it creates no more runs; its runs and history stay) by its
-- first successful run, in the same transaction as the success, recorded in
-- the audit log.
CREATE FUNCTION baton_job_self_destruct() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  job_name TEXT;
BEGIN
  UPDATE job_definitions SET deleted_at = now(), updated_at = now(), version = version + 1
    WHERE id = NEW.job_definition_id AND self_destruct AND deleted_at IS NULL
    RETURNING name INTO job_name;
  IF job_name IS NOT NULL THEN
    INSERT INTO audit_log (actor, action, subject, epoch, details)
    VALUES ('system', 'job.self_destruct', 'job:' || job_name, NEW.leader_epoch,
            jsonb_build_object('run_id', NEW.id));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER job_runs_self_destruct AFTER UPDATE OF state ON job_runs
  FOR EACH ROW WHEN (NEW.state = 'SUCCEEDED' AND OLD.state IS DISTINCT FROM 'SUCCEEDED'
                     AND NEW.job_definition_id IS NOT NULL)
  EXECUTE FUNCTION baton_job_self_destruct();
