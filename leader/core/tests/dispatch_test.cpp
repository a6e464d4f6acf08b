#include "baton/leader_core/dispatch.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::leader_core;
using namespace std::chrono_literals;

TEST(Dispatch, SpreadsByFreeCapacityAndRespectsLabels) {
  std::vector<DispatchCandidate> due = {{1, {}}, {2, {}}, {3, {{"gpu", "yes"}}}, {4, {}}, {5, {{"zone", "mars"}}}};
  std::vector<WorkerCapacity> workers = {{"w1", {}, 2, false}, {"w2", {{"gpu", "yes"}}, 2, false}};
  auto plan = plan_dispatch(due, workers);
  ASSERT_EQ(plan.assignments.size(), 4u);
  EXPECT_EQ(plan.assignments[0].worker_id, "w1");  // tie on free slots: smallest id
  EXPECT_EQ(plan.assignments[1].worker_id, "w2");  // now w2 has more free
  EXPECT_EQ(plan.assignments[2].worker_id, "w2");  // only w2 carries gpu=yes
  EXPECT_EQ(plan.assignments[3].worker_id, "w1");
  EXPECT_EQ(plan.unmatched, std::vector<std::int64_t>{5});
}

TEST(Dispatch, FullOrDrainingWorkersTakeNothing) {
  std::vector<WorkerCapacity> workers = {{"w1", {}, 0, false}, {"w2", {}, 3, true}};
  auto plan = plan_dispatch({{1, {}}}, workers);
  EXPECT_TRUE(plan.assignments.empty());
  EXPECT_TRUE(plan.unmatched.empty()) << "a full worker matches: the run waits, it is not unmatched";
}

TEST(Dispatch, FinishRetriesWithBackoffUntilAttemptsAreExhausted) {
  auto d1 = decide_finish(RunState::failed, 1, 3, 1000ms, 60000ms, 0ms);
  EXPECT_EQ(d1.next, RunState::retry_waiting);
  EXPECT_EQ(d1.retry_delay, 1000ms);
  auto d2 = decide_finish(RunState::timed_out, 2, 3, 1000ms, 60000ms, 7ms);
  EXPECT_EQ(d2.next, RunState::retry_waiting);
  EXPECT_EQ(d2.retry_delay, 2007ms);
  EXPECT_EQ(decide_finish(RunState::failed, 3, 3, 1000ms, 60000ms, 0ms).next, RunState::failed);
  EXPECT_EQ(decide_finish(RunState::timed_out, 1, 1, 1000ms, 60000ms, 0ms).next, RunState::timed_out);
  EXPECT_EQ(decide_finish(RunState::succeeded, 1, 3, 1000ms, 60000ms, 0ms).next, RunState::succeeded);
}

TEST(Reaper, AssignedRunOfADetachedWorkerIsOrphanedAfterTheShortThreshold) {
  ReaperConfig cfg{10000ms, 1000ms, 5000ms};
  std::vector<ReaperView> runs = {
      {1, RunState::assigned, "w1", false, true, ContinuationState::none, false, 999, 0, 0},
      {2, RunState::assigned, "w1", false, true, ContinuationState::none, false, 1000, 0, 0},
      {3, RunState::assigned, "w2", true, true, ContinuationState::none, false, 9999, 0, 0},
  };
  auto actions = plan_reaping(runs, cfg);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].run_id, 2);
  EXPECT_EQ(actions[0].kind, ReapKind::orphan);
}

TEST(Reaper, OrphansConfirmsAndNeverReassignsWhileConfirming) {
  ReaperConfig cfg{10000ms, 10000ms, 5000ms};
  std::vector<ReaperView> runs = {
      {1, RunState::assigned, "w1", false, true, ContinuationState::none, false, 9999, 0, 0},
      {2, RunState::assigned, "w1", false, true, ContinuationState::none, false, 10000, 0, 0},
      {3, RunState::assigned, "w2", true, true, ContinuationState::none, false, 99999, 0, 0},
      {4, RunState::running, "w1", false, true, ContinuationState::none, false, 0, 100, 0},
      {5, RunState::running, "w1", false, true, ContinuationState::confirming, false, 0, 100, 0},
      {6, RunState::running, "w1", false, true, ContinuationState::confirming, true, 0, 100, 0},
      {7, RunState::running, "w2", true, true, ContinuationState::confirming, true, 0, 100, 0},
      {8, RunState::running, "w2", true, true, ContinuationState::none, false, 0, 16000, 10000},
      {9, RunState::running, "w2", true, true, ContinuationState::none, false, 0, 14000, 10000},
  };
  auto actions = plan_reaping(runs, cfg);
  ASSERT_EQ(actions.size(), 5u);
  EXPECT_EQ(actions[0].run_id, 2);
  EXPECT_EQ(actions[0].kind, ReapKind::orphan);
  EXPECT_EQ(actions[1].run_id, 3) << "attached but never started: the assignment was lost";
  EXPECT_EQ(actions[1].kind, ReapKind::orphan);
  EXPECT_EQ(actions[2].run_id, 4);
  EXPECT_EQ(actions[2].kind, ReapKind::begin_confirming);
  EXPECT_EQ(actions[3].run_id, 6);
  EXPECT_EQ(actions[3].kind, ReapKind::attempt_lost);
  EXPECT_EQ(actions[4].run_id, 8);
  EXPECT_EQ(actions[4].kind, ReapKind::enforce_timeout);
}
