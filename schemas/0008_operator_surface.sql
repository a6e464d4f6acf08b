-- The operator's surface (docs/operations.md, docs/ctl.md): API tokens with
-- roles, an operator's hold on a worker, and the lineage of re-runs and
-- dead-letter replays.

-- Only the SHA-256 of a token is stored (hex); the token is shown once, when
-- it is created. A revoked token stays listed (who had access, until when).
CREATE TABLE api_tokens (
  id           BIGSERIAL PRIMARY KEY,
  name         TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  role         TEXT NOT NULL CHECK (role IN ('read', 'operate', 'admin')),
  token_sha256 TEXT NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  created_by   TEXT NOT NULL,
  last_used_at TIMESTAMPTZ,
  revoked_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX api_tokens_active_name_idx ON api_tokens (name) WHERE revoked_at IS NULL;

-- An operator's hold on a worker: `draining` finishes its in-flight work and
-- takes no new runs; `evicted` is also refused at hello, so its RUNNING
-- attempts go through the continuation rules and are retried elsewhere.
ALTER TABLE workers ADD COLUMN admin_state TEXT NOT NULL DEFAULT 'active'
  CHECK (admin_state IN ('active', 'draining', 'evicted'));

-- A re-run (of any run) or a dead-letter replay is a new run of the same job
-- with the same payload; `rerun_of` names the run it repeats.
ALTER TABLE job_runs ADD COLUMN rerun_of BIGINT;
ALTER TABLE job_runs DROP CONSTRAINT job_runs_trigger_kind_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_trigger_kind_check
  CHECK (trigger_kind IN ('cron', 'api', 'event', 'retry', 'system', 'rerun', 'replay'));
ALTER TABLE dead_letters ADD COLUMN replayed_run_ids BIGINT[] NOT NULL DEFAULT '{}';

-- Settings that no node reads are not offered: a value an operator can set
-- must take effect. `dispatch_enabled` is read by the leader every poll.
DELETE FROM settings WHERE key IN ('reassign_after_ms', 'heartbeat_interval_ms', 'retention_days');

-- GET /api/v1/runs/{id} shows the scheduling decisions recorded for a run.
CREATE INDEX decision_ledger_run_idx ON decision_ledger (run_id) WHERE run_id IS NOT NULL;
