// RunBook, the pass: what tick() sets going once the inbox is drained --
// the heartbeat flush, the reaper (CONFIRMING, lost attempts, timeouts,
// orphans), cron materialisation and dispatch. The inputs, the messages and
// the batched writes are in run_book.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "baton/base/json_text.h"
#include "baton/base/weaken.h"
#include "baton/leader_core/assignment_plan.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/run_book.h"
#include "baton/protocol/codec.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- the pass ---------------------------------------------------------------

void RunBook::dispatch_now() {
  dispatch_requested_ = true;
  after_input();
}

void RunBook::created(const std::vector<store::DueRun>& runs, MonoTime now) {
  now_ = now;
  // A pass under way may be reading or assigning: its capacity view is not
  // whole until its writes return, and the pass's own dispatch reads these
  // runs anyway.
  if (!fenced_ && !runs.empty() && controls_ && controls_->dispatch_enabled && pass_outstanding() == 0)
    dispatch_due(runs);
  else
    dispatch_requested_ = true;
  after_input();
}

void RunBook::tick(MonoTime now) {
  now_ = now;
  while (!wakeups_.empty() && *wakeups_.begin() <= now_) {
    wakeups_.erase(wakeups_.begin());
    dispatch_requested_ = true;  // a cron slot is due now (or an early start's time: flush_starts)
  }
  // The lanes never wait for a pass: what queued since the last tick goes
  // out on each free lane now, even while the pass before is still waiting
  // for a read or its assignment (the shell may write those on a lane too).
  flush_finishes();
  flush_starts();
  // One pass at a time, its steps in order: a tick while one is under way
  // only flushed the lanes, and the next tick begins the next pass.
  if (!in_pass_) {
    steps_ = step_silent | step_reap | step_heartbeats | step_cron | step_controls | step_dispatch;
    in_pass_ = true;
    cron_.new_pass();
  }
  after_input();
}

void RunBook::flush_heartbeats() {
  if (heartbeat_due_.empty()) return;
  std::vector<store::HeartbeatRow> rows;
  for (auto id : heartbeat_due_) {
    auto it = tracked_.find(id);
    if (it == tracked_.end()) continue;
    const auto& r = it->second.row;
    rows.push_back({r.id, r.version, {r.worker_id, r.attempt, r.lease_token}});
  }
  heartbeat_due_.clear();
  if (rows.empty()) return;
  const OpId op = next_op();
  wait_heartbeats_[op] = [this, rows](const Result<store::HeartbeatBatchResult>& res) {
    if (!res) {
      distrust();
      log(LogLevel::warn, fmt::format("heartbeat_batch_error epoch={} error={}", epoch_.value, res.error().message));
      return;
    }
    if (res->current_epoch != epoch_)
      return fence("heartbeat_batch", "rows=" + std::to_string(rows.size()), res->current_epoch);
    bool unexplained = false;
    for (const auto& row : rows) {
      auto applied = res->applied.find(row.id.value);
      auto it = tracked_.find(row.id.value);
      if (applied != res->applied.end() && it != tracked_.end()) {
        it->second.row.version = applied->second;
        continue;
      }
      if (applied != res->applied.end()) continue;  // written, and the book let the run go meanwhile
      // Missed. Explained when this book moved the run since the row was
      // built (it finished, started or wrote it otherwise: it left the book
      // or its version moved on); under load that is nearly every flush,
      // and each such miss cost a read of every active run. Otherwise the
      // copy may be stale: read.
      const bool moved_by_book = it == tracked_.end() || it->second.row.version != row.version;
      unexplained = unexplained || !moved_by_book;
    }
    if (unexplained) {
      distrust();
      with_fresh_view([](bool) {});
    }
  };
  emit(WriteHeartbeats{op, std::move(rows), cfg_.heartbeat_timeout * 2});
}

