#include "baton/store_pg/pg_admin_store.h"

#include <boost/json.hpp>

#include "admin_sql.h"
#include "baton/base/json_text.h"
#include "due_run_row.h"
#include "pg_array.h"
#include "run_transitions_sql.h"

namespace baton::store::pg {

namespace {

constexpr const char* final_states = "('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED')";

/// Every run state with its count (zero included: a series never vanishes).
std::map<std::string, std::int64_t> runs_by_state(pqxx::nontransaction& tx) {
  std::map<std::string, std::int64_t> out;
  for (auto s : all_run_states) out[std::string(to_string(s))] = 0;
  for (const auto& r : tx.exec("SELECT state, count(*) FROM job_runs GROUP BY state"))
    out[r[0].as<std::string>()] = r[1].as<std::int64_t>();
  return out;
}

std::int64_t unmatched_runs(pqxx::nontransaction& tx) {
  return tx
      .exec1(
          "SELECT count(*) FROM job_runs r JOIN job_definitions j ON j.id = r.job_definition_id"
          " WHERE r.finished_at IS NULL AND r.state IN ('PENDING', 'RETRY_WAITING', 'ORPHANED')"
          " AND j.worker_selector <> '{}'::jsonb"
          " AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.state = 'ATTACHED' AND w.admin_state = 'active'"
          " AND j.worker_selector <@ w.labels)")[0]
      .as<std::int64_t>();
}

/// A job definition as the API shows it: every field of the file format,
/// plus what the database adds.
constexpr const char* job_json =
    "jsonb_build_object('name', j.name, 'schedule', j.schedule, 'time_zone', j.time_zone, 'paused', j.paused,"
    " 'live', j.live, 'version', j.version, 'tasks', j.tasks, 'max_attempts', j.max_attempts,"
    " 'timeout_ms', j.timeout_ms, 'retry_base_ms', j.retry_base_ms, 'retry_cap_ms', j.retry_cap_ms,"
    " 'priority', j.priority, 'worker_selector', j.worker_selector, 'misfire_policy', j.misfire_policy,"
    " 'catch_up_limit', j.catch_up_limit, 'starting_deadline_ms', j.starting_deadline_ms,"
    " 'max_instances', j.max_instances, 'concurrency_policy', j.concurrency_policy,"
    " 'exclusive_execution', j.exclusive_execution, 'mutually_exclusive', j.mutually_exclusive, 'jitter_ms', "
    "j.jitter_ms, 'on_events', j.on_events,"
    " 'run_after', j.run_after, 'parameters', j.parameters,"
    " 'parameter_rules', j.parameter_rules, 'self_destruct', j.self_destruct,"
    " 'concurrency_key', j.concurrency_key, 'concurrency_limit', j.concurrency_limit,"
    " 'rate_limit', CASE WHEN j.rate_limit_runs IS NOT NULL THEN jsonb_build_object('runs', j.rate_limit_runs,"
    " 'per_ms', j.rate_limit_per_ms, 'by_key', j.rate_limit_by_key) END,"
    " 'created_at', j.created_at, 'updated_at', j.updated_at, 'deleted_at', j.deleted_at)";

}  // namespace

PgAdminStore::PgAdminStore(const std::string& url, const std::string& application_name)
    : session_(url, application_name) {
  // Prepared once per connection: a trigger is on the trigger-to-start path,
  // and planning its statement took longer than running it.
  session_.on_connect([](pqxx::connection& c) {
    c.prepare("trigger_run", trigger_run_sql());
    c.prepare("trigger_batch", trigger_batch_sql());
  });
}

Result<RunCounts> PgAdminStore::run_counts() {
  return session_.with<RunCounts>([&](pqxx::connection& c) -> Result<RunCounts> {
    pqxx::nontransaction tx{c};
    return RunCounts{runs_by_state(tx), unmatched_runs(tx)};
  });
}

Result<std::int64_t> PgAdminStore::database_epoch() {
  return session_.with<std::int64_t>([&](pqxx::connection& c) -> Result<std::int64_t> {
    pqxx::nontransaction tx{c};
    return tx.exec1("SELECT coalesce((SELECT epoch FROM leader_lease WHERE id = 1), 0)")[0].as<std::int64_t>();
  });
}

namespace {

// The ledger's account of a cron job's slots due in a window `w` (name,
// len) ending a second ago (the last second's slot may not be decided
// yet), for the job `j`: counted from when the job existed or its schedule
// was last resumed. Every due slot has an entry: created (on time, or late
// when caught up), or given up (a range, with its count) by the epoch that
// decided it. The delay is the run's creation after its slot.
const std::string cron_cadence_json =
    "(SELECT jsonb_build_object('since_unix', s.since_s, 'until_unix', s.until_s,"
    " 'fired', count(*) FILTER (WHERE l.decision = 'created'),"
    " 'late', count(*) FILTER (WHERE l.decision = 'created' AND l.reason = 'caught_up'),"
    " 'skipped', coalesce(sum(coalesce(l.slot_count, 1)) FILTER (WHERE l.decision = 'skipped'), 0),"
    " 'epochs', count(DISTINCT l.epoch),"
    " 'delay_ms_p50', round((percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM l.at - l.slot) "
    "* 1000))"
    "  FILTER (WHERE l.decision = 'created'))::numeric, 1),"
    " 'delay_ms_p99', round((percentile_cont(0.99) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM l.at - "
    "l.slot) * 1000))"
    "  FILTER (WHERE l.decision = 'created'))::numeric, 1))"
    // whole seconds, the first one after the window's start and the last
    // one before its end: the caller counts the due slots over the same ones
    " FROM (SELECT ceil(extract(epoch FROM greatest(now() - w.len, j.created_at,"
    "  coalesce(j.schedule_resumed_at, '-infinity'))))::bigint AS since_s,"
    "  floor(extract(epoch FROM now() - interval '1 second'))::bigint AS until_s) s"
    " LEFT JOIN decision_ledger l ON l.job_definition_id = j.id AND l.slot >= to_timestamp(s.since_s)"
    "  AND l.slot <= to_timestamp(s.until_s) AND l.decision IN ('created', 'skipped')"
    " GROUP BY s.since_s, s.until_s)";

}  // namespace

Result<ClusterGauges> PgAdminStore::cluster_gauges() {
  return session_.with<ClusterGauges>([&](pqxx::connection& c) -> Result<ClusterGauges> {
    pqxx::nontransaction tx{c};
    ClusterGauges g;
    g.runs_by_state = runs_by_state(tx);
    g.unmatched_runs = unmatched_runs(tx);
    // The open runs only (job_runs_open_idx), as baton_job_backlog reads them.
    g.oldest_pending_age_s =
        tx.exec1(
              "SELECT coalesce(extract(epoch FROM now() - min(due_at)), 0)::float8 FROM job_runs"
              " WHERE finished_at IS NULL AND state IN ('PENDING', 'ORPHANED', 'RETRY_WAITING') AND due_at <= now()")[0]
            .as<double>();
    for (const char* s : {"pending", "acknowledged", "replayed", "closed"}) g.dead_letters_by_status[s] = 0;
    for (const auto& r : tx.exec("SELECT triage_status, count(*) FROM dead_letters GROUP BY triage_status"))
      g.dead_letters_by_status[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    for (const auto& r :
         tx.exec("SELECT worker_id, state, admin_state, CASE WHEN state = 'ATTACHED' THEN"
                 " extract(epoch FROM now() - last_heartbeat_at)::float8 END FROM workers ORDER BY worker_id")) {
      ClusterGauges::Worker w{r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), {}};
      if (!r[3].is_null()) w.heartbeat_age_s = r[3].as<double>();
      g.workers.push_back(std::move(w));
    }
    // A skipped range counts its slots (slot_count; at least the count it
    // was given when there were more than 100,000: details.count_at_least).
    for (const auto& r :
         tx.exec("SELECT j.name, coalesce(sum(coalesce(d.slot_count, (d.details->>'count_at_least')::bigint, 1)), 0)"
                 " FROM job_definitions j LEFT JOIN decision_ledger d ON d.job_definition_id = j.id"
                 " AND d.decision = 'skipped' WHERE j.deleted_at IS NULL AND j.schedule IS NOT NULL GROUP BY j.name"))
      g.cron_slots_skipped_by_job[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    // The last hour of each live cron job as its cadence counts it.
    for (const auto& r : tx.exec("SELECT j.name, j.schedule, j.time_zone, c.v ->> 'since_unix', c.v ->> 'until_unix',"
                                 " c.v ->> 'fired', c.v ->> 'skipped' FROM job_definitions j, LATERAL (SELECT " +
                                 cron_cadence_json +
                                 " AS v FROM (SELECT interval '1 hour' AS len) w) c"
                                 " WHERE j.deleted_at IS NULL AND j.schedule IS NOT NULL AND j.live AND NOT j.paused"))
      g.cron_last_hour[r[0].as<std::string>()] =
          ClusterGauges::CronHour{r[1].as<std::string>(),  r[2].as<std::string>(),  r[3].as<std::int64_t>(),
                                  r[4].as<std::int64_t>(), r[5].as<std::int64_t>(), r[6].as<std::int64_t>()};
    // Every invariant the last sweep examined, so a series exists (at 0)
    // before its first violation, and those recorded.
    for (const auto& r :
         tx.exec("SELECT n, coalesce((SELECT count(*) FROM invariant_violations v WHERE v.invariant = n), 0) FROM"
                 " (SELECT jsonb_object_keys(last_sweep -> 'invariants') AS n FROM verify_cursor"
                 "  UNION SELECT invariant FROM invariant_violations) x"))
      g.invariant_violations[r[0].as<std::string>()] = r[1].as<std::int64_t>();
    // The lag: the oldest finished run past the cursor (job_runs_finished_idx).
    auto v = tx.exec1(
        "SELECT c.runs_checked, extract(epoch FROM now() - c.swept_at)::float8, coalesce(extract(epoch FROM now() -"
        " (SELECT r.finished_at FROM job_runs r WHERE r.finished_at > c.finished_at ORDER BY r.finished_at LIMIT 1))"
        "::float8, 0) FROM verify_cursor c");
    g.verify_runs_checked = v[0].as<std::int64_t>();
    if (!v[1].is_null()) g.verify_swept_age_s = v[1].as<double>();
    g.verify_lag_s = v[2].as<double>();
    return g;
  });
}

Result<std::optional<std::string>> PgAdminStore::slot_decisions(const std::string& job, std::int64_t slot_unix) {
  return session_.with<std::optional<std::string>>([&](pqxx::connection& c) -> Result<std::optional<std::string>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "SELECT jsonb_build_object('paused', j.paused, 'live', j.live,"
        " 'cron_cursor_unix', floor(extract(epoch FROM j.cron_cursor))::bigint,"
        " 'run', (SELECT jsonb_build_object('id', r.id, 'state', r.state, 'trigger_kind', r.trigger_kind,"
        "   'created_at', r.created_at, 'leader_epoch', r.leader_epoch) FROM job_runs r"
        "   WHERE r.job_definition_id = j.id AND r.scheduled_for = to_timestamp($2::bigint) LIMIT 1),"
        " 'decisions', coalesce((SELECT jsonb_agg(jsonb_build_object('at', d.at, 'epoch', d.epoch,"
        "   'decision', d.decision, 'reason', d.reason, 'slot', d.slot, 'slot_last', d.slot_last,"
        "   'slot_count', d.slot_count, 'run_id', d.run_id, 'details', d.details) ORDER BY d.id)"
        "   FROM decision_ledger d WHERE d.job_definition_id = j.id AND (d.slot = to_timestamp($2::bigint)"
        "   OR (d.slot_last IS NOT NULL AND d.slot_last >= to_timestamp($2::bigint)"
        "   AND d.slot <= to_timestamp($2::bigint)))), '[]'::jsonb))::text"
        " FROM job_definitions j WHERE j.name = $1 AND j.deleted_at IS NULL",
        job, slot_unix);
    if (rows.empty()) return std::optional<std::string>{};
    return std::optional<std::string>{rows[0][0].as<std::string>()};
  });
}

