// The assignment planner: what a dispatch pass assigns, fails or leaves
// for later, as a pure function of the due runs and the fleet's room.
#include "baton/leader_core/assignment_plan.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::leader_core;
using namespace std::chrono_literals;

namespace {

store::DueRun due(std::int64_t id, RunState state = RunState::pending) {
  store::DueRun d;
  d.id = RunId{id};
  d.version = Version{3};
  d.state = state;
  d.job_name = "job-" + std::to_string(id);
  d.tasks_json = R"([{"kind":"BUILTIN","builtin":"NOOP"}])";
  return d;
}

PlannerWorker worker(const std::string& id, int free, int queue, bool grants = true) {
  return PlannerWorker{WorkerCapacity{id, {}, free, false, queue}, grants, id + "-process",
                       protocol::protocol_version_max, 4s};
}

AssignmentPlanInput input(std::vector<store::DueRun>& runs, std::vector<PlannerWorker> workers) {
  AssignmentPlanInput in;
  in.due = runs;
  in.workers = std::move(workers);
  in.max_unstarted_assignments = 3;
  in.continuation_timeout = 30s;
  in.now = MonoTime{100s};
  return in;
}

}  // namespace

TEST(AssignmentPlan, FreeSlotsTakeTheStartWithTheAssignmentAndPrefetchedRunsDoNot) {
  std::vector<store::DueRun> runs{due(1), due(2), due(3)};
  const auto plan = plan_assignments(input(runs, {worker("w1", 2, 4)}));
  ASSERT_EQ(plan.placed.size(), 3u);
  EXPECT_TRUE(plan.placed[0].granted);
  EXPECT_TRUE(plan.placed[1].granted);
  EXPECT_FALSE(plan.placed[2].granted) << "the third goes to the prefetch queue: its start comes later";
  ASSERT_TRUE(plan.placed[0].row.start);
  EXPECT_EQ(plan.placed[0].row.start->worker_instance, "w1-process");
  EXPECT_EQ(plan.placed[0].row.start->stale_after, 4s);
  EXPECT_FALSE(plan.placed[2].row.start);
  EXPECT_EQ(plan.placed[0].row.continuation_timeout, 30s);
  EXPECT_EQ(plan.placed[0].row.expected_version, Version{3});
  EXPECT_EQ(plan.placed[0].tasks.size(), 1u);
}

TEST(AssignmentPlan, AWorkerThatCannotTakeTheStartGetsPlainAssignments) {
  std::vector<store::DueRun> runs{due(1)};
  const auto plan = plan_assignments(input(runs, {worker("w1", 2, 0, false)}));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_FALSE(plan.placed[0].granted);
  EXPECT_FALSE(plan.placed[0].row.start);
}

TEST(AssignmentPlan, ARunReadAheadOfItsTimeIsAssignedWithItsStartHeldNeverGranted) {
  std::vector<store::DueRun> runs{due(1)};
  runs[0].starts_in_ms = 250;
  const auto plan = plan_assignments(input(runs, {worker("w1", 2, 0)}));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_FALSE(plan.placed[0].granted);
  ASSERT_TRUE(plan.placed[0].start_not_before);
  EXPECT_EQ(*plan.placed[0].start_not_before, MonoTime{100s} + 251ms) << "never before the database's time";
}

TEST(AssignmentPlan, AnOrphanAssignedTooOftenIsFailedNotPlaced) {
  std::vector<store::DueRun> runs{due(1, RunState::orphaned), due(2)};
  runs[0].unstarted_assignments = 3;
  const auto plan = plan_assignments(input(runs, {worker("w1", 4, 0)}));
  ASSERT_EQ(plan.over_budget.size(), 1u);
  EXPECT_EQ(plan.over_budget[0].run.id, RunId{1});
  EXPECT_EQ(plan.over_budget[0].error_code, "orphaned");
  EXPECT_NE(plan.over_budget[0].reason.find("assigned 3 times"), std::string::npos);
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].due.id, RunId{2});
}

// SPEC 7.42: the orphans the pace defers are the last of the read's order,
// which is the priority order (LeaderStoreContract.OrphanedRunsComeBackByPriorityToo).
TEST(AssignmentPlan, OrphansOverThePaceAreTheLowerPriorityOnes) {
  auto high = due(3, RunState::orphaned), low = due(1, RunState::orphaned);
  high.priority = 9;
  std::vector<store::DueRun> runs{high, low};
  auto in = input(runs, {worker("w1", 8, 0)});
  in.reassignments = TokenBucket(1, 1);  // one at once
  const auto plan = plan_assignments(in);
  EXPECT_EQ(plan.orphans_deferred, 1);
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].due.id, RunId{3}) << "the higher priority is reassigned first";
}

