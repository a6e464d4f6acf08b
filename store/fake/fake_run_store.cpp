#include "baton/store_fake/fake_run_store.h"

#include <algorithm>
#include <cstdio>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"

namespace baton::store::fake {

namespace {

bool in(RunState s, std::initializer_list<RunState> set) {
  for (RunState x : set)
    if (s == x) return true;
  return false;
}

}  // namespace

// ---- the database -----------------------------------------------------------

FakeRunDb::FakeRunDb(std::vector<const FakeLeaseDb*> partition_leases, const Clock& db_clock)
    : leases_(std::move(partition_leases)), clock_(db_clock) {
  BATON_ASSERT(!leases_.empty());
}

void FakeRunDb::use_partition(int p) {
  BATON_ASSERT(p >= 0 && p < partitions());
  partition_ = p;
}

const FakeLeaseDb& FakeRunDb::lease() const {
  // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h): the
  // single-lease fence carried over unchanged (no `WHERE partition_id = $p`
  // in the fence's read of the lease), so every partition is fenced by the
  // first one's epoch.
  if (weakened("partition_fence")) return *leases_.front();
  return *leases_[static_cast<std::size_t>(partition_)];
}

std::string FakeRunDb::new_token() {
  // Shaped like a UUID (the column type in PostgreSQL), unique per database.
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012llx", static_cast<unsigned long long>(next_token_++));
  return buf;
}

bool FakeRunDb::holds(const FakeRun& r, const AttemptFence& a) {
  return r.worker == a.worker_id && r.attempt == a.attempt && r.lease_token == a.lease_token;
}

WriteResult FakeRunDb::update(const RunFence& f, const std::function<bool(const FakeRun&)>& where,
                              const std::function<void(FakeRun&)>& set) {
  WriteResult out;
  out.current_epoch = lease().epoch();
  if (f.epoch != lease().epoch()) {
    out.outcome = WriteOutcome::fenced;
    return out;
  }
  auto it = runs_.find(f.run.value);
  if (it == runs_.end() || !visible(it->second) || it->second.version != f.expected_version || !where(it->second)) {
    out.outcome = WriteOutcome::conflict;
    return out;
  }
  FakeRun& r = it->second;
  const RunState from = r.state;
  const Version from_version = r.version;
  set(r);
  // The transition table is the database's last line of defence (a
  // trigger in PostgreSQL): the fake refuses what it refuses.
  BATON_ASSERT(from == r.state || legal_transition(from, r.state));
  BATON_ASSERT(r.attempt >= 1 && r.attempt <= r.max_attempts);  // job_runs_attempt_chk
  r.version = Version{r.version.value + 1};
  r.leader_epoch = f.epoch;
  if (r.state == RunState::assigned && from != RunState::assigned) r.assigned_at = clock_.mono();
  if (r.state == RunState::running && from != RunState::running) r.started_at = clock_.mono();
  if (r.state == RunState::succeeded && from != RunState::succeeded) on_success(r);
  transitions_.push_back({r.id, from, r.state, from_version, r.version, f.epoch, r.attempt, r.continuation,
                          r.continuation_timeout_ms, clock_.mono(), partition_});
  out.outcome = WriteOutcome::applied;
  out.new_version = r.version;
  out.lease_token = r.lease_token.value_or("");
  out.attempt = r.attempt;
  return out;
}

void FakeRunDb::record_attempt(const FakeRun& r, RunState outcome, std::optional<int> exit_code) {
  attempts_.push_back({r.id, r.attempt, r.worker.value_or(""), r.leader_epoch, r.lease_token.value_or(""), outcome,
                       exit_code, r.error_code});
}

void FakeRunDb::dead_letter_if_failed(const FakeRun& r) {
  if (r.state == RunState::failed || r.state == RunState::timed_out)
    dead_letters_.push_back({r.id, r.state, r.attempt, r.error_code});
}

CreateResult FakeRunDb::create_run(Epoch epoch, const NewRun& n) {
  CreateResult out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) {
    out.outcome = WriteOutcome::fenced;
    return out;
  }
  // An idempotency key is unique among runs that are not final.
  if (n.idempotency_key)
    for (const auto& [id, r] : runs_)
      if (r.idempotency_key == n.idempotency_key && !is_terminal(r.state)) {
        out.outcome = WriteOutcome::conflict;
        return out;
      }
  out.outcome = WriteOutcome::applied;
  out.run = insert(epoch, n).id;
  return out;
}

