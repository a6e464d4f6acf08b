#include "baton/leader_core/run_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/input_journal.h"
#include "baton/leader_core/output_archive_path.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

bool is_external(const Effect& e) {
  return std::holds_alternative<Send>(e) || std::holds_alternative<WriteRun>(e) ||
         std::holds_alternative<WriteAssigns>(e) || std::holds_alternative<WriteStarts>(e) ||
         std::holds_alternative<WriteFinishes>(e) || std::holds_alternative<WriteHeartbeats>(e) ||
         std::holds_alternative<CreateCronRun>(e) || std::holds_alternative<SkipCronSlots>(e) ||
         std::holds_alternative<RecordDecision>(e) || std::holds_alternative<ProcessEvents>(e) ||
         std::holds_alternative<ProcessSubmissions>(e) || std::holds_alternative<Prune>(e);
}

RunBook::RunBook(Epoch epoch, std::string node_id, RuntimeConfig cfg, std::uint64_t seed, MonoTime started)
    : epoch_(epoch),
      node_id_(std::move(node_id)),
      base_cfg_(cfg),
      cfg_(cfg),
      started_(started),
      now_(started),
      reassignments_(cfg.reassign_rate, cfg.reassign_burst),
      rng_(seed) {
  BATON_ASSERT(epoch_ > Epoch{0});
}

// --- plumbing ---------------------------------------------------------------

void RunBook::emit(Effect e) {
  if (fencing_.fenced && is_external(e)) fencing_.external_after = true;
  effects_.push_back(std::move(e));
}

void RunBook::log(LogLevel level, std::string text) { effects_.push_back(Log{level, std::move(text)}); }

void RunBook::count(Counter c, std::int64_t n) {
  if (n != 0) effects_.push_back(Count{c, n});
}

void RunBook::finished(const std::string& job, const std::string& outcome, std::int64_t duration_ms) {
  count(Counter::runs_finished);
  emit(ObserveRunFinished{job, outcome, duration_ms});
}

std::vector<Effect> RunBook::take_effects() {
  if (journal_) journal_->effects_taken(effects_);
  std::vector<Effect> out;
  out.swap(effects_);
  return out;
}

std::size_t RunBook::pass_outstanding() const {
  return awaiting_.active.size() + awaiting_.run.size() + awaiting_.due.size() + awaiting_.jobs.size() +
         awaiting_.write.size() + awaiting_.assigns.size() + awaiting_.heartbeats.size() + awaiting_.create.size() +
         awaiting_.controls.size() + awaiting_.events.size() + awaiting_.submissions.size();
}

std::size_t RunBook::outstanding() const { return pass_outstanding() + awaiting_.lanes.size(); }

std::optional<MonoTime> RunBook::next_wakeup() const {
  // Cron creates left for the next pass: it comes at once, unless they wait
  // for an imminent wake-up anyway.
  if (cron_.has_backlog() && (wakeups_.empty() || *wakeups_.begin() - now_ >= cron_quiet_before)) return now_;
  if (wakeups_.empty()) return std::nullopt;
  return *wakeups_.begin();
}

std::vector<LinkId> RunBook::links() const {
  std::vector<LinkId> out;
  for (const auto& [id, w] : workers_) out.push_back(w.link);
  return out;
}

Millis RunBook::jitter() {
  if (cfg_.retry_jitter_max.count() <= 0) return Millis{0};
  return Millis{static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>(cfg_.retry_jitter_max.count() + 1))};
}

namespace {
template <class T>
constexpr bool is_variant = false;
template <class... S>
constexpr bool is_variant<std::variant<S...>> = true;
}  // namespace

template <class Waits, class T>
void RunBook::resume(Waits& waits, OpId op, const Result<T>& r, MonoTime now) {
  now_ = now;
  auto it = waits.find(op);
  BATON_ASSERT(it != waits.end());  // a result for an op this book never emitted, or twice
  auto state = std::move(it->second);
  waits.erase(it);
  if constexpr (is_variant<decltype(state)>)
    std::visit([&](auto& s) { resumed(s, r); }, state);
  else
    resumed(state, r);
  after_input();
}

