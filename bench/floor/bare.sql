-- pgbench script (-D t=TABLE): 45 runs created, assigned, started and
-- finished, one statement per step, each its own transaction, with the
-- version and state predicates of the real writes. As there, the rows are
-- found by id alone and the other predicates are one check no index can
-- serve: on a young table without statistics the planner would otherwise
-- intersect the state index with the id range (docs/performance.md, "A plan
-- quadratic in the batch"). No log, no attempt row.
SELECT nextval('floor_batch') * 64 AS base \gset
INSERT INTO :t (id, max_attempts, leader_epoch, trigger_kind) SELECT :base + g, 1, 1, 'api' FROM generate_series(1, 45) g;
UPDATE :t SET state = 'ASSIGNED', version = version + 1, assigned_worker_id = 'w1', assigned_at = now(), lease_token = gen_random_uuid(), updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'PENDING' AND version = 1 AND leader_epoch <= 1) IS TRUE;
UPDATE :t SET state = 'RUNNING', version = version + 1, started_at = now(), heartbeat_at = now(), stale_after = now() + interval '30 s', updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'ASSIGNED' AND version = 2 AND leader_epoch <= 1) IS TRUE;
UPDATE :t SET state = 'SUCCEEDED', version = version + 1, finished_at = now(), result = '{}', updated_at = now() WHERE id BETWEEN :base + 1 AND :base + 45 AND (state = 'RUNNING' AND version = 3 AND leader_epoch <= 1) IS TRUE;
