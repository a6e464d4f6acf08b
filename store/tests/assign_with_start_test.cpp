// The assignment that carries the start grant (schemas/0024, SPEC sections 4
// and 6 as amended 2026-11-26) against real PostgreSQL: one fenced statement
// writes ASSIGNED and RUNNING for the rows granted, the version advancing by
// two and both steps in the run's history under one transaction, the other
// rows of the batch as a plain assignment; a run whose time has not come is
// not written; the write guard refuses a double step of any other shape.
#include <gtest/gtest.h>

#include "baton/store_pg/pg_leader_store.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class AssignWithStartTest : public ::testing::Test {
 protected:
  std::string url = baton::testing::PgInstance::shared().fresh_database("grant");
  PgRunStore runs{url, "test-grant"};
  Epoch epoch = force_election(url, "n1");

  RunId create(int max_attempts = 2) {
    NewRun n;
    n.max_attempts = max_attempts;
    auto r = runs.create_run(epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  std::string text(const std::string& sql) {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    auto r = tx.exec1(sql);
    return r[0].is_null() ? "" : r[0].c_str();
  }
  /// Runs `sql` and returns the error text ("" when it committed).
  std::string error_of(const std::string& sql) {
    try {
      pqxx::connection c(url);
      pqxx::work tx(c);
      tx.exec0(sql);
      tx.commit();
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  static AssignRow granted(RunId id, Version v, RunState from = RunState::pending) {
    AssignRow row{id, v, from, "w1", Millis{45000}};
    row.start = StartGrant{"inst-1", Millis{5000}};
    return row;
  }
};

}  // namespace

TEST_F(AssignWithStartTest, GrantedRowsAreWrittenRunningInOneStepPlainRowsAssigned) {
  RunId g = create(), p = create();
  auto a = runs.assign_batch(epoch, {granted(g, Version{1}), {p, Version{1}, RunState::pending, "w1"}});
  ASSERT_TRUE(a);
  ASSERT_EQ(a->applied.size(), 2u);
  EXPECT_EQ(a->applied.at(g.value).new_version, Version{3}) << "ASSIGNED and RUNNING: version + 2";
  EXPECT_EQ(a->applied.at(p.value).new_version, Version{2});
  EXPECT_EQ(a->applied.at(g.value).lease_token.size(), 36u);
  const std::string gs = std::to_string(g.value);
  EXPECT_EQ(text("SELECT state || ' ' || assigned_worker_id || ' ' || worker_instance || ' '"
                 " || (started_at IS NOT NULL AND heartbeat_at IS NOT NULL AND stale_after > now())::text"
                 " || ' ' || continuation_timeout_ms FROM job_runs WHERE id = " +
                 gs),
            "RUNNING w1 inst-1 true 45000");
  EXPECT_EQ(text("SELECT state || ' ' || (started_at IS NULL)::text || ' ' || coalesce(worker_instance, '-')"
                 " FROM job_runs WHERE id = " +
                 std::to_string(p.value)),
            "ASSIGNED true -");
  // Both steps in the history, in order, from one transaction.
  EXPECT_EQ(text("SELECT string_agg(from_state || '->' || to_state || '@' || from_version || '-' || to_version, ','"
                 " ORDER BY to_version) FROM job_run_transitions WHERE run_id = " +
                 gs + " AND to_version > 1"),
            "PENDING->ASSIGNED@1-2,ASSIGNED->RUNNING@2-3");
  EXPECT_EQ(text("SELECT count(DISTINCT xid) FROM job_run_transitions WHERE run_id = " + gs + " AND to_version > 1"),
            "1");
  // The attempt it started finishes as any other (the lease token it got).
  const auto& w = a->applied.at(g.value);
  auto f = runs.finish_batch(epoch, {{g, w.new_version, {"w1", 1, w.lease_token}, {}, std::nullopt}});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->applied.size(), 1u);
}

// From RETRY_WAITING the granted assignment is the next attempt, from
// ORPHANED the same one (the orphaned assignment never started).
TEST_F(AssignWithStartTest, AGrantedReassignmentKeepsTheAttemptRules) {
  RunId id = create(3);
  auto a = runs.assign_batch(epoch, {granted(id, Version{1})});
  const auto& w = a->applied.at(id.value);
  Finish failed;
  failed.final_state = RunState::failed;
  auto retry = runs.finish_batch(epoch, {{id, w.new_version, {"w1", 1, w.lease_token}, failed, Millis{0}}});
  ASSERT_TRUE(retry && retry->applied.size() == 1u);
  auto again =
      runs.assign_batch(epoch, {granted(id, retry->applied.at(id.value).new_version, RunState::retry_waiting)});
  ASSERT_TRUE(again && again->applied.size() == 1u);
  EXPECT_EQ(again->applied.at(id.value).attempt, 2);
  EXPECT_EQ(text("SELECT state || ' ' || attempt FROM job_runs WHERE id = " + std::to_string(id.value)), "RUNNING 2");

  RunId o = create();
  auto plain = runs.assign_batch(epoch, {{o, Version{1}, RunState::pending, "w1"}});
  auto orphaned = runs.orphan({o, plain->applied.at(o.value).new_version, epoch});
  ASSERT_TRUE(orphaned && orphaned->outcome == WriteOutcome::applied);
  auto re = runs.assign_batch(epoch, {granted(o, orphaned->new_version, RunState::orphaned)});
  ASSERT_TRUE(re && re->applied.size() == 1u);
  EXPECT_EQ(re->applied.at(o.value).attempt, 1);
}

// The start's own predicate: a run whose time has not come (its jitter, its
// slot) is not written at all, though the assignment alone would be.
TEST_F(AssignWithStartTest, ARunWhoseTimeHasNotComeIsNotWritten) {
  RunId id = create();
  // Its jitter, set by hand as a write of its own (version + 1).
  ASSERT_EQ(error_of("UPDATE job_runs SET start_after = now() + interval '1 hour', version = version + 1, " +
                     history_set() + " WHERE id = " + std::to_string(id.value)),
            "");
  auto a = runs.assign_batch(epoch, {granted(id, Version{2})});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->applied.empty());
  EXPECT_EQ(text("SELECT state FROM job_runs WHERE id = " + std::to_string(id.value)), "PENDING");
  auto plain = runs.assign_batch(epoch, {{id, Version{2}, RunState::pending, "w1"}});
  EXPECT_EQ(plain->applied.size(), 1u);
}

