// The admin store: the runs (reads, triggers, reruns, replays, triage), events,
// audit, settings, tokens and workers' admin state. The jobs are in
// pg_admin_jobs.cpp, the cluster's registry in pg_admin_cluster.cpp.
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

/// How long a run has run: from its start to its end, or to now while it
/// runs; NULL before it starts.
constexpr const char* run_duration_ms =
    "CASE WHEN r.started_at IS NULL THEN NULL ELSE round(extract(epoch FROM coalesce(r.finished_at,"
    " clock_timestamp()) - r.started_at) * 1000)::bigint END";

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
        " 'started_at', r.started_at, 'finished_at', r.finished_at, 'duration_ms', " +
            std::string(run_duration_ms) +
            ", 'result', r.result,"
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
  static const std::string sql =
      "SELECT r.id::text, jsonb_build_object('id', r.id, 'job', j.name, 'state', r.state, 'attempt', r.attempt,"
      " 'max_attempts', r.max_attempts, 'worker_id', r.assigned_worker_id, 'leader_epoch', r.leader_epoch,"
      " 'continuation_state', r.continuation_state, 'idempotency_key', r.idempotency_key,"
      " 'trigger_kind', r.trigger_kind, 'scheduled_for', r.scheduled_for, 'created_at', r.created_at,"
      " 'started_at', r.started_at, 'finished_at', r.finished_at, 'error_code', r.error_code,"
      " 'duration_ms', " +
      std::string(run_duration_ms) +
      ", 'error_msg', left(r.error_msg, 200))::text"
      " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id"
      " WHERE ($1::text IS NULL OR j.name = $1) AND ($2::text IS NULL OR r.state = $2)"
      "   AND ($3::text IS NULL OR r.assigned_worker_id = $3) AND ($4::text IS NULL OR r.idempotency_key = $4)"
      "   AND ($5::bigint IS NULL OR r.created_at >= to_timestamp($5))"
      "   AND ($6::bigint IS NULL OR r.created_at < to_timestamp($6))"
      "   AND ($7::bigint IS NULL OR r.id < $7)"
      "   AND ($8::text IS NULL OR strpos(lower(coalesce(r.error_code, '') || ' ' || coalesce(r.error_msg, '')),"
      "     lower($8)) > 0)"
      " ORDER BY r.id DESC LIMIT $9";
  return page_query(session_, sql.c_str(), q.limit, q.job, q.state, q.worker, q.idempotency_key, q.created_after_unix,
                    q.created_before_unix, q.before_id, q.error_text);
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

// Below this many runs a batch is not a bulk load: no catalog read, no
// ANALYZE (the function checks again, with the table's size).
constexpr std::size_t bulk_load_runs = 100;

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
    // One statement: every run and its audit entry, or nothing. A batch of
    // bulk_load_runs or more runs in a transaction that may also analyze
    // the run table before its runs are seen (schemas/0054; SPEC 10.11).
    std::optional<pqxx::work> bulk;
    std::optional<pqxx::nontransaction> single;
    pqxx::transaction_base& tx =
        items.size() >= bulk_load_runs ? static_cast<pqxx::transaction_base&>(bulk.emplace(c)) : single.emplace(c);
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
    if (bulk) {
      std::int64_t created = 0;
      for (const auto& item : out.items) created += item.created ? 1 : 0;
      if (out.applied) tx.exec_params("SELECT baton_analyze_after_bulk_load($1)", created);
      bulk->commit();
    }
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
