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

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/base/run_state.h"
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
  /// Overlap control (schemas/0010): how many runs of its job may be active
  /// at once (nullopt: no limit) and whether it needs the exclusive lock.
  std::optional<int> instance_limit{};
  bool exclusive = false;
  /// The job's default parameters overlaid by the run's (payload
  /// "parameters", then its other top-level keys: an event, an upstream run),
  /// each value as text.
  std::map<std::string, std::string> parameters{};
  /// How long until it may start (its slot, or the slot plus its jitter),
  /// by the database clock as the read's rows were made (rounded up: never
  /// short as counted from the read's return; runs due at the same time
  /// get the same figure); 0 when it may start now. Only runs read `ahead`
  /// of their time (due_runs) have more than 0.
  std::int64_t starts_in_ms = 0;
  /// When it may start, database clock, microseconds since the epoch.
  std::int64_t starts_at_us = 0;
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
  std::string job_name;              ///< for per-job metrics ("" for a run without a job)
  std::optional<int> instance_no{};  ///< the instance number it holds (limited jobs)
  bool exclusive_lock = false;       ///< it holds the exclusive lock (exclusive jobs)
  /// ASSIGNED ahead of its time: how long until it may start, by the
  /// database clock when the row was made, rounded up (0: now).
  std::int64_t starts_in_ms = 0;
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
  int catch_up_limit = 100;                            ///< run_all: missed slots run after a gap
  std::optional<std::int64_t> starting_deadline_ms{};  ///< a slot this late is given up
  std::optional<int> max_instances{};                  ///< active runs at once (nullopt: no limit)
  std::string concurrency_policy = "allow";            ///< allow | forbid | replace
  bool exclusive_execution = false;                    ///< no other exclusive run while it runs
  std::int64_t jitter_ms = 0;                          ///< cron runs start up to this much after their slot
  std::vector<std::string> on_events;                  ///< event kinds that each make a run
  std::vector<std::string> run_after;                  ///< jobs whose every success makes a run
  std::string parameters_json = "{}";                  ///< default parameters of its runs (an object)
  /// The parameters a trigger may set, each name to its rules (an object:
  /// type, pattern, enum, required, operate; schemas/0027).
  std::string parameter_rules_json = "{}";
  bool self_destruct = false;  ///< retired by its first successful run
};

struct ScheduledJob {
  std::int64_t id = 0;
  std::string name;
  std::string schedule;
  std::string time_zone;
  std::string misfire_policy;
  std::optional<std::int64_t> last_slot_unix;  ///< the cron cursor: newest slot created or given up (seconds)
  int catch_up_limit = 100;
  std::optional<std::int64_t> starting_deadline_ms{};
  std::optional<std::int64_t> resumed_at_unix{};  ///< last resumed by an operator (or made live again)
  std::int64_t jitter_ms = 0;                     ///< a slot's run starts up to this much after it
  std::int64_t now_unix = 0;                      ///< the database clock, seconds
  std::int64_t now_unix_ms = 0;
};

/// What one store::LeaderStore::process_events call did.
struct EventsProcessed {
  Epoch current_epoch{0};
  std::int64_t events = 0;  ///< events marked processed
  std::int64_t runs = 0;    ///< runs created from them
};

/// What one store::LeaderStore::prune call removed.
struct Pruned {
  Epoch current_epoch{0};
  std::int64_t runs = 0;  ///< finished runs (with their attempts, transitions, logs)
  std::int64_t ledger = 0, events = 0, dead_letters = 0;
};

/// Cron slots a plan gives up, recorded as one decision-ledger entry.
struct SkippedCronSlots {
  std::int64_t first_unix = 0;
  std::int64_t last_unix = 0;
  std::optional<std::int64_t> count{};  ///< nullopt: at least `count_at_least`, too many to count
  std::int64_t count_at_least = 0;
  std::string reason;  ///< misfire_policy | catch_up_limit | starting_deadline
};

/// What an operator set that the leader applies without a restart, read
/// every `controls_every` (RuntimeConfig): the `dispatch_enabled` setting and
/// the workers an operator holds (POST /api/v1/workers/{id}/drain|evict).
/// Text of one stream of one attempt at a byte offset of it (the protocol's
/// `output` frame, or a finish's tail placed by the stream's length).
struct OutputChunk {
  RunId run{0};
  int attempt = 0;
  std::string stream;  ///< stdout or stderr
  std::int64_t offset = 0;
  std::string data;  ///< valid UTF-8
};

struct Controls {
  bool dispatch_enabled = true;
  std::map<std::string, std::string> worker_holds;  ///< worker id -> draining | evicted
};

class LeaderStore {
 public:
  virtual ~LeaderStore() = default;

