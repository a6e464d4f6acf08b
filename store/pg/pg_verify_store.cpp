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
#include <map>
#include <set>
#include <tuple>

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

namespace {

/// The columns of a run read for the checks, with its writes (the history
/// array, schemas/0022 documents the format).
std::string run_columns() {
  return "SELECT r.id, '', r.state, coalesce(r.idempotency_key, ''), coalesce(r.error_code, ''),"
         " r.attempt, r.max_attempts, coalesce(floor(extract(epoch FROM r.scheduled_for))::bigint, 0), " +
         us_of("r.created_at") +
         ", coalesce(r.event_id, 0), coalesce(r.concurrency_key, ''), coalesce(r.assigned_worker_id, ''),"
         " r.continuation_state, " +
         us_of("r.continuation_deadline_at") + ", r.job_definition_id, " + us_of("r.scheduled_for") +
         ", r.outcome, r.exit_code, r.lease_token::text, " + us_of("r.started_at") + ", " + us_of("r.finished_at") +
         ", array_to_string(r.history, ',', 'n') FROM job_runs r";
}

/// What a run row tells beyond checker::RunRow: where its siblings are.
struct RunKeys {
  std::optional<std::int64_t> job_id, slot_us;
};

/// The state a history entry's code names (schemas/0022: baton_run_state_no).
const char* state_of_code(std::int64_t code) {
  static const char* names[] = {"PENDING",   "ASSIGNED", "RUNNING",   "RETRY_WAITING", "ORPHANED",
                                "SUCCEEDED", "FAILED",   "TIMED_OUT", "CANCELED"};
  const std::int64_t n = code & 15;
  return n >= 1 && n <= 9 ? names[n - 1] : "?";
}

}  // namespace

