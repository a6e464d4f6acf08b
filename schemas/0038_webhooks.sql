-- Outgoing notifications (docs/webhooks.md): webhooks defined as data
-- (`baton ctl apply`, like jobs) and a durable queue of their deliveries.
-- A delivery is written in the transaction of the event it tells of, by a
-- trigger on the table that records the event: a dead letter (and so a
-- run's final failure), a job's Nth failure in a row, a new epoch. So an
-- event is never told of without having happened, nor happens without
-- being queued; the leader's delivery thread sends what is queued, off the
-- control loop, and retries with backoff until the receiver answers 2xx or
-- the webhook's attempts run out. Each event has one id, in the payload and
-- a header, the same on every attempt: a receiver that keeps the ids it has
-- processed processes each event once.

CREATE TABLE webhooks (
  id                BIGSERIAL PRIMARY KEY,
  name              TEXT NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9._-]{1,200}$'),
  url               TEXT NOT NULL CHECK (url ~ '^https://[^/?#@[:space:]]+' AND length(url) <= 2000),
  -- What it is told of; every webhook can also be sent a `ping` on request.
  events            TEXT[] NOT NULL CHECK (cardinality(events) >= 1 AND events <@ ARRAY['dead_letter', 'run_failed',
                      'failures_in_a_row', 'leader_changed']),
  -- The jobs whose events it is told of; empty: every job. A leader change
  -- is of no job and is told to every webhook that lists it.
  jobs              TEXT[] NOT NULL DEFAULT '{}',
  failures_in_a_row INTEGER NOT NULL DEFAULT 3 CHECK (failures_in_a_row BETWEEN 2 AND 1000),
  max_attempts      INTEGER NOT NULL DEFAULT 12 CHECK (max_attempts BETWEEN 1 AND 100),
  -- The HMAC-SHA256 key of the signature header. Never returned by the API
  -- (its SHA-256 is, to tell whether two are the same).
  secret            TEXT NOT NULL CHECK (length(secret) BETWEEN 16 AND 1000),
  enabled           BOOLEAN NOT NULL DEFAULT true,
  version           BIGINT NOT NULL DEFAULT 1,
  created_by        TEXT NOT NULL,
  created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per (webhook, event). `body` is the exact JSON sent, made once
-- when the event is queued: every attempt sends the same bytes.
CREATE TABLE webhook_deliveries (
  id              BIGSERIAL PRIMARY KEY,
  webhook_id      BIGINT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id        UUID NOT NULL,
  kind            TEXT NOT NULL,
  body            TEXT NOT NULL,
  state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  -- Set by the claim of an attempt: no other claim takes the delivery
  -- before then (an attempt cut off with its sender is retried after).
  claimed_until   TIMESTAMPTZ,
  claimed_epoch   BIGINT,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_attempt_at TIMESTAMPTZ,
  finished_at     TIMESTAMPTZ,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;

-- A job's final failures since its last success. Written by the failure
-- side alone, in the statement that ends the run (the trigger below); the
-- success side only deletes a row that exists, without waiting for a lock
-- (run_transitions.cpp, success_ctes): a success recorded at the instant a
-- failure of the same job is may leave the count standing.
CREATE TABLE job_failure_streaks (
  job_definition_id BIGINT PRIMARY KEY,
  failures          INTEGER NOT NULL,
  since             TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_run_id       BIGINT NOT NULL
);

-- Queues one event for every enabled webhook that lists its kind (and its
-- job, when the webhook names jobs), with one event id for all of them.
-- `streak`: a failures_in_a_row event, for the webhooks whose threshold it
-- is (each failure adds one, so a streak meets a threshold once).
CREATE FUNCTION baton_webhook_enqueue(event_kind TEXT, job TEXT, data JSONB, streak INTEGER DEFAULT NULL)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
  ev UUID := gen_random_uuid();
  n INTEGER;
BEGIN
  INSERT INTO webhook_deliveries (webhook_id, event_id, kind, body)
  SELECT w.id, ev, event_kind,
         jsonb_build_object('id', ev, 'kind', event_kind,
                            'occurred_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                            'webhook', w.name, 'data', data)::text
  FROM webhooks w
  WHERE w.enabled AND event_kind = ANY (w.events)
    AND (job IS NULL OR cardinality(w.jobs) = 0 OR job = ANY (w.jobs))
    AND (streak IS NULL OR w.failures_in_a_row = streak)
  ORDER BY w.id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    PERFORM pg_notify('baton_webhooks', '');
  END IF;
  RETURN n;
END $$;

-- A dead letter is made in the statement that ends a run FAILED or
-- TIMED_OUT for good (run_transitions.cpp): the run's final failure. Per
-- row, so that a statement that makes none (every finish of a success)
-- pays nothing. The streak rows of several jobs are counted under one
-- transaction-level advisory lock, so two statements never lock two jobs'
-- rows in opposite orders; a success's reset takes no lock it could wait
-- for (SKIP LOCKED).
CREATE FUNCTION baton_dead_letters_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  job TEXT;
  streak INTEGER;
  began TIMESTAMPTZ;
BEGIN
  IF NEW.job_definition_id IS NOT NULL THEN
    -- The streaks' lock (a key of this migration's own), held to commit.
    PERFORM pg_advisory_xact_lock(200926003800038);
    INSERT INTO job_failure_streaks AS f (job_definition_id, failures, last_run_id)
    VALUES (NEW.job_definition_id, 1, NEW.run_id)
    ON CONFLICT (job_definition_id) DO UPDATE SET failures = f.failures + 1, last_run_id = excluded.last_run_id
    RETURNING f.failures, f.since INTO streak, began;
    SELECT name INTO job FROM job_definitions WHERE id = NEW.job_definition_id;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled) THEN
    RETURN NULL;
  END IF;
  PERFORM baton_webhook_enqueue('dead_letter', job, jsonb_build_object(
    'dead_letter_id', NEW.id, 'run_id', NEW.run_id, 'job', job, 'final_state', NEW.final_state,
    'attempts', NEW.attempts, 'error_code', NEW.error_code, 'error_msg', NEW.error_msg));
  PERFORM baton_webhook_enqueue('run_failed', job, jsonb_build_object(
    'run_id', NEW.run_id, 'job', job, 'state', NEW.final_state, 'attempts', NEW.attempts,
    'error_code', NEW.error_code, 'error_msg', NEW.error_msg, 'exit_code', NEW.run_snapshot -> 'exit_code',
    'finished_at', NEW.run_snapshot -> 'finished_at'));
  -- Told once per streak: when it reaches a webhook's threshold.
  IF streak IS NOT NULL THEN
    PERFORM baton_webhook_enqueue('failures_in_a_row', job, jsonb_build_object(
      'job', job, 'failures', streak, 'threshold', streak, 'since', began, 'last_run_id', NEW.run_id), streak);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER dead_letters_notify AFTER INSERT ON dead_letters
  FOR EACH ROW EXECUTE FUNCTION baton_dead_letters_notify();

-- A new epoch: a leader change, told with the epoch before it.
CREATE FUNCTION baton_epoch_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  prev_epoch BIGINT;
  prev_leader TEXT;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled AND 'leader_changed' = ANY (events)) THEN
    RETURN NULL;
  END IF;
  SELECT epoch, leader_id INTO prev_epoch, prev_leader FROM epoch_history WHERE epoch < NEW.epoch ORDER BY epoch DESC LIMIT 1;
  PERFORM baton_webhook_enqueue('leader_changed', NULL, jsonb_build_object(
    'epoch', NEW.epoch, 'leader_id', NEW.leader_id, 'leader_endpoint', NEW.leader_endpoint,
    'elected_at', NEW.elected_at, 'previous_epoch', prev_epoch, 'previous_leader_id', prev_leader));
  RETURN NULL;
END $$;
CREATE TRIGGER epoch_history_notify AFTER INSERT ON epoch_history
  FOR EACH ROW EXECUTE FUNCTION baton_epoch_notify();