FakeRun& FakeRunDb::insert(Epoch epoch, const NewRun& n) {
  FakeRun r;
  r.id = RunId{next_id_++};
  r.partition = partition_;
  r.max_attempts = n.max_attempts;
  r.priority = n.priority;
  r.leader_epoch = epoch;
  r.job_definition_id = n.job_definition_id;
  r.idempotency_key = n.idempotency_key;
  transitions_.push_back({r.id, RunState::pending, RunState::pending, Version{0}, r.version, epoch, r.attempt,
                          r.continuation, r.continuation_timeout_ms, clock_.mono(), partition_});  // the insert
  return runs_[r.id.value] = r;
}

std::optional<RunRow> FakeRunDb::read_run(RunId id) const {
  auto it = runs_.find(id.value);
  if (it == runs_.end() || !visible(it->second)) return std::nullopt;
  const FakeRun& r = it->second;
  RunRow row;
  row.id = r.id;
  row.state = r.state;
  row.version = r.version;
  row.attempt = r.attempt;
  row.max_attempts = r.max_attempts;
  row.leader_epoch = r.leader_epoch;
  row.assigned_worker_id = r.worker;
  row.lease_token = r.lease_token;
  row.continuation = r.continuation;
  return row;
}

WriteResult FakeRunDb::assign(const RunFence& f, const std::string& worker_id) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::pending; },
      [&](FakeRun& r) {
        r.state = RunState::assigned;
        r.worker = worker_id;
        r.lease_token = new_token();
        r.worker_instance.clear();
        r.continuation = ContinuationState::none;
        r.continuation_deadline.reset();
      });
}

WriteResult FakeRunDb::reassign(const RunFence& f, RunState from, const std::string& worker_id) {
  return update(
      f,
      [&](const FakeRun& r) {
        return r.state == from && in(r.state, {RunState::orphaned, RunState::retry_waiting});
      },
      [&](FakeRun& r) {
        // From ORPHANED the attempt keeps its number: it never started.
        if (r.state == RunState::retry_waiting) ++r.attempt;
        r.state = RunState::assigned;
        r.worker = worker_id;
        r.worker_instance.clear();
        r.lease_token = new_token();
        r.next_attempt_at.reset();
        r.continuation = ContinuationState::none;
        r.continuation_deadline.reset();
      });
}

WriteResult FakeRunDb::start(const RunFence& f, const AttemptFence& a) {
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::assigned && holds(r, a); },
      [](FakeRun& r) { r.state = RunState::running; });
}

WriteResult FakeRunDb::heartbeat(const RunFence& f, const AttemptFence& a) {
  // Attempt-scoped writes after the start also need the run adopted by the
  // writer's epoch (leader_epoch = epoch).
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::running && holds(r, a) && r.leader_epoch == f.epoch; },
      [](FakeRun&) {});
}

WriteResult FakeRunDb::finish(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  BATON_ASSERT(in(fin.final_state, {RunState::succeeded, RunState::failed, RunState::timed_out}));
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::running && holds(r, a) && r.leader_epoch == f.epoch; },
      [&](FakeRun& r) {
        r.state = fin.final_state;
        r.error_code = fin.error_code;
        r.error_msg = fin.error_msg;
        r.continuation = ContinuationState::none;
        r.continuation_deadline.reset();
        record_attempt(r, fin.final_state, fin.exit_code);
        dead_letter_if_failed(r);
      });
}

WriteResult FakeRunDb::retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin, Millis delay) {
  BATON_ASSERT(in(fin.final_state, {RunState::failed, RunState::timed_out}));
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::running && holds(r, a) && r.leader_epoch == f.epoch; },
      [&](FakeRun& r) {
        r.state = RunState::retry_waiting;
        r.next_attempt_at = clock_.mono() + delay;
        r.error_code = fin.error_code;
        r.error_msg = fin.error_msg;
        r.continuation = ContinuationState::none;
        r.continuation_deadline.reset();
        record_attempt(r, fin.final_state, fin.exit_code);
      });
}

WriteResult FakeRunDb::orphan(const RunFence& f) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::assigned; },
      [](FakeRun& r) {
        r.state = RunState::orphaned;
        ++r.unstarted_assignments;
      });
}

