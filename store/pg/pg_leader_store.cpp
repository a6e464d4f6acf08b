#include "baton/store_pg/pg_leader_store.h"

#include <boost/json.hpp>

#include <map>
#include <tuple>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"
#include "baton/store/output_placement.h"
#include "due_run_row.h"
#include "due_runs_read.h"
#include "pg_array.h"
#include "run_transitions_sql.h"

namespace baton::store::pg {

namespace {

/// Runs listed by id and job name (rows of: id, job name).
std::vector<DueRun> ids_and_job_names(const pqxx::result& rows) {
  std::vector<DueRun> out;
  for (const auto& r : rows) {
    DueRun d;
    d.id = RunId{r[0].as<std::int64_t>()};
    d.job_name = r[1].as<std::string>();
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

PgLeaderStore::PgLeaderStore(const std::string& url, const std::string& application_name)
    : session_(url, application_name) {
  // Prepared once per connection: the dispatcher runs it on every pass.
  session_.on_connect([this](pqxx::connection& c) {
    pqxx::nontransaction prep{c};
    prep.exec(due_runs_statement());
    prep.commit();
  });
}

Result<std::vector<DueRun>> PgLeaderStore::due_runs(int limit, const std::map<std::string, std::string>& labels,
                                                    Millis ahead,
                                                    const std::vector<std::map<std::string, std::string>>& taking) {
  auto object_of = [](const std::map<std::string, std::string>& m) {
    boost::json::object o;
    for (const auto& [k, v] : m) o[k] = v;
    return o;
  };
  const std::string labels_json = boost::json::serialize(object_of(labels));
  boost::json::array taking_array;
  for (const auto& t : taking) taking_array.push_back(object_of(t));
  const std::string taking_json = boost::json::serialize(taking_array);
  return session_.with<std::vector<DueRun>>([&](pqxx::connection& c) -> Result<std::vector<DueRun>> {
    pqxx::nontransaction tx{c};
    // Orphans over their unstarted-assignment budget come too: dispatch
    // fails them.
    // Always the generic plan (the same ordered scan of the open index),
    // for this statement only: in the throughput phase PostgreSQL kept
    // choosing a custom plan, planning 1,814 of 1,835 calls at 0.47 ms each
    // (docs/performance.md, "Reads that grew with the backlog"). SET LOCAL
    // in the same simple query lasts for its implicit transaction, so the
    // other statements of this connection (the cron creates) keep the
    // planner's own choice. No sequential scan either: with one job's runs
    // queued, the generic plan's estimate for "the runs of job $x" is all of
    // them, and it read the whole table to find an exclusive job's one.
    auto rows = tx.exec(std::string(due_runs_settings) + "; EXECUTE due_runs(" + tx.quote(limit) + ", " +
                        tx.quote(labels_json) + ", " + tx.quote(ahead.count()) + ", " + tx.quote(taking_json) + ")");
    std::vector<DueRun> out;
    out.reserve(rows.size());
    for (const auto& r : rows) out.push_back(due_run_of(r));
    settle_starts_in(out, rows);
    return out;
  });
}

Result<std::vector<ActiveRun>> PgLeaderStore::active_runs(Millis continuation_margin) {
  return session_.with<std::vector<ActiveRun>>([&](pqxx::connection& c) -> Result<std::vector<ActiveRun>> {
    // The active runs are found among the unfinished ones (no index holds
    // the state: schemas/0021), through an index over unfinished runs and
    // never by reading the whole table. The planner chose the whole table
    // whenever its statistics were taken during a backlog (then nearly
    // every run was unfinished): after a burst of 20,000 runs, each of
    // these reads read every run, finished or not, 10-20 ms on the loop
    // thread several times a second, until autovacuum analysed the table
    // again; the cron creates behind them fell 5-6 s late (bench, cron after
    // the throughput phase). Read-only; one snapshot as before.
    pqxx::read_transaction tx{c};
    tx.exec("SET LOCAL enable_seqscan = off");
    auto rows = tx.exec_params(
        "SELECT r.id, r.version, r.state, r.attempt, r.max_attempts, coalesce(r.assigned_worker_id, ''),"
        " coalesce(r.lease_token::text, ''), r.leader_epoch, r.continuation_state,"
        " coalesce(r.continuation_deadline_at + $1 * interval '1 millisecond' < now(), false),"
        " coalesce(floor(extract(epoch FROM now() - r.assigned_at) * 1000), 0)::bigint,"
        " coalesce(floor(extract(epoch FROM now() - r.started_at) * 1000), 0)::bigint,"
        " coalesce(r.timeout_ms, j.timeout_ms, 0), coalesce(j.retry_base_ms, 1000), coalesce(j.retry_cap_ms, 3600000),"
        " coalesce(r.continuation_timeout_ms, 0),"
        " floor(extract(epoch FROM r.continuation_deadline_at - now()) * 1000)::bigint,"
        " coalesce(r.worker_instance, ''), r.cancel_reason, coalesce(j.name, ''), r.instance_no,"
        " coalesce(r.exclusive_lock, false),"
        " CASE WHEN r.state = 'ASSIGNED' THEN greatest(0, ceil(extract(epoch FROM greatest(coalesce(r.scheduled_for,"
        " r.created_at), coalesce(r.start_after, '-infinity')) - clock_timestamp()) * 1000))::bigint ELSE 0 END"
        ", coalesce(r.gate @> '(,)'::int8range, false)"
        " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id"
        " WHERE r." +
            unfinished + " AND r.state IN ('ASSIGNED', 'RUNNING') ORDER BY r.id",
        continuation_margin.count());
    std::vector<ActiveRun> out;
    out.reserve(rows.size());
    for (const auto& r : rows) {
      ActiveRun a;
      a.id = RunId{r[0].as<std::int64_t>()};
      a.version = Version{r[1].as<std::int64_t>()};
      a.state = parse_run_state(r[2].as<std::string>()).value_or(RunState::assigned);
      a.attempt = r[3].as<int>();
      a.max_attempts = r[4].as<int>();
      a.worker_id = r[5].as<std::string>();
      a.lease_token = r[6].as<std::string>();
      a.leader_epoch = Epoch{r[7].as<std::int64_t>()};
      a.continuation = r[8].as<std::string>() == "CONFIRMING" ? ContinuationState::confirming : ContinuationState::none;
      a.continuation_expired = r[9].as<bool>();
      a.assigned_age_ms = r[10].as<std::int64_t>();
      a.running_age_ms = r[11].as<std::int64_t>();
      a.timeout_ms = r[12].as<std::int64_t>();
      a.retry_base_ms = r[13].as<std::int64_t>();
      a.retry_cap_ms = r[14].as<std::int64_t>();
      a.continuation_timeout_ms = r[15].as<std::int64_t>();
      if (!r[16].is_null()) a.continuation_remaining_ms = r[16].as<std::int64_t>();
      a.worker_instance = r[17].as<std::string>();
      if (!r[18].is_null()) a.cancel_reason = r[18].as<std::string>();
      a.job_name = r[19].as<std::string>();
      if (!r[20].is_null()) a.instance_no = r[20].as<int>();
      a.exclusive_lock = r[21].as<bool>();
      a.starts_in_ms = r[22].as<std::int64_t>();
      a.exclusive_gate = r[23].as<bool>();
      out.push_back(std::move(a));
    }
    tx.commit();
    return out;
  });
}

Result<HeartbeatBatchResult> PgLeaderStore::heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                                            Millis stale_after) {
  AttemptArrays a;
  std::vector<std::optional<std::string>> progress;
  for (const auto& r : rows) {
    a.add(r.id.value, r.version.value, r.attempt.worker_id, r.attempt.attempt, r.attempt.lease_token);
    progress.push_back(r.progress);
  }
  return session_.with<HeartbeatBatchResult>([&](pqxx::connection& c) -> Result<HeartbeatBatchResult> {
    pqxx::nontransaction tx{c};  // one autocommit statement, like every fenced write
    auto res =
        tx.exec_params(heartbeat_batch_sql(), epoch.value, stale_after.count(), pg_array(a.ids), pg_array(a.versions),
                       pg_array(a.workers), pg_array(a.attempts), pg_array(a.tokens), pg_array(progress));
    HeartbeatBatchResult out;
    for (const auto& r : res) {
      out.current_epoch = Epoch{r[0].as<std::int64_t>()};
      if (!r[1].is_null()) out.applied[r[1].as<std::int64_t>()] = Version{r[2].as<std::int64_t>()};
    }
    return out;
  });
}

Result<CreateResult> PgLeaderStore::create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix,
                                                    bool caught_up, std::int64_t jitter_ms) {
  // One statement: the run, the cursor and the ledger entry commit together
  // and only under the writer's epoch. The cursor moves even when the slot's
  // run already exists (a previous leader created it).
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " job AS (SELECT * FROM job_definitions WHERE name = $2 AND deleted_at IS NULL),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint),"
      // The job's unfinished runs other than this slot's: forbid skips the
      // slot while there are any; replace cancels them (the caller does,
      // through its fenced cancel path) and the new run waits for them,
      // held by the instance limit of 1.
      // Read only for the policies that use it: for any other job the
      // planner, without the job's id at plan time, may judge by the
      // table's statistics that every run is this job's and read them all
      // (after a burst of another job's runs it did, 4-13 ms per create,
      // and a cron phase's 100 creates a second fell behind).
      " busy AS (SELECT r.id FROM job, job_runs r WHERE job.concurrency_policy IN ('forbid', 'replace')"
      "  AND r.job_definition_id = job.id AND r.finished_at IS NULL"
      "  AND r.scheduled_for IS DISTINCT FROM to_timestamp($3::bigint)),"
      " forbid AS (SELECT 1 FROM job WHERE job.concurrency_policy = 'forbid' AND EXISTS (SELECT 1 FROM busy)),"
      " w AS (INSERT INTO job_runs (job_definition_id, max_attempts, priority, trigger_kind, leader_epoch,"
      "  scheduled_for, start_after)"
      "  SELECT job.id, job.max_attempts, job.priority, 'cron', $1::bigint, to_timestamp($3::bigint),"
      "  CASE WHEN $5::bigint > 0 THEN to_timestamp($3::bigint) + $5::bigint * interval '1 millisecond' END"
      "  FROM job, ok WHERE NOT EXISTS (SELECT 1 FROM forbid) ON CONFLICT DO NOTHING"
      "  RETURNING id, job_definition_id),"
      " cur AS (UPDATE job_definitions d SET cron_cursor = greatest(d.cron_cursor, to_timestamp($3::bigint))"
      "  FROM job, ok WHERE d.id = job.id RETURNING 1),"
      " led AS (INSERT INTO decision_ledger (epoch, job_definition_id, slot, decision, reason, run_id, details)"
      "  SELECT $1::bigint, w.job_definition_id, to_timestamp($3::bigint), 'created',"
      "  CASE WHEN $4::boolean THEN 'caught_up' ELSE 'on_time' END, w.id,"
      "  CASE WHEN job.concurrency_policy = 'replace' AND EXISTS (SELECT 1 FROM busy)"
      "  THEN jsonb_build_object('replaces', (SELECT jsonb_agg(id ORDER BY id) FROM busy)) ELSE '{}'::jsonb END"
      "  || CASE WHEN $5::bigint > 0 THEN jsonb_build_object('jitter_ms', $5::bigint) ELSE '{}'::jsonb END"
      "  FROM w, job"
      "  UNION ALL SELECT $1::bigint, job.id, to_timestamp($3::bigint), 'skipped', 'concurrency_forbid', NULL,"
      "  jsonb_build_object('unfinished', (SELECT jsonb_agg(id ORDER BY id) FROM busy))"
      "  FROM job, ok, forbid WHERE NOT EXISTS (SELECT 1 FROM job_runs x WHERE x.job_definition_id = job.id"
      "  AND x.scheduled_for = to_timestamp($3::bigint))"
      "  RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT id FROM w), EXISTS (SELECT 1 FROM job),"
      " EXISTS (SELECT 1 FROM forbid),"
      " CASE WHEN (SELECT concurrency_policy FROM job) = 'replace' AND EXISTS (SELECT 1 FROM w)"
      " THEN (SELECT string_agg(id::text, ',' ORDER BY id) FROM busy) END";
  return session_.with<CreateResult>([&](pqxx::connection& c) -> Result<CreateResult> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, job, slot_unix, caught_up, jitter_ms);
    if (!r[2].as<bool>()) return make_error(Errc::bad_input, "unknown job '" + job + "'");
    CreateResult out = classify_create(r, epoch);
    out.forbidden = out.outcome != WriteOutcome::fenced && r[3].as<bool>();
    if (!r[4].is_null()) {
      const std::string ids = r[4].as<std::string>();
      for (std::size_t at = 0; at < ids.size();) {
        const std::size_t comma = std::min(ids.find(',', at), ids.size());
        out.replaced.push_back(RunId{std::stoll(ids.substr(at, comma - at))});
        at = comma + 1;
      }
    }
    return out;
  });
}