void RunBook::drop_unacknowledged_grants() {
  // A start granted with its assignment that its worker has still not
  // listed after as many heartbeats as make an attempt lost: its frame was
  // lost or is held on the way, and the two cannot be told apart while the
  // connection lives (a held frame would start the attempt whenever it
  // arrives). Closing the connection ends that: the worker's next hello
  // lists what it holds, nothing of this connection can reach it after, and
  // the attempt is judged as any RUNNING attempt of a detached worker.
  std::set<std::string> drop;
  for (const auto& [id, t] : tracked_) {
    if (!t.grant_in_flight) continue;
    auto w = workers_.find(t.row.worker_id);
    if (w == workers_.end() || w->second.link != *t.grant_in_flight) continue;
    if (static_cast<std::int64_t>(w->second.heartbeats - t.listed_at) >= ReaperConfig{}.unlisted_heartbeats_lost) {
      log(LogLevel::warn, fmt::format("start_unacknowledged run={} attempt={} worker={} epoch={}", id, t.row.attempt,
                                      json_quote(t.row.worker_id), epoch_.value));
      drop.insert(t.row.worker_id);
    }
  }
  for (const auto& worker : drop) drop_worker(worker, "a start granted with its assignment was not acknowledged");
}

void RunBook::reap(bool /*fresh*/) {
  drop_unacknowledged_grants();
  // Decided on the fresh read when it succeeded, on this book's copy when it
  // failed: every action is a fenced write that a stale copy cannot apply.
  // A new leader starts with no worker attached: give the fleet one
  // heartbeat interval to reattach before treating its workers as gone.
  const bool reattach_window = now_ - started_ < cfg_.heartbeat_interval;
  std::vector<ReaperView> views;
  for (auto& [id, t] : tracked_) {
    const auto& r = t.row;
    // A start or finish of the run is on its lane: its result decides what
    // happens to the run, not the reaper. (Not needed for safety: the two
    // writes carry the same version and at most one applies; a finish that
    // lost is judged again. It spares the run a CONFIRMING write and a
    // re-read on every detach that races its finish.)
    if (lane_busy_with(id)) continue;
    // A worker attached through a process that cannot speak for this
    // attempt (another process using the same id) counts as absent for it:
    // the attempt goes through CONFIRMING like any detach.
    const bool attached = workers_.count(r.worker_id) > 0 && speaks_for(t);
    // Expired only when both clocks say so: the database's deadline (wall
    // clock, shared by every leader) and this leader's own monotonic one.
    const bool expired = r.continuation_expired && t.confirm_until && now_ >= *t.confirm_until;
    // Ages on this leader's clock (Tracked::assigned_at): the book's own
    // writes, or the database's ages when it read the run.
    auto age_ms = [&](const std::optional<MonoTime>& since) -> std::int64_t {
      return since ? std::chrono::duration_cast<Millis>(now_ - *since).count() : 0;
    };
    views.push_back({id, r.state, r.worker_id, attached || reattach_window, r.leader_epoch == epoch_, r.continuation,
                     expired, age_ms(t.assigned_at), age_ms(t.started_at), r.timeout_ms,
                     r.state == RunState::running ? unlisted_heartbeats(t) : 0,
                     r.state == RunState::assigned && attached && unlisted_heartbeats(t) == 0});
  }
  ReaperConfig rc{cfg_.reassign_after, cfg_.reassign_detached_after, cfg_.timeout_grace};
  for (const auto& action : plan_reaping(views, rc)) {
    if (fenced_) return;
    auto it = tracked_.find(action.run_id);
    if (it == tracked_.end()) continue;
    const store::ActiveRun& r = it->second.row;
    const std::int64_t run = r.id.value;
    switch (action.kind) {
      case ReapKind::orphan:
      case ReapKind::requeue: {
        // Both are ASSIGNED -> ORPHANED; a requeue (the worker held the run
        // queued) does not count as a lost placement.
        const bool requeue = action.kind == ReapKind::requeue;
        WriteRun w;
        w.kind = requeue ? RunWriteKind::requeue : RunWriteKind::orphan;
        w.fence = {r.id, r.version, epoch_};
        write(std::move(w), [this, run, row = r, requeue](const Result<store::WriteResult>& res) {
          if (!note(requeue ? "requeue" : "orphan", run, res)) return;
          count(requeue ? Counter::runs_requeued : Counter::runs_orphaned);
          log(LogLevel::info,
              fmt::format("{} run={} attempt={} worker={} epoch={}", requeue ? "run_requeued" : "run_orphaned", run,
                          row.attempt, json_quote(row.worker_id), epoch_.value));
          send(row.worker_id,
               protocol::Cancel{ref_of(row), requeue ? "queued too long: placed again" : "assignment expired"});
          tracked_.erase(run);
        });
        break;
      }
      case ReapKind::begin_confirming: {
        WriteRun w;
        w.kind = RunWriteKind::begin_confirming;
        w.fence = {r.id, r.version, epoch_};
        w.delay = cfg_.continuation_timeout;
        write(std::move(w), [this, run, attempt = r.attempt](const Result<store::WriteResult>& res) {
          if (!note("begin_confirming", run, res)) return;
          auto it = tracked_.find(run);
          if (it == tracked_.end() || it->second.row.attempt != attempt) return;
          store::ActiveRun& r = it->second.row;
          // The run's own timeout (the worker got it with the attempt) when
          // it has one; counted after the write, so never earlier than the
          // database's deadline.
          const Millis timeout{r.continuation_timeout_ms > 0 ? r.continuation_timeout_ms
                                                             : cfg_.continuation_timeout.count()};
          r.version = res->new_version;
          r.continuation = ContinuationState::confirming;
          it->second.confirm_until = now_ + timeout + cfg_.continuation_margin;
          log(LogLevel::info, fmt::format("run_confirming run={} attempt={} worker={} deadline_in={}ms epoch={}", run,
                                          r.attempt, json_quote(r.worker_id), timeout.count(), epoch_.value));
        });
        break;
      }
      case ReapKind::attempt_lost: end_attempt(run, true); break;
      case ReapKind::enforce_timeout: end_attempt(run, false); break;
    }
  }
}

