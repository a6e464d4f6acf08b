#include "baton/leader_core/run_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "baton/core/assert.h"
#include "baton/core/json_text.h"
#include "baton/leader_core/dispatch.h"
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
         std::holds_alternative<Prune>(e);
}

RunBook::RunBook(Epoch epoch, std::string node_id, RuntimeConfig cfg, std::uint64_t seed, MonoTime started)
    : epoch_(epoch),
      node_id_(std::move(node_id)),
      cfg_(cfg),
      started_(started),
      now_(started),
      reassignments_(cfg.reassign_rate, cfg.reassign_burst),
      rng_(seed) {
  BATON_ASSERT(epoch_ > Epoch{0});
}

// --- plumbing ---------------------------------------------------------------

void RunBook::emit(Effect e) {
  if (fenced_ && is_external(e)) external_after_fence_ = true;
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
  std::vector<Effect> out;
  out.swap(effects_);
  return out;
}

std::size_t RunBook::pass_outstanding() const {
  return wait_active_.size() + wait_run_.size() + wait_due_.size() + wait_jobs_.size() + wait_write_.size() +
         wait_batch_.size() + wait_heartbeats_.size() + wait_create_.size() + wait_controls_.size() +
         wait_events_.size();
}

std::size_t RunBook::outstanding() const { return pass_outstanding() + wait_lane_.size(); }

