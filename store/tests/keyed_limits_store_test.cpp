// Keyed concurrency and rate limits in the database (schemas/0035), against
// real PostgreSQL: whatever a leader asks, a run of a keyed job becomes
// active only with its own key and a slot of that key within the limit, two
// runs never hold one slot, the slot is given back when the run ends; a run
// of a rate-limited job becomes active only with a permit its last holder
// took at least an interval ago; and the dispatcher's read gives each run
// its key, the slots held and the permits taken, and leaves out the runs
// whose key or permits are all taken. One rule per test.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;
using namespace std::chrono_literals;

namespace {

class KeyedLimitsTest : public OverlapStoreTest {
 protected:
  void keyed_job(const std::string& name, std::optional<int> limit, std::optional<int> rate_runs = std::nullopt,
                 std::int64_t per_ms = 0, bool by_key = false) {
    JobDefinition j;
    j.name = name;
    j.concurrency_key = "tenant-{{param.customer}}";
    j.concurrency_limit = limit;
    j.rate_limit_runs = rate_runs;
    if (rate_runs) j.rate_limit_per_ms = per_ms;
    j.rate_limit_by_key = by_key;
    j.parameters_json = R"({"customer": "none"})";
    j.parameter_rules_json = R"({"customer": {}})";
    auto r = admin.create_job(Actor{"test", epoch}, j);
    ASSERT_TRUE(r) << r.error().message;
  }
  RunId run_for(const std::string& job, const std::string& customer) {
    auto r = admin.trigger(Actor{"test", epoch}, job, std::nullopt,
                           R"({"parameters": {"customer": ")" + customer + R"("}})");
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  Result<BatchWriteResult> assign_keyed(RunId id, std::optional<std::string> key, std::optional<int> slot,
                                        std::optional<int> rate_slot = std::nullopt) {
    AssignRow row{id, version_of(id), RunState::pending, "w1"};
    row.concurrency_key = std::move(key);
    row.key_slot = slot;
    row.rate_slot = rate_slot;
    return runs.assign_batch(epoch, {row});
  }
  Version version_of(RunId id) {
    auto row = runs.read_run(id);
    return row && *row ? (*row)->version : Version{0};
  }
  void end(RunId id) {
    auto row = runs.read_run(id);
    ASSERT_TRUE(row && *row);
    ASSERT_EQ(runs.cancel({id, (*row)->version, epoch}, RunState::assigned, "test")->outcome, WriteOutcome::applied);
  }
  std::string slot_of(RunId id) {
    return text(
        "SELECT coalesce(concurrency_key, '-') || ' ' || coalesce(key_slot::text, '-') FROM job_runs WHERE id = " +
        std::to_string(id.value));
  }
  static std::string error_of(const Result<BatchWriteResult>& r) { return r ? "" : r.error().message; }
  std::vector<DueRun> due() {
    auto d = leader.due_runs(100, {}, Millis{0}, {{}});
    EXPECT_TRUE(d) << d.error().message;
    return d ? *d : std::vector<DueRun>{};
  }
};

TEST_F(KeyedLimitsTest, TheReadGivesEachRunItsKeyAndTheKeysSlotsHeld) {
  keyed_job("sync", 2);
  const RunId a1 = run_for("sync", "acme"), b1 = run_for("sync", "bolt");
  const RunId plain = [&] {
    auto r = admin.trigger(Actor{"test", epoch}, "sync", std::nullopt, std::nullopt);
    return r ? r->run : RunId{0};
  }();
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1), a1));
  const RunId a2 = run_for("sync", "acme");
  std::map<std::int64_t, DueRun> read;
  for (auto& d : due()) read[d.id.value] = d;
  ASSERT_EQ(read.count(a2.value), 1u);
  EXPECT_EQ(read[a2.value].keyed.concurrency_key, "tenant-acme");
  EXPECT_EQ(read[a2.value].keyed.key_limit, 2);
  EXPECT_EQ(read[a2.value].keyed.key_slots_held, std::vector<int>{1});
  EXPECT_EQ(read[b1.value].keyed.concurrency_key, "tenant-bolt");
  EXPECT_TRUE(read[b1.value].keyed.key_slots_held.empty());
  EXPECT_EQ(read[plain.value].keyed.concurrency_key, "tenant-none") << "the job's default parameter";
  EXPECT_FALSE(read[a2.value].keyed.rate_limit);
}

