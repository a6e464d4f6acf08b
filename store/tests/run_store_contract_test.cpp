// The RunStore contract: one typed suite run against PostgreSQL (PgRunStore)
// and the in-memory fake (FakeRunStore) alike, so the fake the simulator
// and unit tests rely on keeps the SQL's predicates: the epoch fence, the
// version, the state, and the worker, attempt and lease token of
// attempt-scoped writes. A rule added to one and not the other fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "baton/store_fake/fake_leader_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/store_pg/pg_leader_store.h"
#include "baton/testing/fake_clock.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;

namespace {

/// A well-formed token no attempt holds (PostgreSQL's column is a uuid).
const std::string other_token = "00000000-0000-4000-8000-999999999999";

/// PostgreSQL: a fresh database per test, elections by releasing the lease.
class PgEnv {
 public:
  RunStore& runs() { return store_; }
  Epoch elect(const std::string& node) { return pg::test::force_election(url_, node); }
  std::int64_t attempt_rows(RunId id) { return count("job_run_attempts", id); }
  std::int64_t dead_letters(RunId id) { return count("dead_letters", id); }
  std::int64_t transitions(RunId id) { return count("job_run_transitions", id); }
  std::string progress(RunId id) {
    return pg::test::scalar_text(url_, "SELECT progress FROM job_runs WHERE id = " + std::to_string(id.value));
  }
  // The leader's reads and batched heartbeat (store::LeaderStore).
  std::vector<ActiveRun> active(Millis margin) { return *leader_.active_runs(margin); }
  std::vector<DueRun> due(int limit) { return *leader_.due_runs(limit, {}, Millis{0}, {{}}); }
  HeartbeatBatchResult heartbeat_batch(Epoch e, const std::vector<HeartbeatRow>& rows) {
    return *leader_.heartbeat_batch(e, rows, Millis{10000});
  }

 private:
  std::int64_t count(const std::string& table, RunId id) {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    return tx.exec1("SELECT count(*) FROM " + table + " WHERE run_id = " + std::to_string(id.value))[0]
        .as<std::int64_t>();
  }
  std::string url_ = baton::testing::PgInstance::shared().fresh_database("contract");
  pg::PgRunStore store_{url_, "contract"};
  pg::PgLeaderStore leader_{url_, "contract-leader"};
};

/// The fake: the lease's epoch fences, elections by letting the lease run out.
class FakeEnv {
 public:
  RunStore& runs() { return store_; }
  Epoch elect(const std::string& node) {
    clock_.advance(std::chrono::hours(1));  // whatever lease there was has expired
    auto r = lease_.campaign(pg::test::node(node), Millis{60000});
    EXPECT_TRUE(r.won);
    return r.lease.epoch;
  }
  std::int64_t attempt_rows(RunId id) { return count(db_.attempts(), id); }
  std::int64_t dead_letters(RunId id) { return count(db_.dead_letters(), id); }
  std::int64_t transitions(RunId id) { return count(db_.transitions(), id); }
  std::string progress(RunId id) { return db_.runs().at(id.value).progress.value_or("NULL"); }
  // Through FakeLeaderStore, the simulator's leader store.
  std::vector<ActiveRun> active(Millis margin) { return *leader_.active_runs(margin); }
  std::vector<DueRun> due(int limit) { return *leader_.due_runs(limit, {}, Millis{0}, {{}}); }
  HeartbeatBatchResult heartbeat_batch(Epoch e, const std::vector<HeartbeatRow>& rows) {
    return *leader_.heartbeat_batch(e, rows, Millis{10000});
  }

 private:
  template <class Rows>
  static std::int64_t count(const Rows& rows, RunId id) {
    std::int64_t n = 0;
    for (const auto& r : rows) n += r.run == id;
    return n;
  }
  baton::testing::FakeClock clock_;
  fake::FakeLeaseDb lease_{clock_};
  fake::FakeRunDb db_{lease_, clock_};
  fake::FakeRunStore store_{db_};
  fake::FakeLeaderStore leader_{db_};
};

template <class Env>
class RunStoreContract : public ::testing::Test {
 protected:
  Env env;
  RunStore& runs = env.runs();
  Epoch epoch = env.elect("n1");