std::optional<MonoTime> RunBook::next_wakeup() const {
  // Cron creates left for the next pass: it comes at once, unless they wait
  // for an imminent wake-up anyway.
  if (!cron_backlog_.empty() && (wakeups_.empty() || *wakeups_.begin() - now_ >= cron_quiet_before)) return now_;
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

template <class T>
void RunBook::resume(Waiting<T>& w, OpId op, const Result<T>& r, MonoTime now) {
  now_ = now;
  auto it = w.find(op);
  BATON_ASSERT(it != w.end());  // a result for an op this book never emitted, or twice
  auto then = std::move(it->second);
  w.erase(it);
  then(r);
  after_input();
}

void RunBook::result(OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now) {
  resume(wait_active_, op, r, now);
}
void RunBook::result(OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now) {
  resume(wait_run_, op, r, now);
}
void RunBook::result(OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now) {
  resume(wait_due_, op, r, now);
}
void RunBook::result(OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now) {
  resume(wait_jobs_, op, r, now);
}
void RunBook::result(OpId op, const Result<store::WriteResult>& r, MonoTime now) { resume(wait_write_, op, r, now); }
void RunBook::result(OpId op, const Result<store::BatchWriteResult>& r, MonoTime now) {
  resume(wait_lane_.count(op) ? wait_lane_ : wait_batch_, op, r, now);
}
void RunBook::result(OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now) {
  resume(wait_heartbeats_, op, r, now);
}
void RunBook::result(OpId op, const Result<store::CreateResult>& r, MonoTime now) { resume(wait_create_, op, r, now); }
void RunBook::result(OpId op, const Result<store::Pruned>& r, MonoTime now) { resume(wait_prune_, op, r, now); }
void RunBook::result(OpId op, const Result<store::EventsProcessed>& r, MonoTime now) {
  resume(wait_events_, op, r, now);
}
void RunBook::result(OpId op, const Result<store::Controls>& r, MonoTime now) { resume(wait_controls_, op, r, now); }

void RunBook::after_input() {
  pump();
  check_invariants();
}

void RunBook::pump() {
  // The periodic steps of a pass run one after another, each once the reads
  // and writes of everything before it have come back: the same order, and
  // the same view, as one synchronous pass.
  while (!fenced_ && steps_ != 0 && pass_outstanding() == 0) {
    const unsigned step = steps_ & (~steps_ + 1);  // lowest pending step
    steps_ &= ~step;
    switch (step) {
      case step_silent:
        // A walk of every attached worker: at most every silent_check_every,
        // not at every pass (a pass begins at each wake of the loop, and with
        // thousands of workers attached their heartbeats wake it thousands of
        // times a second).
        if (now_ - last_silent_check_ >= silent_check_every) {
          last_silent_check_ = now_;
          detach_silent();
        }
        break;
      case step_reap:
        if (now_ - last_reap_ >= cfg_.reap_every) {
          last_reap_ = now_;
          // The book ages its runs on its own clock: a read only when it
          // cannot decide alone (reap_needs_read).
          if (reap_needs_read())
            with_fresh_view([this](bool fresh) { reap(fresh); });
          else
            reap(true);
        }
        break;
      case step_heartbeats:
        if (now_ - last_heartbeat_flush_ >= cfg_.heartbeat_interval) {
          last_heartbeat_flush_ = now_;
          flush_heartbeats();
        }
        if (now_ - last_workers_seen_ >= cfg_.workers_seen_every) {
          last_workers_seen_ = now_;
          record_workers_seen();
          find_unmatched();
          if (controls_ && !controls_->dispatch_enabled) find_held_by_operator();
        }
        break;
      case step_cron:
        // What earlier passes left to create goes first; the schedules are
        // read again only once it is all written (a read meanwhile would
        // plan the same slots again).
        if (!cron_backlog_.empty()) {
          resume_cron_backlog();
          break;
        }
        if (now_ - last_cron_ >= cfg_.cron_every &&
            (wakeups_.empty() || *wakeups_.begin() - now_ >= cron_quiet_before ||
             now_ - last_cron_ >= cron_defer_max)) {
          last_cron_ = now_;
          const OpId op = next_op();
          wait_jobs_[op] = [this](const Result<std::vector<store::ScheduledJob>>& jobs) {
            if (!jobs) {
              log(LogLevel::warn, fmt::format("cron_read_error epoch={} error={}", epoch_.value, jobs.error().message));
              return;
            }
            materialize_cron(*jobs);
          };
          emit(ReadScheduledJobs{op});
          process_events();
          if (now_ - last_prune_ >= cfg_.prune_every) prune();
        }
        break;
      case step_controls:
        if (!controls_ || now_ - last_controls_ >= cfg_.controls_every) {
          last_controls_ = now_;
          const OpId op = next_op();
          wait_controls_[op] = [this](const Result<store::Controls>& c) {
            if (!c) {
              log(LogLevel::warn,
                  fmt::format("controls_read_error epoch={} error={}", epoch_.value, c.error().message));
              return;
            }
            apply_controls(*c);
          };
          emit(ReadControls{op});
        }
        break;
      case step_dispatch:
        if (!controls_ || !controls_->dispatch_enabled) break;  // an operator stopped it, or not known yet
        if (dispatch_requested_ || now_ - last_dispatch_ >= cfg_.dispatch_every) {
          last_dispatch_ = now_;
          dispatch_requested_ = false;
          dispatch();
        }
        break;
      default: BATON_ASSERT(false);
    }
  }
  // The pass is over: the next one decides on a new read.
  if (in_pass_ && steps_ == 0 && pass_outstanding() == 0) {
    in_pass_ = false;
    fresh_ = false;
  }
}

void RunBook::with_fresh_view(std::function<void(bool)> then) {
  if (fenced_) return;
  if (fresh_ && !read_outstanding_) return then(true);
  read_waiters_.push_back(std::move(then));
  if (read_outstanding_) return;
  read_outstanding_ = true;
  const OpId op = next_op();
  wait_active_[op] = [this](const Result<std::vector<store::ActiveRun>>& rows) {
    read_outstanding_ = false;
    if (!rows)
      log(LogLevel::warn, fmt::format("refresh_runs_error epoch={} error={}", epoch_.value, rows.error().message));
    else
      apply_active(*rows);
    auto waiters = std::move(read_waiters_);
    read_waiters_.clear();
    for (auto& w : waiters)
      if (!fenced_) w(rows.has_value());
  };
  emit(ReadActive{op, cfg_.continuation_margin});
}

void RunBook::distrust() {
  fresh_ = false;
  doubt_ = true;
}

bool RunBook::reap_needs_read() const {
  if (doubt_ || now_ - last_active_read_ >= cfg_.reap_every * full_read_every_reaps) return true;
  for (const auto& [id, t] : tracked_)
    if (t.row.continuation == ContinuationState::confirming && !t.row.continuation_expired && t.confirm_until &&
        now_ >= *t.confirm_until)
      return true;
  return false;
}

void RunBook::apply_active(const std::vector<store::ActiveRun>& rows) {
  doubt_ = false;
  last_active_read_ = now_;
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
  fresh_ = true;
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

void RunBook::write(WriteRun w, Then<store::WriteResult> then) {
  if (fenced_) return;
  w.op = next_op();
  wait_write_[w.op] = std::move(then);
  emit(std::move(w));
}

void RunBook::read_run(RunId run, Then<std::optional<store::RunRow>> then) {
  if (fenced_) return;
  const OpId op = next_op();
  wait_run_[op] = std::move(then);
  emit(ReadRun{op, run});
}

void RunBook::fence(const char* op, const std::string& subject, Epoch current) {
  count(Counter::fenced_writes);
  fenced_ = true;
  log(LogLevel::warn,
      fmt::format("run_write_fenced op={} {} epoch={} current_epoch={}", op, subject, epoch_.value, current.value));
}

bool RunBook::note(const char* op, std::int64_t run, const Result<store::WriteResult>& r) {
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
    case WriteOutcome::fenced: fence(op, "run=" + std::to_string(run), r->current_epoch); return false;
  }
  return false;
}

bool RunBook::batch_fenced(const char* op, std::size_t rows, const Result<store::BatchWriteResult>& r) {
  if (!r) {
    distrust();
    log(LogLevel::warn,
        fmt::format("run_write_error op={} rows={} epoch={} error={}", op, rows, epoch_.value, r.error().message));
    return false;
  }
  if (r->applied.size() < rows) distrust();
  if (!r->fenced(epoch_)) return false;
  fence(op, "rows=" + std::to_string(rows), r->current_epoch);
  return true;
}

void RunBook::send(const std::string& worker, protocol::Message m) {
  if (fenced_) return;
  auto it = workers_.find(worker);
  if (it != workers_.end()) emit(Send{it->second.link, std::move(m)});
}

void RunBook::send_link(LinkId link, protocol::Message m) {
  if (fenced_) return;
  emit(Send{link, std::move(m)});
}

// --- workers ----------------------------------------------------------------

void RunBook::start(MonoTime now) {
  now_ = now;
  log(LogLevel::info, fmt::format("control_loop_start node={} epoch={}", node_id_, epoch_.value));
  with_fresh_view([](bool) {});
  after_input();
}

void RunBook::attached(LinkId link, const protocol::Hello& hello, MonoTime now) {
  now_ = now;
  const std::string& id = hello.worker_id;
  if (auto old = workers_.find(id); old != workers_.end() && old->second.link != link) {
    // Two live processes using one worker id would each make the other's
    // attempts look lost: while the connection we have is alive and from
    // another process (not a reconnect, not its successor on the same
    // spool), the newcomer is refused. Otherwise the newest connection wins.
    const Attached& was = old->second;
    const bool other_process = !was.instance.empty() && !hello.instance.empty() && was.instance != hello.instance &&
                               hello.succeeds != was.instance;
    if (other_process && now_ - was.last_seen < was.cadence.timeout) {
      count(Counter::protocol_errors);
      log(LogLevel::error,
          fmt::format("worker_refused_duplicate_id worker={} instance={} attached_instance={} epoch={}", json_quote(id),
                      json_quote(hello.instance), json_quote(was.instance), epoch_.value));
      send_link(link, protocol::Error{"duplicate_worker_id", "worker id '" + id +
                                                                 "' is in use by another attached worker process; "
                                                                 "every worker needs an id of its own"});
      emit(Close{link, "duplicate worker id"});
      return after_input();
    }
    emit(Close{old->second.link, "replaced by a newer connection of the same worker"});
  }
  if (is_evicted(id)) {
    // An operator evicted it: its RUNNING attempts go through the
    // continuation rules (its own dead-man's switch stops them) and are
    // retried elsewhere. It may attach again once resumed.
    log(LogLevel::warn, fmt::format("worker_refused_evicted worker={} epoch={}", json_quote(id), epoch_.value));
    send_link(link, protocol::Error{"worker_evicted", "worker '" + id +
                                                          "' was evicted by an operator; resume it "
                                                          "(POST /api/v1/workers/{worker}/resume) to attach it again"});
    emit(Close{link, "evicted"});
    return after_input();
  }
  workers_[id] = Attached{link, hello.capacity, hello.labels,   now_,          false, false,
                          0,    hello.instance, hello.succeeds, hello.prefetch};
  workers_[id].protocol = protocol::negotiate_version(protocol::protocol_version_min, protocol::protocol_version_max,
                                                      hello.protocol_min, hello.protocol_max)
                              .value_or(protocol::protocol_version_min);
  workers_[id].cadence = heartbeat_cadence(workers_.size(), cfg_);
  workers_[id].recorded = now_;
  emit(RecordWorker{id, true, json_object(hello.labels), hello.capacity});
  // Adopt what the worker is still executing before welcoming it: the
  // welcome names the adopted attempts, and only those restart their
  // continuation clock on the worker. Anything it runs that is no longer its
  // attempt is killed (no two attempts of a run at once) -- but only on a
  // fresh read: a failed read proves nothing about a run.
  with_fresh_view([this, id, link, hello](bool fresh) { welcome(id, link, hello, fresh); });
  after_input();
}

void RunBook::welcome(const std::string& worker, LinkId link, const protocol::Hello& hello, bool fresh) {
  auto w = workers_.find(worker);
  if (w == workers_.end() || w->second.link != link) return;  // gone, or replaced, meanwhile
  // Its listing count starts over on this connection.
  for (auto& [rid, t] : tracked_)
    if (t.row.worker_id == worker) mark_listed(t);
  struct Pending {
    protocol::Welcome welcome;
    std::vector<protocol::AttemptRef> stale;
    std::size_t waiting = 0;
  };
  auto p = std::make_shared<Pending>();
  p->welcome = protocol::Welcome{node_id_,
                                 epoch_.value,
                                 w->second.cadence.interval.count(),
                                 w->second.cadence.timeout.count(),
                                 cfg_.continuation_timeout.count(),
                                 cfg_.continuation_margin.count(),
                                 {}};
  for (const auto& ref : hello.finished) adopt_ended(worker, ref);
  std::vector<protocol::AttemptRef> ours;
  for (const auto& ref : hello.running) {
    auto it = tracked_.find(ref.run_id);
    if (it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref)) {
      note_holder(it->second);
      ours.push_back(ref);
    } else if (fresh || it != tracked_.end()) {
      p->stale.push_back(ref);
    }
  }
  auto finish = [this, worker, link, p, running = hello.running.size(), finished = hello.finished.size(),
                 capacity = hello.capacity] {
    auto w = workers_.find(worker);
    if (w == workers_.end() || w->second.link != link) return;
    w->second.welcomed = true;
    send_link(link, p->welcome);
    // Cancels requested while it was away.
    for (const auto& ref : p->welcome.adopted)
      if (auto c = cancel_requested_.find(ref.run_id); c != cancel_requested_.end())
        send_link(link, protocol::Cancel{ref, c->second});
    log(LogLevel::info,
        fmt::format("worker_attached worker={} capacity={} running={} finished={} adopted={} epoch={}",
                    json_quote(worker), capacity, running, finished, p->welcome.adopted.size(), epoch_.value));
    for (const auto& ref : p->stale) {
      log(LogLevel::info, fmt::format("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id,
                                      ref.attempt, json_quote(worker), epoch_.value));
      send_link(link, protocol::Cancel{ref, "attempt is no longer current"});
    }
  };
  if (ours.empty()) return finish();
  p->waiting = ours.size();
  for (const auto& ref : ours)
    adopt_if_needed(ref.run_id, [p, ref, finish](bool adopted) {
      if (adopted) p->welcome.adopted.push_back(ref);
      if (--p->waiting == 0) finish();
    });
}