void RunBook::result(OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.active, op, r, now);
}
void RunBook::result(OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.run, op, r, now);
}
void RunBook::result(OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.due, op, r, now);
}
void RunBook::result(OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.jobs, op, r, now);
}
void RunBook::result(OpId op, const Result<store::WriteResult>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.write, op, r, now);
}
void RunBook::result(OpId op, const Result<store::BatchWriteResult>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  if (awaiting_.lanes.count(op)) return resume(awaiting_.lanes, op, r, now);
  resume(awaiting_.assigns, op, r, now);
}
void RunBook::result(OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.heartbeats, op, r, now);
}
void RunBook::result(OpId op, const Result<store::CreateResult>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.create, op, r, now);
}
void RunBook::result(OpId op, const Result<store::Pruned>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.prune, op, r, now);
}
void RunBook::result(OpId op, const Result<store::EventsProcessed>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.events, op, r, now);
}
void RunBook::result(OpId op, const Result<store::SubmissionsProcessed>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.submissions, op, r, now);
}
void RunBook::result(OpId op, const Result<store::Controls>& r, MonoTime now) {
  if (journal_) journal_->result(op, r, now);
  resume(awaiting_.controls, op, r, now);
}

void RunBook::after_input() {
  pump();
  check_invariants();
}

void RunBook::pump() {
  // The periodic steps of a pass run one after another, each once the reads
  // and writes of everything before it have come back: the same order, and
  // the same view, as one synchronous pass.
  while (!fencing_.fenced && pass_.steps != 0 && pass_outstanding() == 0) {
    const unsigned step = pass_.steps & (~pass_.steps + 1);  // lowest pending step
    pass_.steps &= ~step;
    switch (step) {
      case step_silent:
        // A walk of every attached worker: at most every silent_check_every,
        // not at every pass (a pass begins at each wake of the loop, and with
        // thousands of workers attached their heartbeats wake it thousands of
        // times a second).
        if (now_ - last_.silent_check >= silent_check_every) {
          last_.silent_check = now_;
          detach_silent();
        }
        break;
      case step_reap:
        if (now_ - last_.reap >= cfg_.reap_every) {
          last_.reap = now_;
          // The book ages its runs on its own clock: a read only when it
          // cannot decide alone (reap_needs_read).
          if (reap_needs_read())
            with_fresh_view(resume::ReapAfterRead{});
          else
            reap(true);
        }
        break;
      case step_heartbeats:
        if (now_ - last_.heartbeat_flush >= cfg_.heartbeat_interval) {
          last_.heartbeat_flush = now_;
          flush_heartbeats();
        }
        if (now_ - last_.workers_seen >= cfg_.workers_seen_every) {
          last_.workers_seen = now_;
          record_workers_seen();
          find_unmatched();
          if (controls_ && !controls_->dispatch_enabled) find_held_by_operator();
          find_held_by_keys();
        }
        break;
      case step_cron:
        // What earlier passes left to create goes first; the schedules are
        // read again only once it is all written (a read meanwhile would
        // plan the same slots again).
        // cron_enabled and events_enabled are an operator's gates
        // (live_settings.h), open until the first read of the controls, which
        // comes earlier in the same pass.
        // A submission or an event committed (NOTIFY): taken now, not at
        // the cron period.
        if (pass_.inbox_requested) process_inbox();
        if (live_.cron_enabled && cron_.has_backlog()) {
          resume_cron_backlog();
          break;
        }
        if (now_ - last_.cron >= cfg_.cron_every &&
            (wakeups_.empty() || *wakeups_.begin() - now_ >= cron_quiet_before ||
             now_ - last_.cron >= cron_defer_max)) {
          last_.cron = now_;
          if (live_.cron_enabled) {
            const OpId op = next_op();
            awaiting_.jobs.emplace(op, resume::ScheduledJobsRead{});
            emit(ReadScheduledJobs{op});
          }
          process_inbox();
          if (now_ - last_.prune >= cfg_.prune_every) prune();
        }
        break;
      case step_controls:
        if (!controls_ || now_ - last_.controls >= cfg_.controls_every) {
          last_.controls = now_;
          const OpId op = next_op();
          awaiting_.controls.emplace(op, resume::ControlsRead{});
          emit(ReadControls{op});
        }
        break;
      case step_dispatch:
        if (!controls_ || !controls_->dispatch_enabled) break;  // an operator stopped it, or not known yet
        if (pass_.dispatch_requested || now_ - last_.dispatch >= cfg_.dispatch_every) {
          last_.dispatch = now_;
          pass_.dispatch_requested = false;
          dispatch();
        }
        break;
      default: BATON_ASSERT(false);
    }
  }
  // The pass is over: the next one decides on a new read.
  if (pass_.under_way && pass_.steps == 0 && pass_outstanding() == 0) {
    pass_.under_way = false;
    view_.fresh = false;
  }
}