TEST_F(KeyedLimitsTest, ARunOfAKeyedJobNeedsItsOwnKeyAndASlotWithinTheLimit) {
  keyed_job("sync", 2);
  const RunId a1 = run_for("sync", "acme");
  auto none = assign_keyed(a1, std::nullopt, std::nullopt);
  ASSERT_FALSE(none) << "no key";
  EXPECT_NE(error_of(none).find("its concurrency key is not NULL"), std::string::npos) << error_of(none);
  auto wrong = assign_keyed(a1, "tenant-bolt", 1);
  ASSERT_FALSE(wrong) << "another run's key";
  EXPECT_NE(error_of(wrong).find("its concurrency key is not 'tenant-bolt'"), std::string::npos) << error_of(wrong);
  auto over = assign_keyed(a1, "tenant-acme", 3);
  ASSERT_FALSE(over) << "a slot over the limit";
  EXPECT_NE(error_of(over).find("must hold a slot of key 'tenant-acme' from 1 to 2"), std::string::npos)
      << error_of(over);
  auto no_slot = assign_keyed(a1, "tenant-acme", std::nullopt);
  ASSERT_FALSE(no_slot);
  EXPECT_EQ(text("SELECT state FROM job_runs WHERE id = " + std::to_string(a1.value)), "PENDING");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 2), a1));
  EXPECT_EQ(slot_of(a1), "tenant-acme 2");
  // The single-run assignment takes no slot: refused for a keyed job.
  const RunId a2 = run_for("sync", "acme");
  auto single = runs.assign({a2, Version{1}, epoch}, "w1");
  ASSERT_FALSE(single);
  EXPECT_NE(single.error().message.find("concurrency key"), std::string::npos) << single.error().message;
}

TEST_F(KeyedLimitsTest, TwoRunsNeverHoldOneSlotOfAKeyAndAnEndedRunGivesItsSlotBack) {
  keyed_job("sync", 2);
  const RunId a1 = run_for("sync", "acme"), a2 = run_for("sync", "acme"), b1 = run_for("sync", "bolt");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1), a1));
  auto twice = assign_keyed(a2, "tenant-acme", 1);
  ASSERT_FALSE(twice) << "slot 1 of acme is held";
  EXPECT_NE(error_of(twice).find("job_runs_key_slot_idx"), std::string::npos) << error_of(twice);
  ASSERT_TRUE(applied(assign_keyed(b1, "tenant-bolt", 1), b1)) << "slot 1 of another key is another slot";
  end(a1);
  EXPECT_EQ(slot_of(a1), "tenant-acme -") << "the key stays on the run, the slot is given back";
  ASSERT_TRUE(applied(assign_keyed(a2, "tenant-acme", 1), a2));
}

// A worker lost: its ASSIGNED run becomes ORPHANED and gives its slot back
// in the same statement, so the slot is neither leaked nor held twice; the
// reassignment takes one again, and a second permit.
TEST_F(KeyedLimitsTest, AnOrphanedRunGivesItsSlotBackAndTakesOneAgainWhenReassigned) {
  keyed_job("sync", 1, 5, 60000);
  const RunId a1 = run_for("sync", "acme"), a2 = run_for("sync", "acme");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1, 1), a1));
  auto orphaned = runs.orphan({a1, version_of(a1), epoch});
  ASSERT_TRUE(orphaned && orphaned->outcome == WriteOutcome::applied);
  EXPECT_EQ(slot_of(a1), "tenant-acme -");
  ASSERT_TRUE(applied(assign_keyed(a2, "tenant-acme", 1, 2), a2)) << "the slot is free for another run of the key";
  AssignRow again{a1, version_of(a1), RunState::orphaned, "w2"};
  again.concurrency_key = "tenant-acme";
  again.key_slot = 1;
  again.rate_slot = 3;
  EXPECT_FALSE(runs.assign_batch(epoch, {again})) << "held by a2 now";
  end(a2);
  again.expected_version = version_of(a1);
  ASSERT_TRUE(applied(runs.assign_batch(epoch, {again}), a1));
  EXPECT_EQ(text("SELECT count(*) FROM rate_permits WHERE until > now()"), "3") << "each activation took a permit";
}

TEST_F(KeyedLimitsTest, TheReadLeavesOutTheRunsOfAKeyAtItsLimit) {
  keyed_job("sync", 1);
  const RunId a1 = run_for("sync", "acme"), a2 = run_for("sync", "acme"), b1 = run_for("sync", "bolt");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1), a1));
  std::set<std::int64_t> read;
  for (const auto& d : due()) read.insert(d.id.value);
  EXPECT_FALSE(read.count(a2.value)) << "its key is at its limit: it would only fill the batch";
  EXPECT_TRUE(read.count(b1.value));
  end(a1);
  read.clear();
  for (const auto& d : due()) read.insert(d.id.value);
  EXPECT_TRUE(read.count(a2.value));
}

// The runs the due read leaves out are found apart, so that the leader can
// say why they wait.
TEST_F(KeyedLimitsTest, TheRunsWaitingForTheirKeyAreReadApart) {
  keyed_job("sync", 1);
  const RunId a1 = run_for("sync", "acme"), a2 = run_for("sync", "acme"), b1 = run_for("sync", "bolt");
  auto waits = leader.key_waiting_runs(100);
  ASSERT_TRUE(waits) << waits.error().message;
  EXPECT_TRUE(waits->empty()) << "every key has room";
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1), a1));
  waits = leader.key_waiting_runs(100);
  ASSERT_TRUE(waits);
  ASSERT_EQ(waits->size(), 1u);
  EXPECT_EQ((*waits)[0].id, a2);
  EXPECT_EQ((*waits)[0].keyed.key_slots_held, std::vector<int>{1});
  (void)b1;
}

