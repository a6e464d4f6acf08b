-- pgbench script (-D t=TABLE): bare.sql plus the rows Baton writes beside
-- the run: one transition-log row per step and the attempt row at the
-- finish, written by the same statement (a CTE, the cheapest form).
SELECT nextval('floor_batch') * 64 AS base \gset
WITH r AS (INSERT INTO :t (id, max_attempts, leader_epoch, trigger_kind) SELECT :base + g, 1, 1, 'api' FROM generate_series(1, 45) g RETURNING id)
INSERT INTO floor_log (run_id, to_state, to_version, attempt, leader_epoch, continuation_state) SELECT id, 'PENDING', 1, 1, 1, 'NONE' FROM r;
WITH r AS (UPDATE :t SET state = 'ASSIGNED', version = version + 1, assigned_worker_id = 'w1', assigned_at = now(), lease_token = gen_random_uuid(), updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'PENDING' AND version = 1 AND leader_epoch <= 1) IS TRUE RETURNING id)
INSERT INTO floor_log (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state) SELECT id, 'PENDING', 'ASSIGNED', 1, 2, 1, 1, 'NONE' FROM r;
WITH r AS (UPDATE :t SET state = 'RUNNING', version = version + 1, started_at = now(), heartbeat_at = now(), stale_after = now() + interval '30 s', updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'ASSIGNED' AND version = 2 AND leader_epoch <= 1) IS TRUE RETURNING id)
INSERT INTO floor_log (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state) SELECT id, 'ASSIGNED', 'RUNNING', 2, 3, 1, 1, 'NONE' FROM r;
WITH r AS (UPDATE :t SET state = 'SUCCEEDED', version = version + 1, finished_at = now(), result = '{}', updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'RUNNING' AND version = 3 AND leader_epoch <= 1) IS TRUE RETURNING id, lease_token, started_at),
     l AS (INSERT INTO floor_log (run_id, from_state, to_state, from_version, to_version, attempt, leader_epoch, continuation_state) SELECT id, 'RUNNING', 'SUCCEEDED', 3, 4, 1, 1, 'NONE' FROM r)
INSERT INTO floor_attempts (run_id, attempt, worker_id, leader_epoch, lease_token, started_at, finished_at, outcome) SELECT id, 1, 'w1', 1, lease_token, started_at, now(), 'SUCCEEDED' FROM r;
