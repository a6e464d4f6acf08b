#include "baton/leader/node.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "baton/consensus/elector.h"
#include "baton/core/uuid.h"

namespace baton::leader {

namespace {
// How often the watchdog checks the leadership deadline: the step-down can
// be this late, so it is small next to any sane safety_margin.
constexpr Millis watchdog_every{20};
constexpr Millis registry_every{5000};
// Bound on waiting for the election thread at shutdown: if the database
// hangs, exit anyway (the lease then expires on its own).
constexpr Millis shutdown_join_max{3000};
static_assert(watchdog_every < Millis{100});
}  // namespace

int run_node(const NodeConfig& cfg, const NodePorts& ports, const std::atomic<bool>& stop) {
  NodeIdentity me{cfg.node_id, random_uuid(), cfg.listen};
  spdlog::info("node_start node={} incarnation={} endpoint={} lease={}ms renew_every={}ms safety_margin={}ms",
               me.node_id, me.incarnation, me.endpoint, cfg.election.lease.count(), cfg.election.renew_every.count(),
               cfg.election.safety_margin.count());

  auto store = ports.lease_store("baton-node-" + me.node_id);
  auto shutdown_store = ports.lease_store("baton-node-" + me.node_id + "-shutdown");
  RealClock clock;
  std::atomic<int> role_for_registry{0};
  consensus::Elector elector(
      *store, clock, me, cfg.election,
      [&](const consensus::RoleChange& c) {
        spdlog::info("role_change node={} incarnation={} from={} to={} epoch={} reason={}", me.node_id, me.incarnation,
                     consensus::to_string(c.from), consensus::to_string(c.to), c.epoch.value, c.reason);
        role_for_registry.store(c.to == consensus::Role::leader ? 1 : 0);
      },
      [](Millis d) { std::this_thread::sleep_for(d); });

  std::atomic<bool> election_done{false};
  std::thread election([&] {
    auto last_registry = clock.mono();
    bool registered = false;
    while (!stop.load()) {
      elector.step();
      auto now = clock.mono();
      if (!registered || now - last_registry >= registry_every) {
        registered = static_cast<bool>(store->record_node(me, role_for_registry.load() == 1 ? "leader" : "follower"));
        last_registry = now;
      }
    }
    election_done.store(true);
  });

  // The main thread is the watchdog: it steps the node down on time even when
  // the election thread is stuck in a database call.
  while (!stop.load()) {
    elector.enforce_deadline();
    std::this_thread::sleep_for(watchdog_every);
  }

  spdlog::info("node_stopping node={} incarnation={}", me.node_id, me.incarnation);
  elector.shutdown(*shutdown_store);
  auto deadline = clock.mono() + shutdown_join_max;
  while (!election_done.load() && clock.mono() < deadline) std::this_thread::sleep_for(Millis{10});
  if (!election_done.load()) {
    spdlog::warn("node_exit_without_join node={} reason=database_unresponsive", me.node_id);
    std::fflush(nullptr);
    std::quick_exit(0);
  }
  election.join();
  // A campaign may have won between shutdown() and the thread's exit.
  elector.shutdown(*shutdown_store);
  (void)shutdown_store->record_node(me, "stopped");
  spdlog::info("node_stopped node={} incarnation={}", me.node_id, me.incarnation);
  return 0;
}

}  // namespace baton::leader
