-- Tamper-evident receipts (docs/assurance.md, "Receipts"): every end of a
-- run or an attempt, every late report and every audit entry extends a hash
-- chain, in the statement that writes it; `baton verify --receipts`
-- recomputes the chains from the rows and names the first link that does
-- not hold.
--
-- A chain belongs to one writing connection (its `lane`: the connection's
-- application_name and backend pid) and, for run ends, one epoch. A
-- connection runs one statement at a time, so no two writers ever wait on
-- one chain's head; the leader's lanes each extend their own.
--
-- A link's hash is sha256(previous hash || digest), its digest the sha256 of
-- what it records (for run ends the `ends` array's text, for an audit entry
-- baton_audit_entry's), the previous hash of a chain's first link empty.
-- What is hashed is text built with concat_ws and quote_nullable, not JSON:
-- jsonb_build_array cost 7 us per end, eight times as much (measured with
-- pgbench, docs/performance.md "Receipts").
-- Nothing here keeps a writer with the rights to rewrite every later link
-- and the checkpoints from doing so; what it gives is that an edit, a
-- deletion or a reordering of any one row is seen unless all of that is
-- rewritten too, and the checkpoints an operator keeps outside the database
-- (the electing node logs each one) pin what came before them.

-- The head of each chain: its last link. `digest` is the last link's, so
-- that an upsert can compute the next hash from the proposed row alone.
CREATE TABLE receipt_heads (
  kind   TEXT NOT NULL CHECK (kind IN ('runs', 'audit')),
  epoch  BIGINT NOT NULL,  -- 0 for the audit log's chains, which are not per epoch
  lane   TEXT NOT NULL,
  seq    BIGINT NOT NULL CHECK (seq >= 1),
  prev   BYTEA NOT NULL,
  hash   BYTEA NOT NULL,
  digest BYTEA NOT NULL,
  PRIMARY KEY (kind, epoch, lane)
);

-- One link per statement that ended something: the ends in it, each as
-- baton_receipt_entry makes it from the row written. A batch of 128
-- finishes is one link.
CREATE TABLE receipt_links (
  epoch      BIGINT NOT NULL,
  lane       TEXT NOT NULL,
  seq        BIGINT NOT NULL CHECK (seq >= 1),
  prev       BYTEA NOT NULL,
  hash       BYTEA NOT NULL,
  ends       TEXT[] NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (epoch, lane, seq)
);
CREATE INDEX receipt_links_created_idx ON receipt_links (created_at);

-- Where retention cut a chain: its last removed link. The first link kept
-- follows it.
CREATE TABLE receipt_anchors (
  epoch BIGINT NOT NULL,
  lane  TEXT NOT NULL,
  seq   BIGINT NOT NULL,
  hash  BYTEA NOT NULL,
  PRIMARY KEY (epoch, lane)
);

-- Since when every end has a receipt: the rows ended before are not asked
-- for one.
CREATE TABLE receipts_began (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO receipts_began (id) VALUES (1);

-- The checkpoint of an epoch, written by the next leader in the transaction
-- that elects it, after its lock on the lease row has waited out every
-- fenced write of the old epoch (docs/fencing.md): no end of that epoch can
-- commit after it. {"runs": {lane: [seq, hash]}, "audit": {lane: [seq,
-- hash]}}: the epoch's chains of run ends as they ended, and the audit
-- log's chains as they stood then.
ALTER TABLE epoch_history ADD COLUMN receipts JSONB;

-- The worker process that ran an attempt, kept with an attempt that did not
-- end its run as it is with the one that did (job_runs.worker_instance).
ALTER TABLE job_run_attempt_rows ADD COLUMN worker_instance TEXT;

-- What a receipt records of one end: `kind run attempt 'state' 'outcome'
-- 'worker' 'instance' exit_code epoch output_md5`, each text quoted (NULL
-- unquoted), so that no two ends read alike. Times are left out: their
-- text depends on the reading session's time zone. `kind`: 'run' (the
-- run's end, read from job_runs), 'attempt' (an attempt that did not end
-- its run, job_run_attempt_rows) or 'late' (a late report, late_reports).
-- STABLE as its body is (concat_ws): declared IMMUTABLE it would not be
-- inlined, and a call through the SQL function executor costs 20 us.
CREATE FUNCTION baton_receipt_entry(kind text, run bigint, attempt int, state text, outcome text, worker text,
                                    instance text, exit_code int, epoch bigint, output jsonb) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT concat_ws(' ', kind, run, attempt, quote_nullable(state), quote_nullable(outcome), quote_nullable(worker),
                   quote_nullable(instance), coalesce(exit_code::text, 'NULL'), epoch,
                   md5(coalesce(output, 'null'::jsonb)::text))
$$;

CREATE FUNCTION baton_receipt_lane() RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT current_setting('application_name') || '/' || pg_backend_pid()
$$;

-- The audit log's chains: each entry carries its lane, its place and its
-- hash, set as it is inserted.
ALTER TABLE audit_log ADD COLUMN receipt_lane TEXT, ADD COLUMN receipt_seq BIGINT, ADD COLUMN receipt_hash BYTEA;

CREATE FUNCTION baton_audit_entry(id bigint, at timestamptz, actor text, action text, subject text, epoch bigint,
                                  details jsonb) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT concat_ws(' ', id, (extract(epoch FROM at) * 1000000)::bigint, quote_nullable(actor), quote_nullable(action),
                   quote_nullable(subject), coalesce(epoch::text, 'NULL'), quote_nullable(details::text))
$$;

CREATE FUNCTION baton_audit_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d bytea := sha256(convert_to(baton_audit_entry(NEW.id, NEW.at, NEW.actor, NEW.action, NEW.subject, NEW.epoch,
                                                 NEW.details), 'UTF8'));
BEGIN
  INSERT INTO receipt_heads AS h (kind, epoch, lane, seq, prev, hash, digest)
    VALUES ('audit', 0, baton_receipt_lane(), 1, '\x', sha256(d), d)
    ON CONFLICT (kind, epoch, lane) DO UPDATE
      SET seq = h.seq + 1, prev = h.hash, hash = sha256(h.hash || EXCLUDED.digest), digest = EXCLUDED.digest
    RETURNING h.lane, h.seq, h.hash INTO NEW.receipt_lane, NEW.receipt_seq, NEW.receipt_hash;
  RETURN NEW;
END $$;
CREATE TRIGGER audit_log_receipt BEFORE INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION baton_audit_receipt();

-- The checkpoint of `ended` (see epoch_history.receipts).
CREATE FUNCTION baton_receipt_checkpoint(ended bigint) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'runs', coalesce((SELECT jsonb_object_agg(lane, jsonb_build_array(seq, encode(hash, 'hex')))
                        FROM receipt_heads WHERE kind = 'runs' AND epoch = ended), '{}'::jsonb),
    'audit', coalesce((SELECT jsonb_object_agg(lane, jsonb_build_array(seq, encode(hash, 'hex')))
                         FROM receipt_heads WHERE kind = 'audit'), '{}'::jsonb))
