#include "baton/store_pg/inspect.h"

#include <pqxx/pqxx>

#include "baton/store_pg/migrate.h"

namespace baton::store::pg {

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
        "'quorum'))::int, to_regclass('schema_migrations') IS NOT NULL");
    f.in_recovery = row[0].as<bool>();
    f.server_version = row[1].as<std::string>();
    f.synchronous_standby_names = row[2].as<std::string>();
    f.now_unix = row[3].as<double>();
    f.standbys_streaming = row[4].as<int>();
    f.sync_standbys_streaming = row[5].as<int>();
    if (row[6].as<bool>())
      f.schema_version = tx.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0].as<int>();
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