void RunBook::end_attempt(std::int64_t run, bool lost) {
  adopt_if_needed(run, [this, run, lost](bool adopted) {
    if (!adopted) return;
    auto it = tracked_.find(run);
    if (it == tracked_.end()) return;
    const store::ActiveRun r = it->second.row;
    WriteRun w;
    w.fence = {r.id, r.version, epoch_};
    w.attempt = {r.worker_id, r.attempt, r.lease_token};
    w.finish.final_state = lost ? RunState::failed : RunState::timed_out;
    w.finish.error_code = lost ? "attempt_lost" : "timeout";
    w.finish.error_msg = lost ? "worker did not return before its continuation deadline"
                              : "no finish from the worker within timeout + grace";
    auto decision = decide_finish(w.finish.final_state, r.attempt, r.max_attempts, Millis{r.retry_base_ms},
                                  Millis{r.retry_cap_ms}, jitter());
    if (auto cancel = cancel_requested_.find(run); cancel != cancel_requested_.end()) {
      w.kind = RunWriteKind::cancel;
      w.from = RunState::running;
      w.reason = cancel->second;
      cancel_requested_.erase(cancel);
    } else if (decision.next == RunState::retry_waiting) {
      w.kind = RunWriteKind::retry_later;
      w.delay = decision.retry_delay;
    } else {
      w.kind = RunWriteKind::finish;
    }
    const std::string reason = w.finish.error_code;
    write(std::move(w), [this, r, lost, reason, next = decision.next](const Result<store::WriteResult>& res) {
      if (!note(lost ? "attempt_lost" : "enforce_timeout", r.id.value, res)) return;
      log(LogLevel::info, fmt::format("run_attempt_ended run={} attempt={} reason={} next={} epoch={}", r.id.value,
                                      r.attempt, reason, to_string(next), epoch_.value));
      // Cancel only after the write committed (a cancel whose write then
      // failed turned a healthy run into a final CANCELED), and always:
      // whatever of the attempt may still exist on the worker must die.
      send(r.worker_id, protocol::Cancel{ref_of(r), lost ? "attempt declared lost" : "run timed out"});
      tracked_.erase(r.id.value);
    });
  });
}

// --- cron -------------------------------------------------------------------

