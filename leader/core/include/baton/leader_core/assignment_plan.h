#pragma once
// The assignment planner: which of the due runs a dispatch pass assigns, to
// which worker, with which overlap holds and whether the start goes with
// the assignment -- and which due runs it fails instead, or leaves for a
// later pass. A pure function of the due runs and the fleet's room as the
// book counts them; RunBook::dispatch_due emits what it decides, in the
// order the plan lists it (docs/scheduling.md, docs/fencing.md).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/overlap.h"
#include "baton/leader_core/token_bucket.h"
#include "baton/protocol/messages.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_rows.h"

namespace baton::leader_core {

/// A worker as the planner sees it.
struct PlannerWorker {
  WorkerCapacity room;  ///< id, labels, free slots, prefetch room, whether it takes runs
  /// Its connection's protocol takes the start with an assignment (protocol
  /// 4) and the leader grants it so (RuntimeConfig::assign_with_start).
  bool takes_start_grant = false;
  std::string instance;  ///< its process: the start grant names it
  /// The protocol version its connection speaks: a run whose tasks use
  /// their own knobs goes to one of protocol::task_knobs_version_min only.
  int protocol = protocol::protocol_version_max;
  /// The stale_after of a start written with its assignment: from this
  /// worker's own heartbeat cadence.
  Millis start_stale_after{0};
};

struct AssignmentPlanInput {
  std::span<const store::DueRun> due;  ///< in dispatch order, each once (not copied: the caller keeps them)
  std::vector<PlannerWorker> workers;
  std::vector<ActiveHold> holds;  ///< the overlap holds of the runs in flight
  int max_unstarted_assignments = 3;
  Millis continuation_timeout{0};
  TokenBucket reassignments{0, 1};  ///< the pace of ORPHANED runs handed out again (rate 0: none)
  MonoTime now{};
};

/// A due run that can never run as it is: failed (fail_unrunnable) with
/// this code and reason instead of being assigned.
struct UnrunnableRun {
  store::DueRun run;
  std::string error_code;  ///< orphaned | bad_definition
  std::string reason;
  std::string detail;  ///< bad_definition: the task list's decode error
};

/// A due run placed on a worker: its row of the batched assignment and what
/// the assign frame carries.
struct PlacedRun {
  store::DueRun due;
  store::AssignRow row;
  std::vector<protocol::Task> tasks;
  /// Read ahead of its time: its start is held until then (+1 ms: never
  /// before the database's time), counted from the plan's `now`.
  std::optional<MonoTime> start_not_before;
  bool granted = false;  ///< the assignment carries the start (written with it)
};

struct AssignmentPlan {
  std::vector<UnrunnableRun> over_budget;  ///< ORPHANED max_unstarted_assignments times, never started
  std::vector<OverlapHeld> held;           ///< held back by max_instances, mutually_exclusive or exclusive_execution
  int orphans_deferred = 0;                ///< reassignments over the pace: a later pass takes them
  std::vector<UnrunnableRun> bad_definitions;  ///< task lists no worker could be sent
  std::vector<PlacedRun> placed;
  TokenBucket reassignments{0, 1};  ///< the bucket after this plan's reassignments
};

AssignmentPlan plan_assignments(const AssignmentPlanInput& in);

/// The book's copy of a run its assignment batch wrote (`written` is the
/// row's answer): ASSIGNED, or RUNNING when the start went with it.
store::ActiveRun assigned_row(const PlacedRun& placed, const store::WriteResult& written, Epoch epoch);

}  // namespace baton::leader_core
