#include "baton/leader/control_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>

#include "baton/core/assert.h"
#include "baton/core/json_text.h"
#include "baton/leader_core/cron_plan.h"
#include "baton/leader_core/dispatch.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"

namespace baton::leader {

namespace {

using store::WriteOutcome;

// Catch-up bound for run_all misfire policy per job and pass.
constexpr int misfire_catch_up_max = 100;
// A missed slot older than this is not run under the `skip` policy.
constexpr std::int64_t skip_tolerance_s = 2;
// Cron runs are created this far ahead of their slot (see materialize_cron).
constexpr Millis cron_lookahead{1500};
// The loop waits for events at most this long between passes.
constexpr Millis loop_wait_max{10};

protocol::AttemptRef ref_of(const store::ActiveRun& r) {
  return protocol::AttemptRef{r.id.value, r.attempt, r.lease_token};
}

/// True when `r` is in `state` and held by exactly this worker's attempt.
bool held_by(const store::ActiveRun& r, RunState state, const std::string& worker, const protocol::AttemptRef& ref) {
  return r.state == state && r.worker_id == worker && r.attempt == ref.attempt && r.lease_token == ref.lease_token;
}

}  // namespace

ControlLoop::ControlLoop(Epoch epoch, NodeIdentity me, RuntimeConfig cfg, RunLanes runs, store::LeaderStore& store,
                         const Clock& clock, Metrics& metrics)
    : epoch_(epoch),
      me_(std::move(me)),
      cfg_(cfg),
      runs_(runs.main),
      lanes_(runs),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      rng_(static_cast<std::uint64_t>(epoch.value) * 7919u + 17u) {
  BATON_ASSERT(epoch_ > Epoch{0});
}

void ControlLoop::post(LoopEvent e) {
  {
    std::lock_guard lock(mutex_);
    inbox_.push_back(std::move(e));
  }
  wake_.notify_one();
}

std::chrono::milliseconds ControlLoop::jitter() {
  if (cfg_.retry_jitter_max.count() <= 0) return Millis{0};
  return Millis{static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>(cfg_.retry_jitter_max.count() + 1))};
}

void ControlLoop::run(const std::atomic<bool>& stop) {
  spdlog::info("control_loop_start node={} epoch={}", me_.node_id, epoch_.value);
  started_at_ = clock_.mono();
  refresh_runs();
  while (!stop.load() && !fenced_.load()) {
    std::deque<LoopEvent> batch;
    {
      auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(loop_wait_max);
      if (!cron_wakeups_.empty()) wait = std::clamp(*cron_wakeups_.begin() - clock_.mono(), decltype(wait){0}, wait);
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, wait, [&] { return !inbox_.empty(); });
      batch.swap(inbox_);
    }
    refreshed_in_pass_ = false;
    for (const auto& e : batch) {
      if (fenced_.load() || stop.load()) break;
      handle(e);
    }
    // Group commit: every finish and start that arrived in this pass is
    // written by one statement each (finishes first: they free capacity).
    flush_starts_and_finishes();
    const MonoTime now = clock_.mono();
    while (!cron_wakeups_.empty() && *cron_wakeups_.begin() <= now) {
      cron_wakeups_.erase(cron_wakeups_.begin());
      dispatch_requested_ = true;  // a cron slot is due now
    }
    // Workers that stopped talking are detached (their runs go through the
    // reaper like any detach).
    std::vector<std::pair<std::string, std::uint64_t>> silent;
    for (const auto& [id, w] : workers_)
      if (now - w.last_seen > cfg_.heartbeat_timeout) silent.emplace_back(id, w.link->id());
    for (const auto& [id, link] : silent) on_detached(id, link, "heartbeat_timeout");

    if (!fenced_ && now - last_reap_ >= cfg_.reap_every) {
      last_reap_ = now;
      reap();
    }
    if (!fenced_ && now - last_heartbeat_flush_ >= cfg_.heartbeat_interval) {
      last_heartbeat_flush_ = now;
      flush_heartbeats();
    }
    if (!fenced_ && now - last_cron_ >= cfg_.cron_every) {
      last_cron_ = now;
      materialize_cron();
    }
    if (!fenced_ && (dispatch_requested_ || now - last_dispatch_ >= cfg_.dispatch_every)) {
      last_dispatch_ = now;
      dispatch_requested_ = false;
      dispatch();
    }
  }
  for (auto& [id, w] : workers_) w.link->close(fenced_ ? "leader fenced" : "leader stepping down");
  workers_.clear();
  metrics_.attached_workers = 0;
  spdlog::info("control_loop_stop node={} epoch={} fenced={}", me_.node_id, epoch_.value, fenced_.load());
}

bool ControlLoop::note(const char* op, std::int64_t run, const Result<store::WriteResult>& r) {
  if (!r) {
    refreshed_in_pass_ = false;  // the outcome is unknown: the next read is needed
    spdlog::warn("run_write_error op={} run={} epoch={} error={}", op, run, epoch_.value, r.error().message);
    return false;
  }
  switch (r->outcome) {
    case WriteOutcome::applied: return true;
    case WriteOutcome::conflict:
      refreshed_in_pass_ = false;  // this loop's copy was stale
      metrics_.conflict_writes++;
      spdlog::debug("run_write_conflict op={} run={} epoch={}", op, run, epoch_.value);
      return false;
    case WriteOutcome::fenced:
      metrics_.fenced_writes++;
      fenced_ = true;
      spdlog::warn("run_write_fenced op={} run={} epoch={} current_epoch={}", op, run, epoch_.value,
                   r->current_epoch.value);
      return false;
  }
  return false;
}

void ControlLoop::send(const std::string& worker, const protocol::Message& m) {
  if (fenced_) return;
  auto it = workers_.find(worker);
  if (it != workers_.end()) it->second.link->send(m);
}

