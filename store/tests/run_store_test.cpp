// Every transition of PgRunStore against real PostgreSQL: each predicate
// (version, state, epoch, worker, attempt, lease token) is shown to matter.
#include <gtest/gtest.h>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class RunStoreTest : public ::testing::Test {
 protected:
  std::string url = baton::testing::PgInstance::shared().fresh_database("runs");
  PgRunStore runs{url, "test-runs"};
  Epoch epoch = force_election(url, "n1");

  RunRow read(RunId id) {
    auto r = runs.read_run(id);
    EXPECT_TRUE(r && r->has_value());
    return r && *r ? **r : RunRow{};
  }
  RunId create(int max_attempts = 3, std::optional<std::string> key = std::nullopt) {
    NewRun n;
    n.max_attempts = max_attempts;
    n.idempotency_key = std::move(key);
    auto r = runs.create_run(epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  std::int64_t scalar(const std::string& sql) {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    return tx.exec1(sql)[0].as<std::int64_t>();
  }
};

}  // namespace

TEST_F(RunStoreTest, HappyPathWritesStateAttemptRowAndTransitions) {
  RunId id = create();
  RunRow r = read(id);
  EXPECT_EQ(r.state, RunState::pending);
  auto a = runs.assign({id, r.version, epoch}, "w1");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->outcome, WriteOutcome::applied);
  EXPECT_EQ(a->new_version.value, r.version.value + 1);
  EXPECT_EQ(a->lease_token.size(), 36u);
  AttemptFence att{"w1", 1, a->lease_token};
  auto s = runs.start({id, a->new_version, epoch}, att, Millis{5000});
  ASSERT_EQ(s->outcome, WriteOutcome::applied);
  auto h = runs.heartbeat({id, s->new_version, epoch}, att, Millis{5000});
  ASSERT_EQ(h->outcome, WriteOutcome::applied);
  Finish fin;
  fin.exit_code = 0;
  auto f = runs.finish({id, h->new_version, epoch}, att, fin);
  ASSERT_EQ(f->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::succeeded);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_attempts WHERE outcome = 'SUCCEEDED' AND exit_code = 0"), 1);
  // Every write is in the history (migration 0003): insert, assign, start,
  // heartbeat, finish -- a chain a checker can verify has no gap.
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_transitions WHERE run_id = " + std::to_string(id.value)), 5);
  EXPECT_EQ(scalar("SELECT count(*) FROM dead_letters"), 0);
}

TEST_F(RunStoreTest, StartNeedsTheAssignedWorkerAndTheCurrentLeaseToken) {
  RunId id = create();
  auto a = runs.assign({id, Version{1}, epoch}, "w1");
  RunFence f{id, a->new_version, epoch};
  EXPECT_EQ(runs.start(f, {"w2", 1, a->lease_token}, Millis{1000})->outcome, WriteOutcome::conflict);
  EXPECT_EQ(runs.start(f, {"w1", 1, "00000000-0000-4000-8000-000000000000"}, Millis{1000})->outcome,
            WriteOutcome::conflict);
  EXPECT_EQ(runs.start(f, {"w1", 2, a->lease_token}, Millis{1000})->outcome, WriteOutcome::conflict);
  EXPECT_EQ(read(id).state, RunState::assigned);
  EXPECT_EQ(runs.start(f, {"w1", 1, a->lease_token}, Millis{1000})->outcome, WriteOutcome::applied);
}

TEST_F(RunStoreTest, StaleVersionIsConflictAndStaleEpochIsFenced) {
  RunId id = create();
  auto a = runs.assign({id, Version{1}, epoch}, "w1");
  ASSERT_EQ(a->outcome, WriteOutcome::applied);
  // Same epoch, old version: somebody else wrote first.
  EXPECT_EQ(runs.assign({id, Version{1}, epoch}, "w2")->outcome, WriteOutcome::conflict);
  Epoch newer = force_election(url, "n2");
  auto stale = runs.orphan({id, a->new_version, epoch});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->outcome, WriteOutcome::fenced);
  EXPECT_EQ(stale->current_epoch, newer);
  EXPECT_EQ(read(id).state, RunState::assigned);
  EXPECT_EQ(runs.create_run(epoch, NewRun{})->outcome, WriteOutcome::fenced);
  EXPECT_EQ(runs.orphan({id, a->new_version, newer})->outcome, WriteOutcome::applied);
}

// An assignment that never started is not an attempt: the reassignment
// keeps the attempt number (max_attempts counts executions) and rotates the
// token, which alone fences the abandoned grant.
TEST_F(RunStoreTest, OrphanedRunIsReassignedWithTheSameAttemptAndNewToken) {
  RunId id = create(/*max_attempts=*/1);
  auto a = runs.assign({id, Version{1}, epoch}, "w1");
  auto o = runs.orphan({id, a->new_version, epoch});
  ASSERT_EQ(o->outcome, WriteOutcome::applied);
  auto b = runs.reassign({id, o->new_version, epoch}, RunState::orphaned, "w2");
  ASSERT_EQ(b->outcome, WriteOutcome::applied);
  EXPECT_EQ(b->attempt, 1);
  EXPECT_NE(b->lease_token, a->lease_token);
  // The first worker's token no longer starts anything.
  EXPECT_EQ(runs.start({id, b->new_version, epoch}, {"w1", 1, a->lease_token}, Millis{1000})->outcome,
            WriteOutcome::conflict);
  EXPECT_EQ(runs.start({id, b->new_version, epoch}, {"w2", 1, b->lease_token}, Millis{1000})->outcome,
            WriteOutcome::applied);
}