  RunId create(int max_attempts = 3, std::optional<std::string> key = std::nullopt) {
    NewRun n;
    n.max_attempts = max_attempts;
    n.idempotency_key = std::move(key);
    auto r = runs.create_run(epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r ? r->run : RunId{0};
  }
  RunRow read(RunId id) {
    auto r = runs.read_run(id);
    EXPECT_TRUE(r && r->has_value());
    return r && *r ? **r : RunRow{};
  }
  WriteOutcome outcome(const Result<WriteResult>& r) { return r ? r->outcome : WriteOutcome::conflict; }
  /// PENDING -> ASSIGNED -> RUNNING for worker w1; returns the attempt fence
  /// and the running version.
  std::pair<AttemptFence, Version> running(RunId id) {
    auto a = runs.assign({id, read(id).version, epoch}, "w1");
    EXPECT_EQ(outcome(a), WriteOutcome::applied);
    AttemptFence att{"w1", a->attempt, a->lease_token};
    auto s = runs.start({id, a->new_version, epoch}, att, Millis{1000});
    EXPECT_EQ(outcome(s), WriteOutcome::applied);
    return {att, s->new_version};
  }
};

using Envs = ::testing::Types<PgEnv, FakeEnv>;
class EnvNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, PgEnv> ? "Pg" : "Fake";
  }
};
TYPED_TEST_SUITE(RunStoreContract, Envs, EnvNames);

TYPED_TEST(RunStoreContract, HappyPathMovesVersionTokenAndLogsEveryWrite) {
  RunId id = this->create();
  EXPECT_EQ(this->read(id).state, RunState::pending);
  EXPECT_EQ(this->read(id).version, Version{1});
  auto a = this->runs.assign({id, Version{1}, this->epoch}, "w1");
  ASSERT_EQ(this->outcome(a), WriteOutcome::applied);
  EXPECT_EQ(a->new_version, Version{2});
  EXPECT_EQ(a->attempt, 1);
  EXPECT_EQ(a->lease_token.size(), 36u);
  AttemptFence att{"w1", 1, a->lease_token};
  auto s = this->runs.start({id, a->new_version, this->epoch}, att, Millis{1000});
  ASSERT_EQ(this->outcome(s), WriteOutcome::applied);
  auto h = this->runs.heartbeat({id, s->new_version, this->epoch}, att, Millis{1000});
  ASSERT_EQ(this->outcome(h), WriteOutcome::applied);
  Finish fin;
  fin.exit_code = 0;
  auto f = this->runs.finish({id, h->new_version, this->epoch}, att, fin);
  ASSERT_EQ(this->outcome(f), WriteOutcome::applied);
  RunRow r = this->read(id);
  EXPECT_EQ(r.state, RunState::succeeded);
  EXPECT_EQ(r.version, Version{5});
  EXPECT_EQ(r.leader_epoch, this->epoch);
  EXPECT_EQ(this->env.attempt_rows(id), 1);
  EXPECT_EQ(this->env.dead_letters(id), 0);
  EXPECT_EQ(this->env.transitions(id), 5) << "the insert and every update";
}

TYPED_TEST(RunStoreContract, StaleVersionIsAConflictAndAStaleEpochIsFenced) {
  RunId id = this->create();
  auto a = this->runs.assign({id, Version{1}, this->epoch}, "w1");
  ASSERT_EQ(this->outcome(a), WriteOutcome::applied);
  EXPECT_EQ(this->outcome(this->runs.cancel({id, Version{1}, this->epoch}, RunState::assigned, "x")),
            WriteOutcome::conflict);
  Epoch old = this->epoch;
  Epoch newer = this->env.elect("n2");
  auto fenced = this->runs.cancel({id, a->new_version, old}, RunState::assigned, "x");
  ASSERT_TRUE(fenced);
  EXPECT_EQ(fenced->outcome, WriteOutcome::fenced);
  EXPECT_EQ(fenced->current_epoch, newer);
  auto created = this->runs.create_run(old, NewRun{});
  ASSERT_TRUE(created);
  EXPECT_EQ(created->outcome, WriteOutcome::fenced);
  EXPECT_EQ(this->read(id).state, RunState::assigned);
}

