// PgRunStore: each fenced write of run_transitions.cpp's statements, run as
// one autocommit statement (or, for an exclusive run's activation, after
// the run table's lock in the same transaction), and its row classified.
#include "baton/store_pg/pg_run_store.h"
#include "baton/base/assert.h"
#include "baton/base/weaken.h"
#include "pg_array.h"
#include "run_transitions_sql.h"

namespace baton::store::pg {

PgRunStore::PgRunStore(const std::string& url, const std::string& application_name) : session_(url, application_name) {
  session_.on_connect([](pqxx::connection& c) {
    for (const auto& s : statements()) c.prepare(s.name, s.sql);
  });
}

// An exclusive run's activation (schemas/0046): the run table taken in
// SHARE ROW EXCLUSIVE mode first, in a statement of its own, so that every
// write of it under way has committed and none starts until this
// transaction does, and the assigning statement's snapshot, taken after,
// sees every run made active. The statement refuses an exclusive run
// written without it (baton_holds_run_table).
const char* const lock_run_table = "LOCK TABLE job_runs IN SHARE ROW EXCLUSIVE MODE";

// A single run's assignment (not the leader's path: it assigns in
// batches; tests and tools) takes the run table's lock whatever its job:
// it cannot tell an exclusive job's run without a read.
template <class... Args>
Result<WriteResult> PgRunStore::fenced_locked(const char* statement, const RunFence& f, Args&&... args) {
  return session_.with<WriteResult>([&](pqxx::connection& c) -> Result<WriteResult> {
    pqxx::work tx{c};
    if (!weakened("exclusive_gate")) tx.exec0(lock_run_table);
    auto row =
        tx.exec_prepared1(statement, f.run.value, f.expected_version.value, f.epoch.value, std::forward<Args>(args)...);
    auto result = classify(row, f.epoch);
    tx.commit();
    return result;
  });
}

template <class... Args>
Result<WriteResult> PgRunStore::fenced(const char* statement, const RunFence& f, Args&&... args) {
  return session_.with<WriteResult>([&](pqxx::connection& c) -> Result<WriteResult> {
    // One autocommit statement: no BEGIN/COMMIT round trips, and the lease
    // row's FOR KEY SHARE lock is held only while the statement runs.
    pqxx::nontransaction tx{c};
    auto row =
        tx.exec_prepared1(statement, f.run.value, f.expected_version.value, f.epoch.value, std::forward<Args>(args)...);
    return classify(row, f.epoch);
  });
}

Result<CreateResult> PgRunStore::create_run(Epoch epoch, const NewRun& run) {
  return session_.with<CreateResult>([&](pqxx::connection& c) -> Result<CreateResult> {
    pqxx::nontransaction tx{c};
    auto r = tx.exec_prepared1("run_create", epoch.value, run.job_definition_id, run.idempotency_key, run.max_attempts,
                               run.priority, run.trigger_kind, run.payload_json);
    return classify_create(r, epoch);
  });
}

Result<std::optional<RunRow>> PgRunStore::read_run(RunId id) {
  return session_.with<std::optional<RunRow>>([&](pqxx::connection& c) -> Result<std::optional<RunRow>> {
    pqxx::nontransaction tx{c};
    auto rows = tx.exec_prepared("run_read", id.value);
    if (rows.empty()) return std::optional<RunRow>{};
    const auto& r = rows[0];
    RunRow row;
    row.id = RunId{r[0].as<std::int64_t>()};
    auto state = parse_run_state(r[1].as<std::string>());
    BATON_ASSERT(state.has_value());
    row.state = *state;
    row.version = Version{r[2].as<std::int64_t>()};
    row.attempt = r[3].as<int>();
    row.max_attempts = r[4].as<int>();
    row.leader_epoch = Epoch{r[5].as<std::int64_t>()};
    if (!r[6].is_null()) row.assigned_worker_id = r[6].as<std::string>();
    if (!r[7].is_null()) row.lease_token = r[7].as<std::string>();
    row.continuation = r[8].as<std::string>() == "CONFIRMING" ? ContinuationState::confirming : ContinuationState::none;
    row.job_name = r[9].as<std::string>();
    return std::optional<RunRow>{row};
  });
}

Result<WriteResult> PgRunStore::assign(const RunFence& f, const std::string& worker_id) {
  return fenced_locked("run_assign", f, worker_id);
}

Result<WriteResult> PgRunStore::reassign(const RunFence& f, RunState from, const std::string& worker_id) {
  BATON_ASSERT(from == RunState::orphaned || from == RunState::retry_waiting);
  return fenced_locked("run_reassign", f, worker_id, std::string(to_string(from)));
}

Result<WriteResult> PgRunStore::start(const RunFence& f, const AttemptFence& a, Millis stale_after) {
  return fenced("run_start", f, a.worker_id, a.attempt, a.lease_token, stale_after.count());
}

Result<WriteResult> PgRunStore::heartbeat(const RunFence& f, const AttemptFence& a, Millis stale_after) {
  return fenced("run_heartbeat", f, a.worker_id, a.attempt, a.lease_token, stale_after.count());
}

Result<WriteResult> PgRunStore::finish(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  BATON_ASSERT(fin.final_state == RunState::succeeded || fin.final_state == RunState::failed ||
               fin.final_state == RunState::timed_out);
  return fenced("run_finish", f, a.worker_id, a.attempt, a.lease_token, std::string(to_string(fin.final_state)),
                fin.result_json, fin.error_code, fin.error_msg, fin.exit_code);
}

Result<WriteResult> PgRunStore::retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin, Millis delay) {
  BATON_ASSERT(fin.final_state == RunState::failed || fin.final_state == RunState::timed_out);
  return fenced("run_retry_later", f, a.worker_id, a.attempt, a.lease_token, std::string(to_string(fin.final_state)),
                fin.result_json, fin.error_code, fin.error_msg, fin.exit_code, delay.count());
}