Result<std::optional<std::string>> PgAdminStore::job_stats(const std::string& job) {
  return session_.with<std::optional<std::string>>([&](pqxx::connection& c) -> Result<std::optional<std::string>> {
    pqxx::nontransaction tx{c};
    // The views of schemas/0029, for one job; a window with no finished run
    // and a job with no unfinished run read as zeros.
    const std::string zero_window =
        "jsonb_build_object('runs', 0, 'succeeded', 0, 'failed', 0, 'timed_out', 0, 'canceled', 0,"
        " 'duration_p50_ms', null, 'duration_p95_ms', null)";
    auto window = [&](const char* w) {
      return std::string(
                 "coalesce((SELECT to_jsonb(s) - 'job' - 'window' FROM baton_job_stats s WHERE s.job = j.name"
                 " AND s.\"window\" = '") +
             w + "'), " + zero_window + ")";
    };
    auto rows = tx.exec_params(
        "SELECT jsonb_build_object('job', j.name, 'windows', jsonb_build_object('1h', " + window("1h") + ", '24h', " +
            window("24h") +
            "), 'backlog', coalesce((SELECT to_jsonb(b) - 'job' FROM baton_job_backlog b WHERE b.job = j.name),"
            " jsonb_build_object('pending', 0, 'scheduled_ahead', 0, 'orphaned', 0, 'retry_waiting', 0,"
            " 'assigned', 0, 'running', 0, 'oldest_waiting_s', 0)))::text"
            " FROM job_definitions j WHERE j.name = $1 AND j.deleted_at IS NULL",
        job);
    if (rows.empty()) return std::optional<std::string>{};
    return std::optional<std::string>{rows[0][0].as<std::string>()};
  });
}

