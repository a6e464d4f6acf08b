#include "baton/store_pg/migrate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include <pqxx/pqxx>

#include "baton/store_pg/pg_session.h"
#include "pg_array.h"

namespace baton::store::pg {

namespace {
// Arbitrary but fixed: every Baton process migrating this database takes it.
constexpr std::int64_t migration_lock_key = 0x0BA7'0000'0001;

std::vector<int> applied_versions(pqxx::work& tx) {
  std::vector<int> done;
  for (const auto& row : tx.exec("SELECT version FROM schema_migrations ORDER BY version"))
    done.push_back(row[0].as<int>());
  return done;
}
}  // namespace

Result<MigrateReport> migrate(const std::string& url, const std::string& applied_by, int up_to) {
  PgSession session{url, "baton-migrate"};
  return session.with<MigrateReport>([&](pqxx::connection& c) -> Result<MigrateReport> {
    MigrateReport report;
    pqxx::work tx{c};
    // Nothing to apply: read only, no lock and no DDL, so that a node whose
    // role owns nothing starts on a current schema.
    if (tx.exec1("SELECT to_regclass('schema_migrations') IS NOT NULL")[0].as<bool>()) {
      const std::vector<int> done = applied_versions(tx);
      const bool current = std::ranges::all_of(embedded_migrations(), [&](const Migration& m) {
        return m.version > up_to || std::find(done.begin(), done.end(), m.version) != done.end();
      });
      if (current) {
        report.current_version = done.empty() ? 0 : done.back();
        tx.commit();
        return report;
      }
    }
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", migration_lock_key);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_by TEXT NOT NULL)");
    // Every migration creates its objects beside schema_migrations, whatever
    // the role's search_path says: "$user" comes first in the default one,
    // and once 0036 made the schema `baton`, an owner role named baton
    // would have created every later table in it, out of its nodes' sight.
    tx.exec(
        "SELECT set_config('search_path', quote_ident(n.nspname), true) FROM pg_class k"
        " JOIN pg_namespace n ON n.oid = k.relnamespace WHERE k.oid = 'schema_migrations'::regclass");
    // Read again under the lock: another migrator may have applied some
    // since the read above.
    const std::vector<int> done = applied_versions(tx);
    for (const Migration& m : embedded_migrations()) {
      if (m.version > up_to) break;
      if (std::find(done.begin(), done.end(), m.version) != done.end()) continue;
      tx.exec(m.sql);
      tx.exec_params("INSERT INTO schema_migrations (version, name, applied_by) VALUES ($1, $2, $3)", m.version, m.name,
                     applied_by);
      report.applied.push_back(m.version);
    }
    report.current_version = tx.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0].as<int>();
    tx.commit();
    for (int v : report.applied) spdlog::info("migration_applied version={} by={}", v, applied_by);
    return report;
  });
}

namespace {

/// Where Baton's tables are and the database's name.
struct GrantTarget {
  std::string schema, database;
};

/// Checks, under the migration lock, that `role` may be granted something
/// by the calling role: it exists, is not the caller, not a superuser and
/// not a member of the owner (whose rights it would hold whatever the grant).
Result<GrantTarget> grant_target(pqxx::work& tx, pqxx::connection& c, const std::string& role) {
  tx.exec_params("SELECT pg_advisory_xact_lock($1)", migration_lock_key);
  if (!tx.exec1("SELECT to_regclass('schema_migrations') IS NOT NULL")[0].as<bool>())
    return make_error(Errc::bad_input, "this database has no Baton schema yet: migrate it first");
  const auto who = tx.exec_params(
      "SELECT r.rolname = current_user, r.rolsuper, "
      "pg_has_role(r.oid, (SELECT relowner FROM pg_class WHERE oid = 'schema_migrations'::regclass), 'USAGE'), "
      "(SELECT n.nspname FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace "
      "WHERE k.oid = 'schema_migrations'::regclass), current_database() "
      "FROM pg_roles r WHERE r.rolname = $1",
      role);
  if (who.empty())
    return make_error(Errc::bad_input, "the role '" + role + "' does not exist: create it first (CREATE ROLE " +
                                           c.quote_name(role) + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE)");
  if (who[0][0].as<bool>())
    return make_error(Errc::bad_input, "the role '" + role +
                                           "' is the one migrating (it owns the tables): the role granted must be "
                                           "another one");
  if (who[0][1].as<bool>())
    return make_error(Errc::bad_input, "the role '" + role + "' is a superuser: it would bypass every grant");
  if (who[0][2].as<bool>())
    return make_error(Errc::bad_input, "the role '" + role +
                                           "' is a member of the role that owns Baton's tables, whose rights it "
                                           "holds: REVOKE that membership first");
  return GrantTarget{who[0][3].as<std::string>(), who[0][4].as<std::string>()};
}

}  // namespace

