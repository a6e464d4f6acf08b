#pragma once
// The values of run-state writes: the fence every write carries, its
// answers, the rows of the batched transitions. Plain types, no port:
// what the leader's pure core sees of the store (run_store.h is the port).
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
  /// Its job is exclusive (exclusive_execution, schemas/0046): the batch
  /// that carries it takes the run table's lock first, and the database
  /// refuses an exclusive run assigned without it.
  bool exclusive_execution = false;
  /// Keyed concurrency and rate limits (schemas/0035): the run's key, the
  /// key's slot it holds while active, and the rate permit it takes; the
  /// database refuses the assignment of a keyed or rate-limited job's run
  /// without them, with a key that is not the run's, or with a permit taken
  /// less than an interval ago.
  std::optional<std::string> concurrency_key{};
  std::optional<int> key_slot{};
  std::optional<int> rate_slot{};
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

}  // namespace baton::store