Result<std::optional<std::string>> PgAdminStore::run_json(RunId id) {
  return session_.with<std::optional<std::string>>([&](pqxx::connection& c) -> Result<std::optional<std::string>> {
    pqxx::nontransaction tx{c};
    // Everything an operator asks about one run: its attempts, every change
    // of state with the epoch that wrote it, its output and its dead letter.
    auto rows = tx.exec_params(
        "SELECT jsonb_build_object('id', r.id, 'job', j.name, 'state', r.state, 'version', r.version,"
        " 'attempt', r.attempt, 'max_attempts', r.max_attempts, 'leader_epoch', r.leader_epoch,"
        " 'assigned_worker_id', r.assigned_worker_id, 'continuation_state', r.continuation_state,"
        " 'continuation_deadline_at', r.continuation_deadline_at,"
        " 'scheduled_for', r.scheduled_for, 'next_attempt_at', r.next_attempt_at, 'priority', r.priority,"
        " 'timeout_ms', coalesce(r.timeout_ms, j.timeout_ms), 'start_after', r.start_after,"
        " 'submission_id', r.submission_id,"
        " 'idempotency_key', r.idempotency_key, 'trigger_kind', r.trigger_kind, 'rerun_of', r.rerun_of,"
        " 'payload', r.payload, 'created_at', r.created_at,"
        " 'started_at', r.started_at, 'finished_at', r.finished_at, 'result', r.result,"
        " 'error_code', r.error_code, 'error_msg', r.error_msg, 'log_ref', r.log_ref,"
        " 'progress', r.progress, 'progress_at', r.progress_at,"
        " 'attempts', coalesce((SELECT jsonb_agg(jsonb_build_object('attempt', a.attempt, 'worker_id',"
        "   a.worker_id, 'leader_epoch', a.leader_epoch, 'outcome', a.outcome, 'exit_code', a.exit_code,"
        "   'duration_ms', a.duration_ms, 'started_at', a.started_at, 'finished_at', a.finished_at,"
        "   'task_results', a.task_results, 'error_code', a.error_code,"
        // What its worker reported after the leader had given up on it
        // (schemas/0041): what really happened.
        "   'late_report', CASE WHEN a.late_outcome IS NOT NULL THEN jsonb_build_object('outcome', a.late_outcome,"
        "   'exit_code', a.late_exit_code, 'reported_at', a.late_reported_at) END)"
        "   ORDER BY a.attempt) FROM job_run_attempts a WHERE a.run_id = r.id), '[]'::jsonb),"
        " 'transitions', coalesce((SELECT jsonb_agg(jsonb_build_object('at', t.at, 'from', t.from_state,"
        "   'to', t.to_state, 'attempt', t.attempt, 'leader_epoch', t.leader_epoch,"
        "   'continuation_state', t.continuation_state, 'version', t.to_version) ORDER BY t.to_version)"
        "   FROM job_run_transitions t WHERE t.run_id = r.id), '[]'::jsonb),"
        " 'dead_letter', (SELECT jsonb_build_object('id', d.id, 'triage_status', d.triage_status, 'notes', d.notes,"
        "   'replayed_run_ids', d.replayed_run_ids) FROM dead_letters d WHERE d.run_id = r.id),"
        " 'decisions', coalesce((SELECT jsonb_agg(jsonb_build_object('at', d.at, 'epoch', d.epoch,"
        "   'decision', d.decision, 'reason', d.reason, 'slot', d.slot, 'details', d.details) ORDER BY d.id)"
        "   FROM decision_ledger d WHERE d.run_id = r.id), '[]'::jsonb),"
        " 'reruns', coalesce((SELECT jsonb_agg(x.id ORDER BY x.id) FROM job_runs x WHERE x.rerun_of = r.id),"
        "   '[]'::jsonb),"
        " 'logs', coalesce((SELECT jsonb_agg(jsonb_build_object('attempt', l.attempt, 'stream', l.stream,"
        "   'at', l.created_at, 'start_offset', l.start_offset, 'chunk', l.chunk) ORDER BY l.id)"
        "   FROM run_logs l WHERE l.run_id = r.id),"
        "   '[]'::jsonb))::text"
        " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id WHERE r.id = $1",
        id.value);
    if (rows.empty()) return std::optional<std::string>{};
    return std::optional<std::string>{rows[0][0].as<std::string>()};
  });
}

Result<std::optional<std::string>> PgAdminStore::run_state(RunId id) {
  return session_.with<std::optional<std::string>>([&](pqxx::connection& c) -> Result<std::optional<std::string>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params("SELECT state FROM job_runs WHERE id = $1", id.value);
    if (rows.empty()) return std::optional<std::string>{};
    return std::optional<std::string>{rows[0][0].as<std::string>()};
  });
}

Result<Page> PgAdminStore::list_runs(const RunQuery& q) {
  return page_query(
      session_,
      "SELECT r.id::text, jsonb_build_object('id', r.id, 'job', j.name, 'state', r.state, 'attempt', r.attempt,"
      " 'max_attempts', r.max_attempts, 'worker_id', r.assigned_worker_id, 'leader_epoch', r.leader_epoch,"
      " 'continuation_state', r.continuation_state, 'idempotency_key', r.idempotency_key,"
      " 'trigger_kind', r.trigger_kind, 'scheduled_for', r.scheduled_for, 'created_at', r.created_at,"
      " 'started_at', r.started_at, 'finished_at', r.finished_at, 'error_code', r.error_code,"
      " 'error_msg', left(r.error_msg, 200))::text"
      " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id"
      " WHERE ($1::text IS NULL OR j.name = $1) AND ($2::text IS NULL OR r.state = $2)"
      "   AND ($3::text IS NULL OR r.assigned_worker_id = $3) AND ($4::text IS NULL OR r.idempotency_key = $4)"
      "   AND ($5::bigint IS NULL OR r.created_at >= to_timestamp($5))"
      "   AND ($6::bigint IS NULL OR r.created_at < to_timestamp($6))"
      "   AND ($7::bigint IS NULL OR r.id < $7)"
      "   AND ($8::text IS NULL OR strpos(lower(coalesce(r.error_code, '') || ' ' || coalesce(r.error_msg, '')),"
      "     lower($8)) > 0)"
      " ORDER BY r.id DESC LIMIT $9",
      q.limit, q.job, q.state, q.worker, q.idempotency_key, q.created_after_unix, q.created_before_unix, q.before_id,
      q.error_text);
}