Result<CreateResult> PgLeaderStore::skip_cron_slots(Epoch epoch, const std::string& job,
                                                    const std::vector<SkippedCronSlots>& ranges,
                                                    const std::string& details_json) {
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " job AS (SELECT id FROM job_definitions WHERE name = $2 AND deleted_at IS NULL),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint),"
      " r AS (SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[])"
      "  AS r(first_unix, last_unix, n, at_least, reason)),"
      " led AS (INSERT INTO decision_ledger (epoch, job_definition_id, slot, slot_last, slot_count, decision,"
      "  reason, details)"
      "  SELECT $1::bigint, job.id, to_timestamp(r.first_unix), to_timestamp(r.last_unix), r.n, 'skipped', r.reason,"
      "  $8::jsonb || CASE WHEN r.n IS NULL THEN jsonb_build_object('count_at_least', r.at_least)"
      "  ELSE '{}'::jsonb END"
      "  FROM job, ok, r RETURNING 1),"
      " cur AS (UPDATE job_definitions d SET cron_cursor = greatest(d.cron_cursor,"
      "  (SELECT to_timestamp(max(last_unix)) FROM r)) FROM job, ok WHERE d.id = job.id RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT count(*) FROM led), EXISTS (SELECT 1 FROM job)";
  std::vector<std::int64_t> firsts, lasts, at_least;
  std::vector<std::optional<std::int64_t>> counts;
  std::vector<std::string> reasons;
  for (const auto& r : ranges) {
    firsts.push_back(r.first_unix);
    lasts.push_back(r.last_unix);
    counts.push_back(r.count);
    at_least.push_back(r.count_at_least);
    reasons.push_back(r.reason);
  }
  return session_.with<CreateResult>([&](pqxx::connection& c) -> Result<CreateResult> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, job, pg_array(firsts), pg_array(lasts), pg_array(counts),
                             pg_array(at_least), pg_array(reasons), details_json);
    if (!r[2].as<bool>()) return make_error(Errc::bad_input, "unknown job '" + job + "'");
    CreateResult out;
    out.current_epoch = Epoch{r[0].as<std::int64_t>()};
    out.outcome = out.current_epoch == epoch ? WriteOutcome::applied : WriteOutcome::fenced;
    return out;
  });
}

