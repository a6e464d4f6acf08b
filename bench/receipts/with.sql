-- See without.sql. The receipt of the :n ends, in epoch -1 (the bench's
-- own chains, removed after the measurement), one chain per connection.
\set a random(:lo, :hi - :n + 1)
WITH w AS MATERIALIZED (SELECT * FROM job_runs WHERE id BETWEEN :a::bigint AND :a::bigint + :n::int - 1)
, ends AS (SELECT baton_receipt_entry('run', id, attempt, state, outcome, assigned_worker_id, worker_instance, exit_code,
                                      leader_epoch, result -> 'tasks') AS entry
             FROM w WHERE state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED'))
, receipt AS (SELECT array_agg(entry) AS ends FROM ends HAVING count(*) > 0)
, receipt_digest AS (SELECT ends, sha256(convert_to(ends::text, 'UTF8')) AS digest FROM receipt)
, receipt_moved AS (UPDATE receipt_heads h SET seq = h.seq + 1, prev = h.hash, hash = sha256(h.hash || d.digest),
                           digest = d.digest FROM receipt_digest d
                     WHERE h.kind = 'runs' AND h.epoch = -1 AND h.lane = baton_receipt_lane()
                     RETURNING h.epoch, h.lane, h.seq, h.prev, h.hash)
, receipt_first AS (INSERT INTO receipt_heads (kind, epoch, lane, seq, prev, hash, digest)
                    SELECT 'runs', -1, baton_receipt_lane(), 1, ''::bytea, sha256(digest), digest FROM receipt_digest
                     WHERE NOT EXISTS (SELECT 1 FROM receipt_moved) RETURNING epoch, lane, seq, prev, hash)
, receipt_link AS (INSERT INTO receipt_links (epoch, lane, seq, prev, hash, ends)
                   SELECT x.epoch, x.lane, x.seq, x.prev, x.hash, d.ends
                     FROM (SELECT * FROM receipt_moved UNION ALL SELECT * FROM receipt_first) x, receipt_digest d)
UPDATE bench_receipt_scratch SET ends = ends + (SELECT count(*) FROM w) WHERE id = :client_id::int;
