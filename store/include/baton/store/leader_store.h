#pragma once
// Port for everything the leader's control loop and the admin API read, and
// for the registries (workers, job definitions, run logs) they write. Writes
// of run *state* are not here: they are RunStore's fenced transitions, plus
// the two fenced inserts and the batched heartbeat below, which carry the
// same epoch fence.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/core/clock.h"
#include "baton/core/ids.h"
#include "baton/core/result.h"
#include "baton/core/run_state.h"
#include "baton/store/run_store.h"

namespace baton::store {

/// A run the dispatcher may assign: PENDING whose slot has come (cron runs are
/// created ahead of their slot), due RETRY_WAITING, or ORPHANED.
struct DueRun {
  RunId id{0};
  Version version{0};
  RunState state = RunState::pending;
  int attempt = 1;
  int max_attempts = 1;
  int priority = 0;
  std::string job_name;
  std::string tasks_json = "[]";  ///< the job's task chain, as stored
  std::int64_t timeout_ms = 0;
  std::int64_t retry_base_ms = 1000;
  std::int64_t retry_cap_ms = 3600000;
  std::map<std::string, std::string> selector;  ///< labels a worker must carry
  int unstarted_assignments = 0;                ///< times it was orphaned before starting
};

/// An ASSIGNED or RUNNING run, with the facts the reaper decides on. Ages and
/// deadlines are computed by the database clock.
struct ActiveRun {
  RunId id{0};
  Version version{0};
  RunState state = RunState::assigned;
  int attempt = 1;
  int max_attempts = 1;
  std::string worker_id;
  std::string lease_token;
  Epoch leader_epoch{0};
  ContinuationState continuation = ContinuationState::none;
  bool continuation_expired = false;  ///< continuation_deadline_at + margin < now()
  std::int64_t assigned_age_ms = 0;   ///< now() - assigned_at
  std::int64_t running_age_ms = 0;    ///< now() - started_at (RUNNING)
  std::int64_t timeout_ms = 0;        ///< the job's timeout (0: none)
  std::int64_t retry_base_ms = 1000;
  std::int64_t retry_cap_ms = 3600000;
  std::int64_t continuation_timeout_ms = 0;  ///< sent to the worker with the attempt (0: not recorded)
  std::string worker_instance;               ///< the worker process that started it ("" unknown)
  /// CONFIRMING: continuation_deadline_at - now() when read (the leader
  /// turns it into a deadline on its own monotonic clock at once).
  std::optional<std::int64_t> continuation_remaining_ms;
  /// An operator asked for this attempt to be cancelled (run_store.h,
  /// request_cancel): the reason, or nothing.
  std::optional<std::string> cancel_reason;
};

struct HeartbeatRow {
  RunId id{0};
  Version version{0};
  AttemptFence attempt;
};

struct HeartbeatBatchResult {
  Epoch current_epoch{0};
  std::map<std::int64_t, Version> applied;  ///< run id -> new version; missing ids were not written
};

struct JobDefinition {
  std::string name;
  std::optional<std::string> schedule;
  std::string time_zone = "UTC";
  std::string tasks_json = "[]";
  int max_attempts = 1;
  int priority = 0;
  std::int64_t timeout_ms = 0;
  std::int64_t retry_base_ms = 1000;
  std::int64_t retry_cap_ms = 3600000;
  std::string selector_json = "{}";
  bool live = true;
  std::string misfire_policy = "run_latest";
};

struct ScheduledJob {
  std::int64_t id = 0;
  std::string name;
  std::string schedule;
  std::string time_zone;
  std::string misfire_policy;
  std::optional<std::int64_t> last_slot_unix;  ///< newest materialised slot (seconds)
  std::int64_t now_unix = 0;                   ///< the database clock, seconds
  std::int64_t now_unix_ms = 0;
};

struct RunCounts {
  std::map<std::string, std::int64_t> by_state;
};

/// One page of an admin list: its items as a JSON array (built by the
/// database), and the opaque cursor of the next page (none on the last).
struct Page {
  std::string items_json = "[]";
  std::optional<std::string> next_cursor;
};

/// A job definition as the admin API lists it: the item as a JSON object
/// (built by the database), and what the API needs to add its next fire time.
struct JobListing {
  std::string name;
  std::optional<std::string> schedule;
  std::string time_zone = "UTC";
  bool paused = false;
  std::string item_json = "{}";
};
struct JobPage {
  std::vector<JobListing> jobs;
  std::optional<std::string> next_cursor;
  std::int64_t now_unix = 0;  ///< the database clock
};

/// Filters of GET /api/v1/runs (each optional); newest first.
struct RunQuery {
  std::optional<std::string> job, state, worker, idempotency_key;
  std::optional<std::int64_t> created_after_unix, created_before_unix;
  int limit = 50;
  std::optional<std::int64_t> before_id;  ///< the cursor: runs with a smaller id
};

class LeaderStore {
 public:
  virtual ~LeaderStore() = default;

