-- The history checker in production (docs/assurance.md): the leader's sweep
-- runs the chaos checker's invariants that the database's records support
-- over the runs that finished since its cursor, and records what it finds.
--
-- verify_cursor: where the sweep has got to, in (finished_at, id) order
-- (job_runs_finished_idx), and what its last sweep examined. One row. A
-- sweep records its findings and moves the cursor in one transaction, and
-- only from where it started: two nodes that swept the same runs (a leader
-- change in the middle) record one sweep, the other's is refused.
CREATE TABLE verify_cursor (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  finished_at  TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
  run_id       BIGINT NOT NULL DEFAULT 0,
  swept_at     TIMESTAMPTZ,
  node_id      TEXT,
  epoch        BIGINT,
  sweeps       BIGINT NOT NULL DEFAULT 0,
  runs_checked BIGINT NOT NULL DEFAULT 0,
  -- The last sweep: per invariant examined and violations, its runs, its
  -- database time; the API shows it as it is.
  last_sweep   JSONB NOT NULL DEFAULT '{}'::jsonb
);
INSERT INTO verify_cursor (id) VALUES (1);

-- One row per violation found, whoever found it and however often: a
-- finding (what it is about: the invariant and the runs it names, or its
-- evidence when it names none) is recorded once. Never removed by
-- retention; an operator acknowledges it (the dashboard's banner shows the
-- ones not acknowledged).
CREATE TABLE invariant_violations (
  id              BIGSERIAL PRIMARY KEY,
  found_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  invariant       TEXT NOT NULL CHECK (invariant ~ '^[a-z_]{1,100}$'),
  finding         TEXT NOT NULL CHECK (length(finding) <= 4000),
  evidence        TEXT NOT NULL CHECK (length(evidence) <= 4000),
  run_ids         BIGINT[] NOT NULL DEFAULT '{}',
  found_by        TEXT NOT NULL,
  epoch           BIGINT,
  acknowledged_at TIMESTAMPTZ,
  acknowledged_by TEXT,
  UNIQUE (invariant, finding)
);
CREATE INDEX invariant_violations_open_idx ON invariant_violations (id) WHERE acknowledged_at IS NULL;

-- A violation is told where an operator looks, in the transaction that
-- records it: the audit log, and every webhook listing `invariant_violated`.
ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_events_check CHECK (cardinality(events) >= 1 AND events <@ ARRAY[
  'dead_letter', 'run_failed', 'failures_in_a_row', 'leader_changed', 'invariant_violated']);

CREATE FUNCTION baton_invariant_violation_told() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_log (actor, action, subject, epoch, details)
  VALUES ('baton-verify@' || NEW.found_by, 'invariant.violated', 'invariant:' || NEW.invariant, NEW.epoch,
          jsonb_build_object('violation_id', NEW.id, 'run_ids', to_jsonb(NEW.run_ids), 'evidence', NEW.evidence));
  IF EXISTS (SELECT 1 FROM webhooks WHERE enabled AND 'invariant_violated' = ANY (events)) THEN
    PERFORM baton_webhook_enqueue('invariant_violated', NULL, jsonb_build_object(
      'violation_id', NEW.id, 'invariant', NEW.invariant, 'run_ids', to_jsonb(NEW.run_ids),
      'evidence', NEW.evidence, 'found_by', NEW.found_by, 'epoch', NEW.epoch, 'found_at', NEW.found_at));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER invariant_violations_told AFTER INSERT ON invariant_violations
  FOR EACH ROW EXECUTE FUNCTION baton_invariant_violation_told();