// A run that can never be dispatched fails where it waits, with a dead
// letter naming why.
TEST_F(RunStoreTest, UnrunnableRunFailsFromPendingWithADeadLetter) {
  RunId id = create();
  auto f = runs.fail_unrunnable({id, Version{1}, epoch}, RunState::pending, "bad_definition", "65 tasks");
  ASSERT_EQ(f->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::failed);
  pqxx::connection c{url};
  pqxx::work tx{c};
  auto dl = tx.exec_params1("SELECT error_code, error_msg FROM dead_letters WHERE run_id = $1", id.value);
  EXPECT_EQ(dl[0].as<std::string>(), "bad_definition");
  EXPECT_EQ(dl[1].as<std::string>(), "65 tasks");
  // Only from a waiting state.
  RunId other = create();
  auto a = runs.assign({other, Version{1}, epoch}, "w1");
  EXPECT_EQ(runs.fail_unrunnable({other, a->new_version, epoch}, RunState::pending, "bad_definition", "x")->outcome,
            WriteOutcome::conflict);
}

TEST_F(RunStoreTest, FailedAttemptsRetryThenDeadLetter) {
  RunId id = create(/*max_attempts=*/2);
  Version v{1};
  auto a = runs.assign({id, v, epoch}, "w1");
  auto s = runs.start({id, a->new_version, epoch}, {"w1", 1, a->lease_token}, Millis{1000});
  Finish fail;
  fail.final_state = RunState::failed;
  fail.exit_code = 3;
  fail.error_msg = "exit 3";
  auto r = runs.retry_later({id, s->new_version, epoch}, {"w1", 1, a->lease_token}, fail, Millis{10});
  ASSERT_EQ(r->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::retry_waiting);
  auto b = runs.reassign({id, r->new_version, epoch}, RunState::retry_waiting, "w2");
  ASSERT_EQ(b->outcome, WriteOutcome::applied);
  EXPECT_EQ(b->attempt, 2);
  AttemptFence att2{"w2", 2, b->lease_token};
  auto s2 = runs.start({id, b->new_version, epoch}, att2, Millis{1000});
  auto f = runs.finish({id, s2->new_version, epoch}, att2, fail);
  ASSERT_EQ(f->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::failed);
  EXPECT_EQ(scalar("SELECT count(*) FROM dead_letters WHERE run_id = " + std::to_string(id.value) +
                   " AND attempts = 2 AND triage_status = 'pending'"),
            1);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_attempts WHERE run_id = " + std::to_string(id.value)), 2);
}

TEST_F(RunStoreTest, ConfirmingAndAdoptionByANewLeader) {
  RunId id = create();
  auto a = runs.assign({id, Version{1}, epoch}, "w1");
  AttemptFence att{"w1", 1, a->lease_token};
  auto s = runs.start({id, a->new_version, epoch}, att, Millis{1000});
  auto c = runs.begin_confirming({id, s->new_version, epoch}, Millis{30000});
  ASSERT_EQ(c->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).continuation, ContinuationState::confirming);
  Epoch newer = force_election(url, "n2");
  // The new leader cannot heartbeat or finish a run it has not adopted.
  EXPECT_EQ(runs.heartbeat({id, c->new_version, newer}, att, Millis{1000})->outcome, WriteOutcome::conflict);
  auto ad = runs.adopt({id, c->new_version, newer}, att);
  ASSERT_EQ(ad->outcome, WriteOutcome::applied);
  RunRow r = read(id);
  EXPECT_EQ(r.continuation, ContinuationState::none);
  EXPECT_EQ(r.leader_epoch, newer);
  EXPECT_EQ(r.state, RunState::running);
  EXPECT_EQ(runs.finish({id, ad->new_version, newer}, att, Finish{})->outcome, WriteOutcome::applied);
}

TEST_F(RunStoreTest, CancelFromEveryActiveStateAndIdempotencyKeys) {
  RunId id = create(3, "key-1");
  auto dup = runs.create_run(epoch, NewRun{std::nullopt, "key-1", 1, 0, "api", "{}"});
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->outcome, WriteOutcome::conflict);
  EXPECT_EQ(runs.cancel({id, Version{1}, epoch}, RunState::assigned, "wrong state")->outcome, WriteOutcome::conflict);
  auto c = runs.cancel({id, Version{1}, epoch}, RunState::pending, "operator");
  ASSERT_EQ(c->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::canceled);
  // The key is free again once its run is no longer active.
  EXPECT_EQ(runs.create_run(epoch, NewRun{std::nullopt, "key-1", 1, 0, "api", "{}"})->outcome, WriteOutcome::applied);
}