TYPED_TEST(RunStoreContract, StartAndAttemptWritesNeedTheWorkerAttemptAndToken) {
  RunId id = this->create();
  auto a = this->runs.assign({id, Version{1}, this->epoch}, "w1");
  const Version v = a->new_version;
  const std::string token = a->lease_token;
  EXPECT_EQ(this->outcome(this->runs.start({id, v, this->epoch}, {"w2", 1, token}, Millis{1000})),
            WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.start({id, v, this->epoch}, {"w1", 2, token}, Millis{1000})),
            WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.start({id, v, this->epoch}, {"w1", 1, other_token}, Millis{1000})),
            WriteOutcome::conflict);
  auto s = this->runs.start({id, v, this->epoch}, {"w1", 1, token}, Millis{1000});
  ASSERT_EQ(this->outcome(s), WriteOutcome::applied);
  EXPECT_EQ(this->outcome(this->runs.finish({id, s->new_version, this->epoch}, {"w2", 1, token}, Finish{})),
            WriteOutcome::conflict);
}

// An attempt adopted by no leader of this epoch cannot be heartbeaten or
// finished by it: a new leader adopts first.
TYPED_TEST(RunStoreContract, ANewLeaderMustAdoptBeforeItWritesForTheAttempt) {
  RunId id = this->create();
  auto [att, v] = this->running(id);
  auto c = this->runs.begin_confirming({id, v, this->epoch}, Millis{30000});
  ASSERT_EQ(this->outcome(c), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).continuation, ContinuationState::confirming);
  EXPECT_EQ(this->outcome(this->runs.begin_confirming({id, c->new_version, this->epoch}, Millis{30000})),
            WriteOutcome::conflict)
      << "already confirming";
  Epoch newer = this->env.elect("n2");
  EXPECT_EQ(this->outcome(this->runs.heartbeat({id, c->new_version, newer}, att, Millis{1000})),
            WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.finish({id, c->new_version, newer}, att, Finish{})), WriteOutcome::conflict);
  auto ad = this->runs.adopt({id, c->new_version, newer}, att);
  ASSERT_EQ(this->outcome(ad), WriteOutcome::applied);
  RunRow r = this->read(id);
  EXPECT_EQ(r.continuation, ContinuationState::none);
  EXPECT_EQ(r.leader_epoch, newer);
  EXPECT_EQ(this->outcome(this->runs.finish({id, ad->new_version, newer}, att, Finish{})), WriteOutcome::applied);
}

TYPED_TEST(RunStoreContract, RetriesCountAttemptsAndTheLastFailureDeadLetters) {
  RunId id = this->create(/*max_attempts=*/2);
  auto [att, v] = this->running(id);
  Finish failed;
  failed.final_state = RunState::failed;
  failed.error_code = "failed";
  failed.exit_code = 3;
  auto r1 = this->runs.retry_later({id, v, this->epoch}, att, failed, Millis{0});
  ASSERT_EQ(this->outcome(r1), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::retry_waiting);
  EXPECT_EQ(this->outcome(this->runs.reassign({id, r1->new_version, this->epoch}, RunState::orphaned, "w2")),
            WriteOutcome::conflict)
      << "the state named must be the state it is in";
  auto re = this->runs.reassign({id, r1->new_version, this->epoch}, RunState::retry_waiting, "w2");
  ASSERT_EQ(this->outcome(re), WriteOutcome::applied);
  EXPECT_EQ(re->attempt, 2);
  EXPECT_NE(re->lease_token, att.lease_token);
  AttemptFence att2{"w2", 2, re->lease_token};
  auto s2 = this->runs.start({id, re->new_version, this->epoch}, att2, Millis{1000});
  auto f2 = this->runs.finish({id, s2->new_version, this->epoch}, att2, failed);
  ASSERT_EQ(this->outcome(f2), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::failed);
  EXPECT_EQ(this->env.attempt_rows(id), 2);
  EXPECT_EQ(this->env.dead_letters(id), 1);
}