Result<EventsProcessed> PgLeaderStore::process_events(Epoch epoch, int limit) {
  // Everything in one statement, so the runs and the processed mark commit
  // together: a leader that dies before its commit leaves the events for the
  // next one, and (job, event) is unique, so none is delivered twice.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint),"
      " ev AS (SELECT e.id, e.kind, e.payload FROM events e, ok WHERE e.processed_at IS NULL"
      "  ORDER BY e.id LIMIT $2 FOR UPDATE OF e SKIP LOCKED),"
      " subs AS (SELECT ev.id AS event_id, ev.kind, ev.payload, j.id AS job_id, j.max_attempts, j.priority,"
      "  (ev.kind LIKE 'job.succeeded:%') AS upstream FROM ev JOIN job_definitions j"
      "  ON j.deleted_at IS NULL AND j.live AND NOT j.paused"
      "  AND (ev.kind = ANY (j.on_events) OR (ev.kind LIKE 'job.succeeded:%'"
      "  AND substr(ev.kind, 15) = ANY (j.run_after)))),"
      " w AS (INSERT INTO job_runs (job_definition_id, max_attempts, priority, trigger_kind, leader_epoch, payload,"
      "  event_id)"
      "  SELECT s.job_id, s.max_attempts, s.priority, 'event', $1::bigint,"
      "  CASE WHEN s.upstream THEN jsonb_build_object('upstream_run_id', (s.payload->>'run_id')::bigint,"
      "  'upstream_job', s.payload->>'job', 'event', jsonb_build_object('id', s.event_id, 'kind', s.kind))"
      "  ELSE jsonb_build_object('event', jsonb_build_object('id', s.event_id, 'kind', s.kind,"
      "  'payload', s.payload)) END, s.event_id"
      "  FROM subs s ON CONFLICT DO NOTHING RETURNING id, job_definition_id, event_id),"
      " led AS (INSERT INTO decision_ledger (epoch, job_definition_id, decision, reason, run_id, details)"
      "  SELECT $1::bigint, w.job_definition_id, 'created', 'event', w.id,"
      "  jsonb_build_object('event_id', w.event_id) FROM w RETURNING 1),"
      " done AS (UPDATE events e SET processed_at = now() FROM ev WHERE e.id = ev.id RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT count(*) FROM done), (SELECT count(*) FROM w)";
  return session_.with<EventsProcessed>([&](pqxx::connection& c) -> Result<EventsProcessed> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, limit);
    return EventsProcessed{Epoch{r[0].as<std::int64_t>()}, r[1].as<std::int64_t>(), r[2].as<std::int64_t>()};
  });
}