void ControlLoop::handle(const LoopEvent& e) {
  std::visit(
      [&](const auto& ev) {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, WorkerAttached>)
          on_attached(ev);
        else if constexpr (std::is_same_v<T, WorkerDetached>)
          on_detached(ev.worker_id, ev.link_id, "closed");
        else if constexpr (std::is_same_v<T, WorkerMessage>)
          on_message(ev);
        else if constexpr (std::is_same_v<T, CancelRun>)
          on_cancel(ev);
        else
          dispatch_requested_ = true;
      },
      e);
}

bool ControlLoop::refresh_runs() {
  // At most one full read per pass of the loop, however many messages ask
  // for one (a heartbeat listing thousands of unknown refs, a fleet
  // reattaching at once): within a pass, tracked_ is that read plus this
  // loop's own applied writes, and any write whose outcome was not what the
  // copy predicted (error, conflict) allows the next read.
  if (refreshed_in_pass_) return true;
  auto rows = store_.active_runs(cfg_.continuation_margin);
  if (!rows) {
    spdlog::warn("refresh_runs_error epoch={} error={}", epoch_.value, rows.error().message);
    return false;
  }
  std::map<std::int64_t, Tracked> next;
  for (auto& r : *rows) {
    auto old = tracked_.find(r.id.value);
    Tracked t{r, {}, 0, 0, {}, {}};
    const bool same_attempt = old != tracked_.end() && old->second.row.worker_id == r.worker_id &&
                              old->second.row.attempt == r.attempt && old->second.row.lease_token == r.lease_token;
    if (old != tracked_.end()) {
      t.tasks = old->second.tasks;
      t.link = old->second.link;
      t.listed_at = old->second.listed_at;
      if (same_attempt) t.holder = old->second.holder;
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
        t.confirm_until = clock_.mono() + Millis{std::max<std::int64_t>(0, r.continuation_remaining_ms.value_or(0))} +
                          cfg_.continuation_margin;
    }
    if (old == tracked_.end() || old->second.row.worker_id != r.worker_id || old->second.row.attempt != r.attempt)
      mark_listed(t);  // counted from now
    next.emplace(r.id.value, std::move(t));
  }
  tracked_ = std::move(next);
  refreshed_in_pass_ = true;
  // Cancel requests are on the runs (a leader before this one may have
  // recorded them): carry out any this leader did not know, and forget the
  // ones whose runs are no longer active.
  for (auto it = cancel_requested_.begin(); it != cancel_requested_.end();)
    it = tracked_.count(it->first) ? std::next(it) : cancel_requested_.erase(it);
  for (const auto& [id, t] : tracked_) {
    if (!t.row.cancel_reason || t.row.state != RunState::running || cancel_requested_.count(id)) continue;
    cancel_requested_[id] = *t.row.cancel_reason;
    spdlog::info("run_cancel_request_read run={} attempt={} worker={} epoch={}", id, t.row.attempt,
                 json_quote(t.row.worker_id), epoch_.value);
    send(t.row.worker_id, protocol::Cancel{ref_of(t.row), *t.row.cancel_reason});
  }
  return true;
}

void ControlLoop::on_attached(const WorkerAttached& e) {
  const std::string& id = e.hello.worker_id;
  if (auto old = workers_.find(id); old != workers_.end() && old->second.link->id() != e.link->id()) {
    // Two live processes using one worker id would each make the other's
    // attempts look lost: while the connection we have is alive and from
    // another process (not a reconnect, not its successor on the same
    // spool), the newcomer is refused. Otherwise the newest connection wins.
    const Attached& was = old->second;
    const bool other_process = !was.instance.empty() && !e.hello.instance.empty() && was.instance != e.hello.instance &&
                               e.hello.succeeds != was.instance;
    if (other_process && clock_.mono() - was.last_seen < cfg_.heartbeat_timeout) {
      metrics_.protocol_errors++;
      spdlog::error("worker_refused_duplicate_id worker={} instance={} attached_instance={} epoch={}", json_quote(id),
                    json_quote(e.hello.instance), json_quote(was.instance), epoch_.value);
      e.link->send(protocol::Error{"duplicate_worker_id", "worker id '" + id +
                                                              "' is in use by another attached worker process; "
                                                              "every worker needs an id of its own"});
      e.link->close("duplicate worker id");
      return;
    }
    old->second.link->close("replaced by a newer connection of the same worker");
  }
  workers_[id] =
      Attached{e.link, e.hello.capacity, e.hello.labels, clock_.mono(), false, 0, e.hello.instance, e.hello.succeeds};
  metrics_.attached_workers = static_cast<int>(workers_.size());
  if (auto r = store_.worker_attached(id, json_object(e.hello.labels), e.hello.capacity, me_.node_id, epoch_); !r)
    spdlog::warn("worker_registry_error worker={} error={}", id, r.error().message);

  // Adopt what the worker is still executing before welcoming it: the
  // welcome names the adopted attempts, and only those restart their
  // continuation clock on the worker. Anything it runs that is no longer its
  // attempt is killed (no two attempts of a run at once) -- but only on a
  // fresh read: a failed read proves nothing about a run.
  const bool fresh = refresh_runs();
  // Its listing count starts over on this connection.
  for (auto& [rid, t] : tracked_)
    if (t.row.worker_id == id) mark_listed(t);
  protocol::Welcome welcome{me_.node_id,
                            epoch_.value,
                            cfg_.heartbeat_interval.count(),
                            cfg_.heartbeat_timeout.count(),
                            cfg_.continuation_timeout.count(),
                            cfg_.continuation_margin.count(),
                            {}};
  std::vector<protocol::AttemptRef> stale;
  for (const auto& ref : e.hello.running) {
    auto it = tracked_.find(ref.run_id);
    const bool ours = it != tracked_.end() && held_by(it->second.row, RunState::running, id, ref);
    if (ours) {
      note_holder(it->second);
      if (adopt_if_needed(it->second.row)) welcome.adopted.push_back(ref);
    } else if (fresh || it != tracked_.end()) {
      stale.push_back(ref);
    }
  }
  e.link->send(welcome);
  // Cancels requested while it was away.
  for (const auto& ref : welcome.adopted)
    if (auto c = cancel_requested_.find(ref.run_id); c != cancel_requested_.end())
      e.link->send(protocol::Cancel{ref, c->second});
  spdlog::info("worker_attached worker={} capacity={} running={} finished={} adopted={} epoch={}", id, e.hello.capacity,
               e.hello.running.size(), e.hello.finished.size(), welcome.adopted.size(), epoch_.value);
  for (const auto& ref : stale) {
    spdlog::info("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id, ref.attempt, id,
                 epoch_.value);
    e.link->send(protocol::Cancel{ref, "attempt is no longer current"});
  }
}

