// The batched transitions (assign_batch, start_batch, finish_batch) against
// real PostgreSQL: one statement for many runs, but every row still judged on
// its own version, state and attempt predicates, and the epoch fence judged
// for the whole statement.
#include <gtest/gtest.h>

#include <set>

#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_leader_store.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class RunStoreBatchTest : public ::testing::Test {
 protected:
  std::string url = baton::testing::PgInstance::shared().fresh_database("batch");
  PgRunStore runs{url, "test-batch"};
  Epoch epoch = force_election(url, "n1");

  RunId create(int max_attempts = 1) {
    NewRun n;
    n.max_attempts = max_attempts;
    auto r = runs.create_run(epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  RunRow read(RunId id) {
    auto r = runs.read_run(id);
    EXPECT_TRUE(r && r->has_value());
    return r && *r ? **r : RunRow{};
  }
  std::int64_t scalar(const std::string& sql) {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    return tx.exec1(sql)[0].as<std::int64_t>();
  }
};

}  // namespace

TEST_F(RunStoreBatchTest, AssignStartFinishManyRunsInThreeStatements) {
  std::vector<RunId> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(create());
  std::vector<AssignRow> assign;
  for (auto id : ids) assign.push_back({id, Version{1}, RunState::pending, "w1"});
  auto a = runs.assign_batch(epoch, assign);
  ASSERT_TRUE(a);
  ASSERT_FALSE(a->fenced(epoch));
  ASSERT_EQ(a->applied.size(), ids.size());

  std::vector<StartRow> start;
  for (auto id : ids) {
    const auto& w = a->applied.at(id.value);
    EXPECT_EQ(w.attempt, 1);
    EXPECT_EQ(w.lease_token.size(), 36u);
    start.push_back({id, w.new_version, {"w1", w.attempt, w.lease_token}, "i1"});
  }
  auto s = runs.start_batch(epoch, start, Millis{5000});
  ASSERT_TRUE(s);
  ASSERT_EQ(s->applied.size(), ids.size());

  std::vector<FinishRow> fin;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    FinishRow f{ids[i], s->applied.at(ids[i].value).new_version, start[i].attempt, {}, std::nullopt};
    f.finish.final_state = i % 2 ? RunState::failed : RunState::succeeded;
    f.finish.exit_code = i % 2 ? std::optional<int>{3} : std::nullopt;
    f.finish.error_msg = i % 2 ? "bad \"quote\" \\ back\nslash" : "";
    fin.push_back(f);
  }
  auto f = runs.finish_batch(epoch, fin);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->applied.size(), ids.size());
  EXPECT_EQ(read(ids[0]).state, RunState::succeeded);
  EXPECT_EQ(read(ids[1]).state, RunState::failed);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_attempts WHERE outcome = 'SUCCEEDED' AND exit_code IS NULL"), 25);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_attempts WHERE outcome = 'FAILED' AND exit_code = 3"), 25);
  EXPECT_EQ(scalar("SELECT count(*) FROM dead_letters WHERE final_state = 'FAILED'"
                   " AND error_msg = E'bad \"quote\" \\\\ back\\nslash' AND NOT run_snapshot ? 'attempt_outcome'"),
            25);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_transitions"), 50 * 4);
}

TEST_F(RunStoreBatchTest, EachRowKeepsItsOwnPredicates) {
  RunId ok = create(), stale = create(), wrong_state = create();
  ASSERT_EQ(runs.assign({wrong_state, Version{1}, epoch}, "w9")->outcome, WriteOutcome::applied);
  auto a = runs.assign_batch(epoch, {{ok, Version{1}, RunState::pending, "w1"},
                                     {stale, Version{7}, RunState::pending, "w1"},
                                     {wrong_state, Version{2}, RunState::pending, "w1"}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->applied.size(), 1u);
  EXPECT_TRUE(a->applied.count(ok.value));
  EXPECT_EQ(read(stale).state, RunState::pending);
  EXPECT_EQ(*read(wrong_state).assigned_worker_id, "w9");

  const auto& w = a->applied.at(ok.value);
  // Wrong worker, wrong token, wrong attempt: none starts; the right one does.
  auto s = runs.start_batch(epoch,
                            {{ok, w.new_version, {"w2", 1, w.lease_token}, ""},
                             {ok, w.new_version, {"w1", 1, "00000000-0000-4000-8000-000000000000"}, ""},
                             {ok, w.new_version, {"w1", 2, w.lease_token}, ""}},
                            Millis{5000});
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->applied.empty());
  EXPECT_EQ(read(ok).state, RunState::assigned);
  s = runs.start_batch(epoch, {{ok, w.new_version, {"w1", 1, w.lease_token}, "i1"}}, Millis{5000});
  EXPECT_EQ(s->applied.size(), 1u);
}

