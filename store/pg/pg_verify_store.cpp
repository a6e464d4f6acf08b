// The history checker's reads and records on PostgreSQL (schemas/0040,
// docs/assurance.md). A slice is read in one repeatable-read, read-only
// snapshot: the runs that finished after the cursor, in (finished_at, id)
// order through job_runs_finished_idx, each with its writes, attempts, dead
// letter, ledger entries and event; and, as context only, the runs that can
// tell something about them (the same slot, key or event; the runs of the
// jobs they constrain that ended while one of them ran; the runs assigned
// to a worker now). Every read is by primary key or an existing index: the
// sweep adds no index to the run table, so no write pays for it.
#include <boost/json.hpp>

#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_verify_store.h"
#include "pg_array.h"

namespace baton::store::pg {

namespace {

/// A cursor's time as a timestamptz expression over integer microseconds
/// (exact: no float between the database and the cursor); 0 is the start.
std::string at_us(const std::string& param) {
  return "(CASE WHEN " + param + "::bigint = 0 THEN '-infinity'::timestamptz ELSE 'epoch'::timestamptz + " + param +
         "::bigint * interval '1 microsecond' END)";
}
/// A timestamptz as integer unix microseconds (extract is exact numeric).
std::string us_of(const std::string& column) { return "(extract(epoch FROM " + column + ") * 1000000)::bigint"; }

/// How far back the runs of a slice's constrained jobs are read as context
/// (bounded: a slice whose runs ran for hours on a busy cluster would
/// otherwise read every run that ended meanwhile; those left out are
/// counted in the slice and the report).
constexpr int context_lookback_max = 20000;

template <class T>
std::optional<T> opt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<T>();
}

}  // namespace

PgVerifyStore::PgVerifyStore(const std::string& url, const std::string& application_name)
    : session_(url, application_name) {}

Result<VerifyCursor> PgVerifyStore::verify_cursor() {
  return session_.with<VerifyCursor>([&](pqxx::connection& c) -> Result<VerifyCursor> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec1("SELECT CASE WHEN finished_at = '-infinity' THEN 0 ELSE " + us_of("finished_at") +
                      " END, run_id FROM verify_cursor WHERE id = 1");
    return VerifyCursor{r[0].as<std::int64_t>(), r[1].as<std::int64_t>()};
  });
}

