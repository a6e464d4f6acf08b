-- A submitter role's scope, budget and trail (docs/clients.md, "The
-- baton_submitter role"; security review N4). Before this, a role given
-- `baton migrate --grant-submit-to` could trigger every job and emit every
-- event kind, as often and as far ahead as it liked, and left no audit
-- entry: an operate token for everything, with a credential that sits in
-- application configs.
--
-- * Scope: the jobs and event kinds a grant names (none named: all).
-- * Budget: submissions and events per second, runs scheduled ahead, the
--   bytes of one submission's parameters or one event's payload. Refused in
--   the caller's transaction, SQLSTATE 42501 (insufficient_privilege) for
--   scope and 53400 (configuration_limit_exceeded) for budgets, each
--   naming the grant's figure.
-- * Trail: every submission and event writes an audit entry, actor
--   `sql:<role>`, in the caller's transaction: it commits with the
--   submission or not at all. (Not in the leader's statement that makes
--   the runs: that one runs on the leader's loop, which must not wait on
--   an audit log an operator has locked.)
--
-- A role with no row here (granted before this, or given EXECUTE by hand)
-- has the defaults: every job and kind, 200 a second, 10,000 ahead, 64 KiB.

CREATE TABLE submitter_grants (
  role          TEXT PRIMARY KEY,
  jobs          TEXT[],  -- NULL: every job
  event_kinds   TEXT[],  -- NULL: every kind (job.succeeded:* is never an application's)
  per_second    INTEGER NOT NULL DEFAULT 200 CHECK (per_second BETWEEN 1 AND 100000),
  max_scheduled INTEGER NOT NULL DEFAULT 10000 CHECK (max_scheduled BETWEEN 0 AND 10000000),
  max_bytes     INTEGER NOT NULL DEFAULT 65536 CHECK (max_bytes BETWEEN 0 AND 65536),
  granted_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- What the budgets count: a role's submissions of the last second and its
-- runs still ahead, its events of the last second. Only submissions and
-- the SQL roles' events carry these entries, never an API trigger's run.
CREATE INDEX submissions_by_role_idx ON submissions (submitted_by, submitted_at);
CREATE INDEX submissions_ahead_idx ON submissions (submitted_by, run_at) WHERE run_at IS NOT NULL;
CREATE INDEX events_by_sql_role_idx ON events (created_by, created_at) WHERE starts_with(created_by, 'sql:');

-- The grant of `who` (a session_user), or the defaults.
CREATE FUNCTION baton_submitter_grant(who TEXT) RETURNS submitter_grants LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT g FROM submitter_grants g WHERE g.role = who),
                  ROW(who, NULL, NULL, 200, 10000, 65536, now())::submitter_grants)
$$;

-- A parameters' or payload's names, never their values (a value may be a
-- secret), as the API's audit entries give them.
CREATE FUNCTION baton_payload_names(v JSONB) RETURNS JSONB LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce((SELECT jsonb_agg(k ORDER BY k) FROM jsonb_object_keys(v) k), '[]'::jsonb)
   WHERE jsonb_typeof(v) = 'object'
$$;

CREATE OR REPLACE FUNCTION baton.trigger(job TEXT, parameters JSONB DEFAULT NULL, idempotency_key TEXT DEFAULT NULL,
                                         run_at TIMESTAMPTZ DEFAULT NULL, priority INTEGER DEFAULT NULL,
                                         timeout INTERVAL DEFAULT NULL)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  d job_definitions;
  g submitter_grants := baton_submitter_grant(session_user);
  caller CONSTANT TEXT := 'sql:' || session_user;
  why TEXT;
  new_id BIGINT;
  n BIGINT;
  timeout_ms BIGINT := (extract(epoch FROM timeout) * 1000)::bigint;
BEGIN
  SELECT * INTO d FROM job_definitions j WHERE j.name = job AND j.deleted_at IS NULL;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'baton.trigger: unknown job %', quote_literal(left(coalesce(job, ''), 200))
      USING ERRCODE = 'no_data_found', HINT = 'the job must be defined (baton ctl apply) and not deleted';
  END IF;
  IF g.jobs IS NOT NULL AND NOT d.name = ANY (g.jobs) THEN
    RAISE EXCEPTION 'baton.trigger: role % may not trigger job %: its grant names %', quote_ident(session_user),
      quote_literal(d.name), array_to_string(g.jobs, ', ')
      USING ERRCODE = 'insufficient_privilege', HINT = 'baton migrate --grant-submit-to ROLE --jobs NAME,...';
  END IF;
  IF parameters IS NOT NULL AND jsonb_typeof(parameters) <> 'object' THEN
    RAISE EXCEPTION 'baton.trigger: parameters must be a JSON object of names to values, got a %',
      jsonb_typeof(parameters) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF parameters IS NOT NULL AND pg_column_size(parameters) > g.max_bytes THEN
    RAISE EXCEPTION 'baton.trigger: parameters take % bytes, at most % for role %', pg_column_size(parameters),
      g.max_bytes, quote_ident(session_user) USING ERRCODE = 'program_limit_exceeded';
  END IF;
  IF idempotency_key IS NOT NULL AND length(idempotency_key) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.trigger: idempotency_key must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF run_at IS NOT NULL AND run_at > now() + interval '366 days' THEN
    RAISE EXCEPTION 'baton.trigger: run_at at most a year ahead (a schedule is for what recurs)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- The budgets: counted up to the limit only (an index range of the
  -- role's own rows), so a role at its limit costs no more than that.
  SELECT count(*) INTO n FROM (SELECT 1 FROM submissions s WHERE s.submitted_by = caller
                                 AND s.submitted_at > now() - interval '1 second' LIMIT g.per_second) x;
  IF n >= g.per_second THEN
    RAISE EXCEPTION 'baton.trigger: role % submitted % runs in the last second, its budget', quote_ident(session_user),
      g.per_second USING ERRCODE = 'configuration_limit_exceeded', HINT = 'retry later, or raise --per-second';
  END IF;
  IF run_at IS NOT NULL AND run_at > now() + interval '1 minute' THEN
    SELECT count(*) INTO n FROM (SELECT 1 FROM submissions s WHERE s.submitted_by = caller AND s.run_at > now()
                                   LIMIT g.max_scheduled) x;
    IF n >= g.max_scheduled THEN
      RAISE EXCEPTION 'baton.trigger: role % has % runs scheduled ahead, its budget', quote_ident(session_user),
        g.max_scheduled USING ERRCODE = 'configuration_limit_exceeded', HINT = 'raise --max-scheduled';
    END IF;
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
  VALUES (d.id, d.name, parameters, idempotency_key, run_at, priority, timeout_ms, caller)
  RETURNING submissions.id INTO new_id;
  INSERT INTO audit_log (actor, action, subject, details)
  VALUES (caller, 'job.submit', 'job:' || d.name,
          jsonb_build_object('submission_id', new_id, 'idempotency_key', idempotency_key, 'run_at', run_at,
                             'parameters', baton_payload_names(parameters)));
  PERFORM pg_notify('baton_inbox', 'submission');
  RETURN new_id;
