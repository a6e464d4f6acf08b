// The leader's cron statements against real PostgreSQL: a slot's run, the
// job's cron cursor and its decision-ledger entry commit together and only
// under the current epoch; a skipped range is one ledger entry that moves
// the cursor past it; a revived job starts with no cursor.
#include <gtest/gtest.h>

#include <set>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class CronStoreTest : public ElectedStoreTest {
 protected:
  CronStoreTest() : ElectedStoreTest("cron") {}

  void SetUp() override {
    JobDefinition j;
    j.name = "hourly";
    j.schedule = "0 * * * *";
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
  std::optional<std::int64_t> cursor() {
    auto jobs = leader.scheduled_jobs();
    EXPECT_TRUE(jobs && jobs->size() == 1);
    return jobs && !jobs->empty() ? jobs->front().last_slot_unix : std::nullopt;
  }
};

constexpr std::int64_t kStoreSlot = 1767225600;  // 2026-01-01T00:00:00Z

}  // namespace

TEST_F(CronStoreTest, ASlotsRunCursorAndLedgerEntryCommitTogether) {
  EXPECT_EQ(cursor(), std::nullopt);
  auto r = leader.create_cron_run(epoch, "hourly", kStoreSlot, true, 0);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_EQ(cursor(), kStoreSlot);
  EXPECT_EQ(text("SELECT decision || ' ' || reason || ' ' || run_id || ' ' || epoch FROM decision_ledger"),
            "created caught_up " + std::to_string(r->run.value) + " " + std::to_string(epoch.value));
  // The same slot again: no second run, no second entry.
  auto again = leader.create_cron_run(epoch, "hourly", kStoreSlot, false, 0);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->outcome, WriteOutcome::conflict);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "1");
  EXPECT_EQ(text("SELECT count(*) FROM decision_ledger"), "1");
}

TEST_F(CronStoreTest, AStaleLeaderWritesNoRunNoCursorNoLedger) {
  const Epoch newer = force_election(url, "n2");
  ASSERT_GT(newer, epoch);
  auto r = leader.create_cron_run(epoch, "hourly", kStoreSlot, false, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, WriteOutcome::fenced);
  auto s = leader.skip_cron_slots(epoch, "hourly", {{kStoreSlot, kStoreSlot + 3600, 2, 2, "misfire_policy"}}, "{}");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outcome, WriteOutcome::fenced);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "0");
  EXPECT_EQ(text("SELECT count(*) FROM decision_ledger"), "0");
  EXPECT_EQ(cursor(), std::nullopt);
}