  /// Due runs (PENDING past their slot, RETRY_WAITING past their time,
  /// ORPHANED) that a worker carrying `labels` can take, in dispatch order
  /// (priority, due time, id), at most `limit`.
  virtual Result<std::vector<DueRun>> due_runs(int limit, const std::map<std::string, std::string>& labels) = 0;
  virtual Result<std::vector<ActiveRun>> active_runs(Millis continuation_margin) = 0;
  /// One statement, fenced per row: RUNNING rows still held by the given
  /// attempts get heartbeat_at = now(), stale_after = now() + stale_after.
  virtual Result<HeartbeatBatchResult> heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                                       Millis stale_after) = 0;
  /// Fenced insert of a run of job `job_name` (its settings copied). Conflict
  /// when the idempotency key is active or the slot already exists.
  virtual Result<CreateResult> create_job_run(Epoch epoch, const std::string& job_name,
                                              const std::optional<std::string>& idempotency_key,
                                              const std::string& trigger_kind,
                                              std::optional<std::int64_t> slot_unix) = 0;
  virtual Result<void> worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                                       const std::string& node_id, Epoch epoch) = 0;
  virtual Result<void> worker_detached(const std::string& worker_id) = 0;
  virtual Result<void> append_run_log(RunId run, int attempt, const std::string& stream, const std::string& chunk) = 0;
  virtual Result<void> upsert_job(const JobDefinition& job) = 0;
  virtual Result<bool> job_exists(const std::string& name) = 0;
  virtual Result<std::vector<ScheduledJob>> scheduled_jobs() = 0;
  virtual Result<RunCounts> run_counts() = 0;
  /// The run as a JSON object (for GET /api/v1/runs/{id}), nullopt if absent.
  virtual Result<std::optional<std::string>> run_json(RunId id) = 0;
  // Admin lists (GET /api/v1/...), `limit` items at most after `cursor`.
  virtual Result<Page> list_runs(const RunQuery& q) = 0;
  /// Epochs newest first: who led, from when, and how each epoch ended.
  virtual Result<Page> list_epochs(int limit, std::optional<std::int64_t> before_epoch) = 0;
  /// Workers by id, with what they hold now.
  virtual Result<Page> list_workers(int limit, std::optional<std::string> after_id) = 0;
  /// Job definitions by name (not deleted); `only` selects one.
  virtual Result<JobPage> list_jobs(int limit, std::optional<std::string> after_name,
                                    std::optional<std::string> only) = 0;
  /// Pauses (no cron runs are created) or resumes a job, and records it in
  /// audit_log in the same transaction. The job's new version, or nullopt
  /// when no such job exists.
  virtual Result<std::optional<std::int64_t>> set_job_paused(const std::string& name, bool paused,
                                                             const std::string& actor, Epoch epoch) = 0;
  /// Dead letters newest first, optionally only those in one triage status.
  virtual Result<Page> list_dead_letters(int limit, std::optional<std::int64_t> before_id,
                                         std::optional<std::string> triage_status) = 0;
  /// The audit log, newest first, optionally for one subject ("job:NAME").
  virtual Result<Page> list_audit(int limit, std::optional<std::int64_t> before_id,
                                  std::optional<std::string> subject) = 0;
  /// Records an admin mutation in audit_log.
  virtual Result<void> audit(const std::string& actor, const std::string& action, const std::string& subject,
                             Epoch epoch, const std::string& details_json) = 0;
};

}  // namespace baton::store