void RunBook::materialize_cron(const std::vector<store::ScheduledJob>& jobs) {
  for (auto& step : cron_.plan(jobs, now_)) {
    if (!step.invalid.empty()) {
      log(LogLevel::error, fmt::format("cron_invalid job={} {}", json_quote(step.job), step.invalid));
      continue;
    }
    if (step.skipped.empty()) {
      create_cron_slots(std::move(step.chain));
      continue;
    }
    // The slots given up are recorded (and the cursor moved past them)
    // before any later slot is created: if the record fails, nothing after
    // it exists yet and the next pass plans the same again.
    SkipCronSlots skip;
    skip.op = next_op();
    skip.job = step.job;
    skip.details_json = std::move(step.skipped_details_json);
    for (const auto& r : step.skipped)
      log(LogLevel::info,
          fmt::format("cron_slots_skipped job={} first={} last={} count={}{} reason={} epoch={}", json_quote(step.job),
                      r.first_unix, r.last_unix, r.count ? "" : ">=", r.count_at_least, r.reason, epoch_.value));
    skip.ranges = std::move(step.skipped);
    wait_create_[skip.op] = [this, chain = std::move(step.chain)](const Result<store::CreateResult>& w) mutable {
      if (!w) {
        log(LogLevel::warn, fmt::format("cron_skip_error job={} error={}", json_quote(chain.job), w.error().message));
        return;
      }
      if (w->outcome == WriteOutcome::fenced)
        return fence("cron_skip", "job=" + json_quote(chain.job), w->current_epoch);
      count(Counter::cron_slots_skipped);
      create_cron_slots(std::move(chain));
    };
    emit(std::move(skip));
  }
}

void RunBook::create_cron_slots(CronChain chain) {
  if (fenced_) return;
  const auto c =
      cron_.next(chain, now_, last_cron_, wakeups_.empty() ? std::nullopt : std::optional<MonoTime>(*wakeups_.begin()));
  if (!c) return;  // done, or kept for a later pass
  const OpId op = next_op();
  emit(CreateCronRun{op, chain.job, c->slot, c->caught_up, c->jitter_delay_ms});
  wait_create_[op] = [this, chain = std::move(chain), c = *c](const Result<store::CreateResult>& w) mutable {
    if (!w) {
      // The rest of this job's slots wait for the next pass (in order).
      log(LogLevel::warn,
          fmt::format("cron_create_error job={} slot={} error={}", json_quote(chain.job), c.slot, w.error().message));
      return;
    }
    if (w->outcome == WriteOutcome::fenced)
      return fence("cron_create", "job=" + json_quote(chain.job), w->current_epoch);
    if (w->forbidden) {
      count(Counter::cron_slots_skipped);
      log(LogLevel::info,
          fmt::format("cron_slot_forbidden job={} slot={} epoch={}", json_quote(chain.job), c.slot, epoch_.value));
    }
    // concurrency_policy replace: the unfinished runs are canceled; the new
    // one waits for them (the database holds it to one active run).
    for (RunId old : w->replaced)
      on_cancel(old, "replaced by run " + std::to_string(w->run.value) + " (concurrency_policy replace)", 0);
    if (w->outcome == WriteOutcome::applied) {
      count(Counter::runs_created_by_cron);
      if (c.due_at > now_)
        wakeups_.insert(c.due_at);
      else
        dispatch_requested_ = true;  // due already: the next pass dispatches it
      log(LogLevel::info, fmt::format("cron_slot_fired job={} slot={} run={} epoch={}{}", json_quote(chain.job), c.slot,
                                      w->run.value, epoch_.value, c.caught_up ? " caught_up=true" : ""));
    }
    chain.next++;
    create_cron_slots(std::move(chain));
  };
}

void RunBook::resume_cron_backlog() {
  // Each chain goes back to the backlog if it may not go on now; one round
  // over what is there, in order.
  for (auto& chain : cron_.resume()) create_cron_slots(std::move(chain));
}

// --- operators' controls ----------------------------------------------------

void RunBook::apply_controls(const store::Controls& c) {
  if (!controls_ || controls_->dispatch_enabled != c.dispatch_enabled)
    log(LogLevel::info, fmt::format("dispatch_{} epoch={}", c.dispatch_enabled ? "enabled" : "disabled", epoch_.value));
  controls_ = c;
  std::vector<std::string> evicted;
  for (const auto& [id, w] : workers_)
    if (is_evicted(id)) evicted.push_back(id);
  for (const auto& id : evicted) drop_worker(id, "evicted by an operator");
}