void ControlLoop::mark_listed(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return;
  t.link = w->second.link->id();
  t.listed_at = w->second.heartbeats;
}

void ControlLoop::note_holder(Tracked& t) {
  if (auto w = workers_.find(t.row.worker_id); w != workers_.end()) t.holder = w->second.instance;
}

bool ControlLoop::speaks_for(const Tracked& t) const {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end()) return false;
  return t.holder.empty() || w->second.instance.empty() || w->second.instance == t.holder ||
         w->second.succeeds == t.holder;
}

std::int64_t ControlLoop::unlisted_heartbeats(Tracked& t) {
  auto w = workers_.find(t.row.worker_id);
  if (w == workers_.end() || !speaks_for(t)) return 0;
  if (t.link != w->second.link->id()) mark_listed(t);  // a new connection: count from now
  return static_cast<std::int64_t>(w->second.heartbeats - t.listed_at);
}

bool ControlLoop::adopt_if_needed(store::ActiveRun& r) {
  if (r.leader_epoch == epoch_ && r.continuation == ContinuationState::none) return true;
  auto w = runs_.adopt({r.id, r.version, epoch_}, {r.worker_id, r.attempt, r.lease_token});
  if (!note("adopt", r.id.value, w)) return false;
  r.version = w->new_version;
  r.leader_epoch = epoch_;
  r.continuation = ContinuationState::none;
  spdlog::info("run_adopted run={} attempt={} worker={} epoch={}", r.id.value, r.attempt, r.worker_id, epoch_.value);
  return true;
}

void ControlLoop::on_detached(const std::string& worker_id, std::uint64_t link_id, const char* why) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end() || it->second.link->id() != link_id) return;
  it->second.link->close(why);
  workers_.erase(it);
  metrics_.attached_workers = static_cast<int>(workers_.size());
  if (auto r = store_.worker_detached(worker_id); !r)
    spdlog::warn("worker_registry_error worker={} error={}", worker_id, r.error().message);
  spdlog::info("worker_detached worker={} reason={} epoch={}", worker_id, why, epoch_.value);
}

void ControlLoop::on_message(const WorkerMessage& e) {
  auto it = workers_.find(e.worker_id);
  if (it == workers_.end() || it->second.link->id() != e.link_id) return;  // from a replaced connection
  it->second.last_seen = clock_.mono();
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, protocol::Start>)
          on_start(e.worker_id, m);
        else if constexpr (std::is_same_v<T, protocol::Heartbeat>)
          on_heartbeat(e.worker_id, m);
        else if constexpr (std::is_same_v<T, protocol::Finish>)
          on_finish(e.worker_id, m);
        else if constexpr (std::is_same_v<T, protocol::Drain>)
          it->second.draining = true;
        else {
          metrics_.protocol_errors++;
          it->second.link->send(protocol::Error{
              "protocol", std::string("unexpected message '") + protocol::type_name(e.message) + "' from a worker"});
        }
      },
      e.message);
}

void ControlLoop::on_start(const std::string& worker, const protocol::Start& m) {
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end()) {
    refresh_runs();
    it = tracked_.find(m.ref.run_id);
  }
  if (it == tracked_.end()) return deny_start(worker, m.ref, "run is not assigned");
  const store::ActiveRun& r = it->second.row;
  if (held_by(r, RunState::running, worker, m.ref)) return regrant_start(it->second, worker, m.ref);
  if (!held_by(r, RunState::assigned, worker, m.ref))
    return deny_start(worker, m.ref, "not the current assignment of this run");
  // "No start right, no process": the grant is sent only after the batched
  // start write (flush_starts_and_finishes) has committed.
  if (!pending_start_ids_.insert(r.id.value).second) return;  // a repeated start already queued
  auto w = workers_.find(worker);
  pending_starts_.push_back(
      {r.id, r.version, {worker, r.attempt, r.lease_token}, w != workers_.end() ? w->second.instance : ""});
}

void ControlLoop::regrant_start(Tracked& t, const std::string& worker, const protocol::AttemptRef& ref) {
  // The start was written but its grant never reached the worker (the
  // connection, or the leader that sent it, died): the database already holds
  // this attempt's start right, so grant it again. Denying it left the run
  // RUNNING with no worker running it.
  spdlog::info("start_regranted run={} attempt={} worker={} epoch={}", ref.run_id, ref.attempt, worker, epoch_.value);
  mark_listed(t);
  send(worker, protocol::StartGranted{ref});
}

void ControlLoop::deny_start(const std::string& worker, const protocol::AttemptRef& ref, const std::string& why) {
  spdlog::info("start_denied run={} attempt={} worker={} epoch={} reason={}", ref.run_id, ref.attempt, worker,
               epoch_.value, why);
  send(worker, protocol::StartDenied{ref, why});
}

bool ControlLoop::batch_fenced(const char* op, std::size_t rows, const Result<store::BatchWriteResult>& r) {
  if (!r) {
    refreshed_in_pass_ = false;
    spdlog::warn("run_write_error op={} rows={} epoch={} error={}", op, rows, epoch_.value, r.error().message);
    return false;
  }
  if (r->applied.size() < rows) refreshed_in_pass_ = false;
  if (!r->fenced(epoch_)) return false;
  metrics_.fenced_writes++;
  fenced_ = true;
  spdlog::warn("run_write_fenced op={} rows={} epoch={} current_epoch={}", op, rows, epoch_.value,
               r->current_epoch.value);
  return true;
}

