#pragma once
// A seeded, deterministic simulation of a whole Baton cluster: coordinator
// nodes (the production Elector and RunBook), workers (the production
// AttemptTable with a model of the Agent's shell and of task process trees),
// the fake database (FakeLeaseDb + FakeRunDb: the same predicates as the SQL)
// with in-doubt commits, and a network of frames that are delayed, lost
// with their connection (in order within one, as TCP delivers them; across
// connections in any order), and partitioned. One
// virtual clock drives everything; every node and worker reads its own
// monotonic clock, with its own offset and rate.
//
// Each seed draws its knobs (sizes, rates, fault mix), runs a fault period,
// heals everything, lets the cluster quiesce, and checks the history with
// the chaos checker's own check_history (the same function the real chaos
// harness calls). The same seed replays the same history, event for event.
// docs/simulation.md says what is modelled and what is not.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "baton/checker/checker.h"

namespace baton::sim {

/// The knobs of one simulated history, drawn from its seed.
struct Knobs {
  int nodes = 3;
  int workers = 3;
  int capacity = 2;
  int prefetch = 0;               ///< runs a worker holds queued beyond its free slots (0..capacity)
  int runs = 40;                  ///< created during the fault period
  std::int64_t fault_ms = 60000;  ///< faults are injected this long
  std::int64_t quiet_ms = 60000;  ///< then all heal; the history must quiesce within this
  std::int64_t frame_delay_min_ms = 1;
  std::int64_t frame_delay_max_ms = 10;        ///< the spread of delays (never reordering one connection)
  double p_reset = 0;                          ///< a frame is lost and its connection reset
  double p_in_doubt = 0;                       ///< a write commits but its reply is lost
  double faults_per_s = 0.3;                   ///< mean rate of injected faults
  std::vector<double> node_rate, worker_rate;  ///< monotonic clock rates
  double p_success = 0.8;                      ///< a task exits 0
  double p_descendant = 0.3;                   ///< a task forks a child that may outlive it
  std::int64_t task_min_ms = 50, task_max_ms = 2500;
  /// A lane write's (batched starts, finishes) result comes back up to this
  /// long after the book emitted it, in any order with other inputs; its
  /// statement runs at emission or at the reply.
  std::int64_t lane_delay_max_ms = 0;
  /// A created run reaches the books as its insert returned it
  /// (RunBook::created, the API trigger's path), not as a wake-up alone.
  bool hand_created = false;
  /// Partitioned leadership (docs/scaling.md): this many leases, each
  /// fencing its own share of the runs; every node campaigns for each, with
  /// a RunBook per partition it leads; worker i serves partition i mod P.
  int partitions = 1;
  /// The newest protocol version the workers speak: from 4, assignments to
  /// free slots carry the start (docs/fencing.md); 3, the separate start.
  int protocol = 4;
  /// A cron job (unpartitioned seeds only) with a slot every this many
  /// seconds while faults are injected (0: none), deleted when they end;
  /// its overlap and misfire policies (store::JobDefinition).
  int cron_every_s = 0;
  std::string cron_policy = "allow";
  std::string cron_misfire = "run_latest";
  /// Events posted while faults are injected (unpartitioned seeds only; 0:
  /// none), each to a job subscribed to their kind, which a second job runs
  /// after (a run-after dependency).
  int events = 0;
};
Knobs knobs_for(std::uint64_t seed);

struct Outcome {
  std::uint64_t seed = 0;
  Knobs knobs;
  checker::Report report;
  std::vector<std::string> violated;          ///< checked invariants with a violation
  std::map<std::string, std::int64_t> stats;  ///< runs, executions, epochs, frames, faults, simulated_ms, ...
  bool ok() const { return violated.empty(); }
};

/// The chaos checker's invariants that a simulated history supports; the
/// others read harness files (probes, the nemesis's requested kinds, cron
/// and API submissions) that the simulator does not produce.
const std::vector<std::string>& checked_invariants();

/// Each RunBook's incident journal (journal/book_recorder.h), one per book
/// the history made, its lines in order, with the virtual time as their
/// wall clock: what `baton-sim --replay` reads.
using Journals = std::vector<std::vector<std::string>>;

/// Simulates one history from `seed` and checks it. `trace`, if given, gets
/// every log line of the nodes and every simulator event, with the virtual
/// time; `journals`, if given, every book's journal.
Outcome simulate(std::uint64_t seed, std::vector<std::string>* trace = nullptr, Journals* journals = nullptr);

}  // namespace baton::sim