TYPED_TEST(RunStoreContract, AnOrphanedAssignmentKeepsItsAttemptAndGetsANewToken) {
  RunId id = this->create(/*max_attempts=*/1);
  auto a = this->runs.assign({id, Version{1}, this->epoch}, "w1");
  auto o = this->runs.orphan({id, a->new_version, this->epoch});
  ASSERT_EQ(this->outcome(o), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::orphaned);
  auto re = this->runs.reassign({id, o->new_version, this->epoch}, RunState::orphaned, "w2");
  ASSERT_EQ(this->outcome(re), WriteOutcome::applied);
  EXPECT_EQ(re->attempt, 1);
  EXPECT_NE(re->lease_token, a->lease_token);
  // The abandoned grant's token no longer starts anything.
  EXPECT_EQ(
      this->outcome(this->runs.start({id, re->new_version, this->epoch}, {"w1", 1, a->lease_token}, Millis{1000})),
      WriteOutcome::conflict);
  auto o2 = this->runs.orphan({id, re->new_version, this->epoch});
  auto failed = this->runs.fail_orphaned({id, o2->new_version, this->epoch}, "no worker kept it");
  ASSERT_EQ(this->outcome(failed), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::failed);
  EXPECT_EQ(this->env.dead_letters(id), 1);
}

TYPED_TEST(RunStoreContract, UnrunnableFailsOnlyFromTheWaitingStateNamed) {
  RunId id = this->create();
  EXPECT_EQ(this->outcome(this->runs.fail_unrunnable({id, Version{1}, this->epoch}, RunState::orphaned, "bad", "x")),
            WriteOutcome::conflict);
  ASSERT_EQ(this->outcome(this->runs.fail_unrunnable({id, Version{1}, this->epoch}, RunState::pending, "bad_definition",
                                                     "tasks do not decode")),
            WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::failed);
  EXPECT_EQ(this->env.dead_letters(id), 1);
}

TYPED_TEST(RunStoreContract, CancelNeedsTheNamedStateAndFreesTheIdempotencyKey) {
  RunId id = this->create(3, "key-1");
  auto dup = this->runs.create_run(this->epoch, NewRun{std::nullopt, "key-1", 1, 0, "api", "{}"});
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->outcome, WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.cancel({id, Version{1}, this->epoch}, RunState::assigned, "wrong state")),
            WriteOutcome::conflict);
  ASSERT_EQ(this->outcome(this->runs.cancel({id, Version{1}, this->epoch}, RunState::pending, "operator")),
            WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::canceled);
  EXPECT_EQ(this->outcome(this->runs.cancel({id, Version{2}, this->epoch}, RunState::pending, "again")),
            WriteOutcome::conflict)
      << "no longer PENDING";
  auto again = this->runs.create_run(this->epoch, NewRun{std::nullopt, "key-1", 1, 0, "api", "{}"});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->outcome, WriteOutcome::applied);
}

// SPEC 2 and 4: a RUNNING run is canceled as every attempt ends, under its
// worker's, attempt's and lease token's predicates, and the canceled attempt
// is recorded like any other; the plain cancel does not take a RUNNING run.
TYPED_TEST(RunStoreContract, ARunningRunIsCanceledOnlyAsItsCurrentAttemptWhichIsRecorded) {
  RunId id = this->create();
  auto [att, v] = this->running(id);
  EXPECT_EQ(this->outcome(this->runs.cancel({id, v, this->epoch}, RunState::assigned, "wrong state")),
            WriteOutcome::conflict);
  Finish killed;
  killed.exit_code = 143;
  killed.result_json = R"({"duration_ms":5,"tasks":[]})";
  EXPECT_EQ(this->outcome(
                this->runs.cancel_attempt({id, v, this->epoch}, {"w1", att.attempt, other_token}, killed, "operator")),
            WriteOutcome::conflict)
      << "another lease token";
  EXPECT_EQ(this->outcome(this->runs.cancel_attempt({id, v, this->epoch}, {"w2", att.attempt, att.lease_token}, killed,
                                                    "operator")),
            WriteOutcome::conflict)
      << "another worker";
  EXPECT_EQ(this->env.attempt_rows(id), 0);
  auto c = this->runs.cancel_attempt({id, v, this->epoch}, att, killed, "operator");
  ASSERT_EQ(this->outcome(c), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::canceled);
  EXPECT_EQ(this->env.attempt_rows(id), 1) << "the canceled attempt has its row";
  EXPECT_EQ(this->env.dead_letters(id), 0);
  // A new leader must adopt first, as for every attempt-scoped write.
  RunId other = this->create();
  auto [att2, v2] = this->running(other);
  const Epoch next = this->env.elect("n2");
  EXPECT_EQ(this->outcome(this->runs.cancel_attempt({other, v2, next}, att2, killed, "operator")),
            WriteOutcome::conflict);
}