Result<WriteResult> PgRunStore::orphan(const RunFence& f) { return fenced("run_orphan", f); }

Result<WriteResult> PgRunStore::late_success(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return fenced("run_late_success", f, a.worker_id, a.attempt, a.lease_token, std::string("SUCCEEDED"), fin.result_json,
                std::string(), std::string(), fin.exit_code);
}

Result<WriteResult> PgRunStore::record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return fenced("run_late_report", f, a.worker_id, a.attempt, a.lease_token, std::string(to_string(fin.final_state)),
                fin.exit_code);
}

Result<WriteResult> PgRunStore::requeue(const RunFence& f) { return fenced("run_requeue", f); }
Result<WriteResult> PgRunStore::fail_orphaned(const RunFence& f, const std::string& reason) {
  return fenced("run_fail_orphaned", f, reason);
}

Result<WriteResult> PgRunStore::fail_unrunnable(const RunFence& f, RunState from, const std::string& code,
                                                const std::string& reason) {
  BATON_ASSERT(from == RunState::pending || from == RunState::orphaned || from == RunState::retry_waiting);
  return fenced("run_fail_unrunnable", f, std::string(to_string(from)), code, reason);
}

Result<WriteResult> PgRunStore::cancel(const RunFence& f, RunState from, const std::string& reason) {
  BATON_ASSERT(!is_terminal(from) && from != RunState::running);
  return fenced("run_cancel", f, std::string(to_string(from)), reason);
}

Result<WriteResult> PgRunStore::cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                               const std::string& reason) {
  return fenced("run_cancel_attempt", f, a.worker_id, a.attempt, a.lease_token, reason, fin.exit_code, fin.result_json);
}

Result<WriteResult> PgRunStore::begin_confirming(const RunFence& f, Millis deadline_in) {
  return fenced("run_begin_confirming", f, deadline_in.count());
}

Result<WriteResult> PgRunStore::request_cancel(const RunFence& f, const std::string& reason) {
  return fenced("run_request_cancel", f, reason);
}

Result<WriteResult> PgRunStore::adopt(const RunFence& f, const AttemptFence& a) {
  return fenced("run_adopt", f, a.worker_id, a.attempt, a.lease_token);
}

