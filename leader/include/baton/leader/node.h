#pragma once
// `baton node`: migrations, then the election loop until asked to stop.
// Later work adds the dispatcher, reaper and the HTTP/WebSocket endpoint,
// which run only while this node leads.
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "baton/leader/node_config.h"
#include "baton/store/lease_store.h"

namespace baton::leader {

/// What the node needs from outside; cmd/ injects PostgreSQL (or a fake).
struct NodePorts {
  /// A lease store on a connection of its own, named for pg_stat_activity.
  std::function<std::unique_ptr<store::LeaseStore>(const std::string& application_name)> lease_store;
};

/// Runs until `stop` becomes true (SIGTERM/SIGINT), then releases the lease.
/// Returns the process exit code.
int run_node(const NodeConfig& cfg, const NodePorts& ports, const std::atomic<bool>& stop);

}  // namespace baton::leader
