-- Submission inside the application's own transaction (docs/clients.md,
-- "SQL"). An application whose data lives in the same PostgreSQL cluster
-- calls baton.trigger or baton.emit_event in its transaction: the
-- submission commits or rolls back with the caller's business change.
--
-- A submission is a row of an inbox, never a run: runs are written only by
-- the leader's fenced statements. The leader hears of a committed
-- submission at once (NOTIFY baton_inbox, delivered at commit and only
-- then) and otherwise finds it at its next pass; it turns each into a run
-- with the rules of the API's trigger (denylist, parameter declarations,
-- idempotency key) in one fenced statement that also marks the submission
-- done, and a run remembers its submission (unique), so a submission makes
-- at most one run whichever leader dies in between.
--
-- What the caller can be told at once is checked here and raised in its
-- transaction (the job's name, the parameters' shape, size, declarations
-- and the leader's denylist as last published); the leader judges again
-- when it materialises (a job deleted meanwhile, a denylist changed) and
-- records a refusal on the submission (baton.submission).

ALTER TABLE job_runs DROP CONSTRAINT job_runs_trigger_kind_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_trigger_kind_check
  CHECK (trigger_kind IN ('cron', 'api', 'event', 'retry', 'system', 'rerun', 'replay', 'on_error', 'sql'));

CREATE TABLE submissions (
  id                BIGSERIAL PRIMARY KEY,
  job_definition_id BIGINT NOT NULL,
  job_name          TEXT NOT NULL,
  parameters        JSONB,
  idempotency_key   TEXT CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200),
  run_at            TIMESTAMPTZ,
  priority          INTEGER,
  timeout_ms        BIGINT,
  submitted_by      TEXT NOT NULL,
  submitted_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  processed_at      TIMESTAMPTZ,
  -- created: run_id is the new run; existing: the idempotency key already
  -- named run_id; refused: no run, `refusal` says why.
  outcome           TEXT CHECK (outcome IN ('created', 'existing', 'refused')),
  run_id            BIGINT,
  refusal           TEXT,
  CONSTRAINT submissions_parameters_small CHECK (parameters IS NULL OR pg_column_size(parameters) <= 65536),
  CONSTRAINT submissions_outcome_when_processed CHECK ((processed_at IS NULL) = (outcome IS NULL))
);
CREATE INDEX submissions_pending_idx ON submissions (id) WHERE processed_at IS NULL;
CREATE INDEX submissions_processed_idx ON submissions (processed_at) WHERE processed_at IS NOT NULL;

ALTER TABLE job_runs ADD COLUMN submission_id BIGINT;
CREATE UNIQUE INDEX job_runs_submission_idx ON job_runs (submission_id) WHERE submission_id IS NOT NULL;

