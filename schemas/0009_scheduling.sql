-- Scheduling (docs/scheduling.md): the cron cursor, the misfire settings and
-- the decision ledger's ranges.

-- The newest cron slot planned for a job: created, or given up and recorded
-- in the decision ledger. Planning continues after it, so a gap of any
-- length is crossed once, and a slot given up is never planned again.
-- Written only by the leader's fenced statements.
ALTER TABLE job_definitions ADD COLUMN cron_cursor TIMESTAMPTZ;
UPDATE job_definitions j SET cron_cursor = (
  SELECT max(r.scheduled_for) FROM job_runs r WHERE r.job_definition_id = j.id AND r.trigger_kind = 'cron');

-- run_all: at most this many missed slots of one gap run (the newest).
ALTER TABLE job_definitions ADD COLUMN catch_up_limit INTEGER NOT NULL DEFAULT 100
  CHECK (catch_up_limit BETWEEN 0 AND 10000);
-- A slot not started within this long after its time is given up.
ALTER TABLE job_definitions ADD COLUMN starting_deadline_ms BIGINT
  CHECK (starting_deadline_ms IS NULL OR starting_deadline_ms >= 1000);
-- When an operator resumed the job (or a definition turned it live again):
-- the ledger says a gap before it was a pause, not a missing leader.
ALTER TABLE job_definitions ADD COLUMN schedule_resumed_at TIMESTAMPTZ;

-- A ledger entry covers one slot (`slot`) or a range of slots given up
-- together (`slot` .. `slot_last`, `slot_count` of them, NULL when too many
-- to count), with a machine-readable `reason`.
ALTER TABLE decision_ledger ADD COLUMN reason TEXT;
ALTER TABLE decision_ledger ADD COLUMN slot_last TIMESTAMPTZ;
ALTER TABLE decision_ledger ADD COLUMN slot_count BIGINT;
ALTER TABLE decision_ledger ADD CONSTRAINT decision_ledger_range_chk
  CHECK (slot_last IS NULL OR (slot IS NOT NULL AND slot_last >= slot));
-- `baton ctl why JOB TIME` finds the ranges that cover a slot.
CREATE INDEX decision_ledger_ranges_idx ON decision_ledger (job_definition_id, slot_last)
  WHERE slot_last IS NOT NULL;