Result<SubmissionsProcessed> PgLeaderStore::process_submissions(Epoch epoch, int limit,
                                                                const std::vector<std::string>& payload_denylist) {
  // Everything in one statement, like process_events: the runs, their
  // ledger entries and each submission's outcome commit together, and a
  // run remembers its submission (unique), so a leader that dies before its
  // commit leaves the submissions for the next one and none makes two runs.
  // The rules are the API trigger's (trigger_run_sql): the denylist, the
  // job's parameter declarations as for an operate token, the idempotency
  // key's earlier run (unfinished, or finished within the remembered
  // window). The node's denylist is published for baton.trigger to refuse
  // with in the caller's transaction (schemas/0036).
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint),"
      " rules AS (UPDATE submission_rules SET payload_denylist = $3::text[], updated_at = now()"
      "  WHERE id = 1 AND payload_denylist IS DISTINCT FROM $3::text[] AND EXISTS (SELECT 1 FROM ok) RETURNING 1),"
      " sub AS (SELECT s.id, s.job_definition_id, s.job_name, s.parameters, s.idempotency_key, s.run_at,"
      "  s.priority AS asked_priority, s.timeout_ms AS asked_timeout_ms,"
      "  s.submitted_by FROM submissions s, ok WHERE s.processed_at IS NULL ORDER BY s.id LIMIT $2"
      "  FOR UPDATE OF s SKIP LOCKED),"
      " judged AS (SELECT sub.*, j.id AS job_id, j.max_attempts, j.priority,"
      "  CASE WHEN j.id IS NULL THEN 'job ' || quote_literal(sub.job_name) || ' was deleted before the leader took"
      " the submission'"
      "  ELSE coalesce(baton_payload_denied(sub.parameters, $3::text[], 'parameters'),"
      "  baton_parameters_refused(j.parameter_rules, sub.parameters, false),"
      "  baton_trigger_options_refused(j.priority, j.timeout_ms, sub.asked_priority, sub.asked_timeout_ms), " +
      key_refusal("sub.idempotency_key", "j.id", "sub.submitted_by",
                  "CASE WHEN sub.parameters IS NULL THEN '{}'::jsonb"
                  " ELSE jsonb_build_object('parameters', sub.parameters) END") +
      ") END AS why,"
      "  " +
      run_named_by_key("sub.idempotency_key", "j.id") +
      " AS earlier"
      "  FROM sub LEFT JOIN job_definitions j ON j.id = sub.job_definition_id AND j.deleted_at IS NULL),"
      " w AS (INSERT INTO job_runs (job_definition_id, idempotency_key, max_attempts, priority, trigger_kind,"
      "  leader_epoch, payload, start_after, submission_id, timeout_ms, idempotency_owner)"
      "  SELECT g.job_id, g.idempotency_key, g.max_attempts, coalesce(g.asked_priority, g.priority), 'sql', $1::bigint,"
      "  CASE WHEN g.parameters IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('parameters', g.parameters) END,"
      "  g.run_at, g.id, g.asked_timeout_ms, CASE WHEN g.idempotency_key IS NOT NULL THEN g.submitted_by END"
      "  FROM judged g WHERE g.why IS NULL AND g.earlier IS NULL"
      "  ON CONFLICT DO NOTHING RETURNING id, submission_id, job_definition_id, idempotency_key),"
      // Two submissions of one key in a batch: the one inserted names the run.
      " decided AS (SELECT g.id, CASE WHEN g.why IS NOT NULL THEN 'refused' WHEN w.id IS NOT NULL THEN 'created'"
      "  ELSE 'existing' END AS outcome, CASE WHEN g.why IS NULL THEN coalesce(w.id, g.earlier,"
      "  (SELECT w2.id FROM w w2 WHERE w2.idempotency_key = g.idempotency_key"
      "  AND w2.job_definition_id = g.job_id LIMIT 1)) END AS run_id, g.why"
      "  FROM judged g LEFT JOIN w ON w.submission_id = g.id),"
      " done AS (UPDATE submissions s SET processed_at = now(), outcome = d.outcome, run_id = d.run_id,"
      "  refusal = d.why FROM decided d WHERE s.id = d.id AND (d.outcome <> 'existing' OR d.run_id IS NOT NULL)"
      "  RETURNING s.outcome),"
      // No audit entry: the submission row is the record of who asked
      // (submitted_by, submitted_at) and the ledger of what the leader
      // made of it. This statement runs on the leader's loop at every cron
      // pass, and one that named audit_log would hold the loop whenever
      // that table is locked (an operator's export, a long audit query).
      " led AS (INSERT INTO decision_ledger (epoch, job_definition_id, decision, reason, run_id, details)"
      "  SELECT $1::bigint, w.job_definition_id, 'created', 'sql', w.id,"
      "  jsonb_build_object('submission_id', w.submission_id, 'submitted_by', g.submitted_by) FROM w"
      "  JOIN judged g ON g.id = w.submission_id RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT count(*) FROM done), (SELECT count(*) FROM w),"
      " (SELECT count(*) FROM done WHERE outcome = 'refused')";
  return session_.with<SubmissionsProcessed>([&](pqxx::connection& c) -> Result<SubmissionsProcessed> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, limit, pg_array(payload_denylist));
    return SubmissionsProcessed{Epoch{r[0].as<std::int64_t>()}, r[1].as<std::int64_t>(), r[2].as<std::int64_t>(),
                                r[3].as<std::int64_t>()};
  });
}