-- The leader's payload_denylist as last published (each materialising
-- statement writes its node's list when it differs), so that a submission
-- is refused in the caller's transaction by the list the leader applies.
CREATE TABLE submission_rules (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  payload_denylist TEXT[] NOT NULL,
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- The node's default payload_denylist (admin/src/payload_denylist.cpp).
INSERT INTO submission_rules (id, payload_denylist)
VALUES (1, ARRAY['password', 'passwd', 'secret', '_token', '=token', 'api_key', 'apikey', 'private_key', '-----BEGIN']);

-- The payload denylist (docs/scheduling.md, "Parameters") in SQL: the same
-- rule and the same message as admin/src/payload_denylist.cpp (a test runs
-- both over one table of cases). An entry matches a name or a string value
-- containing it, ASCII case-insensitively; an entry "=x" matches the name
-- x exactly. NULL when nothing matches. (jsonb orders an object's keys, so
-- of several matches the one named may differ from the API's.)
CREATE FUNCTION baton_payload_denied(v JSONB, denylist TEXT[], path TEXT)
RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  advice CONSTANT TEXT := ': secrets do not belong in run parameters or event payloads (they are stored and shown); '
    'give the worker a file or an environment variable instead (the node''s payload_denylist)';
  k TEXT;
  child JSONB;
  deeper TEXT;
  hit TEXT;
  i INTEGER;
BEGIN
  IF v IS NULL THEN
    RETURN NULL;
  END IF;
  CASE jsonb_typeof(v)
  WHEN 'object' THEN
    FOR k, child IN SELECT * FROM jsonb_each(v) LOOP
      hit := baton_denylist_match(k, denylist, true);
      IF hit IS NOT NULL THEN
        RETURN left(path || '.' || k, 200) || ': the name ' || hit || advice;
      END IF;
      deeper := baton_payload_denied(child, denylist, path || '.' || k);
      IF deeper IS NOT NULL THEN
        RETURN deeper;
      END IF;
    END LOOP;
  WHEN 'array' THEN
    FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
      deeper := baton_payload_denied(v -> i, denylist, path || '[' || i || ']');
      IF deeper IS NOT NULL THEN
        RETURN deeper;
      END IF;
    END LOOP;
  WHEN 'string' THEN
    hit := baton_denylist_match(v #>> '{}', denylist, false);
    IF hit IS NOT NULL THEN
      RETURN left(path, 200) || ': the value ' || hit || advice;
    END IF;
  ELSE
    NULL;
  END CASE;
  RETURN NULL;
END $$;

-- What matched, as the message names it ('contains "password"', or for an
-- exact entry 'is "token"'), or NULL.
CREATE FUNCTION baton_denylist_match(text_in TEXT, denylist TEXT[], is_name BOOLEAN)
RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  upper_ascii CONSTANT TEXT := 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  lower_ascii CONSTANT TEXT := 'abcdefghijklmnopqrstuvwxyz';
  l TEXT := translate(text_in, upper_ascii, lower_ascii);
  entry TEXT;
BEGIN
  FOREACH entry IN ARRAY coalesce(denylist, '{}'::text[]) LOOP
    CONTINUE WHEN entry = '';
    IF left(entry, 1) = '=' THEN
      IF is_name AND length(entry) > 1 AND l = translate(substr(entry, 2), upper_ascii, lower_ascii) THEN
        RETURN 'is ' || to_jsonb(substr(entry, 2))::text;
      END IF;
      CONTINUE;
    END IF;
    IF strpos(l, translate(entry, upper_ascii, lower_ascii)) > 0 THEN
      RETURN 'contains ' || to_jsonb(entry)::text;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- Why a trigger's own priority or timeout is outside what its job allows,
-- or NULL (the API's trigger, its batch and baton.trigger alike). A run
-- may be given a priority from -1000 up to its job's own (a trigger may
-- send a run behind the job's others, never ahead of what the operator
-- set) and a timeout up to its job's (none: any).
CREATE FUNCTION baton_trigger_options_refused(job_priority INTEGER, job_timeout_ms BIGINT, priority INTEGER,
                                              timeout_ms BIGINT)
RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN priority IS NOT NULL AND (priority < -1000 OR priority > job_priority) THEN
      format('priority %s is outside what the job allows: from -1000 up to the job''s own priority, %s',
             priority, job_priority)
    WHEN timeout_ms IS NOT NULL AND timeout_ms <= 0 THEN
      format('timeout %s ms: a timeout must be positive', timeout_ms)
    WHEN timeout_ms IS NOT NULL AND job_timeout_ms IS NOT NULL AND timeout_ms > job_timeout_ms THEN
      format('timeout %s ms is longer than the job allows (its own timeout, %s ms)', timeout_ms, job_timeout_ms)
  END
$$;

-- The application's interface: schema `baton`, three functions that run
-- with the owner's rights (SECURITY DEFINER, a fixed search_path) and that
-- nobody may execute until `baton migrate --grant-submit-to ROLE` grants
-- them (docs/clients.md, "The baton_submitter role").
CREATE SCHEMA IF NOT EXISTS baton;

-- Submits a run of `job`; returns the submission's id (baton.submission
-- tells what became of it). Raises, in the caller's transaction, on an
-- unknown job or parameters the run would be refused for.
CREATE FUNCTION baton.trigger(job TEXT, parameters JSONB DEFAULT NULL, idempotency_key TEXT DEFAULT NULL,
                              run_at TIMESTAMPTZ DEFAULT NULL, priority INTEGER DEFAULT NULL,
                              timeout INTERVAL DEFAULT NULL)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  d job_definitions;
  why TEXT;
  new_id BIGINT;
  timeout_ms BIGINT := (extract(epoch FROM timeout) * 1000)::bigint;
BEGIN
  SELECT * INTO d FROM job_definitions j WHERE j.name = job AND j.deleted_at IS NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'baton.trigger: unknown job %', quote_literal(left(coalesce(job, ''), 200))
      USING ERRCODE = 'no_data_found', HINT = 'the job must be defined (baton ctl apply) and not deleted';
  END IF;
  IF parameters IS NOT NULL AND jsonb_typeof(parameters) <> 'object' THEN
    RAISE EXCEPTION 'baton.trigger: parameters must be a JSON object of names to values, got a %',
      jsonb_typeof(parameters) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF parameters IS NOT NULL AND pg_column_size(parameters) > 65536 THEN
    RAISE EXCEPTION 'baton.trigger: parameters take % bytes, at most 65536', pg_column_size(parameters)
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  IF idempotency_key IS NOT NULL AND length(idempotency_key) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.trigger: idempotency_key must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF run_at IS NOT NULL AND run_at > now() + interval '366 days' THEN
    RAISE EXCEPTION 'baton.trigger: run_at at most a year ahead (a schedule is for what recurs)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  why := coalesce(baton_payload_denied(parameters, (SELECT payload_denylist FROM submission_rules r WHERE r.id = 1),
                                       'parameters'),
                  baton_parameters_refused(d.parameter_rules, parameters, false),
                  baton_trigger_options_refused(d.priority, d.timeout_ms, priority, timeout_ms));
  IF why IS NOT NULL THEN
    RAISE EXCEPTION 'baton.trigger: job %: %', quote_literal(d.name), why USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO submissions (job_definition_id, job_name, parameters, idempotency_key, run_at, priority, timeout_ms,
                           submitted_by)
  VALUES (d.id, d.name, parameters, idempotency_key, run_at, priority, timeout_ms, 'sql:' || session_user)
  RETURNING submissions.id INTO new_id;
  PERFORM pg_notify('baton_inbox', 'submission');
  RETURN new_id;
