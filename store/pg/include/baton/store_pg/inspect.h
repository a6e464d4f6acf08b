#pragma once
// What `baton doctor` asks of the coordinator database: its role, its
// replication, its clock and its schema. Read-only; connects to the URL as
// given (a standby is reported, not refused).
#include <string>

#include "baton/core/result.h"

namespace baton::store::pg {

struct DatabaseFacts {
  bool in_recovery = false;               ///< a standby
  std::string server_version;             ///< e.g. "15.8"
  std::string synchronous_standby_names;  ///< "" = asynchronous replication only
  int standbys_streaming = 0;             ///< pg_stat_replication rows (visible to superusers and pg_monitor)
  int sync_standbys_streaming = 0;        ///< ... of them in sync or quorum state
  int schema_version = 0;                 ///< highest migration applied; 0 = none
  int schema_version_shipped = 0;         ///< highest migration this binary carries
  double now_unix = 0;                    ///< the database's clock
};

/// Connects (3 s at most) and reads the facts; db_unavailable with the
/// server's words when it cannot.
Result<DatabaseFacts> inspect_database(const std::string& url);

}  // namespace baton::store::pg
