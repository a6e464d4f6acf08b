#pragma once
// A cluster of Electors from production code over one in-memory lease
// database, all driven by one fake clock in fixed ticks (etcd-style): the
// shared harness of the scenario and simulation tests.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "baton/consensus/elector.h"
#include "baton/store_fake/fake_lease_store.h"
#include "baton/testing/fake_clock.h"

namespace baton::consensus::sim {

using namespace std::chrono_literals;

inline ElectionConfig test_config() {
  ElectionConfig c;
  c.lease = 3000ms;
  c.renew_every = 500ms;
  c.safety_margin = 1000ms;
  c.poll_every = 500ms;
  return c;
}

struct SimNode {
  SimNode(store::fake::FakeLeaseDb& db, const Clock& clock, NodeIdentity id, const ElectionConfig& cfg)
      : identity(std::move(id)), store(db), shutdown_store(db) {
    elector = std::make_unique<Elector>(
        store, clock, identity, cfg, [this](const RoleChange& c) { changes.push_back(c); }, [](Millis) {});
  }
  NodeIdentity identity;
  store::fake::FakeLeaseStore store;
  store::fake::FakeLeaseStore shutdown_store;
  std::unique_ptr<Elector> elector;
  std::vector<RoleChange> changes;
  bool paused = false;
  bool stopped = false;
};

class SimCluster {
 public:
  explicit SimCluster(ElectionConfig cfg = test_config()) : cfg_(cfg), db_(clock_) {}

  SimNode& add(const std::string& node_id) {
    nodes_.push_back(std::make_unique<SimNode>(
        db_, clock_, NodeIdentity{node_id, node_id + "-inc" + std::to_string(++incarnations_), node_id + ":7001"},
        cfg_));
    return *nodes_.back();
  }
  /// Replaces node i by a fresh process with the same node_id (a restart:
  /// new incarnation, nothing released).
  SimNode& restart(std::size_t i) {
    std::string id = nodes_[i]->identity.node_id;
    nodes_[i] = std::make_unique<SimNode>(
        db_, clock_, NodeIdentity{id, id + "-inc" + std::to_string(++incarnations_), id + ":7001"}, cfg_);
    return *nodes_[i];
  }

  /// Every live node runs its watchdog and one election step; then time moves.
  void tick(Millis dt = 10ms) {
    for (auto& n : nodes_) {
      if (n->paused || n->stopped) continue;
      n->elector->enforce_deadline();
      n->elector->step();
    }
    check_safety();
    clock_.advance(dt);
  }
  void run_for(Millis d, Millis dt = 10ms) {
    for (auto end = clock_.mono() + d; clock_.mono() < end;) tick(dt);
  }

  /// Safety, checked after every tick: a node that is running and believes it
  /// leads holds the current epoch and an unexpired lease by the DB clock;
  /// so at most one such node exists.
  void check_safety() {
    int leaders = 0;
    for (auto& n : nodes_) {
      if (n->paused || n->stopped || !n->elector->is_leader()) continue;
      ++leaders;
      ASSERT_EQ(n->elector->leader_epoch(), db_.epoch()) << n->identity.node_id;
      ASSERT_GT(db_.expires_at(), clock_.mono()) << n->identity.node_id << " leads on an expired lease";
    }
    ASSERT_LE(leaders, 1);
    const auto& h = db_.history();
    for (std::size_t i = 1; i < h.size(); ++i) ASSERT_EQ(h[i].epoch.value, h[i - 1].epoch.value + 1);
  }

  /// Index of the running leader, or -1.
  int leader() const {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (!nodes_[i]->paused && !nodes_[i]->stopped && nodes_[i]->elector->is_leader()) return static_cast<int>(i);
    return -1;
  }
  SimNode& node(std::size_t i) { return *nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }
  testing::FakeClock& clock() { return clock_; }
  store::fake::FakeLeaseDb& db() { return db_; }
  const ElectionConfig& cfg() const { return cfg_; }

 private:
  ElectionConfig cfg_;
  testing::FakeClock clock_;
  store::fake::FakeLeaseDb db_;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  int incarnations_ = 0;
};

}  // namespace baton::consensus::sim
