#pragma once
// The fault vocabulary: every kind of fault the chaos harness injects into
// real processes or the simulator into its model, by the one name both
// record in a history's faults and the checker reads (its at-least-once
// window, its coverage check). Fault coverage reads this one set of names.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::checker {

enum class Fault {
  kill9_leader,
  kill9_follower,
  kill9_worker,
  pause_leader,
  pause_worker,
  partition_leader_db,
  partition_workers,
  proxy_latency,
  proxy_reset,
  pg_restart,
  clock_skew,
  db_stale_connections,
  continuation_skew,
  duplicate_worker,
  outbox_disk,
  kill_supervisor,
  clock_rate,
  pg_failover,
  pg_ha_kill_primary,
  pg_ha_lose_primary,
  pg_ha_switchover,
  pg_ha_partition_primary,
  kill9_node,
  pause_node,
  partition_node_db,
  partition_pair,
  cancel,
  move_worker,
  worker_cut_off,
};

/// One row of the vocabulary.
struct FaultKind {
  Fault fault;
  std::string_view name;
  bool harness;    ///< the chaos harness can inject it (`--faults`)
  bool simulator;  ///< the simulator draws or records it
  std::string_view what;
};

/// Every fault, in the harness's order for those it injects (its nemesis
/// draws from that order: append, never reorder).
inline constexpr FaultKind fault_kinds[] = {
    {Fault::kill9_leader, "kill9_leader", true, false, "kill -9 of the leader node, restarted later"},
    {Fault::kill9_follower, "kill9_follower", true, false, "kill -9 of a follower node, restarted later"},
    {Fault::kill9_worker, "kill9_worker", true, true, "kill -9 of a worker holding runs, restarted later"},
    {Fault::pause_leader, "pause_leader", true, true, "SIGSTOP of the leader, continued later"},
    {Fault::pause_worker, "pause_worker", true, true, "SIGSTOP of a worker (its task trees run on)"},
    {Fault::partition_leader_db, "partition_leader_db", true, false, "the leader cut from the database"},
    {Fault::partition_workers, "partition_workers", true, true, "workers cut from every node"},
    {Fault::proxy_latency, "proxy_latency", true, false, "latency added between workers and nodes"},
    {Fault::proxy_reset, "proxy_reset", true, true, "a worker's connection reset"},
    {Fault::pg_restart, "pg_restart", true, true, "PostgreSQL restarted: every connection fails for a moment"},
    {Fault::clock_skew, "clock_skew", true, false, "a node's wall clock in the future for the whole run"},
    {Fault::db_stale_connections, "db_stale_connections", true, false, "database connections left half-open"},
    {Fault::continuation_skew, "continuation_skew", true, false, "one node with a longer continuation timeout"},
    {Fault::duplicate_worker, "duplicate_worker", true, false, "a second process with a worker's id"},
    {Fault::outbox_disk, "outbox_disk", true, false, "a worker's outbox writes fail for a while"},
    {Fault::kill_supervisor, "kill_supervisor", true, true, "the supervisor of one task killed"},
    {Fault::clock_rate, "clock_rate", true, true, "a process's clock runs at another rate for a while"},
    {Fault::pg_failover, "pg_failover", true, false, "the database's primary fails over to its standby"},
    // Only with `baton-chaos run --pg-ha` (a formation under a real failover
    // manager, scripts/pg-ha), and then instead of pg_failover and
    // pg_restart: pg_ha_faults.
    {Fault::pg_ha_kill_primary, "pg_ha_kill_primary", true, false,
     "kill -9 of the primary's postmaster; the failover manager promotes a synchronous standby"},
    {Fault::pg_ha_lose_primary, "pg_ha_lose_primary", true, false,
     "the primary's machine lost (its manager's agent and postmaster killed), back later as a standby"},
    {Fault::pg_ha_switchover, "pg_ha_switchover", true, false, "a planned switchover by the failover manager"},
    {Fault::pg_ha_partition_primary, "pg_ha_partition_primary", true, false,
     "the primary cut from its standbys and the failover manager (the nodes still reach it), healed later"},
    {Fault::kill9_node, "kill9_node", false, true, "kill -9 of a node (leader or not), restarted later"},
    {Fault::pause_node, "pause_node", false, true, "SIGSTOP of a node that leads nothing"},
    {Fault::partition_node_db, "partition_node_db", false, true, "a node cut from the database"},
    {Fault::partition_pair, "partition_pair", false, true, "one worker cut from one node"},
    {Fault::cancel, "cancel", false, true, "an operator cancels a run"},
    {Fault::move_worker, "move_worker", false, true, "a rebalancer moves a worker to another partition"},
    {Fault::worker_cut_off, "worker_cut_off", false, true,
     "a worker without a working leader for longer than the continuation window (recorded, not drawn)"},
};

/// The fault's name as histories record it.
std::string name_of(Fault fault);
/// The fault of that name, if it is one.
std::optional<Fault> fault_named(std::string_view name);
/// The names the chaos harness can inject, in its order.
std::vector<std::string> harness_fault_names();
/// Of those, the ones that need the database under a failover manager
/// (`--pg-ha`), and the ones that need it without (`scripts/pg-private`).
inline const std::vector<std::string> pg_ha_faults = {"pg_ha_kill_primary", "pg_ha_lose_primary", "pg_ha_switchover",
                                                      "pg_ha_partition_primary"};
inline const std::vector<std::string> pg_private_faults = {"pg_failover", "pg_restart"};

}  // namespace baton::checker
