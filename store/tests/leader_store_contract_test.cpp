// The leader store's cron contract: one typed suite run against PostgreSQL
// (PgLeaderStore) and the in-memory fake (FakeLeaderStore over FakeRunDb)
// alike, so the fake the simulator plans its cron slots against keeps the
// SQL's rules: a slot's run, the job's cursor and its ledger entry under the
// epoch fence, one run per (job, slot), concurrency_policy forbid and
// replace, skipped ranges, and a slot's run not due before its time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baton/store_fake/fake_leader_store.h"
#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/testing/fake_clock.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;

namespace {

/// PostgreSQL: a fresh database per test, elections by releasing the lease.
class PgEnv {
 public:
  LeaderStore& leader() { return leader_; }
  RunStore& runs() { return runs_; }
  Epoch elect(const std::string& node) { return epoch_ = pg::test::force_election(url_, node); }
  void define_job(const std::string& name, const std::string& policy, std::vector<std::string> on_events = {},
                  std::vector<std::string> run_after = {}) {
    JobDefinition j;
    j.name = name;
    if (on_events.empty() && run_after.empty()) j.schedule = "0 * * * *";
    j.concurrency_policy = policy;
    j.on_events = std::move(on_events);
    j.run_after = std::move(run_after);
    ASSERT_TRUE(admin_.create_job(Actor{"test", epoch_}, j));
  }
  void post_event(const std::string& kind, const std::string& key) {
    ASSERT_TRUE(admin_.post_event(Actor{"test", epoch_}, kind, "{}", key));
  }
  std::int64_t job_id(const std::string& name) {
    return std::stoll(pg::test::scalar_text(url_, "SELECT id FROM job_definitions WHERE name = '" + name + "'"));
  }
  std::int64_t events() { return std::stoll(pg::test::scalar_text(url_, "SELECT count(*) FROM events")); }
  std::int64_t unprocessed() {
    return std::stoll(pg::test::scalar_text(url_, "SELECT count(*) FROM events WHERE processed_at IS NULL"));
  }
  /// The ledger, oldest first: "decision reason slot..slot_last".
  std::vector<std::string> ledger() {
    std::vector<std::string> out;
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    for (const auto& r :
         tx.exec("SELECT decision || ' ' || reason || ' ' || extract(epoch FROM slot)::bigint || '..' ||"
                 " extract(epoch FROM coalesce(slot_last, slot))::bigint FROM decision_ledger ORDER BY id"))
      out.push_back(r[0].as<std::string>());
    return out;
  }
  std::int64_t runs_of(const std::string& job) {
    return std::stoll(pg::test::scalar_text(
        url_, "SELECT count(*) FROM job_runs r JOIN job_definitions d ON d.id = r.job_definition_id WHERE d.name = '" +
                  job + "'"));
  }

 private:
  std::string url_ = baton::testing::PgInstance::shared().fresh_database("leader_contract");
  Epoch epoch_{0};
  pg::PgLeaderStore leader_{url_, "contract-leader"};
  pg::PgRunStore runs_{url_, "contract-runs"};
  pg::PgAdminStore admin_{url_, "contract-admin"};
};

/// The fake: the lease's epoch fences, elections by letting the lease run out.
class FakeEnv {
 public:
  LeaderStore& leader() { return leader_; }
  RunStore& runs() { return runs_; }
  Epoch elect(const std::string& node) {
    clock_.advance(std::chrono::hours(1));  // whatever lease there was has expired
    auto r = lease_.campaign(pg::test::node(node), Millis{60000});
    EXPECT_TRUE(r.won);
    return r.lease.epoch;
  }
  void define_job(const std::string& name, const std::string& policy, std::vector<std::string> on_events = {},
                  std::vector<std::string> run_after = {}) {
    fake::FakeJob j;
    j.name = name;
    if (on_events.empty() && run_after.empty()) j.schedule = "0 * * * *";
    j.concurrency_policy = policy;
    j.on_events = std::move(on_events);
    j.run_after = std::move(run_after);
    db_.define_job(j);
  }
  void post_event(const std::string& kind, const std::string& key) { db_.post_event(kind, key); }
  std::int64_t job_id(const std::string& name) { return db_.jobs().at(name).id; }
  std::int64_t events() { return static_cast<std::int64_t>(db_.events().size()); }
  std::int64_t unprocessed() {
    std::int64_t n = 0;
    for (const auto& e : db_.events()) n += !e.processed;
    return n;
  }
  std::vector<std::string> ledger() {
    std::vector<std::string> out;
    for (const auto& l : db_.ledger())
      out.push_back(l.decision + " " + l.reason + " " + std::to_string(l.slot) + ".." + std::to_string(l.slot_last));
    return out;
  }
  std::int64_t runs_of(const std::string& job) {
    std::int64_t n = 0;
    for (const auto& [id, r] : db_.runs()) n += r.job_definition_id == db_.jobs().at(job).id;
    return n;
  }