Result<JobPage> PgAdminStore::list_jobs(int limit, std::optional<std::string> after_name,
                                        std::optional<std::string> only) {
  return session_.with<JobPage>([&](pqxx::connection& c) -> Result<JobPage> {
    pqxx::nontransaction tx{c};
    auto rows =
        tx.exec_params(std::string("SELECT j.name, j.schedule, j.time_zone, j.paused OR NOT j.live, (") + job_json +
                           " || jsonb_build_object('last_run', (SELECT jsonb_build_object('id', r.id, 'state', r.state,"
                           " 'created_at', r.created_at, 'finished_at', r.finished_at, 'error_code', r.error_code)"
                           " FROM job_runs r WHERE r.job_definition_id = j.id ORDER BY r.id DESC LIMIT 1))"
                           // keyed concurrency and rate limits (schemas/0035):
                           // the busiest keys now, for a job that has them
                           " || CASE WHEN j.concurrency_limit IS NOT NULL THEN jsonb_build_object('keys_in_use',"
                           " (SELECT coalesce(jsonb_agg(jsonb_build_object('key', k.concurrency_key, 'active', k.n)"
                           " ORDER BY k.n DESC, k.concurrency_key), '[]'::jsonb) FROM (SELECT x.concurrency_key,"
                           " count(*) AS n FROM job_runs x WHERE x.job_definition_id = j.id AND x.key_slot IS NOT NULL"
                           " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 20) k)) ELSE '{}'::jsonb END"
                           " || CASE WHEN j.rate_limit_runs IS NOT NULL THEN jsonb_build_object('rate_permits_taken',"
                           " (SELECT coalesce(jsonb_agg(jsonb_build_object('key', k.rate_key, 'taken', k.n)"
                           " ORDER BY k.n DESC, k.rate_key), '[]'::jsonb) FROM (SELECT p.rate_key, count(*) AS n"
                           " FROM rate_permits p WHERE p.job_definition_id = j.id AND p.until > now()"
                           " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 20) k)) ELSE '{}'::jsonb END"
                           // One cron job shown: what its ledger says of the
                           // slots due in the last hour and day (the caller
                           // adds how many were due by its schedule).
                           " || CASE WHEN $2::text IS NOT NULL AND j.schedule IS NOT NULL THEN"
                           " jsonb_build_object('cadence', (SELECT jsonb_object_agg(w.name, " +
                           cron_cadence_json +
                           ") FROM (VALUES ('last_hour', interval '1 hour'), ('last_day', interval '1 day'))"
                           " AS w(name, len))) ELSE '{}'::jsonb END)::text,"
                           " extract(epoch FROM now())::bigint"
                           " FROM job_definitions j WHERE j.deleted_at IS NULL AND ($1::text IS NULL OR j.name > $1)"
                           "   AND ($2::text IS NULL OR j.name = $2) ORDER BY j.name LIMIT $3",
                       after_name, only, limit + 1);
    JobPage page;
    for (const auto& row : rows) {
      page.now_unix = row[5].as<std::int64_t>();
      if (static_cast<int>(page.jobs.size()) == limit) {
        page.next_cursor = page.jobs.back().name;
        break;
      }
      JobListing j;
      j.name = row[0].as<std::string>();
      if (!row[1].is_null()) j.schedule = row[1].as<std::string>();
      j.time_zone = row[2].as<std::string>();
      j.paused = row[3].as<bool>();
      j.item_json = row[4].as<std::string>();
      page.jobs.push_back(std::move(j));
    }
    return page;
  });
}

Result<Page> PgAdminStore::list_audit(int limit, std::optional<std::int64_t> before_id,
                                      std::optional<std::string> subject) {
  return page_query(
      session_,
      "SELECT a.id::text, jsonb_build_object('id', a.id, 'at', a.at, 'actor', a.actor, 'action', a.action,"
      " 'subject', a.subject, 'epoch', a.epoch, 'details', a.details)::text FROM audit_log a"
      " WHERE ($1::bigint IS NULL OR a.id < $1) AND ($2::text IS NULL OR a.subject = $2)"
      " ORDER BY a.id DESC LIMIT $3",
      limit, before_id, subject);
}

Result<Page> PgAdminStore::list_events(int limit, std::optional<std::int64_t> before_id,
                                       std::optional<std::string> kind) {
  return page_query(session_,
                    "SELECT e.id::text, jsonb_build_object('id', e.id, 'kind', e.kind, 'payload', e.payload,"
                    " 'dedupe_key', e.dedupe_key, 'created_at', e.created_at, 'created_by', e.created_by,"
                    " 'processed_at', e.processed_at, 'runs', coalesce((SELECT jsonb_agg(jsonb_build_object('id', r.id,"
                    " 'job', j.name, 'state', r.state) ORDER BY r.id) FROM job_runs r LEFT JOIN job_definitions j"
                    " ON j.id = r.job_definition_id WHERE r.event_id = e.id), '[]'::jsonb))::text FROM events e"
                    " WHERE ($1::bigint IS NULL OR e.id < $1) AND ($2::text IS NULL OR e.kind = $2)"
                    " ORDER BY e.id DESC LIMIT $3",
                    limit, before_id, kind);
}

Result<std::optional<StoredJob>> PgAdminStore::job_definition(const std::string& name) {
  return session_.with<std::optional<StoredJob>>([&](pqxx::connection& c) -> Result<std::optional<StoredJob>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "SELECT schedule, time_zone, tasks::text, max_attempts, priority, coalesce(timeout_ms, 0), retry_base_ms,"
        " retry_cap_ms, worker_selector::text, live, misfire_policy, version, paused, catch_up_limit,"
        " starting_deadline_ms, max_instances, concurrency_policy, exclusive_execution, jitter_ms,"
        " array_to_json(on_events)::text, array_to_json(run_after)::text, parameters::text, self_destruct,"
        " parameter_rules::text, mutually_exclusive, on_error, concurrency_key, concurrency_limit, rate_limit_runs,"
        " rate_limit_per_ms, rate_limit_by_key FROM job_definitions WHERE name = $1 AND deleted_at IS "
        "NULL",
        name);
    if (rows.empty()) return std::optional<StoredJob>{};
    const auto& r = rows[0];
    StoredJob s;
    s.job.name = name;
    if (!r[0].is_null()) s.job.schedule = r[0].as<std::string>();
    s.job.time_zone = r[1].as<std::string>();
    s.job.tasks_json = r[2].as<std::string>();
    s.job.max_attempts = r[3].as<int>();
    s.job.priority = r[4].as<int>();
    s.job.timeout_ms = r[5].as<std::int64_t>();
    s.job.retry_base_ms = r[6].as<std::int64_t>();
    s.job.retry_cap_ms = r[7].as<std::int64_t>();
    s.job.selector_json = r[8].as<std::string>();
    s.job.live = r[9].as<bool>();
    s.job.misfire_policy = r[10].as<std::string>();
    s.version = r[11].as<std::int64_t>();
    s.paused = r[12].as<bool>();
    s.job.catch_up_limit = r[13].as<int>();
    if (!r[14].is_null()) s.job.starting_deadline_ms = r[14].as<std::int64_t>();
    if (!r[15].is_null()) s.job.max_instances = r[15].as<int>();
    s.job.concurrency_policy = r[16].as<std::string>();
    s.job.exclusive_execution = r[17].as<bool>();
    s.job.mutually_exclusive = r[24].as<bool>();
    if (!r[25].is_null()) s.job.on_error = r[25].as<std::string>();
    if (!r[26].is_null()) s.job.concurrency_key = r[26].as<std::string>();
    if (!r[27].is_null()) s.job.concurrency_limit = r[27].as<int>();
    if (!r[28].is_null()) s.job.rate_limit_runs = r[28].as<int>();
    if (!r[29].is_null()) s.job.rate_limit_per_ms = r[29].as<std::int64_t>();
    s.job.rate_limit_by_key = r[30].as<bool>();
    s.job.jitter_ms = r[18].as<std::int64_t>();
    const boost::json::value on_events = boost::json::parse(r[19].as<std::string>());
    for (const auto& v : on_events.as_array()) s.job.on_events.emplace_back(v.as_string());
    const boost::json::value run_after = boost::json::parse(r[20].as<std::string>());
    for (const auto& v : run_after.as_array()) s.job.run_after.emplace_back(v.as_string());
    s.job.parameters_json = r[21].as<std::string>();
    s.job.self_destruct = r[22].as<bool>();
    s.job.parameter_rules_json = r[23].as<std::string>();
    return std::optional<StoredJob>{s};
  });
}

