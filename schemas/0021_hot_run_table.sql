-- A run table whose assignment, start and heartbeat are HOT updates
-- (SPEC section 2, amended 2026-11-26; docs/performance.md, "A HOT run
-- table").
--
-- PostgreSQL 15 writes an update in place on the row's page, with no new
-- index entry (a HOT update), only when no column that any index of the
-- table contains (key, expression or partial predicate) changes value, and
-- the page has room. With `state` in four indexes and `stale_after`,
-- `assigned_worker_id` and the dispatch partials' predicates in more, each
-- of a run's writes added an entry to every index: 55-67 index entries per
-- run. After this migration no index of job_runs contains a column that an
-- assignment, a start or a heartbeat writes (state, version, attempt,
-- leader_epoch, assigned_worker_id, lease_token, assigned_at, started_at,
-- heartbeat_at, stale_after, continuation_*, worker_instance, updated_at).
--
-- What each read finds its rows by instead:
--   * unfinished runs, in dispatch order (the dispatcher, a new leader's
--     read of the active runs, the unmatched and waiting reads): the open
--     index, (priority DESC, due_at, id) over the runs whose finished_at is
--     NULL. The in-flight runs are in it too; a read skips them by state.
--   * finished runs by time (retention, listings): (finished_at) over the
--     runs that have one.
--   * the slot key, the event key, idempotency over unfinished runs: as
--     before, "unfinished" now written finished_at IS NULL, which a CHECK
--     ties to the state.
--
-- The holders of an instance number or of the exclusive lock (overlap
-- control, schemas/0010) keep their two unique indexes: an assignment of a
-- run of a job with max_instances or exclusive_execution writes them, so
-- that assignment (only that one) is not HOT. See docs/performance.md.

-- Every write below is the migration's own, not a write of a run: the
-- write guard, the log and the statement triggers stay out of it.
ALTER TABLE job_runs DISABLE TRIGGER job_runs_guard;
ALTER TABLE job_runs DISABLE TRIGGER job_runs_log_update;
ALTER TABLE job_runs DISABLE TRIGGER job_runs_overlap;
ALTER TABLE job_runs DISABLE TRIGGER job_runs_succeeded;

-- finished_at is set exactly when the run is final. Every statement that
-- ends a run has always set it; a row that somehow lacks it (or keeps one
-- while not final) is made to agree, so that the CHECK below can hold.
UPDATE job_runs SET finished_at = updated_at
 WHERE finished_at IS NULL AND state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED');
UPDATE job_runs SET finished_at = NULL
 WHERE finished_at IS NOT NULL AND state NOT IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED');

ALTER TABLE job_runs ENABLE TRIGGER job_runs_guard;
ALTER TABLE job_runs ENABLE TRIGGER job_runs_log_update;
ALTER TABLE job_runs ENABLE TRIGGER job_runs_overlap;
ALTER TABLE job_runs ENABLE TRIGGER job_runs_succeeded;

ALTER TABLE job_runs ADD CONSTRAINT job_runs_finished_iff_final
  CHECK ((finished_at IS NULL) = (state NOT IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')));

-- The indexes that contain a column the hot writes change.
DROP INDEX job_runs_state_scheduled_idx;      -- state
DROP INDEX job_runs_worker_state_idx;         -- assigned_worker_id, state
DROP INDEX job_runs_stale_running_idx;        -- stale_after, state
DROP INDEX job_runs_dispatch_pending_idx;     -- state (predicate)
DROP INDEX job_runs_dispatch_retry_idx;       -- state (predicate)
DROP INDEX job_runs_dispatch_orphaned_idx;    -- state (predicate)
DROP INDEX job_runs_finished_idx;             -- state (predicate)
DROP INDEX job_runs_unfinished_job_idx;       -- state (predicate)
DROP INDEX job_runs_idempotency_active_idx;   -- state (predicate)

-- Room on each page for the next version of every row on it: a batch
-- writes every row of a page at once, and a version that does not fit on
-- its page is not HOT. 30 measured against 50 and 70 in docs/performance.md.
-- The column added below rewrites the table, so existing pages get it too.
ALTER TABLE job_runs SET (fillfactor = 30);

-- When a run is due for dispatch: its retry time once it has failed an
-- attempt, else its slot (or creation) or its jitter's start, whichever is
-- later. An assignment leaves next_attempt_at as it was (it used to clear
-- it), so no assignment, start or heartbeat changes due_at; a retry does.
ALTER TABLE job_runs ADD COLUMN due_at timestamptz
  GENERATED ALWAYS AS (coalesce(next_attempt_at, greatest(coalesce(scheduled_for, created_at), start_after))) STORED;

CREATE INDEX job_runs_open_idx ON job_runs (priority DESC, due_at, id) WHERE finished_at IS NULL;
CREATE INDEX job_runs_finished_idx ON job_runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX job_runs_unfinished_job_idx ON job_runs (job_definition_id) WHERE finished_at IS NULL;
CREATE UNIQUE INDEX job_runs_idempotency_active_idx ON job_runs (idempotency_key)
  WHERE idempotency_key IS NOT NULL AND finished_at IS NULL;