$$;

-- Every link that does not hold, with what is wrong, in chain order. Read by
-- `baton verify --receipts` (store/pg/pg_verify_store.cpp), which names the
-- first. `retained_days`: retention's horizon (settings.retention_days);
-- a run older than it may be gone with its receipt still kept a little
-- longer.
CREATE FUNCTION baton_receipt_problems(retained_days int) RETURNS TABLE (kind text, epoch bigint, lane text,
                                                                        seq bigint, problem text)
  LANGUAGE sql STABLE AS $$
  WITH links AS (
    SELECT l.*, lag(l.seq) OVER w AS before_seq, lag(l.hash) OVER w AS before_hash,
           row_number() OVER w AS n, a.seq AS anchor_seq, a.hash AS anchor_hash
      FROM receipt_links l LEFT JOIN receipt_anchors a ON a.epoch = l.epoch AND a.lane = l.lane
    WINDOW w AS (PARTITION BY l.epoch, l.lane ORDER BY l.seq)),
  last_links AS (SELECT DISTINCT ON (epoch, lane) epoch, lane, seq, hash FROM receipt_links
                  ORDER BY epoch, lane, seq DESC),
  -- the last receipt of each end (a late success's replaces its retry's)
  entries AS (SELECT DISTINCT ON (k, run, att) * FROM (
                SELECT e, split_part(e, ' ', 1) AS k, split_part(e, ' ', 2)::bigint AS run,
                       split_part(e, ' ', 3)::int AS att, l.epoch, l.lane, l.seq, l.created_at
                  FROM receipt_links l, unnest(l.ends) e) x
               ORDER BY k, run, att, created_at DESC, epoch DESC, seq DESC),
  rows_now AS (
    SELECT x.*, CASE x.k
      WHEN 'run' THEN (SELECT baton_receipt_entry('run', r.id, r.attempt, r.state, r.outcome, r.assigned_worker_id,
                                                  r.worker_instance, r.exit_code, r.leader_epoch, r.result -> 'tasks')
                         FROM job_runs r WHERE r.id = x.run)
      WHEN 'attempt' THEN (SELECT baton_receipt_entry('attempt', a.run_id, a.attempt, NULL, a.outcome, a.worker_id,
                                                      a.worker_instance, a.exit_code, a.leader_epoch, a.task_results)
                             FROM job_run_attempt_rows a WHERE a.run_id = x.run AND a.attempt = x.att)
      WHEN 'late' THEN (SELECT baton_receipt_entry('late', t.run_id, t.attempt, NULL, t.outcome, t.worker_id, NULL,
                                                   t.exit_code, t.leader_epoch, NULL)
                          FROM late_reports t WHERE t.run_id = x.run AND t.attempt = x.att)
      END AS now_entry
      FROM entries x),
  horizon AS (SELECT now() - retained_days * interval '1 day' AS at),
  -- ends before receipts began, or older than retention's horizon (their
  -- receipts may be pruned), are not asked for one
  began AS (SELECT greatest(b.at, h.at) AS at FROM receipts_began b, horizon h WHERE b.id = 1),
  audit AS (
    SELECT a.*, lag(a.receipt_seq) OVER w AS before_seq, lag(a.receipt_hash) OVER w AS before_hash,
           row_number() OVER w AS n
      FROM audit_log a WHERE a.receipt_lane IS NOT NULL
    WINDOW w AS (PARTITION BY a.receipt_lane ORDER BY a.receipt_seq))
  SELECT * FROM (
  -- Each link: its hash from its content and the link before it.
  SELECT 'runs' AS kind, l.epoch, l.lane, l.seq, CASE
      WHEN l.n = 1 AND l.anchor_seq IS NULL AND l.seq <> 1
        THEN 'links 1 to ' || (l.seq - 1) || ' of the chain are missing'
      WHEN l.n = 1 AND l.anchor_seq IS NOT NULL AND l.seq <> l.anchor_seq + 1
        THEN 'links ' || (l.anchor_seq + 1) || ' to ' || (l.seq - 1) || ' are missing (retention kept from link '
             || (l.anchor_seq + 1) || ')'
      WHEN l.n > 1 AND l.seq <> l.before_seq + 1
        THEN 'links ' || (l.before_seq + 1) || ' to ' || (l.seq - 1) || ' are missing'
      WHEN l.prev IS DISTINCT FROM CASE WHEN l.n > 1 THEN l.before_hash
                                        WHEN l.anchor_seq IS NOT NULL THEN l.anchor_hash ELSE '\x'::bytea END
        THEN 'it does not follow link ' || (l.seq - 1) || ' (a link replaced, or links reordered)'
      WHEN l.hash <> sha256(l.prev || sha256(convert_to(l.ends::text, 'UTF8')))
        THEN 'its hash is not that of what it records (the link was edited)'
      END AS problem
    FROM links l
  UNION ALL
  -- Each chain's head names its last link (a chain cut at its end).
  SELECT 'runs', h.epoch, h.lane, h.seq, 'the chain''s head is link ' || h.seq || ' but the chain ends at '
         || coalesce('link ' || t.seq, 'no link')
    FROM receipt_heads h LEFT JOIN last_links t ON t.epoch = h.epoch AND t.lane = h.lane
   WHERE h.kind = 'runs' AND (t.seq IS DISTINCT FROM h.seq OR t.hash IS DISTINCT FROM h.hash)
     AND NOT EXISTS (SELECT 1 FROM receipt_anchors a WHERE a.epoch = h.epoch AND a.lane = h.lane
                      AND a.seq = h.seq AND a.hash = h.hash)
  UNION ALL
  -- Each checkpoint: the epoch's chains ended where it says.
  SELECT 'runs', e.epoch, c.key, (c.value ->> 0)::bigint,
         'the checkpoint of epoch ' || e.epoch || ' says the chain ends at link ' || (c.value ->> 0)
         || ', but it ends at ' || coalesce('link ' || t.seq, 'no link')
    FROM epoch_history e CROSS JOIN LATERAL jsonb_each(e.receipts -> 'runs') c
    LEFT JOIN last_links t ON t.epoch = e.epoch AND t.lane = c.key
   WHERE (t.seq IS DISTINCT FROM (c.value ->> 0)::bigint OR encode(t.hash, 'hex') IS DISTINCT FROM c.value ->> 1)
     AND NOT EXISTS (SELECT 1 FROM receipt_anchors a WHERE a.epoch = e.epoch AND a.lane = c.key
                      AND a.seq = (c.value ->> 0)::bigint AND encode(a.hash, 'hex') = c.value ->> 1)
  UNION ALL
  SELECT 'runs', t.epoch, t.lane, t.seq, 'the chain is not in the checkpoint of epoch ' || t.epoch
    FROM last_links t JOIN epoch_history e ON e.epoch = t.epoch
   WHERE e.receipts IS NOT NULL AND NOT (e.receipts -> 'runs') ? t.lane
  UNION ALL
  -- Each end recorded: its row still reads as its receipt says.
  SELECT 'runs', x.epoch, x.lane, x.seq, CASE
      WHEN x.now_entry IS NULL THEN x.k || ' ' || x.run || ' attempt ' || x.att || ' is gone (its receipt: '
           || x.e || ')'
      ELSE x.k || ' ' || x.run || ' attempt ' || x.att || ' reads [' || x.now_entry || '], its receipt ['
           || x.e || ']' END
    FROM rows_now x
   WHERE x.now_entry IS DISTINCT FROM x.e
     AND NOT (x.now_entry IS NULL AND x.created_at < (SELECT at FROM horizon) + interval '1 day')
  UNION ALL
  -- Each end since receipts began: it has one.
  SELECT 'runs', r.leader_epoch, NULL, NULL, 'run ' || r.id || ' ended ' || r.state || ' with no receipt'
    FROM job_runs r
   WHERE r.finished_at >= (SELECT at FROM began) AND r.state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')
     AND NOT EXISTS (SELECT 1 FROM entries x WHERE x.k = 'run' AND x.run = r.id)
  UNION ALL
  SELECT 'runs', a.leader_epoch, NULL, NULL, 'attempt ' || a.attempt || ' of run ' || a.run_id || ' ended '
         || a.outcome || ' with no receipt'
    FROM job_run_attempt_rows a
   WHERE a.finished_at >= (SELECT at FROM began)
     AND NOT EXISTS (SELECT 1 FROM entries x WHERE x.k = 'attempt' AND x.run = a.run_id AND x.att = a.attempt)
  UNION ALL
  SELECT 'runs', t.leader_epoch, NULL, NULL, 'the late report of run ' || t.run_id || ' attempt ' || t.attempt
         || ' has no receipt'
    FROM late_reports t
   WHERE t.reported_at >= (SELECT at FROM began)
     AND NOT EXISTS (SELECT 1 FROM entries x WHERE x.k = 'late' AND x.run = t.run_id AND x.att = t.attempt)
  UNION ALL
  -- The audit log: each entry's hash from its content and the one before.
  SELECT 'audit', 0, a.receipt_lane, a.receipt_seq, CASE
      WHEN a.n = 1 AND a.receipt_seq <> 1 THEN 'entries 1 to ' || (a.receipt_seq - 1) || ' of the chain are missing'
      WHEN a.n > 1 AND a.receipt_seq <> a.before_seq + 1
        THEN 'entries ' || (a.before_seq + 1) || ' to ' || (a.receipt_seq - 1) || ' are missing'
      WHEN a.receipt_hash <> sha256(CASE WHEN a.n > 1 THEN a.before_hash ELSE '\x'::bytea END
                                    || sha256(convert_to(baton_audit_entry(a.id, a.at, a.actor, a.action, a.subject,
                                                         a.epoch, a.details), 'UTF8')))
        THEN 'audit entry ' || a.id || ' is not what its receipt says (edited, or entries reordered)'
      END
    FROM audit a
  UNION ALL
  SELECT 'audit', 0, h.lane, h.seq, 'the chain''s head is entry ' || h.seq || ' but the chain ends at '
         || coalesce('entry ' || t.receipt_seq, 'no entry')
    FROM receipt_heads h
    LEFT JOIN (SELECT DISTINCT ON (receipt_lane) receipt_lane, receipt_seq, receipt_hash FROM audit_log
                WHERE receipt_lane IS NOT NULL ORDER BY receipt_lane, receipt_seq DESC) t ON t.receipt_lane = h.lane
   WHERE h.kind = 'audit' AND (t.receipt_seq IS DISTINCT FROM h.seq OR t.receipt_hash IS DISTINCT FROM h.hash)
  UNION ALL
  SELECT 'audit', e.epoch, c.key, (c.value ->> 0)::bigint,
         'the checkpoint of epoch ' || e.epoch || ' names audit entry ' || (c.value ->> 0)
         || ' of the chain, which is gone or not what it was'
    FROM epoch_history e CROSS JOIN LATERAL jsonb_each(e.receipts -> 'audit') c
   WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.receipt_lane = c.key
                      AND a.receipt_seq = (c.value ->> 0)::bigint AND encode(a.receipt_hash, 'hex') = c.value ->> 1)
  ) p WHERE p.problem IS NOT NULL
  ORDER BY p.kind DESC, p.epoch, p.lane NULLS LAST, p.seq NULLS LAST
$$;