void RunBook::drop_worker(const std::string& worker, const char* why) {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return;
  emit(Close{it->second.link, why});
  workers_.erase(it);
  emit(RecordWorker{worker, false, {}, 0});
  log(LogLevel::info,
      fmt::format("worker_detached worker={} reason={} epoch={}", json_quote(worker), why, epoch_.value));
}

void RunBook::detached(LinkId link, const std::string& worker, const std::string& why, MonoTime now) {
  now_ = now;
  auto it = workers_.find(worker);
  if (it != workers_.end() && it->second.link == link) drop_worker(worker, why.c_str());
  after_input();
}

void RunBook::record_workers_seen() {
  // Workers heard from since their last heartbeat was recorded, the ones
  // recorded longest ago first, at most the round's share of the row budget:
  // the registry is what operators read, liveness is judged here.
  std::vector<std::pair<MonoTime, const std::string*>> due;
  for (const auto& [id, w] : workers_)
    if (w.last_seen > w.recorded) due.emplace_back(w.recorded, &id);
  const auto budget = static_cast<std::size_t>(std::max<std::int64_t>(
      1, std::int64_t{cfg_.workers_seen_rows_per_second} * cfg_.workers_seen_every.count() / 1000));
  if (due.size() > budget) {
    std::nth_element(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(budget), due.end());
    due.resize(budget);
  }
  if (due.empty()) return;
  RecordWorkersSeen seen;
  seen.worker_ids.reserve(due.size());
  for (const auto& [at, id] : due) {
    seen.worker_ids.push_back(*id);
    workers_.at(*id).recorded = now_;
  }
  emit(std::move(seen));
}