TEST(AssignmentPlan, ReassignmentsOverThePaceWaitAndTheBucketComesBackSpent) {
  std::vector<store::DueRun> runs{due(1, RunState::orphaned), due(2, RunState::orphaned), due(3, RunState::orphaned),
                                  due(4)};
  auto in = input(runs, {worker("w1", 8, 0)});
  in.reassignments = TokenBucket(1, 2);  // 1 a second, 2 at once
  const auto first = plan_assignments(in);
  EXPECT_EQ(first.orphans_deferred, 1);
  ASSERT_EQ(first.placed.size(), 3u) << "two orphans and the pending run";
  EXPECT_EQ(first.placed[2].due.id, RunId{4});
  // The bucket it returns is spent: the same plan again at once places none of the orphans.
  in.reassignments = first.reassignments;
  const auto second = plan_assignments(in);
  EXPECT_EQ(second.orphans_deferred, 3);
  ASSERT_EQ(second.placed.size(), 1u);
}

TEST(AssignmentPlan, ATaskListNoWorkerCouldBeSentIsFailedWithItsError) {
  std::vector<store::DueRun> runs{due(1), due(2)};
  runs[0].tasks_json = "{not a list";
  const auto plan = plan_assignments(input(runs, {worker("w1", 4, 0)}));
  ASSERT_EQ(plan.bad_definitions.size(), 1u);
  EXPECT_EQ(plan.bad_definitions[0].error_code, "bad_definition");
  EXPECT_NE(plan.bad_definitions[0].reason.find("job 'job-1'"), std::string::npos);
  EXPECT_FALSE(plan.bad_definitions[0].detail.empty());
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].due.id, RunId{2});
}

TEST(AssignmentPlan, AMutuallyExclusiveJobIsHeldWhileAnotherHoldsTheLock) {
  std::vector<store::DueRun> runs{due(1)};
  runs[0].mutually_exclusive = true;
  auto in = input(runs, {worker("w1", 4, 0)});
  in.holds.push_back({"other", std::nullopt, true});
  const auto plan = plan_assignments(in);
  EXPECT_TRUE(plan.placed.empty());
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0].reason, "mutually_exclusive");
}

TEST(AssignmentPlan, AnExclusiveRunIsPlacedAloneOnceNothingRuns) {
  std::vector<store::DueRun> runs{due(1), due(2)};
  runs[0].exclusive_execution = true;
  auto in = input(runs, {worker("w1", 4, 0)});
  in.holds.push_back({"other", std::nullopt, false});
  auto plan = plan_assignments(in);
  ASSERT_EQ(plan.placed.size(), 1u) << "the exclusive run waits for the active one";
  EXPECT_EQ(plan.placed[0].due.id, RunId{2});
  in.holds.clear();
  plan = plan_assignments(in);
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].due.id, RunId{1});
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0].run_id, 2);
}

TEST(AssignmentPlan, TheWrittenRowIsRunningWhenTheStartWentWithIt) {
  std::vector<store::DueRun> runs{due(1), due(2)};
  const auto plan = plan_assignments(input(runs, {worker("w1", 1, 4)}));
  ASSERT_EQ(plan.placed.size(), 2u);
  store::WriteResult written;
  written.new_version = Version{5};
  written.attempt = 2;
  written.lease_token = "token";
  const auto granted = assigned_row(plan.placed[0], written, Epoch{7});
  EXPECT_EQ(granted.state, RunState::running);
  EXPECT_EQ(granted.worker_instance, "w1-process");
  EXPECT_EQ(granted.version, Version{5});
  EXPECT_EQ(granted.attempt, 2);
  EXPECT_EQ(granted.leader_epoch, Epoch{7});
  EXPECT_EQ(granted.continuation_timeout_ms, 30000);
  EXPECT_EQ(assigned_row(plan.placed[1], written, Epoch{7}).state, RunState::assigned);
}

// A run whose tasks use their own knobs (timeout, parameters, role) is not
// sent to a worker whose protocol predates them (it would ignore them).
TEST(AssignmentPlan, ARunWithTaskKnobsWaitsForAWorkerThatKnowsThem) {
  std::vector<store::DueRun> runs{due(1)};
  runs[0].tasks_json = R"([{"kind":"BUILTIN","builtin":"NOOP","timeout_ms":500}])";
  auto in = input(runs, {worker("w1", 4, 0)});
  in.workers[0].protocol = 5;
  auto plan = plan_assignments(in);
  EXPECT_TRUE(plan.placed.empty());
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0].reason, "worker_protocol");
  in.workers[0].protocol = 6;
  plan = plan_assignments(in);
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].tasks[0].timeout_ms, 500);
}
