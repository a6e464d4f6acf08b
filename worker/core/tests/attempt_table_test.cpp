// AttemptTable: each rule of the worker's side of the lifecycle, fed inputs
// with a hand-moved monotonic time, asserted on the effects.
#include "baton/worker_core/attempt_table.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::worker_core;
using namespace std::chrono_literals;

namespace {

MonoTime at(std::chrono::milliseconds t) { return MonoTime{t}; }

protocol::AttemptRef ref(std::int64_t run, int attempt = 1) {
  return {run, attempt, "token-" + std::to_string(run) + "-" + std::to_string(attempt)};
}

protocol::Assign assign(std::int64_t run, int attempt = 1, std::int64_t continuation_ms = 0) {
  protocol::Assign a;
  a.ref = ref(run, attempt);
  a.continuation_timeout_ms = continuation_ms;
  return a;
}

protocol::Welcome welcome(std::vector<protocol::AttemptRef> adopted = {}, std::int64_t continuation_ms = 4000) {
  protocol::Welcome w;
  w.continuation_timeout_ms = continuation_ms;
  w.adopted = std::move(adopted);
  return w;
}

template <class T>
std::vector<T> only(const std::vector<Effect>& effects) {
  std::vector<T> out;
  for (const auto& e : effects)
    if (const auto* x = std::get_if<T>(&e)) out.push_back(*x);
  return out;
}

std::vector<protocol::AttemptRef> starts(const std::vector<Effect>& effects) {
  std::vector<protocol::AttemptRef> out;
  for (const auto& s : only<Send>(effects))
    if (const auto* st = std::get_if<protocol::Start>(&s.message)) out.push_back(st->ref);
  return out;
}

/// A table attached at t=0 with `run` granted and running.
AttemptTable running_table(std::int64_t run, std::int64_t continuation_ms = 0) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.assign(assign(run, 1, continuation_ms), at(0ms));
  t.start_granted(ref(run));
  t.take_effects();
  return t;
}

}  // namespace

TEST(AttemptTable, AnAssignmentAsksToStartAndSpawnsOnlyOnTheGrant) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.assign(assign(1), at(0ms));
  auto e = t.take_effects();
  EXPECT_EQ(starts(e), std::vector<protocol::AttemptRef>{ref(1)});
  EXPECT_TRUE(only<Spawn>(e).empty()) << "no process without a grant";
  EXPECT_EQ(t.state(ref(1)), AttemptState::start_requested);
  EXPECT_TRUE(t.running().empty());
  EXPECT_EQ(t.assigned(), std::vector<protocol::AttemptRef>{ref(1)});
  t.start_granted(ref(1));
  e = t.take_effects();
  ASSERT_EQ(only<Spawn>(e).size(), 1u);
  EXPECT_EQ(only<Spawn>(e)[0].assign.ref, ref(1));
  EXPECT_EQ(t.running(), std::vector<protocol::AttemptRef>{ref(1)});
  t.start_granted(ref(1));  // a repeated grant spawns nothing more
  EXPECT_TRUE(t.take_effects().empty());
}

TEST(AttemptTable, DrainingKeepsRunningAttemptsAndStartsNothingNew) {
  AttemptTable t = running_table(7);
  t.detached(at(50ms));
  t.assign(assign(8), at(60ms));  // held while detached: no start asked yet
  t.welcome(welcome({ref(7)}), at(70ms));
  t.take_effects();
  t.assign(assign(9), at(80ms));  // its start is asked before the drain
  EXPECT_EQ(starts(t.take_effects()), std::vector<protocol::AttemptRef>{ref(9)});
  t.drain();
  EXPECT_TRUE(only<Kill>(t.take_effects()).empty()) << "running attempts go on";
  EXPECT_EQ(t.running(), std::vector<protocol::AttemptRef>{ref(7)});
  t.assign(assign(10), at(90ms));  // sent before the leader read the drain
  EXPECT_TRUE(t.take_effects().empty());
  EXPECT_FALSE(t.state(ref(10)));
  // A start asked before the drain is still honoured when granted.
  t.start_granted(ref(9));
  EXPECT_EQ(only<Spawn>(t.take_effects()).size(), 1u);
  // After a reconnect nothing unstarted is asked again.
  t.detached(at(100ms));
  t.welcome(welcome({ref(7), ref(9)}), at(110ms));
  EXPECT_TRUE(starts(t.take_effects()).empty());
  EXPECT_FALSE(t.idle());
  t.finished(ref(7), at(120ms));
  t.finished(ref(9), at(130ms));
  EXPECT_TRUE(t.idle());
}