Result<bool> PgLeaderStore::await_inbox(Millis max) { return session_.await_notification(inbox_channel, max); }

Result<Pruned> PgLeaderStore::prune(Epoch epoch, int batch) {
  // One statement, a bounded batch of each kind, oldest first; the leader
  // calls it again while batches come back full. A run with a cancel or a
  // finish in flight is not final, so only final runs go.
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " ok AS (SELECT 1 WHERE (SELECT epoch FROM fence) = $1::bigint),"
      " cutoff AS (SELECT now() - coalesce((SELECT (value #>> '{}')::int FROM settings"
      "  WHERE key = 'retention_days' AND jsonb_typeof(value) = 'number'), 30) * interval '1 day' AS at),"
      " old_runs AS (SELECT r.id FROM job_runs r, ok WHERE r.finished_at < (SELECT at FROM cutoff)"
      "  AND r.finished_at IS NOT NULL ORDER BY r.finished_at LIMIT $2),"
      " t AS (DELETE FROM job_run_transitions_log WHERE run_id IN (SELECT id FROM old_runs) RETURNING 1),"
      " l AS (DELETE FROM run_logs WHERE run_id IN (SELECT id FROM old_runs) RETURNING 1),"
      " r AS (DELETE FROM job_runs WHERE id IN (SELECT id FROM old_runs) RETURNING 1),"
      " d AS (DELETE FROM decision_ledger WHERE id IN (SELECT id FROM decision_ledger, ok"
      "  WHERE at < (SELECT at FROM cutoff) ORDER BY at LIMIT $2) RETURNING 1),"
      " e AS (DELETE FROM events WHERE id IN (SELECT id FROM events, ok"
      "  WHERE processed_at < (SELECT at FROM cutoff) ORDER BY processed_at LIMIT $2) RETURNING 1),"
      " x AS (DELETE FROM dead_letters WHERE id IN (SELECT id FROM dead_letters, ok"
      "  WHERE triage_status IN ('closed', 'replayed') AND updated_at < (SELECT at FROM cutoff)"
      "  ORDER BY updated_at LIMIT $2) RETURNING 1),"
      // Rate permits expired a day ago (schemas/0035): the rows of keys no
      // longer seen. An expired permit limits nothing, so deleting one
      // frees nothing that was held.
      " p AS (DELETE FROM rate_permits WHERE (job_definition_id, rate_key, slot) IN (SELECT job_definition_id,"
      "  rate_key, slot FROM rate_permits, ok WHERE until < now() - interval '1 day' ORDER BY until LIMIT $2)"
      "  RETURNING 1),"
      // A submission of a run still ahead stays until its time: a
      // submitter's budget of runs scheduled ahead counts them (schemas/0050).
      " s AS (DELETE FROM submissions WHERE id IN (SELECT id FROM submissions, ok"
      "  WHERE processed_at < (SELECT at FROM cutoff) AND (run_at IS NULL OR run_at < now())"
      "  ORDER BY processed_at LIMIT $2) RETURNING 1),"
      // Webhook deliveries that ended (delivered or given up, schemas/0038).
      " wd AS (DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries, ok"
      "  WHERE finished_at < (SELECT at FROM cutoff) ORDER BY finished_at LIMIT $2) RETURNING 1),"
      // Receipts (schemas/0042): the oldest links of each chain, a prefix
      // (a chain's links are created in its order), and where each chain
      // now starts, so that its first link kept still follows something.
      " rl AS (DELETE FROM receipt_links WHERE (epoch, lane, seq) IN (SELECT k.epoch, k.lane, k.seq"
      "  FROM receipt_links k, ok WHERE k.created_at < (SELECT at FROM cutoff)"
      "  ORDER BY k.created_at, k.epoch, k.lane, k.seq LIMIT $2) RETURNING epoch, lane, seq, hash),"
      " ra AS (INSERT INTO receipt_anchors AS a (epoch, lane, seq, hash) SELECT DISTINCT ON (epoch, lane)"
      "  epoch, lane, seq, hash FROM rl ORDER BY epoch, lane, seq DESC ON CONFLICT (epoch, lane) DO UPDATE"
      "  SET seq = EXCLUDED.seq, hash = EXCLUDED.hash WHERE a.seq < EXCLUDED.seq RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT count(*) FROM r), (SELECT count(*) FROM d),"
      " (SELECT count(*) FROM e), (SELECT count(*) FROM x), (SELECT count(*) FROM s), (SELECT count(*) FROM wd)";
  return session_.with<Pruned>([&](pqxx::connection& c) -> Result<Pruned> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, batch);
    return Pruned{Epoch{r[0].as<std::int64_t>()}, r[1].as<std::int64_t>(), r[2].as<std::int64_t>(),
                  r[3].as<std::int64_t>(),        r[4].as<std::int64_t>(), r[5].as<std::int64_t>(),
                  r[6].as<std::int64_t>()};
  });
}