void RunBook::detach_silent() {
  // Workers that stopped talking are detached (their runs go through the
  // reaper like any detach), each after the timeout its welcome gave it.
  std::vector<std::string> silent;
  for (const auto& [id, w] : workers_)
    if (now_ - w.last_seen > w.cadence.timeout) silent.push_back(id);
  for (const auto& id : silent) drop_worker(id, "heartbeat_timeout");
}

void RunBook::mark_listed(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return;
  t.link = w->second.link;
  t.listed_at = w->second.heartbeats;
}

void RunBook::note_holder(Tracked& t) {
  if (auto w = workers_.find(t.row.worker_id); w != workers_.end()) t.holder = w->second.instance;
  t.grant_in_flight.reset();  // its worker has it: the assign frame arrived
}

bool RunBook::speaks_for(const Tracked& t) const {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return false;
  return t.holder.empty() || w->second.instance.empty() || w->second.instance == t.holder ||
         w->second.succeeds == t.holder;
}

std::int64_t RunBook::unlisted_heartbeats(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end() || !speaks_for(t)) return 0;
  if (t.grant_in_flight) {
    // Its assign frame may still be on its way: a worker that has not had
    // it yet lists nothing, and would start it on arrival. Only once the
    // connection that carries it is gone can no such frame arrive.
    if (*t.grant_in_flight == w->second.link) return 0;
    t.grant_in_flight.reset();
  }
  if (t.link != w->second.link) mark_listed(t);  // a new connection: count from now
  return static_cast<std::int64_t>(w->second.heartbeats - t.listed_at);
}

void RunBook::adopt_ended(const std::string& worker, const protocol::AttemptRef& ref) {
  // An attempt its worker holds as ended, with the finish not yet written
  // (the write failed, the database was away, the frame was lost with its
  // connection): the worker is back, so the attempt is this leader's again --
  // adopted, its CONFIRMING deadline cleared -- and its finish (sent again
  // within finish_resend_after) is written. Left CONFIRMING, the deadline
  // would throw the success away while the worker that holds it is attached.
  auto it = tracked_.find(ref.run_id);
  if (it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref) &&
      it->second.row.continuation == ContinuationState::confirming)
    adopt_if_needed(ref.run_id, [](bool) {});
}

void RunBook::adopt_if_needed(std::int64_t run, std::function<void(bool)> then) {
  auto it = tracked_.find(run);
  if (it == tracked_.end()) return then(false);
  const store::ActiveRun& r = it->second.row;
  if (r.leader_epoch == epoch_ && r.continuation == ContinuationState::none) return then(true);
  WriteRun w;
  w.kind = RunWriteKind::adopt;
  w.fence = {r.id, r.version, epoch_};
  w.attempt = {r.worker_id, r.attempt, r.lease_token};
  write(std::move(w), [this, run, att = w.attempt, then = std::move(then)](const Result<store::WriteResult>& res) {
    if (!note("adopt", run, res)) return then(false);
    auto it = tracked_.find(run);
    if (it == tracked_.end() || it->second.row.attempt != att.attempt ||
        it->second.row.lease_token != att.lease_token) {
      distrust();  // the copy moved on meanwhile
      return then(false);
    }
    store::ActiveRun& r = it->second.row;
    r.version = res->new_version;
    r.leader_epoch = epoch_;
    r.continuation = ContinuationState::none;
    log(LogLevel::info, fmt::format("run_adopted run={} attempt={} worker={} epoch={}", run, att.attempt,
                                    json_quote(att.worker_id), epoch_.value));
    then(true);
  });
}

// --- messages ---------------------------------------------------------------

void RunBook::message(LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) {
  now_ = now;
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.link != link) return after_input();  // from a replaced connection
  it->second.last_seen = now_;
  std::visit(
      [&](const auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, protocol::Start>)
          on_start(worker, msg, false);
        else if constexpr (std::is_same_v<T, protocol::Heartbeat>)
          on_heartbeat(worker, msg);
        else if constexpr (std::is_same_v<T, protocol::Finish>)
          on_finish(worker, msg, false);
        else if constexpr (std::is_same_v<T, protocol::Drain>)
          it->second.draining = true;
        else if constexpr (std::is_same_v<T, protocol::Output>)
          on_output(worker, msg);
        else {
          count(Counter::protocol_errors);
          send_link(link, protocol::Error{"protocol", std::string("unexpected message '") + protocol::type_name(m) +
                                                          "' from a worker"});
        }
      },
      m);
  after_input();
}