Result<RecordedSlice> PgVerifyStore::recorded_slice(const VerifyCursor& after, Millis settle, int limit) {
  return session_.with<RecordedSlice>([&](pqxx::connection& c) -> Result<RecordedSlice> {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    RecordedSlice out;
    checker::History& h = out.history;
    auto head = tx.exec1("SELECT " + us_of("now()") + ", current_setting('track_commit_timestamp') = 'on'");
    h.taken_us = head[0].as<std::int64_t>();
    out.commit_timestamps = head[1].as<bool>();
    out.next = after;

    // The slice: finished after the cursor, and at least `settle` ago.
    std::vector<std::int64_t> slice;
    std::int64_t min_start_us = 0;
    for (const auto& r :
         tx.exec_params("SELECT id, " + us_of("finished_at") + ", " + us_of("started_at") +
                            " FROM job_runs WHERE finished_at IS NOT NULL AND finished_at >= " + at_us("$1") +
                            " AND (finished_at > " + at_us("$1") + " OR id > $2)" +
                            " AND finished_at <= now() - $3::bigint * interval '1 millisecond'"
                            " ORDER BY finished_at, id LIMIT $4",
                        after.finished_us, after.run, static_cast<std::int64_t>(settle.count()), limit)) {
      slice.push_back(r[0].as<std::int64_t>());
      out.next = VerifyCursor{r[1].as<std::int64_t>(), r[0].as<std::int64_t>()};
      if (!r[2].is_null()) {
        const auto s = r[2].as<std::int64_t>();
        min_start_us = min_start_us == 0 ? s : std::min(min_start_us, s);
      }
    }
    out.runs = static_cast<std::int64_t>(slice.size());
    out.full = out.runs == limit;
    const std::string ids = pg_array(slice);

    // Context: the runs that share a slot, an idempotency key (within the
    // window it is remembered) or an event with a run of the slice; the
    // runs assigned to a worker now.
    std::set<std::int64_t> context;
    for (const auto& r : tx.exec_params(
             "WITH s AS (SELECT * FROM job_runs WHERE id = ANY($1::bigint[]))"
             " SELECT r.id FROM s JOIN job_runs r ON r.job_definition_id = s.job_definition_id"
             "  AND r.scheduled_for = s.scheduled_for WHERE s.scheduled_for IS NOT NULL"
             " UNION SELECT r.id FROM s JOIN job_runs r ON r.idempotency_key = s.idempotency_key"
             "  WHERE s.idempotency_key IS NOT NULL AND r.created_at BETWEEN s.created_at - interval '24 hours'"
             "  AND s.created_at + interval '24 hours'"
             " UNION SELECT r.id FROM s JOIN job_runs r ON r.job_definition_id = s.job_definition_id"
             "  AND r.event_id = s.event_id WHERE s.event_id IS NOT NULL"
             " UNION SELECT r.id FROM workers w JOIN job_runs r ON r.assigned_worker_id = w.worker_id"
             "  AND r.state IN ('ASSIGNED', 'RUNNING')",
             ids))
      context.insert(r[0].as<std::int64_t>());
    // The runs that ended while one of the slice ran, before the slice
    // (the slice's own and later ones are judged with it or later): of its
    // jobs, and of every job whose executions exclude others'. Two runs
    // that overlapped are so seen together in the slice of the later one.
    if (!slice.empty() && min_start_us > 0) {
      auto rows = tx.exec_params(
          "SELECT r.id FROM job_runs r WHERE r.finished_at >= 'epoch'::timestamptz + $2::bigint * interval '1 "
          "microsecond' AND r.finished_at <= " +
              at_us("$3") +
              " AND r.started_at IS NOT NULL AND (r.job_definition_id IN (SELECT job_definition_id FROM job_runs"
              "  WHERE id = ANY($1::bigint[])) OR r.job_definition_id IN (SELECT id FROM job_definitions"
              "  WHERE exclusive_execution OR mutually_exclusive) OR EXISTS (SELECT 1 FROM job_runs s"
              "  JOIN job_definitions j ON j.id = s.job_definition_id WHERE s.id = ANY($1::bigint[])"
              "  AND j.exclusive_execution)) ORDER BY r.finished_at DESC LIMIT $4",
          ids, min_start_us, after.finished_us, context_lookback_max + 1);
      for (std::size_t i = 0; i < rows.size() && i < static_cast<std::size_t>(context_lookback_max); ++i)
        context.insert(rows[i][0].as<std::int64_t>());
      if (rows.size() > static_cast<std::size_t>(context_lookback_max)) out.context_truncated = 1;
    }
    for (std::int64_t id : slice) context.erase(id);
    h.context_runs = context;
    std::vector<std::int64_t> all = slice;
    all.insert(all.end(), context.begin(), context.end());
    const std::string all_ids = pg_array(all);

    // The runs, as the chaos export reads them (chaos-tests/export-history.sh),
    // and their state now (running_has_owner).
    std::set<std::int64_t> event_ids;
    for (const auto& r : tx.exec_params(
             "SELECT r.id, coalesce(j.name, ''), r.state, coalesce(r.idempotency_key, ''), coalesce(r.error_code, ''),"
             " r.attempt, r.max_attempts, coalesce(floor(extract(epoch FROM r.scheduled_for))::bigint, 0), " +
                 us_of("r.created_at") +
                 ", coalesce(r.event_id, 0), coalesce(r.concurrency_key, ''),"
                 " coalesce(r.assigned_worker_id, ''), r.continuation_state, " +
                 us_of("r.continuation_deadline_at") +
                 " FROM job_runs r LEFT JOIN job_definitions j ON j.id = r.job_definition_id"
                 " WHERE r.id = ANY($1::bigint[])",
             all_ids)) {
      checker::RunRow run;
      run.id = r[0].as<std::int64_t>();
      run.job = r[1].as<std::string>();
      run.state = r[2].as<std::string>();
      run.key = r[3].as<std::string>();
      run.error_code = r[4].as<std::string>();
      run.attempt = r[5].as<int>();
      run.max_attempts = r[6].as<int>();
      run.slot = r[7].as<std::int64_t>();
      run.created_us = r[8].as<std::int64_t>();
      run.event_id = r[9].as<std::int64_t>();
      run.concurrency_key = r[10].as<std::string>();
      run.worker = r[11].as<std::string>();
      run.continuation = r[12].as<std::string>();
      run.continuation_deadline_us = opt<std::int64_t>(r[13]);
      if (run.event_id > 0) event_ids.insert(run.event_id);
      if (!h.context_runs.count(run.id) && !run.key.empty()) h.accepted_keys.push_back(run.key);
      h.runs[run.id] = std::move(run);
    }

    // The slice's writes (the history in each run's row, schemas/0022). A
    // write's commit time from its transaction id when the database keeps
    // them (track_commit_timestamp), else its own clock reading.
    const std::string commit =
        out.commit_timestamps
            ? "coalesce(" + us_of("pg_xact_commit_timestamp((xid % 4294967296)::text::xid)") + ", " + us_of("at") + ")"
            : us_of("at");
    std::int64_t approximated = 0;
    for (const auto& r : tx.exec_params(
             "SELECT coalesce(id, 0), run_id, coalesce(from_state, ''), to_state, from_version, to_version, attempt,"
             " leader_epoch, continuation_state, " +
                 commit + ", continuation_timeout_ms, " +
                 (out.commit_timestamps ? "pg_xact_commit_timestamp((xid % 4294967296)::text::xid) IS NULL" : "false") +
                 " FROM job_run_transitions WHERE run_id = ANY($1::bigint[]) ORDER BY run_id, to_version, id",
             ids)) {
      checker::TransitionRow t;
      t.id = r[0].as<std::int64_t>();
      t.run = r[1].as<std::int64_t>();
      t.from = r[2].as<std::string>();
      t.to = r[3].as<std::string>();
      t.from_version = opt<std::int64_t>(r[4]);
      t.to_version = r[5].as<std::int64_t>();
      t.attempt = r[6].as<int>();
      t.epoch = r[7].as<std::int64_t>();
      t.continuation = r[8].as<std::string>();
      t.commit_us = opt<std::int64_t>(r[9]);
      t.continuation_ms = opt<std::int64_t>(r[10]);
      if (r[11].as<bool>()) ++approximated;
      h.transitions.push_back(std::move(t));
    }
    if (approximated > 0) h.read_errors.push_back(std::to_string(approximated) + " commit times approximated");

    // Every attempt of every run read: the ended ones (job_run_attempts),
    // and the one a RUNNING run is in now.
    for (const auto& r : tx.exec_params(
             "SELECT run_id, attempt, coalesce(worker_id, ''), coalesce(outcome, ''), coalesce(lease_token::text, ''),"
             " exit_code, " +
                 us_of("started_at") + ", " + us_of("finished_at") +
                 " FROM job_run_attempts WHERE run_id = ANY($1::bigint[])"
                 " UNION ALL SELECT id, attempt, coalesce(assigned_worker_id, ''), '', coalesce(lease_token::text, ''),"
                 " NULL, " +
                 us_of("started_at") +
                 ", NULL FROM job_runs WHERE id = ANY($1::bigint[]) AND state = 'RUNNING' AND outcome IS NULL"
                 " ORDER BY 1, 2",
             all_ids)) {
      checker::AttemptRow a;
      a.run = r[0].as<std::int64_t>();
      a.attempt = r[1].as<int>();
      a.worker = r[2].as<std::string>();
      a.outcome = r[3].as<std::string>();
      a.token = r[4].as<std::string>();
      if (!r[5].is_null()) a.exit_code = r[5].as<int>();
      a.started_us = opt<std::int64_t>(r[6]);
      a.finished_us = opt<std::int64_t>(r[7]);
      h.attempts.push_back(std::move(a));
    }

    for (const auto& r :
         tx.exec_params("SELECT run_id, final_state, attempts FROM dead_letters WHERE run_id = ANY($1::bigint[])", ids))
      h.dead_letters.push_back({r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<int>()});

    // The ledger entries of the slice's runs, and the skipped ranges that
    // cover one of its slots.
    for (const auto& r : tx.exec_params(
             "SELECT coalesce(j.name, ''), d.decision, coalesce(d.reason, ''), floor(extract(epoch FROM "
             "d.slot))::bigint,"
             " coalesce(floor(extract(epoch FROM d.slot_last))::bigint, 0), d.run_id, coalesce(d.epoch, 0)"
             " FROM decision_ledger d LEFT JOIN job_definitions j ON j.id = d.job_definition_id"
             " WHERE d.slot IS NOT NULL AND (d.run_id = ANY($1::bigint[]) OR d.id IN (SELECT k.id FROM job_runs s"
             "  JOIN decision_ledger k ON k.job_definition_id = s.job_definition_id AND k.decision = 'skipped'"
             "  AND k.slot <= s.scheduled_for AND k.slot_last >= s.scheduled_for"
             "  WHERE s.id = ANY($1::bigint[]) AND s.scheduled_for IS NOT NULL))",
             ids)) {
      checker::LedgerRow l{r[0].as<std::string>(),  r[1].as<std::string>(),  r[2].as<std::string>(),
                           r[3].as<std::int64_t>(), r[4].as<std::int64_t>(), opt<std::int64_t>(r[5]),
                           r[6].as<std::int64_t>()};
      if (l.slot_last == 0) l.slot_last = l.slot;
      h.ledger.push_back(std::move(l));
    }

    if (!event_ids.empty())
      for (const auto& r :
           tx.exec_params("SELECT id, kind, coalesce(dedupe_key, ''), processed_at IS NOT NULL FROM events"
                          " WHERE id = ANY($1::bigint[])",
                          pg_array(std::vector<std::int64_t>(event_ids.begin(), event_ids.end()))))
        h.events.push_back({r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<bool>()});

    // Epochs whole (one row per election), with the election's commit time.
    const std::string elected = out.commit_timestamps
                                    ? "coalesce(" +
                                          us_of("pg_xact_commit_timestamp((election_xid % 4294967296)::text::xid)") +
                                          ", " + us_of("elected_at") + ")"
                                    : us_of("elected_at");
    for (const auto& r :
         tx.exec("SELECT epoch, leader_id, leader_incarnation, " + elected + " FROM epoch_history ORDER BY epoch"))
      h.epochs.push_back(
          {r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), opt<std::int64_t>(r[3])});

    // The jobs of the runs read, and every job whose executions exclude others'.
    for (const auto& r :
         tx.exec_params("SELECT name, max_instances, concurrency_policy, exclusive_execution, mutually_exclusive,"
                        " to_json(on_events)::text, concurrency_limit FROM job_definitions"
                        " WHERE id IN (SELECT job_definition_id FROM job_runs WHERE id = ANY($1::bigint[]))"
                        " OR exclusive_execution OR mutually_exclusive",
                        all_ids)) {
      checker::JobRow j{r[0].as<std::string>(), opt<std::int64_t>(r[1]), r[2].as<std::string>(),
                        r[4].as<bool>(),        r[3].as<bool>(),         {}};
      j.concurrency_limit = opt<std::int64_t>(r[6]);
      if (!r[5].is_null()) {
        const boost::json::value kinds = boost::json::parse(r[5].as<std::string>());
        if (kinds.is_array())
          for (const auto& k : kinds.as_array())
            if (k.is_string()) j.on_events.emplace_back(k.as_string());
      }
      h.jobs[j.name] = std::move(j);
    }

    for (const auto& r : tx.exec("SELECT worker_id, state = 'ATTACHED', " + us_of("detached_at") + " FROM workers"))
      h.workers[r[0].as<std::string>()] = {r[0].as<std::string>(), r[1].as<bool>(), opt<std::int64_t>(r[2])};
    tx.commit();
    return out;
  });
}

