#pragma once
// The history checker's sweep as a node runs it (docs/assurance.md): while
// the node leads, every `verify.every`, the runs that finished since the
// recorded cursor judged by the chaos checker's invariants (verify::
// sweep_once), new findings logged, and the runs found without an owner
// handed to the book of the epoch swept for, to re-read and repair
// (RunBook::recheck). Its own thread, on its own connection.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/node/node_config.h"
#include "baton/store/verify_store.h"

namespace baton::node {

struct HistorySweeperParts {
  const NodeConfig& cfg;
  const NodeIdentity& me;
  const Clock& clock;
  store::VerifyStore& store;
  const std::atomic<bool>& stop;
  /// This node's epoch while it leads, else 0.
  const std::atomic<std::int64_t>& leading_epoch;
  /// Runs this node finished (the sweep yields while they flow fast).
  const std::atomic<std::int64_t>& runs_finished;
  /// Asks the control loop of `epoch` to recheck `runs`; false when this
  /// node no longer runs one for that epoch.
  std::function<bool(Epoch epoch, const std::vector<std::int64_t>& runs, const std::string& invariant)> recheck;
};

/// Sweeps until `stop` is set.
void run_history_sweeps(const HistorySweeperParts& parts);

}  // namespace baton::node