Result<CreateResult> PgLeaderStore::record_decision(Epoch epoch, RunId run, const std::string& decision,
                                                    const std::string& reason, const std::string& details_json) {
  static const std::string sql =
      "WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),"
      " led AS (INSERT INTO decision_ledger (epoch, job_definition_id, slot, decision, reason, run_id, details)"
      "  SELECT $1::bigint, r.job_definition_id, r.scheduled_for, $3, $4, r.id, $5::jsonb FROM job_runs r"
      "  WHERE r.id = $2 AND (SELECT epoch FROM fence) = $1::bigint RETURNING 1)"
      " SELECT (SELECT epoch FROM fence), (SELECT count(*) FROM led)";
  return session_.with<CreateResult>([&](pqxx::connection& c) -> Result<CreateResult> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_params1(sql, epoch.value, run.value, decision, reason, details_json);
    CreateResult out;
    out.current_epoch = Epoch{r[0].as<std::int64_t>()};
    out.outcome = out.current_epoch != epoch    ? WriteOutcome::fenced
                  : r[1].as<std::int64_t>() > 0 ? WriteOutcome::applied
                                                : WriteOutcome::conflict;
    out.run = run;
    return out;
  });
}

Result<void> PgLeaderStore::record_fenced_out(Epoch epoch, const std::string& node_id,
                                              const std::vector<FencedOut>& refused) {
  // One entry per run a refused write named (its job and slot from the run),
  // one per write of no run; all in one statement.
  static const std::string sql =
      "INSERT INTO decision_ledger (epoch, job_definition_id, slot, decision, reason, run_id, details)"
      " SELECT $1::bigint, r.job_definition_id, r.scheduled_for, 'fenced_out', w.op, w.run,"
      "  jsonb_build_object('current_epoch', w.current_epoch, 'node', $2::text)"
      "  || CASE WHEN w.subject <> '' THEN jsonb_build_object('subject', w.subject) ELSE '{}'::jsonb END"
      " FROM unnest($3::text[], $4::bigint[], $5::text[], $6::bigint[]) AS w(op, run, subject, current_epoch)"
      " LEFT JOIN job_runs r ON r.id = w.run";
  std::vector<std::string> ops, subjects;
  std::vector<std::optional<std::int64_t>> runs;
  std::vector<std::int64_t> epochs;
  for (const auto& f : refused) {
    auto add = [&](std::optional<std::int64_t> run) {
      ops.push_back(f.op);
      runs.push_back(run);
      subjects.push_back(f.subject);
      epochs.push_back(f.current_epoch.value);
    };
    if (f.runs.empty()) add(std::nullopt);
    for (RunId run : f.runs) add(run.value);
  }
  if (ops.empty()) return {};
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::nontransaction tx{c};
    tx.exec_params(sql, epoch.value, node_id, pg_array(ops), pg_array(runs), pg_array(subjects), pg_array(epochs));
    return {};
  });
}

Result<void> PgLeaderStore::worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                                            const std::string& node_id, Epoch epoch) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    tx.exec_params(
        "INSERT INTO workers (worker_id, labels, capacity, attached_node_id, attached_epoch, state,"
        " last_heartbeat_at, attached_at) VALUES ($1, $2::jsonb, $3, $4, $5, 'ATTACHED', now(), now())"
        " ON CONFLICT (worker_id) DO UPDATE SET labels = EXCLUDED.labels, capacity = EXCLUDED.capacity,"
        " attached_node_id = EXCLUDED.attached_node_id, attached_epoch = EXCLUDED.attached_epoch,"
        " state = 'ATTACHED', last_heartbeat_at = now(), attached_at = now()",
        worker_id, labels_json, capacity, node_id, epoch.value);
    tx.commit();
    return {};
  });
}