 private:
  baton::testing::FakeClock clock_;
  fake::FakeLeaseDb lease_{clock_};
  fake::FakeRunDb db_{lease_, clock_};
  fake::FakeLeaderStore leader_{db_};
  fake::FakeRunStore runs_{db_};
};

template <class Env>
class LeaderStoreContract : public ::testing::Test {
 protected:
  Env env;
  LeaderStore& leader = env.leader();
  Epoch epoch = env.elect("n1");

  std::optional<std::int64_t> cursor() {
    auto jobs = leader.scheduled_jobs();
    EXPECT_TRUE(jobs && jobs->size() == 1);
    return jobs && !jobs->empty() ? jobs->front().last_slot_unix : std::nullopt;
  }
  /// A slot an hour after the database's clock, on the hour (the jobs run
  /// hourly).
  std::int64_t future_slot() {
    auto jobs = leader.scheduled_jobs();
    EXPECT_TRUE(jobs && !jobs->empty());
    return jobs && !jobs->empty() ? (jobs->front().now_unix / 3600 + 2) * 3600 : 0;
  }
  static std::string slot_text(std::int64_t slot) { return std::to_string(slot) + ".." + std::to_string(slot); }
};

using Envs = ::testing::Types<PgEnv, FakeEnv>;
class EnvNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, PgEnv> ? "Pg" : "Fake";
  }
};
TYPED_TEST_SUITE(LeaderStoreContract, Envs, EnvNames);

constexpr std::int64_t kSlot = 1767225600;  // 2026-01-01T00:00:00Z
constexpr std::int64_t kHour = 3600;

TYPED_TEST(LeaderStoreContract, ASlotsRunCursorAndLedgerEntryCommitTogetherOncePerSlot) {
  this->env.define_job("hourly", "allow");
  EXPECT_EQ(this->cursor(), std::nullopt);
  auto r = this->leader.create_cron_run(this->epoch, "hourly", kSlot, true, 0);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_FALSE(r->forbidden);
  EXPECT_EQ(this->cursor(), kSlot);
  EXPECT_EQ(this->env.ledger(), std::vector<std::string>{"created caught_up " + this->slot_text(kSlot)});
  // The same slot again (a reply lost, a new leader): no second run, no
  // second entry.
  auto again = this->leader.create_cron_run(this->epoch, "hourly", kSlot, false, 0);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->outcome, WriteOutcome::conflict);
  EXPECT_EQ(this->env.runs_of("hourly"), 1);
  EXPECT_EQ(this->env.ledger().size(), 1u);
}

TYPED_TEST(LeaderStoreContract, AStaleLeaderWritesNoRunNoCursorNoLedger) {
  this->env.define_job("hourly", "allow");
  const Epoch newer = this->env.elect("n2");
  ASSERT_GT(newer, this->epoch);
  auto r = this->leader.create_cron_run(this->epoch, "hourly", kSlot, false, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, WriteOutcome::fenced);
  EXPECT_EQ(r->current_epoch, newer);
  auto skip =
      this->leader.skip_cron_slots(this->epoch, "hourly", {{kSlot, kSlot + kHour, 2, 2, "misfire_policy"}}, "{}");
  ASSERT_TRUE(skip);
  EXPECT_EQ(skip->outcome, WriteOutcome::fenced);
  EXPECT_EQ(this->env.runs_of("hourly"), 0);
  EXPECT_EQ(this->cursor(), std::nullopt);
  EXPECT_TRUE(this->env.ledger().empty());
}