END $$;

CREATE OR REPLACE FUNCTION baton.emit_event(kind TEXT, payload JSONB DEFAULT '{}', dedupe_key TEXT DEFAULT NULL)
RETURNS BIGINT LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  g submitter_grants := baton_submitter_grant(session_user);
  caller CONSTANT TEXT := 'sql:' || session_user;
  why TEXT;
  new_id BIGINT;
  holder TEXT;
  n BIGINT;
BEGIN
  IF kind IS NULL OR length(kind) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.emit_event: kind must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF starts_with(kind, 'job.succeeded:') THEN
    RAISE EXCEPTION 'baton.emit_event: the kind job.succeeded:* is reserved for run_after'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF g.event_kinds IS NOT NULL AND NOT kind = ANY (g.event_kinds) THEN
    RAISE EXCEPTION 'baton.emit_event: role % may not emit kind %: its grant names %', quote_ident(session_user),
      quote_literal(kind), array_to_string(g.event_kinds, ', ')
      USING ERRCODE = 'insufficient_privilege', HINT = 'baton migrate --grant-submit-to ROLE --events KIND,...';
  END IF;
  IF dedupe_key IS NOT NULL AND length(dedupe_key) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'baton.emit_event: dedupe_key must be 1-200 characters' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
    RAISE EXCEPTION 'baton.emit_event: payload must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF pg_column_size(payload) > g.max_bytes THEN
    RAISE EXCEPTION 'baton.emit_event: payload takes % bytes, at most % for role %', pg_column_size(payload),
      g.max_bytes, quote_ident(session_user) USING ERRCODE = 'program_limit_exceeded';
  END IF;
  SELECT count(*) INTO n FROM (SELECT 1 FROM events e WHERE starts_with(e.created_by, 'sql:') AND e.created_by = caller
                                 AND e.created_at > now() - interval '1 second' LIMIT g.per_second) x;
  IF n >= g.per_second THEN
    RAISE EXCEPTION 'baton.emit_event: role % emitted % events in the last second, its budget',
      quote_ident(session_user), g.per_second
      USING ERRCODE = 'configuration_limit_exceeded', HINT = 'retry later, or raise --per-second';
  END IF;
  why := baton_payload_denied(payload, (SELECT payload_denylist FROM submission_rules r WHERE r.id = 1), 'payload');
  IF why IS NOT NULL THEN
    RAISE EXCEPTION 'baton.emit_event: %', why USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO events (kind, payload, dedupe_key, created_by)
  VALUES (kind, payload, dedupe_key, caller)
  ON CONFLICT ON CONSTRAINT events_dedupe_key_key DO NOTHING
  RETURNING events.id INTO new_id;
  IF new_id IS NULL THEN
    SELECT e.id, e.created_by INTO new_id, holder FROM events e
     WHERE e.kind = emit_event.kind AND e.dedupe_key = emit_event.dedupe_key;
    IF holder IS DISTINCT FROM caller THEN
      RAISE EXCEPTION 'baton.emit_event: dedupe_key % of kind % was used by another caller', quote_literal(dedupe_key),
        quote_literal(kind) USING ERRCODE = 'unique_violation', HINT = 'a dedupe key names one event of one caller';
    END IF;
  ELSE
    INSERT INTO audit_log (actor, action, subject, details)
    VALUES (caller, 'event.post', 'event:' || new_id,
            jsonb_build_object('kind', kind, 'dedupe_key', dedupe_key, 'payload', baton_payload_names(payload)));
    PERFORM pg_notify('baton_inbox', 'event');
  END IF;
  RETURN new_id;
END $$;

-- CREATE OR REPLACE keeps the grants (none to PUBLIC, 0036) but not the
-- functions' settings: their search_path is Baton's schema again.
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION baton.trigger(TEXT, JSONB, TEXT, TIMESTAMPTZ, INTEGER, INTERVAL) SET search_path = %I, pg_temp',
                 current_schema());
  EXECUTE format('ALTER FUNCTION baton.emit_event(TEXT, JSONB, TEXT) SET search_path = %I, pg_temp', current_schema());
END $$;