void RunBook::on_start(const std::string& worker, const protocol::Start& m, bool read_done) {
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() && !read_done)
    return with_fresh_view([this, worker, m](bool) { on_start(worker, m, true); });
  if (it == tracked_.end()) return deny_start(worker, m.ref, "run is not assigned");
  const store::ActiveRun& r = it->second.row;
  if (held_by(r, RunState::running, worker, m.ref)) return regrant_start(it->second, worker, m.ref);
  if (!held_by(r, RunState::assigned, worker, m.ref))
    return deny_start(worker, m.ref, "not the current assignment of this run");
  // "No start right, no process": the grant is sent only after the batched
  // start write (flush_starts) has applied.
  if (writing_start_ids_.count(r.id.value)) return;  // a repeated start being written
  if (pending_start_ids_.count(r.id.value) || early_starts_.count(r.id.value)) return;  // already queued
  auto w = workers_.find(worker);
  store::StartRow row{
      r.id, r.version, {worker, r.attempt, r.lease_token}, w != workers_.end() ? w->second.instance : ""};
  // Assigned ahead of its time: the start waits for it (flush_starts), and
  // the book wakes then.
  if (const auto& not_before = it->second.start_not_before; not_before && now_ < *not_before) {
    early_starts_.emplace(r.id.value, std::make_pair(*not_before, std::move(row)));
    wakeups_.insert(*not_before);
    return;
  }
  pending_start_ids_.insert(r.id.value);
  pending_starts_.push_back(std::move(row));
}

void RunBook::regrant_start(Tracked& t, const std::string& worker, const protocol::AttemptRef& ref) {
  // The start was written but its grant never reached the worker (the
  // connection, or the leader that sent it, died): the database already holds
  // this attempt's start right, so grant it again. Denying it left the run
  // RUNNING with no worker running it.
  log(LogLevel::info, fmt::format("start_regranted run={} attempt={} worker={} epoch={}", ref.run_id, ref.attempt,
                                  json_quote(worker), epoch_.value));
  mark_listed(t);
  send(worker, protocol::StartGranted{ref});
}

void RunBook::deny_start(const std::string& worker, const protocol::AttemptRef& ref, const std::string& why) {
  log(LogLevel::info, fmt::format("start_denied run={} attempt={} worker={} epoch={} reason={}", ref.run_id,
                                  ref.attempt, json_quote(worker), epoch_.value, why));
  send(worker, protocol::StartDenied{ref, why});
}

void RunBook::on_heartbeat(const std::string& worker, const protocol::Heartbeat& m) {
  auto w = workers_.find(worker);
  if (w == workers_.end()) return;
  // A worker holds at most its capacity running plus as many ended or
  // assigned: a frame listing far more is refused whole, so no frame can
  // make the leader chase thousands of refs it never handed out.
  const std::size_t refs = m.running.size() + m.finished.size() + m.assigned.size();
  const std::size_t cap = 4 * static_cast<std::size_t>(std::max(1, w->second.capacity)) + 64;
  if (refs > cap) {
    count(Counter::protocol_errors);
    log(LogLevel::warn, fmt::format("heartbeat_refused worker={} refs={} limit={} epoch={}", json_quote(worker), refs,
                                    cap, epoch_.value));
    send_link(w->second.link,
              protocol::Error{"protocol", "heartbeat lists " + std::to_string(refs) +
                                              " attempts; a worker of capacity " + std::to_string(w->second.capacity) +
                                              " may list at most " + std::to_string(cap)});
    return;
  }
  w->second.heartbeats++;
  // Everything the worker holds -- running, ended with its finish not yet
  // acknowledged, assigned and not started -- counts as listed: only an
  // attempt in none of the lists is one the worker does not have.
  auto listed = [&](const protocol::AttemptRef& ref) {
    auto it = tracked_.find(ref.run_id);
    if (it != tracked_.end() && it->second.row.worker_id == worker && it->second.row.attempt == ref.attempt &&
        it->second.row.lease_token == ref.lease_token) {
      mark_listed(it->second);
      note_holder(it->second);
    }
  };
  for (const auto& ref : m.finished) {
    listed(ref);
    adopt_ended(worker, ref);
  }
  for (const auto& ref : m.assigned) listed(ref);
  // Unknown running refs are judged on a fresh read, never on a failed one
  // (a failed read proves nothing: no cancel then).
  const bool unknown = std::any_of(m.running.begin(), m.running.end(),
                                   [&](const protocol::AttemptRef& ref) { return !tracked_.count(ref.run_id); });
  if (!unknown) return judge_running(worker, m.running, true);
  with_fresh_view([this, worker, running = m.running](bool fresh) { judge_running(worker, running, fresh); });
}

void RunBook::judge_running(const std::string& worker, const std::vector<protocol::AttemptRef>& running, bool fresh) {
  for (const auto& ref : running) {
    auto it = tracked_.find(ref.run_id);
    const bool current = it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref);
    if (!current) {
      if (it == tracked_.end() && !fresh) continue;
      log(LogLevel::info, fmt::format("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id,
                                      ref.attempt, json_quote(worker), epoch_.value));
      send(worker, protocol::Cancel{ref, "attempt is no longer current"});
      continue;
    }
    mark_listed(it->second);
    note_holder(it->second);
    adopt_if_needed(ref.run_id, [this, run = ref.run_id](bool adopted) {
      if (adopted) heartbeat_due_.insert(run);
    });
  }
}

void RunBook::on_finish(const std::string& worker, const protocol::Finish& m, bool read_done) {
  auto it = tracked_.find(m.ref.run_id);
  const bool current = it != tracked_.end() && held_by(it->second.row, RunState::running, worker, m.ref);
  if (!current && !read_done) {
    // This book's copy may be stale (another epoch's writes, a lost race):
    // decide on a fresh read of every active run, never on a failed one (no
    // ack then: the worker keeps the finish in its outbox and sends it again).
    return with_fresh_view([this, worker, m](bool fresh) {
      if (fresh) on_finish(worker, m, true);
    });
  }
  if (current) return finish_current(worker, m);
  if (m.outcome == protocol::Outcome::succeeded) return late_success(worker, m);
  // A replay, or an attempt that was superseded: nothing to write.
  log(LogLevel::info, fmt::format("finish_ack_without_write run={} attempt={} worker={} epoch={}", m.ref.run_id,
                                  m.ref.attempt, json_quote(worker), epoch_.value));
  send(worker, protocol::FinishAck{m.ref});
}