TYPED_TEST(LeaderStoreContract, ForbidSkipsASlotWhileAnotherRunOfTheJobIsUnfinished) {
  this->env.define_job("single", "forbid");
  auto first = this->leader.create_cron_run(this->epoch, "single", kSlot, false, 0);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->outcome, WriteOutcome::applied);
  auto second = this->leader.create_cron_run(this->epoch, "single", kSlot + kHour, false, 0);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->forbidden);
  EXPECT_NE(second->outcome, WriteOutcome::applied);
  EXPECT_EQ(this->cursor(), kSlot + kHour) << "the cursor moves past a forbidden slot";
  EXPECT_EQ(this->env.ledger(),
            (std::vector<std::string>{"created on_time " + this->slot_text(kSlot),
                                      "skipped concurrency_forbid " + this->slot_text(kSlot + kHour)}));
  // Once the first run has ended, the next slot runs.
  auto row = this->env.runs().read_run(first->run);
  ASSERT_TRUE(row && *row);
  auto canceled = this->env.runs().cancel({first->run, (*row)->version, this->epoch}, RunState::pending, "test");
  ASSERT_TRUE(canceled && canceled->outcome == WriteOutcome::applied);
  auto third = this->leader.create_cron_run(this->epoch, "single", kSlot + 2 * kHour, false, 0);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->outcome, WriteOutcome::applied);
  EXPECT_FALSE(third->forbidden);
}

TYPED_TEST(LeaderStoreContract, ReplaceNamesTheUnfinishedRunsForTheCallerToCancel) {
  this->env.define_job("latest", "replace");
  auto first = this->leader.create_cron_run(this->epoch, "latest", kSlot, false, 0);
  ASSERT_TRUE(first && first->outcome == WriteOutcome::applied);
  auto second = this->leader.create_cron_run(this->epoch, "latest", kSlot + kHour, false, 0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->outcome, WriteOutcome::applied);
  EXPECT_EQ(second->replaced, std::vector<RunId>{first->run});
  EXPECT_EQ(this->env.runs_of("latest"), 2);
}

TYPED_TEST(LeaderStoreContract, SkippedRangesAreLedgerEntriesThatMoveTheCursor) {
  this->env.define_job("hourly", "allow");
  auto r =
      this->leader.skip_cron_slots(this->epoch, "hourly", {{kSlot, kSlot + 2 * kHour, 3, 3, "misfire_policy"}}, "{}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_EQ(this->cursor(), kSlot + 2 * kHour);
  EXPECT_EQ(this->env.ledger(), std::vector<std::string>{"skipped misfire_policy " + std::to_string(kSlot) + ".." +
                                                         std::to_string(kSlot + 2 * kHour)});
  EXPECT_EQ(this->env.runs_of("hourly"), 0);
}

TYPED_TEST(LeaderStoreContract, ASlotsRunIsNotDueBeforeItsTimeButIsReadAheadOfIt) {
  this->env.define_job("hourly", "allow");
  const std::int64_t slot = this->future_slot();
  auto r = this->leader.create_cron_run(this->epoch, "hourly", slot, false, 0);
  ASSERT_TRUE(r && r->outcome == WriteOutcome::applied);
  auto now = this->leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(now);
  EXPECT_TRUE(now->empty()) << "a slot an hour or more away was due";
  auto ahead = this->leader.due_runs(10, {}, std::chrono::hours(3), {{}});
  ASSERT_TRUE(ahead);
  ASSERT_EQ(ahead->size(), 1u);
  EXPECT_EQ(ahead->front().id, r->run);
  EXPECT_GT(ahead->front().starts_in_ms, 3'600'000 - 60'000);
  EXPECT_EQ(ahead->front().starts_at_us, slot * 1'000'000);
}

// Dispatch order (SPEC 7, seed 004): higher priority first, then the
// oldest; the limit cuts after the order. The low-priority runs are created
// first, so a store that read in creation order (FIFO) fails here.
TYPED_TEST(LeaderStoreContract, DueRunsComeByPriorityThenAgeWhateverTheOrderTheyWereCreatedIn) {
  auto create = [&](int priority) {
    NewRun n;
    n.priority = priority;
    auto r = this->env.runs().create_run(this->epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  };
  const RunId low1 = create(0), low2 = create(0), mid = create(5), high1 = create(9), high2 = create(9);
  auto two = this->leader.due_runs(2, {}, Millis{0}, {{}});
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].id, high1);
  EXPECT_EQ((*two)[1].id, high2);
  auto all = this->leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(all);
  std::vector<RunId> order;
  for (const auto& d : *all) order.push_back(d.id);
  EXPECT_EQ(order, (std::vector<RunId>{high1, high2, mid, low1, low2}));
}

// SPEC 7.42: reassignment is priority-aware. ORPHANED runs come back in
// dispatch order too, the highest priority first whatever order they were
// orphaned in; the planner keeps that order when it paces reassignments
// (AssignmentPlan.OrphansOverThePaceAreTheLowerPriorityOnes).
TYPED_TEST(LeaderStoreContract, OrphanedRunsComeBackByPriorityToo) {
  auto orphaned = [&](int priority) {
    NewRun n;
    n.priority = priority;
    auto r = this->env.runs().create_run(this->epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    if (!r) return RunId{0};
    auto a = this->env.runs().assign({r->run, Version{1}, this->epoch}, "w1");
    EXPECT_TRUE(a && a->outcome == WriteOutcome::applied);
    auto o = this->env.runs().orphan({r->run, a->new_version, this->epoch});
    EXPECT_TRUE(o && o->outcome == WriteOutcome::applied);
    return r->run;
  };
  const RunId low = orphaned(0), high = orphaned(9), mid = orphaned(5);
  auto all = this->leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(all);
  std::vector<RunId> order;
  for (const auto& d : *all) order.push_back(d.id);
  EXPECT_EQ(order, (std::vector<RunId>{high, mid, low}));
}

TYPED_TEST(LeaderStoreContract, AnEventIsRecordedOncePerKeyAndMakesOneRunPerSubscribedJob) {
  this->env.define_job("on-ping", "allow", {"ping"});
  this->env.define_job("on-ping-too", "allow", {"ping"});
  this->env.post_event("ping", "k1");
  this->env.post_event("ping", "k1");  // a client's retry: nothing new
  EXPECT_EQ(this->env.events(), 1);
  auto r = this->leader.process_events(this->epoch, 10);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->current_epoch, this->epoch);
  EXPECT_EQ(r->events, 1);
  EXPECT_EQ(r->runs, 2);
  EXPECT_EQ(this->env.runs_of("on-ping"), 1);
  EXPECT_EQ(this->env.runs_of("on-ping-too"), 1);
  EXPECT_EQ(this->env.unprocessed(), 0);
  auto again = this->leader.process_events(this->epoch, 10);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->events, 0);
  EXPECT_EQ(this->env.runs_of("on-ping"), 1);
}

