#include "baton/store_pg/inspect.h"

#include <libpq-fe.h>
#include <pqxx/pqxx>

#include <cstdlib>

#include "baton/store_pg/migrate.h"

namespace baton::store::pg {

namespace {
bool local_host(std::string h) {
  while (!h.empty() && h.back() == ' ') h.pop_back();
  while (!h.empty() && h.front() == ' ') h.erase(0, 1);
  return h.empty() || h.front() == '/' || h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}
}  // namespace

Result<DatabaseLink> database_link(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    std::string why = error ? error : "out of memory";
    if (error) PQfreemem(error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return make_error(Errc::bad_config, "database.url: " + why);
  }
  DatabaseLink link;
  std::string host, hostaddr;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string k = o->keyword;
    if (k == "host") host = o->val;
    if (k == "hostaddr") hostaddr = o->val;
    if (k == "sslmode") link.sslmode = o->val;
  }
  PQconninfoFree(options);
  if (link.sslmode.empty()) {
    const char* env = std::getenv("PGSSLMODE");
    link.sslmode = env && *env ? env : "prefer";
  }
  link.hosts = !hostaddr.empty() ? hostaddr : host;
  // Each of a list (postgresql://h1,h2/...): one remote host is enough.
  for (std::size_t at = 0; at <= link.hosts.size();) {
    const auto comma = std::min(link.hosts.find(',', at), link.hosts.size());
    if (!local_host(link.hosts.substr(at, comma - at))) link.remote = true;
    at = comma + 1;
  }
  return link;
}

Result<DatabaseFacts> inspect_database(const std::string& url) {
  std::string conninfo = url;
  if (conninfo.find("connect_timeout=") == std::string::npos)
    conninfo += (conninfo.find('?') == std::string::npos ? "?" : "&") + std::string("connect_timeout=3");
  DatabaseFacts f;
  for (const auto& m : embedded_migrations()) f.schema_version_shipped = std::max(f.schema_version_shipped, m.version);
  try {
    pqxx::connection c(conninfo);
    pqxx::read_transaction tx(c);
    auto row = tx.exec1(
        "SELECT pg_is_in_recovery(), current_setting('server_version'), "
        "current_setting('synchronous_standby_names'), extract(epoch FROM clock_timestamp())::float8, "
        "(SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming')::int, "
        "(SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', "
        "'quorum'))::int, to_regclass('schema_migrations') IS NOT NULL, current_user, "
        "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
        "pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') OR "
        "pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') OR "
        "pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), "
        "coalesce((SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class "
        "WHERE oid = to_regclass('schema_migrations')), false), "
        "(SELECT coalesce(extract(epoch FROM max(replay_lag)), 0)::float8 FROM pg_stat_replication "
        "WHERE state = 'streaming'), "
        "(SELECT coalesce(max(pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
        "ELSE pg_current_wal_lsn() END, replay_lsn)), 0)::bigint FROM pg_stat_replication WHERE state = "
        "'streaming')");
    f.in_recovery = row[0].as<bool>();
    f.server_version = row[1].as<std::string>();
    f.synchronous_standby_names = row[2].as<std::string>();
    f.now_unix = row[3].as<double>();
    f.standbys_streaming = row[4].as<int>();
    f.sync_standbys_streaming = row[5].as<int>();
    f.role = row[7].as<std::string>();
    f.superuser = row[8].as<bool>();
    f.server_rights = row[9].as<bool>();
    f.owns_tables = row[10].as<bool>();
    f.replay_lag_s = row[11].as<double>();
    f.replay_behind_bytes = row[12].as<long long>();
    if (row[6].as<bool>()) {
      f.schema_version = tx.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0].as<int>();
      // Who may create objects beside Baton's (security review N-L9): the
      // schema's ACL, granted directly (PUBLIC is grantee 0).
      auto s = tx.exec1(
          "WITH t AS (SELECT relnamespace AS ns, relowner FROM pg_class WHERE oid = 'schema_migrations'::regclass)"
          " SELECT n.nspname, coalesce((SELECT string_agg(g.name, ', ' ORDER BY g.name) FROM ("
          "  SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname END AS name"
          "  FROM aclexplode(n.nspacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee"
          "  WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner AND (a.grantee = 0 OR"
          "   NOT (r.rolsuper OR pg_has_role(a.grantee, t.relowner, 'USAGE')))) g), '')"
          " FROM t JOIN pg_namespace n ON n.oid = t.ns");
      f.schema = s[0].as<std::string>();
      f.schema_creators = s[1].as<std::string>();
    }
    return f;
  } catch (const pqxx::broken_connection& e) {
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    return make_error(Errc::db_unavailable, what);
  } catch (const std::exception& e) {
    return make_error(Errc::db_error, e.what());
  }
}

}  // namespace baton::store::pg