void RunBook::finish_current(const std::string& worker, const protocol::Finish& m) {
  // A resend of a finish already queued or being written: its result answers it.
  if (pending_finish_ids_.count(m.ref.run_id) || writing_finish_ids_.count(m.ref.run_id)) return;
  adopt_if_needed(m.ref.run_id, [this, worker, m](bool adopted) {
    if (!adopted) return;  // no ack: the worker sends it again
    auto it = tracked_.find(m.ref.run_id);
    if (it == tracked_.end() || !held_by(it->second.row, RunState::running, worker, m.ref)) return;
    if (pending_finish_ids_.count(m.ref.run_id) || writing_finish_ids_.count(m.ref.run_id)) return;
    const store::ActiveRun& r = it->second.row;
    log_tails(r, m);

    store::AttemptFence att{worker, r.attempt, r.lease_token};
    const auto requested = cancel_requested_.find(r.id.value);
    if (m.outcome != protocol::Outcome::succeeded && requested != cancel_requested_.end()) {
      WriteRun w;
      w.kind = RunWriteKind::cancel;
      w.fence = {r.id, r.version, epoch_};
      w.from = RunState::running;
      w.reason = requested->second;
      return write(std::move(w), [this, worker, m, job = r.job_name](const Result<store::WriteResult>& res) {
        if (!note("finish", m.ref.run_id, res)) return;
        finished(job, "CANCELED", m.duration_ms);
        log(LogLevel::info,
            fmt::format("run_finished run={} attempt={} worker={} outcome={} state=CANCELED epoch={}", m.ref.run_id,
                        m.ref.attempt, json_quote(worker), protocol::to_string(m.outcome), epoch_.value));
        cancel_requested_.erase(m.ref.run_id);
        tracked_.erase(m.ref.run_id);
        send(worker, protocol::FinishAck{m.ref});
      });
    }
    // A CANCELED this leader did not ask for (an older leader's cancel from
    // a stale view, a cancel whose write then failed) is a failed attempt
    // that may be retried, never a final CANCELED.
    store::FinishRow row{r.id, r.version, att, {}, std::nullopt};
    row.finish.exit_code = m.exit_code;
    row.finish.error_msg = m.error;
    row.finish.result_json = result_json(m, log_ref_of(m));
    if (requested != cancel_requested_.end()) cancel_requested_.erase(requested);
    const RunState outcome = m.outcome == protocol::Outcome::succeeded   ? RunState::succeeded
                             : m.outcome == protocol::Outcome::timed_out ? RunState::timed_out
                                                                         : RunState::failed;
    row.finish.final_state = outcome;
    row.finish.error_code =
        outcome == RunState::succeeded ? "" : (outcome == RunState::timed_out ? "timeout" : "failed");
    auto decision =
        decide_finish(outcome, r.attempt, r.max_attempts, Millis{r.retry_base_ms}, Millis{r.retry_cap_ms}, jitter());
    if (decision.next == RunState::retry_waiting) row.retry_delay = decision.retry_delay;
    pending_finish_ids_.insert(r.id.value);
    pending_finishes_.push_back(std::move(row));
    finish_messages_[r.id.value] = {worker, m, r.job_name};
  });
}

void RunBook::on_output(const std::string& worker, const protocol::Output& m) {
  // Only the worker running this attempt speaks for its output: a replaced
  // attempt's, a stale connection's or another worker's frames are dropped
  // (no read for them: output is not worth a database round trip).
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() || !held_by(it->second.row, RunState::running, worker, m.ref)) return;
  emit(AppendRunOutput{{RunId{m.ref.run_id}, m.ref.attempt, m.stream, m.offset, m.data}});
}

void RunBook::log_tails(const store::ActiveRun& r, const protocol::Finish& m) {
  auto place = [&](const char* stream, const std::string& tail, const std::optional<std::int64_t>& length) {
    if (tail.empty()) return;
    if (!length) return emit(AppendRunLog{r.id, r.attempt, stream, tail});
    // The tail is the stream's last bytes: whatever streamed frames did not
    // arrive (a leader died in between) is filled in from it.
    const std::int64_t offset = std::max<std::int64_t>(0, *length - static_cast<std::int64_t>(tail.size()));
    emit(AppendRunOutput{{r.id, r.attempt, stream, offset, tail}});
  };
  place("stdout", m.stdout_tail, m.stdout_bytes);
  place("stderr", m.stderr_tail, m.stderr_bytes);
}

std::string RunBook::log_ref_of(const protocol::Finish& m) const {
  if (!cfg_.log_archive || !m.stdout_bytes) return "";
  return output_archive_ref(m.ref.run_id);
}

void RunBook::late_success(const std::string& worker, const protocol::Finish& m) {
  read_run(RunId{m.ref.run_id}, [this, worker, m](const Result<std::optional<store::RunRow>>& row) {
    if (!row) return;  // unknown: no ack, the worker sends it again
    const bool waiting_on_it = *row && (*row)->state == RunState::retry_waiting && (*row)->attempt == m.ref.attempt &&
                               (*row)->assigned_worker_id == worker && (*row)->lease_token == m.ref.lease_token;
    if (!waiting_on_it) {
      // A replay, or an attempt that was superseded: nothing to write.
      log(LogLevel::info, fmt::format("finish_ack_without_write run={} attempt={} worker={} epoch={}", m.ref.run_id,
                                      m.ref.attempt, json_quote(worker), epoch_.value));
      return send(worker, protocol::FinishAck{m.ref});
    }
    // The attempt was ended as lost, yet it succeeded, and nothing has run
    // since: keep the success rather than run the work again.
    const store::RunRow& r = **row;
    WriteRun w;
    w.kind = RunWriteKind::late_success;
    w.fence = {r.id, r.version, epoch_};
    w.attempt = {worker, r.attempt, *r.lease_token};
    w.finish.exit_code = m.exit_code;
    w.finish.result_json = result_json(m, log_ref_of(m));
    write(std::move(w), [this, worker, m, job = r.job_name](const Result<store::WriteResult>& res) {
      if (!note("late_success", m.ref.run_id, res)) return;
      finished(job, "SUCCEEDED", m.duration_ms);
      log(LogLevel::info,
          fmt::format("run_finished run={} attempt={} worker={} outcome=SUCCEEDED state=SUCCEEDED late=true epoch={}",
                      m.ref.run_id, m.ref.attempt, json_quote(worker), epoch_.value));
      send(worker, protocol::FinishAck{m.ref});
    });
  });
}

