#include "baton/leader_core/assignment_plan.h"

#include <algorithm>
#include <map>
#include <variant>

#include "baton/base/weaken.h"
#include "baton/protocol/codec.h"

namespace baton::leader_core {

AssignmentPlan plan_assignments(const AssignmentPlanInput& in) {
  AssignmentPlan out;
  out.reassignments = in.reassignments;
  std::map<std::int64_t, const store::DueRun*> by_id;
  std::vector<DispatchCandidate> candidates;
  for (const auto& d : in.due) {
    if (d.state == RunState::orphaned && d.unstarted_assignments >= in.max_unstarted_assignments) {
      out.over_budget.push_back({d, "orphaned",
                                 "assigned " + std::to_string(d.unstarted_assignments) +
                                     " times and never started (the worker was lost each time)",
                                 ""});
      continue;
    }
    by_id[d.id.value] = &d;
    candidates.push_back({d.id.value, d.selector, d.state == RunState::orphaned ? d.previous_worker : ""});
  }
  // Overlap control: only runs that may become active now are placed, each
  // with the instance number and exclusive lock it takes (the database
  // refuses the assignment otherwise).
  std::vector<OverlapCandidate> overlap;
  for (const auto& c : candidates) {
    const store::DueRun& d = *by_id[c.run_id];
    overlap.push_back({c.run_id, d.job_name, d.instance_limit, d.mutually_exclusive, d.exclusive_execution, d.keyed});
  }
  const OverlapAdmission admission = admit_overlapping(overlap, in.holds);
  out.held = admission.held;
  std::erase_if(candidates, [&](const DispatchCandidate& c) { return !admission.admitted.count(c.run_id); });
  std::vector<WorkerCapacity> capacity;
  capacity.reserve(in.workers.size());
  for (const auto& w : in.workers) capacity.push_back(w.room);
  auto plan = plan_dispatch(candidates, capacity);
  // Reassignments of ORPHANED runs are paced (a new leader may inherit many
  // from a lost worker): those over the bucket wait for a later pass.
  int orphans = 0;
  for (const auto& a : plan.assignments) orphans += by_id[a.run_id]->state == RunState::orphaned;
  const int allowed = orphans > 0 ? out.reassignments.take(orphans, in.now) : 0;
  if (allowed < orphans) {
    int kept = 0;
    std::erase_if(plan.assignments, [&](const PlannedAssignment& a) {
      return by_id[a.run_id]->state == RunState::orphaned && kept++ >= allowed;
    });
    out.orphans_deferred = orphans - allowed;
  }
  // The start granted with the assignment (protocol 4; docs/fencing.md, "An
  // assignment that carries the start"): into a worker's free slots, as the
  // book counts them. The plan fills free slots before prefetch queues, so a
  // worker's first `free` assignments are those.
  struct GrantsLeft {
    int free = 0;
    const PlannerWorker* worker = nullptr;
  };
  std::map<std::string, GrantsLeft> grants_left;
  for (const auto& w : in.workers)
    if (w.takes_start_grant && !w.room.draining) grants_left[w.room.worker_id] = {w.room.free, &w};
  for (const auto& a : plan.assignments) {
    const store::DueRun& d = *by_id[a.run_id];
    auto tasks = protocol::decode_tasks(d.tasks_json);
    if (std::holds_alternative<protocol::DecodeError>(tasks)) {
      // It can never run: failed with a clear error (and a dead letter)
      // rather than skipped on every pass, holding a slot of the batch.
      const std::string& error = std::get<protocol::DecodeError>(tasks).message;
      out.bad_definitions.push_back(
          {d, "bad_definition", "job '" + d.job_name + "' has a task list that cannot be sent to a worker: " + error,
           error});
      continue;
    }
    auto& task_list = std::get<std::vector<protocol::Task>>(tasks);
    if (task_list.empty()) task_list.push_back(protocol::Task{});  // a run without a job: NOOP
    // An older worker would run the tasks without their own timeout,
    // parameters or role: such a run waits for a worker that knows them.
    const bool needs_knobs =
        std::any_of(task_list.begin(), task_list.end(), [](const protocol::Task& t) { return t.needs_knobs(); });
    auto planner = std::find_if(in.workers.begin(), in.workers.end(),
                                [&](const PlannerWorker& w) { return w.room.worker_id == a.worker_id; });
    if (needs_knobs && planner != in.workers.end() && planner->protocol < protocol::task_knobs_version_min) {
      out.held.push_back({d.id.value, "worker_protocol"});
      continue;
    }
    const OverlapGrant& grant = admission.admitted.at(d.id.value);
    PlacedRun p;
    p.due = d;
    p.row = {d.id, d.version, d.state, a.worker_id, in.continuation_timeout, grant.instance_no, grant.exclusive_lock};
    p.row.exclusive_execution = d.exclusive_execution;
    p.row.concurrency_key = d.keyed.concurrency_key;
    p.row.key_slot = grant.key_slot;
    p.row.rate_slot = grant.rate_slot;
    if (d.starts_in_ms > 0) p.start_not_before = in.now + Millis{d.starts_in_ms + 1};
    auto left = grants_left.find(a.worker_id);
    p.granted = !p.start_not_before && left != grants_left.end() && left->second.free-- > 0;
    // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h): the
    // frame carries the grant but the statement writes only the assignment,
    // as if the grant had left before a commit that then did not happen.
    if (p.granted && !weakened("grant_without_start_write"))
      p.row.start = store::StartGrant{left->second.worker->instance, left->second.worker->start_stale_after};
    p.tasks = std::move(task_list);
    out.placed.push_back(std::move(p));
  }
  return out;
}

store::ActiveRun assigned_row(const PlacedRun& placed, const store::WriteResult& written, Epoch epoch) {
  const store::DueRun& d = placed.due;
  const store::AssignRow& a = placed.row;
  store::ActiveRun row;
  row.id = d.id;
  row.version = written.new_version;
  row.state = RunState::assigned;
  row.attempt = written.attempt;
  row.max_attempts = d.max_attempts;
  row.worker_id = a.worker_id;
  row.lease_token = written.lease_token;
  row.leader_epoch = epoch;
  row.timeout_ms = d.timeout_ms;
  row.retry_base_ms = d.retry_base_ms;
  row.retry_cap_ms = d.retry_cap_ms;
  row.continuation_timeout_ms = a.continuation_timeout.count();
  row.job_name = d.job_name;
  row.instance_no = a.instance_no;
  row.exclusive_lock = a.exclusive_lock;
  if (a.start) {
    // Written RUNNING with the assignment (version + 2).
    row.state = RunState::running;
    row.worker_instance = a.start->worker_instance;
  }
  return row;
}

}  // namespace baton::leader_core
