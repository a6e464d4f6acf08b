// Seeded simulation (STYLE practice 11): three production Electors against
// the fake lease database under random pauses, partitions, lost replies,
// crashes and graceful restarts. Safety is checked after every tick by
// SimCluster::check_safety; liveness after the faults heal.
// Replay one seed with BATON_SIM_SEED=<n>.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "sim_cluster.h"

using namespace baton;
using namespace baton::consensus;
using namespace baton::consensus::sim;

namespace {

std::vector<std::uint64_t> seeds() {
  if (const char* s = std::getenv("BATON_SIM_SEED")) return {std::strtoull(s, nullptr, 10)};
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 1; i <= 30; ++i) out.push_back(i);
  return out;
}

struct Fault {
  std::size_t node;
  int kind;  // 0 pause, 1 partition
  MonoTime until;
};

}  // namespace

TEST(ElectionSim, SafeUnderRandomFaultsAndLiveAfterHealing) {
  for (std::uint64_t seed : seeds()) {
    SCOPED_TRACE("reproduce with BATON_SIM_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    SimCluster c;
    for (int i = 0; i < 3; ++i) c.add("n" + std::to_string(i + 1));
    std::vector<Fault> faults;
    std::uniform_real_distribution<double> p(0, 1);
    int injected = 0;
    const int fault_ticks = 20000, heal_ticks = 1000;
    for (int t = 0; t < fault_ticks + heal_ticks; ++t) {
      const bool faulting = t < fault_ticks;
      // Heal faults whose time is up (or all of them once the run heals).
      for (auto it = faults.begin(); it != faults.end();) {
        if (!faulting || c.clock().mono() >= it->until) {
          if (it->kind == 0)
            c.node(it->node).paused = false;
          else
            c.node(it->node).store.unavailable = false;
          it = faults.erase(it);
        } else {
          ++it;
        }
      }
      if (faulting && p(rng) < 0.004) {
        std::size_t n = rng() % c.size();
        int kind = static_cast<int>(rng() % 5);
        auto len = Millis{static_cast<std::int64_t>(200 + rng() % 6000)};
        ++injected;
        if (kind == 0) {
          c.node(n).paused = true;
          faults.push_back({n, 0, c.clock().mono() + len});
        } else if (kind == 1) {
          c.node(n).store.unavailable = true;
          faults.push_back({n, 1, c.clock().mono() + len});
        } else if (kind == 2) {
          c.node(n).store.lose_next_reply = true;
        } else if (kind == 3) {
          std::erase_if(faults, [&](const Fault& f) { return f.node == n; });
          c.restart(n);  // kill -9
        } else {
          std::erase_if(faults, [&](const Fault& f) { return f.node == n; });
          c.node(n).elector->shutdown(c.node(n).shutdown_store);
          c.restart(n);  // SIGTERM, then start again
        }
      }
      c.tick();
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(injected, 20);
    EXPECT_GE(c.leader(), 0) << "no leader after faults healed";
    EXPECT_GT(c.db().history().size(), 3u);
  }
}