bool RunBook::is_evicted(const std::string& worker) const {
  if (!controls_) return false;
  auto it = controls_->worker_holds.find(worker);
  return it != controls_->worker_holds.end() && it->second == "evicted";
}

bool RunBook::takes_no_runs(const std::string& worker, const Attached& w) const {
  return w.draining || (controls_ && controls_->worker_holds.count(worker) > 0);
}

// --- dispatch ---------------------------------------------------------------

RunBook::Room RunBook::room_in(const Attached& w, int holding) {
  if (!w.welcomed) return {};  // no room until welcomed
  // Runs it holds fill its slots first, then its prefetch queue.
  return {std::max(0, w.capacity - holding), std::max(0, w.prefetch - std::max(0, holding - w.capacity))};
}

WorkerCapacity RunBook::room_of(const std::string& id, const Attached& w, int holding) const {
  const Room r = room_in(w, holding);
  return WorkerCapacity{id, w.labels, r.free, takes_no_runs(id, w), r.queue};
}

void RunBook::dispatch() {
  std::map<std::string, int> holding;
  for (const auto& [id, t] : tracked_) holding[t.row.worker_id]++;
  // Free slots per label set: due runs are read per label set, each read
  // only returning runs a worker of that set can take, so runs that no free
  // worker can place never fill the batch ahead of runs that one can. This
  // walks every attached worker each dispatch (20 a second): no copies and
  // no insertions per worker (with 10,000 attached they were most of the
  // leader's CPU at idle).
  std::map<std::map<std::string, std::string>, int> free_by_labels;
  for (const auto& [id, w] : workers_) {
    const auto h = holding.find(id);
    const Room r = room_in(w, h == holding.end() ? 0 : h->second);
    if (r.free + r.queue > 0 && !takes_no_runs(id, w)) free_by_labels[w.labels] += r.free + r.queue;
  }
  if (free_by_labels.empty()) return;
  struct Gathered {
    std::vector<store::DueRun> due;
    std::set<std::int64_t> seen;
    std::size_t waiting = 0;
    bool failed = false;
  };
  auto g = std::make_shared<Gathered>();
  g->waiting = free_by_labels.size();
  for (const auto& [labels, free] : free_by_labels) {
    const int limit = std::min(cfg_.dispatch_batch, free);
    const OpId op = next_op();
    wait_due_[op] = [this, g, limit](const Result<std::vector<store::DueRun>>& slice) {
      if (!slice) {
        if (!g->failed)
          log(LogLevel::warn, fmt::format("due_runs_error epoch={} error={}", epoch_.value, slice.error().message));
        g->failed = true;
      } else {
        // A full slice means more may be waiting: dispatch again next pass.
        if (static_cast<int>(slice->size()) >= limit) dispatch_requested_ = true;
        for (const auto& d : *slice)
          if (g->seen.insert(d.id.value).second) g->due.push_back(d);
      }
      if (--g->waiting == 0 && !g->failed) dispatch_due(g->due);
    };
    emit(ReadDue{op, limit, labels, cfg_.assign_ahead});
  }
}