Result<SweepRecorded> PgVerifyStore::record_sweep(const SweepRecord& s) {
  return session_.with<SweepRecorded>([&](pqxx::connection& c) -> Result<SweepRecorded> {
    pqxx::work tx{c};
    namespace json = boost::json;
    json::object invariants;
    for (const auto& [name, n] : s.by_invariant)
      invariants[name] = json::object{{"examined", n.first}, {"violations", n.second}};
    json::array skipped;
    for (const auto& name : s.not_examinable) skipped.push_back(json::string(name));
    const std::string last =
        json::serialize(json::object{{"runs", s.runs},
                                     {"database_us", s.database_us},
                                     {"violations", static_cast<std::int64_t>(s.violations.size())},
                                     {"invariants", invariants},
                                     {"not_examinable", skipped}});
    // Only from where this sweep started: another node that recorded these
    // runs first wins, and this sweep records nothing.
    auto moved = tx.exec_params(
        "UPDATE verify_cursor SET finished_at = CASE WHEN $3::bigint = 0 THEN '-infinity'::timestamptz ELSE " +
            at_us("$3") +
            " END, run_id = $4, swept_at = now(), node_id = $5, epoch = $6, sweeps = sweeps + 1,"
            " runs_checked = runs_checked + $7, last_sweep = $8::jsonb"
            " WHERE id = 1 AND finished_at = " +
            at_us("$1") + " AND run_id = $2",
        s.from.finished_us, s.from.run, s.to.finished_us, s.to.run, s.node, s.epoch, s.runs, last);
    if (moved.affected_rows() != 1) return SweepRecorded{false, 0};
    SweepRecorded out{true, 0};
    if (!s.violations.empty()) {
      std::vector<std::string> names, findings, evidence, runs;
      for (const auto& v : s.violations) {
        names.push_back(v.invariant);
        findings.push_back(v.finding);
        evidence.push_back(v.evidence);
        runs.push_back(pg_array(v.runs));
      }
      // Recorded once per finding; the trigger tells each new one (audit
      // log, webhooks) in this transaction.
      out.new_violations =
          tx.exec_params(
                "INSERT INTO invariant_violations (invariant, finding, evidence, run_ids, found_by,"
                " epoch) SELECT n, f, e, r::bigint[], $5, $6 FROM unnest($1::text[], $2::text[],"
                " $3::text[], $4::text[]) AS v(n, f, e, r) ON CONFLICT (invariant, finding) DO NOTHING",
                pg_array(names), pg_array(findings), pg_array(evidence), pg_array(runs), s.node, s.epoch)
              .affected_rows();
    }
    tx.commit();
    return out;
  });
}

