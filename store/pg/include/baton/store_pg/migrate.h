#pragma once
// Schema migrations from schemas/*.sql, embedded into the binary at build
// time. Applied in order, all in one transaction under a transaction-scoped
// advisory lock, each recorded in schema_migrations: nodes started at once
// serialise on the lock and each migration is applied exactly once.
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "baton/core/result.h"

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
/// populated under an earlier schema); every shipped one by default.
Result<MigrateReport> migrate(const std::string& url, const std::string& applied_by,
                              int up_to = std::numeric_limits<int>::max());

}  // namespace baton::store::pg
