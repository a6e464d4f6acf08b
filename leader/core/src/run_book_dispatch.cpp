// RunBook, dispatch: the operators' controls, the fleet's room, the due
// reads per label set, the assignment plan (assignment_plan.h) emitted as
// one batch and applied, and the decisions recorded about runs that wait.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "baton/base/json_text.h"
#include "baton/leader_core/assignment_plan.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/run_book.h"
#include "run_book_detail.h"

namespace baton::leader_core {

using namespace run_book_detail;

// --- operators' controls ----------------------------------------------------

void RunBook::apply_controls(const store::Controls& c) {
  if (!controls_ || controls_->dispatch_enabled != c.dispatch_enabled)
    log(LogLevel::info, fmt::format("dispatch_{} epoch={}", c.dispatch_enabled ? "enabled" : "disabled", epoch_.value));
  controls_ = c;
  LiveSettings next = live_settings(c.settings, base_cfg_);
  for (const auto& why : next.refused)
    if (std::find(live_.refused.begin(), live_.refused.end(), why) == live_.refused.end())
      log(LogLevel::warn, fmt::format("setting_refused why={} epoch={}", json_quote(why), epoch_.value));
  if (next.cron_enabled != live_.cron_enabled || next.events_enabled != live_.events_enabled ||
      next.dispatch_paused != live_.dispatch_paused || !same_live_timings(next.runtime, cfg_))
    log(LogLevel::info,
        fmt::format("settings_applied cron={} events={} dispatch_paused_selectors={} reassign_after_ms={} "
                    "heartbeat_interval_ms={} heartbeat_timeout_ms={} continuation_timeout_ms={} "
                    "continuation_margin_ms={} dispatch_batch={} epoch={}",
                    next.cron_enabled, next.events_enabled, next.dispatch_paused.size(),
                    next.runtime.reassign_after.count(), next.runtime.heartbeat_interval.count(),
                    next.runtime.heartbeat_timeout.count(), next.runtime.continuation_timeout.count(),
                    next.runtime.continuation_margin.count(), next.runtime.dispatch_batch, epoch_.value));
  cfg_ = next.runtime;
  live_ = std::move(next);
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
  if (w.draining || (controls_ && controls_->worker_holds.count(worker) > 0)) return true;
  for (const auto& selector : live_.dispatch_paused)
    if (labels_match(selector, w.labels)) return true;
  return false;
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
  // And the label sets of the busy workers taking runs: with the free
  // ones, every worker an exclusive run could drain the cluster for
  // (ReadDue::taking). One lookup per worker either way.
  std::set<std::map<std::string, std::string>> busy_labels;
  for (const auto& [id, w] : workers_) {
    if (takes_no_runs(id, w)) continue;
    const auto h = holding.find(id);
    const Room r = room_in(w, h == holding.end() ? 0 : h->second);
    if (r.free + r.queue > 0)
      free_by_labels[w.labels] += r.free + r.queue;
    else
      busy_labels.insert(w.labels);
  }
  if (free_by_labels.empty()) return;
  std::vector<std::map<std::string, std::string>> taking;
  for (const auto& [labels, free] : free_by_labels) taking.push_back(labels);
  for (const auto& labels : busy_labels)
    if (!free_by_labels.count(labels)) taking.push_back(labels);
  std::sort(taking.begin(), taking.end());
  auto gather = std::make_shared<resume::DueGather>();
  gather->waiting = free_by_labels.size();
  for (const auto& [labels, free] : free_by_labels) {
    const int limit = std::min(cfg_.dispatch_batch, free);
    const OpId op = next_op();
    awaiting_.due.emplace(op, resume::DueSlice{gather, limit});
    emit(ReadDue{op, limit, labels, cfg_.assign_ahead, taking});
  }
}

void RunBook::resumed(resume::DueSlice& s, const Result<std::vector<store::DueRun>>& slice) {
  resume::DueGather& g = *s.gather;
  if (!slice) {
    if (!g.failed)
      log(LogLevel::warn, fmt::format("due_runs_error epoch={} error={}", epoch_.value, slice.error().message));
    g.failed = true;
  } else {
    // A full slice means more may be waiting: dispatch again next pass.
    if (static_cast<int>(slice->size()) >= s.limit) pass_.dispatch_requested = true;
    for (const auto& d : *slice)
      if (g.seen.insert(d.id.value).second) g.due.push_back(d);
  }
  if (--g.waiting == 0 && !g.failed) dispatch_due(g.due);
}

void RunBook::dispatch_due(const std::vector<store::DueRun>& due) {
  // Nothing due (every dispatch of an idle cluster): nothing to place, and
  // no walk of every attached worker for it.
  if (fencing_.fenced || due.empty()) return;
  AssignmentPlanInput in;
  in.due = due;
  std::map<std::string, int> holding;
  for (const auto& [id, t] : tracked_) {
    holding[t.row.worker_id]++;
    in.holds.push_back({t.row.job_name, t.row.instance_no, t.row.exclusive_lock, t.row.exclusive_gate});
  }
  in.workers.reserve(workers_.size());
  for (const auto& [id, w] : workers_)
    in.workers.push_back({room_of(id, w, holding[id]),
                          cfg_.assign_with_start && w.protocol >= protocol::start_grant_version_min, w.instance,
                          w.protocol, start_stale_after(w.cadence)});
  in.max_unstarted_assignments = cfg_.max_unstarted_assignments;
  in.continuation_timeout = cfg_.continuation_timeout;
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
    write(std::move(w), resume::FailUnstartedWrite{u.run.id.value, u.run.unstarted_assignments});
  }
  for (const auto& h : plan.held) record_once(RunId{h.run_id}, "held_back", h.reason, h.detail);
  if (plan.orphans_deferred > 0) {
    pass_.dispatch_requested = true;
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
    write(std::move(w), resume::FailInvalidWrite{u.run.id.value});
  }
  if (due_since_.size() > 100000) due_since_.clear();  // bound: only a latency metric depends on it
  if (plan.placed.empty() || fencing_.fenced) return;
  resume::AssignBatch state;
  state.rows.reserve(plan.placed.size());
  for (auto& p : plan.placed) {
    state.rows.push_back(p.row);
    const std::int64_t id = p.due.id.value;
    state.placed.emplace(id, std::move(p));
  }
  const OpId op = next_op();
  emit(WriteAssigns{op, state.rows});
  awaiting_.assigns.emplace(op, std::move(state));
}