WriteResult FakeRunDb::requeue(const RunFence& f) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::assigned; },
      [](FakeRun& r) { r.state = RunState::orphaned; });
}

WriteResult FakeRunDb::fail_orphaned(const RunFence& f, const std::string& reason) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::orphaned; },
      [&](FakeRun& r) {
        r.state = RunState::failed;
        r.error_code = "orphaned";
        r.error_msg = reason;
        dead_letter_if_failed(r);
      });
}

WriteResult FakeRunDb::fail_unrunnable(const RunFence& f, RunState from, const std::string& code,
                                       const std::string& reason) {
  return update(
      f,
      [&](const FakeRun& r) {
        return r.state == from && in(r.state, {RunState::pending, RunState::orphaned, RunState::retry_waiting});
      },
      [&](FakeRun& r) {
        r.state = RunState::failed;
        r.next_attempt_at.reset();
        r.error_code = code;
        r.error_msg = reason;
        dead_letter_if_failed(r);
      });
}

WriteResult FakeRunDb::late_success(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::retry_waiting && holds(r, a); },
      [&](FakeRun& r) {
        r.state = RunState::succeeded;
        r.next_attempt_at.reset();
        r.error_code.clear();
        r.error_msg.clear();
        for (auto& at : attempts_)
          if (at.run == r.id && at.attempt == r.attempt) {
            at.outcome = RunState::succeeded;
            at.exit_code = fin.exit_code;
          }
      });
}

WriteResult FakeRunDb::record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  WriteResult out;
  out.current_epoch = lease().epoch();
  out.outcome = WriteOutcome::conflict;
  if (f.epoch != lease().epoch()) {
    out.outcome = WriteOutcome::fenced;
    return out;
  }
  for (auto& at : attempts_)
    if (at.run == f.run && at.attempt == a.attempt && at.worker == a.worker_id && at.lease_token == a.lease_token &&
        (at.error_code == "attempt_lost" || at.error_code == "timeout") && !at.late_outcome) {
      at.late_outcome = fin.final_state;
      at.late_exit_code = fin.exit_code;
      out.outcome = WriteOutcome::applied;
      out.attempt = a.attempt;
    }
  return out;
}

PreviousAttempt FakeRunDb::previous_attempt(const FakeRun& r) const {
  const int next = r.attempt + (r.state == RunState::retry_waiting ? 1 : 0);
  const FakeAttempt* chosen = nullptr;
  for (const auto& at : attempts_) {
    if (at.run != r.id || at.attempt >= next) continue;
    const bool late_success = at.late_outcome == RunState::succeeded;
    const bool chosen_late_success = chosen && chosen->late_outcome == RunState::succeeded;
    if (!chosen || (late_success && !chosen_late_success) ||
        (late_success == chosen_late_success && at.attempt > chosen->attempt))
      chosen = &at;
  }
  if (!chosen) return {};
  std::string fate = chosen->late_outcome == RunState::succeeded                    ? "succeeded_unacknowledged"
                     : chosen->error_code == "attempt_lost" && chosen->late_outcome ? "fenced_out"
                     : chosen->error_code == "attempt_lost"                         ? "lost_contact"
                     : chosen->outcome == RunState::timed_out                       ? "timed_out"
                                                                                    : "failed";
  return {std::move(fate), chosen->attempt, chosen->worker};
}

namespace {
void make_canceled(FakeRun& r, const std::string& reason) {
  r.state = RunState::canceled;
  r.error_code = "canceled";
  r.error_msg = reason;
  r.continuation = ContinuationState::none;
  r.continuation_deadline.reset();
}
}  // namespace

WriteResult FakeRunDb::cancel(const RunFence& f, RunState from, const std::string& reason) {
  BATON_ASSERT(!is_terminal(from) && from != RunState::running);
  return update(
      f, [&](const FakeRun& r) { return r.state == from && !is_terminal(r.state) && r.state != RunState::running; },
      [&](FakeRun& r) { make_canceled(r, reason); });
}

WriteResult FakeRunDb::cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                      const std::string& reason) {
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::running && holds(r, a) && r.leader_epoch == f.epoch; },
      [&](FakeRun& r) {
        make_canceled(r, reason);
        record_attempt(r, RunState::canceled, fin.exit_code);
      });
}

