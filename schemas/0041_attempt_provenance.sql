-- Attempt provenance (docs/scheduling.md, "What became of the previous
-- attempt"; docs/assurance.md): each attempt learns what became of the one
-- before it, and a worker's report that arrives after the leader gave up on
-- its attempt is recorded as what happened.
--
-- Why an attempt ended, in its row: the run's error_code at its end
-- ('failed', 'timeout', 'attempt_lost', ...). The run's own row is
-- overwritten by the next attempt; this is what is left of the reason.
-- Rows written before this migration have none.
ALTER TABLE job_run_attempt_rows ADD COLUMN error_code TEXT;

-- A worker's report of an attempt the leader had already ended without it:
-- declared lost (its worker gone past the continuation deadline and margin)
-- or timed out (no finish within timeout + grace). The run is not changed by
-- it -- the leader has decided, and a retry may already be running -- but
-- what really happened is kept: "succeeded after it was declared lost".
-- One row per attempt, the first report wins (a worker resends until
-- acknowledged). Written through the fenced store API by the leader of
-- `leader_epoch`. Small: only attempts inside the at-least-once window get
-- one, and they go with their run (retention).
CREATE TABLE late_reports (
  run_id       BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
  attempt      INTEGER NOT NULL CHECK (attempt >= 1),
  worker_id    TEXT NOT NULL,
  lease_token  UUID NOT NULL,
  outcome      TEXT NOT NULL CHECK (outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')),
  exit_code    INTEGER,
  reported_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
  leader_epoch BIGINT NOT NULL,
  PRIMARY KEY (run_id, attempt)
);

-- What became of an ended attempt, as the next attempt is told it:
--   succeeded_unacknowledged  its worker reported success after the leader
--                             had given up on it (its side effects happened)
--   fenced_out                declared lost, and its worker reported later
--                             that it did not succeed (killed when its lease
--                             ran out, or failed)
--   lost_contact              declared lost, nothing heard since: it may have
--                             run to completion, side effects and all
--   timed_out                 it ran past its timeout and was stopped
--   failed                    it ended without success by its own report
CREATE FUNCTION baton_attempt_fate(outcome text, error_code text, late_outcome text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN late_outcome = 'SUCCEEDED' THEN 'succeeded_unacknowledged'
              WHEN error_code = 'attempt_lost' AND late_outcome IS NOT NULL THEN 'fenced_out'
              WHEN error_code = 'attempt_lost' OR outcome = 'LOST' THEN 'lost_contact'
              WHEN outcome = 'TIMED_OUT' THEN 'timed_out'
              ELSE 'failed' END
$$;

-- The provenance of attempt `next_attempt` of a run: 'fate|attempt|worker'
-- of the attempt before it, or NULL when it is the first. An earlier
-- attempt that succeeded unacknowledged is named instead of the one just
-- before, whatever became of that one: its side effects happened, and that
-- is what a task that must not repeat them needs to know.
CREATE FUNCTION baton_previous_attempt(run bigint, next_attempt int) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT baton_attempt_fate(a.outcome, a.error_code, l.outcome) || '|' || a.attempt || '|' || coalesce(a.worker_id, '')
    FROM job_run_attempt_rows a LEFT JOIN late_reports l ON l.run_id = a.run_id AND l.attempt = a.attempt
   WHERE a.run_id = run AND a.attempt < next_attempt
   ORDER BY l.outcome IS NOT DISTINCT FROM 'SUCCEEDED' DESC, a.attempt DESC LIMIT 1
$$;

-- Every attempt, now with why it ended and what its worker reported late.
CREATE OR REPLACE VIEW job_run_attempts AS
  SELECT a.id, a.run_id, a.attempt, a.worker_id, a.leader_epoch, a.lease_token, a.started_at, a.finished_at,
         a.outcome, a.exit_code, a.duration_ms, a.task_results, a.error_code, l.outcome AS late_outcome,
         l.exit_code AS late_exit_code, l.reported_at AS late_reported_at
    FROM job_run_attempt_rows a LEFT JOIN late_reports l ON l.run_id = a.run_id AND l.attempt = a.attempt
  UNION ALL
  SELECT NULL::bigint, r.id, r.attempt, r.assigned_worker_id, r.leader_epoch, r.lease_token, r.started_at,
         r.finished_at, r.outcome, r.exit_code,
         greatest(0, floor(extract(epoch FROM (r.finished_at - r.started_at)) * 1000))::bigint, r.result->'tasks',
         r.error_code, l.outcome, l.exit_code, l.reported_at
    FROM job_runs r LEFT JOIN late_reports l ON l.run_id = r.id AND l.attempt = r.attempt
   WHERE r.outcome IS NOT NULL;