END $$;

-- Records an event (the leader turns it into runs of its subscribers, as
-- for POST /api/v1/events); returns the event's id. With a dedupe_key
-- already used, nothing is written and the earlier event's id comes back.
CREATE FUNCTION baton.emit_event(kind TEXT, payload JSONB DEFAULT '{}', dedupe_key TEXT DEFAULT NULL)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  why TEXT;
  new_id BIGINT;
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
    SELECT e.id INTO new_id FROM events e WHERE e.dedupe_key = emit_event.dedupe_key;
  ELSE
    PERFORM pg_notify('baton_inbox', 'event');
  END IF;
  RETURN new_id;
END $$;

-- What became of a submission (of the caller's own role: a submitter sees
-- no other's): pending, created, existing (the idempotency key named an
-- earlier run) or refused, the run and its state, and why it was refused.
CREATE FUNCTION baton.submission(submission_id BIGINT)
RETURNS TABLE (status TEXT, run_id BIGINT, run_state TEXT, refusal TEXT)
LANGUAGE sql STABLE SECURITY DEFINER AS $$
  SELECT coalesce(s.outcome, 'pending'), s.run_id, r.state, s.refusal
  FROM submissions s LEFT JOIN job_runs r ON r.id = s.run_id
  WHERE s.id = $1 AND s.submitted_by = 'sql:' || session_user
$$;

-- Nobody executes these until granted; their search_path is Baton's
-- schema (where this migration runs), never the caller's.
REVOKE ALL ON FUNCTION baton.trigger(TEXT, JSONB, TEXT, TIMESTAMPTZ, INTEGER, INTERVAL) FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.emit_event(TEXT, JSONB, TEXT) FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.submission(BIGINT) FROM PUBLIC;
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION baton.trigger(TEXT, JSONB, TEXT, TIMESTAMPTZ, INTEGER, INTERVAL) SET search_path = %I, pg_temp',
                 current_schema());
  EXECUTE format('ALTER FUNCTION baton.emit_event(TEXT, JSONB, TEXT) SET search_path = %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION baton.submission(BIGINT) SET search_path = %I, pg_temp', current_schema());
END $$;