Result<Page> PgAdminStore::list_dead_letters(int limit, std::optional<std::int64_t> before_id,
                                             std::optional<std::string> triage_status,
                                             std::optional<std::int64_t> only) {
  return page_query(session_,
                    "SELECT d.id::text, jsonb_build_object('id', d.id, 'run_id', d.run_id, 'job', j.name,"
                    " 'final_state', d.final_state, 'attempts', d.attempts, 'error_code', d.error_code,"
                    " 'error_msg', d.error_msg, 'triage_status', d.triage_status, 'notes', d.notes,"
                    " 'replayed_run_ids', d.replayed_run_ids,"
                    " 'created_at', d.created_at, 'updated_at', d.updated_at)::text"
                    " FROM dead_letters d LEFT JOIN job_definitions j ON j.id = d.job_definition_id"
                    " WHERE ($1::bigint IS NULL OR d.id < $1) AND ($2::text IS NULL OR d.triage_status = $2)"
                    "   AND ($3::bigint IS NULL OR d.id = $3)"
                    " ORDER BY d.id DESC LIMIT $4",
                    limit, before_id, triage_status, only);
}

Result<std::string> PgAdminStore::settings_json() {
  return session_.with<std::string>([&](pqxx::connection& c) -> Result<std::string> {
    pqxx::nontransaction tx{c};
    return tx
        .exec1(
            "SELECT coalesce(jsonb_object_agg(key, jsonb_build_object('value', value, 'updated_at', updated_at,"
            " 'updated_by', updated_by)), '{}'::jsonb)::text FROM settings")[0]
        .as<std::string>();
  });
}

Result<Page> PgAdminStore::list_tokens(int limit, std::optional<std::int64_t> before_id) {
  return page_query(session_,
                    "SELECT t.id::text, jsonb_build_object('id', t.id, 'name', t.name, 'role', t.role,"
                    " 'created_at', t.created_at, 'created_by', t.created_by, 'last_used_at', t.last_used_at,"
                    " 'revoked_at', t.revoked_at, 'expires_at', t.expires_at)::text FROM api_tokens t"
                    " WHERE ($1::bigint IS NULL OR t.id < $1) ORDER BY t.id DESC LIMIT $2",
                    limit, before_id);
}

Result<std::optional<TokenGrant>> PgAdminStore::token_by_hash(const std::string& sha256_hex) {
  return session_.with<std::optional<TokenGrant>>([&](pqxx::connection& c) -> Result<std::optional<TokenGrant>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "UPDATE api_tokens SET last_used_at = now() WHERE token_sha256 = $1 AND revoked_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > now())"
        " RETURNING id, name, role",
        sha256_hex);
    if (rows.empty()) return std::optional<TokenGrant>{};
    return std::optional<TokenGrant>{
        TokenGrant{rows[0][0].as<std::int64_t>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()}};
  });
}

Result<Triggered> PgAdminStore::trigger(const Actor& who, const std::string& job,
                                        const std::optional<std::string>& idempotency_key,
                                        const std::optional<std::string>& payload_json, const TriggerOptions& options) {
  return session_.with<Triggered>([&](pqxx::connection& c) -> Result<Triggered> {
    // One statement, its own transaction: the insert and its audit entry
    // commit together, in one round trip.
    pqxx::nontransaction tx{c};
    auto r =
        tx.exec_prepared1("trigger_run", who.epoch.value, job, idempotency_key, "api", std::optional<std::int64_t>{},
                          payload_json, who.name, who.admin, options.run_at, options.priority, options.timeout_ms);
    if (!r[2].as<bool>()) return make_error(Errc::bad_input, "unknown job '" + job + "'");
    Triggered out{classify_create(r, who.epoch), std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    if (!r[4].is_null()) out.parameters_refused = r[4].as<std::string>();
    if (!r[5].is_null()) out.key_refused = r[5].as<std::string>();
    if (out.outcome == WriteOutcome::conflict && !r[3].is_null()) out.earlier = RunId{r[3].as<std::int64_t>()};
    if (out.outcome == WriteOutcome::applied && !r[6].is_null()) out.due = due_run_of(r, 6);
    return out;
  });
}

Result<BatchTriggered> PgAdminStore::trigger_batch(const Actor& who, const std::vector<TriggerItem>& items) {
  std::vector<std::string> jobs;
  std::vector<std::optional<std::string>> keys, payloads;
  std::vector<std::optional<std::int64_t>> run_at, timeouts;
  std::vector<std::optional<int>> priorities;
  for (const auto& i : items) {
    jobs.push_back(i.job);
    keys.push_back(i.idempotency_key);
    payloads.push_back(i.payload_json);
    run_at.push_back(i.options.run_at);
    priorities.push_back(i.options.priority);
    timeouts.push_back(i.options.timeout_ms);
  }
  return session_.with<BatchTriggered>([&](pqxx::connection& c) -> Result<BatchTriggered> {
    // One autocommit statement: every run and its audit entry, or nothing.
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_prepared("trigger_batch", who.epoch.value, pg_array(jobs), pg_array(keys), pg_array(payloads),
                                 pg_array(run_at), pg_array(priorities), pg_array(timeouts), who.name, who.admin);
    BatchTriggered out;
    out.items.resize(items.size());
    bool refused = false;
    for (const auto& r : rows) {
      out.current_epoch = Epoch{r[0].as<std::int64_t>()};
      auto& item = out.items.at(r[1].as<std::size_t>() - 1);
      if (!r[2].is_null()) item.created = RunId{r[2].as<std::int64_t>()};
      if (!r[3].is_null()) item.existing = RunId{r[3].as<std::int64_t>()};
      if (!r[4].is_null()) {
        item.refused = r[4].as<std::string>();
        refused = true;
      }
    }
    out.applied = out.current_epoch == who.epoch && !refused;
    return out;
  });
}

namespace {

/// Inserts a run repeating run `of` (same job, same payload), fenced by the
/// epoch; (current epoch, new id or NULL, the original's state or NULL when
/// absent, whether its job is live).
pqxx::row insert_repeat(pqxx::work& tx, const Actor& who, std::int64_t of, const char* kind) {
  return tx.exec_params1(
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " src AS (SELECT r.id, r.state, r.payload, j.id AS job_id, j.max_attempts, j.priority"
      "   FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id AND j.deleted_at IS NULL"
      "   WHERE r.id = $2),"
      " w AS (INSERT INTO job_runs (job_definition_id, max_attempts, priority, trigger_kind, leader_epoch, payload,"
      "   rerun_of)"
      "   SELECT src.job_id, src.max_attempts, src.priority, $3::text, $1::bigint, src.payload, src.id FROM src"
      "   WHERE src.job_id IS NOT NULL AND src.state IN " +
          std::string(final_states) +
          " AND (SELECT epoch FROM fence) = $1::bigint RETURNING id)"
          " SELECT (SELECT epoch FROM fence), (SELECT id FROM w), (SELECT state FROM src),"
          " coalesce((SELECT job_id IS NOT NULL FROM src), false)",
      who.epoch.value, of, kind);
}

}  // namespace

Result<AdminResult> PgAdminStore::rerun(const Actor& who, RunId of) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto r = insert_repeat(tx, who, of.value, "rerun");
    const auto subject = "run:" + std::to_string(of.value);
    if (r[2].is_null()) return refused(AdminOutcome::not_found, "no run " + std::to_string(of.value));
    if (r[0].as<std::int64_t>() != who.epoch.value) return refused(AdminOutcome::fenced, "this node was superseded");
    const auto state = r[2].as<std::string>();
    if (r[1].is_null() && !is_terminal(parse_run_state(state).value_or(RunState::pending)))
      return refused(AdminOutcome::conflict,
                     "run " + std::to_string(of.value) + " is " + state +
                         ": only a finished run (SUCCEEDED, FAILED, TIMED_OUT, CANCELED) is re-run");
    if (r[1].is_null())
      return refused(AdminOutcome::not_found, "the job of run " + std::to_string(of.value) + " was deleted");
    const auto id = r[1].as<std::int64_t>();
    const auto after = "{\"run_id\":" + std::to_string(id) + "}";
    audit_in(tx, who, "run.rerun", subject, std::nullopt, after);
    tx.commit();
    return applied(after);
  });
}