TYPED_TEST(RunStoreContract, LateSuccessOnlyWhileTheSameAttemptWaitsToRetry) {
  RunId id = this->create(/*max_attempts=*/2);
  auto [att, v] = this->running(id);
  Finish lost;
  lost.final_state = RunState::failed;
  lost.error_code = "attempt_lost";
  auto r = this->runs.retry_later({id, v, this->epoch}, att, lost, Millis{60000});
  ASSERT_EQ(this->outcome(r), WriteOutcome::applied);
  Finish ok;
  ok.exit_code = 0;
  EXPECT_EQ(this->outcome(this->runs.late_success({id, r->new_version, this->epoch}, {"w1", 1, other_token}, ok)),
            WriteOutcome::conflict);
  auto late = this->runs.late_success({id, r->new_version, this->epoch}, att, ok);
  ASSERT_EQ(this->outcome(late), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::succeeded);
  EXPECT_EQ(this->env.attempt_rows(id), 1) << "the attempt's row is corrected, not duplicated";
}

// Issue 37, item 3 (schemas/0041): a worker's report of an attempt a leader
// gave up on is kept as what happened, the run unchanged, and the next
// attempt is told what became of the one before it.
TYPED_TEST(RunStoreContract, ALateReportIsKeptOnlyForAnAttemptALeaderGaveUpOnAndTheNextAttemptLearnsOfIt) {
  RunId id = this->create(/*max_attempts=*/3);
  auto [att, v] = this->running(id);
  const RunFence any{id, Version{0}, this->epoch};
  Finish ok;
  ok.exit_code = 0;
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, att, ok)), WriteOutcome::conflict)
      << "the running attempt's report is not late";
  Finish lost;
  lost.final_state = RunState::failed;
  lost.error_code = "attempt_lost";
  auto r = this->runs.retry_later({id, v, this->epoch}, att, lost, Millis{0});
  ASSERT_EQ(this->outcome(r), WriteOutcome::applied);
  auto previous_of = [&] {
    for (const auto& d : this->env.due(10))
      if (d.id == id) return d.previous;
    return PreviousAttempt{"not due", 0, ""};
  };
  EXPECT_EQ(previous_of(), (PreviousAttempt{"lost_contact", 1, "w1"}));
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, {"w1", 1, other_token}, ok)), WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, {"w2", 1, att.lease_token}, ok)), WriteOutcome::conflict);
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, {"w1", 2, att.lease_token}, ok)), WriteOutcome::conflict);
  ASSERT_EQ(this->outcome(this->runs.record_late_report(any, att, ok)), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::retry_waiting) << "the run is not changed";
  EXPECT_EQ(this->read(id).version, r->new_version);
  EXPECT_EQ(previous_of(), (PreviousAttempt{"succeeded_unacknowledged", 1, "w1"}));
  Finish failed;
  failed.final_state = RunState::failed;
  failed.exit_code = 1;
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, att, failed)), WriteOutcome::conflict)
      << "the first report wins";

  // Attempt 2 fails by its own report: the next attempt learns of that
  // one, but an earlier unacknowledged success is named first.
  auto a2 = this->runs.reassign({id, this->read(id).version, this->epoch}, RunState::retry_waiting, "w1");
  ASSERT_EQ(this->outcome(a2), WriteOutcome::applied);
  const AttemptFence att2{"w1", a2->attempt, a2->lease_token};
  ASSERT_EQ(att2.attempt, 2);
  auto s2 = this->runs.start({id, a2->new_version, this->epoch}, att2, Millis{1000});
  ASSERT_EQ(this->outcome(s2), WriteOutcome::applied);
  const Version v2 = s2->new_version;
  Finish own;
  own.final_state = RunState::failed;
  own.error_code = "failed";
  own.exit_code = 3;
  ASSERT_EQ(this->outcome(this->runs.retry_later({id, v2, this->epoch}, att2, own, Millis{0})), WriteOutcome::applied);
  EXPECT_EQ(previous_of(), (PreviousAttempt{"succeeded_unacknowledged", 1, "w1"}));
  EXPECT_EQ(this->outcome(this->runs.record_late_report(any, att2, ok)), WriteOutcome::conflict)
      << "an attempt that ended by its own report has nothing late to keep";

  // Another run: lost, then its worker says it did not succeed.
  RunId other = this->create(/*max_attempts=*/2);
  auto [oatt, ov] = this->running(other);
  ASSERT_EQ(this->outcome(this->runs.retry_later({other, ov, this->epoch}, oatt, lost, Millis{0})),
            WriteOutcome::applied);
  ASSERT_EQ(this->outcome(this->runs.record_late_report({other, Version{0}, this->epoch}, oatt, failed)),
            WriteOutcome::applied);
  for (const auto& d : this->env.due(10)) {
    if (d.id == other) {
      EXPECT_EQ(d.previous, (PreviousAttempt{"fenced_out", 1, "w1"}));
    }
  }
  RunId first = this->create();
  for (const auto& d : this->env.due(10)) {
    if (d.id == first) {
      EXPECT_EQ(d.previous, PreviousAttempt{}) << "a first attempt has none";
    }
  }

  // An old leader's report is fenced.
  RunId third = this->create(/*max_attempts=*/2);
  auto [tatt, tv] = this->running(third);
  ASSERT_EQ(this->outcome(this->runs.retry_later({third, tv, this->epoch}, tatt, lost, Millis{0})),
            WriteOutcome::applied);
  const Epoch old = this->epoch;
  this->env.elect("n2");
  EXPECT_EQ(this->outcome(this->runs.record_late_report({third, Version{0}, old}, tatt, ok)), WriteOutcome::fenced);
}