// --- batched starts and finishes -----------------------------------------

void RunBook::flush_finishes() {
  if (fenced_ || finish_lane_busy_ || pending_finishes_.empty()) return;
  std::vector<store::FinishRow> finishes;
  finishes.swap(pending_finishes_);
  writing_finish_ids_.swap(pending_finish_ids_);
  pending_finish_ids_.clear();
  finish_lane_busy_ = true;
  const OpId op = next_op();
  auto messages = std::make_shared<std::map<std::int64_t, QueuedFinish>>();
  messages->swap(finish_messages_);
  wait_lane_[op] = [this, finishes, messages](const Result<store::BatchWriteResult>& res) {
    finish_lane_busy_ = false;
    writing_finish_ids_.clear();
    apply_finishes(finishes, *messages, res);
    flush_finishes();  // group commit: whatever queued meanwhile, at once
  };
  emit(WriteFinishes{op, std::move(finishes)});
}

void RunBook::flush_starts() {
  for (auto it = early_starts_.begin(); it != early_starts_.end();) {
    if (it->second.first > now_) {
      ++it;
      continue;
    }
    // A start whose worker has left meanwhile is not written: the run stays
    // ASSIGNED for the reaper, or for the worker to ask again when back.
    const bool attached = workers_.count(it->second.second.attempt.worker_id) > 0;
    if (attached && !writing_start_ids_.count(it->first) && pending_start_ids_.insert(it->first).second)
      pending_starts_.push_back(std::move(it->second.second));
    it = early_starts_.erase(it);
  }
  if (fenced_ || start_lane_busy_ || pending_starts_.empty()) return;
  std::vector<store::StartRow> starts;
  starts.swap(pending_starts_);
  writing_start_ids_.swap(pending_start_ids_);
  pending_start_ids_.clear();
  start_lane_busy_ = true;
  const OpId op = next_op();
  wait_lane_[op] = [this, starts](const Result<store::BatchWriteResult>& res) {
    start_lane_busy_ = false;
    writing_start_ids_.clear();
    apply_starts(starts, res);
    flush_starts();  // group commit: whatever queued meanwhile, at once
  };
  emit(WriteStarts{op, std::move(starts), start_stale_after(cfg_)});
}

bool RunBook::lane_busy_with(std::int64_t run) const {
  return pending_start_ids_.count(run) || writing_start_ids_.count(run) || early_starts_.count(run) ||
         pending_finish_ids_.count(run) || writing_finish_ids_.count(run);
}

void RunBook::apply_starts(const std::vector<store::StartRow>& rows, const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("start_batch", rows.size(), res) || fenced_) return;
  std::vector<store::StartRow> lost;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    const store::WriteResult* applied = nullptr;
    if (res)
      if (auto a = res->applied.find(row.run.value); a != res->applied.end()) applied = &a->second;
    auto it = tracked_.find(row.run.value);
    if (!applied || it == tracked_.end()) {
      lost.push_back(row);
      continue;
    }
    store::ActiveRun& r = it->second.row;
    r.state = RunState::running;
    r.version = applied->new_version;
    r.leader_epoch = epoch_;
    it->second.started_at = now_;
    mark_listed(it->second);
    count(Counter::runs_started);
    log(LogLevel::info, fmt::format("run_started run={} attempt={} worker={} epoch={}", r.id.value, r.attempt,
                                    json_quote(r.worker_id), epoch_.value));
    send(r.worker_id, protocol::StartGranted{ref});
  }
  if (lost.empty()) return;
  // Judge the rows that were not written on a fresh read: one whose start is
  // already in the database (this book's copy was stale) is granted, one
  // that is no longer this worker's assignment is denied. After a failed
  // write and a failed read the outcome is unknown: nothing is sent, and the
  // worker asks again (a denial there cost the run an attempt that never ran).
  distrust();
  with_fresh_view([this, lost = std::move(lost)](bool fresh) {
    if (!fresh) return;
    for (const auto& row : lost) {
      const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
      auto it = tracked_.find(row.run.value);
      if (it != tracked_.end() && held_by(it->second.row, RunState::running, row.attempt.worker_id, ref))
        regrant_start(it->second, row.attempt.worker_id, ref);
      else if (it == tracked_.end() || !held_by(it->second.row, RunState::assigned, row.attempt.worker_id, ref))
        deny_start(row.attempt.worker_id, ref, "start lost a race");
      // Still ASSIGNED to it: the write failed, not the race; the next start it sends is written.
    }
  });
}

