-- Baton schema, version 1: every table of SPEC section 2.
--
-- Applied by store/pg/migrate.cpp inside one transaction under an advisory
-- lock and recorded in schema_migrations, so nodes starting at once apply it
-- exactly once. Nothing here is edited after it has shipped: changes are new
-- numbered files.
--
-- States and flags are TEXT + CHECK rather than enums so adding a value is a
-- CHECK swap, not an enum migration (seed 000).

-- The single lease row. `epoch` is the Raft-style term: only ever increases
-- (trigger below). Fenced run writes take FOR KEY SHARE on this row and an
-- election takes FOR UPDATE on it; see docs/fencing.md.
CREATE TABLE leader_lease (
  id                 SMALLINT PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  epoch              BIGINT NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  leader_id          TEXT,
  leader_incarnation TEXT,
  leader_endpoint    TEXT,
  lease_expires_at   TIMESTAMPTZ NOT NULL DEFAULT '1970-01-01 00:00:00+00',
  elected_at         TIMESTAMPTZ,
  renewed_at         TIMESTAMPTZ,
  released           BOOLEAN NOT NULL DEFAULT true
);
INSERT INTO leader_lease (id) VALUES (1);

CREATE FUNCTION baton_lease_epoch_monotonic() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'leader_lease: the lease row is never deleted' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.epoch < OLD.epoch THEN
    RAISE EXCEPTION 'leader_lease.epoch may not decrease (% -> %)', OLD.epoch, NEW.epoch
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER leader_lease_epoch_monotonic BEFORE UPDATE ON leader_lease
  FOR EACH ROW EXECUTE FUNCTION baton_lease_epoch_monotonic();
CREATE TRIGGER leader_lease_no_delete BEFORE DELETE ON leader_lease
  FOR EACH ROW EXECUTE FUNCTION baton_lease_epoch_monotonic();

-- One row per epoch: who won it, when, and how it ended. `election_xid` is
-- the electing transaction, so a checker can order elections against run
-- writes by commit timestamp.
CREATE TABLE epoch_history (
  epoch              BIGINT PRIMARY KEY CHECK (epoch >= 1),
  leader_id          TEXT NOT NULL,
  leader_incarnation TEXT NOT NULL,
  leader_endpoint    TEXT,
  elected_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
  election_xid       BIGINT NOT NULL DEFAULT txid_current(),
  ended_at           TIMESTAMPTZ,
  end_reason         TEXT CHECK (end_reason IN ('released', 'expired', 'superseded'))
);

CREATE TABLE nodes (
  node_id           TEXT PRIMARY KEY,
  incarnation       TEXT NOT NULL,
  endpoint          TEXT,
  started_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  role              TEXT NOT NULL DEFAULT 'follower' CHECK (role IN ('follower', 'leader', 'stopped'))
);

CREATE TABLE workers (
  worker_id          TEXT PRIMARY KEY,
  labels             JSONB NOT NULL DEFAULT '{}'::jsonb,
  capacity           INTEGER NOT NULL DEFAULT 1 CHECK (capacity >= 0),
  attached_node_id   TEXT,
  attached_epoch     BIGINT,
  state              TEXT NOT NULL DEFAULT 'DETACHED' CHECK (state IN ('ATTACHED', 'DETACHED')),
  last_heartbeat_at  TIMESTAMPTZ,
  attached_at        TIMESTAMPTZ,
  detached_at        TIMESTAMPTZ
);
CREATE INDEX workers_state_idx ON workers (state);

