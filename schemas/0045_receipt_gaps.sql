-- Three ways of taking a receipt away that schemas/0042's check did not see
-- (docs/assurance.md, "Receipts", "What it cannot see"), each now reported
-- by `baton verify --receipts` beside baton_receipt_problems:
--
-- * An epoch's checkpoint set back to NULL. The election checkpointed every
--   earlier epoch that had none, so the next election wrote it again from
--   the chains' heads as they then stood, and blessed whatever had been
--   rewritten meanwhile. The election now writes only the checkpoint of the
--   epoch it ends (store/pg/pg_lease_store.cpp), and every epoch whose
--   successor was elected since receipts began must have one.
-- * A finished run (an attempt, a late report) inserted with SQL and dated
--   before receipts began: ends before then are not asked for a receipt.
--   What the date cannot hide is the row's id: a run created after
--   receipts began has an id above every run created before, and cannot
--   have ended before they began.
-- * An audit entry inserted with its trigger disabled: it has no receipt
--   (receipt_lane NULL), and nothing asked for one. Every entry above the
--   last one from before receipts must have one.

-- The ids below which rows may predate receipts: the last run created
-- before receipts began, and the last audit entry without a receipt before
-- the first one with one (on a fresh database, both 0).
ALTER TABLE receipts_began ADD COLUMN run_id BIGINT, ADD COLUMN audit_id BIGINT;
UPDATE receipts_began b
   SET run_id = coalesce((SELECT max(r.id) FROM job_runs r WHERE r.created_at < b.at), 0),
       audit_id = coalesce((SELECT min(a.id) - 1 FROM audit_log a WHERE a.receipt_lane IS NOT NULL),
                           (SELECT max(a.id) FROM audit_log a), 0);
ALTER TABLE receipts_began ALTER COLUMN run_id SET NOT NULL, ALTER COLUMN audit_id SET NOT NULL;

-- What is missing, in baton_receipt_problems' columns. Cheap beside it: the
-- epochs, the audit log since receipts began, and the finished runs from
-- before receipts began that retention still keeps (an index range of the
-- run table, empty once receipts are older than retention's horizon; the
-- bounds are plpgsql variables, so the planner sees their values, not the
-- third of the table it guesses for a bound it does not know). A row
-- created after receipts began but dated before them is a contradiction
-- whatever retention did, so no horizon here.
CREATE FUNCTION baton_receipt_gaps() RETURNS TABLE (kind text, epoch bigint, lane text, seq bigint, problem text)
  LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  b receipts_began;
BEGIN
  SELECT * INTO b FROM receipts_began WHERE id = 1;
  RETURN QUERY
  -- An epoch whose checkpoint was due: its successor's election wrote it.
  SELECT 'runs'::text, e.epoch, NULL::text, NULL::bigint, 'epoch ' || e.epoch || ' has no checkpoint, though epoch '
         || n.epoch || ' was elected after receipts began (the checkpoint removed)'
    FROM epoch_history e JOIN epoch_history n ON n.epoch = e.epoch + 1
   WHERE e.receipts IS NULL AND n.elected_at >= b.at
  UNION ALL
  -- Ends dated before receipts began by rows created after them.
  SELECT 'runs', r.leader_epoch, NULL, NULL, 'run ' || r.id || ' ended ' || r.state
         || ' with no receipt, dated before receipts began although created after them (its id is above '
         || b.run_id || ')'
    FROM job_runs r
   WHERE r.finished_at < b.at AND r.id > b.run_id
  UNION ALL
  SELECT 'runs', a.leader_epoch, NULL, NULL, 'attempt ' || a.attempt || ' of run ' || a.run_id || ' ended '
         || a.outcome || ' with no receipt, dated before receipts began although its run was created after them'
    FROM job_run_attempt_rows a
   WHERE a.run_id > b.run_id AND a.finished_at < b.at
  UNION ALL
  SELECT 'runs', t.leader_epoch, NULL, NULL, 'the late report of run ' || t.run_id || ' attempt ' || t.attempt
         || ' has no receipt, dated before receipts began although its run was created after them'
    FROM late_reports t
   WHERE t.run_id > b.run_id AND t.reported_at < b.at
  UNION ALL
  -- An audit entry written since receipts began without one.
  SELECT 'audit', 0::bigint, NULL, NULL, 'audit entry ' || a.id || ' (' || a.action || ') has no receipt (written'
         || ' with its trigger disabled)'
    FROM audit_log a
   WHERE a.id > b.audit_id AND a.receipt_lane IS NULL;
END $$;