TYPED_TEST(RunStoreContract, CancelRequestNeedsARunningRun) {
  RunId id = this->create();
  EXPECT_EQ(this->outcome(this->runs.request_cancel({id, Version{1}, this->epoch}, "early")), WriteOutcome::conflict);
  auto [att, v] = this->running(id);
  auto req = this->runs.request_cancel({id, v, this->epoch}, "operator");
  ASSERT_EQ(this->outcome(req), WriteOutcome::applied);
  EXPECT_EQ(req->new_version.value, v.value + 1);
  EXPECT_EQ(this->read(id).state, RunState::running);
}

// Batches: the fence is judged once for the statement, every row on its own
// predicates; rows that lost are simply absent.
TYPED_TEST(RunStoreContract, BatchesJudgeEachRowAndTheFenceOnce) {
  RunId a = this->create(), b = this->create(), c = this->create();
  auto assigned = this->runs.assign_batch(this->epoch, {{a, Version{1}, RunState::pending, "w1", Millis{7000}},
                                                        {b, Version{9}, RunState::pending, "w1", Millis{0}},
                                                        {c, Version{1}, RunState::orphaned, "w1", Millis{0}}});
  ASSERT_TRUE(assigned);
  EXPECT_FALSE(assigned->fenced(this->epoch));
  ASSERT_EQ(assigned->applied.size(), 1u) << "b's version and c's state are wrong";
  const WriteResult& wa = assigned->applied.at(a.value);
  auto started = this->runs.start_batch(
      this->epoch,
      {{a, wa.new_version, {"w1", 1, wa.lease_token}, "i1"}, {b, Version{1}, {"w1", 1, other_token}, "i1"}},
      Millis{1000});
  ASSERT_TRUE(started);
  ASSERT_EQ(started->applied.size(), 1u);
  const Version va = started->applied.at(a.value).new_version;
  Epoch old = this->epoch;
  Epoch newer = this->env.elect("n2");
  FinishRow fin{a, va, {"w1", 1, wa.lease_token}, Finish{}, std::nullopt};
  auto fenced = this->runs.finish_batch(old, {fin});
  ASSERT_TRUE(fenced);
  EXPECT_TRUE(fenced->fenced(old));
  EXPECT_TRUE(fenced->applied.empty());
  auto not_adopted = this->runs.finish_batch(newer, {fin});
  ASSERT_TRUE(not_adopted);
  EXPECT_TRUE(not_adopted->applied.empty()) << "the new epoch has not adopted the attempt";
  auto ad = this->runs.adopt({a, va, newer}, {"w1", 1, wa.lease_token});
  ASSERT_EQ(this->outcome(ad), WriteOutcome::applied);
  fin.expected_version = ad->new_version;
  fin.finish.final_state = RunState::failed;
  fin.retry_delay = Millis{100};
  auto retried = this->runs.finish_batch(newer, {fin});
  ASSERT_TRUE(retried);
  ASSERT_EQ(retried->applied.size(), 1u);
  EXPECT_EQ(this->read(a).state, RunState::retry_waiting);
  EXPECT_EQ(this->env.attempt_rows(a), 1);
  EXPECT_EQ(this->read(b).state, RunState::pending);
  EXPECT_EQ(this->read(c).state, RunState::pending);
}

}  // namespace