CREATE TABLE job_definitions (
  id                  BIGSERIAL PRIMARY KEY,
  name                TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
  schedule            TEXT,
  time_zone           TEXT NOT NULL DEFAULT 'UTC',
  kind                TEXT NOT NULL DEFAULT 'chain' CHECK (kind IN ('chain')),
  tasks               JSONB NOT NULL DEFAULT '[]'::jsonb,
  parameters          JSONB NOT NULL DEFAULT '{}'::jsonb,
  max_instances       INTEGER NOT NULL DEFAULT 1 CHECK (max_instances >= 1),
  timeout_ms          BIGINT CHECK (timeout_ms IS NULL OR timeout_ms > 0),
  live                BOOLEAN NOT NULL DEFAULT true,
  self_destruct       BOOLEAN NOT NULL DEFAULT false,
  exclusive_execution BOOLEAN NOT NULL DEFAULT false,
  worker_selector     JSONB NOT NULL DEFAULT '{}'::jsonb,
  on_error            TEXT,
  max_attempts        INTEGER NOT NULL DEFAULT 1 CHECK (max_attempts BETWEEN 1 AND 100),
  retry_base_ms       BIGINT NOT NULL DEFAULT 1000 CHECK (retry_base_ms >= 0),
  retry_cap_ms        BIGINT NOT NULL DEFAULT 3600000 CHECK (retry_cap_ms >= 0),
  priority            INTEGER NOT NULL DEFAULT 0,
  misfire_policy      TEXT NOT NULL DEFAULT 'run_latest' CHECK (misfire_policy IN ('run_all', 'run_latest', 'skip')),
  concurrency_policy  TEXT NOT NULL DEFAULT 'allow' CHECK (concurrency_policy IN ('allow', 'forbid')),
  jitter_ms           BIGINT NOT NULL DEFAULT 0 CHECK (jitter_ms >= 0),
  run_after           TEXT[] NOT NULL DEFAULT '{}',
  version             BIGINT NOT NULL DEFAULT 1,
  created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  deleted_at          TIMESTAMPTZ
);

-- The JobRun. Hot columns (state, version, heartbeat_at, stale_after) change
-- often; only the columns the dispatcher and reaper search by are indexed.
CREATE TABLE job_runs (
  id                       BIGSERIAL PRIMARY KEY,
  job_definition_id        BIGINT REFERENCES job_definitions (id) ON DELETE SET NULL,
  state                    TEXT NOT NULL DEFAULT 'PENDING',
  version                  BIGINT NOT NULL DEFAULT 1,
  attempt                  INTEGER NOT NULL DEFAULT 1,
  max_attempts             INTEGER NOT NULL DEFAULT 1,
  leader_epoch             BIGINT NOT NULL,
  assigned_worker_id       TEXT,
  assigned_at              TIMESTAMPTZ,
  continuation_state       TEXT NOT NULL DEFAULT 'NONE',
  continuation_deadline_at TIMESTAMPTZ,
  heartbeat_at             TIMESTAMPTZ,
  stale_after              TIMESTAMPTZ,
  scheduled_for            TIMESTAMPTZ,
  next_attempt_at          TIMESTAMPTZ,
  priority                 INTEGER NOT NULL DEFAULT 0,
  idempotency_key          TEXT,
  lease_token              UUID,
  trigger_kind             TEXT NOT NULL DEFAULT 'api' CHECK (trigger_kind IN ('cron', 'api', 'event', 'retry', 'system')),
  payload                  JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at               TIMESTAMPTZ,
  finished_at              TIMESTAMPTZ,
  result                   JSONB,
  error_code               TEXT,
  error_msg                TEXT,
  log_ref                  TEXT,
  CONSTRAINT job_runs_state_chk CHECK (state IN ('PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING',
    'ORPHANED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')),
  CONSTRAINT job_runs_continuation_chk CHECK (continuation_state IN ('NONE', 'CONFIRMING')),
  CONSTRAINT job_runs_confirming_needs_deadline CHECK (
    continuation_state = 'NONE' OR continuation_deadline_at IS NOT NULL),
  CONSTRAINT job_runs_attempt_chk CHECK (attempt BETWEEN 1 AND max_attempts),
  CONSTRAINT job_runs_max_attempts_chk CHECK (max_attempts BETWEEN 1 AND 100),
  CONSTRAINT job_runs_version_chk CHECK (version >= 1),
  CONSTRAINT job_runs_assigned_has_worker CHECK (
    state NOT IN ('ASSIGNED', 'RUNNING') OR (assigned_worker_id IS NOT NULL AND lease_token IS NOT NULL)),
  CONSTRAINT job_runs_retry_has_time CHECK (state <> 'RETRY_WAITING' OR next_attempt_at IS NOT NULL),
  CONSTRAINT job_runs_result_small CHECK (result IS NULL OR pg_column_size(result) <= 65536),
  CONSTRAINT job_runs_slot_unique UNIQUE (job_definition_id, scheduled_for)
);
CREATE UNIQUE INDEX job_runs_idempotency_active_idx ON job_runs (idempotency_key)
  WHERE idempotency_key IS NOT NULL
    AND state IN ('PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED');
