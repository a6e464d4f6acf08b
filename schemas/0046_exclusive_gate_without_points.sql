-- exclusive_execution without a gate on every other run (SPEC section 2 as
-- amended 2026-12-03: a column that only overlap control writes may be
-- indexed only if the assignment of a run whose job has no such rule
-- leaves it unchanged).
--
-- Until now, while some live job was exclusive, every run made active took
-- a gate, the point of its own id (schemas/0033), and the exclusion
-- constraint refused a point beside an exclusive run's whole line. The gate
-- is a column of that constraint's index, so defining one exclusive job
-- made every other run's assignment a non-HOT update: an index entry more
-- per run, and the table's pages filling with dead versions.
--
-- Now only an exclusive job's run takes a gate (the whole line). The rest
-- is held by the run table's lock and by a check in the assigning statement
-- (store/pg/run_transitions.cpp, docs/scheduling.md "Exclusive execution"):
--
-- * An exclusive run is made active only by a transaction that first took
--   job_runs in SHARE ROW EXCLUSIVE mode (it waits for every write of the
--   run table under way, and holds back the next until it commits); its
--   statement, with a snapshot taken after that lock, finds no other run
--   active. The statement refuses an exclusive run when its transaction
--   does not hold that lock, so no caller can skip it.
-- * Any other run is refused while an exclusive run holds its gate. Its
--   statement took ROW EXCLUSIVE on job_runs before its snapshot (at bind),
--   so a gate committed before it ran is in its snapshot, and one being
--   written while it runs must wait for it to commit.
-- * Two exclusive runs still meet in the exclusion constraint.
--
-- Runs made active before this migration may hold a point gate: it is
-- given back when they end, and until then the constraint keeps refusing an
-- exclusive run beside them, as before.

-- Raised by an assigning statement for the first run it wrote that does not
-- hold what its job requires (0023, 0033, 0035), now with the reason an
-- exclusive gate refused it: an exclusive run written without the run
-- table's lock, or another run while an exclusive one is active.
CREATE FUNCTION baton_refuse_activation(run bigint, job text, lim int, instance_no int, state text,
                                        ungated bigint, key_refused text, rate_refused text,
                                        gate_refused text) RETURNS int
  LANGUAGE plpgsql AS $$
BEGIN
  IF gate_refused IS NOT NULL THEN
    RAISE EXCEPTION 'run % of job % cannot become %: %', run, job, state, gate_refused
      USING ERRCODE = 'exclusion_violation';
  END IF;
  RETURN baton_refuse_activation(run, job, lim, instance_no, state, ungated, key_refused, rate_refused);
END $$;

-- Whether this transaction holds the run table in a mode that keeps every
-- other writer of it out (SHARE ROW EXCLUSIVE or stronger).
CREATE FUNCTION baton_holds_run_table() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'job_runs'::regclass
                    AND l.pid = pg_backend_pid() AND l.granted
                    AND l.mode IN ('ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'))
$$;

COMMENT ON COLUMN job_runs.gate IS
  'exclusive_execution: the whole line while an exclusive job''s run is ASSIGNED or RUNNING, else NULL '
  '(a point: a run made active under schemas/0033 before 0046)';
