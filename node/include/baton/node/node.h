#pragma once
// `baton node`: the election loop, the HTTP/WebSocket endpoint, and, while
// this node leads, one ControlLoop for its epoch. Stores are injected by
// cmd/ (PostgreSQL) through NodePorts.
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "baton/node/node_config.h"
#include "baton/store/admin_store.h"
#include "baton/store/leader_store.h"
#include "baton/store/lease_store.h"
#include "baton/store/run_store.h"
#include "baton/store/verify_store.h"
#include "baton/store/webhooks.h"

namespace baton::node {

/// What the node needs from outside. Each call opens a store on a
/// connection of its own, named for pg_stat_activity.
struct NodePorts {
  std::function<std::unique_ptr<store::LeaseStore>(const std::string& application_name)> lease_store;
  std::function<std::unique_ptr<store::RunStore>(const std::string& application_name)> run_store;
  std::function<std::unique_ptr<store::LeaderStore>(const std::string& application_name)> leader_store;
  /// The admin API's store: its calls give up quickly (/status must answer
  /// while the database does not).
  std::function<std::unique_ptr<store::AdminStore>(const std::string& application_name)> admin_store;
  /// The queue of webhook deliveries, for the leader's sender.
  std::function<std::unique_ptr<store::WebhookOutbox>(const std::string& application_name)> webhook_outbox;
  /// The history checker's reads and records (the leader's sweep, and the
  /// admin API's /api/v1/verify; docs/assurance.md).
  std::function<std::unique_ptr<store::VerifyStore>(const std::string& application_name)> verify_store;
};

/// Runs until `stop` becomes true (SIGTERM/SIGINT), then releases the lease.
/// Returns the process exit code.
int run_node(const NodeConfig& cfg, const NodePorts& ports, const std::atomic<bool>& stop);

}  // namespace baton::node
