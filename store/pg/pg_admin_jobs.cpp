// The admin store's jobs: their definitions as the API shows them (a list,
// one, its slot decisions and statistics) and their writes (create, update,
// pause, delete), each with its audit record in its own transaction.
#include <boost/json.hpp>

#include "admin_sql.h"
#include "baton/base/json_text.h"
#include "baton/store_pg/pg_admin_store.h"
#include "pg_array.h"

namespace baton::store::pg {

namespace {

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

/// Runs `sql` with a job definition's columns bound as $1-$30, in the one
/// order create_job's INSERT and update_job's UPDATE name them.
pqxx::result exec_with_job(pqxx::work& tx, const std::string& sql, const store::JobDefinition& j) {
  return tx.exec_params(sql, j.name, j.schedule, j.time_zone, j.tasks_json, j.max_attempts, j.priority, j.timeout_ms,
                        j.retry_base_ms, j.retry_cap_ms, j.selector_json, j.live, j.misfire_policy, j.catch_up_limit,
                        j.starting_deadline_ms, j.max_instances, j.concurrency_policy, j.exclusive_execution,
                        j.jitter_ms, pg_array(j.on_events), pg_array(j.run_after), j.parameters_json, j.self_destruct,
                        j.parameter_rules_json, j.mutually_exclusive, j.on_error, j.concurrency_key,
                        j.concurrency_limit, j.rate_limit_runs, j.rate_limit_per_ms, j.rate_limit_by_key);
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
    auto rows = exec_with_job(
        tx,
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
        j);
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
    exec_with_job(
        tx,
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
        j);
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

}  // namespace baton::store::pg