void RunBook::with_fresh_view(resume::AfterRead then) {
  if (fencing_.fenced) return;
  if (view_.fresh && !view_.read_outstanding) return std::visit([&](auto& s) { viewed(s, true); }, then);
  view_.waiters.push_back(std::move(then));
  if (view_.read_outstanding) return;
  view_.read_outstanding = true;
  const OpId op = next_op();
  awaiting_.active.emplace(op, resume::ActiveRead{});
  emit(ReadActive{op, cfg_.continuation_margin});
}

void RunBook::resumed(resume::ActiveRead&, const Result<std::vector<store::ActiveRun>>& rows) {
  view_.read_outstanding = false;
  if (!rows)
    log(LogLevel::warn, fmt::format("refresh_runs_error epoch={} error={}", epoch_.value, rows.error().message));
  else
    apply_active(*rows);
  auto waiters = std::move(view_.waiters);
  view_.waiters.clear();
  for (auto& w : waiters)
    if (!fencing_.fenced) std::visit([&](auto& s) { viewed(s, rows.has_value()); }, w);
}

void RunBook::viewed(resume::RefreshOnly&, bool) {}

void RunBook::viewed(resume::ReapAfterRead&, bool fresh) { reap(fresh); }

void RunBook::resumed(resume::ScheduledJobsRead&, const Result<std::vector<store::ScheduledJob>>& jobs) {
  if (!jobs) {
    log(LogLevel::warn, fmt::format("cron_read_error epoch={} error={}", epoch_.value, jobs.error().message));
    return;
  }
  materialize_cron(*jobs);
}

void RunBook::resumed(resume::ControlsRead&, const Result<store::Controls>& c) {
  if (!c) {
    log(LogLevel::warn, fmt::format("controls_read_error epoch={} error={}", epoch_.value, c.error().message));
    return;
  }
  apply_controls(*c);
}

void RunBook::distrust() {
  view_.fresh = false;
  view_.doubt = true;
}

bool RunBook::reap_needs_read() const {
  if (view_.doubt || now_ - view_.last_read >= cfg_.reap_every * full_read_every_reaps) return true;
  for (const auto& [id, t] : tracked_)
    if (t.row.continuation == ContinuationState::confirming && !t.row.continuation_expired && t.confirm_until &&
        now_ >= *t.confirm_until)
      return true;
  return false;
}

