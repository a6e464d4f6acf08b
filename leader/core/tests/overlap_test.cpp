// admit_overlapping: which due runs may become active now under
// max_instances (and forbid/replace, a limit of 1), mutually_exclusive and
// exclusive_execution, and the instance numbers and lock each one takes.
#include "baton/leader_core/overlap.h"

#include <gtest/gtest.h>

using namespace baton::leader_core;

namespace {

OverlapCandidate run(std::int64_t id, const char* job, std::optional<int> limit = std::nullopt,
                     bool mutually_exclusive = false) {
  return {id, job, limit, mutually_exclusive, false};
}

/// A run of an exclusive job (exclusive_execution).
OverlapCandidate exclusive(std::int64_t id, const char* job) { return {id, job, std::nullopt, false, true}; }

}  // namespace

TEST(Overlap, UnlimitedJobsAreAllAdmittedWithoutNumbers) {
  auto a = admit_overlapping({run(1, "a"), run(2, "a"), run(3, "b")}, {{"a", std::nullopt, false}});
  EXPECT_EQ(a.admitted.size(), 3u);
  EXPECT_TRUE(a.held.empty());
  EXPECT_FALSE(a.admitted.at(1).instance_no);
  EXPECT_FALSE(a.admitted.at(1).exclusive_lock);
}

TEST(Overlap, ALimitTakesTheSmallestFreeNumbersInDispatchOrder) {
  // Job a allows 3; number 2 is held by a run already active.
  auto a = admit_overlapping({run(10, "a", 3), run(11, "a", 3), run(12, "a", 3), run(13, "b", 1)}, {{"a", 2, false}});
  EXPECT_EQ(a.admitted.at(10).instance_no, 1);
  EXPECT_EQ(a.admitted.at(11).instance_no, 3);
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].run_id, 12);
  EXPECT_EQ(a.held[0].reason, "max_instances");
  EXPECT_EQ(a.admitted.at(13).instance_no, 1) << "numbers are per job";
}

TEST(Overlap, ALimitOfOneHoldsEveryRunWhileOneIsActive) {
  auto a = admit_overlapping({run(20, "nightly", 1), run(21, "nightly", 1)}, {{"nightly", 1, false}});
  EXPECT_TRUE(a.admitted.empty());
  EXPECT_EQ(a.held.size(), 2u);
  auto b = admit_overlapping({run(20, "nightly", 1), run(21, "nightly", 1)}, {});
  EXPECT_EQ(b.admitted.size(), 1u);
  EXPECT_EQ(b.admitted.count(20), 1u) << "the first in dispatch order";
}

TEST(Overlap, OneMutuallyExclusiveRunAnywhere) {
  auto a = admit_overlapping({run(30, "x", std::nullopt, true), run(31, "y", std::nullopt, true), run(32, "z")}, {});
  EXPECT_TRUE(a.admitted.at(30).exclusive_lock);
  EXPECT_EQ(a.admitted.count(32), 1u) << "a job that is not mutually exclusive is not held";
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].run_id, 31);
  EXPECT_EQ(a.held[0].reason, "mutually_exclusive");
  auto b = admit_overlapping({run(40, "x", std::nullopt, true)}, {{"other", std::nullopt, true}});
  EXPECT_TRUE(b.admitted.empty()) << "the lock is held by an active run";
}

TEST(Overlap, AMutuallyExclusiveLimitedRunTakesBoth) {
  auto a = admit_overlapping({run(50, "x", 2, true)}, {});
  EXPECT_EQ(a.admitted.at(50).instance_no, 1);
  EXPECT_TRUE(a.admitted.at(50).exclusive_lock);
}

// exclusive_execution (pg_timetable's): nothing else runs while it runs.

TEST(Overlap, AnExclusiveRunWaitsForEveryActiveRun) {
  auto a = admit_overlapping({exclusive(60, "vacuum"), run(61, "a")}, {{"other", std::nullopt, false, false}});
  EXPECT_EQ(a.admitted.count(60), 0u);
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].run_id, 60);
  EXPECT_EQ(a.held[0].reason, "exclusive_execution");
  EXPECT_EQ(a.admitted.count(61), 1u)
      << "while it waits the others are not held here: the due read no longer returns them (schemas/0033)";
}

TEST(Overlap, AnExclusiveRunGoesAloneWhenNothingIsActive) {
  auto a = admit_overlapping({exclusive(70, "vacuum"), run(71, "a"), exclusive(72, "reindex")}, {});
  ASSERT_EQ(a.admitted.size(), 1u);
  EXPECT_EQ(a.admitted.count(70), 1u);
  ASSERT_EQ(a.held.size(), 2u);
  EXPECT_EQ(a.held[0].reason, "exclusive_execution");
  EXPECT_EQ(a.held[1].reason, "exclusive_execution");
  auto b = admit_overlapping({run(73, "a"), exclusive(74, "vacuum")}, {});
  EXPECT_EQ(b.admitted.count(73), 1u);
  EXPECT_EQ(b.admitted.count(74), 0u) << "a run admitted before it in the same batch is active with it";
}