WriteResult FakeRunDb::begin_confirming(const RunFence& f, Millis deadline_in) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::running && r.continuation == ContinuationState::none; },
      [&](FakeRun& r) {
        r.continuation = ContinuationState::confirming;
        r.continuation_deadline =
            clock_.mono() + (r.continuation_timeout_ms > 0 ? Millis{r.continuation_timeout_ms} : deadline_in);
      });
}

WriteResult FakeRunDb::request_cancel(const RunFence& f, const std::string& reason) {
  return update(
      f, [](const FakeRun& r) { return r.state == RunState::running; }, [&](FakeRun& r) { r.cancel_reason = reason; });
}

WriteResult FakeRunDb::adopt(const RunFence& f, const AttemptFence& a) {
  return update(
      f, [&](const FakeRun& r) { return r.state == RunState::running && holds(r, a); },
      [](FakeRun& r) {
        r.continuation = ContinuationState::none;
        r.continuation_deadline.reset();
      });
}

std::vector<ActiveRun> FakeRunDb::active_runs(Millis continuation_margin) const {
  const MonoTime now = clock_.mono();
  const auto ms = [](std::chrono::nanoseconds d) { return std::chrono::duration_cast<Millis>(d).count(); };
  std::vector<ActiveRun> out;
  for (const auto& [id, r] : runs_) {
    if (!visible(r) || (r.state != RunState::assigned && r.state != RunState::running)) continue;
    ActiveRun a;
    a.id = r.id;
    a.version = r.version;
    a.state = r.state;
    a.attempt = r.attempt;
    a.max_attempts = r.max_attempts;
    a.worker_id = r.worker.value_or("");
    a.lease_token = r.lease_token.value_or("");
    a.leader_epoch = r.leader_epoch;
    a.continuation = r.continuation;
    a.continuation_expired = r.continuation_deadline && *r.continuation_deadline + continuation_margin < now;
    a.assigned_age_ms = ms(now - r.assigned_at);
    a.running_age_ms = r.state == RunState::running ? ms(now - r.started_at) : 0;
    a.continuation_timeout_ms = r.continuation_timeout_ms;
    a.worker_instance = r.worker_instance;
    if (r.continuation == ContinuationState::confirming && r.continuation_deadline)
      a.continuation_remaining_ms = ms(*r.continuation_deadline - now);
    if (r.state == RunState::running) a.cancel_reason = r.cancel_reason;
    if (r.state == RunState::assigned && r.starts_at_unix_ms)
      a.starts_in_ms = std::max<std::int64_t>(0, *r.starts_at_unix_ms - unix_ms());
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<DueRun> FakeRunDb::due_runs(int limit, Millis ahead) const {
  const MonoTime now = clock_.mono();
  const std::int64_t now_ms = unix_ms();
  std::vector<const FakeRun*> due;
  for (const auto& [id, r] : runs_) {
    const bool ready =
        (r.state == RunState::pending && (!r.starts_at_unix_ms || *r.starts_at_unix_ms <= now_ms + ahead.count())) ||
        r.state == RunState::orphaned ||
        (r.state == RunState::retry_waiting && r.next_attempt_at && *r.next_attempt_at <= now);
    if (ready && visible(r)) due.push_back(&r);
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const FakeRun* a, const FakeRun* b) { return a->priority > b->priority; });
  std::vector<DueRun> out;
  for (const FakeRun* r : due) {
    if (static_cast<int>(out.size()) >= limit) break;
    DueRun d = due_run_of(*r);
    d.previous = previous_attempt(*r);
    if (r->state == RunState::pending && r->starts_at_unix_ms) {
      d.starts_in_ms = std::max<std::int64_t>(0, *r->starts_at_unix_ms - now_ms);
      d.starts_at_us = *r->starts_at_unix_ms * 1000;
    }
    out.push_back(std::move(d));
  }
  return out;
}

DueRun FakeRunDb::due_run_of(const FakeRun& r) {
  DueRun d;
  d.id = r.id;
  d.version = r.version;
  d.state = r.state;
  d.attempt = r.attempt;
  d.max_attempts = r.max_attempts;
  d.priority = r.priority;
  d.unstarted_assignments = r.unstarted_assignments;
  d.previous_worker = r.worker.value_or("");  // as the database keeps assigned_worker_id
  return d;
}

HeartbeatBatchResult FakeRunDb::heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows) {
  HeartbeatBatchResult out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) return out;  // judged once for the statement
  for (const auto& row : rows)
    if (WriteResult w = heartbeat({row.id, row.version, epoch}, row.attempt); w.outcome == WriteOutcome::applied) {
      out.applied[row.id.value] = w.new_version;
      if (row.progress) runs_.at(row.id.value).progress = row.progress;
    }
  return out;
}

