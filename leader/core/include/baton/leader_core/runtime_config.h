#pragma once
// The leader's run-lifecycle timing and limits (the node config's `runtime:`
// section, docs/operations.md). Plain data: the pure decisions of
// leader_core and the control loop that executes them both read it.
#include <cstdint>
#include <string>
#include <vector>

#include "baton/base/clock.h"

namespace baton::leader_core {

struct RuntimeConfig {
  Millis heartbeat_interval{1000};       ///< workers send heartbeats this often
  Millis heartbeat_timeout{5000};        ///< a worker silent this long is detached
  Millis reassign_after{10000};          ///< ASSIGNED and not started this long -> ORPHANED
  Millis reassign_detached_after{1000};  ///< ... or this long when its worker is not attached
  Millis continuation_timeout{30000};    ///< how long a detached worker keeps a RUNNING attempt going
  Millis continuation_margin{10000};     ///< the leader waits deadline + margin before retrying the attempt
  /// A run orphaned this many times without ever starting is failed (its
  /// assignments, unlike its attempts, do not count against max_attempts).
  int max_unstarted_assignments = 5;
  Millis timeout_grace{5000};  ///< leader-side enforcement of a run timeout, after the worker's
  Millis dispatch_every{50};
  /// A PENDING run whose time (a cron slot, plus its jitter) is this close
  /// is assigned now, and its start is written at the time: a slot's start
  /// is then one write and one grant, not an assignment as well. 0: runs are
  /// assigned when their time has come.
  Millis assign_ahead{250};
  /// A run placed in a free slot of a worker that speaks protocol 4 starts
  /// with its assignment (docs/fencing.md, "An assignment that carries the
  /// start"). false: every run asks for its start, as with older workers.
  /// On by default since the fixed version passed the 30-minute chaos runs
  /// of seeds 42 and 7 (docs/chaos.md, docs/fencing.md) and the whole suite
  /// with it on.
  bool assign_with_start = true;
  Millis reap_every{500};
  Millis cron_every{200};
  /// How often the leader reads what operators set without a restart
  /// (`dispatch_enabled`, drained and evicted workers): a change applies
  /// within this long.
  Millis controls_every{500};
  /// How often the workers' last heartbeat is written to the registry (it is
  /// what operators see; liveness itself is judged in memory).
  Millis workers_seen_every{5000};
  /// At most this many registry rows a second on average for those writes:
  /// each round writes the workers recorded longest ago first, so a fleet
  /// larger than rate x workers_seen_every has each worker's last heartbeat
  /// brought up to date less often, and an idle fleet of 10,000 writes no
  /// more than a fleet of 250 (docs/operations.md, "Large fleets").
  int workers_seen_rows_per_second = 50;
  /// The fleet's heartbeat budget: a worker welcomed while more workers are
  /// attached than this many a second of heartbeats allows is given a longer
  /// interval and timeout (leader_core/heartbeat_cadence.h). 0: never.
  int max_heartbeats_per_second = 2000;
  Millis retry_jitter_max{250};
  /// ORPHANED runs reassigned per second, on average (0: no limit), and at
  /// most this many at once: a new leader inheriting a lost worker's runs
  /// hands them out gradually instead of all in one pass.
  /// How often the leader prunes what is older than the retention_days
  /// setting (a bounded batch each time; again at once while batches fill).
  Millis prune_every{60000};
  int reassign_rate = 100;
  int reassign_burst = 100;
  int dispatch_batch = 512;
  /// Of each stream of an attempt, the database keeps the first this many
  /// bytes of text (the log archive keeps all of it).
  std::int64_t output_db_bytes = 1024 * 1024;
  /// The node has a log archive (node key log_archive_dir): a streamed
  /// attempt's finish records its log_ref.
  bool log_archive = false;
  /// The node's payload_denylist: the leader judges SQL submissions by it
  /// when it turns them into runs, and publishes it for baton.trigger to
  /// refuse with in the submitter's transaction (schemas/0036). The node
  /// sets it from its configuration.
  std::vector<std::string> payload_denylist;
};

}  // namespace baton::leader_core