TEST(AttemptTable, AReplayedAssignIsIgnored) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.assign(assign(1), at(0ms));
  t.take_effects();
  t.assign(assign(1), at(10ms));
  EXPECT_TRUE(t.take_effects().empty());
  EXPECT_EQ(t.assigned().size(), 1u);
}

TEST(AttemptTable, ADeniedStartForgetsTheAttempt) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.assign(assign(1), at(0ms));
  t.start_denied(ref(1), at(0ms));
  EXPECT_FALSE(t.state(ref(1)));
  t.start_granted(ref(1));  // a grant after the denial finds nothing to start
  EXPECT_TRUE(only<Spawn>(t.take_effects()).empty());
}

TEST(AttemptTable, NoStartWhileAnotherAttemptOfTheRunIsAlive) {
  AttemptTable t = running_table(7);
  t.assign(assign(7, 2), at(100ms));
  EXPECT_TRUE(starts(t.take_effects()).empty()) << "attempt 1 of run 7 is still alive here";
  t.start_granted(ref(7, 2));  // even a grant does not start it
  EXPECT_TRUE(only<Spawn>(t.take_effects()).empty());
  t.finished(ref(7, 1), at(200ms));
  EXPECT_EQ(starts(t.take_effects()), std::vector<protocol::AttemptRef>{ref(7, 2)}) << "asked once the first ended";
}

TEST(AttemptTable, StartsAreAskedOnlyWhileAttachedAndAgainAtTheWelcome) {
  AttemptTable t;
  t.assign(assign(1), at(0ms));  // not attached yet
  EXPECT_TRUE(t.take_effects().empty());
  t.welcome(welcome(), at(10ms));
  EXPECT_EQ(starts(t.take_effects()).size(), 1u);
  t.detached(at(20ms));
  t.welcome(welcome(), at(30ms));  // the start may have died with the connection
  EXPECT_EQ(starts(t.take_effects()).size(), 1u);
}

TEST(AttemptTable, AnUnansweredStartIsAskedAgainAfterTwoSeconds) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.assign(assign(1), at(0ms));
  t.take_effects();
  t.tick(at(1999ms));
  EXPECT_TRUE(starts(t.take_effects()).empty());
  t.tick(at(2000ms));
  EXPECT_EQ(starts(t.take_effects()).size(), 1u);
}

TEST(AttemptTable, AttachedAttemptsAreRenewedAndNeverKilledForTheDeadline) {
  AttemptTable t = running_table(1);
  for (std::chrono::milliseconds ms : {100ms, std::chrono::milliseconds(10s), std::chrono::milliseconds(1h)}) {
    t.tick(at(ms));
    auto e = t.take_effects();
    EXPECT_EQ(only<Renew>(e).size(), 1u);
    EXPECT_TRUE(only<Kill>(e).empty());
  }
}

