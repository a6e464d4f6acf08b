#pragma once
// Port for the admin API (admin/src/admin_api.cpp): the operator's reads
// and mutations. Every mutation here records itself in audit_log (actor,
// action, subject, before/after) in the same transaction as the change, so
// a change is never without its record nor a record without its change.
// Writes that create runs carry the epoch fence like every run write.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/store/leader_store.h"
#include "baton/store/webhooks.h"

namespace baton::store {

struct RunCounts {
  std::map<std::string, std::int64_t> by_state;
  /// Unfinished runs waiting for a worker whose selector no attached, active
  /// worker's labels satisfy (they would wait silently otherwise).
  std::int64_t unmatched = 0;
};

/// What GET /metrics reads from the database at each scrape (the same on
/// every node: the cluster's state, not this process's).
struct ClusterGauges {
  std::map<std::string, std::int64_t> runs_by_state;
  std::map<std::string, std::int64_t> dead_letters_by_status;
  struct Worker {
    std::string id, state, admin_state;
    std::optional<double> heartbeat_age_s;  ///< attached workers only
  };
  std::vector<Worker> workers;
  std::int64_t unmatched_runs = 0;  ///< see RunCounts::unmatched
  /// How long the oldest run that could start has waited since it became
  /// due (as baton_job_backlog counts it); 0 when none waits.
  double oldest_pending_age_s = 0;
  /// Per scheduled job: the cron slots given up, as the decision ledger
  /// records them (within retention); 0 for a job that missed none.
  std::map<std::string, std::int64_t> cron_slots_skipped_by_job;
  /// Per live, unpaused cron job: what the decision ledger says of its
  /// slots in the last hour (the window as the job's cadence counts it,
  /// docs/scheduling.md "Cadence"); the caller counts the slots due.
  struct CronHour {
    std::string schedule, time_zone;
    std::int64_t since_unix = 0, until_unix = 0;
    std::int64_t fired = 0, skipped = 0;
  };
  std::map<std::string, CronHour> cron_last_hour;
  /// The history checker in production (schemas/0040): violations recorded
  /// per invariant (every invariant it checks, 0 for none), runs checked,
  /// and how long ago the last sweep was recorded (none: never).
  std::map<std::string, std::int64_t> invariant_violations;
  std::int64_t verify_runs_checked = 0;
  std::optional<double> verify_swept_age_s;
  /// How long ago the oldest finished run the sweep has not checked yet
  /// finished (0: none waits).
  double verify_lag_s = 0;
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
  /// Runs whose error code or message contains this text (any case).
  std::optional<std::string> error_text;
  std::optional<std::int64_t> created_after_unix, created_before_unix;
  int limit = 50;
  std::optional<std::int64_t> before_id;  ///< the cursor: runs with a smaller id
};

/// A window of GET /api/v1/stats/series: `window_seconds` back from now in
/// buckets of `bucket_seconds` (aligned to the bucket's size), for every job
/// or one.
struct SeriesQuery {
  std::string window_name;  ///< "1h", "24h", "7d": echoed in the answer
  int window_seconds = 3600;
  int bucket_seconds = 60;
  std::optional<std::string> job;
};

/// Who asked, for audit_log and for the fence of run-creating writes.
struct Actor {
  std::string name;  ///< the token's name ("config" for the node's admin_token)
  Epoch epoch{0};    ///< the epoch this node last saw
  /// An admin token: may set a parameter declared `operate: false`.
  bool admin = false;
};

/// A triggered run: the insert's outcome and, when the run may be assigned
/// at once, the run as the dispatcher would read it (the leader assigns it
/// without reading it back).
struct Triggered : CreateResult {
  std::optional<DueRun> due;
  /// conflict: the run the idempotency key already names (unfinished, or
  /// finished within the remembered window), when the statement saw it.
  std::optional<RunId> earlier;
  /// Set when nothing was inserted because the job's parameter
  /// declarations refuse the parameters given: why, naming the parameter.
  std::optional<std::string> parameters_refused;
  /// Set when nothing was inserted because the idempotency key names a run
  /// of this job that another caller submitted, or that was submitted with
  /// other parameters (schemas/0048): why.
  std::optional<std::string> key_refused;
};
/// How every refusal of an idempotency key begins (Triggered::key_refused,
/// a batch item's or a submission's refusal).
inline constexpr std::string_view key_refusal_prefix = "idempotency key ";

/// What a trigger may say beyond its parameters (each within what the job
/// allows: baton_trigger_options_refused, schemas/0036).
struct TriggerOptions {
  /// Unix seconds: a one-off that may not start before then (the run's
  /// start_after; in the database, so it outlives a leader).
  std::optional<std::int64_t> run_at{};
  /// The run's own priority: from -1000 up to the job's (nullopt: the job's).
  std::optional<int> priority{};
  /// The run's own timeout: positive, at most the job's (nullopt: the job's).
  std::optional<std::int64_t> timeout_ms{};
};

/// One run of a batch trigger.
struct TriggerItem {
  std::string job;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> payload_json;  ///< {"parameters": {...}} or nullopt
  TriggerOptions options;
};

/// What a batch trigger did: nothing at all (fenced, or some item refused:
/// each refused item says why), or every item's run.
struct BatchTriggered {
  Epoch current_epoch{0};
  struct Item {
    std::optional<RunId> created;   ///< the new run
    std::optional<RunId> existing;  ///< the run its idempotency key already names
    std::optional<std::string> refused;
  };
  std::vector<Item> items;  ///< in the order given
  bool applied = false;     ///< the runs were inserted (not fenced, nothing refused)
};

/// An API token as the database knows it (never the token itself).
struct TokenGrant {
  std::int64_t id = 0;
  std::string name;
  std::string role;  ///< read | operate | admin
};

/// A worker's own credential as the database knows it: whose it is and
/// what an operator granted it (docs/security.md, "Worker identity").
struct WorkerCredential {
  std::int64_t id = 0;
  std::string worker_id;
  std::map<std::string, std::string> labels;  ///< a hello may claim these, no others
  int capacity = 0;                           ///< a hello may claim at most this
};

/// What an operator grants a worker id when making its bootstrap token.
struct WorkerGrant {
  std::string worker_id;
  std::map<std::string, std::string> labels;
  int capacity = 0;
  std::int64_t ttl_seconds = 3600;  ///< the bootstrap token expires this long after it is made
};

/// Why POST /api/v1/enroll was refused, or the credential it made.
enum class EnrollOutcome { enrolled, unknown_token, expired, used, revoked, other_worker };
struct EnrollResult {
  EnrollOutcome outcome = EnrollOutcome::enrolled;
  std::string json = "{}";  ///< enrolled: the credential's grant; else {}
  std::string message;      ///< refused: what was wrong, in words
};

/// The outcome of a mutation guarded by an expected version or a state:
/// `applied` with the new state as JSON, or why not.
enum class AdminOutcome { applied, not_found, conflict, fenced };
struct AdminResult {
  AdminOutcome outcome = AdminOutcome::applied;
  std::string json = "{}";  ///< applied: the changed object; conflict: the current one
  std::string message;      ///< conflict / not_found: what was found instead
};

/// A job definition written through the API: the fields of JobDefinition
/// plus, for an update or delete, the version the client last read.
struct JobWrite {
  JobDefinition job;
  std::optional<std::int64_t> expected_version;  ///< update/delete: optimistic concurrency
};

/// A live job definition as stored, for a change to be compared against.
struct StoredJob {
  JobDefinition job;
  std::int64_t version = 0;
  bool paused = false;
};

class AdminStore {
 public:
  virtual ~AdminStore() = default;

