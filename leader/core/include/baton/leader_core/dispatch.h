#pragma once
// Pure decisions of the leader's control loop: which due run goes to which
// worker, what a finished attempt becomes, and what the reaper does with
// runs whose worker is gone. No I/O and no clock reads: ages and deadlines
// arrive already computed (by the database clock) in the inputs.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "baton/base/run_state.h"

namespace baton::leader_core {

struct DispatchCandidate {
  std::int64_t run_id = 0;
  std::map<std::string, std::string> selector;  ///< every key must equal the worker's label
  /// The worker an ORPHANED run was last assigned to (SPEC section 3:
  /// reassigned "to another worker where one fits"): chosen only when no
  /// other worker has room for it. "": none.
  std::string avoid_worker{};
};

struct WorkerCapacity {
  std::string worker_id;
  std::map<std::string, std::string> labels;
  int free = 0;  ///< capacity minus runs it holds (assigned or running)
  bool draining = false;
  /// Prefetch room: how many more it may hold queued beyond its capacity
  /// (prefetch minus what it holds beyond the capacity).
  int queue = 0;
};

struct PlannedAssignment {
  std::int64_t run_id = 0;
  std::string worker_id;
};

struct DispatchPlan {
  std::vector<PlannedAssignment> assignments;
  std::vector<std::int64_t> unmatched;  ///< no attached worker carries the selector's labels
};

bool labels_match(const std::map<std::string, std::string>& selector, const std::map<std::string, std::string>& labels);

/// Candidates arrive in priority order; each goes to the matching worker with
/// the most free slots (ties: smallest id), so load spreads across the fleet.
/// Only the candidates no free slot took then go to prefetch queues (most
/// queue room first): a busy worker never queues a run that an idle one
/// could start now. A candidate no worker can take now waits; one no worker
/// could ever take is reported as unmatched.
DispatchPlan plan_dispatch(const std::vector<DispatchCandidate>& candidates, std::vector<WorkerCapacity> workers);

/// What a finished attempt becomes (SPEC section 3).
struct FinishDecision {
  RunState next = RunState::succeeded;  ///< SUCCEEDED, RETRY_WAITING, FAILED or TIMED_OUT
  std::chrono::milliseconds retry_delay{0};
};
/// `outcome` is SUCCEEDED, FAILED or TIMED_OUT. FAILED and TIMED_OUT are final
/// only when attempts are exhausted; otherwise RETRY_WAITING after
/// retry_backoff(attempt, base, cap) + jitter.
FinishDecision decide_finish(RunState outcome, int attempt, int max_attempts, std::chrono::milliseconds base,
                             std::chrono::milliseconds cap, std::chrono::milliseconds jitter);

struct ReaperConfig {
  std::chrono::milliseconds reassign_after{10000};  ///< ASSIGNED and not started this long -> ORPHANED
  /// ASSIGNED to a worker that is not attached, this long -> ORPHANED. Safe
  /// at any value: no process starts without a start grant, and a run that
  /// is no longer ASSIGNED gets none.
  std::chrono::milliseconds reassign_detached_after{1000};
  std::chrono::milliseconds timeout_grace{
      5000};  ///< leader enforces a run timeout this long after the worker should have
  /// A RUNNING attempt its attached worker left out of this many heartbeats
  /// in a row is lost: the worker does not have it (it restarted, or the
  /// attempt never reached it). A worker lists what it runs, what it ended
  /// and has not had acknowledged, and what it was assigned, so this is
  /// positive evidence; it is counted in heartbeats, never in time, so a
  /// slow leader cannot mistake itself for a silent worker.
  std::int64_t unlisted_heartbeats_lost = 2;
};

struct ReaperView {
  std::int64_t run_id = 0;
  RunState state = RunState::assigned;
  std::string worker_id;
  bool worker_attached = false;
  bool adopted = false;  ///< the run's leader_epoch is ours
  ContinuationState continuation = ContinuationState::none;
  bool continuation_expired = false;
  std::int64_t assigned_age_ms = 0;
  std::int64_t running_age_ms = 0;
  std::int64_t timeout_ms = 0;
  /// RUNNING: heartbeats its attached worker has sent since it last listed
  /// this attempt (0 when the last one did).
  std::int64_t unlisted_heartbeats = 0;
  /// ASSIGNED: its attached worker listed it in its last heartbeat (held
  /// queued beyond its free slots, or its start asked for).
  bool held_by_worker = false;
};

enum class ReapKind {
  orphan,            ///< ASSIGNED -> ORPHANED
  requeue,           ///< ASSIGNED -> ORPHANED, held queued by its worker too long: not a lost placement
  begin_confirming,  ///< RUNNING, worker gone -> CONFIRMING with a deadline
  attempt_lost,      ///< CONFIRMING past deadline + margin, or not held by its attached worker -> retry or fail
  enforce_timeout,   ///< RUNNING past timeout + grace -> TIMED_OUT (retry or final)
};

struct ReapAction {
  std::int64_t run_id = 0;
  ReapKind kind = ReapKind::orphan;
};

std::vector<ReapAction> plan_reaping(const std::vector<ReaperView>& runs, const ReaperConfig& cfg);

}  // namespace baton::leader_core