void ControlLoop::flush_starts_and_finishes() {
  if (fenced_ || (pending_starts_.empty() && pending_finishes_.empty())) return;
  std::vector<store::StartRow> starts;
  std::vector<store::FinishRow> finishes;
  starts.swap(pending_starts_);
  finishes.swap(pending_finishes_);
  pending_start_ids_.clear();
  pending_finish_ids_.clear();
  // The two statements touch disjoint rows (ASSIGNED vs RUNNING runs) and
  // are each fenced on their own: run them at the same time.
  std::future<Result<store::BatchWriteResult>> started;
  if (!starts.empty())
    started = std::async(std::launch::async, [&] {
      return lanes_.starts.start_batch(epoch_, starts, cfg_.heartbeat_timeout + cfg_.heartbeat_interval);
    });
  if (!finishes.empty()) apply_finishes(finishes, lanes_.finishes.finish_batch(epoch_, finishes));
  if (started.valid()) apply_starts(starts, started.get());
}

void ControlLoop::apply_starts(const std::vector<store::StartRow>& rows, const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("start_batch", rows.size(), res) || fenced_) return;
  std::vector<const store::StartRow*> lost;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    const store::WriteResult* applied = nullptr;
    if (res)
      if (auto a = res->applied.find(row.run.value); a != res->applied.end()) applied = &a->second;
    auto it = tracked_.find(row.run.value);
    if (!applied || it == tracked_.end()) {
      lost.push_back(&row);
      continue;
    }
    store::ActiveRun& r = it->second.row;
    r.state = RunState::running;
    r.version = applied->new_version;
    r.leader_epoch = epoch_;
    r.running_age_ms = 0;
    mark_listed(it->second);
    metrics_.runs_started++;
    spdlog::info("run_started run={} attempt={} worker={} epoch={}", r.id.value, r.attempt, r.worker_id, epoch_.value);
    send(r.worker_id, protocol::StartGranted{ref});
  }
  if (lost.empty()) return;
  // Judge the rows that were not written on a fresh read: one whose start is
  // already in the database (this loop's copy was stale) is granted, one
  // that is no longer this worker's assignment is denied. After a failed
  // write and a failed read the outcome is unknown: nothing is sent, and the
  // worker asks again (a denial there cost the run an attempt that never ran).
  if (!refresh_runs()) return;
  for (const auto* row : lost) {
    const protocol::AttemptRef ref{row->run.value, row->attempt.attempt, row->attempt.lease_token};
    auto it = tracked_.find(row->run.value);
    if (it != tracked_.end() && held_by(it->second.row, RunState::running, row->attempt.worker_id, ref))
      regrant_start(it->second, row->attempt.worker_id, ref);
    else if (it == tracked_.end() || !held_by(it->second.row, RunState::assigned, row->attempt.worker_id, ref))
      deny_start(row->attempt.worker_id, ref, "start lost a race");
    // Still ASSIGNED to it: the write failed, not the race; the next start it sends is written.
  }
}

