#include "baton/store_pg/migrate.h"

#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

namespace {
// Arbitrary but fixed: every Baton process migrating this database takes it.
constexpr std::int64_t migration_lock_key = 0x0BA7'0000'0001;
}  // namespace

Result<MigrateReport> migrate(const std::string& url, const std::string& applied_by, int up_to) {
  PgSession session{url, "baton-migrate"};
  return session.with<MigrateReport>([&](pqxx::connection& c) -> Result<MigrateReport> {
    MigrateReport report;
    pqxx::work tx{c};
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", migration_lock_key);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_by TEXT NOT NULL)");
    std::vector<int> done;
    for (const auto& row : tx.exec("SELECT version FROM schema_migrations ORDER BY version")) {
      done.push_back(row[0].as<int>());
    }
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

}  // namespace baton::store::pg
