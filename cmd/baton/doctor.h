#pragma once
// `baton doctor --config FILE`: checks a node's or a worker's configuration
// the way it will run -- its files and their permissions, TLS certificates
// (validity, names, keys), the coordinator database (reachable, primary,
// schema, synchronous replication, clock) or, for a worker, each
// coordinator it will dial -- and says for each problem how to fix it.
#include <ostream>
#include <string>
#include <vector>

namespace baton::doctor {

struct Finding {
  enum class Level { ok, warn, fail };
  Level level = Level::ok;
  std::string area;    ///< "config", "files", "tls", "database", "clock", "coordinator"
  std::string detail;  ///< what was found
  std::string fix;     ///< what to do ("" for ok)
};

/// Every finding for the config at `file` (a node's if it has node_id, a
/// worker's if it has worker_id).
std::vector<Finding> examine(const std::string& file);

/// One line per finding (and its fix), then a summary; returns the exit
/// status: 0 without failures (warnings allowed), 1 with any.
int report(const std::string& file, const std::vector<Finding>& findings, std::ostream& out);

}  // namespace baton::doctor
