-- A run's history in its own row (SPEC section 2 as amended 2026-11-26:
-- transitions and attempts recorded in the same statement as the change,
-- in the cheapest durable form, readable as job_run_transitions and
-- job_run_attempts; docs/performance.md, "The history in the run's row").
--
-- Until now every write of a run inserted a row into job_run_transitions
-- (a statement trigger over the write's transition tables) and every end
-- of an attempt a row into job_run_attempts: five more rows, each with its
-- index entry, per NOOP run. Now:
--
--   * job_runs.history holds one entry of seven bigints per write,
--     appended by the writing statement itself (the insert's entry by the
--     insert trigger that already runs for every new run):
--       [to_version, from_version, code, leader_epoch, xid, at_us, continuation_timeout_ms]
--     code = state number (baton_run_state_no) + 16 if CONFIRMING
--            + 32 if a heartbeat + 256 * attempt.
--     Consecutive heartbeats of one attempt under one epoch share one
--     entry (its from_version is the first heartbeat's, its xid and time
--     the last one's): a run that runs for hours does not grow by one entry
--     a second. The write guard refuses a write whose entry is missing or
--     does not describe the row it wrote.
--   * the final attempt of a run lives in the run's row (outcome,
--     exit_code; worker, epoch, lease token, times and task results are
--     the row's own); an attempt that did not end the run (a retry) keeps
--     its row, now in job_run_attempt_rows.
--   * job_run_transitions and job_run_attempts are views over both, and
--     over the rows written before this migration (job_run_transitions_log,
--     job_run_attempt_rows), which stay as they were.

CREATE FUNCTION baton_run_state_no(state text) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT array_position(ARRAY['PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED', 'SUCCEEDED', 'FAILED',
                              'TIMED_OUT', 'CANCELED'], state)
$$;
CREATE FUNCTION baton_run_state_name(no int) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (ARRAY['PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT',
                'CANCELED'])[no]
$$;
-- The entry's code for a row in this state (without the heartbeat flag).
CREATE FUNCTION baton_run_history_code(state text, continuation text, attempt int) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT baton_run_state_no(state) + CASE WHEN continuation = 'CONFIRMING' THEN 16 ELSE 0 END + 256 * attempt::bigint
$$;

-- The entry a write appends, for writes made by hand (a repair, a test):
-- the product's statements build the same array inline (store/pg).
CREATE FUNCTION baton_run_history_entry(from_version bigint, state text, continuation text, attempt int,
                                        epoch bigint, continuation_ms bigint) RETURNS bigint[]
  LANGUAGE sql VOLATILE AS $$
  SELECT ARRAY[from_version + 1, from_version, baton_run_history_code(state, continuation, attempt), epoch,
               txid_current(), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, continuation_ms]
$$;

ALTER TABLE job_runs ADD COLUMN history bigint[] NOT NULL DEFAULT '{}',
                     ADD COLUMN outcome text CHECK (outcome IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED', 'LOST')),
                     ADD COLUMN exit_code int;

-- The rows written before: kept, under the names of what they now are.
DROP TRIGGER job_runs_log_insert ON job_runs;
DROP TRIGGER job_runs_log_update ON job_runs;
DROP FUNCTION baton_job_runs_log_insert();
DROP FUNCTION baton_job_runs_log_update();
ALTER TABLE job_run_transitions RENAME TO job_run_transitions_log;
ALTER TABLE job_run_attempts RENAME TO job_run_attempt_rows;

-- The insert's entry: written by the guard's insert trigger, which already
-- runs for every new run (a run is created PENDING at version 1).
CREATE OR REPLACE FUNCTION baton_job_runs_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n int;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.state <> 'PENDING' THEN
      RAISE EXCEPTION 'job_runs: a run is created PENDING, not %', NEW.state
        USING ERRCODE = 'check_violation';
    END IF;
    NEW.history := ARRAY[NEW.version, NULL, baton_run_history_code(NEW.state, NEW.continuation_state, NEW.attempt),
                         NEW.leader_epoch, txid_current(), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
                         NEW.continuation_timeout_ms];
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
  n := cardinality(NEW.history);
  RAISE EXCEPTION 'job_runs %: a write must record itself in history: an entry for version % in state % at epoch %'
                  ' (the last entry is %)', OLD.id, NEW.version, NEW.state, NEW.leader_epoch,
    CASE WHEN n >= 7 THEN NEW.history[n - 6 : n]::text ELSE 'missing' END
    USING ERRCODE = 'check_violation';
END $$;

-- The write guard (0001, 0015, 0018, 0020) checks the history as well: the
-- last entry is this write's (its version, the row's state, continuation,
-- attempt and epoch), appended after the entries the row had, or (a
-- heartbeat after a heartbeat) replacing the last one.
DROP TRIGGER job_runs_guard ON job_runs;
CREATE TRIGGER job_runs_guard AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (
    -- a detach by a job's deletion is the database's own update (0015)
    NOT (OLD.job_definition_id IS NOT NULL AND NEW.job_definition_id IS NULL
         AND NEW.version = OLD.version AND NEW.state = OLD.state AND NEW.attempt = OLD.attempt
         AND NEW.leader_epoch = OLD.leader_epoch AND NEW.history = OLD.history)
    AND (NEW.id = OLD.id
         AND NEW.version = OLD.version + 1
         AND CASE WHEN NEW.state = OLD.state
                  THEN OLD.state NOT IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')
                  ELSE baton_run_transition_allowed(OLD.state, NEW.state) END
         AND NEW.attempt >= OLD.attempt
         AND (NEW.attempt = OLD.attempt OR (NEW.state = 'ASSIGNED' AND OLD.state IN ('ORPHANED', 'RETRY_WAITING')))
         AND NEW.leader_epoch >= OLD.leader_epoch
         AND NEW.history[cardinality(NEW.history) - 6] = NEW.version
         AND NEW.history[cardinality(NEW.history) - 4] & ~32::bigint
             = baton_run_history_code(NEW.state, NEW.continuation_state, NEW.attempt)
         AND NEW.history[cardinality(NEW.history) - 3] = NEW.leader_epoch
         AND CASE WHEN cardinality(NEW.history) = cardinality(OLD.history) + 7
                  THEN NEW.history[cardinality(NEW.history) - 5] = OLD.version
                   AND NEW.history[1 : cardinality(OLD.history)] = OLD.history
                  ELSE cardinality(NEW.history) = cardinality(OLD.history)
                   AND NEW.history[cardinality(NEW.history) - 4] & 32 = 32
                   AND OLD.history[cardinality(OLD.history) - 4] = NEW.history[cardinality(NEW.history) - 4]
                   AND OLD.history[cardinality(OLD.history) - 3] = NEW.leader_epoch
                   AND NEW.history[cardinality(NEW.history) - 5] = OLD.history[cardinality(OLD.history) - 5]
                   AND NEW.history[1 : cardinality(OLD.history) - 7] = OLD.history[1 : cardinality(OLD.history) - 7]
                  END) IS NOT TRUE)
  EXECUTE FUNCTION baton_job_runs_guard();

-- Every write of a run, in the run's order: the rows logged before this
-- migration, then the entries of the row's history. `id` is the old log's
-- sequence for the rows it holds and NULL for entries in a row; read a
-- run's history in to_version order.
CREATE VIEW job_run_transitions AS
  SELECT l.id, l.run_id, l.from_state, l.to_state, l.from_version, l.to_version, l.attempt, l.leader_epoch,
         l.continuation_state, l.xid, l.at, l.continuation_timeout_ms
    FROM job_run_transitions_log l
  UNION ALL
  SELECT NULL::bigint, r.id,
         CASE WHEN e.k > 1 THEN baton_run_state_name((r.history[7 * (e.k - 2) + 3] & 15)::int)
              WHEN r.history[2] IS NOT NULL THEN
                (SELECT l.to_state FROM job_run_transitions_log l WHERE l.run_id = r.id
                  ORDER BY l.to_version DESC LIMIT 1) END,
         baton_run_state_name((r.history[7 * (e.k - 1) + 3] & 15)::int),
         r.history[7 * (e.k - 1) + 2], r.history[7 * (e.k - 1) + 1],
         (r.history[7 * (e.k - 1) + 3] >> 8)::int, r.history[7 * (e.k - 1) + 4],
         CASE WHEN r.history[7 * (e.k - 1) + 3] & 16 = 16 THEN 'CONFIRMING' ELSE 'NONE' END,
         r.history[7 * (e.k - 1) + 5], to_timestamp(r.history[7 * (e.k - 1) + 6] / 1e6),
         r.history[7 * (e.k - 1) + 7]
    FROM job_runs r, generate_series(1, cardinality(r.history) / 7) AS e(k);

-- Every attempt: the rows of attempts that did not end their run (and all
-- written before this migration), and each run's final attempt from the
-- run's row.
CREATE VIEW job_run_attempts AS
  SELECT a.id, a.run_id, a.attempt, a.worker_id, a.leader_epoch, a.lease_token, a.started_at, a.finished_at,
         a.outcome, a.exit_code, a.duration_ms, a.task_results
    FROM job_run_attempt_rows a
  UNION ALL
  SELECT NULL::bigint, r.id, r.attempt, r.assigned_worker_id, r.leader_epoch, r.lease_token, r.started_at,
         r.finished_at, r.outcome, r.exit_code,
         greatest(0, floor(extract(epoch FROM (r.finished_at - r.started_at)) * 1000))::bigint, r.result->'tasks'
    FROM job_runs r WHERE r.outcome IS NOT NULL;