void RunBook::apply_finishes(const std::vector<store::FinishRow>& rows,
                             const std::map<std::int64_t, QueuedFinish>& messages,
                             const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("finish_batch", rows.size(), res) || fenced_) return;
  std::vector<QueuedFinish> lost;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    if (!res || !res->applied.count(row.run.value)) {
      log(LogLevel::debug, fmt::format("run_write_conflict op=finish run={} epoch={}", row.run.value, epoch_.value));
      if (auto m = messages.find(row.run.value); m != messages.end()) lost.push_back(m->second);
      continue;
    }
    if (auto m = messages.find(row.run.value); m != messages.end())
      finished(m->second.job, std::string(to_string(row.finish.final_state)), m->second.message.duration_ms);
    log(LogLevel::info,
        fmt::format("run_finished run={} attempt={} worker={} outcome={} state={} epoch={}", row.run.value,
                    row.attempt.attempt, json_quote(row.attempt.worker_id), to_string(row.finish.final_state),
                    row.retry_delay ? "RETRY_WAITING" : to_string(row.finish.final_state), epoch_.value));
    tracked_.erase(row.run.value);
    send(row.attempt.worker_id, protocol::FinishAck{ref});
  }
  if (res) dispatch_requested_ = true;  // capacity was freed
  if (lost.empty()) return;
  // Judged again at once on a fresh read (written in the next batch, or
  // acknowledged without a write), not left to the worker's resend: until
  // its finish is written, a success exists only on the worker, and a
  // worker lost now would leave it to the continuation deadline. After a
  // failed read, nothing is acknowledged: the worker sends it again.
  count(Counter::conflict_writes, static_cast<std::int64_t>(lost.size()));
  distrust();
  with_fresh_view([this, lost = std::move(lost)](bool fresh) {
    if (!fresh) return;
    for (const auto& f : lost) on_finish(f.worker, f.message, true);
  });
}

// --- operator cancel ----------------------------------------------------------

void RunBook::cancel(RunId run, const std::string& reason, MonoTime now) {
  now_ = now;
  on_cancel(run, reason, 0);
  after_input();
}

void RunBook::on_cancel(RunId run, const std::string& reason, int tries) {
  // A conflict means the run moved between the read and the write (a
  // heartbeat, a finish): read it again and decide again, a few times.
  if (tries >= 3) {
    log(LogLevel::warn, fmt::format("run_cancel_gave_up run={} epoch={} reason=conflicts", run.value, epoch_.value));
    return;
  }
  read_run(run, [this, reason, tries](const Result<std::optional<store::RunRow>>& row) {
    if (!row || !*row || is_terminal((*row)->state)) return;
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
      w.reason = reason;
      return write(std::move(w), [this, r, reason, tries](const Result<store::WriteResult>& res) {
        if (!note("request_cancel", r.id.value, res)) {
          if (conflict(res)) on_cancel(r.id, reason, tries + 1);
          return;
        }
        if (auto t = tracked_.find(r.id.value); t != tracked_.end()) {
          t->second.row.version = res->new_version;
          t->second.row.cancel_reason = reason;
        }
        cancel_requested_[r.id.value] = reason;
        log(LogLevel::info,
            fmt::format("run_cancel_requested run={} attempt={} worker={} attached={} epoch={}", r.id.value, r.attempt,
                        json_quote(*r.assigned_worker_id), workers_.count(*r.assigned_worker_id) > 0, epoch_.value));
        send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, reason});
      });
    }
    WriteRun w;
    w.kind = RunWriteKind::cancel;
    w.fence = {r.id, r.version, epoch_};
    w.from = r.state;
    w.reason = reason;
    write(std::move(w), [this, r, reason, tries](const Result<store::WriteResult>& res) {
      if (!note("cancel", r.id.value, res)) {
        if (conflict(res)) on_cancel(r.id, reason, tries + 1);
        return;
      }
      log(LogLevel::info, fmt::format("run_canceled run={} attempt={} from={} epoch={}", r.id.value, r.attempt,
                                      to_string(r.state), epoch_.value));
      if ((r.state == RunState::running || r.state == RunState::assigned) && r.assigned_worker_id && r.lease_token)
        send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, reason});
      tracked_.erase(r.id.value);
    });
  });
}

// --- invariants ---------------------------------------------------------------

void RunBook::check_invariants() const {
  // Once fenced, nothing reaches a worker or the database.
  BATON_ASSERT(!external_after_fence_);
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
  // Queued starts and finishes are each queued once (one statement, one row per run).
  BATON_ASSERT(pending_start_ids_.size() == pending_starts_.size());
  // At most one batch per lane is being written, and a run is in at most one
  // of a lane's queue and its batch being written.
  BATON_ASSERT(wait_lane_.size() == static_cast<std::size_t>(start_lane_busy_) + (finish_lane_busy_ ? 1u : 0u));
  BATON_ASSERT(start_lane_busy_ || writing_start_ids_.empty());
  BATON_ASSERT(finish_lane_busy_ || writing_finish_ids_.empty());
  for (auto id : writing_start_ids_) BATON_ASSERT(!pending_start_ids_.count(id));
  // A start held for its run's time is in no other queue of the start lane.
  for (const auto& [id, early] : early_starts_)
    BATON_ASSERT(!pending_start_ids_.count(id) && !writing_start_ids_.count(id) && early.second.run.value == id);
  for (auto id : writing_finish_ids_) BATON_ASSERT(!pending_finish_ids_.count(id));
  BATON_ASSERT(pending_finish_ids_.size() == pending_finishes_.size());
  BATON_ASSERT(finish_messages_.size() == pending_finishes_.size());
  // One connection per worker.
  std::set<LinkId> links;
  for (const auto& [id, w] : workers_) BATON_ASSERT(links.insert(w.link).second);
  // At most one read of the active runs is outstanding, and a waiter always has one.
  BATON_ASSERT(read_outstanding_ == !wait_active_.empty());
  BATON_ASSERT(read_waiters_.empty() || read_outstanding_);
}

}  // namespace baton::leader_core
