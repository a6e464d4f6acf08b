#include "baton/sim/partitioned_history.h"

#include <string>

namespace baton::sim {

namespace {

constexpr std::size_t evidence_max = 40;  ///< lines kept per merged invariant

/// Partition `p`'s share: its runs and everything about them, its elections.
checker::History share_of(const PartitionedHistory& h, int p) {
  const auto mine = [&](std::int64_t run) {
    auto it = h.run_partition.find(run);
    return it != h.run_partition.end() && it->second == p;
  };
  checker::History s;
  s.window = h.whole.window;
  s.nemesis = h.whole.nemesis;
  s.faults = h.whole.faults;  // by node or worker: those of other partitions excuse nothing here
  for (const auto& [run, xs] : h.whole.executions)
    if (mine(run)) s.executions[run] = xs;
  for (const auto& [run, row] : h.whole.runs)
    if (mine(run)) s.runs[run] = row;
  for (const auto& t : h.whole.transitions)
    if (mine(t.run)) s.transitions.push_back(t);
  for (const auto& a : h.whole.attempts)
    if (mine(a.run)) s.attempts.push_back(a);
  for (const auto& d : h.whole.dead_letters)
    if (mine(d.run)) s.dead_letters.push_back(d);
  for (const auto& f : h.whole.durable_finishes)
    if (mine(f.run)) s.durable_finishes.push_back(f);
  // Cron and events are simulated in unpartitioned histories only: a
  // skipped slot, which names no run, and the events are partition 0's.
  for (const auto& l : h.whole.ledger)
    if (l.run ? mine(*l.run) : p == 0) s.ledger.push_back(l);
  s.jobs = h.whole.jobs;
  if (p == 0) {
    s.events = h.whole.events;
    s.accepted_events = h.whole.accepted_events;
  }
  s.epochs = h.epochs.at(static_cast<std::size_t>(p));
  return s;
}

void merge(checker::InvariantResult& into, const checker::InvariantResult& from, const std::string& prefix) {
  into.examined += from.examined;
  into.violations += from.violations;
  into.excused += from.excused;
  for (const auto& e : from.evidence)
    if (into.evidence.size() < evidence_max) into.evidence.push_back(prefix + e);
  for (const auto& e : from.excuses)
    if (into.excuses.size() < evidence_max) into.excuses.push_back(prefix + e);
}

checker::InvariantResult writes_fenced_by_own_partition(const PartitionedHistory& h) {
  checker::InvariantResult inv;
  inv.name = "writes_fenced_by_own_partition";
  inv.description =
      "every write of a run (its insert and each update) was fenced by the lease of the run's own partition";
  for (std::size_t i = 0; i < h.whole.transitions.size(); ++i) {
    const checker::TransitionRow& t = h.whole.transitions[i];
    inv.examined++;
    const auto run = h.run_partition.find(t.run);
    const std::string what = "run " + std::to_string(t.run) + " " + (t.from.empty() ? "insert" : t.from) + " -> " +
                             t.to + " carrying epoch " + std::to_string(t.epoch);
    std::string wrong;
    if (run == h.run_partition.end())
      wrong = what + ": the run has no partition";
    else if (i >= h.fenced_by.size())
      wrong = what + ": no record of the lease that fenced it";
    else if (h.fenced_by[i] != run->second)
      wrong = what + " (partition " + std::to_string(run->second) + ") was fenced by partition " +
              std::to_string(h.fenced_by[i]) + "'s lease";
    if (wrong.empty()) continue;
    inv.violations++;
    if (inv.evidence.size() < evidence_max) inv.evidence.push_back(wrong);
  }
  return inv;
}

}  // namespace

checker::Report check_partitioned(const PartitionedHistory& h) {
  const int partitions = static_cast<int>(h.epochs.size());
  std::vector<checker::Report> shares;
  for (int p = 0; p < partitions; ++p) shares.push_back(checker::check_history(share_of(h, p)));
  checker::Report out;
  if (shares.empty()) return out;
  out.faults = shares.front().faults;  // the same faults in every share
  out.faults_effective = shares.front().faults_effective;
  for (std::size_t i = 0; i < shares.front().invariants.size(); ++i) {
    // A share with nothing to examine (a partition without a second
    // election, or without runs) reports that as a violation; it counts only
    // when no partition examined anything.
    checker::InvariantResult inv = shares.front().invariants[i];
    bool any = false;
    for (const auto& r : shares) any = any || (i < r.invariants.size() && r.invariants[i].examined > 0);
    if (any) {
      inv.examined = inv.violations = inv.excused = 0;
      inv.evidence.clear();
      inv.excuses.clear();
      for (int p = 0; p < partitions; ++p) {
        const auto& r = shares[static_cast<std::size_t>(p)];
        if (i < r.invariants.size() && r.invariants[i].examined > 0)
          merge(inv, r.invariants[i], partitions > 1 ? "partition " + std::to_string(p) + ": " : "");
      }
    }
    out.invariants.push_back(std::move(inv));
  }
  for (const auto& r : shares)
    for (const auto& [name, n] : r.totals) out.totals[name] += n;
  out.invariants.push_back(writes_fenced_by_own_partition(h));
  out.totals["partitions"] = partitions;
  return out;
}

}  // namespace baton::sim
