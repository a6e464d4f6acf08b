-- The audit log is append-only (docs/security.md, "Safe defaults"): an
-- entry, once written, cannot be changed or removed through SQL by any
-- role that cannot also drop this trigger (a node's role, an application's,
-- anyone but the table's owner or a superuser). A node that is taken over,
-- or a mistaken statement, cannot rewrite who did what. Nothing in Baton
-- updates or deletes audit entries; retention prunes runs, not the audit.
CREATE FUNCTION baton_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'audit entries are never changed or removed (docs/security.md)';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION baton_audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION baton_audit_log_append_only();