void RunBook::dispatch_due(const std::vector<store::DueRun>& due) {
  // Nothing due (every dispatch of an idle cluster): nothing to place, and
  // no walk of every attached worker for it.
  if (fenced_ || due.empty()) return;
  AssignmentPlanInput in;
  in.due = due;
  std::map<std::string, int> holding;
  for (const auto& [id, t] : tracked_) {
    holding[t.row.worker_id]++;
    in.holds.push_back({t.row.job_name, t.row.instance_no, t.row.exclusive_lock});
  }
  in.workers.reserve(workers_.size());
  for (const auto& [id, w] : workers_)
    in.workers.push_back({room_of(id, w, holding[id]),
                          cfg_.assign_with_start && w.protocol >= protocol::start_grant_version_min, w.instance});
  in.max_unstarted_assignments = cfg_.max_unstarted_assignments;
  in.continuation_timeout = cfg_.continuation_timeout;
  in.start_stale_after = start_stale_after(cfg_);
  in.reassignments = reassignments_;
  in.now = now_;
  for (const auto& d : due) due_since_.try_emplace(d.id.value, now_);
  AssignmentPlan plan = plan_assignments(in);
  reassignments_ = plan.reassignments;

  for (const auto& u : plan.over_budget) {
    WriteRun w;
    w.kind = RunWriteKind::fail_unrunnable;
    w.fence = {u.run.id, u.run.version, epoch_};
    w.from = RunState::orphaned;
    w.error_code = u.error_code;
    w.reason = u.reason;
    write(std::move(w), [this, run = u.run.id.value,
                         n = u.run.unstarted_assignments](const Result<store::WriteResult>& r) {
      if (note("fail_unrunnable", run, r))
        log(LogLevel::warn, fmt::format("run_failed_unstarted run={} assignments={} epoch={}", run, n, epoch_.value));
    });
  }
  for (const auto& h : plan.held) record_once(RunId{h.run_id}, "held_back", h.reason);
  if (plan.orphans_deferred > 0) {
    dispatch_requested_ = true;
    log(LogLevel::info, fmt::format("reassignments_paced deferred={} epoch={}", plan.orphans_deferred, epoch_.value));
  }
  for (const auto& u : plan.bad_definitions) {
    log(LogLevel::error, fmt::format("run_tasks_invalid run={} job={} error={}", u.run.id.value,
                                     json_quote(u.run.job_name), json_quote(u.detail)));
    WriteRun w;
    w.kind = RunWriteKind::fail_unrunnable;
    w.fence = {u.run.id, u.run.version, epoch_};
    w.from = u.run.state;
    w.error_code = u.error_code;
    w.reason = u.reason;
    write(std::move(w),
          [this, run = u.run.id.value](const Result<store::WriteResult>& r) { note("fail_unrunnable", run, r); });
  }
  if (due_since_.size() > 100000) due_since_.clear();  // bound: only a latency metric depends on it
  if (plan.placed.empty() || fenced_) return;
  std::vector<store::AssignRow> rows;
  rows.reserve(plan.placed.size());
  auto placed = std::make_shared<std::map<std::int64_t, PlacedRun>>();
  for (auto& p : plan.placed) {
    rows.push_back(p.row);
    const std::int64_t id = p.due.id.value;
    placed->emplace(id, std::move(p));
  }
  const OpId op = next_op();
  wait_batch_[op] = [this, rows, placed](const Result<store::BatchWriteResult>& res) {
    if (batch_fenced("assign_batch", rows.size(), res) || !res) return;
    count(Counter::conflict_writes, static_cast<std::int64_t>(rows.size() - res->applied.size()));
    for (const auto& a : rows) {
      auto applied = res->applied.find(a.run.value);
      if (applied == res->applied.end()) continue;  // lost a race: the next dispatch re-reads it
      PlacedRun& p = placed->at(a.run.value);
      // RUNNING when the start went with it: the grant goes with the assign
      // frame, which leaves only now, after the commit.
      const store::ActiveRun row = assigned_row(p, applied->second, epoch_);
      if (a.start) count(Counter::runs_started);
      count(Counter::runs_assigned);
      if (auto since = due_since_.find(row.id.value); since != due_since_.end()) {
        emit(ObserveDispatchLatency{
            std::chrono::duration_cast<std::chrono::microseconds>(now_ - since->second).count()});
        due_since_.erase(since);
      }
      log(LogLevel::info, fmt::format("run_assigned run={} attempt={} worker={} started={} epoch={}", row.id.value,
                                      row.attempt, json_quote(a.worker_id), p.granted, epoch_.value));
      send(a.worker_id, protocol::Assign{ref_of(row), p.tasks, p.due.timeout_ms, row.continuation_timeout_ms,
                                         p.due.parameters, p.granted});
      Tracked t{row, std::move(p.tasks), 0, 0, {}, {}, p.start_not_before};
      t.assigned_at = now_;
      if (a.start) t.started_at = now_;
      mark_listed(t);
      note_holder(t);
      if (a.start) t.grant_in_flight = t.link;
      tracked_[row.id.value] = std::move(t);
    }
  };
  emit(WriteAssigns{op, std::move(rows)});
}