void RunBook::resumed(resume::FailUnstartedWrite& s, const Result<store::WriteResult>& r) {
  if (note("fail_unrunnable", s.run, r))
    log(LogLevel::warn,
        fmt::format("run_failed_unstarted run={} assignments={} epoch={}", s.run, s.assignments, epoch_.value));
}

void RunBook::resumed(resume::FailInvalidWrite& s, const Result<store::WriteResult>& r) {
  note("fail_unrunnable", s.run, r);
}

void RunBook::resumed(resume::AssignBatch& s, const Result<store::BatchWriteResult>& res) {
  const std::vector<store::AssignRow>& rows = s.rows;
  if (batch_fenced("assign_batch", runs_of(rows), res) || !res) return;
  count(Counter::conflict_writes, static_cast<std::int64_t>(rows.size() - res->applied.size()));
  for (const auto& a : rows) {
    auto applied = res->applied.find(a.run.value);
    if (applied == res->applied.end()) continue;  // lost a race: the next dispatch re-reads it
    PlacedRun& p = s.placed.at(a.run.value);
    // RUNNING when the start went with it: the grant goes with the assign
    // frame, which leaves only now, after the commit.
    const store::ActiveRun row = assigned_row(p, applied->second, epoch_);
    if (a.start) count(Counter::runs_started);
    count(Counter::runs_assigned);
    if (auto since = due_since_.find(row.id.value); since != due_since_.end()) {
      emit(ObserveDispatchLatency{std::chrono::duration_cast<std::chrono::microseconds>(now_ - since->second).count()});
      due_since_.erase(since);
    }
    log(LogLevel::info,
        fmt::format("run_assigned run={} job={} attempt={} worker={} started={} epoch={}", row.id.value,
                    json_quote(p.due.job_name), row.attempt, json_quote(a.worker_id), p.granted, epoch_.value));
    const store::PreviousAttempt& before = p.due.previous;
    send(a.worker_id, protocol::Assign{ref_of(row),
                                       p.tasks,
                                       p.due.timeout_ms,
                                       row.continuation_timeout_ms,
                                       p.due.parameters,
                                       p.granted,
                                       {before.fate, before.attempt, before.worker}});
    Tracked t{row, std::move(p.tasks), 0, 0, {}, {}, p.start_not_before};
    t.assigned_at = now_;
    if (a.start) t.started_at = now_;
    mark_listed(t);
    note_holder(t);
    if (a.start) t.grant_in_flight = t.link;
    tracked_[row.id.value] = std::move(t);
  }
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
  awaiting_.due.emplace(read.op, resume::UnmatchedRead{});
  emit(std::move(read));
}