void ControlLoop::on_heartbeat(const std::string& worker, const protocol::Heartbeat& m) {
  auto w = workers_.find(worker);
  if (w == workers_.end()) return;
  // A worker holds at most its capacity running plus as many ended or
  // assigned: a frame listing far more is refused whole, so no frame can
  // make the loop chase thousands of refs it never handed out.
  const std::size_t refs = m.running.size() + m.finished.size() + m.assigned.size();
  const std::size_t cap = 4 * static_cast<std::size_t>(std::max(1, w->second.capacity)) + 64;
  if (refs > cap) {
    metrics_.protocol_errors++;
    spdlog::warn("heartbeat_refused worker={} refs={} limit={} epoch={}", worker, refs, cap, epoch_.value);
    w->second.link->send(protocol::Error{
        "protocol", "heartbeat lists " + std::to_string(refs) + " attempts; a worker of capacity " +
                        std::to_string(w->second.capacity) + " may list at most " + std::to_string(cap)});
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
  for (const auto& ref : m.finished) listed(ref);
  for (const auto& ref : m.assigned) listed(ref);
  // Unknown running refs are judged on one fresh read per heartbeat, never
  // on a failed one (a failed read proves nothing: no cancel then).
  bool read = false, fresh = true;
  for (const auto& ref : m.running) {
    auto it = tracked_.find(ref.run_id);
    if (it == tracked_.end() && !read) {
      read = true;
      fresh = refresh_runs();
      it = tracked_.find(ref.run_id);
    }
    const bool current = it != tracked_.end() && held_by(it->second.row, RunState::running, worker, ref);
    if (!current) {
      if (it == tracked_.end() && !fresh) continue;
      spdlog::info("stale_attempt_cancel run={} attempt={} worker={} epoch={}", ref.run_id, ref.attempt, worker,
                   epoch_.value);
      send(worker, protocol::Cancel{ref, "attempt is no longer current"});
      continue;
    }
    mark_listed(it->second);
    note_holder(it->second);
    if (adopt_if_needed(it->second.row)) heartbeat_due_.insert(ref.run_id);
  }
}

void ControlLoop::flush_heartbeats() {
  if (heartbeat_due_.empty()) return;
  std::vector<store::HeartbeatRow> rows;
  for (auto id : heartbeat_due_) {
    auto it = tracked_.find(id);
    if (it == tracked_.end()) continue;
    const auto& r = it->second.row;
    rows.push_back({r.id, r.version, {r.worker_id, r.attempt, r.lease_token}});
  }
  heartbeat_due_.clear();
  auto res = store_.heartbeat_batch(epoch_, rows, cfg_.heartbeat_timeout * 2);
  if (!res || res->applied.size() < rows.size()) refreshed_in_pass_ = false;
  if (!res) {
    spdlog::warn("heartbeat_batch_error epoch={} error={}", epoch_.value, res.error().message);
    return;
  }
  if (res->current_epoch != epoch_) {
    metrics_.fenced_writes++;
    fenced_ = true;
    spdlog::warn("run_write_fenced op=heartbeat_batch rows={} epoch={} current_epoch={}", rows.size(), epoch_.value,
                 res->current_epoch.value);
    return;
  }
  bool missed = false;
  for (auto& row : rows) {
    auto applied = res->applied.find(row.id.value);
    if (applied == res->applied.end()) {
      missed = true;
      continue;
    }
    tracked_[row.id.value].row.version = applied->second;
  }
  if (missed) refresh_runs();
}

void ControlLoop::on_finish(const std::string& worker, const protocol::Finish& m) {
  auto matches = [&](const store::ActiveRun& r) { return held_by(r, RunState::running, worker, m.ref); };
  auto it = tracked_.find(m.ref.run_id);
  if (it == tracked_.end() || !matches(it->second.row)) {
    // This loop's copy may be stale (another epoch's writes, a lost race):
    // decide on a fresh read of every active run, never on a failed one.
    if (!refresh_runs()) return;  // no ack: the worker keeps it in its outbox and sends it again
    it = tracked_.find(m.ref.run_id);
  }
  if (it == tracked_.end() || !matches(it->second.row)) {
    if (m.outcome == protocol::Outcome::succeeded && late_success(worker, m)) return;
    // A replay, or an attempt that was superseded: nothing to write.
    spdlog::info("finish_ack_without_write run={} attempt={} worker={} epoch={}", m.ref.run_id, m.ref.attempt, worker,
                 epoch_.value);
    send(worker, protocol::FinishAck{m.ref});
    return;
  }
  if (pending_finish_ids_.count(m.ref.run_id)) return;  // a resend of a finish already queued
  store::ActiveRun& r = it->second.row;
  if (!adopt_if_needed(r)) return;

  if (!m.stdout_tail.empty()) (void)store_.append_run_log(r.id, r.attempt, "stdout", m.stdout_tail);
  if (!m.stderr_tail.empty()) (void)store_.append_run_log(r.id, r.attempt, "stderr", m.stderr_tail);

  store::AttemptFence att{worker, r.attempt, r.lease_token};
  const auto requested = cancel_requested_.find(r.id.value);
  if (m.outcome != protocol::Outcome::succeeded && requested != cancel_requested_.end()) {
    auto w = runs_.cancel({r.id, r.version, epoch_}, RunState::running, requested->second);
    if (!note("finish", r.id.value, w)) return;
    metrics_.runs_finished++;
    spdlog::info("run_finished run={} attempt={} worker={} outcome={} state=CANCELED epoch={}", r.id.value, r.attempt,
                 worker, protocol::to_string(m.outcome), epoch_.value);
    cancel_requested_.erase(requested);
    tracked_.erase(it);
    send(worker, protocol::FinishAck{m.ref});
    return;
  }
  // A CANCELED this leader did not ask for (an older leader's cancel from a
  // stale view, a cancel whose write then failed) is a failed attempt that
  // may be retried, never a final CANCELED.
  store::FinishRow row{r.id, r.version, att, {}, std::nullopt};
  row.finish.exit_code = m.exit_code;
  row.finish.error_msg = m.error;
  row.finish.result_json = "{\"duration_ms\":" + std::to_string(m.duration_ms) + "}";
  if (requested != cancel_requested_.end()) cancel_requested_.erase(requested);
  const RunState outcome = m.outcome == protocol::Outcome::succeeded   ? RunState::succeeded
                           : m.outcome == protocol::Outcome::timed_out ? RunState::timed_out
                                                                       : RunState::failed;
  row.finish.final_state = outcome;
  row.finish.error_code = outcome == RunState::succeeded ? "" : (outcome == RunState::timed_out ? "timeout" : "failed");
  auto decision = leader_core::decide_finish(outcome, r.attempt, r.max_attempts, Millis{r.retry_base_ms},
                                             Millis{r.retry_cap_ms}, jitter());
  if (decision.next == RunState::retry_waiting) row.retry_delay = decision.retry_delay;
  pending_finish_ids_.insert(r.id.value);
  pending_finishes_.push_back(std::move(row));
}

bool ControlLoop::late_success(const std::string& worker, const protocol::Finish& m) {
  auto row = runs_.read_run(RunId{m.ref.run_id});
  if (!row) return true;  // unknown: no ack, the worker sends it again
  if (!*row) return false;
  const store::RunRow& r = **row;
  if (r.state != RunState::retry_waiting || r.attempt != m.ref.attempt || r.assigned_worker_id != worker ||
      r.lease_token != m.ref.lease_token)
    return false;
  // The attempt was ended as lost, yet it succeeded, and nothing has run
  // since: keep the success rather than run the work again.
  store::Finish fin;
  fin.exit_code = m.exit_code;
  fin.result_json = "{\"duration_ms\":" + std::to_string(m.duration_ms) + "}";
  auto w = runs_.late_success({r.id, r.version, epoch_}, {worker, r.attempt, *r.lease_token}, fin);
  if (!note("late_success", r.id.value, w)) return true;
  metrics_.runs_finished++;
  spdlog::info("run_finished run={} attempt={} worker={} outcome=SUCCEEDED state=SUCCEEDED late=true epoch={}",
               r.id.value, r.attempt, worker, epoch_.value);
  send(worker, protocol::FinishAck{m.ref});
  return true;
}

void ControlLoop::apply_finishes(const std::vector<store::FinishRow>& rows,
                                 const Result<store::BatchWriteResult>& res) {
  if (batch_fenced("finish_batch", rows.size(), res) || fenced_) return;
  bool lost = false;
  for (const auto& row : rows) {
    const protocol::AttemptRef ref{row.run.value, row.attempt.attempt, row.attempt.lease_token};
    if (!res || !res->applied.count(row.run.value)) {
      // No ack: the worker sends it again and it is judged on a fresh read.
      lost = true;
      spdlog::debug("run_write_conflict op=finish run={} epoch={}", row.run.value, epoch_.value);
      continue;
    }
    metrics_.runs_finished++;
    spdlog::info("run_finished run={} attempt={} worker={} outcome={} state={} epoch={}", row.run.value,
                 row.attempt.attempt, row.attempt.worker_id, to_string(row.finish.final_state),
                 row.retry_delay ? "RETRY_WAITING" : to_string(row.finish.final_state), epoch_.value);
    tracked_.erase(row.run.value);
    send(row.attempt.worker_id, protocol::FinishAck{ref});
  }
  if (res) dispatch_requested_ = true;  // capacity was freed
  if (lost) {
    metrics_.conflict_writes++;
    refresh_runs();
  }
}

void ControlLoop::on_cancel(const CancelRun& c) {
  // A conflict means the run moved between the read and the write (a
  // heartbeat, a finish): read it again and decide again, a few times.
  for (int tries = 0; tries < 3; ++tries) {
    auto row = runs_.read_run(c.run);
    if (!row || !*row || is_terminal((*row)->state)) return;
    const auto& r = **row;
    const auto conflict = [](const Result<store::WriteResult>& w) { return w && w->outcome == WriteOutcome::conflict; };
    if (r.state == RunState::running && r.assigned_worker_id && r.lease_token) {
      // A running attempt is cancelled by its worker, and its finish decides:
      // CANCELED if the worker killed it, SUCCEEDED if it had already ended
      // successfully (a cancel never throws a completed success away). Its
      // worker may be away (CONFIRMING): the cancel is sent when it comes
      // back, and if it never does the attempt ends CANCELED at the
      // continuation deadline instead of being retried -- never written
      // CANCELED at once while its process may still be running or may
      // already have succeeded.
      //
      // The request is written to the run first (fenced like every write),
      // so a leader change before the worker reports cannot lose it: the
      // next leader reads it with the active runs (refresh_runs).
      auto w = runs_.request_cancel({r.id, r.version, epoch_}, c.reason);
      if (!note("request_cancel", r.id.value, w)) {
        if (conflict(w)) continue;
        return;
      }
      if (auto t = tracked_.find(r.id.value); t != tracked_.end()) {
        t->second.row.version = w->new_version;
        t->second.row.cancel_reason = c.reason;
      }
      cancel_requested_[r.id.value] = c.reason;
      spdlog::info("run_cancel_requested run={} attempt={} worker={} attached={} epoch={}", r.id.value, r.attempt,
                   json_quote(*r.assigned_worker_id), workers_.count(*r.assigned_worker_id) > 0, epoch_.value);
      send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, c.reason});
      return;
    }
    auto w = runs_.cancel({r.id, r.version, epoch_}, r.state, c.reason);
    if (!note("cancel", r.id.value, w)) {
      if (conflict(w)) continue;
      return;
    }
    spdlog::info("run_canceled run={} attempt={} from={} epoch={}", r.id.value, r.attempt, to_string(r.state),
                 epoch_.value);
    if ((r.state == RunState::running || r.state == RunState::assigned) && r.assigned_worker_id && r.lease_token)
      send(*r.assigned_worker_id, protocol::Cancel{{r.id.value, r.attempt, *r.lease_token}, c.reason});
    tracked_.erase(r.id.value);
    return;
  }
  spdlog::warn("run_cancel_gave_up run={} epoch={} reason=conflicts", c.run.value, epoch_.value);
}

