#pragma once
// Port for every write to run state. One function per transition of SPEC
// section 3; each is ONE conditional statement carrying the run id, the
// expected version, the expected state and the writer's epoch (the fence),
// and each returns Applied / Conflict / Fenced. No other code writes
// job_runs (enforced by the tidy test).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/base/run_state.h"
#include "baton/store/write_outcome.h"

namespace baton::store {

/// The predicates every fenced write carries.
struct RunFence {
  RunId run;
  Version expected_version;
  Epoch epoch;  ///< the writer's leader epoch
};

/// Additional predicates of writes made on behalf of one attempt.
struct AttemptFence {
  std::string worker_id;
  int attempt = 1;
  std::string lease_token;
};

struct WriteResult {
  WriteOutcome outcome = WriteOutcome::conflict;
  Epoch current_epoch{0};   ///< the lease epoch the write was judged against
  Version new_version{0};   ///< when applied
  std::string lease_token;  ///< when applied and the row has one
  int attempt = 0;          ///< when applied
};

struct NewRun {
  std::optional<std::int64_t> job_definition_id;
  std::optional<std::string> idempotency_key;
  int max_attempts = 1;
  int priority = 0;
  std::string trigger_kind = "api";
  std::string payload_json = "{}";
};

struct CreateResult {
  WriteOutcome outcome = WriteOutcome::conflict;  ///< conflict: idempotency key already active
  Epoch current_epoch{0};
  RunId run{0};
  bool forbidden = false;         ///< create_cron_run: skipped under concurrency_policy forbid
  std::vector<RunId> replaced{};  ///< create_cron_run: unfinished runs to cancel (replace)
};

struct RunRow {
  RunId id{0};
  RunState state = RunState::pending;
  Version version{0};
  int attempt = 1;
  int max_attempts = 1;
  Epoch leader_epoch{0};
  std::optional<std::string> assigned_worker_id;
  std::optional<std::string> lease_token;
  ContinuationState continuation = ContinuationState::none;
  std::string job_name;  ///< "" for a run without a job
};

struct Finish {
  RunState final_state = RunState::succeeded;  ///< SUCCEEDED, FAILED or TIMED_OUT
  std::optional<int> exit_code;
  std::string error_code;
  std::string error_msg;
  std::string result_json = "{}";
};

/// What a start written with its assignment needs (AssignRow::start): what
/// a StartRow gives the start besides the attempt, which the assignment
/// makes.
struct StartGrant {
  /// The worker process starting it (hello's `instance`), kept with the run.
  std::string worker_instance;
  /// The run is stale this long after the start unless a heartbeat renews it.
  Millis stale_after{0};
};

/// One row of a batched assignment: PENDING / ORPHANED -> ASSIGNED, or
/// RETRY_WAITING -> ASSIGNED with attempt + 1 (as `assign` / `reassign`).
struct AssignRow {
  RunId run{0};
  Version expected_version{0};
  RunState from = RunState::pending;
  std::string worker_id;
  /// The continuation timeout sent to the worker with this attempt; stored
  /// in the run so every later leader measures the same deadline. 0: keep
  /// what the run has.
  Millis continuation_timeout{0};
  /// Overlap control (schemas/0010): the instance number and the exclusive
  /// lock this assignment takes; the database refuses the assignment of a
  /// limited or exclusive job's run without them, and a second holder.
  std::optional<int> instance_no{};
  bool exclusive_lock = false;
  /// Set: the assignment carries the start grant (SPEC sections 4 and 6 as
  /// amended 2026-11-26; docs/fencing.md): the same write makes the run
  /// RUNNING for this worker, both steps recorded, the version advancing by
  /// two. Only for a worker that has a free slot, and only a run whose time
  /// has come (the database refuses the row otherwise: a Conflict).
  std::optional<StartGrant> start{};
};

/// One row of a batched start grant (ASSIGNED -> RUNNING, as `start`).
struct StartRow {
  RunId run{0};
  Version expected_version{0};
  AttemptFence attempt;
  /// The worker process starting it (hello's `instance`), kept with the run
  /// so that any later leader knows which process speaks for the attempt.
  std::string worker_instance;
};

/// One row of a batched finish: RUNNING -> final state (as `finish`) when
/// `retry_delay` is empty, RUNNING -> RETRY_WAITING (as `retry_later`) otherwise.
struct FinishRow {
  RunId run{0};
  Version expected_version{0};
  AttemptFence attempt;
  Finish finish;
  std::optional<Millis> retry_delay;
};

/// The answer to a batched write. The epoch fence is judged once for the
/// statement: if `current_epoch` is not the writer's, nothing was written
/// (Fenced). Otherwise every row was judged on its own predicates: rows in
/// `applied` were written, every other row is a Conflict.
struct BatchWriteResult {
  Epoch current_epoch{0};
  std::map<std::int64_t, WriteResult> applied;  ///< run id -> outcome applied, new version, token, attempt

  bool fenced(Epoch writer) const { return current_epoch != writer; }
};

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
  /// Any non-final state -> CANCELED.
  virtual Result<WriteResult> cancel(const RunFence& f, RunState from, const std::string& reason) = 0;
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
