#pragma once
// Checking a history of partitioned leadership (docs/scaling.md): N lease
// rows, each fencing its own partition of the runs. The chaos checker's
// invariants are about one lease: one epoch sequence, every write fenced by
// the newest epoch. With partitions each holds per partition (each has its
// own epochs 1, 2, 3, ... and its own elections to be stale against), and
// one more rule joins them: a write of a run is fenced by the lease of the
// run's own partition. Epoch numbers of different partitions are unrelated,
// so a write fenced by the wrong partition's lease can carry a number that
// looks current; only the partition that fenced it tells it apart.
#include <cstdint>
#include <map>
#include <vector>

#include "baton/checker/checker.h"
#include "baton/checker/history.h"

namespace baton::sim {

struct PartitionedHistory {
  /// Every partition's runs, transitions, executions, attempts, dead letters,
  /// durable finishes and the faults; its `epochs` are not read (see below).
  checker::History whole;
  std::map<std::int64_t, int> run_partition;  ///< run id -> its partition
  /// Per transition of `whole.transitions`, in order: the partition whose
  /// lease fenced the statement that wrote it.
  std::vector<int> fenced_by;
  /// Per partition: its lease's elections.
  std::vector<std::vector<checker::EpochRow>> epochs;
};

/// Checks each partition's share of the history with checker::check_history
/// (its runs and everything about them, its own elections), merges the
/// reports (with more than one partition the evidence names it; an
/// invariant a partition had nothing to examine in adds nothing), and adds
/// `writes_fenced_by_own_partition`.
checker::Report check_partitioned(const PartitionedHistory& h);

}  // namespace baton::sim