TEST_F(KeyedLimitsTest, ARateLimitedRunNeedsAPermitItsLastHolderTookAnIntervalAgo) {
  keyed_job("report", std::nullopt, 1, 1500);
  const RunId r1 = run_for("report", "acme"), r2 = run_for("report", "bolt");
  auto without = assign_keyed(r1, "tenant-acme", std::nullopt, std::nullopt);
  ASSERT_FALSE(without) << "no permit";
  EXPECT_NE(error_of(without).find("no rate permit free (1 runs per 1500 ms)"), std::string::npos) << error_of(without);
  ASSERT_TRUE(applied(assign_keyed(r1, "tenant-acme", std::nullopt, 1), r1));
  EXPECT_EQ(text("SELECT rate_key || ' ' || slot || ' ' || run_id FROM rate_permits"), " 1 " + std::to_string(r1.value))
      << "per job: the key is ''";
  end(r1);
  auto soon = assign_keyed(r2, "tenant-bolt", std::nullopt, 1);
  ASSERT_FALSE(soon) << "the permit is not given back when its run ends: it expires";
  EXPECT_NE(error_of(soon).find("no rate permit free"), std::string::npos) << error_of(soon);
  for (const auto& d : due()) EXPECT_NE(d.id, r2) << "every permit is taken: not read";
  std::this_thread::sleep_for(1600ms);
  auto read = due();
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].keyed.rate_limit, 1);
  EXPECT_EQ(read[0].keyed.rate_per_ms, 1500);
  EXPECT_TRUE(read[0].keyed.rate_slots_busy.empty());
  ASSERT_TRUE(applied(assign_keyed(r2, "tenant-bolt", std::nullopt, 1), r2)) << "an interval later";
}

TEST_F(KeyedLimitsTest, APerKeyRateLimitCountsEachKeyApart) {
  keyed_job("report", std::nullopt, 1, 60000, true);
  const RunId a1 = run_for("report", "acme"), a2 = run_for("report", "acme"), b1 = run_for("report", "bolt");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", std::nullopt, 1), a1));
  ASSERT_TRUE(applied(assign_keyed(b1, "tenant-bolt", std::nullopt, 1), b1)) << "another key's permit";
  EXPECT_FALSE(assign_keyed(a2, "tenant-acme", std::nullopt, 1));
  std::set<std::int64_t> read;
  for (const auto& d : due()) read.insert(d.id.value);
  EXPECT_FALSE(read.count(a2.value));
}

TEST_F(KeyedLimitsTest, TheKeyUsageViewCountsActiveRunsAndPermitsPerKey) {
  keyed_job("sync", 2, 5, 60000, true);
  const RunId a1 = run_for("sync", "acme"), a2 = run_for("sync", "acme"), b1 = run_for("sync", "bolt");
  ASSERT_TRUE(applied(assign_keyed(a1, "tenant-acme", 1, 1), a1));
  ASSERT_TRUE(applied(assign_keyed(a2, "tenant-acme", 2, 2), a2));
  ASSERT_TRUE(applied(assign_keyed(b1, "tenant-bolt", 1, 1), b1));
  end(b1);
  EXPECT_EQ(text("SELECT string_agg(job || ' ' || key || ' ' || active || '/' || concurrency_limit || ' ' ||"
                 " permits_taken || '/' || rate_limit_runs, '; ' ORDER BY key) FROM baton_key_usage"),
            "sync tenant-acme 2/2 2/5; sync tenant-bolt 0/2 1/5")
      << "an ended run's slot is given back, its permit is not";
}

TEST_F(KeyedLimitsTest, AnAssignmentThatDoesNotApplyTakesNoPermit) {
  keyed_job("report", std::nullopt, 1, 60000);
  const RunId r1 = run_for("report", "acme");
  AssignRow stale{r1, Version{99}, RunState::pending, "w1"};
  stale.concurrency_key = "tenant-acme";
  stale.rate_slot = 1;
  auto r = runs.assign_batch(epoch, {stale});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->applied.empty()) << "a stale version";
  EXPECT_EQ(text("SELECT count(*) FROM rate_permits"), "0") << "no permit leaked";
  AssignRow fenced_row{r1, Version{1}, RunState::pending, "w1"};
  fenced_row.concurrency_key = "tenant-acme";
  fenced_row.rate_slot = 1;
  auto f = runs.assign_batch(Epoch{epoch.value + 7}, {fenced_row});
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->applied.empty()) << "an old leader's";
  EXPECT_EQ(text("SELECT count(*) FROM rate_permits"), "0");
}

}  // namespace