void RunBook::apply_active(const std::vector<store::ActiveRun>& rows) {
  view_.doubt = false;
  view_.last_read = now_;
  std::map<std::int64_t, Tracked> next;
  for (const auto& r : rows) {
    auto old = tracked_.find(r.id.value);
    Tracked t{r, {}, 0, 0, {}, {}, std::nullopt};
    const bool same_attempt = old != tracked_.end() && old->second.row.worker_id == r.worker_id &&
                              old->second.row.attempt == r.attempt && old->second.row.lease_token == r.lease_token;
    if (old != tracked_.end()) {
      t.tasks = old->second.tasks;
      t.link = old->second.link;
      t.listed_at = old->second.listed_at;
      if (same_attempt) {
        t.holder = old->second.holder;
        t.grant_in_flight = old->second.grant_in_flight;  // a read says nothing of a frame on its way
        t.progress_unwritten = old->second.progress_unwritten;
      }
    }
    // Assigned ahead of its time: the start stays held until then (kept
    // from this book's own assignment, else counted from this read).
    if (r.state == RunState::assigned) {
      if (same_attempt && old->second.start_not_before)
        t.start_not_before = old->second.start_not_before;
      else if (r.starts_in_ms > 0)
        t.start_not_before = now_ + Millis{r.starts_in_ms + 1};
    }
    // A new leader learns from the run which process started the attempt.
    if (t.holder.empty()) t.holder = r.worker_instance;
    if (r.continuation == ContinuationState::confirming) {
      // The deadline this leader waits for, on its own monotonic clock: set
      // once, when it first sees the attempt confirming; a later step of the
      // database clock cannot bring it forward.
      if (same_attempt && old->second.confirm_until)
        t.confirm_until = old->second.confirm_until;
      else
        t.confirm_until = now_ + Millis{std::max<std::int64_t>(0, r.continuation_remaining_ms.value_or(0))} +
                          cfg_.continuation_margin;
    }
    // Ages by the database's clock when read, on this leader's from now on.
    t.assigned_at = now_ + -Millis{std::max<std::int64_t>(0, r.assigned_age_ms)};
    if (r.state == RunState::running) t.started_at = now_ + -Millis{std::max<std::int64_t>(0, r.running_age_ms)};
    if (old == tracked_.end() || old->second.row.worker_id != r.worker_id || old->second.row.attempt != r.attempt)
      mark_listed(t);  // counted from now
    next.emplace(r.id.value, std::move(t));
  }
  tracked_ = std::move(next);
  view_.fresh = true;
  // Cancel requests are on the runs (a leader before this one may have
  // recorded them): carry out any this leader did not know, and forget the
  // ones whose runs are no longer active.
  for (auto it = cancel_requested_.begin(); it != cancel_requested_.end();)
    it = tracked_.count(it->first) ? std::next(it) : cancel_requested_.erase(it);
  for (const auto& [id, t] : tracked_) {
    if (!t.row.cancel_reason || t.row.state != RunState::running || cancel_requested_.count(id)) continue;
    cancel_requested_[id] = *t.row.cancel_reason;
    log(LogLevel::info, fmt::format("run_cancel_request_read run={} attempt={} worker={} epoch={}", id, t.row.attempt,
                                    json_quote(t.row.worker_id), epoch_.value));
    send(t.row.worker_id, protocol::Cancel{ref_of(t.row), *t.row.cancel_reason});
  }
}

void RunBook::write(WriteRun w, resume::WriteWait then) {
  if (fencing_.fenced) return;
  w.op = next_op();
  awaiting_.write.emplace(w.op, std::move(then));
  emit(std::move(w));
}

void RunBook::read_run(RunId run, resume::RunReadWait then) {
  if (fencing_.fenced) return;
  const OpId op = next_op();
  awaiting_.run.emplace(op, std::move(then));
  emit(ReadRun{op, run});
}

void RunBook::fence(const char* op, const std::string& subject, Epoch current, std::vector<RunId> runs) {
  count(Counter::fenced_writes);
  fencing_.fenced = true;
  if (fencing_.refused.size() < fenced_out_max) {
    const std::string named = runs.empty() ? subject : "";  // a run's write is named by its run
    fencing_.refused.push_back({op, std::move(runs), named, current});
  }
  log(LogLevel::warn,
      fmt::format("run_write_fenced op={} {} epoch={} current_epoch={}", op, subject, epoch_.value, current.value));
}

bool RunBook::note(const char* op, std::int64_t run, const Result<store::WriteResult>& r) {
  if (auto repair = repairs_.find(run); repair != repairs_.end() && repair->second.asked) {
    // The reaper's write for a run the sweep found without an owner.
    if (r && r->outcome == WriteOutcome::applied)
      log(LogLevel::warn, fmt::format("invariant_repaired run={} invariant={} write={} epoch={}", run,
                                      json_quote(repair->second.invariant), op, epoch_.value));
    else
      log(LogLevel::warn, fmt::format("invariant_repair_not_applied run={} invariant={} write={} epoch={}", run,
                                      json_quote(repair->second.invariant), op, epoch_.value));
    if (std::string_view(op) != "adopt") repairs_.erase(repair);  // an adoption comes before the attempt's end
  }
  if (!r) {
    distrust();  // the outcome is unknown: the next decision needs a read
    log(LogLevel::warn,
        fmt::format("run_write_error op={} run={} epoch={} error={}", op, run, epoch_.value, r.error().message));
    return false;
  }
  switch (r->outcome) {
    case WriteOutcome::applied: return true;
    case WriteOutcome::conflict:
      distrust();  // this book's copy was stale
      count(Counter::conflict_writes);
      log(LogLevel::debug, fmt::format("run_write_conflict op={} run={} epoch={}", op, run, epoch_.value));
      return false;
    case WriteOutcome::fenced: fence(op, "run=" + std::to_string(run), r->current_epoch, {RunId{run}}); return false;
  }
  return false;
}