Result<std::string> PgAdminStore::verify_status_json(int limit, bool open_only) {
  return session_.with<std::string>([&](pqxx::connection& c) -> Result<std::string> {
    pqxx::nontransaction tx{c};
    return tx
        .exec_params1(
            "SELECT jsonb_build_object('cursor', jsonb_build_object('finished_at', CASE WHEN finished_at ="
            " '-infinity' THEN NULL ELSE finished_at END, 'run_id', run_id),"
            " 'swept_at', swept_at, 'node_id', node_id, 'epoch', epoch, 'sweeps', sweeps,"
            " 'runs_checked', runs_checked, 'last_sweep', last_sweep,"
            " 'violations_total', (SELECT count(*) FROM invariant_violations),"
            " 'violations_open', (SELECT count(*) FROM invariant_violations WHERE acknowledged_at IS NULL),"
            " 'by_invariant', (SELECT coalesce(jsonb_object_agg(invariant, n), '{}'::jsonb) FROM"
            "  (SELECT invariant, count(*) AS n FROM invariant_violations GROUP BY invariant) x),"
            " 'violations', (SELECT coalesce(jsonb_agg(to_jsonb(v) ORDER BY v.id DESC), '[]'::jsonb) FROM"
            "  (SELECT id, found_at, invariant, evidence, run_ids, found_by, epoch, acknowledged_at, acknowledged_by"
            "   FROM invariant_violations WHERE NOT $2::boolean OR acknowledged_at IS NULL"
            "   ORDER BY id DESC LIMIT $1) v))::text FROM verify_cursor WHERE id = 1",
            limit, open_only)[0]
        .as<std::string>();
  });
}

Result<std::int64_t> PgAdminStore::acknowledge_violations(const Actor& who, std::int64_t through_id) {
  return session_.with<std::int64_t>([&](pqxx::connection& c) -> Result<std::int64_t> {
    pqxx::work tx{c};
    const auto n = tx.exec_params(
                         "UPDATE invariant_violations SET acknowledged_at = now(), acknowledged_by = $2"
                         " WHERE id <= $1 AND acknowledged_at IS NULL",
                         through_id, who.name)
                       .affected_rows();
    tx.exec_params(
        "INSERT INTO audit_log (actor, action, subject, epoch, details) VALUES ($1, 'invariant.acknowledged',"
        " 'invariant_violations', $4, jsonb_build_object('through_id', $2::bigint, 'acknowledged', $3::bigint))",
        who.name, through_id, static_cast<std::int64_t>(n), who.epoch.value);
    tx.commit();
    return static_cast<std::int64_t>(n);
  });
}

}  // namespace baton::store::pg
