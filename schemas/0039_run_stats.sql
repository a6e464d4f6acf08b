-- Run statistics over time, for the dashboard's charts (docs/dashboard.md,
-- "Charts") and GET /api/v1/stats/series: per minute and job, the runs that
-- finished by outcome, their duration and their trigger-to-start latency at
-- p50 and p95; per minute, the backlog (runs due and waiting) and the age of
-- the oldest. Rolled up from the run table once a minute by any node (one
-- at a time, under an advisory lock), so a chart over seven days reads at
-- most 10,080 rows per job instead of every run of the week, and the history
-- outlives the runs' retention. Kept eight days.

CREATE TABLE run_stats_minutes (
  minute               TIMESTAMPTZ NOT NULL,
  -- 0 for runs of a deleted job (job_runs.job_definition_id is NULL).
  job_definition_id    BIGINT NOT NULL,
  succeeded            INT NOT NULL,
  failed               INT NOT NULL,
  timed_out            INT NOT NULL,
  canceled             INT NOT NULL,
  -- From the start of the attempt that ended the run to its end.
  duration_p50_ms      REAL,
  duration_p95_ms      REAL,
  -- From the time the run was due to its start, of runs that finished on
  -- their first attempt (a retried run's start is its last attempt's).
  start_latency_p50_ms REAL,
  start_latency_p95_ms REAL,
  PRIMARY KEY (minute, job_definition_id)
);

CREATE TABLE run_backlog_samples (
  minute               TIMESTAMPTZ PRIMARY KEY,
  pending              INT NOT NULL,
  oldest_pending_age_s REAL NOT NULL
);

-- How far the roll-up has gone: minutes before `rolled_through` are in
-- run_stats_minutes (a minute with no finished run has no row).
CREATE TABLE run_stats_rollup (
  id             INT PRIMARY KEY CHECK (id = 1),
  rolled_through TIMESTAMPTZ
);
INSERT INTO run_stats_rollup VALUES (1, NULL);

-- The per-minute rows of runs that finished in [from_at, to_at): what the
-- roll-up stores and what GET /api/v1/stats/series computes live for the
-- minutes not rolled up yet. One definition for both.
CREATE FUNCTION baton_run_stats_between(from_at timestamptz, to_at timestamptz)
RETURNS TABLE (minute timestamptz, job_definition_id bigint, succeeded int, failed int, timed_out int, canceled int,
               duration_p50_ms real, duration_p95_ms real, start_latency_p50_ms real, start_latency_p95_ms real)
LANGUAGE sql STABLE AS $$
  SELECT date_trunc('minute', r.finished_at), coalesce(r.job_definition_id, 0),
         (count(*) FILTER (WHERE r.state = 'SUCCEEDED'))::int,
         (count(*) FILTER (WHERE r.state = 'FAILED'))::int,
         (count(*) FILTER (WHERE r.state = 'TIMED_OUT'))::int,
         (count(*) FILTER (WHERE r.state = 'CANCELED'))::int,
         (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000))::real,
         (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000))::real,
         (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.started_at - greatest(
            coalesce(r.scheduled_for, r.created_at), coalesce(r.start_after, r.created_at))) * 1000)
            FILTER (WHERE r.attempt = 1))::real,
         (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM r.started_at - greatest(
            coalesce(r.scheduled_for, r.created_at), coalesce(r.start_after, r.created_at))) * 1000)
            FILTER (WHERE r.attempt = 1))::real
    FROM job_runs r
   WHERE r.finished_at >= from_at AND r.finished_at < to_at
   GROUP BY 1, 2
$$;

-- One step of the roll-up: a backlog sample for this minute, then up to
-- `max_minutes` whole minutes that ended at least a minute ago (a run's
-- finished_at is its statement's start: a commit a few seconds after the
-- minute still lands in it). Returns how many minutes are left to roll up,
-- so a caller that starts far behind calls it again. Another session holding
-- the lock makes it a no-op (0).
CREATE FUNCTION baton_roll_up_run_stats(max_minutes int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  from_m timestamptz;
  upto   timestamptz := date_trunc('minute', now()) - interval '1 minute';
  to_m   timestamptz;
BEGIN
  IF NOT pg_try_advisory_xact_lock(200926003900039) THEN
    RETURN 0;
  END IF;
  INSERT INTO run_backlog_samples (minute, pending, oldest_pending_age_s)
  SELECT date_trunc('minute', now()), count(*), coalesce(extract(epoch FROM now() - min(due_at)), 0)
    FROM job_runs
   WHERE finished_at IS NULL AND state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING') AND due_at <= now()
  ON CONFLICT (minute) DO NOTHING;
  SELECT greatest(coalesce(rolled_through, upto - interval '8 days'), upto - interval '8 days')
    INTO from_m FROM run_stats_rollup WHERE id = 1 FOR UPDATE;
  to_m := least(upto, from_m + make_interval(mins => max_minutes));
  IF to_m > from_m THEN
    INSERT INTO run_stats_minutes SELECT * FROM baton_run_stats_between(from_m, to_m)
    ON CONFLICT DO NOTHING;
    UPDATE run_stats_rollup SET rolled_through = to_m WHERE id = 1;
  END IF;
  DELETE FROM run_stats_minutes WHERE minute < now() - interval '8 days';
  DELETE FROM run_backlog_samples WHERE minute < now() - interval '8 days';
  RETURN greatest(0, extract(epoch FROM upto - to_m)::int / 60);
END
$$;