Result<void> PgLeaderStore::worker_detached(const std::string& worker_id, const std::string& node_id, Epoch epoch) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    tx.exec_params(
        "UPDATE workers SET state = 'DETACHED', detached_at = now() WHERE worker_id = $1 AND attached_node_id = $2"
        " AND attached_epoch = $3",
        worker_id, node_id, epoch.value);
    tx.commit();
    return {};
  });
}

Result<void> PgLeaderStore::workers_seen(const std::vector<std::string>& worker_ids) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::nontransaction tx{c};
    tx.exec_params(
        "UPDATE workers SET last_heartbeat_at = now() WHERE worker_id = ANY($1::text[]) AND state = 'ATTACHED'",
        pg_array(worker_ids));
    return {};
  });
}

Result<void> PgLeaderStore::append_run_log(RunId run, int attempt, const std::string& stream,
                                           const std::string& chunk) {
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    tx.exec_params("INSERT INTO run_logs (run_id, attempt, stream, chunk) VALUES ($1, $2, $3, $4)", run.value, attempt,
                   stream, chunk);
    tx.commit();
    return {};
  });
}

Result<void> PgLeaderStore::append_run_output(const std::vector<OutputChunk>& chunks,
                                              std::int64_t db_bytes_per_stream) {
  if (chunks.empty()) return {};
  using Key = std::tuple<std::int64_t, int, std::string>;
  std::map<Key, std::int64_t> have;
  std::vector<std::int64_t> key_runs;
  std::vector<int> key_attempts;
  std::vector<std::string> key_streams;
  for (const auto& c : chunks)
    if (have.emplace(Key{c.run.value, c.attempt, c.stream}, 0).second) {
      key_runs.push_back(c.run.value);
      key_attempts.push_back(c.attempt);
      key_streams.push_back(c.stream);
    }
  return session_.with<void>([&](pqxx::connection& c) -> Result<void> {
    pqxx::work tx{c};
    // One writer per stream at a time (the leader's loop): the read and the
    // insert need no lock against each other.
    for (const auto& row :
         tx.exec_params("SELECT l.run_id, l.attempt, l.stream, max(l.end_offset) FROM run_logs l"
                        " JOIN unnest($1::bigint[], $2::int[], $3::text[]) AS k(run_id, attempt, stream)"
                        " ON l.run_id = k.run_id AND l.attempt = k.attempt AND l.stream = k.stream"
                        " WHERE l.end_offset IS NOT NULL GROUP BY 1, 2, 3",
                        pg_array(key_runs), pg_array(key_attempts), pg_array(key_streams)))
      have[Key{row[0].as<std::int64_t>(), row[1].as<int>(), row[2].as<std::string>()}] = row[3].as<std::int64_t>();
    std::vector<std::int64_t> runs;
    std::vector<int> attempts;
    std::vector<std::string> streams, texts;
    std::vector<std::optional<std::int64_t>> starts, ends;
    for (const auto& chunk : chunks) {
      std::int64_t& end = have[Key{chunk.run.value, chunk.attempt, chunk.stream}];
      for (auto& r : place_output(end, chunk, db_bytes_per_stream)) {
        if (r.end_offset) end = std::max(end, *r.end_offset);
        runs.push_back(chunk.run.value);
        attempts.push_back(chunk.attempt);
        streams.push_back(chunk.stream);
        texts.push_back(std::move(r.text));
        starts.push_back(r.start_offset);
        ends.push_back(r.end_offset);
      }
    }
    if (runs.empty()) return {};
    tx.exec_params(
        "INSERT INTO run_logs (run_id, attempt, stream, chunk, start_offset, end_offset)"
        " SELECT run_id, attempt, stream, chunk, start_offset, end_offset"
        " FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])"
        " WITH ORDINALITY AS r(run_id, attempt, stream, chunk, start_offset, end_offset, n) ORDER BY n",
        pg_array(runs), pg_array(attempts), pg_array(streams), pg_array(texts), pg_array(starts), pg_array(ends));
    tx.commit();
    return {};
  });
}

Result<std::vector<ScheduledJob>> PgLeaderStore::scheduled_jobs() {
  return session_.with<std::vector<ScheduledJob>>([&](pqxx::connection& c) -> Result<std::vector<ScheduledJob>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec(
        "SELECT j.id, j.name, j.schedule, j.time_zone, j.misfire_policy,"
        " floor(extract(epoch FROM j.cron_cursor))::bigint,"
        " floor(extract(epoch FROM now()))::bigint, floor(extract(epoch FROM now()) * 1000)::bigint,"
        " j.catch_up_limit, j.starting_deadline_ms, floor(extract(epoch FROM j.schedule_resumed_at))::bigint,"
        " j.jitter_ms"
        " FROM job_definitions j WHERE j.schedule IS NOT NULL AND j.live AND NOT j.paused AND j.deleted_at IS NULL"
        " ORDER BY j.id");
    std::vector<ScheduledJob> out;
    for (const auto& r : rows) {
      ScheduledJob s;
      s.id = r[0].as<std::int64_t>();
      s.name = r[1].as<std::string>();
      s.schedule = r[2].as<std::string>();
      s.time_zone = r[3].as<std::string>();
      s.misfire_policy = r[4].as<std::string>();
      if (!r[5].is_null()) s.last_slot_unix = r[5].as<std::int64_t>();
      s.now_unix = r[6].as<std::int64_t>();
      s.now_unix_ms = r[7].as<std::int64_t>();
      s.catch_up_limit = r[8].as<int>();
      if (!r[9].is_null()) s.starting_deadline_ms = r[9].as<std::int64_t>();
      if (!r[10].is_null()) s.resumed_at_unix = r[10].as<std::int64_t>();
      s.jitter_ms = r[11].as<std::int64_t>();
      out.push_back(std::move(s));
    }
    return out;
  });
}