TYPED_TEST(LeaderStoreContract, AStaleLeaderLeavesTheEventsForTheNextOne) {
  this->env.define_job("on-ping", "allow", {"ping"});
  this->env.post_event("ping", "k1");
  const Epoch newer = this->env.elect("n2");
  auto stale = this->leader.process_events(this->epoch, 10);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->current_epoch, newer);
  EXPECT_EQ(stale->runs, 0);
  EXPECT_EQ(this->env.unprocessed(), 1);
  EXPECT_EQ(this->env.runs_of("on-ping"), 0);
  auto r = this->leader.process_events(newer, 10);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->runs, 1);
}

TYPED_TEST(LeaderStoreContract, EachSuccessOfAJobMakesOneRunOfTheJobThatRunsAfterIt) {
  this->env.define_job("upstream", "allow", {"never"});
  this->env.define_job("downstream", "allow", {}, {"upstream"});
  RunStore& runs = this->env.runs();
  NewRun n;
  n.job_definition_id = this->env.job_id("upstream");
  auto created = runs.create_run(this->epoch, n);
  ASSERT_TRUE(created && created->outcome == WriteOutcome::applied);
  const RunId id = created->run;
  auto a = runs.assign({id, Version{1}, this->epoch}, "w1");
  ASSERT_TRUE(a && a->outcome == WriteOutcome::applied);
  const AttemptFence att{"w1", a->attempt, a->lease_token};
  auto st = runs.start({id, a->new_version, this->epoch}, att, Millis{10000});
  ASSERT_TRUE(st && st->outcome == WriteOutcome::applied);
  Finish fin;
  fin.final_state = RunState::succeeded;
  fin.exit_code = 0;
  auto f = runs.finish({id, st->new_version, this->epoch}, att, fin);
  ASSERT_TRUE(f && f->outcome == WriteOutcome::applied);
  EXPECT_EQ(this->env.events(), 1) << "the success set off no event";
  auto r = this->leader.process_events(this->epoch, 10);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->runs, 1);
  EXPECT_EQ(this->env.runs_of("downstream"), 1);
  EXPECT_EQ(this->env.runs_of("upstream"), 1) << "the upstream job does not run after itself";
}

TYPED_TEST(LeaderStoreContract, AnUnknownJobIsBadInput) {
  auto r = this->leader.create_cron_run(this->epoch, "nobody", kSlot, false, 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::bad_input);
  auto s = this->leader.skip_cron_slots(this->epoch, "nobody", {{kSlot, kSlot, 1, 1, "misfire_policy"}}, "{}");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, Errc::bad_input);
}

}  // namespace
