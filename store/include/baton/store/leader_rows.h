#pragma once
// The rows the leader reads and the values of its fenced inserts and
// batches: plain types, no port (leader_store.h is the port). What the
// leader's pure core sees of the store.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/base/run_state.h"
#include "baton/store/run_rows.h"

namespace baton::store {

/// Keyed concurrency and rate limits of a due run (schemas/0035), as the
/// dispatcher's read found them.
struct KeyedLimits {
  /// Its key as the database computes it (nullopt: its job has none), the
  /// limit per key (nullopt: none), and the key's slots held by active runs.
  std::optional<std::string> concurrency_key{};
  std::optional<int> key_limit{};
  std::vector<int> key_slots_held{};
  /// Runs made active per `rate_per_ms` (nullopt: no rate limit), counted
  /// under `rate_key` ("" for the job), and the permits taken less than an
  /// interval ago.
  std::optional<int> rate_limit{};
  std::int64_t rate_per_ms = 0;
  std::string rate_key{};
  std::vector<int> rate_slots_busy{};
};

/// A run the dispatcher may assign: PENDING whose slot has come (cron runs are
/// created ahead of their slot), due RETRY_WAITING, or ORPHANED.
/// What became of the attempt before the one an assignment starts
/// (schemas/0041, baton_attempt_fate; docs/scheduling.md): "" for a first
/// attempt, else succeeded_unacknowledged, fenced_out, lost_contact,
/// timed_out or failed, with that attempt's number and worker.
struct PreviousAttempt {
  std::string fate;
  int attempt = 0;
  std::string worker;
  friend bool operator==(const PreviousAttempt&, const PreviousAttempt&) = default;
};

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
  bool mutually_exclusive = false;
  /// Its job is exclusive (schemas/0033): it may become active only when no
  /// other run is, and no other run while it is.
  bool exclusive_execution = false;
  KeyedLimits keyed{};
  /// The worker it was last assigned to ("" if none): an ORPHANED run goes
  /// to another where one fits (SPEC section 3).
  std::string previous_worker{};
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
  /// What became of the attempt before the one it would start now.
  PreviousAttempt previous{};
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
  bool exclusive_lock = false;       ///< it holds the exclusive lock (mutually exclusive jobs)
  bool exclusive_gate = false;       ///< it holds the whole gate (an exclusive job's run, schemas/0033)
  /// ASSIGNED ahead of its time: how long until it may start, by the
  /// database clock when the row was made, rounded up (0: now).
  std::int64_t starts_in_ms = 0;
};

struct HeartbeatRow {
  RunId id{0};
  Version version{0};
  AttemptFence attempt;
  /// What the task last reported of its progress, when it changed since the
  /// last heartbeat written (written with progress_at); nullopt keeps it.
  std::optional<std::string> progress{};
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
  bool mutually_exclusive = false;                     ///< no other mutually exclusive run while it runs
  bool exclusive_execution = false;                    ///< no other run at all while it runs
  /// Keyed concurrency and rate limits (schemas/0035): a key template over
  /// the run's parameters ("{{param.customer}}"), at most
  /// `concurrency_limit` active runs per key, and at most `rate_limit_runs`
  /// runs made active per `rate_limit_per_ms`, per job or (by_key) per key.
  std::optional<std::string> concurrency_key{};
  std::optional<int> concurrency_limit{};
  std::optional<int> rate_limit_runs{};
  std::optional<std::int64_t> rate_limit_per_ms{};
  bool rate_limit_by_key = false;
  /// A job of which one run is made when a run of this one fails for good
  /// (schemas/0034); nullopt: none.
  std::optional<std::string> on_error{};
  std::int64_t jitter_ms = 0;          ///< cron runs start up to this much after their slot
  std::vector<std::string> on_events;  ///< event kinds that each make a run
  std::vector<std::string> run_after;  ///< jobs whose every success makes a run
  std::string parameters_json = "{}";  ///< default parameters of its runs (an object)
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

/// What one store::LeaderStore::process_submissions call did.
struct SubmissionsProcessed {
  Epoch current_epoch{0};
  std::int64_t submissions = 0;  ///< marked processed: created, existing or refused
  std::int64_t runs = 0;         ///< runs created from them
  std::int64_t refused = 0;      ///< refused: no run (why is on the submission)
};

/// What one store::LeaderStore::prune call removed.
struct Pruned {
  Epoch current_epoch{0};
  std::int64_t runs = 0;  ///< finished runs (with their attempts, transitions, logs)
  std::int64_t ledger = 0, events = 0, dead_letters = 0;
  std::int64_t submissions = 0;         ///< processed SQL submissions
  std::int64_t webhook_deliveries = 0;  ///< delivered or given up (schemas/0038)
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

/// A write a leader made that the database refused because a newer epoch
/// had begun (WriteOutcome::fenced): what the fenced leader meant to do,
/// recorded in the decision ledger after the fact (LeaderStore::
/// record_fenced_out).
struct FencedOut {
  std::string op;           ///< assign_batch, finish_batch, cron_create, record_decision, ...
  std::vector<RunId> runs;  ///< the runs it wrote (none for a write of no run)
  std::string subject;      ///< what else it names (a job), "" if nothing
  Epoch current_epoch{0};   ///< the epoch the database had begun
};

struct Controls {
  bool dispatch_enabled = true;
  std::map<std::string, std::string> worker_holds;  ///< worker id -> draining | evicted
  /// Every row of the settings table: key -> its value as text (an array:
  /// one entry per element). leader_core/live_settings.h reads them.
  std::map<std::string, std::vector<std::string>> settings;
};

}  // namespace baton::store