Result<std::vector<AdminResult>> PgAdminStore::replay(const Actor& who, const std::vector<std::int64_t>& ids) {
  return session_.with<std::vector<AdminResult>>([&](pqxx::connection& c) -> Result<std::vector<AdminResult>> {
    pqxx::work tx{c};
    std::vector<AdminResult> out;
    for (auto id : ids) {
      const auto subject = "dead_letter:" + std::to_string(id);
      auto letter = tx.exec_params(
          "SELECT run_id, triage_status, replayed_run_ids::text FROM dead_letters WHERE id = $1 FOR UPDATE", id);
      if (letter.empty()) {
        out.push_back(refused(AdminOutcome::not_found, "no dead letter " + std::to_string(id)));
        continue;
      }
      auto r = insert_repeat(tx, who, letter[0][0].as<std::int64_t>(), "replay");
      if (r[0].as<std::int64_t>() != who.epoch.value)
        return std::vector<AdminResult>(ids.size(), refused(AdminOutcome::fenced, "this node was superseded"));
      if (r[1].is_null()) {
        out.push_back(refused(AdminOutcome::not_found,
                              r[2].is_null() ? "the run of dead letter " + std::to_string(id) + " was removed"
                                             : "the job of dead letter " + std::to_string(id) + " was deleted"));
        continue;
      }
      const auto run = r[1].as<std::int64_t>();
      tx.exec_params(
          "UPDATE dead_letters SET triage_status = 'replayed', replayed_run_ids = replayed_run_ids || $2::bigint,"
          " updated_at = now() WHERE id = $1",
          id, run);
      const auto before = "{\"triage_status\":\"" + letter[0][1].as<std::string>() + "\"}";
      const auto after = "{\"triage_status\":\"replayed\",\"run_id\":" + std::to_string(run) + "}";
      audit_in(tx, who, "dead_letter.replay", subject, before, after);
      out.push_back(applied("{\"dead_letter_id\":" + std::to_string(id) + ",\"run_id\":" + std::to_string(run) + "}"));
    }
    tx.commit();
    return out;
  });
}

Result<AdminResult> PgAdminStore::triage(const Actor& who, std::int64_t dead_letter, const std::string& status,
                                         const std::optional<std::string>& notes) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        "WITH old AS (SELECT id, triage_status, notes FROM dead_letters WHERE id = $1 FOR UPDATE)"
        " UPDATE dead_letters d SET triage_status = $2, notes = coalesce($3, d.notes), updated_at = now()"
        " FROM old WHERE d.id = old.id RETURNING jsonb_build_object('triage_status', old.triage_status,"
        " 'notes', old.notes)::text, jsonb_build_object('triage_status', d.triage_status, 'notes', d.notes)::text",
        dead_letter, status, notes);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no dead letter " + std::to_string(dead_letter));
    audit_in(tx, who, "dead_letter.triage", "dead_letter:" + std::to_string(dead_letter), rows[0][0].as<std::string>(),
             rows[0][1].as<std::string>());
    tx.commit();
    return applied(rows[0][1].as<std::string>());
  });
}

Result<AdminResult> PgAdminStore::post_event(const Actor& who, const std::string& kind, const std::string& payload_json,
                                             const std::optional<std::string>& dedupe_key) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        "INSERT INTO events (kind, payload, dedupe_key, created_by) VALUES ($1, $2::jsonb, $3, $4)"
        " ON CONFLICT (kind, dedupe_key) DO NOTHING RETURNING id",
        kind, payload_json, dedupe_key, who.name);
    if (rows.empty()) {
      // A dedupe key names one event of one kind and one caller
      // (schemas/0048, security review N3): another caller's is refused.
      auto existing =
          tx.exec_params("SELECT id, created_by FROM events WHERE kind = $1 AND dedupe_key = $2", kind, dedupe_key);
      if (!existing.empty() && existing[0][1].as<std::string>() != who.name)
        return AdminResult{AdminOutcome::conflict, "null",
                           "dedupe_key " + json_quote(dedupe_key.value_or("")) + " of kind " + json_quote(kind) +
                               " was used by another caller (a dedupe key names one event of one caller)"};
      const std::string id = existing.empty() ? "null" : existing[0][0].as<std::string>();
      tx.commit();
      return applied("{\"event_id\":" + id + ",\"created\":false}");
    }
    const std::string id = rows[0][0].as<std::string>();
    boost::json::object details{{"kind", kind}};
    if (dedupe_key) details["dedupe_key"] = *dedupe_key;
    audit_in(tx, who, "event.post", "event:" + id, std::nullopt, boost::json::serialize(details));
    tx.commit();
    return applied("{\"event_id\":" + id + ",\"created\":true}");
  });
}