void ControlLoop::dispatch() {
  std::map<std::string, int> holding;
  for (const auto& [id, t] : tracked_) holding[t.row.worker_id]++;
  std::vector<leader_core::WorkerCapacity> capacity;
  // Free slots per label set: due runs are read per label set, each read
  // only returning runs a worker of that set can take, so runs that no free
  // worker can place never fill the batch ahead of runs that one can.
  std::map<std::map<std::string, std::string>, int> free_by_labels;
  int free_total = 0;
  for (const auto& [id, w] : workers_) {
    int free = std::max(0, w.capacity - holding[id]);
    if (!w.draining && free > 0) {
      free_total += free;
      free_by_labels[w.labels] += free;
    }
    capacity.push_back({id, w.labels, free, w.draining});
  }
  if (free_total == 0) return;
  const MonoTime now = clock_.mono();
  std::vector<store::DueRun> due;
  std::set<std::int64_t> seen;
  for (const auto& [labels, free] : free_by_labels) {
    const int limit = std::min(cfg_.dispatch_batch, free);
    auto slice = store_.due_runs(limit, labels);
    if (!slice) {
      spdlog::warn("due_runs_error epoch={} error={}", epoch_.value, slice.error().message);
      return;
    }
    // A full slice means more may be waiting: dispatch again on the next pass.
    if (static_cast<int>(slice->size()) >= limit) dispatch_requested_ = true;
    for (auto& d : *slice)
      if (seen.insert(d.id.value).second) due.push_back(std::move(d));
  }
  std::map<std::int64_t, const store::DueRun*> by_id;
  std::vector<leader_core::DispatchCandidate> candidates;
  for (const auto& d : due) {
    due_since_.try_emplace(d.id.value, now);
    if (d.state == RunState::orphaned && d.unstarted_assignments >= cfg_.max_unstarted_assignments) {
      auto w = runs_.fail_unrunnable({d.id, d.version, epoch_}, RunState::orphaned, "orphaned",
                                     "assigned " + std::to_string(d.unstarted_assignments) +
                                         " times and never started (the worker was lost each time)");
      if (note("fail_unrunnable", d.id.value, w))
        spdlog::warn("run_failed_unstarted run={} assignments={} epoch={}", d.id.value, d.unstarted_assignments,
                     epoch_.value);
      continue;
    }
    by_id[d.id.value] = &d;
    candidates.push_back({d.id.value, d.selector});
  }
  auto plan = leader_core::plan_dispatch(candidates, capacity);
  struct Planned {
    const store::DueRun* due;
    std::vector<protocol::Task> tasks;
  };
  std::vector<store::AssignRow> rows;
  std::map<std::int64_t, Planned> planned;
  for (const auto& a : plan.assignments) {
    const store::DueRun& d = *by_id[a.run_id];
    auto tasks = protocol::decode_tasks(d.tasks_json);
    if (std::holds_alternative<protocol::DecodeError>(tasks)) {
      // It can never run: fail it with a clear error (and a dead letter)
      // rather than skip it on every pass, holding a slot of the batch.
      const std::string why = "job '" + d.job_name + "' has a task list that cannot be sent to a worker: " +
                              std::get<protocol::DecodeError>(tasks).message;
      spdlog::error("run_tasks_invalid run={} job={} error={}", d.id.value, d.job_name,
                    std::get<protocol::DecodeError>(tasks).message);
      note("fail_unrunnable", d.id.value,
           runs_.fail_unrunnable({d.id, d.version, epoch_}, d.state, "bad_definition", why));
      continue;
    }
    auto& task_list = std::get<std::vector<protocol::Task>>(tasks);
    if (task_list.empty()) task_list.push_back(protocol::Task{});  // a run without a job: NOOP
    rows.push_back({d.id, d.version, d.state, a.worker_id, cfg_.continuation_timeout});
    planned[d.id.value] = Planned{&d, std::move(task_list)};
  }
  if (rows.empty() || fenced_) return;
  auto res = runs_.assign_batch(epoch_, rows);
  if (batch_fenced("assign_batch", rows.size(), res) || !res) return;
  if (res->applied.size() < rows.size()) metrics_.conflict_writes += rows.size() - res->applied.size();
  for (const auto& a : rows) {
    auto applied = res->applied.find(a.run.value);
    if (applied == res->applied.end()) continue;  // lost a race: the next dispatch re-reads it
    const auto& w = applied->second;
    const store::DueRun& d = *planned[a.run.value].due;
    store::ActiveRun row;
    row.id = d.id;
    row.version = w.new_version;
    row.state = RunState::assigned;
    row.attempt = w.attempt;
    row.max_attempts = d.max_attempts;
    row.worker_id = a.worker_id;
    row.lease_token = w.lease_token;
    row.leader_epoch = epoch_;
    row.timeout_ms = d.timeout_ms;
    row.retry_base_ms = d.retry_base_ms;
    row.retry_cap_ms = d.retry_cap_ms;
    row.continuation_timeout_ms = cfg_.continuation_timeout.count();
    auto& tasks = planned[a.run.value].tasks;
    metrics_.runs_assigned++;
    if (auto since = due_since_.find(d.id.value); since != due_since_.end()) {
      metrics_.observe_dispatch_latency_us(
          std::chrono::duration_cast<std::chrono::microseconds>(clock_.mono() - since->second).count());
      due_since_.erase(since);
    }
    spdlog::info("run_assigned run={} attempt={} worker={} epoch={}", d.id.value, w.attempt, a.worker_id, epoch_.value);
    send(a.worker_id, protocol::Assign{ref_of(row), tasks, d.timeout_ms, row.continuation_timeout_ms});
    Tracked t{row, std::move(tasks), 0, 0, {}, {}};
    mark_listed(t);
    note_holder(t);
    tracked_[d.id.value] = std::move(t);
  }
  if (due_since_.size() > 100000) due_since_.clear();  // bound: only a latency metric depends on it
}

