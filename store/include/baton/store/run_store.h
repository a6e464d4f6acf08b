#pragma once
// Port for every write to run state. One function per transition of SPEC
// section 3; each is ONE conditional statement carrying the run id, the
// expected version, the expected state and the writer's epoch (the fence),
// and each returns Applied / Conflict / Fenced. No other code writes
// job_runs (enforced by the tidy test).
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/store/run_rows.h"

namespace baton::store {

class RunStore {
 public:
  virtual ~RunStore() = default;

  virtual Result<CreateResult> create_run(Epoch epoch, const NewRun& run) = 0;
  virtual Result<std::optional<RunRow>> read_run(RunId id) = 0;

  /// PENDING -> ASSIGNED with a fresh lease token.
  virtual Result<WriteResult> assign(const RunFence& f, const std::string& worker_id) = 0;
  /// ORPHANED or RETRY_WAITING -> ASSIGNED with a fresh lease token; attempt
  /// + 1 from RETRY_WAITING only (an orphaned assignment never started, so
  /// it was not an attempt).
  virtual Result<WriteResult> reassign(const RunFence& f, RunState from, const std::string& worker_id) = 0;
  /// ASSIGNED -> RUNNING; also requires the assigned worker and the lease token.
  virtual Result<WriteResult> start(const RunFence& f, const AttemptFence& a, Millis stale_after) = 0;
  /// RUNNING -> RUNNING: heartbeat_at = now(), stale_after = now() + stale_after.
  virtual Result<WriteResult> heartbeat(const RunFence& f, const AttemptFence& a, Millis stale_after) = 0;
  /// RUNNING -> SUCCEEDED | FAILED | TIMED_OUT, with a job_run_attempts row and,
  /// for FAILED / TIMED_OUT, a dead_letters row, in the same statement.
  virtual Result<WriteResult> finish(const RunFence& f, const AttemptFence& a, const Finish& fin) = 0;
  /// RUNNING -> RETRY_WAITING, next_attempt_at = now() + delay, with an attempts row.
  virtual Result<WriteResult> retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                          Millis delay) = 0;
  /// ASSIGNED -> ORPHANED (its worker detached before starting it);
  /// counts the run's unstarted assignments.
  virtual Result<WriteResult> orphan(const RunFence& f) = 0;
  /// ASSIGNED -> ORPHANED without counting an unstarted assignment: its
  /// attached worker held it queued (prefetch) longer than the reassign
  /// delay, so it goes back to be placed again; nothing was lost.
  virtual Result<WriteResult> requeue(const RunFence& f) = 0;
  /// ORPHANED -> FAILED with a dead letter (no attempts left).
  virtual Result<WriteResult> fail_orphaned(const RunFence& f, const std::string& reason) = 0;
  /// PENDING, ORPHANED or RETRY_WAITING -> FAILED with a dead letter: the
  /// run can never be dispatched (its definition does not decode, or it was
  /// orphaned more often than the unstarted-assignment budget allows).
  virtual Result<WriteResult> fail_unrunnable(const RunFence& f, RunState from, const std::string& error_code,
                                              const std::string& reason) = 0;
  /// RETRY_WAITING -> SUCCEEDED: the attempt that was ended as lost (or
  /// failed by its deadline) did succeed, and the run has not been
  /// reassigned since: same worker, attempt and lease token. Its attempt row
  /// becomes SUCCEEDED. Conflict if anything moved on.
  virtual Result<WriteResult> late_success(const RunFence& f, const AttemptFence& a, const Finish& fin) = 0;
  /// A worker's report (fin.final_state, fin.exit_code) of an attempt this
  /// leader or an earlier one ended without it -- declared lost, or timed
  /// out -- and that is no longer the run's to end: recorded as what really
  /// happened (schemas/0041, late_reports), the run unchanged. Only the
  /// run's id and the writer's epoch of `f` count. Applied when recorded;
  /// Conflict when there is nothing to record (another kind of attempt, or
  /// a report already recorded: a replay); Fenced under a newer epoch.
  virtual Result<WriteResult> record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin) = 0;
  /// PENDING, ASSIGNED, ORPHANED or RETRY_WAITING -> CANCELED (no attempt
  /// runs), with an audit entry in the same statement.
  virtual Result<WriteResult> cancel(const RunFence& f, RunState from, const std::string& reason) = 0;
  /// RUNNING -> CANCELED: the attempt's end, under the predicates of every
  /// other end (its worker, attempt number and lease token, adopted by this
  /// epoch), recorded as the run's final attempt (outcome CANCELED with the
  /// exit code and result the worker reported, if any) and with an audit
  /// entry, in the same statement. Conflict if the attempt is not current.
  virtual Result<WriteResult> cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                             const std::string& reason) = 0;
  /// RUNNING -> RUNNING with a recorded cancel request (the operator's
  /// reason): the attempt is to be cancelled by its worker, and whichever
  /// leader holds the run next reads the request with the active runs.
  /// Conflict if the run is not RUNNING or moved on.
  virtual Result<WriteResult> request_cancel(const RunFence& f, const std::string& reason) = 0;
  /// RUNNING, continuation NONE -> CONFIRMING with a deadline (worker
  /// detached): now() + the run's stored continuation timeout, or
  /// `deadline_in` when the run has none.
  virtual Result<WriteResult> begin_confirming(const RunFence& f, Millis deadline_in) = 0;
  /// RUNNING: re-stamp the run with this leader's epoch and continuation NONE
  /// (the worker re-attached holding this attempt and token).
  virtual Result<WriteResult> adopt(const RunFence& f, const AttemptFence& a) = 0;

  // Batched forms of assign/reassign, start and finish/retry_later: ONE
  // statement each, the lease row locked once for the statement and every
  // row carrying its own version, state and attempt predicates. A batch is
  // all-or-nothing only with respect to the fence; rows that lost a race
  // are simply absent from `applied`.
  virtual Result<BatchWriteResult> assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) = 0;
  virtual Result<BatchWriteResult> start_batch(Epoch epoch, const std::vector<StartRow>& rows, Millis stale_after) = 0;
  virtual Result<BatchWriteResult> finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) = 0;
};

}  // namespace baton::store