TEST(AttemptTable, DetachedPastTheContinuationTimeoutIsKilledAsAFailureExactlyThen) {
  AttemptTable t = running_table(1, /*continuation_ms=*/5000);  // the run's own, not the welcome's 4 s
  t.detached(at(1000ms));
  t.tick(at(6000ms));  // exactly 5 s: may still go on
  auto e = t.take_effects();
  EXPECT_EQ(only<Renew>(e).size(), 1u);
  EXPECT_TRUE(only<Kill>(e).empty());
  t.tick(at(6001ms));
  e = t.take_effects();
  ASSERT_EQ(only<Kill>(e).size(), 1u);
  EXPECT_TRUE(only<Kill>(e)[0].as_failure());
  EXPECT_EQ(only<Kill>(e)[0].cause, KillCause::continuation);
  EXPECT_TRUE(only<Renew>(e).empty()) << "no renewal once it is over";
  EXPECT_EQ(t.state(ref(1)), AttemptState::stopping);
  EXPECT_EQ(t.running().size(), 1u) << "still listed until its process ends";
  t.tick(at(7000ms));
  EXPECT_TRUE(t.take_effects().empty()) << "killed once";
}

// H5: a welcome that does not adopt the attempt proves nothing about it.
TEST(AttemptTable, OnlyAnAdoptionRestartsTheContinuationClock) {
  AttemptTable t = running_table(1);
  t.detached(at(1000ms));
  t.welcome(welcome(/*adopted=*/{}), at(3000ms));
  t.tick(at(5001ms));
  EXPECT_EQ(only<Kill>(t.take_effects()).size(), 1u) << "4 s after the detach, welcome or not";

  AttemptTable u = running_table(2);
  u.detached(at(1000ms));
  u.welcome(welcome({ref(2)}), at(3000ms));
  u.tick(at(60s));
  EXPECT_TRUE(only<Kill>(u.take_effects()).empty()) << "adopted: attached again";
}

TEST(AttemptTable, CancelKillsALiveAttemptAndDropsAnUnstartedOne) {
  AttemptTable t = running_table(1);
  t.assign(assign(2), at(0ms));
  t.take_effects();
  t.cancel({ref(1), "operator"}, at(0ms));
  t.cancel({ref(2), "operator"}, at(0ms));
  auto e = t.take_effects();
  ASSERT_EQ(only<Kill>(e).size(), 1u);
  EXPECT_EQ(only<Kill>(e)[0].ref, ref(1));
  EXPECT_FALSE(only<Kill>(e)[0].as_failure());
  EXPECT_FALSE(t.state(ref(2)));
  t.finished(ref(1), at(10ms));
  EXPECT_TRUE(t.running().empty());
}

TEST(AttemptTable, StoppingKillsEveryLiveAttemptAsAFailure) {
  AttemptTable t = running_table(1);
  t.stop_all("worker stopping");
  auto kills = only<Kill>(t.take_effects());
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_TRUE(kills[0].as_failure());
}

// Prefetch: runs assigned beyond the free slots wait, and the oldest waiting
// one is asked for the moment a slot frees -- not a round trip later.
namespace {
std::vector<std::int64_t> started(const std::vector<Effect>& effects) {
  std::vector<std::int64_t> out;
  for (const auto& s : only<Send>(effects))
    if (const auto* st = std::get_if<protocol::Start>(&s.message)) out.push_back(st->ref.run_id);
  return out;
}
}  // namespace

TEST(AttemptTablePrefetch, StartsAreAskedOnlyIntoFreeSlotsOldestFirst) {
  AttemptTable t(2);
  t.welcome(welcome(), at(0ms));
  // Arrival order 30, 10, 20, 40: the key order of the table is not the turn.
  for (std::int64_t run : {30, 10, 20, 40}) t.assign(assign(run), at(0ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{30, 10}));
  EXPECT_EQ(t.assigned().size(), 4u);  // asked-for and waiting alike are listed as assigned
  t.start_granted(ref(30));
  t.start_granted(ref(10));
  EXPECT_TRUE(started(t.take_effects()).empty());  // both slots run
  t.finished(ref(10), at(5ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{20}));
  t.finished(ref(30), at(6ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{40}));
}

