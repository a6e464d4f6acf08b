// The leadership invariants: every write's epoch the leader's at its
// commit, one winner per epoch, elections kept, a paused leader superseded,
// leaderless time bounded, every node following the elections.
#include <algorithm>
#include <map>
#include <set>

#include "invariant_support.h"
#include "invariants.h"

namespace baton::checker {

using namespace checks;

/// No stale-epoch write committed.
InvariantResult check_no_stale_epoch_writes(const History& h, const Report& /*so_far*/) {
  std::map<std::int64_t, std::optional<std::int64_t>> election_commit;
  for (const auto& e : h.epochs) election_commit[e.epoch] = e.commit_us;
  InvariantResult inv = invariant(
      "no_stale_epoch_writes", "no run write carrying epoch e committed after an election of a newer epoch committed");
  for (const auto& t : h.transitions) {
    auto next = election_commit.upper_bound(t.epoch);
    if (next == election_commit.end()) continue;  // written in the newest epoch
    inv.examined++;
    if (!t.commit_us || !next->second) {
      add(inv, "run " + std::to_string(t.run) + " " + t.from + " -> " + t.to + " at epoch " + std::to_string(t.epoch) +
                   ": cannot be ordered against epoch " + std::to_string(next->first) +
                   " (a commit timestamp is missing)");
      continue;
    }
    if (*t.commit_us > *next->second)
      add(inv, "run " + std::to_string(t.run) + " " + t.from + " -> " + t.to + " carrying epoch " +
                   std::to_string(t.epoch) + " committed " + std::to_string((*t.commit_us - *next->second) / 1000) +
                   " ms after epoch " + std::to_string(next->first) + " was elected");
  }
  return inv;
}

/// One winner per epoch, increasing.
InvariantResult check_one_leader_per_epoch(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("one_leader_per_epoch", "epochs increase by one, each with one (node, incarnation) and a commit time");
  std::int64_t prev = 0;
  for (const auto& e : h.epochs) {
    inv.examined++;
    if (e.epoch != prev + 1) add(inv, "epoch " + std::to_string(e.epoch) + " follows " + std::to_string(prev));
    if (e.node.empty() || e.incarnation.empty()) add(inv, "epoch " + std::to_string(e.epoch) + " has no holder");
    if (!e.commit_us) add(inv, "epoch " + std::to_string(e.epoch) + " has no commit timestamp");
    prev = e.epoch;
  }
  return inv;
}

/// Every election a node reported is in the database's history.
// The database's own epoch history cannot show an election it lost: after
// an asynchronous failover it is simply shorter, and the next campaign
// grants the lost number again (one_leader_per_epoch still sees 1, 2, 3).
// What the nodes said while it happened can: /status names the epoch and
// its leader, read from a committed lease row or a won campaign.
InvariantResult check_elections_kept(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant(
      "elections_kept",
      "every (epoch, leader) a node's /status reported is in the database's epoch history with that leader: no "
      "committed election was lost and no epoch number went to two nodes");
  std::map<std::int64_t, std::string> holder;
  for (const auto& e : h.epochs) holder[e.epoch] = e.node;
  std::set<std::pair<std::int64_t, std::string>> seen;
  for (const auto& p : h.probes) {
    if (!p.up || p.epoch <= 0 || p.leader.empty() || !seen.insert({p.epoch, p.leader}).second) continue;
    inv.examined++;
    const std::string said = p.node + " reported epoch " + std::to_string(p.epoch) + " led by " + p.leader + " at +" +
                             std::to_string((p.t_us - h.window.start_us) / 1000) + " ms";
    auto it = holder.find(p.epoch);
    if (it == holder.end())
      add(inv, said + "; the database has no epoch " + std::to_string(p.epoch));
    else if (it->second != p.leader)
      add(inv, said + "; the database says " + it->second + " won it");
  }
  return inv;
}

/// A paused leader is superseded by another node.
InvariantResult check_paused_leader_superseded(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("paused_leader_superseded",
                "while a leader is paused past its lease, a different (node, incarnation) wins the next epoch");
  for (const auto& f : h.faults) {
    if (f.fault != "pause_leader") continue;
    inv.examined++;
    const EpochRow* next = nullptr;
    for (const auto& e : h.epochs)
      if (e.commit_us && *e.commit_us > f.from_us) {
        next = &e;
        break;
      }
    if (!next)
      add(inv, "pause of " + f.target + ": no epoch was won after it");
    else if (next->node == f.target)
      add(inv, "pause of " + f.target + ": the next epoch (" + std::to_string(next->epoch) +
                   ") was won by the paused node itself");
    else if (*next->commit_us > f.to_us + 1'000'000)
      add(inv, "pause of " + f.target + ": epoch " + std::to_string(next->epoch) + " won by " + next->node + " only " +
                   std::to_string((*next->commit_us - f.to_us) / 1000) + " ms after the pause ended");
  }
  return inv;
}

/// Liveness: leaderless intervals are short.
// The harness asks every node's /status every ~200 ms (one prober per
// node); a leader is known at time t if some node's latest answer, at
// most 1.5 s old, says it leads.
InvariantResult check_leaderless_bounded(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("leaderless_bounded",
                "after each node or database fault heals, a leader is known within lease + poll + 2.5 s (probes of "
                "/status)");
  // The slack: a probe round takes up to ~1.2 s (1 s timeout on a node
  // that does not answer), and a leader that lost the database stops
  // answering /status before its lease can expire.
  const std::int64_t bound_ns = (h.window.lease_ms + h.window.poll_ms + 2500) * ms_ns;
  const std::int64_t fresh_ns = 1500 * ms_ns;
  std::vector<const Probe*> sorted;
  for (const auto& p : h.probes) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Probe* a, const Probe* b) { return a->mono_ns < b->mono_ns; });
  std::map<std::string, const Probe*> latest;
  std::int64_t gap_from = -1;  // mono ns of the first probe without a known leader, -1 if there is one
  // Faults that can take leadership away (a node or the database). The
  // bound holds after each of them heals: a gap that a second such fault
  // joins (the next fault of the schedule hitting the node just elected)
  // is measured from that fault's heal -- but only if it began while the
  // gap was still within the bound; one that began later excuses nothing
  // (the bound was already broken). Worker faults never excuse a gap.
  // The failover manager's faults heal when a primary takes writes again.
  static const std::set<std::string> leadership_faults = {
      "kill9_leader",       "kill9_follower",     "pause_leader",         "partition_leader_db",
      "proxy_latency",      "proxy_reset",        "db_stale_connections", "pg_restart",
      "pg_ha_kill_primary", "pg_ha_lose_primary", "pg_ha_switchover",     "pg_ha_partition_primary"};
  std::vector<const FaultWindow*> by_start;
  for (const auto& f : h.faults)
    if (leadership_faults.count(f.fault)) by_start.push_back(&f);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const FaultWindow* a, const FaultWindow* b) { return a->from_ns < b->from_ns; });
  auto close_gap = [&](std::int64_t from, std::int64_t to) {
    std::int64_t measured_from = from;
    bool broken = false;
    for (const FaultWindow* f : by_start) {
      if (f->from_ns > to || f->to_ns < from) continue;
      if (f->from_ns > measured_from + bound_ns) {
        broken = true;  // leaderless past the bound before this fault began
        break;
      }
      measured_from = std::max(measured_from, f->to_ns);
    }
    if (broken || to - measured_from > bound_ns)
      add(inv, "no leader for " + ms(to - from) + " (" + ms(to - measured_from) + " after the last heal), bound " +
                   ms(bound_ns));
  };
  for (const Probe* p : sorted) {
    latest[p->node] = p;
    if (p->mono_ns < h.window.start_mono_ns || p->mono_ns > h.window.end_mono_ns) continue;
    inv.examined++;
    const bool led = std::any_of(latest.begin(), latest.end(), [&](const auto& kv) {
      return kv.second->up && kv.second->role == "leader" && p->mono_ns - kv.second->mono_ns <= fresh_ns;
    });
    if (!led && gap_from < 0) gap_from = p->mono_ns;
    if (led && gap_from >= 0) {
      close_gap(gap_from, p->mono_ns);
      gap_from = -1;
    }
  }
  if (gap_from >= 0) close_gap(gap_from, h.window.end_mono_ns);
  return inv;
}

