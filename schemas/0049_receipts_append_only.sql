-- Receipts the nodes' own role cannot rewrite (docs/assurance.md,
-- "Receipts"; security review N5). Before this, the runtime role could
-- change a run, recompute every later link of its chain, move the head and
-- rewrite an ended epoch's checkpoint, and `baton verify --receipts` read
-- OK. As 0028 did for the audit log, the records themselves are now
-- append-only against every role that cannot drop these triggers (a
-- node's, an application's; not the tables' owner or a superuser):
--
-- * a link is never changed, and is removed only by retention: older than
--   retention's horizon, oldest first in its chain, its chain's anchor
--   left at the last link removed with that link's hash;
-- * an anchor only moves forward, and only over links that are gone;
-- * an epoch's checkpoint, once written, is never changed or removed, nor
--   is an epoch's row;
-- * when receipts began is never changed.
--
-- The heads (receipt_heads) stay writable: every end moves one, and a head
-- is only a cache of its chain's last link (verify names a head that is not
-- where its chain ends). An edited run is named at the link that records
-- it; the link cannot be made to agree.
--
-- What this does not stop: the runtime role writes `settings`, so it can
-- shorten retention and then cut links as retention would. What pins those
-- is what an operator keeps outside the database: the checkpoint and head
-- lines the nodes log, which `baton verify --receipts --kept FILE` compares
-- with the chains.

CREATE FUNCTION baton_receipts_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'receipts are never changed; retention alone removes old links (docs/assurance.md)';
END $$;

-- Retention's horizon, as prune reads it (store/pg/pg_leader_store.cpp).
CREATE FUNCTION baton_retention_cutoff() RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT now() - coalesce((SELECT (value #>> '{}')::int FROM settings
                            WHERE key = 'retention_days' AND jsonb_typeof(value) = 'number'), 30) * interval '1 day'
$$;

CREATE TRIGGER receipt_links_no_update BEFORE UPDATE ON receipt_links
  FOR EACH ROW EXECUTE FUNCTION baton_receipts_refuse();
CREATE TRIGGER receipt_links_no_truncate BEFORE TRUNCATE ON receipt_links
  FOR EACH STATEMENT EXECUTE FUNCTION baton_receipts_refuse();

-- A removed link, judged once its statement is done (an AFTER row trigger
-- sees the statement's other changes: prune removes the links and moves
-- the anchors in one statement).
CREATE FUNCTION baton_receipt_link_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  a receipt_anchors;
  why text;
BEGIN
  SELECT * INTO a FROM receipt_anchors WHERE epoch = OLD.epoch AND lane = OLD.lane;
  IF OLD.created_at >= baton_retention_cutoff() THEN
    why := 'it is within retention';
  ELSIF EXISTS (SELECT 1 FROM receipt_links k WHERE k.epoch = OLD.epoch AND k.lane = OLD.lane AND k.seq < OLD.seq) THEN
    why := 'an older link of its chain is kept';
  ELSIF a.seq IS NULL OR a.seq < OLD.seq THEN
    why := 'the chain''s anchor is not past it';
  ELSIF a.seq = OLD.seq AND a.hash <> OLD.hash THEN
    why := 'the chain''s anchor does not carry its hash';
  ELSE
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'receipt_links is append-only: link % of chain % (epoch %) cannot be removed: %',
    OLD.seq, OLD.lane, OLD.epoch, why
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'retention alone removes links: the oldest first, past the horizon, each leaving its anchor';
END $$;
CREATE TRIGGER receipt_links_removed_by_retention_only AFTER DELETE ON receipt_links
  FOR EACH ROW EXECUTE FUNCTION baton_receipt_link_removed();

CREATE FUNCTION baton_receipt_anchor_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (NEW.epoch <> OLD.epoch OR NEW.lane <> OLD.lane OR NEW.seq <= OLD.seq) THEN
    RAISE EXCEPTION 'receipt_anchors is append-only: an anchor only moves forward in its chain'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF EXISTS (SELECT 1 FROM receipt_links k WHERE k.epoch = NEW.epoch AND k.lane = NEW.lane AND k.seq <= NEW.seq) THEN
    RAISE EXCEPTION 'receipt_anchors is append-only: the anchor of chain % (epoch %) cannot pass link %, which is kept',
      NEW.lane, NEW.epoch, NEW.seq
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER receipt_anchors_forward_only AFTER INSERT OR UPDATE ON receipt_anchors
  FOR EACH ROW EXECUTE FUNCTION baton_receipt_anchor_moved();
CREATE TRIGGER receipt_anchors_no_delete BEFORE DELETE ON receipt_anchors
  FOR EACH ROW EXECUTE FUNCTION baton_receipts_refuse();
CREATE TRIGGER receipt_anchors_no_truncate BEFORE TRUNCATE ON receipt_anchors
  FOR EACH STATEMENT EXECUTE FUNCTION baton_receipts_refuse();

CREATE FUNCTION baton_epoch_checkpoint_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.receipts IS NOT NULL AND NEW.receipts IS DISTINCT FROM OLD.receipts THEN
    RAISE EXCEPTION 'epoch_history is append-only: the checkpoint of epoch % is written once', OLD.epoch
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER epoch_history_checkpoint_kept BEFORE UPDATE ON epoch_history
  FOR EACH ROW EXECUTE FUNCTION baton_epoch_checkpoint_kept();
CREATE TRIGGER epoch_history_no_delete BEFORE DELETE ON epoch_history
  FOR EACH ROW EXECUTE FUNCTION baton_receipts_refuse();
CREATE TRIGGER epoch_history_no_truncate BEFORE TRUNCATE ON epoch_history
  FOR EACH STATEMENT EXECUTE FUNCTION baton_receipts_refuse();

CREATE TRIGGER receipts_began_kept BEFORE UPDATE OR DELETE ON receipts_began
  FOR EACH ROW EXECUTE FUNCTION baton_receipts_refuse();
CREATE TRIGGER receipts_began_no_truncate BEFORE TRUNCATE ON receipts_began
  FOR EACH STATEMENT EXECUTE FUNCTION baton_receipts_refuse();
