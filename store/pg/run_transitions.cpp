// Every fenced statement that moves a run between states (and run_create).
// Parameters $1 = run id, $2 = expected version, $3 = the writer's epoch in
// every fenced statement; the rest follow. The API's triggers are in
// run_triggers.cpp; pg_run_store.cpp runs these.
#include <algorithm>

#include <pqxx/pqxx>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"
#include "baton/store/admin_store.h"
#include "baton/store_pg/pg_run_store.h"
#include "due_run_row.h"
#include "pg_array.h"
#include "run_transitions_sql.h"

namespace baton::store::pg {

namespace {

// The fence: lock the lease row FOR KEY SHARE (held to commit) and compare
// its epoch inside the same statement as the row predicates.
//
// The run's id finds the row; every other predicate is a check on the row
// found, wrapped in `(...) IS TRUE` (true exactly when the predicates are)
// so that no other index can be chosen to drive the statement. Right after
// a bulk load the statistics said no run was RUNNING or ASSIGNED, and the
// planner drove the batched finish from an index on state (there is none
// since schemas/0021) and rescanned the batch for every row it found
// (quadratic in the batch: 15 ms for 128 runs, 7 ms with the id driving;
// docs/performance.md).
//
// No write of an assignment, a start or a heartbeat changes a column that
// an index of job_runs contains (schemas/0021): those updates are HOT. In
// particular an assignment leaves next_attempt_at as the retry set it
// (due_at is computed from it).
//
// Every write records itself in the row's history (schemas/0022): one entry
// of seven numbers appended by the same statement. `Next` says what the
// write makes of the row, as SQL over the row's old values (what a SET
// clause reads); an empty field keeps the column as it is. The write guard
// refuses an entry that does not describe the row the write left, so a
// wrong expression here fails every test that makes the write.
struct Next {
  std::string state = {};
  std::string continuation = {};
  std::string attempt = {};
  std::string continuation_ms = {};
  bool heartbeat = false;  ///< consecutive heartbeats share one entry
};

// The writer's transaction and the time, in a history entry: once per
// statement (uncorrelated subqueries), not once per row.
const std::string history_stamp =
    "(SELECT txid_current()), (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)";

// `p`: the row's alias with its dot ("r.") or "" (the table unaliased);
// `epoch`: the writer's epoch parameter.
std::string history_set(const std::string& p, Next n, const std::string& epoch) {
  if (n.state.empty()) n.state = p + "state";
  if (n.continuation.empty()) n.continuation = p + "continuation_state";
  if (n.attempt.empty()) n.attempt = p + "attempt";
  if (n.continuation_ms.empty()) n.continuation_ms = p + "continuation_timeout_ms";
  std::string code = "baton_run_history_code(" + n.state + ", " + n.continuation + ", " + n.attempt + ")";
  if (n.heartbeat) code = "(" + code + " + 32)";
  const std::string& stamp = history_stamp;
  auto entry = [&](const std::string& from_version) {
    return "ARRAY[" + p + "version + 1, " + from_version + ", " + code + ", " + epoch + ", " + stamp + ", " +
           n.continuation_ms + "]::bigint[]";
  };
  if (!n.heartbeat) return "history = " + p + "history || " + entry(p + "version");
  // A heartbeat after a heartbeat of the same attempt under the same epoch
  // replaces that entry, keeping its from_version: the entry stands for the
  // whole run of heartbeats, with the last one's transaction and time.
  const std::string last = "cardinality(" + p + "history)";
  return "history = CASE WHEN " + p + "history[" + last + " - 4] = " + code + " AND " + p + "history[" + last +
         " - 3] = " + epoch + " THEN " + p + "history[1 : " + last + " - 7] || " +
         entry(p + "history[" + last + " - 5]") + " ELSE " + p + "history || " + entry(p + "version") + " END";
}

// `check`: an expression the answer also computes, evaluated once for the
// statement after its writes (a rule the statement checks over the rows it
// wrote, raising to fail the statement).
std::string fenced_update(const Next& next, const std::string& set, const std::string& where,
                          const std::string& extra_ctes = "", const std::string& check = "") {
  return "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
         " w AS (UPDATE job_runs SET " +
         set + ", " + history_set("", next, "$3") +
         ", version = version + 1, leader_epoch = $3, updated_at = now()"
         " WHERE id = $1 AND (SELECT epoch FROM fence) = $3 AND (version = $2 AND (" +
         where + ")) IS TRUE RETURNING job_runs.*)" + extra_ctes +
         " SELECT (SELECT epoch FROM fence), w.version, w.lease_token::text, w.attempt" +
         (check.empty() ? "" : ", " + check) + " FROM (VALUES (1)) AS one(x) LEFT JOIN w ON true";
}

// The batched form: one UPDATE ... FROM <rows> with the lease row locked
// once for the statement; $1 is the writer's epoch, each row of `b` carries
// its own id, expected version and state/attempt predicates. As above, only
// the id may drive it: each row of the batch is one primary-key lookup.
// `returning`: what the statement's other parts read of each written row
// (the answer needs only id, version, lease token and attempt; a finish's
// attempt and dead-letter rows need the whole row).
//
// `commit`: whether the statement's commit waits for its WAL flush. Only
// the assignment's does not (see run_assign_batch).
enum class Commit { flushed, unflushed };
std::string batch_update(const Next& next, const std::string& set, const std::string& from, const std::string& where,
                         const std::string& returning = "r.id, r.version, r.lease_token, r.attempt",
                         const std::string& extra_ctes = "", Commit commit = Commit::flushed,
                         const std::string& check = "") {
  // The one-row driver of the answer; when unflushed, it also sets
  // synchronous_commit off for this statement's own (implicit) transaction.
  const std::string one = commit == Commit::flushed
                              ? "(VALUES (1)) AS one(x)"
                              : "(SELECT set_config('synchronous_commit', 'off', true)) AS one(x)";
  return "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
         " w AS (UPDATE job_runs r SET " +
         set + ", " + history_set("r.", next, "$1") +
         ", version = r.version + 1, leader_epoch = $1, updated_at = now() FROM " + from +
         " WHERE r.id = b.id AND (SELECT epoch FROM fence) = $1 AND (r.version = b.version AND (" + where +
         ")) IS TRUE RETURNING " + returning + ")" + extra_ctes +
         " SELECT (SELECT epoch FROM fence), w.id, w.version, w.lease_token::text, w.attempt" +
         (check.empty() ? "" : ", " + check) + " FROM " + one + " LEFT JOIN w ON true";
}

// A run starts at its time or after: its slot (cron) and its jitter
// (start_after). The leader may assign a run ahead of its time and holds its
// start until then (RunBook); this predicate makes the database refuse a
// start that comes early all the same (a leader's clock running fast).
std::string its_time(const std::string& r) {
  return "coalesce(" + r + ".scheduled_for, " + r + ".created_at) <= now() AND (" + r + ".start_after IS NULL OR " + r +
         ".start_after <= now())";
}

// Predicates of a write made on behalf of one attempt: the worker holding it,
// its attempt number and lease token, and that this leader has adopted it.
const std::string attempt_predicates =
    "assigned_worker_id = $4 AND attempt = $5 AND lease_token = $6::uuid AND leader_epoch = $3";

// The row of an attempt that did not end its run (a retry follows); the
// attempt that ends a run is recorded in the run's row (outcome, exit_code;
// schemas/0022), read through the job_run_attempts view.
const std::string attempt_row_cte =
    ", att AS (INSERT INTO job_run_attempt_rows (run_id, attempt, worker_id, leader_epoch, lease_token, started_at,"
    " finished_at, outcome, exit_code, duration_ms, task_results, error_code, worker_instance)"
    " SELECT id, attempt, assigned_worker_id, leader_epoch, lease_token, started_at, now(), $7, $11,"
    " greatest(0, floor(extract(epoch FROM (now() - started_at)) * 1000))::bigint, result->'tasks', error_code,"
    " worker_instance FROM w RETURNING *)";

// Receipts (schemas/0042, docs/assurance.md "Receipts"): what a statement
// ends extends its connection's chain of this epoch, in the same statement,
// as one link. `ends` is SQL selecting one baton_receipt_entry (column
// `entry`) per end from the statement's other parts; `epoch` the writer's
// epoch parameter. A statement that ended nothing adds no link. The head's
// row lock is its connection's alone (the lane names the backend), so no
// writer waits on another's chain.
std::string receipt_ctes(const std::string& ends, const std::string& epoch) {
  return ", ends AS (" + ends +
         ")"
         ", receipt AS (SELECT array_agg(entry) AS ends FROM ends HAVING count(*) > 0)"
         ", receipt_digest AS (SELECT ends, sha256(convert_to(ends::text, 'UTF8')) AS digest FROM receipt)"
         // The head moved, or the chain's first: an UPDATE then an INSERT
         // where it found none, cheaper than INSERT ... ON CONFLICT (its
         // speculative insertion) on every link but the first. Only this
         // connection writes its lane, so nothing can come in between.
         ", receipt_moved AS (UPDATE receipt_heads h SET seq = h.seq + 1, prev = h.hash,"
         " hash = sha256(h.hash || d.digest), digest = d.digest FROM receipt_digest d"
         " WHERE h.kind = 'runs' AND h.epoch = " +
         epoch +
         "::bigint AND h.lane = baton_receipt_lane() RETURNING h.epoch, h.lane, h.seq, h.prev, h.hash)"
         ", receipt_first AS (INSERT INTO receipt_heads (kind, epoch, lane, seq, prev, hash, digest)"
         " SELECT 'runs', " +
         epoch +
         "::bigint, baton_receipt_lane(), 1, ''::bytea, sha256(digest), digest FROM receipt_digest"
         " WHERE NOT EXISTS (SELECT 1 FROM receipt_moved) RETURNING epoch, lane, seq, prev, hash)"
         ", receipt_link AS (INSERT INTO receipt_links (epoch, lane, seq, prev, hash, ends)"
         " SELECT x.epoch, x.lane, x.seq, x.prev, x.hash, d.ends FROM (SELECT * FROM receipt_moved"
         " UNION ALL SELECT * FROM receipt_first) x, receipt_digest d)";
}

// The ends a statement's receipt records: the runs `w` ended, and the
// attempt rows `att` wrote (an attempt that did not end its run). What the
// verifier recomputes from the rows (schemas/0042, baton_receipt_problems).
const std::string run_ends =
    "SELECT baton_receipt_entry('run', id, attempt, state, outcome, assigned_worker_id, worker_instance, exit_code,"
    " leader_epoch, result -> 'tasks') AS entry FROM w WHERE state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')";
const std::string attempt_ends =
    "SELECT baton_receipt_entry('attempt', run_id, attempt, NULL, outcome, worker_id, worker_instance, exit_code,"
    " leader_epoch, task_results) AS entry FROM att";

const std::string dead_letter_cte_only =
    ", dl AS (INSERT INTO dead_letters (run_id, job_definition_id, final_state, attempts, error_code, error_msg,"
    " run_snapshot) SELECT id, job_definition_id, state, attempt, error_code, error_msg, to_jsonb(w) FROM w"
    " WHERE state IN ('FAILED', 'TIMED_OUT'))";

// A job's on_error (schemas/0034), in every statement that ends a run FAILED
// or TIMED_OUT for good: one run of the job it names, with what failed as
// its parameters (failed_run, failed_job, final_state, error_code). Not for
// a run that was itself made by an on_error: a failing handler never makes
// another. `w` must return id, state, job_definition_id, leader_epoch,
// error_code and trigger_kind.
const std::string on_error_cte =
    ", on_error_runs AS (INSERT INTO job_runs (job_definition_id, max_attempts, priority, trigger_kind,"
    " leader_epoch, payload)"
    " SELECT h.id, h.max_attempts, h.priority, 'on_error', w.leader_epoch,"
    " jsonb_build_object('failed_run', w.id::text, 'failed_job', j.name, 'final_state', w.state,"
    " 'error_code', coalesce(w.error_code, ''))"
    " FROM w JOIN job_definitions j ON j.id = w.job_definition_id"
    " JOIN job_definitions h ON h.name = j.on_error AND h.deleted_at IS NULL"
    " WHERE w.state IN ('FAILED', 'TIMED_OUT') AND w.trigger_kind <> 'on_error' ORDER BY w.id)";

// A run ended for good as FAILED or TIMED_OUT: its dead letter and its
// job's on_error, in the statement that ends it.
const std::string dead_letter_cte = dead_letter_cte_only + on_error_cte;

// The live exclusive jobs (schemas/0033's partial index holds only them).
const std::string live_exclusive =
    "SELECT g.id FROM job_definitions g WHERE g.exclusive_execution AND g.deleted_at IS NULL";
// exclusive_execution's checks in the database, "false" in the weakened
// chaos build that drops them (base/weaken.h).
const std::string gate_on = weakened("exclusive_gate") ? "false" : "true";

// Overlap control for the statements that make a run ASSIGNED (schemas/0010,
// 0023, 0033): each run written holds what its job requires, an instance
// number within max_instances and the exclusive lock for a mutually
// exclusive job, and a run of an exclusive job (exclusive_execution) finds
// no other run active without a gate, or the statement fails
// (baton_refuse_activation raises). The database's unique indexes and the
// gates' exclusion constraint refuse a second holder whoever writes; this
// checks, in the same statement, that a holder holds. `w` must return id,
// state, job_definition_id, instance_no and exclusive_lock. The other
// active runs are read from the statement's snapshot (the runs it writes
// are not among them as active), through the unfinished runs' index: a
// cost paid by an exclusive run's assignment alone.
//
// Keyed concurrency and rate limits (schemas/0035): a run of a job with a
// concurrency key must carry its own key (as baton_run_key computes it from
// the run's parameters, read from the statement's snapshot: the statement
// does not change them) and, under a limit, a slot of that key within it;
// a run of a rate-limited job must have taken a permit in `permits`. `w`
// must also return concurrency_key and key_slot; `rate_slot` is SQL for the
// permit each row takes (a single run's statements take none: a
// rate-limited job's run is assigned in a batch).
std::string activation_refused_cte(const std::string& rate_slot = "w.rate_slot") {
  return
      // The permits the runs written take: each one's last holder took it at
      // least an interval ago, or the permit is not taken (and the run is
      // refused below). Rows of runs without a permit never reach the join.
      ", permits AS (INSERT INTO rate_permits AS p (job_definition_id, rate_key, slot, taken_at, until, run_id,"
      " attempt, epoch) SELECT w.job_definition_id,"
      // the key written, which `refused` checks is the run's own: a wrong
      // one fails the statement, and the permit with it
      " CASE WHEN j.rate_limit_by_key THEN coalesce(w.concurrency_key, '') ELSE '' END, " +
      rate_slot +
      ", now(), now() + j.rate_limit_per_ms * interval '1 millisecond', w.id, w.attempt, $1"
      " FROM w JOIN job_definitions j ON j.id = w.job_definition_id"
      " WHERE " +
      rate_slot + " IS NOT NULL AND " + rate_slot +
      " BETWEEN 1 AND j.rate_limit_runs"
      " ON CONFLICT (job_definition_id, rate_key, slot) DO UPDATE SET taken_at = EXCLUDED.taken_at,"
      " until = EXCLUDED.until, run_id = EXCLUDED.run_id, attempt = EXCLUDED.attempt, epoch = EXCLUDED.epoch"
      " WHERE p.until <= EXCLUDED.taken_at RETURNING p.run_id)"
      ", refused AS (SELECT * FROM (SELECT w.id, j.name, w.state, w.instance_no, w.exclusive_lock,"
      " baton_instance_limit(j) AS lim, j.mutually_exclusive,"
      " CASE WHEN j.concurrency_key IS NOT NULL THEN CASE"
      "   WHEN w.concurrency_key IS DISTINCT FROM (SELECT baton_run_key(j.concurrency_key,"
      "     baton_run_params(j.parameters, o.payload)) FROM job_runs o WHERE o.id = w.id)"
      "   THEN 'its concurrency key is not ' || coalesce(quote_literal(w.concurrency_key), 'NULL')"
      "   WHEN j.concurrency_limit IS NOT NULL AND " +
      std::string(weakened("key_slot") ? "false" : "true") +  // weakened chaos builds only
      " AND (w.key_slot IS NULL OR w.key_slot > j.concurrency_limit)"
      "   THEN 'it must hold a slot of key ' || quote_literal(w.concurrency_key) || ' from 1 to ' || "
      "j.concurrency_limit"
      " END END AS key_refused,"
      " CASE WHEN j.rate_limit_runs IS NOT NULL AND NOT EXISTS (SELECT 1 FROM permits p WHERE p.run_id = w.id)"
      "   THEN 'no rate permit free (' || j.rate_limit_runs || ' runs per ' || j.rate_limit_per_ms || ' ms)'"
      " END AS rate_refused,"
      // An exclusive run: no other run active (in the snapshot, which its
      // transaction took after the run table's lock, or written by this
      // statement), and that lock held.
      " CASE WHEN j.exclusive_execution AND " +
      gate_on +
      " THEN coalesce((SELECT x.id FROM job_runs x WHERE x.finished_at IS NULL"
      "   AND x.state IN ('ASSIGNED', 'RUNNING') AND x.gate IS NULL AND x.id <> w.id ORDER BY x.id LIMIT 1),"
      "   (SELECT o.id FROM w o WHERE o.id <> w.id ORDER BY o.id LIMIT 1)) END"
      "   AS ungated,"
      " CASE WHEN j.exclusive_execution AND " +
      gate_on +
      " AND NOT baton_holds_run_table()"
      "   THEN 'an exclusive run is made active only under the run table''s lock (exclusive_execution)'"
      // Any other run: refused while an exclusive run holds its gate. The
      // job table is read only while some job is exclusive, the gates
      // (an index of exclusive runs alone) only then: once per statement.
      " WHEN NOT coalesce(j.exclusive_execution, false) AND " +
      gate_on + " AND EXISTS (" + live_exclusive +
      ") THEN (SELECT 'run ' || x.id || ' of an exclusive job is active (exclusive_execution)' FROM job_runs x"
      "   WHERE x.gate IS NOT NULL AND x.gate @> '(,)'::int8range ORDER BY x.id LIMIT 1) END AS gate_refused"
      // (a run of no job is checked too: LEFT JOIN)
      " FROM w LEFT JOIN job_definitions j ON j.id = w.job_definition_id) x"
      " WHERE (lim IS NOT NULL AND (instance_no IS NULL OR instance_no > lim))"
      " OR (mutually_exclusive AND exclusive_lock IS NOT TRUE) OR ungated IS NOT NULL OR key_refused IS NOT NULL"
      " OR rate_refused IS NOT NULL OR gate_refused IS NOT NULL)";
}
const std::string activation_check =
    "(SELECT baton_refuse_activation(id, name, lim, instance_no, state, ungated, key_refused, rate_refused,"
    " gate_refused) FROM refused ORDER BY id LIMIT 1)";

// The gate a run made active takes (schemas/0033, 0046): the whole line for
// an exclusive job's run, none for any other, so that defining an exclusive
// job leaves every other run's assignment a HOT update (SPEC section 2).
// `run` is SQL for the row being written (its job_definition_id). Both
// reads of job_definitions are uncorrelated: once per statement, not per
// row.
std::string gate_set(const std::string& run) {
  if (weakened("exclusive_gate")) return "gate = NULL";  // weakened chaos builds only
  return "gate = CASE WHEN NOT EXISTS (" + live_exclusive + ") THEN NULL WHEN " + run + ".job_definition_id IN (" +
         live_exclusive + ") THEN '(,)'::int8range END";
}

// What a success sets off (schemas/0012, 0014, 0023), in the statement that
// ends a run SUCCEEDED: the event `job.succeeded:<job>` when some job runs
// after that job (one per run, deduplicated by run), and the retirement of
// a self-destructing job by the first of its runs to succeed (the smallest
// id when several succeed in one statement), with its audit record. `w`
// must return id, state, job_definition_id and leader_epoch.
const std::string success_ctes =
    ", succeeded AS (SELECT w.id, w.job_definition_id, w.leader_epoch FROM w"
    "  WHERE w.state = 'SUCCEEDED' AND w.job_definition_id IS NOT NULL),"
    " succeeded_events AS (INSERT INTO events (kind, payload, dedupe_key, created_by)"
    "  SELECT 'job.succeeded:' || j.name, jsonb_build_object('run_id', s.id, 'job', j.name),"
    "  'run-succeeded:' || s.id, 'run ' || s.id"
    "  FROM succeeded s JOIN job_definitions j ON j.id = s.job_definition_id"
    // the jobs some job runs after, found once per statement, not per run
    "  WHERE j.name IN (SELECT unnest(d.run_after) FROM job_definitions d WHERE d.deleted_at IS NULL)"
    "  ORDER BY s.id ON CONFLICT (kind, dedupe_key) DO NOTHING),"
    " first_success AS (SELECT DISTINCT ON (job_definition_id) job_definition_id, id, leader_epoch"
    "  FROM succeeded ORDER BY job_definition_id, id),"
    " retired AS (UPDATE job_definitions d SET deleted_at = now(), updated_at = now(), version = d.version + 1"
    "  FROM first_success f WHERE d.id = f.job_definition_id AND d.self_destruct AND d.deleted_at IS NULL"
    "  RETURNING d.name, f.id AS run_id, f.leader_epoch),"
    " retired_audit AS (INSERT INTO audit_log (actor, action, subject, epoch, details)"
    "  SELECT 'system', 'job.self_destruct', 'job:' || name, leader_epoch, jsonb_build_object('run_id', run_id)"
    "  FROM retired),"
    // A success ends its job's streak of failures (schemas/0038): the row is
    // deleted if it exists and no failure holds it now. Never waiting here
    // keeps the success side out of every lock cycle; a failure recorded at
    // the same instant keeps its streak.
    " streak_reset AS (DELETE FROM job_failure_streaks WHERE job_definition_id IN (SELECT f.job_definition_id"
    "  FROM job_failure_streaks f WHERE f.job_definition_id IN (SELECT job_definition_id FROM succeeded)"
    "  FOR UPDATE SKIP LOCKED))";

// A cancel records itself in the audit log in the statement that makes it
// (an operator's request is recorded by the API before it reaches the
// leader; this is the change itself, or nothing when it did not apply).
// `from` is SQL for the state canceled from.
std::string cancel_audit_cte(const std::string& action, const std::string& from, const std::string& reason) {
  return ", audited AS (INSERT INTO audit_log (actor, action, subject, epoch, details)"
         " SELECT 'system', '" +
         action + "', 'run:' || w.id, w.leader_epoch, jsonb_build_object('reason', " + reason + ", 'from', " + from +
         ", 'attempt', w.attempt, 'worker', w.assigned_worker_id) FROM w)";
}

// A run that leaves ASSIGNED or RUNNING gives back its instance number, the
// exclusive lock and its gate (overlap control): every statement that moves a run out
// of those states sets this, and the database refuses a row that keeps them
// (schemas/0020, job_runs_holds_only_while_active).
const std::string release_holds = "instance_no = NULL, exclusive_lock = NULL, gate = NULL, key_slot = NULL";

// log_ref: where the output archive keeps the attempt's output, when the
// leader has one (docs/scheduling.md, "Output and the log archive").
const std::string finish_set =
    "result = $8::jsonb, error_code = nullif($9, ''), error_msg = nullif($10, ''),"
    " log_ref = coalesce($8::jsonb->>'log_ref', log_ref),"
    " continuation_state = 'NONE', continuation_deadline_at = NULL, " +
    release_holds;

// run_assign_batch's rows, with $9 (per row: the start granted too), $10
// (the starting worker process) and $11 (the stale interval, ms). Written
// out rather than through batch_update: a granted row advances the version
// by two and appends two history entries.
std::string assign_start_batch_sql() {
  const std::string attempt = "CASE WHEN r.state = 'RETRY_WAITING' THEN r.attempt + 1 ELSE r.attempt END";
  const std::string continuation_ms = "coalesce(nullif(b.continuation_ms, 0), r.continuation_timeout_ms)";
  const std::string& stamp = history_stamp;  // both entries: one transaction, one time
  auto entry = [&](const std::string& to, const std::string& from, const std::string& state) {
    return "ARRAY[" + to + ", " + from + ", baton_run_history_code(" + state + ", 'NONE', " + attempt + "), $1, " +
           stamp + ", " + continuation_ms + "]::bigint[]";
  };
  return "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
         " w AS (UPDATE job_runs r SET"
         " state = CASE WHEN b.start THEN 'RUNNING' ELSE 'ASSIGNED' END,"
         " attempt = " +
         attempt +
         ", assigned_worker_id = b.worker, lease_token = gen_random_uuid(), assigned_at = now(),"
         " worker_instance = CASE WHEN b.start THEN nullif(b.instance, '') END,"
         " started_at = CASE WHEN b.start THEN now() WHEN r.state = 'PENDING' THEN r.started_at END,"
         " heartbeat_at = CASE WHEN b.start THEN now() ELSE r.heartbeat_at END,"
         " stale_after = CASE WHEN b.start THEN now() + $11 * interval '1 millisecond' ELSE r.stale_after END,"
         " continuation_state = 'NONE', continuation_deadline_at = NULL,"
         " continuation_timeout_ms = " +
         continuation_ms +
         ", instance_no = b.instance_no, exclusive_lock = b.exclusive_lock, concurrency_key = b.concurrency_key,"
         " key_slot = b.key_slot, " +
         gate_set("r") + ", history = r.history || " + entry("r.version + 1", "r.version", "'ASSIGNED'") +
         " || CASE WHEN b.start THEN " + entry("r.version + 2", "r.version + 1", "'RUNNING'") +
         " ELSE '{}'::bigint[] END,"
         " version = r.version + CASE WHEN b.start THEN 2 ELSE 1 END, leader_epoch = $1, updated_at = now()"
         " FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::boolean[],"
         " $9::boolean[], $10::text[], $12::text[], $13::int[], $14::int[]) AS b(id, version, from_state, worker,"
         " continuation_ms, instance_no, exclusive_lock, start, instance, concurrency_key, key_slot, rate_slot)"
         " WHERE r.id = b.id AND (SELECT epoch FROM fence) = $1 AND (r.version = b.version"
         " AND r.state = b.from_state AND r.state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING')"
         " AND (NOT b.start OR " +
         its_time("r") +
         ")) IS TRUE"
         " RETURNING r.id, r.version, r.lease_token, r.attempt, r.state, r.job_definition_id, r.instance_no,"
         " r.exclusive_lock, r.concurrency_key, r.key_slot, b.rate_slot)" +
         activation_refused_cte() +
         " SELECT (SELECT epoch FROM fence), w.id, w.version, w.lease_token::text, w.attempt, " + activation_check +
         " FROM (VALUES (1)) AS one(x) LEFT JOIN w ON true";
}

}  // namespace

const std::vector<Statement>& statements() {
  static const std::vector<Statement> all = {
      {"run_create",
       "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
       " w AS (INSERT INTO job_runs (job_definition_id, idempotency_key, max_attempts, priority, trigger_kind,"
       " payload, leader_epoch) SELECT $2::bigint, $3::text, $4::int, $5::int, $6::text, $7::jsonb, $1::bigint"
       " WHERE (SELECT epoch FROM fence) = $1::bigint"
       " ON CONFLICT DO NOTHING RETURNING id)"
       " SELECT (SELECT epoch FROM fence), w.id FROM (VALUES (1)) AS one(x) LEFT JOIN w ON true"},
      {"run_read",
       "SELECT r.id, r.state, r.version, r.attempt, r.max_attempts, r.leader_epoch, r.assigned_worker_id,"
       " r.lease_token::text, r.continuation_state, coalesce(j.name, '') FROM job_runs r LEFT JOIN job_definitions j"
       " ON j.id = r.job_definition_id WHERE r.id = $1"},
      {"run_assign",
       fenced_update({.state = "'ASSIGNED'", .continuation = "'NONE'"},
                     "state = 'ASSIGNED', assigned_worker_id = $4, lease_token = gen_random_uuid(),"
                     " worker_instance = NULL,"
                     " assigned_at = now(), continuation_state = 'NONE', continuation_deadline_at = NULL, " +
                         gate_set("job_runs"),
                     "state = 'PENDING'", activation_refused_cte("NULL::int"), activation_check)},
      // From ORPHANED the attempt keeps its number: the orphaned assignment
      // never started (ORPHANED is reached only from ASSIGNED), so it is not
      // an attempt; the fresh lease token alone fences the abandoned grant.
      {"run_reassign",
       fenced_update({.state = "'ASSIGNED'",
                      .continuation = "'NONE'",
                      .attempt = "CASE WHEN state = 'ORPHANED' THEN attempt ELSE attempt + 1 END"},
                     "state = 'ASSIGNED',"
                     " attempt = CASE WHEN state = 'ORPHANED' THEN attempt ELSE attempt + 1 END,"
                     " assigned_worker_id = $4, worker_instance = NULL,"
                     " lease_token = gen_random_uuid(), assigned_at = now(),"
                     " started_at = NULL, continuation_state = 'NONE', continuation_deadline_at = NULL, " +
                         gate_set("job_runs"),
                     "state = $5 AND state IN ('ORPHANED', 'RETRY_WAITING')", activation_refused_cte("NULL::int"),
                     activation_check)},
      {"run_start",
       fenced_update({.state = "'RUNNING'"},
                     "state = 'RUNNING', started_at = now(), heartbeat_at = now(),"
                     " stale_after = now() + $7 * interval '1 millisecond'",
                     "state = 'ASSIGNED' AND assigned_worker_id = $4 AND attempt = $5 AND lease_token = $6::uuid"
                     " AND " +
                         its_time("job_runs"))},
      {"run_heartbeat",
       fenced_update({.heartbeat = true}, "heartbeat_at = now(), stale_after = now() + $7 * interval '1 millisecond'",
                     "state = 'RUNNING' AND " + attempt_predicates)},
      {"run_finish", fenced_update({.state = "$7", .continuation = "'NONE'"},
                                   "state = $7, finished_at = now(), outcome = $7, exit_code = $11, " + finish_set,
                                   "state = 'RUNNING' AND " + attempt_predicates,
                                   dead_letter_cte + success_ctes + receipt_ctes(run_ends, "$3"))},
      {"run_retry_later",
       fenced_update({.state = "'RETRY_WAITING'", .continuation = "'NONE'"},
                     "state = 'RETRY_WAITING', next_attempt_at = now() + $12 * interval '1 millisecond', " + finish_set,
                     "state = 'RUNNING' AND " + attempt_predicates,
                     attempt_row_cte + receipt_ctes(attempt_ends, "$3"))},
      {"run_orphan",
       fenced_update({.state = "'ORPHANED'"},
                     "state = 'ORPHANED', unstarted_assignments = unstarted_assignments + 1, " + release_holds,
                     "state = 'ASSIGNED'")},
      {"run_requeue",
       fenced_update({.state = "'ORPHANED'"}, "state = 'ORPHANED', " + release_holds, "state = 'ASSIGNED'")},
      {"run_late_success",
       fenced_update({.state = "'SUCCEEDED'", .continuation = "'NONE'"},
                     "state = 'SUCCEEDED', finished_at = now(), next_attempt_at = NULL, " + finish_set,
                     "state = 'RETRY_WAITING' AND assigned_worker_id = $4 AND attempt = $5 AND lease_token = $6::uuid",
                     ", att AS (UPDATE job_run_attempt_rows a SET outcome = $7, exit_code = $11, finished_at = now()"
                     " FROM w WHERE a.run_id = w.id AND a.attempt = w.attempt RETURNING a.*)" +
                         success_ctes + receipt_ctes(run_ends + " UNION ALL " + attempt_ends, "$3"))},
      // A worker's report of an attempt the leader had already ended
      // without it (declared lost, or timed out): recorded as what happened
      // (schemas/0041), the run unchanged. Only such an attempt, of this
      // worker and lease token, and only under this leader's epoch; the
      // first report wins. The answer is classify()'s: a version (the
      // caller's, unused) when it was recorded.
      {"run_late_report",
       "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
       " given_up AS (SELECT 1 FROM job_run_attempt_rows a WHERE a.run_id = $1 AND a.attempt = $5"
       "  AND a.worker_id = $4 AND a.lease_token = $6::uuid AND a.error_code IN ('attempt_lost', 'timeout')"
       "  UNION ALL SELECT 1 FROM job_runs r WHERE r.id = $1 AND r.attempt = $5 AND r.assigned_worker_id = $4"
       "  AND r.lease_token = $6::uuid AND r.outcome IS NOT NULL AND r.error_code IN ('attempt_lost', 'timeout')),"
       " w AS (INSERT INTO late_reports (run_id, attempt, worker_id, lease_token, outcome, exit_code, leader_epoch)"
       "  SELECT $1, $5, $4, $6::uuid, $7, $8, $3 WHERE (SELECT epoch FROM fence) = $3"
       "  AND EXISTS (SELECT 1 FROM given_up) ON CONFLICT (run_id, attempt) DO NOTHING RETURNING *)" +
           receipt_ctes("SELECT baton_receipt_entry('late', run_id, attempt, NULL, outcome, worker_id, NULL, exit_code,"
                        " leader_epoch, NULL) AS entry FROM w",
                        "$3") +
           " SELECT (SELECT epoch FROM fence), CASE WHEN w.attempt IS NOT NULL THEN $2::bigint END, $6::text, w.attempt"
           " FROM (VALUES (1)) AS one(x) LEFT JOIN w ON true"},
      {"run_fail_orphaned",
       fenced_update({.state = "'FAILED'"},
                     "state = 'FAILED', finished_at = now(), error_code = 'orphaned', error_msg = $4",
                     "state = 'ORPHANED'", dead_letter_cte + receipt_ctes(run_ends, "$3"))},
      {"run_fail_unrunnable",
       fenced_update({.state = "'FAILED'"},
                     "state = 'FAILED', finished_at = now(), next_attempt_at = NULL, error_code = $5, error_msg = $6",
                     "state = $4 AND state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING')",
                     dead_letter_cte + receipt_ctes(run_ends, "$3"))},
      {"run_cancel",
       fenced_update({.state = "'CANCELED'", .continuation = "'NONE'"},
                     "state = 'CANCELED', finished_at = now(), error_code = 'canceled', error_msg = $5,"
                     " continuation_state = 'NONE', continuation_deadline_at = NULL, " +
                         release_holds,
                     "state = $4 AND state IN ('PENDING', 'ASSIGNED', 'ORPHANED', 'RETRY_WAITING')",
                     cancel_audit_cte("run.canceled", "$4::text", "$5::text") + receipt_ctes(run_ends, "$3"))},
      // The running attempt's end: its worker's predicates, and the run's
      // final attempt recorded in its row (job_run_attempts shows it).
      {"run_cancel_attempt",
       fenced_update({.state = "'CANCELED'", .continuation = "'NONE'"},
                     "state = 'CANCELED', finished_at = now(), next_attempt_at = NULL, outcome = 'CANCELED',"
                     " exit_code = $8, result = $9::jsonb, log_ref = coalesce($9::jsonb->>'log_ref', log_ref),"
                     " error_code = 'canceled', error_msg = $7, continuation_state = 'NONE',"
                     " continuation_deadline_at = NULL, " +
                         release_holds,
                     "state = 'RUNNING' AND " + attempt_predicates,
                     cancel_audit_cte("run.canceled", "'RUNNING'", "$7::text") + receipt_ctes(run_ends, "$3"))},
      // The deadline uses the continuation timeout the worker was sent with
      // the attempt (stored at assignment); $4 only for runs assigned before
      // the column existed.
      {"run_begin_confirming", fenced_update({.continuation = "'CONFIRMING'"},
                                             "continuation_state = 'CONFIRMING', continuation_deadline_at = now()"
                                             " + coalesce(continuation_timeout_ms, $4) * interval '1 millisecond'",
                                             "state = 'RUNNING' AND continuation_state = 'NONE'")},
      {"run_request_cancel",
       fenced_update({}, "cancel_requested_at = coalesce(cancel_requested_at, now()), cancel_reason = $4",
                     "state = 'RUNNING'", cancel_audit_cte("run.cancel_requested", "'RUNNING'", "$4::text"))},
      {"run_adopt",
       fenced_update({.continuation = "'NONE'"}, "continuation_state = 'NONE', continuation_deadline_at = NULL",
                     "state = 'RUNNING' AND assigned_worker_id = $4 AND attempt = $5 AND lease_token = $6::uuid")},
      // The assignment is the one write whose commit does not wait for the
      // WAL flush (the worker is told a little sooner; at idle the flush was
      // a third of a millisecond of trigger-to-start). Losing it in a crash
      // loses nothing that anything relies on: an assignment gives no right
      // to run; the start does, and the start's own fenced write requires
      // this row ASSIGNED with this lease token and waits for its flush,
      // which covers every WAL record before it, this one included. A lost
      // assignment is a run back in its earlier state, its worker's start
      // denied (docs/fencing.md).
      {"run_assign_batch",
       batch_update(
           {.state = "'ASSIGNED'",
            .continuation = "'NONE'",
            .attempt = "CASE WHEN r.state = 'RETRY_WAITING' THEN r.attempt + 1 ELSE r.attempt END",
            .continuation_ms = "coalesce(nullif(b.continuation_ms, 0), r.continuation_timeout_ms)"},
           "state = 'ASSIGNED',"
           " attempt = CASE WHEN r.state = 'RETRY_WAITING' THEN r.attempt + 1 ELSE r.attempt END,"
           " assigned_worker_id = b.worker, lease_token = gen_random_uuid(), assigned_at = now(),"
           " worker_instance = NULL, started_at = CASE WHEN r.state = 'PENDING' THEN r.started_at END,"
           " continuation_state = 'NONE', continuation_deadline_at = NULL,"
           " continuation_timeout_ms = coalesce(nullif(b.continuation_ms, 0), r.continuation_timeout_ms),"
           " instance_no = b.instance_no, exclusive_lock = b.exclusive_lock, concurrency_key = b.concurrency_key,"
           " key_slot = b.key_slot, " +
               gate_set("r"),
           "unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::int[],"
           " $8::boolean[], $9::text[], $10::int[], $11::int[]) AS b(id, version, from_state, worker, continuation_ms,"
           " instance_no, exclusive_lock, concurrency_key, key_slot, rate_slot)",
           "r.state = b.from_state AND r.state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING')",
           "r.id, r.version, r.lease_token, r.attempt, r.state, r.job_definition_id, r.instance_no, r.exclusive_lock,"
           " r.concurrency_key, r.key_slot, b.rate_slot",
           activation_refused_cte(), Commit::unflushed, activation_check)},
      // The assignment that carries the start grant (AssignRow::start;
      // schemas/0024): in a batch where some row has one, every row is
      // written by this statement, the granted ones ASSIGNED and RUNNING in
      // one row write (version + 2, both steps in the history, one
      // transaction) under the assignment's predicates and the start's
      // time, the others as run_assign_batch writes them. Its commit waits
      // for the WAL flush: the frame that lets the worker start leaves only
      // after it, and a start right must survive a crash of the database.
      {"run_assign_start_batch", assign_start_batch_sql()},
      {"run_start_batch",
       batch_update({.state = "'RUNNING'"},
                    "state = 'RUNNING', started_at = now(), heartbeat_at = now(),"
                    " stale_after = now() + $2 * interval '1 millisecond', worker_instance = nullif(b.instance, '')",
                    "unnest($3::bigint[], $4::bigint[], $5::text[], $6::int[], $7::uuid[], $8::text[])"
                    " AS b(id, version, worker, attempt, token, instance)",
                    "r.state = 'ASSIGNED' AND r.assigned_worker_id = b.worker AND r.attempt = b.attempt"
                    " AND r.lease_token = b.token AND " +
                        its_time("r"))},
      {"run_finish_batch",
       batch_update(
           {.state = "b.next_state", .continuation = "'NONE'"},
           "state = b.next_state,"
           // The attempt that ends the run is recorded in the run's row; one
           // that is retried gets a row of its own (att below).
           " outcome = CASE WHEN b.next_state = 'RETRY_WAITING' THEN NULL ELSE b.outcome END,"
           " exit_code = CASE WHEN b.next_state = 'RETRY_WAITING' THEN NULL ELSE b.exit_code END,"
           " finished_at = CASE WHEN b.next_state = 'RETRY_WAITING' THEN r.finished_at ELSE now() END,"
           " next_attempt_at = CASE WHEN b.next_state = 'RETRY_WAITING'"
           " THEN now() + b.delay_ms * interval '1 millisecond' ELSE r.next_attempt_at END,"
           " result = b.result::jsonb, error_code = nullif(b.error_code, ''), error_msg = nullif(b.error_msg, ''),"
           " log_ref = coalesce(b.result::jsonb->>'log_ref', r.log_ref),"
           " continuation_state = 'NONE', continuation_deadline_at = NULL, " +
               release_holds,
           "unnest($2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::uuid[], $7::text[], $8::text[], $9::text[],"
           " $10::text[], $11::text[], $12::int[], $13::bigint[]) AS b(id, version, worker, attempt, token,"
           " next_state, outcome, result, error_code, error_msg, exit_code, delay_ms)",
           "r.state = 'RUNNING' AND r.assigned_worker_id = b.worker AND r.attempt = b.attempt"
           " AND r.lease_token = b.token AND r.leader_epoch = $1"
           " AND b.next_state IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'RETRY_WAITING')",
           "r.*, b.outcome AS attempt_outcome, b.exit_code AS attempt_exit_code",
           ", att AS (INSERT INTO job_run_attempt_rows (run_id, attempt, worker_id, leader_epoch, lease_token,"
           " started_at, finished_at, outcome, exit_code, duration_ms, task_results, error_code, worker_instance)"
           " SELECT id, attempt, assigned_worker_id, leader_epoch, lease_token, started_at, now(), attempt_outcome,"
           " attempt_exit_code, greatest(0, floor(extract(epoch FROM (now() - started_at)) * 1000))::bigint,"
           " result->'tasks', error_code, worker_instance FROM w WHERE state = 'RETRY_WAITING' RETURNING *)"
           ", dl AS (INSERT INTO dead_letters (run_id, job_definition_id, final_state, attempts, error_code,"
           " error_msg, run_snapshot) SELECT id, job_definition_id, state, attempt, error_code, error_msg,"
           " to_jsonb(w) - 'attempt_outcome' - 'attempt_exit_code' FROM w WHERE state IN ('FAILED', 'TIMED_OUT'))" +
               on_error_cte + success_ctes + receipt_ctes(run_ends + " UNION ALL " + attempt_ends, "$1"))},
  };
  return all;
}

WriteResult classify(const pqxx::row& r, Epoch writer) {
  WriteResult out;
  out.current_epoch = Epoch{r[0].is_null() ? 0 : r[0].as<std::int64_t>()};
  if (!r[1].is_null()) {
    out.outcome = WriteOutcome::applied;
    out.new_version = Version{r[1].as<std::int64_t>()};
    if (!r[2].is_null()) out.lease_token = r[2].as<std::string>();
    out.attempt = r[3].as<int>();
    BATON_ASSERT(out.current_epoch == writer);
  } else {
    out.outcome = out.current_epoch == writer ? WriteOutcome::conflict : WriteOutcome::fenced;
  }
  return out;
}

BatchWriteResult classify_batch(const pqxx::result& rows, Epoch writer) {
  BatchWriteResult out;
  for (const auto& r : rows) {
    out.current_epoch = Epoch{r[0].is_null() ? 0 : r[0].as<std::int64_t>()};
    if (r[1].is_null()) continue;
    WriteResult w;
    w.outcome = WriteOutcome::applied;
    w.current_epoch = out.current_epoch;
    w.new_version = Version{r[2].as<std::int64_t>()};
    if (!r[3].is_null()) w.lease_token = r[3].as<std::string>();
    w.attempt = r[4].as<int>();
    out.applied[r[1].as<std::int64_t>()] = std::move(w);
  }
  BATON_ASSERT(out.applied.empty() || out.current_epoch == writer);
  return out;
}

CreateResult classify_create(const pqxx::row& r, Epoch writer) {
  CreateResult out;
  out.current_epoch = Epoch{r[0].as<std::int64_t>()};
  if (!r[1].is_null()) {
    out.outcome = WriteOutcome::applied;
    out.run = RunId{r[1].as<std::int64_t>()};
  } else {
    out.outcome = out.current_epoch == writer ? WriteOutcome::conflict : WriteOutcome::fenced;
  }
  return out;
}

const std::string& heartbeat_batch_sql() {
  // The lease lock is taken once for the statement; every row still carries
  // its own version, state, attempt and token predicates.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " w AS (UPDATE job_runs r SET heartbeat_at = now(), stale_after = now() + $2 * interval '1 millisecond'," +
      history_set("r.", Next{.heartbeat = true}, "$1") +
      ", version = r.version + 1, updated_at = now(), progress = coalesce(b.progress, r.progress),"
      " progress_at = CASE WHEN b.progress IS NULL THEN r.progress_at ELSE now() END"
      " FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::int[], $7::uuid[], $8::text[]) AS b(id, version,"
      " worker, attempt, token, progress)"
      " WHERE r.id = b.id AND (SELECT epoch FROM fence) = $1 AND (r.version = b.version AND r.state = 'RUNNING'"
      " AND r.assigned_worker_id = b.worker AND r.attempt = b.attempt AND r.lease_token = b.token"
      " AND r.leader_epoch = $1) IS TRUE RETURNING r.id, r.version)"
      " SELECT (SELECT epoch FROM fence), w.id, w.version FROM (VALUES (1)) AS one(x) LEFT JOIN w ON true";
  return sql;
}

}  // namespace baton::store::pg