TEST_F(AssignWithStartTest, AStaleEpochWritesNothing) {
  RunId id = create();
  const Epoch old = epoch;
  force_election(url, "n2");
  auto a = runs.assign_batch(old, {granted(id, Version{1})});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->fenced(old));
  EXPECT_EQ(text("SELECT state || ' ' || version FROM job_runs WHERE id = " + std::to_string(id.value)), "PENDING 1");
}

// The write guard accepts a double step only as a granted assignment with
// both entries: made by hand, each other shape is refused by name. (Without
// schemas/0024's branch of the guard, the first update below is refused
// too; without its function's checks, the others commit.)
TEST_F(AssignWithStartTest, TheGuardRefusesEveryOtherDoubleStep) {
  RunId id = create();
  const std::string where = " WHERE id = " + std::to_string(id.value);
  auto step = [](const std::string& from_version, const std::string& state) {
    return "baton_run_history_entry(" + from_version + ", '" + state +
           "', 'NONE', attempt, leader_epoch, continuation_timeout_ms)";
  };
  const std::string common =
      "UPDATE job_runs SET state = 'RUNNING', version = version + 2, assigned_worker_id = 'w1',"
      " lease_token = gen_random_uuid(), assigned_at = now(), started_at = now(), heartbeat_at = now(),"
      " stale_after = now() + interval '5 seconds', ";
  // Only the RUNNING entry: refused.
  EXPECT_NE(error_of(common + "history = history || " + step("version + 1", "RUNNING") + where)
                .find("must record both steps in history"),
            std::string::npos);
  // The steps in the wrong order: refused.
  EXPECT_NE(error_of(common + "history = history || " + step("version + 1", "RUNNING") + " || " +
                     step("version", "ASSIGNED") + where)
                .find("must record both steps in history"),
            std::string::npos);
  // Both steps, by hand, in one transaction: accepted (a repair may do it).
  EXPECT_EQ(error_of(common + "history = history || " + step("version", "ASSIGNED") + " || " +
                     step("version + 1", "RUNNING") + where),
            "");
  EXPECT_EQ(text("SELECT state || ' ' || version FROM job_runs" + where), "RUNNING 3");
  // A double step out of RUNNING is no granted assignment.
  EXPECT_NE(error_of("UPDATE job_runs SET state = 'SUCCEEDED', version = version + 2, finished_at = now(),"
                     " instance_no = NULL, exclusive_lock = NULL, history = history || " +
                     step("version", "SUCCEEDED") + " || " + step("version + 1", "SUCCEEDED") + where)
                .find("only an assignment carrying the start grant advances the version by two"),
            std::string::npos);
}
