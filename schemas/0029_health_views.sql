-- Health and statistics in the database (seeds 003 and 004;
-- docs/operations.md, "Health in SQL"): views any operator can query with
-- psql or a SQL dashboard, no Prometheus needed. They read the tables every
-- leader writes, so they survive leader changes (the /metrics counters of a
-- node start over with it). Read-only, and never read by Baton's own
-- decisions.

-- The workers by freshness of their last recorded heartbeat. The leader
-- records heartbeats in the registry at a bounded rate (every 5 s, or every
-- attached/50 seconds in a fleet of more than 250: docs/operations.md,
-- "Large fleets"), so the thresholds scale with that cadence: fresh within
-- two recordings and 5 s, warning within six and 15 s, stale beyond. A
-- worker that stops talking is detached by the leader within its heartbeat
-- timeout; an ATTACHED worker that is stale here means no leader has been
-- recording (none elected, or one that cannot write).
CREATE VIEW baton_worker_health AS
WITH cadence AS (
  SELECT greatest(5.0, count(*) FILTER (WHERE state = 'ATTACHED') / 50.0) AS every_s FROM workers
)
SELECT w.worker_id, w.state, w.labels, w.capacity, w.attached_node_id, w.attached_epoch, w.last_heartbeat_at,
       round(extract(epoch FROM now() - w.last_heartbeat_at)::numeric, 3) AS heartbeat_age_s,
       c.every_s AS recorded_every_s,
       CASE WHEN w.state <> 'ATTACHED' THEN 'detached'
            WHEN w.last_heartbeat_at IS NULL THEN 'stale'
            WHEN now() - w.last_heartbeat_at <= (2 * c.every_s + 5) * interval '1 second' THEN 'fresh'
            WHEN now() - w.last_heartbeat_at <= (6 * c.every_s + 15) * interval '1 second' THEN 'warning'
            ELSE 'stale' END AS freshness
FROM workers w CROSS JOIN cadence c;

-- The backlog per job: unfinished runs by state, and how long the oldest
-- run that could start has waited (a PENDING run from its due time -- its
-- slot, creation or jitter -- so a run created ahead of its slot does not
-- count as waiting; an ORPHANED or RETRY_WAITING one from when it became
-- due). Reads the unfinished runs only (job_runs_unfinished_job_idx).
CREATE VIEW baton_job_backlog AS
SELECT coalesce(j.name, '(no job)') AS job,
       count(*) FILTER (WHERE r.state = 'PENDING' AND r.due_at <= now()) AS pending,
       count(*) FILTER (WHERE r.state = 'PENDING' AND r.due_at > now()) AS scheduled_ahead,
       count(*) FILTER (WHERE r.state = 'ORPHANED') AS orphaned,
       count(*) FILTER (WHERE r.state = 'RETRY_WAITING') AS retry_waiting,
       count(*) FILTER (WHERE r.state = 'ASSIGNED') AS assigned,
       count(*) FILTER (WHERE r.state = 'RUNNING') AS running,
       round(coalesce(extract(epoch FROM now() - min(r.due_at) FILTER (
         WHERE r.state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING') AND r.due_at <= now())), 0)::numeric, 3)
         AS oldest_waiting_s
FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id
WHERE r.finished_at IS NULL
GROUP BY j.name;

-- Dead letters by job and triage status.
CREATE VIEW baton_dead_letter_summary AS
SELECT coalesce(j.name, '(no job)') AS job, d.triage_status, count(*) AS letters,
       min(d.created_at) AS oldest_at, max(d.created_at) AS newest_at
FROM dead_letters d LEFT JOIN job_definitions j ON j.id = d.job_definition_id
GROUP BY 1, 2;

-- Per-job execution statistics over the last hour and the last day: runs
-- that finished in the window by outcome, and the duration (start of the
-- attempt that ended the run to its end) at the median and the 95th
-- percentile. From the run table itself, so what it says outlives any
-- leader; a retention shorter than a day (retention_days) shortens the
-- 24h window. Reads the window's finished runs (job_runs_finished_idx).
CREATE VIEW baton_job_stats AS
SELECT coalesce(j.name, '(no job)') AS job, w.name AS "window",
       count(*) AS runs,
       count(*) FILTER (WHERE r.state = 'SUCCEEDED') AS succeeded,
       count(*) FILTER (WHERE r.state = 'FAILED') AS failed,
       count(*) FILTER (WHERE r.state = 'TIMED_OUT') AS timed_out,
       count(*) FILTER (WHERE r.state = 'CANCELED') AS canceled,
       round(percentile_cont(0.5) WITHIN GROUP (
         ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000)::numeric, 1) AS duration_p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (
         ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000)::numeric, 1) AS duration_p95_ms
FROM (VALUES ('1h', interval '1 hour'), ('24h', interval '1 day')) AS w(name, span)
JOIN job_runs r ON r.finished_at >= now() - w.span
LEFT JOIN job_definitions j ON j.id = r.job_definition_id
GROUP BY 1, 2;