TEST_F(RunStoreBatchTest, RetryRowsGoToRetryWaitingAndAreReassignedWithTheNextAttempt) {
  RunId id = create(3);
  auto a = runs.assign_batch(epoch, {{id, Version{1}, RunState::pending, "w1"}});
  const auto& w = a->applied.at(id.value);
  AttemptFence att{"w1", 1, w.lease_token};
  auto s = runs.start_batch(epoch, {{id, w.new_version, att, "i1"}}, Millis{5000});
  FinishRow f{id, s->applied.at(id.value).new_version, att, {}, Millis{0}};
  f.finish.final_state = RunState::failed;
  f.finish.exit_code = 1;
  auto r = runs.finish_batch(epoch, {f});
  ASSERT_EQ(r->applied.size(), 1u);
  EXPECT_EQ(read(id).state, RunState::retry_waiting);
  EXPECT_EQ(scalar("SELECT count(*) FROM dead_letters"), 0);
  auto again = runs.assign_batch(epoch, {{id, r->applied.at(id.value).new_version, RunState::retry_waiting, "w2"}});
  ASSERT_EQ(again->applied.size(), 1u);
  EXPECT_EQ(again->applied.at(id.value).attempt, 2);
  EXPECT_NE(again->applied.at(id.value).lease_token, w.lease_token);
}

TEST_F(RunStoreBatchTest, AStaleEpochWritesNothingAndIsReportedFenced) {
  std::vector<AssignRow> rows;
  for (int i = 0; i < 10; ++i) rows.push_back({create(), Version{1}, RunState::pending, "w1"});
  Epoch newer = force_election(url, "n2");
  ASSERT_GT(newer, epoch);
  auto a = runs.assign_batch(epoch, rows);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->fenced(epoch));
  EXPECT_EQ(a->current_epoch, newer);
  EXPECT_TRUE(a->applied.empty());
  EXPECT_EQ(scalar("SELECT count(*) FROM job_runs WHERE state <> 'PENDING'"), 0);
}

// Head-of-line blocking (H6): due runs are read for one label set at a time,
// and the limit applies after the selector, so older, higher-priority runs
// that no worker of that set can take never hide the ones it can.
TEST_F(RunStoreBatchTest, DueRunsSkipRunsTheLabelSetCannotTake) {
  PgLeaderStore leader{url, "test-leader"};
  JobDefinition c_job;
  c_job.name = "needs-c";
  c_job.priority = 10;
  c_job.selector_json = R"({"pool": "c"})";
  JobDefinition b_job;
  b_job.name = "needs-b";
  b_job.selector_json = R"({"pool": "b"})";
  PgAdminStore admin{url, "test-admin"};
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, c_job));
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, b_job));
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(admin.trigger(Actor{"test", epoch}, "needs-c", std::nullopt, std::nullopt)->outcome,
              WriteOutcome::applied);
  auto b_run = admin.trigger(Actor{"test", epoch}, "needs-b", std::nullopt, std::nullopt);
  ASSERT_EQ(b_run->outcome, WriteOutcome::applied);
  RunId plain = create();  // no job, no selector: any worker

  auto for_b = leader.due_runs(2, {{"pool", "b"}, {"zone", "x"}}, Millis{0}, {{{"pool", "b"}, {"zone", "x"}}});
  ASSERT_TRUE(for_b);
  ASSERT_EQ(for_b->size(), 2u);
  std::set<std::int64_t> got{(*for_b)[0].id.value, (*for_b)[1].id.value};
  EXPECT_EQ(got, (std::set<std::int64_t>{b_run->run.value, plain.value}));
  auto for_c = leader.due_runs(10, {{"pool", "c"}}, Millis{0}, {{{"pool", "c"}}});
  ASSERT_TRUE(for_c);
  EXPECT_EQ(for_c->size(), 4u);  // the three c runs (priority first) and the plain one
  EXPECT_EQ(for_c->front().priority, 10);
}

