-- The write guard's WHEN, cheaper (docs/performance.md, "The write guard's
-- cost"): the same rules as schemas/0024, with the allowed transitions (and
-- a same-state write of a run that is not final) one look-up of the pair
-- "from>to" in a constant array instead of nested CASEs of IN lists.
-- PostgreSQL reads a trigger's WHEN from its stored node tree and prepares
-- it at every statement, and evaluates it at every row; the nested CASEs
-- made the larger part of that tree and cost about 10 us per run across
-- the assignment, start and finish (bench/statement-cost, 48 runs a
-- statement). Nothing else changes.

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
         -- baton_run_transition_allowed as of 0005, and a same-state write
         -- of a run that is not final, as one look-up of "from>to" in the
         -- table of allowed pairs (store test
         -- Schema.DatabaseRejectsEveryIllegalTransitionPair holds it to the
         -- product's table, pair by pair)
         AND (OLD.state || '>' || NEW.state) = ANY ('{PENDING>PENDING,ASSIGNED>ASSIGNED,RUNNING>RUNNING,'
               'RETRY_WAITING>RETRY_WAITING,ORPHANED>ORPHANED,'
               'PENDING>ASSIGNED,PENDING>FAILED,PENDING>CANCELED,'
               'ASSIGNED>RUNNING,ASSIGNED>ORPHANED,ASSIGNED>CANCELED,'
               'ORPHANED>ASSIGNED,ORPHANED>FAILED,ORPHANED>CANCELED,'
               'RUNNING>SUCCEEDED,RUNNING>FAILED,RUNNING>TIMED_OUT,RUNNING>RETRY_WAITING,RUNNING>CANCELED,'
               'RETRY_WAITING>ASSIGNED,RETRY_WAITING>SUCCEEDED,RETRY_WAITING>FAILED,RETRY_WAITING>CANCELED}'::text[])
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