void ControlLoop::reap() {
  refresh_runs();
  // A new leader starts with no worker attached: give the fleet one
  // heartbeat interval to reattach before treating its workers as gone.
  const MonoTime now = clock_.mono();
  const bool reattach_window = now - started_at_ < cfg_.heartbeat_interval;
  std::vector<leader_core::ReaperView> views;
  for (auto& [id, t] : tracked_) {
    const auto& r = t.row;
    // A worker attached through a process that cannot speak for this
    // attempt (another process using the same id) counts as absent for it:
    // the attempt goes through CONFIRMING like any detach.
    const bool attached = workers_.count(r.worker_id) > 0 && speaks_for(t);
    // Expired only when both clocks say so: the database's deadline (wall
    // clock, shared by every leader) and this leader's own monotonic one.
    const bool expired = r.continuation_expired && t.confirm_until && now >= *t.confirm_until;
    views.push_back({id, r.state, r.worker_id, attached || reattach_window, r.leader_epoch == epoch_, r.continuation,
                     expired, r.assigned_age_ms, r.running_age_ms, r.timeout_ms,
                     r.state == RunState::running ? unlisted_heartbeats(t) : 0});
  }
  leader_core::ReaperConfig rc{cfg_.reassign_after, cfg_.reassign_detached_after, cfg_.timeout_grace};
  for (const auto& action : leader_core::plan_reaping(views, rc)) {
    if (fenced_) return;
    auto it = tracked_.find(action.run_id);
    if (it == tracked_.end()) continue;
    store::ActiveRun& r = it->second.row;
    store::RunFence fence{r.id, r.version, epoch_};
    switch (action.kind) {
      case leader_core::ReapKind::orphan: {
        auto w = runs_.orphan(fence);
        if (note("orphan", r.id.value, w)) {
          metrics_.runs_orphaned++;
          spdlog::info("run_orphaned run={} attempt={} worker={} epoch={}", r.id.value, r.attempt, r.worker_id,
                       epoch_.value);
          send(r.worker_id, protocol::Cancel{ref_of(r), "assignment expired"});
          tracked_.erase(it);
        }
        break;
      }
      case leader_core::ReapKind::begin_confirming: {
        auto w = runs_.begin_confirming(fence, cfg_.continuation_timeout);
        if (note("begin_confirming", r.id.value, w)) {
          // The run's own timeout (the worker got it with the attempt) when
          // it has one; read after the write, so never earlier than the
          // database's deadline.
          const Millis timeout{r.continuation_timeout_ms > 0 ? r.continuation_timeout_ms
                                                             : cfg_.continuation_timeout.count()};
          r.version = w->new_version;
          r.continuation = ContinuationState::confirming;
          it->second.confirm_until = clock_.mono() + timeout + cfg_.continuation_margin;
          spdlog::info("run_confirming run={} attempt={} worker={} deadline_in={}ms epoch={}", r.id.value, r.attempt,
                       r.worker_id, timeout.count(), epoch_.value);
        }
        break;
      }
      case leader_core::ReapKind::attempt_lost:
      case leader_core::ReapKind::enforce_timeout: {
        const bool lost = action.kind == leader_core::ReapKind::attempt_lost;
        if (!adopt_if_needed(r)) break;
        store::Finish fin;
        fin.final_state = lost ? RunState::failed : RunState::timed_out;
        fin.error_code = lost ? "attempt_lost" : "timeout";
        fin.error_msg = lost ? "worker did not return before its continuation deadline"
                             : "no finish from the worker within timeout + grace";
        auto decision = leader_core::decide_finish(fin.final_state, r.attempt, r.max_attempts, Millis{r.retry_base_ms},
                                                   Millis{r.retry_cap_ms}, jitter());
        store::AttemptFence att{r.worker_id, r.attempt, r.lease_token};
        store::RunFence f2{r.id, r.version, epoch_};
        auto cancel = cancel_requested_.find(r.id.value);
        auto w = cancel != cancel_requested_.end()          ? runs_.cancel(f2, RunState::running, cancel->second)
                 : decision.next == RunState::retry_waiting ? runs_.retry_later(f2, att, fin, decision.retry_delay)
                                                            : runs_.finish(f2, att, fin);
        if (cancel != cancel_requested_.end()) cancel_requested_.erase(cancel);
        if (note(lost ? "attempt_lost" : "enforce_timeout", r.id.value, w)) {
          spdlog::info("run_attempt_ended run={} attempt={} reason={} next={} epoch={}", r.id.value, r.attempt,
                       fin.error_code, to_string(decision.next), epoch_.value);
          // Cancel only after the write committed (a cancel whose write then
          // failed turned a healthy run into a final CANCELED), and always:
          // whatever of the attempt may still exist on the worker must die.
          send(r.worker_id, protocol::Cancel{ref_of(r), lost ? "attempt declared lost" : "run timed out"});
          tracked_.erase(it);
        }
        break;
      }
    }
  }
}