CREATE INDEX job_runs_state_scheduled_idx ON job_runs (state, scheduled_for);
CREATE INDEX job_runs_worker_state_idx ON job_runs (assigned_worker_id, state);
CREATE INDEX job_runs_created_idx ON job_runs (created_at);
CREATE INDEX job_runs_due_pending_idx ON job_runs (priority DESC, scheduled_for)
  WHERE state = 'PENDING';
CREATE INDEX job_runs_stale_running_idx ON job_runs (stale_after)
  WHERE state = 'RUNNING';
CREATE INDEX job_runs_due_retry_idx ON job_runs (next_attempt_at)
  WHERE state = 'RETRY_WAITING';
CREATE INDEX job_runs_finished_idx ON job_runs (finished_at)
  WHERE state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED');

-- The transition table of SPEC section 3. The database is the last line of
-- defence: a C++ bug, a stale binary or a person with psql cannot move a run
-- backwards. Same-state updates (heartbeats, continuation, adoption) are
-- allowed only on non-terminal runs and must still bump `version`.
CREATE FUNCTION baton_run_transition_allowed(from_state TEXT, to_state TEXT)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE from_state
    WHEN 'PENDING'       THEN to_state IN ('ASSIGNED', 'CANCELED')
    WHEN 'ASSIGNED'      THEN to_state IN ('RUNNING', 'ORPHANED', 'CANCELED')
    WHEN 'ORPHANED'      THEN to_state IN ('ASSIGNED', 'FAILED', 'CANCELED')
    WHEN 'RUNNING'       THEN to_state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'RETRY_WAITING', 'CANCELED')
    WHEN 'RETRY_WAITING' THEN to_state IN ('ASSIGNED', 'CANCELED')
    ELSE false
  END
$$;

CREATE FUNCTION baton_job_runs_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.state <> 'PENDING' THEN
      RAISE EXCEPTION 'job_runs: a run is created PENDING, not %', NEW.state
        USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW.id <> OLD.id THEN
    RAISE EXCEPTION 'job_runs: id is immutable' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.version <> OLD.version + 1 THEN
    RAISE EXCEPTION 'job_runs %: every write must set version = version + 1 (% -> %)',
      OLD.id, OLD.version, NEW.version USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.state = OLD.state THEN
    IF OLD.state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED') THEN
      RAISE EXCEPTION 'job_runs %: run is final (%)', OLD.id, OLD.state
        USING ERRCODE = 'check_violation';
    END IF;
  ELSIF NOT baton_run_transition_allowed(OLD.state, NEW.state) THEN
    RAISE EXCEPTION 'job_runs %: illegal transition % -> %', OLD.id, OLD.state, NEW.state
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.attempt < OLD.attempt THEN
    RAISE EXCEPTION 'job_runs %: attempt may not decrease (% -> %)', OLD.id, OLD.attempt, NEW.attempt
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.attempt > OLD.attempt AND NOT (NEW.state = 'ASSIGNED' AND OLD.state IN ('ORPHANED', 'RETRY_WAITING')) THEN
    RAISE EXCEPTION 'job_runs %: attempt only grows on reassignment', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.leader_epoch < OLD.leader_epoch THEN
    RAISE EXCEPTION 'job_runs %: leader_epoch may not decrease (% -> %)', OLD.id, OLD.leader_epoch, NEW.leader_epoch
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER job_runs_guard BEFORE INSERT OR UPDATE ON job_runs
  FOR EACH ROW EXECUTE FUNCTION baton_job_runs_guard();