// H5b: the continuation timeout sent with an attempt is stored with the run
// and is the one its CONFIRMING deadline uses, whatever the confirming
// leader's own configuration says; active_runs reports what is left of it.
TEST_F(RunStoreBatchTest, ConfirmingDeadlineUsesTheRunsOwnContinuationTimeout) {
  PgLeaderStore leader{url, "test-leader"};
  RunId id = create();
  auto a = runs.assign_batch(epoch, {{id, Version{1}, RunState::pending, "w1", Millis{60000}}});
  const auto& w = a->applied.at(id.value);
  auto s = runs.start_batch(epoch, {{id, w.new_version, {"w1", 1, w.lease_token}, "i1"}}, Millis{5000});
  auto c = runs.begin_confirming({id, s->applied.at(id.value).new_version, epoch}, Millis{1000});
  ASSERT_EQ(c->outcome, WriteOutcome::applied);
  auto active = leader.active_runs(Millis{0});
  ASSERT_TRUE(active);
  ASSERT_EQ(active->size(), 1u);
  EXPECT_EQ(active->front().continuation_timeout_ms, 60000);
  EXPECT_EQ(active->front().worker_instance, "i1");  // the process that started it, for any later leader
  ASSERT_TRUE(active->front().continuation_remaining_ms);
  EXPECT_GT(*active->front().continuation_remaining_ms, 50000);
  EXPECT_FALSE(active->front().continuation_expired);
  EXPECT_EQ(scalar("SELECT continuation_timeout_ms FROM job_run_transitions WHERE run_id = " +
                   std::to_string(id.value) + " ORDER BY to_version DESC LIMIT 1"),
            60000);
}

// H7: a run orphaned before it ever started keeps its attempt when it is
// reassigned (batched form), and counts the unstarted assignment.
TEST_F(RunStoreBatchTest, ReassignmentFromOrphanedKeepsTheAttempt) {
  PgLeaderStore leader{url, "test-leader"};
  RunId id = create(/*max_attempts=*/1);
  auto a = runs.assign_batch(epoch, {{id, Version{1}, RunState::pending, "w1"}});
  auto o = runs.orphan({id, a->applied.at(id.value).new_version, epoch});
  ASSERT_EQ(o->outcome, WriteOutcome::applied);
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ(due->front().unstarted_assignments, 1);
  auto again = runs.assign_batch(epoch, {{id, o->new_version, RunState::orphaned, "w2"}});
  ASSERT_EQ(again->applied.size(), 1u);
  EXPECT_EQ(again->applied.at(id.value).attempt, 1);
  EXPECT_NE(again->applied.at(id.value).lease_token, a->applied.at(id.value).lease_token);
}

// An operator's cancel of a RUNNING run is recorded on the run, fenced like
// every write, so a later leader reads it with the active runs; it needs the
// run RUNNING and the version current, and a stale leader is fenced.
TEST_F(RunStoreBatchTest, CancelRequestIsRecordedOnTheRunForTheNextLeader) {
  PgLeaderStore leader{url, "test-leader"};
  RunId id = create();
  auto a = runs.assign_batch(epoch, {{id, Version{1}, RunState::pending, "w1"}});
  const auto& w = a->applied.at(id.value);
  EXPECT_EQ(runs.request_cancel({id, w.new_version, epoch}, "too early")->outcome, WriteOutcome::conflict)
      << "an ASSIGNED run is cancelled outright, not by request";
  auto s = runs.start_batch(epoch, {{id, w.new_version, {"w1", 1, w.lease_token}, "i1"}}, Millis{5000});
  const Version running = s->applied.at(id.value).new_version;
  EXPECT_EQ(runs.request_cancel({id, Version{running.value - 1}, epoch}, "stale")->outcome, WriteOutcome::conflict);
  Epoch newer = force_election(url, "n2");
  EXPECT_EQ(runs.request_cancel({id, running, epoch}, "old leader")->outcome, WriteOutcome::fenced);
  auto r = runs.request_cancel({id, running, newer}, "operator: wrong input");
  ASSERT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_EQ(r->new_version.value, running.value + 1);
  auto active = leader.active_runs(Millis{0});
  ASSERT_TRUE(active);
  ASSERT_EQ(active->size(), 1u);
  ASSERT_TRUE(active->front().cancel_reason);
  EXPECT_EQ(*active->front().cancel_reason, "operator: wrong input");
  EXPECT_EQ(active->front().state, RunState::running);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_runs WHERE cancel_requested_at IS NOT NULL"), 1);
}
