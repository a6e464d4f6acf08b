-- Keyed concurrency and rate limits (docs/scheduling.md, "Concurrency keys
-- and rate limits").
--
-- A job may name a concurrency key, a template over its runs' parameters
-- ("{{param.customer}}"), and a limit per key: at most that many of its runs
-- with the same key active (ASSIGNED or RUNNING) at once. And a rate limit:
-- at most `rate_limit_runs` of its runs made active in any interval of
-- `rate_limit_per_ms`, for the job as a whole or per key.
ALTER TABLE job_definitions
  ADD COLUMN concurrency_key TEXT CHECK (concurrency_key IS NULL OR length(concurrency_key) BETWEEN 1 AND 200),
  ADD COLUMN concurrency_limit INTEGER CHECK (concurrency_limit IS NULL OR concurrency_limit BETWEEN 1 AND 10000),
  ADD COLUMN rate_limit_runs INTEGER CHECK (rate_limit_runs IS NULL OR rate_limit_runs BETWEEN 1 AND 10000),
  ADD COLUMN rate_limit_per_ms BIGINT CHECK (rate_limit_per_ms IS NULL OR rate_limit_per_ms BETWEEN 1 AND 604800000),
  ADD COLUMN rate_limit_by_key BOOLEAN NOT NULL DEFAULT false,
  ADD CONSTRAINT job_definitions_key_limits CHECK (
    (concurrency_limit IS NULL OR concurrency_key IS NOT NULL)
    AND ((rate_limit_runs IS NULL) = (rate_limit_per_ms IS NULL))
    AND (NOT rate_limit_by_key OR (concurrency_key IS NOT NULL AND rate_limit_runs IS NOT NULL)));

-- A run's key: the template with each {{param.NAME}} replaced by the value
-- of that parameter (the job's default overlaid by the run's, as the run's
-- tasks see them: text as it is, other JSON as PostgreSQL prints it; a
-- parameter not given is the empty text), cut at 200 characters. Anything
-- else between braces is kept as written. The leader reads it with the due
-- runs and the assigning statement checks the key written against it, so
-- there is one definition of a run's key, and it is this one.
CREATE FUNCTION baton_run_key(template text, params jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  out text := '';
  rest text := template;
  open int;
  close int;
  name text;
BEGIN
  IF template IS NULL THEN RETURN NULL; END IF;
  LOOP
    open := strpos(rest, '{{');
    EXIT WHEN open = 0;
    close := strpos(substr(rest, open + 2), '}}');
    EXIT WHEN close = 0;
    name := btrim(substr(rest, open + 2, close - 1));
    IF name LIKE 'param.%' THEN
      out := out || left(rest, open - 1) || coalesce(params ->> substr(name, 7), '');
    ELSE
      out := out || left(rest, open + close + 2);
    END IF;
    rest := substr(rest, open + close + 3);
  END LOOP;
  RETURN left(out || rest, 200);
END $$;

-- The parameters a run's key is computed from (as due_run_columns gives them
-- to its tasks).
CREATE FUNCTION baton_run_params(defaults jsonb, payload jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(defaults, '{}'::jsonb) || coalesce(payload -> 'parameters', '{}'::jsonb)
         || (coalesce(payload, '{}'::jsonb) - 'parameters')
$$;

-- The key's slot. Like the instance number (schemas/0010): a run made
-- active with a key takes a slot from 1 to the limit, unique per job and
-- key, kept unchanged while it is ASSIGNED or RUNNING and given back (set
-- NULL) by every statement that moves it out; the assigning statement fails
-- if a run of a keyed job holds none within the limit or a key that is not
-- its own. The key itself stays on the run: what it was, for the record.
ALTER TABLE job_runs ADD COLUMN concurrency_key TEXT, ADD COLUMN key_slot INTEGER CHECK (key_slot IS NULL OR key_slot >= 1);
CREATE UNIQUE INDEX job_runs_key_slot_idx ON job_runs (job_definition_id, concurrency_key, key_slot)
  WHERE key_slot IS NOT NULL;
ALTER TABLE job_runs DROP CONSTRAINT job_runs_holds_only_while_active;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_holds_only_while_active
  CHECK (state IN ('ASSIGNED', 'RUNNING')
         OR (instance_no IS NULL AND exclusive_lock IS NULL AND gate IS NULL AND key_slot IS NULL));

DROP TRIGGER job_runs_holds_kept ON job_runs;
CREATE OR REPLACE FUNCTION baton_job_runs_holds_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run % must keep its instance number, exclusive lock, gate and key slot while ASSIGNED or RUNNING (% -> %)',
    NEW.id, OLD.state, NEW.state USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER job_runs_holds_kept AFTER UPDATE ON job_runs
  FOR EACH ROW WHEN (OLD.state IN ('ASSIGNED', 'RUNNING') AND NEW.state IN ('ASSIGNED', 'RUNNING')
                     AND (NEW.instance_no IS DISTINCT FROM OLD.instance_no
                          OR NEW.exclusive_lock IS DISTINCT FROM OLD.exclusive_lock
                          OR NEW.gate IS DISTINCT FROM OLD.gate
                          OR NEW.key_slot IS DISTINCT FROM OLD.key_slot
                          OR NEW.concurrency_key IS DISTINCT FROM OLD.concurrency_key))
  EXECUTE FUNCTION baton_job_runs_holds_changed();

-- Rate permits. A rate limit of N runs per interval T has N permits per job
-- (or per job and key); a run made active takes one, by number, for T from
-- the statement's time, and the statement that takes it fails unless that
-- permit's last holder took it at least T ago: at most N runs made active in
-- any interval of length T (N+1 in less than T would need two of them on one
-- permit). A permit is not given back when its run ends: it expires. Each
-- activation takes one (a run reassigned after its worker was lost counts
-- again: it may start again). Rows are reused; those of keys not seen for a
-- day are pruned with the ledger.
CREATE TABLE rate_permits (
  job_definition_id BIGINT NOT NULL REFERENCES job_definitions(id) ON DELETE CASCADE,
  rate_key          TEXT NOT NULL,
  slot              INTEGER NOT NULL CHECK (slot >= 1),
  taken_at          TIMESTAMPTZ NOT NULL,
  until             TIMESTAMPTZ NOT NULL,
  run_id            BIGINT NOT NULL,
  attempt           INTEGER NOT NULL,
  epoch             BIGINT NOT NULL,
  PRIMARY KEY (job_definition_id, rate_key, slot)
);

-- What the leader reads with each due run of a keyed or rate-limited job.
CREATE FUNCTION baton_key_slots_held(job bigint, key text) RETURNS int[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(x.key_slot ORDER BY x.key_slot), '{}') FROM job_runs x
   WHERE x.job_definition_id = job AND x.concurrency_key = key AND x.key_slot IS NOT NULL
$$;
CREATE FUNCTION baton_rate_slots_busy(job bigint, key text) RETURNS int[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(p.slot ORDER BY p.slot), '{}') FROM rate_permits p
   WHERE p.job_definition_id = job AND p.rate_key = key AND p.until > now()
$$;

-- Raised by an assigning statement for the first run it wrote that does not
-- hold what its job requires (0023, 0033), now with the key slot and the
-- rate permit.
DROP FUNCTION baton_refuse_activation(bigint, text, int, int, text, bigint);
CREATE FUNCTION baton_refuse_activation(run bigint, job text, lim int, instance_no int, state text,
                                        ungated bigint, key_refused text, rate_refused text) RETURNS int
  LANGUAGE plpgsql AS $$
BEGIN
  IF lim IS NOT NULL AND (instance_no IS NULL OR instance_no > lim) THEN
    RAISE EXCEPTION 'run % of job % must hold an instance number from 1 to % to become %', run, job, lim, state
      USING ERRCODE = 'check_violation';
  END IF;
  IF ungated IS NOT NULL THEN
    RAISE EXCEPTION 'run % of exclusive job % cannot become % while run % is active (exclusive_execution)',
      run, job, state, ungated USING ERRCODE = 'exclusion_violation';
  END IF;
  IF key_refused IS NOT NULL THEN
    RAISE EXCEPTION 'run % of job % cannot become %: %', run, job, state, key_refused USING ERRCODE = 'check_violation';
  END IF;
  IF rate_refused IS NOT NULL THEN
    RAISE EXCEPTION 'run % of job % cannot become %: %', run, job, state, rate_refused
      USING ERRCODE = 'check_violation';
  END IF;
  RAISE EXCEPTION 'run % of mutually exclusive job % must hold the exclusive lock to become %', run, job, state
    USING ERRCODE = 'check_violation';
END $$;

-- Health in SQL (docs/operations.md): per job and key, the runs active under
-- a concurrency limit and the rate permits taken less than an interval ago.
CREATE VIEW baton_key_usage AS
WITH active AS (
  SELECT x.job_definition_id, x.concurrency_key AS key, count(*) AS active
    FROM job_runs x WHERE x.key_slot IS NOT NULL GROUP BY 1, 2),
taken AS (
  SELECT p.job_definition_id, p.rate_key AS key, count(*) AS permits_taken
    FROM rate_permits p WHERE p.until > now() GROUP BY 1, 2)
SELECT j.name AS job, coalesce(a.key, t.key) AS key, coalesce(a.active, 0) AS active,
       j.concurrency_limit, coalesce(t.permits_taken, 0) AS permits_taken, j.rate_limit_runs, j.rate_limit_per_ms,
       j.rate_limit_by_key
  FROM active a FULL JOIN taken t ON t.job_definition_id = a.job_definition_id AND t.key = a.key
  JOIN job_definitions j ON j.id = coalesce(a.job_definition_id, t.job_definition_id);
