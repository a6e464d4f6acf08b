-- SPEC 10.11: ANALYZE after a bulk load. A batch of triggers
-- (POST /api/v1/triggers, up to 500 runs) that grows the run table by a
-- fifth or more of what the planner last counted leaves its estimates
-- wrong until autovacuum's next round (up to a minute, and only past
-- 50 rows + 10 %): the due read and the dispatch plan then choose their
-- plans from a table that no longer exists. The batch's own transaction
-- calls this function after its insert, so the statistics are new when
-- the runs become visible (an ANALYZE after the commit would hold back
-- the xmin horizon while the leader assigns them, and their updates would
-- find no room for HOT versions: docs/performance.md, "Budgets").
--
-- Returns whether it analyzed. Batches under 100 runs never do (one
-- catalog read is not worth it there). SECURITY DEFINER: only the table's
-- owner may ANALYZE it, and the node may run as a runtime role that does
-- not own it (docs/operations.md, "A runtime role apart from the owner"); what it runs is fixed
-- here, and an ANALYZE of job_runs is what autovacuum runs anyway.
CREATE FUNCTION baton_analyze_after_bulk_load(created BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  counted REAL;
BEGIN
  IF created < 100 THEN
    RETURN false;
  END IF;
  SELECT reltuples INTO counted FROM pg_class WHERE oid = 'job_runs'::regclass;
  IF created < 0.2 * greatest(counted, 0) THEN
    RETURN false;
  END IF;
  ANALYZE job_runs;
  RETURN true;
END $$;

DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION baton_analyze_after_bulk_load(BIGINT) SET search_path = %I, pg_temp',
                 current_schema());
END $$;