-- Every committed change of state, continuation or epoch stamp, with the
-- writing transaction's id. Heartbeats (same state, same epoch) are not
-- logged: they are the hot path and carry no decision. The chaos checker
-- replays this table; `xid` with track_commit_timestamp orders a write
-- against epoch_history.election_xid.
CREATE TABLE job_run_transitions (
  id                 BIGSERIAL PRIMARY KEY,
  run_id             BIGINT NOT NULL,
  from_state         TEXT,
  to_state           TEXT NOT NULL,
  from_version       BIGINT,
  to_version         BIGINT NOT NULL,
  attempt            INTEGER NOT NULL,
  leader_epoch       BIGINT NOT NULL,
  continuation_state TEXT NOT NULL,
  xid                BIGINT NOT NULL DEFAULT txid_current(),
  at                 TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX job_run_transitions_run_idx ON job_run_transitions (run_id, id);

CREATE FUNCTION baton_job_runs_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state)
    VALUES (NEW.id, NULL, NEW.state, NULL, NEW.version, NEW.attempt, NEW.leader_epoch, NEW.continuation_state);
  ELSIF NEW.state <> OLD.state OR NEW.continuation_state <> OLD.continuation_state
        OR NEW.leader_epoch <> OLD.leader_epoch OR NEW.attempt <> OLD.attempt THEN
    INSERT INTO job_run_transitions (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state)
    VALUES (NEW.id, OLD.state, NEW.state, OLD.version, NEW.version, NEW.attempt, NEW.leader_epoch, NEW.continuation_state);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER job_runs_log AFTER INSERT OR UPDATE ON job_runs
  FOR EACH ROW EXECUTE FUNCTION baton_job_runs_log();

CREATE TABLE job_run_attempts (
  id            BIGSERIAL PRIMARY KEY,
  run_id        BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
  attempt       INTEGER NOT NULL CHECK (attempt >= 1),
  worker_id     TEXT,
  leader_epoch  BIGINT NOT NULL,
  lease_token   UUID,
  started_at    TIMESTAMPTZ,
  finished_at   TIMESTAMPTZ,
  outcome       TEXT NOT NULL CHECK (outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED', 'LOST')),
  exit_code     INTEGER,
  duration_ms   BIGINT CHECK (duration_ms IS NULL OR duration_ms >= 0),
  task_results  JSONB,
  UNIQUE (run_id, attempt)
);

CREATE TABLE events (
  id           BIGSERIAL PRIMARY KEY,
  kind         TEXT NOT NULL,
  payload      JSONB NOT NULL DEFAULT '{}'::jsonb,
  dedupe_key   TEXT UNIQUE,
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  processed_at TIMESTAMPTZ
);
CREATE INDEX events_unprocessed_idx ON events (processed_at, created_at);

-- A copy of a run that exhausted its attempts. No FK: it survives retention.
CREATE TABLE dead_letters (
  id                BIGSERIAL PRIMARY KEY,
  run_id            BIGINT NOT NULL UNIQUE,
  job_definition_id BIGINT,
  final_state       TEXT NOT NULL,
  attempts          INTEGER NOT NULL,
  error_code        TEXT,
  error_msg         TEXT,
  run_snapshot      JSONB NOT NULL,
  triage_status     TEXT NOT NULL DEFAULT 'pending' CHECK (triage_status IN ('pending', 'acknowledged', 'replayed', 'closed')),
  notes             TEXT,
  created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_triage_idx ON dead_letters (triage_status, created_at);

CREATE TABLE run_logs (
  id         BIGSERIAL PRIMARY KEY,
  run_id     BIGINT NOT NULL,
  attempt    INTEGER NOT NULL,
  task_index INTEGER NOT NULL DEFAULT 0,
  stream     TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr', 'system')),
  chunk      TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX run_logs_run_idx ON run_logs (run_id, attempt, id);
CREATE INDEX run_logs_created_idx ON run_logs (created_at);

CREATE TABLE settings (
  key        TEXT PRIMARY KEY,
  value      JSONB NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_by TEXT
);
INSERT INTO settings (key, value) VALUES
  ('reassign_after_ms', '10000'),
  ('heartbeat_interval_ms', '1000'),
  ('retention_days', '30'),
  ('dispatch_enabled', 'true');

CREATE TABLE audit_log (
  id      BIGSERIAL PRIMARY KEY,
  at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  actor   TEXT NOT NULL,
  action  TEXT NOT NULL,
  subject TEXT,
  epoch   BIGINT,
  details JSONB NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- Scheduling decisions with their epoch, so `baton ctl why` can explain a
-- run that did or did not happen.
CREATE TABLE decision_ledger (
  id                BIGSERIAL PRIMARY KEY,
  at                TIMESTAMPTZ NOT NULL DEFAULT now(),
  epoch             BIGINT NOT NULL,
  job_definition_id BIGINT,
  slot              TIMESTAMPTZ,
  decision          TEXT NOT NULL,
  run_id            BIGINT,
  details           JSONB NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX decision_ledger_job_slot_idx ON decision_ledger (job_definition_id, slot);
