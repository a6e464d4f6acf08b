#include "baton/leader_core/dispatch.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"

namespace baton::leader_core {

bool labels_match(const std::map<std::string, std::string>& selector,
                  const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

namespace {

/// One placement round over `free`.
DispatchPlan place(const std::vector<DispatchCandidate>& candidates, std::vector<WorkerCapacity> workers) {
  // For each distinct selector, a heap of the workers it matches, most free
  // slots first, then by worker id: O(W log W + C log W) instead of
  // comparing every run with every worker (with a fleet of 1,000 workers
  // that scan was most of a dispatch pass). Free counts only go down, so a
  // heap entry whose count is stale is re-pushed with the current count when
  // it reaches the top (lazy update), and the top is always the true best.
  struct Entry {
    int free;
    std::size_t index;
  };
  auto worse = [&](const Entry& a, const Entry& b) {
    if (a.free != b.free) return a.free < b.free;
    return workers[a.index].worker_id > workers[b.index].worker_id;
  };
  struct Eligible {
    bool any_match = false;
    std::vector<Entry> heap;
  };
  std::map<std::map<std::string, std::string>, Eligible> by_selector;

  DispatchPlan plan;
  for (const auto& c : candidates) {
    auto [it, fresh] = by_selector.try_emplace(c.selector);
    Eligible& e = it->second;
    if (fresh) {
      for (std::size_t i = 0; i < workers.size(); ++i) {
        const auto& w = workers[i];
        if (w.draining || !labels_match(c.selector, w.labels)) continue;
        e.any_match = true;
        if (w.free > 0) e.heap.push_back({w.free, i});
      }
      std::make_heap(e.heap.begin(), e.heap.end(), worse);
    }
    std::optional<std::size_t> best;
    std::optional<Entry> set_aside;  // the worker to avoid, while another may fit
    while (!e.heap.empty()) {
      std::pop_heap(e.heap.begin(), e.heap.end(), worse);
      Entry top = e.heap.back();
      e.heap.pop_back();
      const int now_free = workers[top.index].free;
      if (now_free != top.free) {  // taken by another selector's runs meanwhile
        if (now_free > 0) {
          e.heap.push_back({now_free, top.index});
          std::push_heap(e.heap.begin(), e.heap.end(), worse);
        }
        continue;
      }
      if (!set_aside && !c.avoid_worker.empty() && workers[top.index].worker_id == c.avoid_worker) {
        set_aside = top;
        continue;
      }
      best = top.index;
      break;
    }
    if (set_aside) {  // no other fits: the worker avoided after all; else it goes back
      if (!best) {
        best = set_aside->index;
      } else {
        e.heap.push_back(*set_aside);
        std::push_heap(e.heap.begin(), e.heap.end(), worse);
      }
    }
    if (best) {
      WorkerCapacity& w = workers[*best];
      w.free--;
      BATON_ASSERT(w.free >= 0);
      if (w.free > 0) {
        e.heap.push_back({w.free, *best});
        std::push_heap(e.heap.begin(), e.heap.end(), worse);
      }
      plan.assignments.push_back({c.run_id, w.worker_id});
    } else if (!e.any_match) {
      plan.unmatched.push_back(c.run_id);
    }
  }
  return plan;
}

}  // namespace

DispatchPlan plan_dispatch(const std::vector<DispatchCandidate>& candidates, std::vector<WorkerCapacity> workers) {
  DispatchPlan plan = place(candidates, workers);
  if (std::none_of(workers.begin(), workers.end(), [](const WorkerCapacity& w) { return w.queue > 0; })) return plan;
  std::set<std::int64_t> decided(plan.unmatched.begin(), plan.unmatched.end());
  for (const auto& a : plan.assignments) decided.insert(a.run_id);
  std::vector<DispatchCandidate> rest;
  for (const auto& c : candidates)
    if (!decided.count(c.run_id)) rest.push_back(c);
  for (auto& w : workers) w.free = w.queue;
  DispatchPlan queued = place(rest, std::move(workers));
  plan.assignments.insert(plan.assignments.end(), queued.assignments.begin(), queued.assignments.end());
  return plan;
}

FinishDecision decide_finish(RunState outcome, int attempt, int max_attempts, std::chrono::milliseconds base,
                             std::chrono::milliseconds cap, std::chrono::milliseconds jitter) {
  BATON_ASSERT(outcome == RunState::succeeded || outcome == RunState::failed || outcome == RunState::timed_out);
  BATON_ASSERT(attempt >= 1 && attempt <= max_attempts);
  if (outcome == RunState::succeeded) return {RunState::succeeded, {}};
  if (attempt >= max_attempts) return {outcome, {}};
  return {RunState::retry_waiting, retry_backoff(attempt, base, cap, jitter)};
}

std::vector<ReapAction> plan_reaping(const std::vector<ReaperView>& runs, const ReaperConfig& cfg) {
  std::vector<ReapAction> out;
  for (const auto& r : runs) {
    if (r.state == RunState::assigned) {
      // Not started in time, whether or not its worker is attached: a worker
      // that is attached but has not asked to start lost the assignment (it
      // reconnected, or the assign went down a connection that died). A
      // worker that is gone loses it much sooner (seed rule 4.1: not started
      // and the worker detached).
      // A run its worker holds queued (prefetch) behind busy slots goes back
      // to be placed again after the same delay, perhaps on an idle worker;
      // that is not a lost placement, so it does not count against the run.
      if (r.worker_attached && r.held_by_worker && r.assigned_age_ms >= cfg.reassign_after.count())
        out.push_back({r.run_id, ReapKind::requeue});
      else if (r.assigned_age_ms >= cfg.reassign_after.count() ||
               (!r.worker_attached && r.assigned_age_ms >= cfg.reassign_detached_after.count()))
        out.push_back({r.run_id, ReapKind::orphan});
      continue;
    }
    if (r.state != RunState::running) continue;
    // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h):
    // retry a RUNNING attempt the moment its worker detaches, skipping the
    // continuation rule, so the checker can be shown to catch the overlap.
    if (weakened("continuation") && !r.worker_attached) {
      out.push_back({r.run_id, ReapKind::attempt_lost});
      continue;
    }
    if (r.worker_attached && r.unlisted_heartbeats >= cfg.unlisted_heartbeats_lost) {
      // The worker is here and says (every heartbeat) what it holds; this is
      // not among it, so no process of it can be alive (a worker's task
      // trees die with it): retrying cannot overlap. Without this rule such
      // a run stayed RUNNING for ever.
      out.push_back({r.run_id, ReapKind::attempt_lost});
      continue;
    }
    if (r.continuation == ContinuationState::confirming) {
      // Never reassign while CONFIRMING: only once the worker's own deadline
      // (plus margin) has passed is the attempt treated as lost.
      if (r.continuation_expired && !r.worker_attached) out.push_back({r.run_id, ReapKind::attempt_lost});
      continue;
    }
    if (!r.worker_attached) {
      out.push_back({r.run_id, ReapKind::begin_confirming});
      continue;
    }
    if (r.adopted && r.timeout_ms > 0 && r.running_age_ms >= r.timeout_ms + cfg.timeout_grace.count())
      out.push_back({r.run_id, ReapKind::enforce_timeout});
  }
  return out;
}

}  // namespace baton::leader_core
