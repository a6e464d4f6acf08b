#pragma once
// Schema migrations from schemas/*.sql, embedded into the binary at build
// time. Applied in order, all in one transaction under a transaction-scoped
// advisory lock, each recorded in schema_migrations: nodes started at once
// serialise on the lock and each migration is applied exactly once.
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "baton/base/result.h"

namespace baton::store::pg {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

/// Every migration shipped in this binary, ascending by version.
std::span<const Migration> embedded_migrations();

struct MigrateReport {
  std::vector<int> applied;  ///< versions this call applied
  int current_version = 0;   ///< highest version recorded after the call
};

/// `applied_by` is recorded with each migration (node id or "baton migrate").
/// `up_to`: the highest version to apply (tests that upgrade a database
/// populated under an earlier schema); every shipped one by default. A
/// database with nothing to apply is only read: a runtime role that owns
/// nothing (grant_runtime_role) may call it.
Result<MigrateReport> migrate(const std::string& url, const std::string& applied_by,
                              int up_to = std::numeric_limits<int>::max());

/// What grant_runtime_role gave.
struct GrantReport {
  std::string schema;  ///< where Baton's tables are
  int relations = 0;   ///< tables and views granted
  int sequences = 0;
};

/// Gives `role`, the role nodes run as, the rights a node needs over the
/// relations the calling role (the owner, which migrates) owns, and no
/// more (docs/operations.md, "A runtime role apart from the owner"):
/// CONNECT on the database, USAGE on the schema, SELECT, INSERT, UPDATE
/// and DELETE on every table and view, SELECT and INSERT only on
/// audit_log, SELECT only on schema_migrations, USAGE and SELECT on the
/// sequences; never TRUNCATE, TRIGGER or REFERENCES, and no ownership, so
/// the role cannot alter, drop or unprotect a table (the audit log's
/// append-only trigger holds against it). Exact: earlier grants to the
/// role on those relations are revoked first. Refused (bad_input, the
/// reason named) for an unknown role, the calling role itself, a superuser,
/// or a member of the owner; run it after every migration, since new
/// tables get no grant of their own.
Result<GrantReport> grant_runtime_role(const std::string& url, const std::string& role);

/// The application's interface (schemas/0036): what grant_submitter_role
/// grants, and all it grants.
inline constexpr const char* submitter_functions[] = {
    "baton.trigger(text, jsonb, text, timestamptz, integer, interval)", "baton.emit_event(text, jsonb, text)",
    "baton.submission(bigint)"};

/// What a submitter role may do (schemas/0050): the jobs and event kinds
/// it may name (none: all) and its budgets.
struct SubmitterScope {
  std::vector<std::string> jobs, event_kinds;
  int per_second = 200;       ///< submissions a second, and events a second
  int max_scheduled = 10000;  ///< submissions not yet due, checked when one asks for a run over a minute ahead
  int max_bytes = 65536;      ///< one submission's parameters, one event's payload
};

/// Gives `role`, an application's, the right to submit runs and events in
/// its own transactions and to read what became of its submissions: EXECUTE
/// on submitter_functions and nothing else (docs/clients.md, "The
/// baton_submitter role"), within `scope`, which replaces the role's
/// earlier one; the grant is in the audit log. The same refusals as
/// grant_runtime_role.
Result<void> grant_submitter_role(const std::string& url, const std::string& role, const SubmitterScope& scope = {});

}  // namespace baton::store::pg