void RunBook::resumed(resume::UnmatchedRead&, const Result<std::vector<store::DueRun>>& runs) {
  if (!runs) return;
  for (const auto& r : *runs) record_once(r.id, "no_worker_matches", "selector");
}

void RunBook::find_held_by_operator() {
  ReadWaiting read;
  read.op = next_op();
  awaiting_.due.emplace(read.op, resume::HeldByOperatorRead{});
  emit(read);
}

// Runs that wait for their key or their rate permits are not read as due
// (they would fill the batch): looked for every few seconds, and each one
// recorded once with what it waits for.
void RunBook::find_held_by_keys() {
  ReadWaiting read;
  read.op = next_op();
  read.for_keys = true;
  awaiting_.due.emplace(read.op, resume::HeldByKeyRead{});
  emit(read);
}

void RunBook::resumed(resume::HeldByKeyRead&, const Result<std::vector<store::DueRun>>& runs) {
  if (!runs) return;
  for (const auto& r : *runs) {
    if (auto detail = key_wait(r.keyed))
      record_once(r.id, "held_back", "concurrency_key", *detail);
    else if (auto rate = rate_wait(r.job_name, r.keyed))
      record_once(r.id, "held_back", "rate_limit", *rate);
  }
}

void RunBook::resumed(resume::HeldByOperatorRead&, const Result<std::vector<store::DueRun>>& runs) {
  if (!runs || !controls_ || controls_->dispatch_enabled) return;
  for (const auto& r : *runs) record_once(r.id, "held_back", "dispatch_disabled");
}

void RunBook::record_once(RunId run, const std::string& decision, const std::string& reason,
                          const std::string& detail) {
  const std::string key = decision + ":" + reason;
  if (!recorded_.insert({run.value, key}).second) return;
  if (recorded_.size() > 100000) recorded_.clear();  // bound: at worst a decision is recorded again
  // A detail may name a key, which comes from a run's parameters: quoted.
  log(LogLevel::info, fmt::format("run_{} run={} reason={}{} epoch={}", decision, run.value, reason,
                                  detail.empty() ? "" : " detail=" + json_quote(detail), epoch_.value));
  const OpId op = next_op();
  awaiting_.create.emplace(op, resume::DecisionRecord{run, key});
  emit(RecordDecision{op, run, decision, reason,
                      detail.empty() ? std::string("{}") : "{\"detail\":" + json_quote(detail) + "}"});
}

void RunBook::resumed(resume::DecisionRecord& s, const Result<store::CreateResult>& r) {
  if (!r) {
    recorded_.erase({s.run.value, s.key});  // the next pass records it
    return;
  }
  if (r->outcome == WriteOutcome::fenced)
    fence("record_decision", "run=" + std::to_string(s.run.value), r->current_epoch, {s.run});
}

}  // namespace baton::leader_core
