-- Indexes that match the dispatcher's query exactly (store/pg/pg_leader_store.cpp,
-- due_runs): one slice per dispatchable state, each read in dispatch order
-- and cut by LIMIT, so finding the next runs costs the same with 20 or
-- 2,000,000 rows in job_runs. The order is priority, then the time the run
-- became due (its slot for cron runs, its creation for API runs), then id.
CREATE INDEX job_runs_dispatch_pending_idx
  ON job_runs (priority DESC, (coalesce(scheduled_for, created_at)), id)
  WHERE state = 'PENDING';
CREATE INDEX job_runs_dispatch_retry_idx
  ON job_runs (priority DESC, next_attempt_at, id)
  WHERE state = 'RETRY_WAITING';
CREATE INDEX job_runs_dispatch_orphaned_idx
  ON job_runs (priority DESC, id)
  WHERE state = 'ORPHANED';