// ---- the leader's reads: the simulator decides on the fake's ----------------

TYPED_TEST(RunStoreContract, ActiveRunsAreTheAssignedAndRunningWithTheirAttempts) {
  RunId pending = this->create();
  RunId assigned = this->create();
  RunId running = this->create();
  auto a = this->runs.assign({assigned, Version{1}, this->epoch}, "w2");
  ASSERT_EQ(this->outcome(a), WriteOutcome::applied);
  auto [att, v] = this->running(running);
  auto rows = this->env.active(Millis{1000});
  ASSERT_EQ(rows.size(), 2u);
  std::map<std::int64_t, ActiveRun> by_id;
  for (const auto& r : rows) by_id[r.id.value] = r;
  EXPECT_FALSE(by_id.count(pending.value));
  const ActiveRun& x = by_id.at(assigned.value);
  EXPECT_EQ(x.state, RunState::assigned);
  EXPECT_EQ(x.worker_id, "w2");
  EXPECT_EQ(x.lease_token, a->lease_token);
  EXPECT_EQ(x.version, a->new_version);
  EXPECT_EQ(x.leader_epoch, this->epoch);
  const ActiveRun& y = by_id.at(running.value);
  EXPECT_EQ(y.state, RunState::running);
  EXPECT_EQ(y.worker_id, "w1");
  EXPECT_EQ(y.attempt, att.attempt);
  EXPECT_EQ(y.lease_token, att.lease_token);
  EXPECT_EQ(y.version, v);
  EXPECT_EQ(y.continuation, ContinuationState::none);
  EXPECT_FALSE(y.continuation_expired);
  EXPECT_FALSE(y.cancel_reason.has_value());
}

TYPED_TEST(RunStoreContract, AConfirmingRunCarriesItsRemainingDeadlineAndItsCancelRequest) {
  RunId id = this->create();
  auto [att, v] = this->running(id);
  auto c = this->runs.begin_confirming({id, v, this->epoch}, Millis{60000});
  ASSERT_EQ(this->outcome(c), WriteOutcome::applied);
  auto q = this->runs.request_cancel({id, c->new_version, this->epoch}, "operator");
  ASSERT_EQ(this->outcome(q), WriteOutcome::applied);
  auto rows = this->env.active(Millis{1000});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].continuation, ContinuationState::confirming);
  ASSERT_TRUE(rows[0].continuation_remaining_ms.has_value());
  EXPECT_GT(*rows[0].continuation_remaining_ms, 50000);
  EXPECT_LE(*rows[0].continuation_remaining_ms, 60000);
  EXPECT_FALSE(rows[0].continuation_expired);
  EXPECT_EQ(rows[0].cancel_reason.value_or(""), "operator");
}