  // --- reads ----------------------------------------------------------------
  virtual Result<RunCounts> run_counts() = 0;
  /// The lease's epoch: one cheap read, to tell that the database answers
  /// (GET /readyz).
  virtual Result<std::int64_t> database_epoch() = 0;
  virtual Result<ClusterGauges> cluster_gauges() = 0;
  /// The run with its attempts, transitions (with epochs), log chunks and
  /// dead letter, as JSON; nullopt if absent.
  virtual Result<std::optional<std::string>> run_json(RunId id) = 0;
  /// What is known about one cron slot of a job, as JSON: `paused`, `live`,
  /// `cron_cursor_unix`, the slot's `run` (or null) and the decision-ledger
  /// entries for the slot or a range covering it. nullopt: no such job.
  virtual Result<std::optional<std::string>> slot_decisions(const std::string& job, std::int64_t slot_unix) = 0;
  /// A job's execution statistics and backlog, as JSON (schemas/0029's
  /// views): `windows` {"1h", "24h"}: runs finished in the window by
  /// outcome and the duration's p50 / p95 (ms, null without a started run);
  /// `backlog`: its unfinished runs by state and the oldest waiting age.
  /// nullopt: no such job.
  virtual Result<std::optional<std::string>> job_stats(const std::string& job) = 0;
  /// The cluster's (or one job's) runs over a window, bucketed, as JSON
  /// (schemas/0039): per bucket the runs finished by outcome, duration and
  /// trigger-to-start latency p50 / p95, the backlog and its oldest age
  /// (cluster-wide only); and the epochs elected in the window, for the
  /// dashboard's leader-change markers. nullopt: no such job.
  virtual Result<std::optional<std::string>> run_series(const SeriesQuery& q) = 0;
  /// One step of the statistics roll-up (any node, once a minute; another
  /// node holding it makes this a no-op): returns the minutes still to roll.
  virtual Result<int> roll_up_run_stats(int max_minutes) = 0;
  /// The history checker's state (GET /api/v1/verify, schemas/0040): the
  /// cursor, the last sweep, violations per invariant, and the violations
  /// themselves (newest first, at most `limit`; only those not
  /// acknowledged when `open_only`), as JSON.
  virtual Result<std::string> verify_status_json(int limit, bool open_only) = 0;
  /// Acknowledges every violation up to `through_id` (audited); how many.
  virtual Result<std::int64_t> acknowledge_violations(const Actor& who, std::int64_t through_id) = 0;
  virtual Result<Page> list_runs(const RunQuery& q) = 0;
  /// The run's state ("RUNNING", ...), nullopt if there is no such run.
  virtual Result<std::optional<std::string>> run_state(RunId id) = 0;
  /// Epochs newest first: who led, from when, and how each epoch ended.
  virtual Result<Page> list_epochs(int limit, std::optional<std::int64_t> before_epoch) = 0;
  /// Coordinator nodes by id, with their last heartbeat and role.
  virtual Result<Page> list_nodes(int limit, std::optional<std::string> after_id) = 0;
  /// Workers by id, with what they hold now; `only` selects one.
  virtual Result<Page> list_workers(int limit, std::optional<std::string> after_id,
                                    std::optional<std::string> only = std::nullopt) = 0;
  /// Job definitions by name (not deleted); `only` selects one.
  virtual Result<JobPage> list_jobs(int limit, std::optional<std::string> after_name,
                                    std::optional<std::string> only) = 0;
  /// The live definition named `name`, as a JobDefinition.
  virtual Result<std::optional<StoredJob>> job_definition(const std::string& name) = 0;
  /// Dead letters newest first, optionally in one triage status or one id.
  virtual Result<Page> list_dead_letters(int limit, std::optional<std::int64_t> before_id,
                                         std::optional<std::string> triage_status,
                                         std::optional<std::int64_t> only = std::nullopt) = 0;
  /// The audit log, newest first, optionally for one subject ("job:NAME").
  virtual Result<Page> list_audit(int limit, std::optional<std::int64_t> before_id,
                                  std::optional<std::string> subject) = 0;
  /// Every setting as a JSON object {key: {value, updated_at, updated_by}}.
  virtual Result<std::string> settings_json() = 0;
  /// Events newest first, optionally of one kind: id, kind, payload,
  /// dedupe_key, created, processed, and the runs made from each.
  virtual Result<Page> list_events(int limit, std::optional<std::int64_t> before_id,
                                   std::optional<std::string> kind) = 0;
  /// API tokens newest first (name, role, created, last used, revoked).
  virtual Result<Page> list_tokens(int limit, std::optional<std::int64_t> before_id) = 0;