// --- the decision ledger ------------------------------------------------------

void RunBook::process_events() {
  const OpId op = next_op();
  constexpr int kEventBatch = 100;
  wait_events_[op] = [this](const Result<store::EventsProcessed>& r) {
    if (!r) {
      log(LogLevel::warn, fmt::format("events_error epoch={} error={}", epoch_.value, r.error().message));
      return;
    }
    if (r->current_epoch != epoch_) return fence("process_events", "", r->current_epoch);
    if (r->events == 0) return;
    log(LogLevel::info, fmt::format("events_processed events={} runs={} epoch={}", r->events, r->runs, epoch_.value));
    if (r->runs > 0) dispatch_requested_ = true;
    if (r->events >= kEventBatch) last_cron_ = MonoTime{};  // more waiting: the next pass goes on
  };
  emit(ProcessEvents{op, kEventBatch});
}

void RunBook::prune() {
  last_prune_ = now_;
  const OpId op = next_op();
  constexpr int kPruneBatch = 500;
  wait_prune_[op] = [this](const Result<store::Pruned>& r) {
    if (!r) {
      log(LogLevel::warn, fmt::format("prune_error epoch={} error={}", epoch_.value, r.error().message));
      return;
    }
    if (r->current_epoch != epoch_) return fence("prune", "", r->current_epoch);
    if (r->runs + r->ledger + r->events + r->dead_letters == 0) return;
    log(LogLevel::info, fmt::format("pruned runs={} ledger={} events={} dead_letters={} epoch={}", r->runs, r->ledger,
                                    r->events, r->dead_letters, epoch_.value));
    // A full batch: more is waiting; go on at the next pass rather than wait.
    if (r->runs >= kPruneBatch || r->ledger >= kPruneBatch || r->events >= kPruneBatch ||
        r->dead_letters >= kPruneBatch)
      last_prune_ = MonoTime{};
  };
  emit(Prune{op, kPruneBatch});
}

void RunBook::find_unmatched() {
  // Runs whose selector no worker taking runs can satisfy are never read as
  // due (dispatch reads per label set), so they would wait silently: look
  // for them every few seconds and record each once.
  ReadUnmatched read;
  read.op = next_op();
  std::set<std::map<std::string, std::string>> sets;
  for (const auto& [id, w] : workers_)
    if (w.welcomed && !takes_no_runs(id, w)) sets.insert(w.labels);
  read.label_sets.assign(sets.begin(), sets.end());
  wait_due_[read.op] = [this](const Result<std::vector<store::DueRun>>& runs) {
    if (!runs) return;
    for (const auto& r : *runs) record_once(r.id, "no_worker_matches", "selector");
  };
  emit(std::move(read));
}

void RunBook::find_held_by_operator() {
  ReadWaiting read;
  read.op = next_op();
  wait_due_[read.op] = [this](const Result<std::vector<store::DueRun>>& runs) {
    if (!runs || !controls_ || controls_->dispatch_enabled) return;
    for (const auto& r : *runs) record_once(r.id, "held_back", "dispatch_disabled");
  };
  emit(read);
}

void RunBook::record_once(RunId run, const std::string& decision, const std::string& reason) {
  const std::string key = decision + ":" + reason;
  if (!recorded_.insert({run.value, key}).second) return;
  if (recorded_.size() > 100000) recorded_.clear();  // bound: at worst a decision is recorded again
  log(LogLevel::info, fmt::format("run_{} run={} reason={} epoch={}", decision, run.value, reason, epoch_.value));
  const OpId op = next_op();
  wait_create_[op] = [this, run, key](const Result<store::CreateResult>& r) {
    if (!r) {
      recorded_.erase({run.value, key});  // the next pass records it
      return;
    }
    if (r->outcome == WriteOutcome::fenced)
      fence("record_decision", "run=" + std::to_string(run.value), r->current_epoch);
  };
  emit(RecordDecision{op, run, decision, reason});
}

}  // namespace baton::leader_core