Result<std::vector<DueRun>> PgLeaderStore::unmatched_runs(
    const std::vector<std::map<std::string, std::string>>& label_sets, int limit) {
  std::vector<std::string> sets;
  for (const auto& labels : label_sets) {
    boost::json::object o;
    for (const auto& [k, v] : labels) o[k] = v;
    sets.push_back(boost::json::serialize(o));
  }
  return session_.with<std::vector<DueRun>>([&](pqxx::connection& c) -> Result<std::vector<DueRun>> {
    pqxx::nontransaction tx{c};
    // The jobs no attached label set satisfies first, then their waiting
    // runs through the index over each job's unfinished runs. As one
    // statement, ordered by run id, the planner walked the primary key
    // through every unfinished run and joined each to its job: 65 ms a call
    // with 80,000 runs queued, every few seconds, even when no job had a
    // selector (docs/performance.md, "Reads that grew with the backlog").
    auto jobs = tx.exec_params(
        "SELECT coalesce(array_agg(j.id), '{}') FROM job_definitions j WHERE j.worker_selector <> '{}'::jsonb"
        " AND NOT EXISTS (SELECT 1 FROM unnest($1::jsonb[]) AS l(labels) WHERE j.worker_selector <@ l.labels)",
        pg_array(sets));
    const std::string unfit = jobs[0][0].as<std::string>();
    if (unfit == "{}") return std::vector<DueRun>{};
    auto rows = tx.exec_params(
        "SELECT r.id, j.name FROM job_runs r JOIN job_definitions j ON j.id = r.job_definition_id"
        " WHERE r.job_definition_id = ANY($1::bigint[]) AND r." +
            unfinished +
            " AND r.state IN ('PENDING', 'RETRY_WAITING', 'ORPHANED')"
            " ORDER BY r.id LIMIT $2",
        unfit, limit);
    return ids_and_job_names(rows);
  });
}

Result<std::vector<DueRun>> PgLeaderStore::waiting_runs(int limit) {
  return session_.with<std::vector<DueRun>>([&](pqxx::connection& c) -> Result<std::vector<DueRun>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_params(
        "SELECT w.id, coalesce(j.name, '') FROM (SELECT r.id, r.job_definition_id FROM job_runs r WHERE " +
            due("r", "now()") +
            ") AS w LEFT JOIN job_definitions j ON j.id = w.job_definition_id ORDER BY w.id LIMIT $1",
        limit);
    return ids_and_job_names(rows);
  });
}

Result<std::vector<DueRun>> PgLeaderStore::key_waiting_runs(int limit) {
  return session_.with<std::vector<DueRun>>([&](pqxx::connection& c) -> Result<std::vector<DueRun>> {
    pqxx::nontransaction tx{c};
    // The keyed jobs first (none: no run is read), then their unfinished
    // runs through the unfinished runs' job index.
    auto rows = tx.exec_params(
        "SELECT " + due_run_columns() + " FROM job_definitions j JOIN job_runs r ON r.job_definition_id = j.id AND " +
            due("r", "now()") +
            " WHERE j.deleted_at IS NULL AND (j.concurrency_limit IS NOT NULL OR j.rate_limit_runs IS NOT NULL)"
            " AND NOT (" +
            keyed_room_sql() + ") ORDER BY r.id LIMIT $1",
        limit);
    std::vector<DueRun> out;
    for (const auto& r : rows) out.push_back(due_run_of(r));
    return out;
  });
}

Result<Controls> PgLeaderStore::read_controls() {
  return session_.with<Controls>([&](pqxx::connection& c) -> Result<Controls> {
    pqxx::nontransaction tx{c};
    // One round trip: the settings (an array's elements one row each) and
    // the held workers.
    auto rows = tx.exec(
        "SELECT true, s.key, CASE WHEN jsonb_typeof(s.value) = 'array' THEN e.v ELSE s.value #>> '{}' END"
        " FROM settings s LEFT JOIN LATERAL jsonb_array_elements_text("
        "   CASE WHEN jsonb_typeof(s.value) = 'array' THEN s.value END) AS e(v) ON true"
        " UNION ALL SELECT false, worker_id, admin_state FROM workers WHERE admin_state <> 'active'");
    Controls out;
    for (const auto& r : rows) {
      if (r[0].as<bool>()) {
        auto& values = out.settings[r[1].as<std::string>()];
        if (!r[2].is_null()) values.push_back(r[2].as<std::string>());
      } else {
        out.worker_holds[r[1].as<std::string>()] = r[2].as<std::string>();
      }
    }
    // A missing or non-boolean dispatch_enabled means enabled: dispatch is
    // never stopped by accident.
    auto d = out.settings.find("dispatch_enabled");
    out.dispatch_enabled = !(d != out.settings.end() && d->second == std::vector<std::string>{"false"});
    return out;
  });
}

}  // namespace baton::store::pg