Result<BatchWriteResult> PgRunStore::assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) {
  if (rows.empty()) return BatchWriteResult{epoch, {}};
  std::vector<std::int64_t> ids, versions, continuation;
  std::vector<std::string> from, workers;
  std::vector<std::optional<int>> instance_no;
  std::vector<std::optional<bool>> exclusive_lock;
  std::vector<std::optional<std::string>> keys;
  std::vector<std::optional<int>> key_slots, rate_slots;
  for (const auto& r : rows) {
    keys.push_back(r.concurrency_key);
    key_slots.push_back(r.key_slot);
    rate_slots.push_back(r.rate_slot);
    instance_no.push_back(r.instance_no);
    exclusive_lock.push_back(r.exclusive_lock ? std::optional<bool>(true) : std::nullopt);
    BATON_ASSERT(r.from == RunState::pending || r.from == RunState::orphaned || r.from == RunState::retry_waiting);
    ids.push_back(r.run.value);
    versions.push_back(r.expected_version.value);
    from.emplace_back(to_string(r.from));
    workers.push_back(r.worker_id);
    continuation.push_back(r.continuation_timeout.count());
  }
  const RunTableLock lock =
      std::any_of(rows.begin(), rows.end(), [](const AssignRow& r) { return r.exclusive_execution; })
          ? RunTableLock::exclusive_activation
          : RunTableLock::none;
  if (std::none_of(rows.begin(), rows.end(), [](const AssignRow& r) { return r.start.has_value(); }))
    return batch("run_assign_batch", lock, epoch, pg_array(ids), pg_array(versions), pg_array(from), pg_array(workers),
                 pg_array(continuation), pg_array(instance_no), pg_array(exclusive_lock), pg_array(keys),
                 pg_array(key_slots), pg_array(rate_slots));
  std::vector<int> start;  // 1/0: boolean input (std::vector<bool> has no element references)
  std::vector<std::string> instances;
  // One stale interval for the statement, as run_start_batch has: a leader
  // gives every row the same (the longest, should two differ).
  std::int64_t stale_after_ms = 0;
  for (const auto& r : rows) {
    start.push_back(r.start ? 1 : 0);
    instances.push_back(r.start ? r.start->worker_instance : std::string());
    if (r.start) stale_after_ms = std::max<std::int64_t>(stale_after_ms, r.start->stale_after.count());
  }
  return batch("run_assign_start_batch", lock, epoch, pg_array(ids), pg_array(versions), pg_array(from),
               pg_array(workers), pg_array(continuation), pg_array(instance_no), pg_array(exclusive_lock),
               pg_array(start), pg_array(instances), stale_after_ms, pg_array(keys), pg_array(key_slots),
               pg_array(rate_slots));
}

Result<BatchWriteResult> PgRunStore::start_batch(Epoch epoch, const std::vector<StartRow>& rows, Millis stale_after) {
  if (rows.empty()) return BatchWriteResult{epoch, {}};
  AttemptArrays a;
  std::vector<std::string> instances;
  for (const auto& r : rows) {
    a.add(r.run.value, r.expected_version.value, r.attempt.worker_id, r.attempt.attempt, r.attempt.lease_token);
    instances.push_back(r.worker_instance);
  }
  return batch("run_start_batch", RunTableLock::none, epoch, stale_after.count(), pg_array(a.ids), pg_array(a.versions),
               pg_array(a.workers), pg_array(a.attempts), pg_array(a.tokens), pg_array(instances));
}

Result<BatchWriteResult> PgRunStore::finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) {
  if (rows.empty()) return BatchWriteResult{epoch, {}};
  AttemptArrays a;
  std::vector<std::int64_t> delays;
  std::vector<std::string> next, outcome, result, code, msg;
  std::vector<std::optional<int>> exit_codes;
  for (const auto& r : rows) {
    const RunState fs = r.finish.final_state;
    BATON_ASSERT(fs == RunState::succeeded || fs == RunState::failed || fs == RunState::timed_out);
    BATON_ASSERT(!r.retry_delay || fs != RunState::succeeded);
    a.add(r.run.value, r.expected_version.value, r.attempt.worker_id, r.attempt.attempt, r.attempt.lease_token);
    next.emplace_back(r.retry_delay ? "RETRY_WAITING" : to_string(fs));
    outcome.emplace_back(to_string(fs));
    result.push_back(r.finish.result_json);
    code.push_back(r.finish.error_code);
    msg.push_back(r.finish.error_msg);
    exit_codes.push_back(r.finish.exit_code);
    delays.push_back(r.retry_delay ? r.retry_delay->count() : 0);
  }
  return batch("run_finish_batch", RunTableLock::none, epoch, pg_array(a.ids), pg_array(a.versions),
               pg_array(a.workers), pg_array(a.attempts), pg_array(a.tokens), pg_array(next), pg_array(outcome),
               pg_array(result), pg_array(code), pg_array(msg), pg_array(exit_codes), pg_array(delays));
}

template <class... Args>
Result<BatchWriteResult> PgRunStore::batch(const char* statement, RunTableLock lock, Epoch epoch, Args&&... args) {
  return session_.with<BatchWriteResult>([&](pqxx::connection& c) -> Result<BatchWriteResult> {
    if (lock == RunTableLock::exclusive_activation && !weakened("exclusive_gate")) {
      pqxx::work tx{c};
      tx.exec0(lock_run_table);
      auto result = classify_batch(tx.exec_prepared(statement, epoch.value, std::forward<Args>(args)...), epoch);
      tx.commit();
      return result;
    }
    pqxx::nontransaction tx{c};  // one autocommit statement: the lease lock is held only while it runs
    return classify_batch(tx.exec_prepared(statement, epoch.value, std::forward<Args>(args)...), epoch);
  });
}

}  // namespace baton::store::pg
