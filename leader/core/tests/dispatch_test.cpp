#include "baton/leader_core/dispatch.h"

#include <gtest/gtest.h>

#include <random>

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

// Prefetch: free slots anywhere are filled before any queue, so a busy
// worker never queues a run an idle one could start now.
TEST(Dispatch, QueuesTakeOnlyWhatNoFreeSlotCould) {
  std::vector<WorkerCapacity> workers = {{"busy", {}, 0, false, 4}, {"idle", {}, 1, false, 1}};
  auto plan = plan_dispatch({{1, {}}, {2, {}}, {3, {}}, {4, {}}, {5, {}}, {6, {}}, {7, {}}}, workers);
  ASSERT_EQ(plan.assignments.size(), 6u);  // 1 slot + 4 + 1 queue places; run 7 waits
  EXPECT_EQ(plan.assignments[0].run_id, 1);
  EXPECT_EQ(plan.assignments[0].worker_id, "idle");  // the one free slot, first, for the first run
  int busy = 0;
  for (std::size_t i = 1; i < plan.assignments.size(); ++i) busy += plan.assignments[i].worker_id == "busy";
  EXPECT_EQ(busy, 4);
  EXPECT_TRUE(plan.unmatched.empty());
  // A draining worker's queue takes nothing either.
  workers[0].draining = true;
  EXPECT_EQ(plan_dispatch({{1, {}}, {2, {}}, {3, {}}}, workers).assignments.size(), 2u);
}

namespace {
// The definition plan_dispatch must keep: each run, in order, to the matching
// worker with the most free slots (ties: smallest id). O(runs x workers).
DispatchPlan reference_plan(const std::vector<DispatchCandidate>& due, std::vector<WorkerCapacity> workers) {
  DispatchPlan plan;
  for (const auto& c : due) {
    WorkerCapacity* best = nullptr;
    bool any = false;
    for (auto& w : workers) {
      if (w.draining || !labels_match(c.selector, w.labels)) continue;
      any = true;
      if (w.free > 0 && (!best || w.free > best->free || (w.free == best->free && w.worker_id < best->worker_id)))
        best = &w;
    }
    if (best) {
      best->free--;
      plan.assignments.push_back({c.run_id, best->worker_id});
    } else if (!any) {
      plan.unmatched.push_back(c.run_id);
    }
  }
  return plan;
}
}  // namespace

// SPEC section 3: an ORPHANED run is reassigned to another worker where one
// fits, and to the same one only when no other has room.
TEST(Dispatch, AnOrphanedRunGoesToAnotherWorkerWhereOneFits) {
  std::vector<WorkerCapacity> fleet{{"w1", {}, 4}, {"w2", {}, 1}};
  DispatchCandidate orphan{7, {}, "w1"};
  auto plan = plan_dispatch({orphan}, fleet);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].worker_id, "w2") << "w1 has more room, but it was the last one";
  // Two orphans of w1 and one other slot: the second goes back to w1.
  plan = plan_dispatch({orphan, DispatchCandidate{8, {}, "w1"}}, fleet);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].worker_id, "w2");
  EXPECT_EQ(plan.assignments[1].worker_id, "w1");
  // Only the worker it left has room: it goes there rather than waiting.
  fleet[1].free = 0;
  plan = plan_dispatch({orphan}, fleet);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].worker_id, "w1");
}

TEST(Dispatch, MatchesTheReferenceOnSeededRandomFleets) {
  std::mt19937_64 rng(20261122);
  for (int round = 0; round < 300; ++round) {
    std::vector<WorkerCapacity> workers;
    const int nw = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < nw; ++i) {
      std::map<std::string, std::string> labels;
      if (rng() % 2) labels["zone"] = rng() % 2 ? "a" : "b";
      if (rng() % 3 == 0) labels["gpu"] = "yes";
      workers.push_back({"w" + std::to_string((i * 37) % 101), labels, static_cast<int>(rng() % 5), rng() % 10 == 0});
    }
    std::vector<DispatchCandidate> due;
    const int nr = static_cast<int>(rng() % 80);
    for (int i = 0; i < nr; ++i) {
      std::map<std::string, std::string> sel;
      if (rng() % 3 == 0) sel["zone"] = rng() % 2 ? "a" : "b";
      if (rng() % 4 == 0) sel["gpu"] = "yes";
      if (rng() % 20 == 0) sel["zone"] = "mars";
      due.push_back({i, sel});
    }
    auto got = plan_dispatch(due, workers);
    auto want = reference_plan(due, workers);
    ASSERT_EQ(got.assignments.size(), want.assignments.size()) << "round " << round;
    for (std::size_t i = 0; i < want.assignments.size(); ++i) {
      EXPECT_EQ(got.assignments[i].run_id, want.assignments[i].run_id) << "round " << round;
      EXPECT_EQ(got.assignments[i].worker_id, want.assignments[i].worker_id) << "round " << round << " run " << i;
    }
    EXPECT_EQ(got.unmatched, want.unmatched) << "round " << round;
  }
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
  ReaperConfig cfg{10000ms, 1000ms, 5000ms, 2};
  std::vector<ReaperView> runs = {
      {1, RunState::assigned, "w1", false, true, ContinuationState::none, false, 999, 0, 0, 0},
      {2, RunState::assigned, "w1", false, true, ContinuationState::none, false, 1000, 0, 0, 0},
      {3, RunState::assigned, "w2", true, true, ContinuationState::none, false, 9999, 0, 0, 0},
  };
  auto actions = plan_reaping(runs, cfg);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].run_id, 2);
  EXPECT_EQ(actions[0].kind, ReapKind::orphan);
}