Result<AdminResult> PgAdminStore::set_job_paused(const Actor& who, const std::string& name, bool paused) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    // The change and its audit record commit together, or neither does.
    auto rows = tx.exec_params(
        "WITH old AS (SELECT id, paused FROM job_definitions WHERE name = $1 AND deleted_at IS NULL FOR UPDATE)"
        " UPDATE job_definitions j SET paused = $2, version = j.version + 1, updated_at = now(),"
        " schedule_resumed_at = CASE WHEN old.paused AND NOT $2 THEN now() ELSE j.schedule_resumed_at END"
        " FROM old WHERE j.id = old.id RETURNING j.version, old.paused",
        name, paused);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no job '" + name + "'");
    audit_in(tx, who, paused ? "job.pause" : "job.resume", "job:" + name,
             std::string("{\"paused\":") + (rows[0][1].as<bool>() ? "true" : "false") + "}",
             std::string("{\"paused\":") + (paused ? "true" : "false") + "}");
    tx.commit();
    return applied(std::string("{\"job\":") + "\"" + name + "\",\"paused\":" + (paused ? "true" : "false") +
                   ",\"version\":" + rows[0][0].as<std::string>() + "}");
  });
}

namespace {

/// The job's row as JSON (for audit before/after and the API's answer).
std::string job_row_json(pqxx::work& tx, const std::string& name) {
  auto rows =
      tx.exec_params(std::string("SELECT ") + job_json + "::text FROM job_definitions j WHERE j.name = $1", name);
  return rows.empty() ? "null" : rows[0][0].as<std::string>();
}

/// Why a job's parameter declarations are unusable (a pattern PostgreSQL
/// cannot compile: patterns are its regular expressions; a default its
/// pattern refuses), or nothing.
std::optional<std::string> parameter_rules_problem(pqxx::work& tx, const store::JobDefinition& j) {
  auto r = tx.exec_params1("SELECT baton_parameter_rules_problem($1::jsonb, $2::jsonb)", j.parameter_rules_json,
                           j.parameters_json);
  if (r[0].is_null()) return std::nullopt;
  return r[0].as<std::string>();
}

}  // namespace

Result<AdminResult> PgAdminStore::create_job(const Actor& who, const JobDefinition& j) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    if (auto problem = parameter_rules_problem(tx, j)) return make_error(Errc::bad_input, *problem);
    // A job made exclusive waits for the run table's writes under way
    // (schemas/0033; its trigger would take the same lock, later, after
    // this job's row: taken first, no finish that retires a job can wait
    // on that row meanwhile).
    if (j.exclusive_execution) tx.exec("LOCK TABLE job_runs IN SHARE MODE");
    // A deleted job's name may be used again: the row comes back to life
    // (its old runs keep pointing at it), with a new version.
    auto rows = tx.exec_params(
        "INSERT INTO job_definitions (name, schedule, time_zone, tasks, max_attempts, priority, timeout_ms,"
        " retry_base_ms, retry_cap_ms, worker_selector, live, misfire_policy, catch_up_limit, starting_deadline_ms,"
        " max_instances, concurrency_policy, exclusive_execution, jitter_ms, on_events, run_after, parameters,"
        " self_destruct, parameter_rules, mutually_exclusive, on_error, concurrency_key, concurrency_limit,"
        " rate_limit_runs, rate_limit_per_ms, rate_limit_by_key)"
        " VALUES ($1, $2, $3, $4::jsonb, $5, $6, nullif($7, 0), $8, $9, $10::jsonb, $11, $12, $13, $14, $15, $16, $17,"
        " $18, $19::text[], $20::text[], $21::jsonb, $22, $23::jsonb, $24, $25, $26, $27, $28, $29, $30)"
        " ON CONFLICT (name) DO UPDATE SET schedule = EXCLUDED.schedule, time_zone = EXCLUDED.time_zone,"
        " tasks = EXCLUDED.tasks, max_attempts = EXCLUDED.max_attempts, priority = EXCLUDED.priority,"
        " timeout_ms = EXCLUDED.timeout_ms, retry_base_ms = EXCLUDED.retry_base_ms,"
        " retry_cap_ms = EXCLUDED.retry_cap_ms, worker_selector = EXCLUDED.worker_selector, live = EXCLUDED.live,"
        " misfire_policy = EXCLUDED.misfire_policy, catch_up_limit = EXCLUDED.catch_up_limit,"
        " starting_deadline_ms = EXCLUDED.starting_deadline_ms, cron_cursor = NULL, schedule_resumed_at = NULL,"
        " max_instances = EXCLUDED.max_instances, concurrency_policy = EXCLUDED.concurrency_policy,"
        " exclusive_execution = EXCLUDED.exclusive_execution, jitter_ms = EXCLUDED.jitter_ms,"
        " on_events = EXCLUDED.on_events, run_after = EXCLUDED.run_after, parameters = EXCLUDED.parameters,"
        " self_destruct = EXCLUDED.self_destruct, parameter_rules = EXCLUDED.parameter_rules,"
        " mutually_exclusive = EXCLUDED.mutually_exclusive, on_error = EXCLUDED.on_error,"
        " concurrency_key = EXCLUDED.concurrency_key, concurrency_limit = EXCLUDED.concurrency_limit,"
        " rate_limit_runs = EXCLUDED.rate_limit_runs, rate_limit_per_ms = EXCLUDED.rate_limit_per_ms,"
        " rate_limit_by_key = EXCLUDED.rate_limit_by_key, paused = false, deleted_at = "
        "NULL, updated_at = now(),"
        " version = job_definitions.version + 1 WHERE job_definitions.deleted_at IS NOT NULL RETURNING id",
        j.name, j.schedule, j.time_zone, j.tasks_json, j.max_attempts, j.priority, j.timeout_ms, j.retry_base_ms,
        j.retry_cap_ms, j.selector_json, j.live, j.misfire_policy, j.catch_up_limit, j.starting_deadline_ms,
        j.max_instances, j.concurrency_policy, j.exclusive_execution, j.jitter_ms, pg_array(j.on_events),
        pg_array(j.run_after), j.parameters_json, j.self_destruct, j.parameter_rules_json, j.mutually_exclusive,
        j.on_error, j.concurrency_key, j.concurrency_limit, j.rate_limit_runs, j.rate_limit_per_ms,
        j.rate_limit_by_key);
    if (rows.empty()) return refused(AdminOutcome::conflict, "job '" + j.name + "' exists", job_row_json(tx, j.name));
    auto after = job_row_json(tx, j.name);
    audit_in(tx, who, "job.create", "job:" + j.name, std::nullopt, after);
    tx.commit();
    return applied(after);
  });
}