/// Liveness: every node follows the elections.
InvariantResult check_election_progress(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("election_progress",
                "every node that answers reports the newest epoch within poll + 1.5 s of its election, unless "
                "a fault on that node (or the database) explains the lag");
  const std::int64_t slack_us = (h.window.poll_ms + 1500) * 1000;
  const std::int64_t after_heal_ns = (h.window.lease_ms + 2000) * ms_ns;
  std::map<std::string, std::optional<std::int64_t>> lag_since;  // node -> first lagging probe (mono)
  std::set<std::string> nodes;
  auto excused_at = [&](const std::string& node, std::int64_t mono) {
    for (const auto& f : h.faults) {
      const bool on_node = f.target == node || f.target == "postgres";
      if (on_node && mono >= f.from_ns && mono <= f.to_ns + after_heal_ns) return true;
    }
    return false;
  };
  for (const auto& p : h.probes) {
    nodes.insert(p.node);
    if (!p.up || p.mono_ns < h.window.start_mono_ns) continue;
    std::int64_t newest = 0;
    for (const auto& e : h.epochs)
      if (e.commit_us && *e.commit_us + slack_us < p.t_us) newest = std::max(newest, e.epoch);
    const bool lagging = p.epoch < newest && !excused_at(p.node, p.mono_ns);
    auto& since = lag_since[p.node];
    if (lagging && !since) since = p.mono_ns;
    if (!lagging && since) {
      add(inv, p.node + " reported an old epoch for " + ms(p.mono_ns - *since) + " with no fault to explain it");
      since.reset();
    }
  }
  for (auto& [node, since] : lag_since)
    if (since) add(inv, node + " still reported an old epoch when the run ended");
  inv.examined = static_cast<std::int64_t>(nodes.size());
  return inv;
}

}  // namespace baton::checker