// A run its attached worker lists as held (queued behind busy slots) goes
// back to be placed again after reassign_after, as a requeue that does not
// count against the run; one the worker does not list is an orphan as ever.
TEST(Reaper, ARunHeldQueuedTooLongIsRequeuedNotOrphaned) {
  ReaperConfig cfg{10000ms, 1000ms, 5000ms, 2};
  std::vector<ReaperView> runs = {
      {1, RunState::assigned, "w1", true, true, ContinuationState::none, false, 9999, 0, 0, 0, true},
      {2, RunState::assigned, "w1", true, true, ContinuationState::none, false, 10000, 0, 0, 0, true},
      {3, RunState::assigned, "w1", true, true, ContinuationState::none, false, 10000, 0, 0, 0, false},
      {4, RunState::assigned, "w2", false, true, ContinuationState::none, false, 1000, 0, 0, 0, true},
  };
  auto actions = plan_reaping(runs, cfg);
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(actions[0].run_id, 2);
  EXPECT_EQ(actions[0].kind, ReapKind::requeue);
  EXPECT_EQ(actions[1].run_id, 3);
  EXPECT_EQ(actions[1].kind, ReapKind::orphan);
  EXPECT_EQ(actions[2].run_id, 4);  // its worker is gone: what it said no longer counts
  EXPECT_EQ(actions[2].kind, ReapKind::orphan);
}

// Lost only on positive evidence: two heartbeats in a row from the attached
// worker that did not list the attempt. Time alone (a slow leader) never
// makes an attempt lost: run 5 has been RUNNING for minutes with its worker
// listing it in every heartbeat.
TEST(Reaper, ARunningAttemptItsAttachedWorkerDoesNotListIsLost) {
  ReaperConfig cfg{10000ms, 1000ms, 5000ms, 2};
  std::vector<ReaperView> runs = {
      {1, RunState::running, "w1", true, true, ContinuationState::none, false, 0, 100, 0, 1},
      {2, RunState::running, "w1", true, true, ContinuationState::none, false, 0, 100, 0, 2},
      {3, RunState::running, "w1", true, false, ContinuationState::confirming, false, 0, 100, 0, 3},
      {4, RunState::running, "w2", false, true, ContinuationState::none, false, 0, 100, 0, 9},
      {5, RunState::running, "w1", true, true, ContinuationState::none, false, 0, 600000, 0, 0},
  };
  auto actions = plan_reaping(runs, cfg);
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(actions[0].run_id, 2);
  EXPECT_EQ(actions[0].kind, ReapKind::attempt_lost);
  EXPECT_EQ(actions[1].run_id, 3) << "reattached without listing it: not CONFIRMING for ever";
  EXPECT_EQ(actions[1].kind, ReapKind::attempt_lost);
  EXPECT_EQ(actions[2].run_id, 4) << "a detached worker's run goes through CONFIRMING, not this rule";
  EXPECT_EQ(actions[2].kind, ReapKind::begin_confirming);
}

TEST(Reaper, OrphansConfirmsAndNeverReassignsWhileConfirming) {
  ReaperConfig cfg{10000ms, 10000ms, 5000ms, 2};
  std::vector<ReaperView> runs = {
      {1, RunState::assigned, "w1", false, true, ContinuationState::none, false, 9999, 0, 0, 0},
      {2, RunState::assigned, "w1", false, true, ContinuationState::none, false, 10000, 0, 0, 0},
      {3, RunState::assigned, "w2", true, true, ContinuationState::none, false, 99999, 0, 0, 0},
      {4, RunState::running, "w1", false, true, ContinuationState::none, false, 0, 100, 0, 0},
      {5, RunState::running, "w1", false, true, ContinuationState::confirming, false, 0, 100, 0, 0},
      {6, RunState::running, "w1", false, true, ContinuationState::confirming, true, 0, 100, 0, 0},
      {7, RunState::running, "w2", true, true, ContinuationState::confirming, true, 0, 100, 0, 0},
      {8, RunState::running, "w2", true, true, ContinuationState::none, false, 0, 16000, 10000, 0},
      {9, RunState::running, "w2", true, true, ContinuationState::none, false, 0, 14000, 10000, 0},
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