TEST_F(CronStoreTest, SkippedRangesAreLedgerEntriesThatMoveTheCursor) {
  std::vector<SkippedCronSlots> ranges = {
      {kStoreSlot, kStoreSlot + 7200, 3, 3, "catch_up_limit"},
      {kStoreSlot + 10800, kStoreSlot + 10800 * 1000, std::nullopt, 100000, "starting_deadline"}};
  auto s = leader.skip_cron_slots(epoch, "hourly", ranges, R"({"policy":"run_all","gap_cause":"paused"})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outcome, WriteOutcome::applied);
  EXPECT_EQ(cursor(), kStoreSlot + 10800 * 1000);
  EXPECT_EQ(text("SELECT string_agg(reason || ':' || coalesce(slot_count::text, 'null') || ':' ||"
                 " (details->>'gap_cause') || ':' || coalesce(details->>'count_at_least', '-'), ',' ORDER BY id)"
                 " FROM decision_ledger WHERE decision = 'skipped'"),
            "catch_up_limit:3:paused:-,starting_deadline:null:paused:100000");
  // The cursor never moves back.
  ASSERT_TRUE(leader.create_cron_run(epoch, "hourly", kStoreSlot + 3600, false, 0));
  EXPECT_EQ(cursor(), kStoreSlot + 10800 * 1000);
}

TEST_F(CronStoreTest, AResumeIsRecordedAndARevivedJobStartsWithoutACursor) {
  ASSERT_TRUE(leader.create_cron_run(epoch, "hourly", kStoreSlot, false, 0));
  ASSERT_TRUE(admin.set_job_paused(Actor{"test", epoch}, "hourly", true));
  EXPECT_TRUE(leader.scheduled_jobs()->empty()) << "a paused job is not planned";
  ASSERT_TRUE(admin.set_job_paused(Actor{"test", epoch}, "hourly", false));
  auto jobs = leader.scheduled_jobs();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE(jobs->front().resumed_at_unix.has_value());
  EXPECT_EQ(jobs->front().last_slot_unix, kStoreSlot) << "resuming keeps the cursor: the gap follows the policy";

  ASSERT_TRUE(admin.delete_job(Actor{"test", epoch}, "hourly", std::nullopt));
  JobDefinition j;
  j.name = "hourly";
  j.schedule = "0 * * * *";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  EXPECT_EQ(cursor(), std::nullopt) << "a job created again invents no history";
}

// Jitter: the run keeps its slot (the key that makes a slot run once) and is
// not due before slot + jitter; the ledger says how much.
TEST_F(CronStoreTest, AJitteredRunIsNotDueBeforeItsStartAfter) {
  const std::int64_t now = std::stoll(text("SELECT floor(extract(epoch FROM now()))::bigint"));
  auto r = leader.create_cron_run(epoch, "hourly", now - 5, false, 3600000);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_TRUE(leader.due_runs(10, {}, Millis{0}, {{}})->empty()) << "an hour of jitter: not yet";
  EXPECT_EQ(text("SELECT details->>'jitter_ms' FROM decision_ledger"), "3600000");
  EXPECT_EQ(text("SELECT floor(extract(epoch FROM scheduled_for))::bigint FROM job_runs"), std::to_string(now - 5));
  auto plain = leader.create_cron_run(epoch, "hourly", now - 4, false, 0);
  ASSERT_TRUE(plain);
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ(due->front().id, plain->run);
}

// Runs due at the same moment, read ahead of it in one statement, say the
// same time left, so the leader holds their starts until one moment and
// writes them in one batch. Each row's own clock (clock_timestamp) put the
// rows of a read taking milliseconds on both sides of a millisecond: two
// holds, two batches one after the other, the second batch late by the
// first one's statement (cron benchmark p99 4 -> 8-12 ms).
TEST_F(CronStoreTest, RunsDueTogetherAreReadWithOneTimeLeft) {
  const std::string at = text("SELECT (extract(epoch FROM now()) + 3)::text");
  // Started on their own time (start_after), not a slot: many runs of one job.
  const std::string made =
      text("WITH made AS (INSERT INTO job_runs (job_definition_id, leader_epoch, start_after) SELECT j.id, " +
           std::to_string(epoch.value) + ", to_timestamp(" + at +
           ") FROM job_definitions j, generate_series(1, 3000) WHERE j.name = 'hourly' RETURNING 1)"
           " SELECT count(*) FROM made");
  ASSERT_EQ(made, "3000");
  auto due = leader.due_runs(3000, {}, Millis{5000}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 3000u);
  std::set<std::int64_t> left;
  for (const auto& d : *due) left.insert(d.starts_in_ms);
  EXPECT_EQ(left.size(), 1u) << "from " << *left.begin() << " to " << *left.rbegin() << " ms";
  EXPECT_GT(*left.begin(), 1000);
  EXPECT_LE(*left.rbegin(), 3000);
}

// A run may be read a little ahead of its time (assign_ahead), saying how
// long until it: the leader assigns it now. Its start is refused until the
// time has come, whatever the leader asks (a leader's clock running fast).
TEST_F(CronStoreTest, ARunReadAheadOfItsTimeIsAssignedButNotStartedBeforeIt) {
  const std::int64_t next = std::stoll(text("SELECT floor(extract(epoch FROM now()))::bigint")) + 3;
  auto made = leader.create_cron_run(epoch, "hourly", next, false, 0);
  ASSERT_TRUE(made);
  ASSERT_EQ(made->outcome, WriteOutcome::applied);
  EXPECT_TRUE(leader.due_runs(10, {}, Millis{0}, {{}})->empty()) << "not due yet";
  EXPECT_TRUE(leader.due_runs(10, {}, Millis{1000}, {{}})->empty()) << "its slot is more than a second away";
  auto due = leader.due_runs(10, {}, Millis{4000}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ(due->front().id, made->run);
  EXPECT_GT(due->front().starts_in_ms, 1000);
  EXPECT_LE(due->front().starts_in_ms, 3000);

  auto assigned = runs.assign_batch(epoch, {AssignRow{made->run, Version{1}, RunState::pending, "w1"}});
  ASSERT_TRUE(assigned);
  ASSERT_EQ(assigned->applied.count(made->run.value), 1u);
  const WriteResult& a = assigned->applied.at(made->run.value);
  const StartRow start{made->run, a.new_version, AttemptFence{"w1", a.attempt, a.lease_token}, "i1"};
  auto early = runs.start_batch(epoch, {start}, Millis{5000});
  ASSERT_TRUE(early);
  EXPECT_FALSE(early->fenced(epoch));
  EXPECT_TRUE(early->applied.empty()) << "a start before the slot is refused";
  auto single = runs.start(RunFence{made->run, a.new_version, epoch}, start.attempt, Millis{5000});
  ASSERT_TRUE(single);
  EXPECT_EQ(single->outcome, WriteOutcome::conflict) << "by the single start as well";
  // Once the slot has come, the same start applies.
  text("SELECT pg_sleep(greatest(0, " + std::to_string(next) + " - extract(epoch FROM clock_timestamp())) + 0.05)");
  auto on_time = runs.start_batch(epoch, {start}, Millis{5000});
  ASSERT_TRUE(on_time);
  EXPECT_EQ(on_time->applied.count(made->run.value), 1u);
  EXPECT_EQ(text("SELECT started_at >= scheduled_for FROM job_runs"), "t");
}