TEST(AttemptTablePrefetch, ADeniedOrCanceledStartFreesItsSlotForTheNextRun) {
  AttemptTable t(1);
  t.welcome(welcome(), at(0ms));
  for (std::int64_t run : {1, 2, 3}) t.assign(assign(run), at(0ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{1}));
  t.start_denied(ref(1), at(1ms));  // the run was taken back meanwhile
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{2}));
  t.cancel({ref(2), "assignment expired"}, at(2ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{3}));
  t.cancel({ref(3), "assignment expired"}, at(3ms));
  EXPECT_TRUE(t.idle());
}

TEST(AttemptTablePrefetch, AReconnectAsksAgainOnlyAsManyAsTheSlotsHold) {
  AttemptTable t(2);
  t.welcome(welcome(), at(0ms));
  t.assign(assign(1), at(0ms));
  t.start_granted(ref(1));
  for (std::int64_t run : {2, 3, 4}) t.assign(assign(run), at(0ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{1, 2}));
  t.detached(at(10ms));
  t.welcome(welcome({ref(1)}), at(20ms));
  // Run 1 still holds a slot; the start of 2 is asked again, 3 and 4 wait.
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{2}));
}

// Protocol 4: an assign that carries the start (the leader committed it
// before the frame left) spawns at once, asks for nothing, and takes a slot;
// the prefetched runs behind it keep the separate start.
TEST(AttemptTableGrantedAssign, AnAssignCarryingTheStartSpawnsWithoutAsking) {
  AttemptTable t(1);
  t.welcome(welcome(), at(0ms));
  auto granted = assign(1);
  granted.start_granted = true;
  t.assign(granted, at(0ms));
  auto e = t.take_effects();
  ASSERT_EQ(only<Spawn>(e).size(), 1u);
  EXPECT_EQ(only<Spawn>(e)[0].assign.ref, ref(1));
  EXPECT_TRUE(starts(e).empty()) << "the grant came with the assignment";
  EXPECT_EQ(t.state(ref(1)), AttemptState::running);
  t.assign(assign(2), at(1ms));  // prefetched: its slot is taken
  EXPECT_TRUE(started(t.take_effects()).empty());
  t.start_granted(ref(1));  // a grant repeated for it spawns nothing more
  EXPECT_TRUE(only<Spawn>(t.take_effects()).empty());
  t.finished(ref(1), at(2ms));
  EXPECT_EQ(started(t.take_effects()), (std::vector<std::int64_t>{2}));
}

// Never two live attempts of one run here, whatever the leader wrote: a
// granted assign of a run whose earlier attempt is still dying waits, and
// asks for its start (which the leader grants again) once that one ended.
TEST(AttemptTableGrantedAssign, AGrantedAssignWaitsForAnotherAttemptOfItsRunToEnd) {
  AttemptTable t = running_table(7);
  auto next = assign(7, 2);
  next.start_granted = true;
  t.assign(next, at(100ms));
  EXPECT_TRUE(only<Spawn>(t.take_effects()).empty());
  EXPECT_EQ(t.state(ref(7, 2)), AttemptState::assigned);
  t.finished(ref(7, 1), at(200ms));
  EXPECT_EQ(starts(t.take_effects()), std::vector<protocol::AttemptRef>{ref(7, 2)});
}

// Draining drops assignments that arrive (no grant, no process), but one
// that carries the start is RUNNING in the database: it runs, as a start
// asked for before the drain does.
TEST(AttemptTableGrantedAssign, ADrainingWorkerHonoursAnAssignCarryingTheStart) {
  AttemptTable t;
  t.welcome(welcome(), at(0ms));
  t.drain();
  t.assign(assign(1), at(1ms));
  EXPECT_FALSE(t.state(ref(1)));
  auto granted = assign(2);
  granted.start_granted = true;
  t.assign(granted, at(2ms));
  EXPECT_EQ(only<Spawn>(t.take_effects()).size(), 1u);
  EXPECT_EQ(t.running(), std::vector<protocol::AttemptRef>{ref(2)});
}