bool RunBook::batch_fenced(const char* op, const std::vector<RunId>& runs, const Result<store::BatchWriteResult>& r) {
  const std::size_t rows = runs.size();
  if (!r) {
    distrust();
    log(LogLevel::warn,
        fmt::format("run_write_error op={} rows={} epoch={} error={}", op, rows, epoch_.value, r.error().message));
    return false;
  }
  if (r->applied.size() < rows) distrust();
  if (!r->fenced(epoch_)) return false;
  fence(op, "rows=" + std::to_string(rows), r->current_epoch, runs);
  return true;
}

void RunBook::send(const std::string& worker, protocol::Message m) {
  if (fencing_.fenced) return;
  auto it = workers_.find(worker);
  if (it != workers_.end()) emit(Send{it->second.link, std::move(m)});
}

void RunBook::send_link(LinkId link, protocol::Message m) {
  if (fencing_.fenced) return;
  emit(Send{link, std::move(m)});
}

// --- operator cancel ----------------------------------------------------------

void RunBook::cancel(RunId run, const std::string& reason, MonoTime now) {
  if (journal_) journal_->cancel(run, reason, now);
  now_ = now;
  on_cancel(run, reason, 0);
  after_input();
}

void RunBook::recheck(const std::vector<RunId>& runs, const std::string& invariant, MonoTime now) {
  if (journal_) journal_->recheck(runs, invariant, now);
  now_ = now;
  if (!fencing_.fenced && !runs.empty()) {
    std::string named;
    for (const RunId r : runs) {
      named += (named.empty() ? "" : ",") + std::to_string(r.value);
      repairs_[r.value] = Repair{invariant, false};
    }
    log(LogLevel::warn,
        fmt::format("invariant_recheck invariant={} runs={} epoch={}", json_quote(invariant), named, epoch_.value));
    // The next pass reads every active run and reaps on what it read.
    distrust();
    last_.reap = now_ + -cfg_.reap_every;
  }
  after_input();
}

void RunBook::on_cancel(RunId run, const std::string& reason, int tries) {
  // A conflict means the run moved between the read and the write (a
  // heartbeat, a finish): read it again and decide again, a few times.
  if (tries >= 3) {
    log(LogLevel::warn, fmt::format("run_cancel_gave_up run={} epoch={} reason=conflicts", run.value, epoch_.value));
    return record_once(run, "cancel_not_applied", "conflicts");
  }
  read_run(run, resume::CancelRead{run, reason, tries});
}

void RunBook::resumed(resume::CancelRead& s, const Result<std::optional<store::RunRow>>& row) {
  if (!row) return;  // unknown: the operator may ask again
  // Nothing to cancel: recorded, so the request's audit entry is answered.
  if (!*row) return record_once(s.run, "cancel_not_applied", "no_such_run");
  if (is_terminal((*row)->state))
    return record_once(s.run, "cancel_not_applied", "already_" + std::string(to_string((*row)->state)));
  const store::RunRow r = **row;
  if (r.state == RunState::running && r.assigned_worker_id && r.lease_token) {
    // A running attempt is cancelled by its worker, and its finish decides:
    // CANCELED if the worker killed it, SUCCEEDED if it had already ended
    // successfully (a cancel never throws a completed success away). Its
    // worker may be away (CONFIRMING): the cancel is sent when it comes
    // back, and if it never does the attempt ends CANCELED at the
    // continuation deadline instead of being retried.
    //
    // The request is written to the run first (fenced like every write),
    // so a leader change before the worker reports cannot lose it: the
    // next leader reads it with the active runs.
    WriteRun w;
    w.kind = RunWriteKind::request_cancel;
    w.fence = {r.id, r.version, epoch_};
    w.reason = s.reason;
    return write(std::move(w), resume::CancelRequestWrite{r, s.reason, s.tries});
  }
  // A RUNNING run always has its worker and lease token; without them there
  // is no attempt whose predicates a cancel could carry.
  if (r.state == RunState::running) return record_once(s.run, "cancel_not_applied", "running_without_attempt");
  WriteRun w;
  w.kind = RunWriteKind::cancel;
  w.fence = {r.id, r.version, epoch_};
  w.from = r.state;
  w.reason = s.reason;
  write(std::move(w), resume::CancelWrite{r, s.reason, s.tries});
}

