-- Events and run-after dependencies (docs/scheduling.md, "Events and
-- dependencies").
--
-- A job subscribes to event kinds (on_events) and to the successes of other
-- jobs (run_after). The leader turns each unprocessed event into one run per
-- subscribed job and marks the event processed, in one fenced statement; a
-- run remembers its event, and (job, event) is unique, so a subscriber gets
-- exactly one run per event whatever fails in between.
ALTER TABLE job_definitions ADD COLUMN on_events TEXT[] NOT NULL DEFAULT '{}';
CREATE INDEX job_definitions_on_events_idx ON job_definitions USING gin (on_events);
CREATE INDEX job_definitions_run_after_idx ON job_definitions USING gin (run_after);

ALTER TABLE job_runs ADD COLUMN event_id BIGINT;
CREATE UNIQUE INDEX job_runs_event_idx ON job_runs (job_definition_id, event_id) WHERE event_id IS NOT NULL;

ALTER TABLE events ADD COLUMN created_by TEXT;
ALTER TABLE events ADD CONSTRAINT events_kind_chk CHECK (length(kind) BETWEEN 1 AND 200);
ALTER TABLE events ADD CONSTRAINT events_payload_small CHECK (pg_column_size(payload) <= 65536);
CREATE INDEX events_pending_idx ON events (id) WHERE processed_at IS NULL;

-- A run's success is the event `job.succeeded:<job>` (its run id in the
-- payload, deduplicated by run), written in the same transaction as the
-- success, but only when some job runs after that job.
CREATE FUNCTION baton_run_succeeded_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  job_name TEXT;
BEGIN
  SELECT name INTO job_name FROM job_definitions WHERE id = NEW.job_definition_id;
  IF job_name IS NOT NULL AND EXISTS (
      SELECT 1 FROM job_definitions d WHERE d.run_after @> ARRAY[job_name] AND d.deleted_at IS NULL) THEN
    INSERT INTO events (kind, payload, dedupe_key, created_by)
    VALUES ('job.succeeded:' || job_name, jsonb_build_object('run_id', NEW.id, 'job', job_name),
            'run-succeeded:' || NEW.id, 'run ' || NEW.id)
    ON CONFLICT (dedupe_key) DO NOTHING;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER job_runs_succeeded_event AFTER UPDATE OF state ON job_runs
  FOR EACH ROW WHEN (NEW.state = 'SUCCEEDED' AND OLD.state IS DISTINCT FROM 'SUCCEEDED'
                     AND NEW.job_definition_id IS NOT NULL)
  EXECUTE FUNCTION baton_run_succeeded_event();