// SPEC 3.7: CANCELED from every waiting state, ORPHANED and RETRY_WAITING
// included (PENDING above; ASSIGNED in overlap_store_test.cpp, RUNNING
// through cancel_attempt in the runtime tests). Each run's history ends
// with the cancel, and a cancel naming the wrong state changes nothing.
TEST_F(RunStoreTest, OrphanedAndRetryWaitingRunsAreCanceled) {
  RunId orphaned = create();
  auto a = runs.assign({orphaned, read(orphaned).version, epoch}, "w1");
  auto o = runs.orphan({orphaned, a->new_version, epoch});
  ASSERT_EQ(o->outcome, WriteOutcome::applied);
  ASSERT_EQ(read(orphaned).state, RunState::orphaned);
  EXPECT_EQ(runs.cancel({orphaned, o->new_version, epoch}, RunState::pending, "wrong state")->outcome,
            WriteOutcome::conflict);
  ASSERT_EQ(runs.cancel({orphaned, o->new_version, epoch}, RunState::orphaned, "operator")->outcome,
            WriteOutcome::applied);
  EXPECT_EQ(read(orphaned).state, RunState::canceled);

  RunId waiting = create(3);
  auto w = runs.assign({waiting, read(waiting).version, epoch}, "w1");
  AttemptFence att{"w1", 1, w->lease_token};
  auto st = runs.start({waiting, w->new_version, epoch}, att, Millis{5000});
  Finish failed;
  failed.final_state = RunState::failed;
  failed.exit_code = 1;
  auto later = runs.retry_later({waiting, st->new_version, epoch}, att, failed, Millis{60000});
  ASSERT_EQ(later->outcome, WriteOutcome::applied);
  ASSERT_EQ(read(waiting).state, RunState::retry_waiting);
  ASSERT_EQ(runs.cancel({waiting, later->new_version, epoch}, RunState::retry_waiting, "operator")->outcome,
            WriteOutcome::applied);
  EXPECT_EQ(read(waiting).state, RunState::canceled);
  for (RunId id : {orphaned, waiting})
    EXPECT_EQ(scalar("SELECT count(*) FROM job_run_transitions WHERE to_state = 'CANCELED' AND from_state IN"
                     " ('ORPHANED', 'RETRY_WAITING') AND run_id = " +
                     std::to_string(id.value)),
              1);
}

TEST_F(RunStoreTest, UnreachableDatabaseIsAnErrorNotAnOutcome) {
  PgRunStore dead("postgresql://postgres@127.0.0.1:1/x", "dead");
  auto r = dead.assign({RunId{1}, Version{1}, epoch}, "w1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::db_unavailable);
}

// An attempt ended as lost whose success arrives while the run still waits
// to retry it is recorded SUCCEEDED; once the run moved on, it is not.
TEST_F(RunStoreTest, LateSuccessOnlyWhileTheSameAttemptWaitsToRetry) {
  RunId id = create();
  auto a = runs.assign({id, read(id).version, epoch}, "w1");
  AttemptFence att{"w1", 1, a->lease_token};
  auto s = runs.start({id, a->new_version, epoch}, att, Millis{5000});
  Finish lost;
  lost.final_state = RunState::failed;
  lost.error_code = "attempt_lost";
  auto l = runs.retry_later({id, s->new_version, epoch}, att, lost, Millis{60000});
  ASSERT_EQ(l->outcome, WriteOutcome::applied);
  Finish ok;
  ok.exit_code = 0;
  auto wrong = runs.late_success({id, l->new_version, epoch}, {"w1", 1, "00000000-0000-4000-8000-000000000000"}, ok);
  EXPECT_EQ(wrong->outcome, WriteOutcome::conflict) << "another attempt's token";
  auto late = runs.late_success({id, l->new_version, epoch}, att, ok);
  ASSERT_EQ(late->outcome, WriteOutcome::applied);
  EXPECT_EQ(read(id).state, RunState::succeeded);
  EXPECT_EQ(scalar("SELECT count(*) FROM job_run_attempts WHERE outcome = 'SUCCEEDED' AND run_id = " +
                   std::to_string(id.value)),
            1);

  RunId moved = create();
  auto a2 = runs.assign({moved, read(moved).version, epoch}, "w1");
  AttemptFence att2{"w1", 1, a2->lease_token};
  auto s2 = runs.start({moved, a2->new_version, epoch}, att2, Millis{5000});
  auto l2 = runs.retry_later({moved, s2->new_version, epoch}, att2, lost, Millis{0});
  auto r2 = runs.reassign({moved, l2->new_version, epoch}, RunState::retry_waiting, "w2");
  ASSERT_EQ(r2->outcome, WriteOutcome::applied);
  auto too_late = runs.late_success({moved, r2->new_version, epoch}, att2, ok);
  EXPECT_EQ(too_late->outcome, WriteOutcome::conflict) << "the retry was assigned: the success is not recorded";
}