TEST(Overlap, WhileAnExclusiveRunIsActiveNothingIsAdmitted) {
  auto a =
      admit_overlapping({run(80, "a"), run(81, "b", 3), exclusive(82, "x")}, {{"vacuum", std::nullopt, false, true}});
  EXPECT_TRUE(a.admitted.empty());
  EXPECT_EQ(a.held.size(), 3u);
  for (const auto& h : a.held) EXPECT_EQ(h.reason, "exclusive_execution");
}

// Keyed concurrency and rate limits (schemas/0035): slots and permits from
// what the read found held and taken, plus those granted in the same pass.

namespace {

OverlapCandidate keyed(std::int64_t id, const char* key, int limit, std::vector<int> held = {}) {
  OverlapCandidate c{id, "sync", std::nullopt, false, false};
  c.keyed.concurrency_key = key;
  c.keyed.key_limit = limit;
  c.keyed.key_slots_held = std::move(held);
  return c;
}

OverlapCandidate rated(std::int64_t id, const char* rate_key, int runs, std::vector<int> busy = {}) {
  OverlapCandidate c{id, "report", std::nullopt, false, false};
  c.keyed.rate_limit = runs;
  c.keyed.rate_per_ms = 60000;
  c.keyed.rate_key = rate_key;
  c.keyed.rate_slots_busy = std::move(busy);
  return c;
}

}  // namespace

TEST(Overlap, AKeyTakesTheSmallestFreeSlotAndHoldsTheRunsOverItsLimit) {
  auto a = admit_overlapping(
      {keyed(1, "acme", 2, {1}), keyed(2, "acme", 2, {1}), keyed(3, "acme", 2, {1}), keyed(4, "bolt", 2)}, {});
  EXPECT_EQ(a.admitted.at(1).key_slot, 2) << "slot 1 is held by an active run";
  EXPECT_EQ(a.admitted.count(2), 0u) << "the key is at its limit once run 1 is admitted";
  EXPECT_EQ(a.admitted.at(4).key_slot, 1) << "slots are per key";
  ASSERT_EQ(a.held.size(), 2u);
  EXPECT_EQ(a.held[0].run_id, 2);
  EXPECT_EQ(a.held[0].reason, "concurrency_key");
  EXPECT_EQ(a.held[0].detail, "waiting: key acme at its limit of 2");
  EXPECT_EQ(a.held[1].run_id, 3);
}

TEST(Overlap, ARunHeldByItsKeyTakesNothingElse) {
  OverlapCandidate c = keyed(1, "acme", 1, {1});
  c.instance_limit = 1;
  c.mutually_exclusive = true;
  auto a = admit_overlapping({c, run(2, "sync", 1, true)}, {});
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].run_id, 1);
  EXPECT_EQ(a.admitted.at(2).instance_no, 1) << "run 1 took no instance number";
  EXPECT_TRUE(a.admitted.at(2).exclusive_lock) << "nor the exclusive lock";
}

TEST(Overlap, ARateLimitGrantsTheFreePermitsPerJobOrKey) {
  auto a = admit_overlapping({rated(1, "", 3, {2}), rated(2, "", 3, {2}), rated(3, "", 3, {2})}, {});
  EXPECT_EQ(a.admitted.at(1).rate_slot, 1);
  EXPECT_EQ(a.admitted.at(2).rate_slot, 3);
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].reason, "rate_limit");
  EXPECT_EQ(a.held[0].detail, "waiting: job report at its rate limit of 3 per 60000 ms");
  auto b = admit_overlapping({rated(1, "acme", 1), rated(2, "acme", 1), rated(3, "bolt", 1)}, {});
  EXPECT_EQ(b.admitted.at(1).rate_slot, 1);
  EXPECT_EQ(b.admitted.at(3).rate_slot, 1) << "another key's permits";
  ASSERT_EQ(b.held.size(), 1u);
  EXPECT_EQ(b.held[0].detail, "waiting: key acme at its rate limit of 1 per 60000 ms");
}

TEST(Overlap, ARunWithoutKeyedLimitsTakesNoSlotOrPermit) {
  auto a = admit_overlapping({run(1, "a")}, {});
  EXPECT_FALSE(a.admitted.at(1).key_slot);
  EXPECT_FALSE(a.admitted.at(1).rate_slot);
}