  /// Worker credentials newest first (worker, grant, created, last used,
  /// revoked; never the credential), and bootstrap tokens not yet used.
  virtual Result<Page> list_worker_credentials(int limit, std::optional<std::int64_t> before_id) = 0;

  // --- authentication -------------------------------------------------------
  /// The live token with this SHA-256 (hex); records its use.
  virtual Result<std::optional<TokenGrant>> token_by_hash(const std::string& sha256_hex) = 0;
  /// The live worker credential with this SHA-256 (hex); records its use.
  virtual Result<std::optional<WorkerCredential>> worker_credential_by_hash(const std::string& sha256_hex) = 0;
  /// Credentials revoked within the last `within_seconds` (each node closes
  /// the sessions that attached with one).
  virtual Result<std::vector<std::int64_t>> recently_revoked_worker_credentials(int within_seconds) = 0;
  /// Trades a bootstrap token (by hash) for a worker credential (by hash):
  /// the token must be live, unexpired, unused and made for `worker_id`. The
  /// worker's previous credential is revoked in the same transaction.
  virtual Result<EnrollResult> enroll_worker(const std::string& bootstrap_sha256, const std::string& worker_id,
                                             const std::string& credential_sha256) = 0;

  // --- mutations, each audited in its own transaction -----------------------
  /// Fenced insert of a run of `job` (trigger_kind "api"). Conflict when the
  /// idempotency key is active; bad_input when there is no such job;
  /// nothing inserted and `parameters_refused` set when the job's parameter
  /// declarations refuse the payload's "parameters" (who.admin decides
  /// the ones declared `operate: false`).
  /// `options`: run_at, priority, timeout; one outside what the job
  /// allows is refused like parameters (`parameters_refused`).
  virtual Result<Triggered> trigger(const Actor& who, const std::string& job,
                                    const std::optional<std::string>& idempotency_key,
                                    const std::optional<std::string>& payload_json,
                                    const TriggerOptions& options = {}) = 0;
  /// Many runs in one statement, each judged as `trigger` judges one: all
  /// are inserted, or (an unknown job, parameters or options refused) none.
  /// An item whose idempotency key names a run gives that run.
  virtual Result<BatchTriggered> trigger_batch(const Actor& who, const std::vector<TriggerItem>& items) = 0;
  /// Records an event (any node; the leader turns it into runs). With a
  /// dedupe_key already used, nothing is written: {"event_id", "created":
  /// false}. Audited with the kind and key, never the payload.
  virtual Result<AdminResult> post_event(const Actor& who, const std::string& kind, const std::string& payload_json,
                                         const std::optional<std::string>& dedupe_key) = 0;
  /// A new run of the same job and payload as run `of` (any final state).
  virtual Result<AdminResult> rerun(const Actor& who, RunId of) = 0;
  /// Replays dead letters: a new run for each, the letter marked `replayed`.
  /// One result per id, in order.
  virtual Result<std::vector<AdminResult>> replay(const Actor& who, const std::vector<std::int64_t>& ids) = 0;
  virtual Result<AdminResult> triage(const Actor& who, std::int64_t dead_letter, const std::string& status,
                                     const std::optional<std::string>& notes) = 0;
  virtual Result<AdminResult> set_job_paused(const Actor& who, const std::string& name, bool paused) = 0;
  /// Creates a job (conflict when the name is taken by a live job).
  virtual Result<AdminResult> create_job(const Actor& who, const JobDefinition& job) = 0;
  /// Replaces a job's definition when its version is still `expected_version`.
  virtual Result<AdminResult> update_job(const Actor& who, const JobWrite& w) = 0;
  /// Soft delete: the definition is hidden and creates no runs; its runs stay.
  virtual Result<AdminResult> delete_job(const Actor& who, const std::string& name,
                                         std::optional<std::int64_t> expected_version) = 0;
  /// active | draining | evicted.
  virtual Result<AdminResult> set_worker_admin_state(const Actor& who, const std::string& worker,
                                                     const std::string& state) = 0;
  /// `value_json` is already validated by the caller; "null" unsets the key.
  virtual Result<AdminResult> set_setting(const Actor& who, const std::string& key, const std::string& value_json) = 0;
  /// `ttl_seconds`: the token is refused once that long has passed since
  /// its creation; nullopt: it does not expire.
  virtual Result<AdminResult> create_token(const Actor& who, const std::string& name, const std::string& role,
                                           const std::string& sha256_hex,
                                           std::optional<std::int64_t> ttl_seconds = std::nullopt) = 0;
  virtual Result<AdminResult> revoke_token(const Actor& who, std::int64_t id) = 0;
  /// A bootstrap token (by hash) for `grant.worker_id`; JSON: id, worker_id,
  /// labels, capacity, expires_at.
  virtual Result<AdminResult> create_worker_enrollment(const Actor& who, const WorkerGrant& grant,
                                                       const std::string& sha256_hex) = 0;
  /// A bootstrap token carrying the grant of the worker's live credential
  /// (not_found when it has none); the old credential works until the new
  /// token is used.
  virtual Result<AdminResult> rotate_worker_credential(const Actor& who, const std::string& worker_id,
                                                       std::int64_t ttl_seconds, const std::string& sha256_hex) = 0;
  /// Revokes the worker's live credential and its unused bootstrap tokens.
  virtual Result<AdminResult> revoke_worker_credentials(const Actor& who, const std::string& worker_id) = 0;
  // Webhooks (schemas/0038, docs/webhooks.md). Lists never hold a secret.
  virtual Result<Page> list_webhooks(int limit, std::optional<std::string> after_name,
                                     std::optional<std::string> only) = 0;
  virtual Result<std::optional<StoredWebhook>> webhook_definition(const std::string& name) = 0;
  /// Creates or replaces the webhook of that name (an empty secret keeps the
  /// stored one); json: it as listed.
  virtual Result<AdminResult> put_webhook(const Actor& who, const WebhookDefinition& w) = 0;
  /// Deletes it with its deliveries.
  virtual Result<AdminResult> delete_webhook(const Actor& who, const std::string& name) = 0;
  /// A webhook's deliveries, newest first; nullopt when no such webhook.
  virtual Result<std::optional<Page>> list_webhook_deliveries(const std::string& webhook,
                                                              std::optional<std::string> state, int limit,
                                                              std::optional<std::int64_t> before_id) = 0;
  /// A delivery (of any state) pending again at once, its attempts from 0.
  virtual Result<AdminResult> redeliver(const Actor& who, std::int64_t delivery) = 0;
  /// Queues a `ping` event for the webhook (enabled or not).
  virtual Result<AdminResult> ping_webhook(const Actor& who, const std::string& name) = 0;
  /// Records an action whose change is made elsewhere (a cancel goes through
  /// the leader's control loop).
  virtual Result<void> audit(const Actor& who, const std::string& action, const std::string& subject,
                             const std::string& details_json) = 0;
};

}  // namespace baton::store