template <class Row, class One>
BatchWriteResult FakeRunDb::batch(Epoch epoch, const std::vector<Row>& rows, One&& one) {
  BatchWriteResult out;
  out.current_epoch = lease().epoch();
  if (epoch != lease().epoch()) return out;  // judged once for the statement: nothing written
  for (const auto& row : rows)
    if (WriteResult w = one(row); w.outcome == WriteOutcome::applied) out.applied[row.run.value] = w;
  return out;
}

BatchWriteResult FakeRunDb::assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) {
  return batch(epoch, rows, [&](const AssignRow& row) {
    WriteResult w = update(
        {row.run, row.expected_version, epoch},
        [&](const FakeRun& r) {
          return r.state == row.from && in(r.state, {RunState::pending, RunState::orphaned, RunState::retry_waiting});
        },
        [&](FakeRun& r) {
          // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h):
          // the old SQL, where an assignment orphaned before it started
          // consumed an attempt.
          if (r.state == RunState::retry_waiting)
            ++r.attempt;
          else if (r.state == RunState::orphaned && weakened("unstarted_attempts") && r.attempt < r.max_attempts)
            ++r.attempt;
          r.state = RunState::assigned;
          r.worker = row.worker_id;
          r.lease_token = new_token();
          r.worker_instance.clear();
          r.next_attempt_at.reset();
          r.continuation = ContinuationState::none;
          r.continuation_deadline.reset();
          if (row.continuation_timeout.count() > 0) r.continuation_timeout_ms = row.continuation_timeout.count();
        });
    if (w.outcome != WriteOutcome::applied || !row.start) return w;
    // The start granted with the assignment: the second step of the same
    // write (schemas/0024), recorded as its own transition.
    WriteResult s = update(
        {row.run, w.new_version, epoch}, [&](const FakeRun& r) { return r.state == RunState::assigned; },
        [&](FakeRun& r) {
          r.state = RunState::running;
          r.worker_instance = row.start->worker_instance;
        });
    BATON_ASSERT(s.outcome == WriteOutcome::applied);
    return s;
  });
}

BatchWriteResult FakeRunDb::start_batch(Epoch epoch, const std::vector<StartRow>& rows) {
  return batch(epoch, rows, [&](const StartRow& row) {
    return update(
        {row.run, row.expected_version, epoch},
        [&](const FakeRun& r) { return r.state == RunState::assigned && holds(r, row.attempt); },
        [&](FakeRun& r) {
          r.state = RunState::running;
          r.worker_instance = row.worker_instance;
        });
  });
}

BatchWriteResult FakeRunDb::finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) {
  return batch(epoch, rows, [&](const FinishRow& row) {
    const RunState fs = row.finish.final_state;
    BATON_ASSERT(in(fs, {RunState::succeeded, RunState::failed, RunState::timed_out}));
    BATON_ASSERT(!row.retry_delay || fs != RunState::succeeded);
    return update(
        {row.run, row.expected_version, epoch},
        [&](const FakeRun& r) {
          return r.state == RunState::running && holds(r, row.attempt) && r.leader_epoch == epoch;
        },
        [&](FakeRun& r) {
          r.state = row.retry_delay ? RunState::retry_waiting : fs;
          if (row.retry_delay) r.next_attempt_at = clock_.mono() + *row.retry_delay;
          r.error_code = row.finish.error_code;
          r.error_msg = row.finish.error_msg;
          r.continuation = ContinuationState::none;
          r.continuation_deadline.reset();
          record_attempt(r, fs, row.finish.exit_code);
          dead_letter_if_failed(r);
        });
  });
}

// ---- a node's handle ----------------------------------------------------------

template <class T, class F>
Result<T> FakeRunStore::call(F&& f, bool is_write) {
  ++calls;
  const bool lose_drawn = is_write && lose_write_reply && lose_write_reply();
  if (unavailable) return make_error(Errc::db_unavailable, "fake: partitioned from the database");
  db_.use_partition(partition_);
  T out = f();
  if (is_write && (lose_drawn || lose_next_reply)) {
    lose_next_reply = false;
    return make_error(Errc::outcome_unknown, "fake: reply lost after commit");
  }
  return out;
}