  /// Due runs (PENDING past their slot, RETRY_WAITING past their time,
  /// ORPHANED) that a worker carrying `labels` can take, in dispatch order
  /// (priority, due time, id), at most `limit`.
  /// PENDING runs may be read up to `ahead` before their time (a cron slot):
  /// the leader assigns them early and writes their start at the time.
  virtual Result<std::vector<DueRun>> due_runs(int limit, const std::map<std::string, std::string>& labels,
                                               Millis ahead) = 0;
  virtual Result<std::vector<ActiveRun>> active_runs(Millis continuation_margin) = 0;
  /// One statement, fenced per row: RUNNING rows still held by the given
  /// attempts get heartbeat_at = now(), stale_after = now() + stale_after.
  virtual Result<HeartbeatBatchResult> heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                                       Millis stale_after) = 0;
  /// A cron slot of `job`, in one fenced statement: its run (Conflict if the
  /// slot exists), the job's cron cursor moved up to the slot, and a
  /// `created` decision-ledger entry (`caught_up`: created late, after a gap).
  /// Under concurrency_policy forbid, while a run of the job is unfinished,
  /// no run: a `skipped` entry (`forbidden` set); under replace, the run is
  /// created and the unfinished ones are listed in `replaced` (to cancel).
  virtual Result<CreateResult> create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix,
                                               bool caught_up, std::int64_t jitter_ms) = 0;
  /// Slots of `job` given up, in one fenced statement: a `skipped` ledger
  /// entry per range (with `details_json` merged in: policy, gap cause) and
  /// the cron cursor moved past the last. Answers like a create: applied, or
  /// fenced with the current epoch (`run` unused).
  virtual Result<CreateResult> skip_cron_slots(Epoch epoch, const std::string& job,
                                               const std::vector<SkippedCronSlots>& ranges,
                                               const std::string& details_json) = 0;
  /// Up to `limit` unprocessed events, oldest first, in one fenced
  /// statement: one run per subscribed job (on_events; run_after for
  /// `job.succeeded:<job>`) that is live and not paused, unique per (job,
  /// event), each with a `created` ledger entry; the events marked processed.
  virtual Result<EventsProcessed> process_events(Epoch epoch, int limit) = 0;
  /// Retention: at most `batch` of each kind older than the `retention_days`
  /// setting, fenced: finished runs (with attempts, transitions and log
  /// chunks), decision-ledger entries, processed events and triaged (closed
  /// or replayed) dead letters. Untriaged dead letters are kept.
  virtual Result<Pruned> prune(Epoch epoch, int batch) = 0;
  /// A decision about one run (held back by overlap control, no worker
  /// matches its selector), fenced: the decision-ledger entry is written only
  /// under `epoch`.
  virtual Result<CreateResult> record_decision(Epoch epoch, RunId run, const std::string& decision,
                                               const std::string& reason, const std::string& details_json) = 0;
  virtual Result<void> worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                                       const std::string& node_id, Epoch epoch) = 0;
  virtual Result<void> worker_detached(const std::string& worker_id) = 0;
  /// These attached workers were heard from: their last heartbeat is now.
  virtual Result<void> workers_seen(const std::vector<std::string>& worker_ids) = 0;
  virtual Result<void> append_run_log(RunId run, int attempt, const std::string& stream, const std::string& chunk) = 0;
  /// Streamed output, placed by offset (store/output_placement.h): only
  /// text past what the log already holds of its stream is kept (a resent
  /// chunk adds nothing), a gap is logged as lost, and text past
  /// `db_bytes_per_stream` is left to the log archive (one note says so).
  virtual Result<void> append_run_output(const std::vector<OutputChunk>& chunks, std::int64_t db_bytes_per_stream) = 0;
  virtual Result<std::vector<ScheduledJob>> scheduled_jobs() = 0;
  /// Unfinished runs whose job's selector none of `label_sets` (the labels of
  /// the workers taking runs) satisfies: they would wait silently. At most
  /// `limit`, oldest first; id and job_name filled.
  virtual Result<std::vector<DueRun>> unmatched_runs(const std::vector<std::map<std::string, std::string>>& label_sets,
                                                     int limit) = 0;
  /// Runs due for assignment now -- PENDING whose slot has come (and past
  /// any jitter), due RETRY_WAITING, ORPHANED -- whatever their selector and
  /// limits: what dispatch would consider. At most `limit`, oldest first; id
  /// and job_name filled.
  virtual Result<std::vector<DueRun>> waiting_runs(int limit) = 0;
  /// What operators set that the leader applies without a restart.
  virtual Result<Controls> read_controls() = 0;
};

}  // namespace baton::store
