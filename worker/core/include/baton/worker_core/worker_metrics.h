#pragma once
// What a worker says about itself on its optional metrics address
// (worker.yaml `metrics_listen`, docs/operations.md "Metrics"): the
// Prometheus text of its slots, its outbox, its spawn failures and its
// connections. Pure: the agent fills the numbers, a listener serves them.
#include <cstdint>
#include <string>

namespace baton::worker_core {

struct WorkerMetrics {
  std::string worker_id;
  int capacity = 0;
  int running = 0;                         ///< attempts whose task is running
  int held = 0;                            ///< attempts held: assigned, starting, running or stopping
  std::int64_t outbox_unacknowledged = 0;  ///< finishes not yet acknowledged by a leader
  bool attached = false;
  std::int64_t attaches = 0;        ///< welcomes received
  std::int64_t reconnects = 0;      ///< connection attempts after the first
  std::int64_t spawn_failures = 0;  ///< programs that could not be started
  std::int64_t attempts_finished = 0;
};

/// The exposition text (version 0.0.4) of `m`, every family with HELP and
/// TYPE; the worker id as a label of baton_worker_info, escaped.
std::string render_worker_metrics(const WorkerMetrics& m);

}  // namespace baton::worker_core