Result<RecordedSlice> PgVerifyStore::recorded_slice(const VerifyCursor& after, Millis settle, int limit,
                                                    bool running_now) {
  return session_.with<RecordedSlice>([&](pqxx::connection& c) -> Result<RecordedSlice> {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    RecordedSlice out;
    checker::History& h = out.history;
    auto head = tx.exec1("SELECT " + us_of("now()") + ", current_setting('track_commit_timestamp') = 'on'");
    h.taken_us = head[0].as<std::int64_t>();
    out.commit_timestamps = head[1].as<bool>();
    out.next = after;

    // The slice: finished after the cursor, and at least `settle` ago. Its
    // upper bound first, the `limit`-th finish time, read in the order of
    // job_runs_finished_idx (the scan stops there); then the runs up to it
    // through the same index, whole: the runs one statement finished share
    // a finish time and are never split between slices.
    auto bound = tx.exec_params(
        "SELECT " + us_of("finished_at") + " FROM job_runs WHERE finished_at > " + at_us("$1") +
            " AND finished_at <= now() - $2::bigint * interval '1 millisecond' ORDER BY finished_at OFFSET $3 LIMIT 1",
        after.finished_us, static_cast<std::int64_t>(settle.count()), limit - 1);
    out.full = !bound.empty();
    // $2: the bound's unix microseconds when the slice is full, else the
    // settle time in milliseconds.
    const std::string upto = out.full ? "'epoch'::timestamptz + $2::bigint * interval '1 microsecond'"
                                      : "now() - $2::bigint * interval '1 millisecond'";
    const std::int64_t upto_value =
        out.full ? bound[0][0].as<std::int64_t>() : static_cast<std::int64_t>(settle.count());

    std::vector<std::int64_t> slice;
    std::map<std::int64_t, RunKeys> keys;
    std::map<std::int64_t, std::string> histories;
    std::set<std::int64_t> event_ids;
    std::int64_t min_start_us = 0;
    std::map<std::int64_t, std::int64_t> job_of;  // run -> job id, for its name
    auto read_runs = [&](const pqxx::result& rows, bool judged) {
      for (const auto& r : rows) {
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
        keys[run.id] = {opt<std::int64_t>(r[14]), opt<std::int64_t>(r[15])};
        if (!r[14].is_null()) job_of[run.id] = r[14].as<std::int64_t>();
        if (judged) {
          slice.push_back(run.id);
          out.next = VerifyCursor{r[20].as<std::int64_t>(), run.id};
        }
        // Its final attempt lives in its row (schemas/0022); a RUNNING run's
        // current one too, not ended yet.
        if (!r[16].is_null() || run.state == "RUNNING") {
          checker::AttemptRow a;
          a.run = run.id;
          a.attempt = run.attempt;
          a.worker = run.worker;
          a.outcome = r[16].is_null() ? "" : r[16].as<std::string>();
          if (!r[17].is_null()) a.exit_code = r[17].as<int>();
          a.token = r[18].is_null() ? "" : r[18].as<std::string>();
          a.started_us = opt<std::int64_t>(r[19]);
          if (!r[16].is_null()) a.finished_us = opt<std::int64_t>(r[20]);
          if (judged && a.started_us)
            min_start_us = min_start_us == 0 ? *a.started_us : std::min(min_start_us, *a.started_us);
          h.attempts.push_back(std::move(a));
        }
        if (!r[21].is_null()) histories[run.id] = r[21].as<std::string>();
        if (run.event_id > 0) event_ids.insert(run.event_id);
        if (judged && !run.key.empty()) h.accepted_keys.push_back(run.key);
        h.runs[run.id] = std::move(run);
      }
    };
    read_runs(tx.exec_params(run_columns() + " WHERE r.finished_at > " + at_us("$1") + " AND r.finished_at <= " + upto +
                                 " ORDER BY r.finished_at, r.id",
                             after.finished_us, upto_value),
              true);
    out.runs = static_cast<std::int64_t>(slice.size());

    // The attempts that did not end their run (job_run_attempt_rows).
    auto read_attempt_rows = [&](const std::vector<std::int64_t>& runs, bool judged) {
      if (runs.empty()) return;
      for (const auto& r : tx.exec_params("SELECT run_id, attempt, coalesce(worker_id, ''), coalesce(outcome, ''),"
                                          " coalesce(lease_token::text, ''), exit_code, " +
                                              us_of("started_at") + ", " + us_of("finished_at") +
                                              " FROM job_run_attempt_rows WHERE run_id = ANY($1::bigint[])",
                                          pg_array(runs))) {
        checker::AttemptRow a;
        a.run = r[0].as<std::int64_t>();
        a.attempt = r[1].as<int>();
        a.worker = r[2].as<std::string>();
        a.outcome = r[3].as<std::string>();
        a.token = r[4].as<std::string>();
        if (!r[5].is_null()) a.exit_code = r[5].as<int>();
        a.started_us = opt<std::int64_t>(r[6]);
        a.finished_us = opt<std::int64_t>(r[7]);
        if (judged && a.started_us)
          min_start_us = min_start_us == 0 ? *a.started_us : std::min(min_start_us, *a.started_us);
        h.attempts.push_back(std::move(a));
      }
    };
    // The slice's earlier attempts count for the look-back below: an
    // attempt that was retried may have overlapped a run long finished.
    read_attempt_rows(slice, true);

    // Context: the runs that share a slot, an idempotency key (within the
    // window it is remembered) or an event with a run of the slice, each
    // looked up through its own index from the slice's values; the runs
    // assigned to a worker now.
    std::vector<std::int64_t> slot_jobs, slot_us, key_created, event_jobs, events;
    std::vector<std::string> idem;
    for (std::int64_t id : slice) {
      const auto& k = keys[id];
      const auto& run = h.runs[id];
      if (k.job_id && k.slot_us) slot_jobs.push_back(*k.job_id), slot_us.push_back(*k.slot_us);
      if (!run.key.empty()) idem.push_back(run.key), key_created.push_back(run.created_us);
      if (k.job_id && run.event_id > 0) event_jobs.push_back(*k.job_id), events.push_back(run.event_id);
    }
    std::set<std::int64_t> context;
    auto add_context = [&](const pqxx::result& rows) {
      for (const auto& r : rows) context.insert(r[0].as<std::int64_t>());
    };
    if (!slot_jobs.empty())
      add_context(tx.exec_params(
          "SELECT r.id FROM unnest($1::bigint[], $2::bigint[]) AS s(job, at) JOIN job_runs r ON r.job_definition_id ="
          " s.job AND r.scheduled_for = 'epoch'::timestamptz + s.at * interval '1 microsecond'",
          pg_array(slot_jobs), pg_array(slot_us)));
    if (!idem.empty())
      add_context(tx.exec_params(
          "SELECT r.id FROM unnest($1::text[], $2::bigint[]) AS s(k, at) JOIN job_runs r ON r.idempotency_key = s.k"
          " AND r.idempotency_key IS NOT NULL AND r.created_at BETWEEN 'epoch'::timestamptz + s.at * interval '1"
          " microsecond' - interval '24 hours' AND 'epoch'::timestamptz + s.at * interval '1 microsecond' + interval"
          " '24 hours'",
          pg_array(idem), pg_array(key_created)));
    if (!events.empty())
      add_context(tx.exec_params(
          "SELECT r.id FROM unnest($1::bigint[], $2::bigint[]) AS s(job, ev) JOIN job_runs r ON r.job_definition_id ="
          " s.job AND r.event_id = s.ev AND r.event_id IS NOT NULL",
          pg_array(event_jobs), pg_array(events)));
    // The runs RUNNING or ASSIGNED now, once a sweep (job_runs_open_idx:
    // the open runs; the run table has no index by state or worker, on
    // purpose): running_has_owner and assigned_has_owner judge them.
    if (running_now)
      add_context(tx.exec(
          "SELECT id FROM job_runs WHERE finished_at IS NULL AND state IN ('RUNNING', 'ASSIGNED') LIMIT 100000"));
    // The runs that ended while one of the slice ran, before the slice
    // (the slice's own and later ones are judged with it or later): of its
    // jobs, and of every job whose executions exclude others'. Two runs
    // that overlapped are so seen together in the slice of the later one.
    if (!slice.empty() && min_start_us > 0) {
      std::set<std::int64_t> jobs;
      for (std::int64_t id : slice)
        if (keys[id].job_id) jobs.insert(*keys[id].job_id);
      auto rows = tx.exec_params(
          "SELECT r.id FROM job_runs r WHERE r.finished_at >= 'epoch'::timestamptz + $2::bigint * interval '1 "
          "microsecond' AND r.finished_at <= " +
              at_us("$3") +
              " AND r.started_at IS NOT NULL AND (r.job_definition_id = ANY($1::bigint[]) OR r.job_definition_id IN"
              " (SELECT id FROM job_definitions WHERE exclusive_execution OR mutually_exclusive) OR EXISTS (SELECT 1"
              " FROM job_definitions j WHERE j.id = ANY($1::bigint[]) AND j.exclusive_execution))"
              " ORDER BY r.finished_at DESC LIMIT $4",
          pg_array(std::vector<std::int64_t>(jobs.begin(), jobs.end())), min_start_us, after.finished_us,
          context_lookback_max + 1);
      for (std::size_t i = 0; i < rows.size() && i < static_cast<std::size_t>(context_lookback_max); ++i)
        context.insert(rows[i][0].as<std::int64_t>());
      if (rows.size() > static_cast<std::size_t>(context_lookback_max)) out.context_truncated = 1;
    }
    for (std::int64_t id : slice) context.erase(id);
    h.context_runs = context;
    // With their writes: where a context run's attempt was given up ends
    // its execution (executions_from_attempts), as for the slice's runs; a
    // context run without them ran until its late report, and two runs of a
    // key were once judged overlapping that did not (a 10-minute chaos run,
    // seed 58).
    if (!context.empty())
      read_runs(tx.exec_params(run_columns() + " WHERE r.id = ANY($1::bigint[])",
                               pg_array(std::vector<std::int64_t>(context.begin(), context.end()))),
                false);
    read_attempt_rows(std::vector<std::int64_t>(context.begin(), context.end()), false);
    const std::string ids = pg_array(slice);

    std::sort(h.attempts.begin(), h.attempts.end(),
              [](const auto& a, const auto& b) { return std::tie(a.run, a.attempt) < std::tie(b.run, b.attempt); });

    // The slice's writes: the rows of the log kept from before schema 0022,
    // then each run's history array, decoded as the job_run_transitions
    // view does (7 bigints an entry: to_version, from_version, code, epoch,
    // xid, at_us, continuation_ms). Commit times once per transaction.
    std::map<std::int64_t, std::string> last_logged_state;
    std::vector<std::pair<checker::TransitionRow, std::int64_t>> writes;  // with its xid
    if (!slice.empty())
      for (const auto& r : tx.exec_params(
               "SELECT id, run_id, coalesce(from_state, ''), to_state, from_version, to_version, attempt, leader_epoch,"
               " continuation_state, xid, " +
                   us_of("at") +
                   ", continuation_timeout_ms FROM job_run_transitions_log WHERE run_id = ANY($1::bigint[])"
                   " ORDER BY run_id, to_version",
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
        t.commit_us = r[10].as<std::int64_t>();  // the write's own time until its commit time is read
        t.continuation_ms = opt<std::int64_t>(r[11]);
        last_logged_state[t.run] = t.to;
        writes.push_back({std::move(t), r[9].as<std::int64_t>()});
      }
    for (const auto& [run, text] : histories) {
      std::vector<std::optional<std::int64_t>> v;
      std::size_t from = 0;
      for (;;) {
        const std::size_t comma = text.find(',', from);
        const std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
        if (item == "n" || item.empty())
          v.push_back(std::nullopt);
        else
          v.push_back(std::stoll(item));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      std::string previous;
      for (std::size_t k = 0; k + 7 <= v.size(); k += 7) {
        checker::TransitionRow t;
        t.run = run;
        t.to_version = v[k].value_or(0);
        t.from_version = v[k + 1];
        const std::int64_t code = v[k + 2].value_or(0);
        t.to = state_of_code(code);
        t.continuation = (code & 16) ? "CONFIRMING" : "NONE";
        t.attempt = static_cast<int>(code >> 8);
        t.epoch = v[k + 3].value_or(0);
        t.commit_us = v[k + 5];
        t.continuation_ms = v[k + 6];
        if (k > 0)
          t.from = previous;
        else if (t.from_version)
          t.from = last_logged_state.count(run) ? last_logged_state[run] : "";
        previous = t.to;
        writes.push_back({std::move(t), v[k + 4].value_or(0)});
      }
    }
    std::int64_t approximated = 0;  // of the slice's writes; a context run's may be older
    if (out.commit_timestamps && !writes.empty()) {
      std::set<std::int64_t> xids;
      for (const auto& w : writes) xids.insert(w.second);
      std::map<std::int64_t, std::int64_t> committed;
      for (const auto& r :
           tx.exec_params("SELECT x, " + us_of("pg_xact_commit_timestamp((x % 4294967296)::text::xid)") +
                              " FROM unnest($1::bigint[]) AS x",
                          pg_array(std::vector<std::int64_t>(xids.begin(), xids.end()))))
        if (!r[1].is_null()) committed[r[0].as<std::int64_t>()] = r[1].as<std::int64_t>();
      for (auto& [t, xid] : writes) {
        auto it = committed.find(xid);
        if (it != committed.end())
          t.commit_us = it->second;
        else if (!h.context_runs.count(t.run))
          ++approximated;  // older than the commit times PostgreSQL keeps: the write's own time
      }
    }
    if (approximated > 0) h.read_errors.push_back(std::to_string(approximated) + " commit times approximated");
    for (auto& w : writes)
      (h.context_runs.count(w.first.run) ? h.context_transitions : h.transitions).push_back(std::move(w.first));
    std::sort(h.transitions.begin(), h.transitions.end(), [](const auto& a, const auto& b) {
      return std::tie(a.run, a.to_version, a.id) < std::tie(b.run, b.to_version, b.id);
    });

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
    std::set<std::int64_t> job_ids;
    for (const auto& [run, job] : job_of) job_ids.insert(job);
    std::map<std::int64_t, std::string> job_names;
    for (const auto& r :
         tx.exec_params("SELECT name, max_instances, concurrency_policy, exclusive_execution, mutually_exclusive,"
                        " to_json(on_events)::text, concurrency_limit, id FROM job_definitions"
                        " WHERE id = ANY($1::bigint[]) OR exclusive_execution OR mutually_exclusive",
                        pg_array(std::vector<std::int64_t>(job_ids.begin(), job_ids.end())))) {
      job_names[r[7].as<std::int64_t>()] = r[0].as<std::string>();
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

    for (const auto& [run, job] : job_of)
      if (auto n = job_names.find(job); n != job_names.end()) h.runs[run].job = n->second;
    for (const auto& r : tx.exec("SELECT worker_id, state = 'ATTACHED', " + us_of("detached_at") + " FROM workers"))
      h.workers[r[0].as<std::string>()] = {r[0].as<std::string>(), r[1].as<bool>(), opt<std::int64_t>(r[2])};
    tx.commit();
    return out;
  });
}

Result<ReceiptsReport> PgVerifyStore::check_receipts(int limit, Millis deadline) {
  // The server's statement_timeout first, with its own error; the client's
  // cut a little later, for a server that does not answer at all.
  return session_.with<ReceiptsReport>(deadline + Millis{5000}, [&](pqxx::connection& c) -> Result<ReceiptsReport> {
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx{c};
    tx.exec_params("SELECT set_config('statement_timeout', $1, true)", std::to_string(deadline.count()));
    ReceiptsReport out;
    auto n = tx.exec1(
        "SELECT (SELECT count(*) FROM receipt_links),"
        " (SELECT coalesce(sum(cardinality(ends)), 0) FROM receipt_links),"
        " (SELECT count(*) FROM audit_log WHERE receipt_lane IS NOT NULL),"
        " (SELECT count(*) FROM epoch_history WHERE receipts IS NOT NULL)");
    out.links = n[0].as<std::int64_t>();
    out.ends = n[1].as<std::int64_t>();
    out.audit_entries = n[2].as<std::int64_t>();
    out.checkpoints = n[3].as<std::int64_t>();
    // Retention's horizon, as prune reads it: a run older than it may be
    // gone while its receipt is kept a little longer. The links that do not
    // hold (schemas/0042), then what is missing (schemas/0045), in chain
    // order.
    for (const auto& r : tx.exec_params(
             "WITH h AS (SELECT coalesce((SELECT (value #>> '{}')::int FROM settings WHERE key = 'retention_days'"
             "  AND jsonb_typeof(value) = 'number'), 30) AS days)"
             " SELECT kind, epoch, coalesce(lane, ''), coalesce(seq, 0), problem, count(*) OVER () FROM ("
             "  SELECT p.* FROM h, baton_receipt_problems(h.days) p"
             "  UNION ALL SELECT g.* FROM baton_receipt_gaps() g) x"
             " ORDER BY kind DESC, epoch, lane NULLS LAST, seq NULLS LAST LIMIT $1",
             limit)) {
      out.problems.push_back(ReceiptProblem{r[0].as<std::string>(), r[1].as<std::int64_t>(), r[2].as<std::string>(),
                                            r[3].as<std::int64_t>(), r[4].as<std::string>()});
      out.problems_total = r[5].as<std::int64_t>();
    }
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
      const auto inserted = tx.exec_params(
          "INSERT INTO invariant_violations (invariant, finding, evidence, run_ids, found_by,"
          " epoch) SELECT n, f, e, r::bigint[], $5, $6 FROM unnest($1::text[], $2::text[],"
          " $3::text[], $4::text[]) AS v(n, f, e, r) ON CONFLICT (invariant, finding) DO NOTHING"
          " RETURNING invariant, finding",
          pg_array(names), pg_array(findings), pg_array(evidence), pg_array(runs), s.node, s.epoch);
      out.new_violations = static_cast<std::int64_t>(inserted.size());
      for (const auto& row : inserted) out.new_findings.emplace(row[0].as<std::string>(), row[1].as<std::string>());
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