void ControlLoop::materialize_cron() {
  auto jobs = store_.scheduled_jobs();
  if (!jobs) {
    spdlog::warn("cron_read_error epoch={} error={}", epoch_.value, jobs.error().message);
    return;
  }
  for (const auto& j : *jobs) {
    auto cached = cron_cache_.find(j.schedule);
    if (cached == cron_cache_.end()) {
      auto parsed = leader_core::parse_cron(j.schedule);
      std::optional<leader_core::CronSchedule> s;
      if (auto* ok = std::get_if<leader_core::CronSchedule>(&parsed))
        s = *ok;
      else
        spdlog::error("cron_invalid job={} schedule='{}' error={}", j.name, j.schedule,
                      std::get<leader_core::CronParseError>(parsed).message);
      cached = cron_cache_.emplace(j.schedule, s).first;
    }
    if (!cached->second) continue;
    const auto offset = leader_core::time_zone_offset(j.time_zone);
    const auto policy = leader_core::parse_misfire_policy(j.misfire_policy);
    if (!offset || !policy) {
      spdlog::error("cron_invalid job={} time_zone='{}' misfire_policy='{}'", j.name, j.time_zone, j.misfire_policy);
      continue;
    }
    // Slots up to `cron_lookahead` ahead are created now, PENDING with their
    // slot time; the dispatcher does not see them before the slot, and the
    // loop wakes at the slot (cron_wakeups_), so a run starts within a few
    // milliseconds of its slot instead of up to a materialisation period late.
    leader_core::CronPlanInput in;
    in.schedule = *cached->second;
    in.utc_offset = *offset;
    in.policy = *policy;
    if (j.last_slot_unix) in.last_slot = std::chrono::sys_seconds{std::chrono::seconds{*j.last_slot_unix}};
    in.db_now = std::chrono::sys_time<std::chrono::milliseconds>{Millis{j.now_unix_ms}};
    in.lookahead = cron_lookahead;
    in.catch_up_max = misfire_catch_up_max;
    in.skip_tolerance = std::chrono::seconds{skip_tolerance_s};
    const auto due = leader_core::plan_cron_slots(in).slots;
    for (auto slot : due) {
      auto w = store_.create_job_run(epoch_, j.name, std::nullopt, "cron", slot.time_since_epoch().count());
      if (!w) {
        spdlog::warn("cron_create_error job={} slot={} error={}", j.name, slot.time_since_epoch().count(),
                     w.error().message);
        break;
      }
      if (w->outcome == WriteOutcome::fenced) {
        metrics_.fenced_writes++;
        fenced_ = true;
        spdlog::warn("run_write_fenced op=cron_create job={} epoch={} current_epoch={}", j.name, epoch_.value,
                     w->current_epoch.value);
        return;
      }
      if (w->outcome == WriteOutcome::applied) {
        metrics_.runs_created_by_cron++;
        const std::int64_t due_in_ms = slot.time_since_epoch().count() * 1000 - j.now_unix_ms;
        if (due_in_ms > 0) cron_wakeups_.insert(clock_.mono() + Millis{due_in_ms + 1});
        spdlog::info("cron_slot_fired job={} slot={} run={} epoch={}", j.name, slot.time_since_epoch().count(),
                     w->run.value, epoch_.value);
      }
    }
  }
}

}  // namespace baton::leader
