-- An assignment that carries the start grant (SPEC sections 4 and 6 as
-- amended 2026-11-26; docs/fencing.md, "An assignment that carries the
-- start"): to a worker that has a free slot, one fenced statement writes
-- both steps, PENDING / ORPHANED / RETRY_WAITING -> ASSIGNED -> RUNNING,
-- the version advancing by two and each step recorded in the run's history
-- (two entries, one writer's transaction). The write guard accepts exactly
-- that shape besides the single step of every other write:
--
--   * the state goes from PENDING, ORPHANED or RETRY_WAITING to RUNNING,
--     continuation NONE, the attempt as the assignment step leaves it (it
--     may grow only from ORPHANED or RETRY_WAITING, as for a single step);
--   * the history is the old one followed by two entries: the ASSIGNED
--     step at version + 1 and the RUNNING step at version + 2, both at the
--     row's new epoch, in one transaction.
--
-- Nothing else changes: a run can still only become RUNNING from ASSIGNED
-- with the assignment's own worker and lease token (the statement makes both
-- in the same row write, store/pg/run_transitions.cpp).

-- The guard's function is called only for a write its WHEN refused; it says
-- why. A write that advanced the version by two is judged as a granted
-- assignment.
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
  IF NEW.version = OLD.version + 2 THEN
    IF NOT (OLD.state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING') AND NEW.state = 'RUNNING') THEN
      RAISE EXCEPTION 'job_runs %: only an assignment carrying the start grant advances the version by two'
                      ' (PENDING, ORPHANED or RETRY_WAITING -> RUNNING), not % -> %', OLD.id, OLD.state, NEW.state
        USING ERRCODE = 'check_violation';
    END IF;
    n := cardinality(NEW.history);
    RAISE EXCEPTION 'job_runs %: an assignment carrying the start grant must record both steps in history'
                    ' (ASSIGNED at version %, RUNNING at version %, epoch %, attempt %, one transaction);'
                    ' the last entries are %', OLD.id, OLD.version + 1, NEW.version, NEW.leader_epoch, NEW.attempt,
      CASE WHEN n >= 14 THEN NEW.history[n - 13 : n]::text ELSE 'missing' END
      USING ERRCODE = 'check_violation';
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

-- The guard's WHEN calls no SQL function any more. PostgreSQL prepares a
-- trigger's WHEN for every statement, and inlines each SQL function in it
-- there, parsing its body each time: measured in the throughput phase, one
-- more function in this WHEN cost ~60 us of the database's time per run
-- (docs/performance.md, "A trigger's WHEN is prepared per statement"). The
-- transition table (baton_run_transition_allowed) and the history codes
-- (baton_run_history_code: the state's number, + 16 CONFIRMING, + 256 *
-- attempt) are written out; the functions stay for everything else.
DROP TRIGGER job_runs_guard ON job_runs;
CREATE TRIGGER job_runs_guard AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (
    -- a detach by a job's deletion is the database's own update (0015)
    NOT (OLD.job_definition_id IS NOT NULL AND NEW.job_definition_id IS NULL
         AND NEW.version = OLD.version AND NEW.state = OLD.state AND NEW.attempt = OLD.attempt
         AND NEW.leader_epoch = OLD.leader_epoch AND NEW.history = OLD.history)
    -- a single step (every write but the one below) ...
    AND (NEW.id = OLD.id
         AND NEW.version = OLD.version + 1
         AND CASE WHEN NEW.state = OLD.state
                  THEN OLD.state NOT IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')
                  ELSE CASE OLD.state
                         -- baton_run_transition_allowed as of 0005 (store test
                         -- Schema.DatabaseRejectsEveryIllegalTransitionPair
                         -- holds it to the product's table, pair by pair)
                         WHEN 'PENDING' THEN NEW.state IN ('ASSIGNED', 'FAILED', 'CANCELED')
                         WHEN 'ASSIGNED' THEN NEW.state IN ('RUNNING', 'ORPHANED', 'CANCELED')
                         WHEN 'ORPHANED' THEN NEW.state IN ('ASSIGNED', 'FAILED', 'CANCELED')
                         WHEN 'RUNNING' THEN NEW.state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'RETRY_WAITING',
                                                           'CANCELED')
                         WHEN 'RETRY_WAITING' THEN NEW.state IN ('ASSIGNED', 'SUCCEEDED', 'FAILED', 'CANCELED')
                         ELSE false END END
         AND NEW.attempt >= OLD.attempt
         AND (NEW.attempt = OLD.attempt OR (NEW.state = 'ASSIGNED' AND OLD.state IN ('ORPHANED', 'RETRY_WAITING')))
         AND NEW.leader_epoch >= OLD.leader_epoch
         AND NEW.history[cardinality(NEW.history) - 6] = NEW.version
         AND NEW.history[cardinality(NEW.history) - 4] & ~32::bigint
             = CASE NEW.state WHEN 'PENDING' THEN 1 WHEN 'ASSIGNED' THEN 2 WHEN 'RUNNING' THEN 3
                              WHEN 'RETRY_WAITING' THEN 4 WHEN 'ORPHANED' THEN 5 WHEN 'SUCCEEDED' THEN 6
                              WHEN 'FAILED' THEN 7 WHEN 'TIMED_OUT' THEN 8 WHEN 'CANCELED' THEN 9 END
               + CASE WHEN NEW.continuation_state = 'CONFIRMING' THEN 16 ELSE 0 END + 256 * NEW.attempt::bigint
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
                  END) IS NOT TRUE
    -- ... nor a granted assignment's double step (history codes ASSIGNED
    -- 2 and RUNNING 3, + 256 * attempt).
    AND (NEW.version = OLD.version + 2
         AND OLD.state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING')
         AND NEW.state = 'RUNNING'
         AND NEW.continuation_state = 'NONE'
         AND (NEW.attempt = OLD.attempt
              OR (NEW.attempt = OLD.attempt + 1 AND OLD.state IN ('ORPHANED', 'RETRY_WAITING')))
         AND NEW.leader_epoch >= OLD.leader_epoch
         AND cardinality(NEW.history) = cardinality(OLD.history) + 14
         AND NEW.history[1 : cardinality(OLD.history)] = OLD.history
         -- the ASSIGNED step, then the RUNNING step, one transaction
         AND NEW.history[cardinality(OLD.history) + 1 : cardinality(OLD.history) + 4]
             = ARRAY[OLD.version + 1, OLD.version, 2 + 256 * NEW.attempt::bigint, NEW.leader_epoch]
         AND NEW.history[cardinality(OLD.history) + 8 : cardinality(OLD.history) + 11]
             = ARRAY[NEW.version, OLD.version + 1, 3 + 256 * NEW.attempt::bigint, NEW.leader_epoch]
         AND NEW.history[cardinality(OLD.history) + 12] = NEW.history[cardinality(OLD.history) + 5]) IS NOT TRUE)
  EXECUTE FUNCTION baton_job_runs_guard();