// A run taken back from a worker's prefetch queue is placed again like an
// orphan, but it does not spend the run's budget of unstarted assignments.
TYPED_TEST(RunStoreContract, ARequeuedRunIsDueAgainWithoutCountingAnUnstartedAssignment) {
  RunId id = this->create();
  auto a = this->runs.assign({id, Version{1}, this->epoch}, "w1");
  EXPECT_EQ(this->outcome(this->runs.requeue({id, Version{1}, this->epoch})), WriteOutcome::conflict);
  auto q = this->runs.requeue({id, a->new_version, this->epoch});
  ASSERT_EQ(this->outcome(q), WriteOutcome::applied);
  EXPECT_EQ(this->read(id).state, RunState::orphaned);
  auto due = this->env.due(10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].unstarted_assignments, 0);
  auto re = this->runs.reassign({id, q->new_version, this->epoch}, RunState::orphaned, "w2");
  ASSERT_EQ(this->outcome(re), WriteOutcome::applied);
  EXPECT_EQ(re->attempt, 1);
  EXPECT_NE(re->lease_token, a->lease_token);
  auto o = this->runs.orphan({id, re->new_version, this->epoch});
  ASSERT_EQ(this->outcome(o), WriteOutcome::applied);
  EXPECT_EQ(this->env.due(10)[0].unstarted_assignments, 1);
}

TYPED_TEST(RunStoreContract, DueRunsArePendingOrphanedAndRetriesWhoseTimeHasCome) {
  RunId pending = this->create();
  RunId orphaned = this->create();
  RunId waiting = this->create();
  RunId assigned = this->create();
  auto o = this->runs.assign({orphaned, Version{1}, this->epoch}, "w1");
  ASSERT_EQ(this->outcome(this->runs.orphan({orphaned, o->new_version, this->epoch})), WriteOutcome::applied);
  auto [att, v] = this->running(waiting);
  Finish fin;
  fin.final_state = RunState::failed;
  fin.error_code = "failed";
  ASSERT_EQ(this->outcome(this->runs.retry_later({waiting, v, this->epoch}, att, fin, Millis{3600000})),
            WriteOutcome::applied);
  ASSERT_EQ(this->outcome(this->runs.assign({assigned, Version{1}, this->epoch}, "w1")), WriteOutcome::applied);
  std::set<std::int64_t> due;
  for (const auto& d : this->env.due(100)) {
    due.insert(d.id.value);
    if (d.id == orphaned) {
      EXPECT_EQ(d.state, RunState::orphaned);
      EXPECT_EQ(d.unstarted_assignments, 1);
    }
  }
  EXPECT_EQ(due, (std::set<std::int64_t>{pending.value, orphaned.value}));
  EXPECT_EQ(this->env.due(1).size(), 1u) << "the limit holds";
}

// SPEC 6: a heartbeat write carries a task's progress when it changed, and
// one without it keeps what was written.
TYPED_TEST(RunStoreContract, AHeartbeatWritesTheProgressItCarriesAndKeepsItOtherwise) {
  RunId id = this->create();
  auto [att, v] = this->running(id);
  HeartbeatRow with{id, v, att, std::string("2/3 tables")};
  auto r = this->env.heartbeat_batch(this->epoch, {with});
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(this->env.progress(id), "2/3 tables");
  auto r2 = this->env.heartbeat_batch(this->epoch, {{id, r.applied.at(id.value), att}});
  ASSERT_EQ(r2.applied.size(), 1u);
  EXPECT_EQ(this->env.progress(id), "2/3 tables");
}

TYPED_TEST(RunStoreContract, AHeartbeatBatchIsFencedAndWritesOnlyHeldAttempts) {
  RunId held = this->create();
  RunId other = this->create();
  auto [att, v] = this->running(held);
  auto [att2, v2] = this->running(other);
  const Epoch old = this->epoch;
  std::vector<HeartbeatRow> rows{{held, v, att}, {other, v2, AttemptFence{"w1", att2.attempt, other_token}}};
  auto r = this->env.heartbeat_batch(old, rows);
  EXPECT_EQ(r.current_epoch, old);
  ASSERT_EQ(r.applied.size(), 1u) << "the wrong lease token is not written";
  EXPECT_TRUE(r.applied.count(held.value));
  const Epoch next = this->env.elect("n2");
  auto fenced = this->env.heartbeat_batch(old, {{held, r.applied.at(held.value), att}});
  EXPECT_EQ(fenced.current_epoch, next);
  EXPECT_TRUE(fenced.applied.empty()) << "an old epoch writes nothing";
}