Result<AdminResult> PgAdminStore::update_job(const Actor& who, const JobWrite& w) {
  const auto& j = w.job;
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    if (auto problem = parameter_rules_problem(tx, j)) return make_error(Errc::bad_input, *problem);
    // A job made exclusive waits for the run table's writes under way
    // (schemas/0033; its trigger would take the same lock, later, after
    // this job's row: taken first, no finish that retires a job can wait
    // on that row meanwhile).
    if (j.exclusive_execution) tx.exec("LOCK TABLE job_runs IN SHARE MODE");
    auto current =
        tx.exec_params("SELECT version FROM job_definitions WHERE name = $1 AND deleted_at IS NULL FOR UPDATE", j.name);
    if (current.empty()) return refused(AdminOutcome::not_found, "no job '" + j.name + "'");
    const auto version = current[0][0].as<std::int64_t>();
    if (w.expected_version && *w.expected_version != version)
      return refused(AdminOutcome::conflict,
                     "job '" + j.name + "' is at version " + std::to_string(version) + ", not " +
                         std::to_string(*w.expected_version) + ": read it again",
                     job_row_json(tx, j.name));
    auto before = job_row_json(tx, j.name);
    tx.exec_params(
        "UPDATE job_definitions SET schedule = $2, time_zone = $3, tasks = $4::jsonb, max_attempts = $5,"
        " priority = $6, timeout_ms = nullif($7, 0), retry_base_ms = $8, retry_cap_ms = $9,"
        " worker_selector = $10::jsonb, live = $11, misfire_policy = $12, catch_up_limit = $13,"
        " starting_deadline_ms = $14, max_instances = $15, concurrency_policy = $16, exclusive_execution = $17,"
        " jitter_ms = $18, on_events = $19::text[], run_after = $20::text[], parameters = $21::jsonb,"
        " self_destruct = $22, parameter_rules = $23::jsonb, mutually_exclusive = $24, on_error = $25,"
        " concurrency_key = $26, concurrency_limit = $27, rate_limit_runs = $28, rate_limit_per_ms = $29,"
        " rate_limit_by_key = $30,"
        " version = version + 1, updated_at = now(),"
        " schedule_resumed_at = CASE WHEN NOT live AND $11 THEN now() ELSE schedule_resumed_at END"
        " WHERE name = $1",
        j.name, j.schedule, j.time_zone, j.tasks_json, j.max_attempts, j.priority, j.timeout_ms, j.retry_base_ms,
        j.retry_cap_ms, j.selector_json, j.live, j.misfire_policy, j.catch_up_limit, j.starting_deadline_ms,
        j.max_instances, j.concurrency_policy, j.exclusive_execution, j.jitter_ms, pg_array(j.on_events),
        pg_array(j.run_after), j.parameters_json, j.self_destruct, j.parameter_rules_json, j.mutually_exclusive,
        j.on_error, j.concurrency_key, j.concurrency_limit, j.rate_limit_runs, j.rate_limit_per_ms,
        j.rate_limit_by_key);
    auto after = job_row_json(tx, j.name);
    audit_in(tx, who, "job.update", "job:" + j.name, before, after);
    tx.commit();
    return applied(after);
  });
}

Result<AdminResult> PgAdminStore::delete_job(const Actor& who, const std::string& name,
                                             std::optional<std::int64_t> expected_version) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto current =
        tx.exec_params("SELECT version FROM job_definitions WHERE name = $1 AND deleted_at IS NULL FOR UPDATE", name);
    if (current.empty()) return refused(AdminOutcome::not_found, "no job '" + name + "'");
    const auto version = current[0][0].as<std::int64_t>();
    if (expected_version && *expected_version != version)
      return refused(AdminOutcome::conflict,
                     "job '" + name + "' is at version " + std::to_string(version) + ", not " +
                         std::to_string(*expected_version) + ": read it again",
                     job_row_json(tx, name));
    auto before = job_row_json(tx, name);
    tx.exec_params(
        "UPDATE job_definitions SET deleted_at = now(), version = version + 1, updated_at = now() WHERE name = $1",
        name);
    auto after = job_row_json(tx, name);
    audit_in(tx, who, "job.delete", "job:" + name, before, after);
    tx.commit();
    return applied(after);
  });
}

Result<AdminResult> PgAdminStore::set_worker_admin_state(const Actor& who, const std::string& worker,
                                                         const std::string& state) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        "WITH old AS (SELECT worker_id, admin_state FROM workers WHERE worker_id = $1 FOR UPDATE)"
        " UPDATE workers w SET admin_state = $2 FROM old WHERE w.worker_id = old.worker_id"
        " RETURNING old.admin_state",
        worker, state);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no worker '" + worker + "'");
    const auto before = "{\"admin_state\":\"" + rows[0][0].as<std::string>() + "\"}";
    const auto after = "{\"admin_state\":\"" + state + "\"}";
    const char* action = state == "active" ? "worker.resume" : state == "draining" ? "worker.drain" : "worker.evict";
    audit_in(tx, who, action, "worker:" + worker, before, after);
    tx.commit();
    return applied(after);
  });
}

Result<AdminResult> PgAdminStore::set_setting(const Actor& who, const std::string& key, const std::string& value_json) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto before = tx.exec_params("SELECT value::text FROM settings WHERE key = $1 FOR UPDATE", key);
    // null: the key is unset, and means the node config's value again.
    if (value_json == "null")
      tx.exec_params("DELETE FROM settings WHERE key = $1", key);
    else
      tx.exec_params(
          "INSERT INTO settings (key, value, updated_at, updated_by) VALUES ($1, $2::jsonb, now(), $3)"
          " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now(), updated_by = "
          "EXCLUDED.updated_by",
          key, value_json, who.name);
    audit_in(tx, who, "setting.set", "setting:" + key,
             before.empty() ? std::optional<std::string>{} : before[0][0].as<std::string>(), value_json);
    tx.commit();
    return applied(value_json);
  });
}

Result<AdminResult> PgAdminStore::create_token(const Actor& who, const std::string& name, const std::string& role,
                                               const std::string& sha256_hex, std::optional<std::int64_t> ttl_seconds) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        "INSERT INTO api_tokens (name, role, token_sha256, created_by, expires_at)"
        " VALUES ($1, $2, $3, $4, now() + $5::bigint * interval '1 second')"
        " ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING"
        " RETURNING jsonb_build_object('id', id, 'name', name, 'role', role, 'created_at', created_at,"
        " 'expires_at', expires_at)::text",
        name, role, sha256_hex, who.name, ttl_seconds);
    if (rows.empty())
      return refused(AdminOutcome::conflict, "a live token named '" + name + "' exists: revoke it first");
    audit_in(tx, who, "token.create", "token:" + name, std::nullopt, rows[0][0].as<std::string>());
    tx.commit();
    return applied(rows[0][0].as<std::string>());
  });
}

Result<AdminResult> PgAdminStore::revoke_token(const Actor& who, std::int64_t id) {
  return session_.with<AdminResult>([&](pqxx::connection& c) -> Result<AdminResult> {
    pqxx::work tx{c};
    auto rows = tx.exec_params(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1"
        " RETURNING name, jsonb_build_object('id', id, 'name', name, 'role', role, 'revoked_at', revoked_at)::text",
        id);
    if (rows.empty()) return refused(AdminOutcome::not_found, "no token " + std::to_string(id));
    audit_in(tx, who, "token.revoke", "token:" + rows[0][0].as<std::string>(), std::nullopt,
             rows[0][1].as<std::string>());
    tx.commit();
    return applied(rows[0][1].as<std::string>());
  });
}

Result<void> PgAdminStore::audit(const Actor& who, const std::string& action, const std::string& subject,
                                 const std::string& details_json) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    tx.exec_params("INSERT INTO audit_log (actor, action, subject, epoch, details) VALUES ($1, $2, $3, $4, $5::jsonb)",
                   who.name, action, subject, who.epoch.value, details_json);
    tx.commit();
    return {};
  });
}

}  // namespace baton::store::pg
