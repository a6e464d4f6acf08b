-- Seed 000's staleness (docs/fencing.md, "Staleness: what stale_after
-- means"): a RUNNING run whose stale_after has passed is one for which no
-- heartbeat has been recorded for twice the heartbeat timeout. The leader
-- records a heartbeat for each running attempt its worker lists, at every
-- heartbeat interval, and each one moves stale_after on; so such a run's
-- worker has gone silent (the leader is then taking it through CONFIRMING,
-- continuation_state says where), or no leader is recording (none elected,
-- or one that cannot write). Liveness itself is judged by the leader from
-- what it holds in memory and read at its election (SPEC section 2): this
-- view is for operators and never decides anything. Reads the unfinished
-- runs only (job_runs_unfinished_job_idx).
CREATE VIEW baton_stale_runs AS
SELECT r.id AS run_id, coalesce(j.name, '(no job)') AS job, r.attempt, r.assigned_worker_id AS worker,
       r.leader_epoch, r.continuation_state, r.continuation_deadline_at, r.heartbeat_at, r.stale_after,
       round(extract(epoch FROM now() - r.stale_after)::numeric, 3) AS stale_for_s
FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id
WHERE r.finished_at IS NULL AND r.state = 'RUNNING' AND r.stale_after < now();