Result<GrantReport> grant_runtime_role(const std::string& url, const std::string& role) {
  PgSession session{url, "baton-migrate"};
  return session.with<GrantReport>([&](pqxx::connection& c) -> Result<GrantReport> {
    GrantReport report;
    pqxx::work tx{c};
    auto target = grant_target(tx, c, role);
    if (!target) return target.error();
    report.schema = target->schema;
    const std::string grantee = c.quote_name(role);
    tx.exec("GRANT CONNECT ON DATABASE " + c.quote_name(target->database) + " TO " + grantee);
    tx.exec("GRANT USAGE ON SCHEMA " + c.quote_name(report.schema) + " TO " + grantee);
    // The relations the calling role owns in that schema: Baton's, not an
    // application's that may share the schema.
    for (const auto& row :
         tx.exec("SELECT k.relname, k.relkind = 'S' FROM pg_class k "
                 "WHERE k.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'schema_migrations'::regclass) "
                 "AND k.relkind IN ('r', 'p', 'v', 'm', 'S') "
                 "AND k.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) ORDER BY k.relname")) {
      const std::string name = row[0].as<std::string>();
      const std::string rel = c.quote_name(report.schema) + "." + c.quote_name(name);
      tx.exec("REVOKE ALL ON " + rel + " FROM " + grantee);
      if (row[1].as<bool>()) {
        tx.exec("GRANT USAGE, SELECT ON SEQUENCE " + rel + " TO " + grantee);
        ++report.sequences;
        continue;
      }
      // Who did what is appended, never changed; which migrations ran is
      // the owner's to write.
      const char* rights = name == "audit_log"           ? "SELECT, INSERT"
                           : name == "schema_migrations" ? "SELECT"
                                                         : "SELECT, INSERT, UPDATE, DELETE";
      tx.exec("GRANT " + std::string(rights) + " ON " + rel + " TO " + grantee);
      ++report.relations;
    }
    tx.commit();
    spdlog::info("runtime_role_granted role={} schema={} relations={} sequences={}", role, report.schema,
                 report.relations, report.sequences);
    return report;
  });
}

Result<void> grant_submitter_role(const std::string& url, const std::string& role, const SubmitterScope& scope) {
  PgSession session{url, "baton-migrate"};
  return session.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    auto target = grant_target(tx, c, role);
    if (!target) return target.error();
    const std::string grantee = c.quote_name(role);
    tx.exec("GRANT CONNECT ON DATABASE " + c.quote_name(target->database) + " TO " + grantee);
    // The functions' schema only: no right on a table, a view or a sequence.
    tx.exec("GRANT USAGE ON SCHEMA baton TO " + grantee);
    for (const char* f : submitter_functions) tx.exec("GRANT EXECUTE ON FUNCTION " + std::string(f) + " TO " + grantee);
    // Its scope and budgets (schemas/0050), replacing any earlier grant's,
    // and the grant in the audit log.
    auto list = [](const std::vector<std::string>& v) -> std::optional<std::string> {
      if (v.empty()) return std::nullopt;
      return pg_array(v);
    };
    tx.exec_params(
        "INSERT INTO submitter_grants AS g (role, jobs, event_kinds, per_second, max_scheduled, max_bytes)"
        " VALUES ($1, $2::text[], $3::text[], $4, $5, $6) ON CONFLICT (role) DO UPDATE SET jobs = EXCLUDED.jobs,"
        " event_kinds = EXCLUDED.event_kinds, per_second = EXCLUDED.per_second,"
        " max_scheduled = EXCLUDED.max_scheduled, max_bytes = EXCLUDED.max_bytes, granted_at = now()",
        role, list(scope.jobs), list(scope.event_kinds), scope.per_second, scope.max_scheduled, scope.max_bytes);
    tx.exec_params(
        "INSERT INTO audit_log (actor, action, subject, details) VALUES ('baton migrate', 'submitter.grant',"
        " 'role:' || $1, jsonb_build_object('jobs', $2::text[], 'event_kinds', $3::text[], 'per_second', $4::int,"
        " 'max_scheduled', $5::int, 'max_bytes', $6::int))",
        role, list(scope.jobs), list(scope.event_kinds), scope.per_second, scope.max_scheduled, scope.max_bytes);
    tx.commit();
    spdlog::info(
        "submitter_role_granted role={} functions={} jobs={} events={} per_second={} max_scheduled={} "
        "max_bytes={}",
        role, std::size(submitter_functions), scope.jobs.empty() ? "all" : list(scope.jobs).value(),
        scope.event_kinds.empty() ? "all" : list(scope.event_kinds).value(), scope.per_second, scope.max_scheduled,
        scope.max_bytes);
    return {};
  });
}

}  // namespace baton::store::pg