Result<CreateResult> FakeRunStore::create_run(Epoch epoch, const NewRun& run) {
  return call<CreateResult>([&] { return db_.create_run(epoch, run); }, true);
}
Result<std::optional<RunRow>> FakeRunStore::read_run(RunId id) {
  return call<std::optional<RunRow>>([&] { return db_.read_run(id); }, false);
}
Result<WriteResult> FakeRunStore::assign(const RunFence& f, const std::string& worker_id) {
  return call<WriteResult>([&] { return db_.assign(f, worker_id); }, true);
}
Result<WriteResult> FakeRunStore::reassign(const RunFence& f, RunState from, const std::string& worker_id) {
  return call<WriteResult>([&] { return db_.reassign(f, from, worker_id); }, true);
}
Result<WriteResult> FakeRunStore::start(const RunFence& f, const AttemptFence& a, Millis) {
  return call<WriteResult>([&] { return db_.start(f, a); }, true);
}
Result<WriteResult> FakeRunStore::heartbeat(const RunFence& f, const AttemptFence& a, Millis) {
  return call<WriteResult>([&] { return db_.heartbeat(f, a); }, true);
}
Result<WriteResult> FakeRunStore::finish(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return call<WriteResult>([&] { return db_.finish(f, a, fin); }, true);
}
Result<WriteResult> FakeRunStore::retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                              Millis delay) {
  return call<WriteResult>([&] { return db_.retry_later(f, a, fin, delay); }, true);
}
Result<WriteResult> FakeRunStore::orphan(const RunFence& f) {
  return call<WriteResult>([&] { return db_.orphan(f); }, true);
}
Result<WriteResult> FakeRunStore::requeue(const RunFence& f) {
  return call<WriteResult>([&] { return db_.requeue(f); }, true);
}
Result<WriteResult> FakeRunStore::fail_orphaned(const RunFence& f, const std::string& reason) {
  return call<WriteResult>([&] { return db_.fail_orphaned(f, reason); }, true);
}
Result<WriteResult> FakeRunStore::fail_unrunnable(const RunFence& f, RunState from, const std::string& error_code,
                                                  const std::string& reason) {
  return call<WriteResult>([&] { return db_.fail_unrunnable(f, from, error_code, reason); }, true);
}
Result<WriteResult> FakeRunStore::late_success(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return call<WriteResult>([&] { return db_.late_success(f, a, fin); }, true);
}
Result<WriteResult> FakeRunStore::record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin) {
  return call<WriteResult>([&] { return db_.record_late_report(f, a, fin); }, true);
}
Result<WriteResult> FakeRunStore::cancel(const RunFence& f, RunState from, const std::string& reason) {
  return call<WriteResult>([&] { return db_.cancel(f, from, reason); }, true);
}
Result<WriteResult> FakeRunStore::cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                                 const std::string& reason) {
  return call<WriteResult>([&] { return db_.cancel_attempt(f, a, fin, reason); }, true);
}
Result<WriteResult> FakeRunStore::request_cancel(const RunFence& f, const std::string& reason) {
  return call<WriteResult>([&] { return db_.request_cancel(f, reason); }, true);
}
Result<WriteResult> FakeRunStore::begin_confirming(const RunFence& f, Millis deadline_in) {
  return call<WriteResult>([&] { return db_.begin_confirming(f, deadline_in); }, true);
}
Result<WriteResult> FakeRunStore::adopt(const RunFence& f, const AttemptFence& a) {
  return call<WriteResult>([&] { return db_.adopt(f, a); }, true);
}
Result<BatchWriteResult> FakeRunStore::assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) {
  return call<BatchWriteResult>([&] { return db_.assign_batch(epoch, rows); }, true);
}
Result<BatchWriteResult> FakeRunStore::start_batch(Epoch epoch, const std::vector<StartRow>& rows, Millis) {
  return call<BatchWriteResult>([&] { return db_.start_batch(epoch, rows); }, true);
}
Result<BatchWriteResult> FakeRunStore::finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) {
  return call<BatchWriteResult>([&] { return db_.finish_batch(epoch, rows); }, true);
}

}  // namespace baton::store::fake
