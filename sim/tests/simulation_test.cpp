// The simulator in the suite: BATON_SIM_SEEDS seeds (default 2000), each a
// simulated cluster with faults checked by the chaos checker; a failure
// prints its seed, and BATON_SIM_SEED=S replays exactly that one.
#include "baton/sim/simulation.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace baton::sim {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(Simulation, EverySeedKeepsTheCheckersInvariants) {
  spdlog::set_level(spdlog::level::off);
  std::uint64_t from = env_or("BATON_SIM_FIRST", 1), count = env_or("BATON_SIM_SEEDS", 2000);
  if (std::getenv("BATON_SIM_SEED")) {
    from = env_or("BATON_SIM_SEED", 1);
    count = 1;
  }
  std::int64_t runs = 0, executions = 0, simulated_ms = 0, partitioned = 0, partitioned_runs = 0, moves = 0;
  int failures = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t seed = from; seed < from + count; ++seed) {
    const Outcome o = simulate(seed);
    runs += o.stats.at("runs");
    executions += o.stats.at("executions");
    simulated_ms += o.stats.at("simulated_ms");
    if (o.stats.at("partitions") > 1) {
      partitioned++;
      partitioned_runs += o.stats.at("runs");
      moves += o.stats.at("worker_moves");
    }
    if (o.ok()) continue;
    std::string evidence;
    for (const auto& inv : o.report.invariants)
      for (std::size_t i = 0;
           std::count(o.violated.begin(), o.violated.end(), inv.name) > 0 && i < inv.evidence.size() && i < 3; ++i)
        evidence += "\n  " + inv.name + ": " + inv.evidence[i];
    ADD_FAILURE() << "seed " << seed << " violates " << o.violated.front() << evidence
                  << "\n  replay: BATON_SIM_SEED=" << seed << " "
                  << "baton_sim_test (or baton-sim --seed " << seed << " for its trace)";
    if (++failures >= 5) break;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "simulated %llu seeds: %lld runs, %lld executions, %.0f simulated minutes in %.1f s wall "
      "(%.0f simulated runs per wall second)\n",
      static_cast<unsigned long long>(count), static_cast<long long>(runs), static_cast<long long>(executions),
      static_cast<double>(simulated_ms) / 60000.0, wall, static_cast<double>(runs) / wall);
  std::printf("of them with partitioned leadership: %lld seeds, %lld runs, %lld workers moved between partitions\n",
              static_cast<long long>(partitioned), static_cast<long long>(partitioned_runs),
              static_cast<long long>(moves));
  // The suite's seeds must exercise partitioned leadership (docs/scaling.md)
  // and its worker moves, or its green run says nothing about them.
  if (count >= 200) {
    EXPECT_GT(partitioned, 0);
    EXPECT_GT(partitioned_runs, 0);
    EXPECT_GT(moves, 0);
  }
}

TEST(Simulation, ASeedReplaysTheSameHistory) {
  spdlog::set_level(spdlog::level::off);
  std::vector<std::string> a, b;
  const Outcome x = simulate(17, &a);
  const Outcome y = simulate(17, &b);
  EXPECT_EQ(x.stats, y.stats);
  EXPECT_EQ(x.report.json(), y.report.json());
  EXPECT_EQ(a, b);
  EXPECT_GT(x.stats.at("executions"), 0);
  EXPECT_GT(x.stats.at("faults"), 0);
}

}  // namespace
}  // namespace baton::sim
