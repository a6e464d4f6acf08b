#pragma once
// What `baton doctor` asks of the coordinator database: its role, its
// replication, its clock and its schema. Read-only; connects to the URL as
// given (a standby is reported, not refused).
#include <string>

#include "baton/base/result.h"

namespace baton::store::pg {

struct DatabaseFacts {
  bool in_recovery = false;               ///< a standby
  std::string server_version;             ///< e.g. "15.8"
  std::string synchronous_standby_names;  ///< "" = asynchronous replication only
  int standbys_streaming = 0;             ///< pg_stat_replication rows (visible to superusers and pg_monitor)
  int sync_standbys_streaming = 0;        ///< ... of them in sync or quorum state
  /// Of the standbys streaming, the largest replay lag the primary saw
  /// (pg_stat_replication.replay_lag; 0 when idle or none) and how far the
  /// slowest one's replay is behind the primary's WAL, in bytes.
  double replay_lag_s = 0;
  long long replay_behind_bytes = 0;
  int schema_version = 0;          ///< highest migration applied; 0 = none
  int schema_version_shipped = 0;  ///< highest migration this binary carries
  double now_unix = 0;             ///< the database's clock
  std::string role;                ///< current_user
  bool superuser = false;          ///< the role bypasses every check, the audit log's trigger included
  /// Member of pg_execute_server_program, pg_read_server_files or
  /// pg_write_server_files: the role can run programs or touch files on
  /// the database host (COPY ... PROGRAM).
  bool server_rights = false;
  /// The role owns Baton's tables (or holds their owner's rights): it can
  /// alter or drop them, the audit log's append-only trigger included.
  bool owns_tables = false;
  /// Roles other than the schema's and the tables' owners (and superusers)
  /// granted CREATE on Baton's schema, PUBLIC among them: they could place
  /// functions or operators that Baton's SECURITY DEFINER functions,
  /// whose search_path is that schema, resolve. "" when none.
  std::string schema_creators;
  std::string schema;  ///< Baton's schema (where schema_migrations is); "" before the first migration
};

/// Connects (3 s at most) and reads the facts; db_unavailable with the
/// server's words when it cannot.
Result<DatabaseFacts> inspect_database(const std::string& url);

/// How a URL reaches its database, read by libpq (PQconninfoParse), no
/// connection made.
struct DatabaseLink {
  bool remote = false;  ///< a host that is not this one (not a Unix socket, loopback or localhost)
  std::string hosts;    ///< as given ("" for the default Unix socket)
  std::string sslmode;  ///< as given, else PGSSLMODE, else libpq's default "prefer"
  /// TLS with the server's certificate verified against a CA and the host
  /// name (sslmode=verify-full): nothing in the path can read or pose.
  bool verified() const { return sslmode == "verify-full"; }
};
/// bad_config naming what libpq could not parse.
Result<DatabaseLink> database_link(const std::string& url);

}  // namespace baton::store::pg
