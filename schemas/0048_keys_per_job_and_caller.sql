-- Idempotency keys and event dedupe keys no longer shared by every caller
-- (security review N3; docs/operations.md, "Idempotency keys"). Before,
-- a key named one run across all jobs and all callers, so one principal
-- could submit another's likely keys first ("order-43") and the victim's
-- trigger answered "created: false" with a run of some other job; a
-- dedupe key likewise suppressed another caller's events.
--
-- Now:
-- - a run's key is unique per job: the unique index over unfinished runs is
--   on (job, key), and every look-up of an earlier run names the job;
-- - the caller that submitted a keyed run is kept with it
--   (idempotency_owner: an API token's name, or 'sql:<role>' for a
--   submission), and a trigger of the same job and key by another caller is
--   refused, not answered with that run; so is one with other parameters
--   (a key names one request, as in Stripe's API);
-- - an event's dedupe key is unique per kind, and reused by another caller
--   (created_by) it is refused.
--
-- Existing keys keep working: runs submitted before this migration have no
-- owner, and a key of such a run gives it back to any caller as before.
-- The owner is written only for a run that has a key (no other run's row
-- grows), and neither it nor the index's columns are written by an
-- assignment, a start, a heartbeat or a finish: those stay HOT (SPEC
-- section 2). The look-up index of 0025 (key alone) stays: it serves
-- `GET /api/v1/runs?idempotency_key=`, and with the job as a filter the
-- earlier-run look-up.

ALTER TABLE job_runs ADD COLUMN idempotency_owner TEXT
  CONSTRAINT job_runs_idempotency_owner_small CHECK (idempotency_owner IS NULL OR length(idempotency_owner) <= 300);

-- NULLS NOT DISTINCT: runs of no job (made by a test's store, or whose
-- job's row was purged) share one namespace among themselves, as every
-- key did before.
DROP INDEX job_runs_idempotency_active_idx;
CREATE UNIQUE INDEX job_runs_idempotency_active_idx ON job_runs (job_definition_id, idempotency_key)
  NULLS NOT DISTINCT WHERE idempotency_key IS NOT NULL AND finished_at IS NULL;

ALTER TABLE events DROP CONSTRAINT events_dedupe_key_key;
ALTER TABLE events ADD CONSTRAINT events_dedupe_key_key UNIQUE (kind, dedupe_key);

-- baton.emit_event (0036) with the dedupe key per kind and per caller.
CREATE OR REPLACE FUNCTION baton.emit_event(kind TEXT, payload JSONB DEFAULT '{}', dedupe_key TEXT DEFAULT NULL)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  why TEXT;
  new_id BIGINT;
  holder TEXT;
BEGIN
  IF kind IS NULL OR length(kind) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.emit_event: kind must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF starts_with(kind, 'job.succeeded:') THEN
    RAISE EXCEPTION 'baton.emit_event: the kind job.succeeded:* is reserved for run_after'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF dedupe_key IS NOT NULL AND length(dedupe_key) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.emit_event: dedupe_key must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'baton.emit_event: payload must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF pg_column_size(payload) > 65536 THEN
    RAISE EXCEPTION 'baton.emit_event: payload takes % bytes, at most 65536', pg_column_size(payload)
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  why := baton_payload_denied(payload, (SELECT payload_denylist FROM submission_rules r WHERE r.id = 1), 'payload');
  IF why IS NOT NULL THEN
    RAISE EXCEPTION 'baton.emit_event: %', why USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO events (kind, payload, dedupe_key, created_by)
  VALUES (kind, payload, dedupe_key, 'sql:' || session_user)
  ON CONFLICT ON CONSTRAINT events_dedupe_key_key DO NOTHING
  RETURNING events.id INTO new_id;
  IF new_id IS NULL THEN
    SELECT e.id, e.created_by INTO new_id, holder FROM events e
     WHERE e.kind = emit_event.kind AND e.dedupe_key = emit_event.dedupe_key;
    IF holder IS DISTINCT FROM 'sql:' || session_user THEN
      RAISE EXCEPTION 'baton.emit_event: dedupe_key % of kind % was used by another caller', quote_literal(dedupe_key),
        quote_literal(kind) USING ERRCODE = 'unique_violation', HINT = 'a dedupe key names one event of one caller';
    END IF;
  ELSE
    PERFORM pg_notify('baton_inbox', 'event');
  END IF;
  RETURN new_id;
END $$;

-- CREATE OR REPLACE keeps the grants (none to PUBLIC, 0036) but not the
-- function's settings: its search_path is Baton's schema again.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION baton.emit_event(TEXT, JSONB, TEXT) SET search_path = %I, pg_temp', current_schema());
END $$;
