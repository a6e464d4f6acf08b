// RunBook, the reaper: the heartbeat flush, grants never acknowledged,
// and what becomes of attempts whose worker is gone or silent
// (CONFIRMING, lost attempts, timeouts, orphans).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "baton/base/json_text.h"
#include "baton/leader_core/run_book.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

void RunBook::flush_heartbeats() {
  if (heartbeat_due_.empty()) return;
  // A statement per stale_after, each from its workers' own cadence (one,
  // unless the fleet grew past max_heartbeats_per_second while some of its
  // workers were attached).
  const HeartbeatCadence configured = configured_cadence(cfg_);
  std::map<Millis, std::vector<store::HeartbeatRow>> by_stale_after;
  for (auto id : heartbeat_due_) {
    auto it = tracked_.find(id);
    if (it == tracked_.end()) continue;
    const auto& r = it->second.row;
    auto w = workers_.find(r.worker_id);
    by_stale_after[heartbeat_stale_after(w == workers_.end() ? configured : w->second.cadence)].push_back(
        {r.id, r.version, {r.worker_id, r.attempt, r.lease_token}, it->second.progress_unwritten});
  }
  heartbeat_due_.clear();
  for (auto& [stale_after, rows] : by_stale_after) {
    const OpId op = next_op();
    awaiting_.heartbeats.emplace(op, resume::HeartbeatBatch{rows});
    emit(WriteHeartbeats{op, std::move(rows), stale_after});
  }
}

void RunBook::resumed(resume::HeartbeatBatch& s, const Result<store::HeartbeatBatchResult>& res) {
  if (!res) {
    distrust();
    log(LogLevel::warn, fmt::format("heartbeat_batch_error epoch={} error={}", epoch_.value, res.error().message));
    return;
  }
  if (res->current_epoch != epoch_)
    return fence("heartbeat_batch", "rows=" + std::to_string(s.rows.size()), res->current_epoch);
  bool unexplained = false;
  for (const auto& row : s.rows) {
    auto applied = res->applied.find(row.id.value);
    auto it = tracked_.find(row.id.value);
    if (applied != res->applied.end() && it != tracked_.end()) {
      it->second.row.version = applied->second;
      // Written, unless the task reported something newer meanwhile.
      if (row.progress && it->second.progress_unwritten == row.progress) it->second.progress_unwritten.reset();
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
    with_fresh_view(resume::RefreshOnly{});
  }
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
    if (fencing_.fenced) return;
    auto it = tracked_.find(action.run_id);
    if (it == tracked_.end()) continue;
    if (auto repair = repairs_.find(action.run_id); repair != repairs_.end()) repair->second.asked = true;
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
        write(std::move(w), resume::OrphanWrite{r, requeue});
        break;
      }
      case ReapKind::begin_confirming: {
        WriteRun w;
        w.kind = RunWriteKind::begin_confirming;
        w.fence = {r.id, r.version, epoch_};
        w.delay = cfg_.continuation_timeout;
        write(std::move(w), resume::ConfirmingWrite{run, r.attempt});
        break;
      }
      case ReapKind::attempt_lost: end_attempt(run, true); break;
      case ReapKind::enforce_timeout: end_attempt(run, false); break;
    }
  }
  settle_repairs();
}

void RunBook::settle_repairs() {
  for (auto it = repairs_.begin(); it != repairs_.end();) {
    if (it->second.asked) {
      ++it;
      continue;
    }
    // What the book saw: the run gone from the active runs (it ended, or
    // moved on, since the sweep read it), or still within the reaper's own
    // timings (a worker the book has attached, a detach it has not yet
    // waited out).
    auto t = tracked_.find(it->first);
    log(LogLevel::warn, fmt::format("invariant_recheck_unrepaired run={} invariant={} seen={} worker={} epoch={}",
                                    it->first, json_quote(it->second.invariant),
                                    t == tracked_.end() ? "not_active" : to_string(t->second.row.state),
                                    t == tracked_.end() ? "\"\"" : json_quote(t->second.row.worker_id), epoch_.value));
    it = repairs_.erase(it);
  }
}

void RunBook::resumed(resume::OrphanWrite& s, const Result<store::WriteResult>& res) {
  const store::ActiveRun& row = s.row;
  const std::int64_t run = row.id.value;
  if (!note(s.requeue ? "requeue" : "orphan", run, res)) return;
  count(s.requeue ? Counter::runs_requeued : Counter::runs_orphaned);
  log(LogLevel::info,
      fmt::format("{} run={} attempt={} worker={} epoch={}", s.requeue ? "run_requeued" : "run_orphaned", run,
                  row.attempt, json_quote(row.worker_id), epoch_.value));
  send(row.worker_id,
       protocol::Cancel{ref_of(row), s.requeue ? "queued too long: placed again" : "assignment expired"});
  tracked_.erase(run);
}

void RunBook::resumed(resume::ConfirmingWrite& s, const Result<store::WriteResult>& res) {
  if (!note("begin_confirming", s.run, res)) return;
  auto it = tracked_.find(s.run);
  if (it == tracked_.end() || it->second.row.attempt != s.attempt) return;
  store::ActiveRun& r = it->second.row;
  // The run's own timeout (the worker got it with the attempt) when it has
  // one; counted after the write, so never earlier than the database's
  // deadline.
  const Millis timeout{r.continuation_timeout_ms > 0 ? r.continuation_timeout_ms : cfg_.continuation_timeout.count()};
  r.version = res->new_version;
  r.continuation = ContinuationState::confirming;
  it->second.confirm_until = now_ + timeout + cfg_.continuation_margin;
  log(LogLevel::info, fmt::format("run_confirming run={} attempt={} worker={} deadline_in={}ms epoch={}", s.run,
                                  r.attempt, json_quote(r.worker_id), timeout.count(), epoch_.value));
}

void RunBook::end_attempt(std::int64_t run, bool lost) {
  adopt_if_needed(run, resume::EndAttemptAfterAdopt{run, lost});
}

void RunBook::adopted(resume::EndAttemptAfterAdopt& s, bool adopted) {
  if (!adopted) return;
  const std::int64_t run = s.run;
  const bool lost = s.lost;
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
    w.kind = RunWriteKind::cancel_attempt;  // under the attempt's predicates (w.attempt)
    w.reason = cancel->second;
    cancel_requested_.erase(cancel);
  } else if (decision.next == RunState::retry_waiting) {
    w.kind = RunWriteKind::retry_later;
    w.delay = decision.retry_delay;
  } else {
    w.kind = RunWriteKind::finish;
  }
  const std::string reason = w.finish.error_code;
  write(std::move(w), resume::AttemptEndWrite{r, lost, reason, decision.next});
}

void RunBook::resumed(resume::AttemptEndWrite& s, const Result<store::WriteResult>& res) {
  const store::ActiveRun& r = s.row;
  if (!note(s.lost ? "attempt_lost" : "enforce_timeout", r.id.value, res)) return;
  log(LogLevel::info, fmt::format("run_attempt_ended run={} attempt={} reason={} next={} epoch={}", r.id.value,
                                  r.attempt, s.reason, to_string(s.next), epoch_.value));
  // Cancel only after the write committed (a cancel whose write then failed
  // turned a healthy run into a final CANCELED), and always: whatever of the
  // attempt may still exist on the worker must die.
  send(r.worker_id, protocol::Cancel{ref_of(r), s.lost ? "attempt declared lost" : "run timed out"});
  tracked_.erase(r.id.value);
}

}  // namespace baton::leader_core