void RunBook::resumed(resume::CancelRequestWrite& s, const Result<store::WriteResult>& res) {
  const store::RunRow& r = s.run;
  if (!note("request_cancel", r.id.value, res)) {
    if (conflict(res)) on_cancel(r.id, s.reason, s.tries + 1);
    return;
  }
  if (auto t = tracked_.find(r.id.value); t != tracked_.end()) {
    t->second.row.version = res->new_version;
    t->second.row.cancel_reason = s.reason;
  }
  cancel_requested_[r.id.value] = s.reason;
  log(LogLevel::info,
      fmt::format("run_cancel_requested run={} attempt={} worker={} attached={} epoch={}", r.id.value, r.attempt,
                  json_quote(*r.assigned_worker_id), workers_.count(*r.assigned_worker_id) > 0, epoch_.value));
  send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, s.reason});
}

void RunBook::resumed(resume::CancelWrite& s, const Result<store::WriteResult>& res) {
  const store::RunRow& r = s.run;
  if (!note("cancel", r.id.value, res)) {
    if (conflict(res)) on_cancel(r.id, s.reason, s.tries + 1);
    return;
  }
  log(LogLevel::info, fmt::format("run_canceled run={} attempt={} from={} epoch={}", r.id.value, r.attempt,
                                  to_string(r.state), epoch_.value));
  if ((r.state == RunState::running || r.state == RunState::assigned) && r.assigned_worker_id && r.lease_token)
    send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, s.reason});
  tracked_.erase(r.id.value);
}

// --- invariants ---------------------------------------------------------------

void RunBook::check_invariants() const {
  // Once fenced, nothing reaches a worker or the database.
  BATON_ASSERT(!fencing_.external_after);
  // The rest walks every tracked run and attached worker: at every input
  // while the book is small (every test and simulated leader), beyond 64 of
  // them at one input in as many as there are, so the check costs an input
  // O(1) on average (with 1,000 workers attached, checking at each of their
  // heartbeats was most of the leader's CPU at idle; with 10,000, a walk at
  // every 64th still cost more than the heartbeat itself).
  const std::size_t size = tracked_.size() + workers_.size();
  if (size > 64 && ++checks_skipped_ % size != 0) return;
  // The book tracks exactly the runs in ASSIGNED and RUNNING, by their id.
  for (const auto& [id, t] : tracked_) {
    BATON_ASSERT(t.row.id.value == id);
    BATON_ASSERT(t.row.state == RunState::assigned || t.row.state == RunState::running);
  }
  // At most one batch per lane is being written, and a run is in at most one
  // of a lane's queue and its batch being written (BatchLane::check).
  lanes_.start.check();
  lanes_.finish.check();
  BATON_ASSERT(awaiting_.lanes.size() ==
               static_cast<std::size_t>(lanes_.start.busy()) + (lanes_.finish.busy() ? 1u : 0u));
  // A start held for its run's time is in no other queue of the start lane.
  for (const auto& [id, early] : lanes_.early_starts)
    BATON_ASSERT(!lanes_.start.holds(id) && early.second.run.value == id);
  // One connection per worker.
  std::set<LinkId> links;
  for (const auto& [id, w] : workers_) BATON_ASSERT(links.insert(w.link).second);
  // At most one read of the active runs is outstanding, and a waiter always has one.
  BATON_ASSERT(view_.read_outstanding == !awaiting_.active.empty());
  BATON_ASSERT(view_.waiters.empty() || view_.read_outstanding);
}

}  // namespace baton::leader_core
