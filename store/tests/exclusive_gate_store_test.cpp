// exclusive_execution in the database (schemas/0033, 0046), against real
// PostgreSQL: whatever a leader asks, an exclusive job's run becomes active
// only when no other run is, and no other run becomes active while it is;
// only an exclusive run takes a gate (every other run's assignment stays a
// HOT update), and it is given back when the run ends; an exclusive run is
// made active only under the run table's lock, which waits for the writes
// under way; the runs made active before a job became exclusive hold it
// back too; a job becomes exclusive only once the run table's writes under
// way have committed. One rule per test.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;
using namespace std::chrono_literals;

namespace {

class ExclusiveGateTest : public OverlapStoreTest {
 protected:
  void exclusive_job(const std::string& name) { job(name, std::nullopt, "allow", false, std::nullopt, true); }
  /// An exclusive job's run assigned as a leader does: the row says so,
  /// and the batch takes the run table's lock first.
  Result<BatchWriteResult> assign_exclusive(RunId id) {
    AssignRow row{id, Version{1}, RunState::pending, "w1"};
    row.exclusive_execution = true;
    return runs.assign_batch(epoch, {row});
  }
  std::string gate_of(RunId id) {
    return text("SELECT coalesce(gate::text, '-') FROM job_runs WHERE id = " + std::to_string(id.value));
  }
  /// Ends an ASSIGNED run (a cancel: one of the ways out, each releasing).
  void end(RunId id) {
    auto row = runs.read_run(id);
    ASSERT_TRUE(row && *row);
    ASSERT_EQ(runs.cancel({id, (*row)->version, epoch}, RunState::assigned, "test")->outcome, WriteOutcome::applied);
  }
  static std::string error_of(const Result<BatchWriteResult>& r) { return r ? "" : r.error().message; }
};

TEST_F(ExclusiveGateTest, WhileNoJobIsExclusiveNoRunTakesAGate) {
  job("free", std::nullopt);
  const RunId f = run_of("free");
  ASSERT_TRUE(applied(assign(f, std::nullopt), f));
  EXPECT_EQ(gate_of(f), "-") << "the run table's writes stay what they were";
}

TEST_F(ExclusiveGateTest, AnExclusiveRunWaitsForTheOtherRunsToEndAndOnlyItTakesAGate) {
  job("free", std::nullopt);
  exclusive_job("vacuum");
  const RunId f = run_of("free"), v = run_of("vacuum");
  ASSERT_TRUE(applied(assign(f, std::nullopt), f));
  EXPECT_EQ(gate_of(f), "-") << "another job's run takes no gate: its assignment writes no indexed column";
  auto refused = assign_exclusive(v);
  ASSERT_FALSE(refused) << "another run is active";
  EXPECT_NE(error_of(refused).find("run " + std::to_string(v.value) +
                                   " of exclusive job vacuum cannot become ASSIGNED while run " +
                                   std::to_string(f.value) + " is active (exclusive_execution)"),
            std::string::npos)
      << error_of(refused);
  EXPECT_EQ(text("SELECT state FROM job_runs WHERE id = " + std::to_string(v.value)), "PENDING");
  end(f);
  ASSERT_TRUE(applied(assign_exclusive(v), v));
  EXPECT_EQ(gate_of(v), "(,)") << "the whole line";
  end(v);
  EXPECT_EQ(gate_of(v), "-") << "an ended run gives its gate back";
}

TEST_F(ExclusiveGateTest, NoOtherRunBecomesActiveWhileAnExclusiveOneIs) {
  job("free", std::nullopt);
  exclusive_job("vacuum");
  exclusive_job("reindex");
  const RunId v = run_of("vacuum"), f = run_of("free"), r = run_of("reindex");
  ASSERT_TRUE(applied(assign_exclusive(v), v));
  auto other = assign(f, std::nullopt);
  ASSERT_FALSE(other) << "a run of another job";
  EXPECT_NE(error_of(other).find("run " + std::to_string(f.value) + " of job free cannot become ASSIGNED: run " +
                                 std::to_string(v.value) + " of an exclusive job is active (exclusive_execution)"),
            std::string::npos)
      << error_of(other);
  auto second = assign_exclusive(r);
  ASSERT_FALSE(second) << "a run of another exclusive job";
  EXPECT_NE(error_of(second).find("job_runs_gate_exclusive"), std::string::npos) << error_of(second);
  // The single-row assignment is refused alike.
  auto single = runs.assign({f, Version{1}, epoch}, "w1");
  ASSERT_FALSE(single);
  EXPECT_NE(single.error().message.find("of an exclusive job is active"), std::string::npos) << single.error().message;
  end(v);
  EXPECT_TRUE(applied(assign(f, std::nullopt), f));
}

TEST_F(ExclusiveGateTest, AnExclusiveRunAndAnotherInOneStatementAreRefused) {
  job("free", std::nullopt);
  exclusive_job("vacuum");
  const RunId f = run_of("free"), v = run_of("vacuum");
  AssignRow other{f, Version{1}, RunState::pending, "w1"};
  AssignRow exclusive{v, Version{1}, RunState::pending, "w1"};
  exclusive.exclusive_execution = true;
  auto both = runs.assign_batch(epoch, {other, exclusive});
  ASSERT_FALSE(both) << "neither sees the other in the statement's snapshot";
  EXPECT_NE(error_of(both).find("while run " + std::to_string(f.value) + " is active"), std::string::npos)
      << error_of(both);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE state = 'PENDING'"), "2");
}

TEST_F(ExclusiveGateTest, AnExclusiveRunIsMadeActiveOnlyUnderTheRunTablesLock) {
  exclusive_job("vacuum");
  const RunId v = run_of("vacuum");
  // A caller that does not say the run is exclusive takes no lock: refused.
  auto unlocked = assign(v, std::nullopt);
  ASSERT_FALSE(unlocked);
  EXPECT_NE(error_of(unlocked).find("only under the run table's lock"), std::string::npos) << error_of(unlocked);
  EXPECT_EQ(text("SELECT state FROM job_runs WHERE id = " + std::to_string(v.value)), "PENDING");
}

TEST_F(ExclusiveGateTest, AnExclusiveAssignmentWaitsForTheRunTablesWritesUnderWay) {
  exclusive_job("vacuum");
  const RunId v = run_of("vacuum");
  // A write of the run table under way (an assignment of another run in a
  // transaction not yet committed holds this lock from its bind on): the
  // exclusive run's lock waits for it, so its statement's snapshot, taken
  // after, would see that run active.
  pqxx::connection writer(url);
  auto open = std::make_unique<pqxx::work>(writer);
  open->exec("LOCK TABLE job_runs IN ROW EXCLUSIVE MODE");
  auto pending = std::async(std::launch::async, [&] { return assign_exclusive(v); });
  EXPECT_EQ(pending.wait_for(300ms), std::future_status::timeout) << "the exclusive assignment did not wait";
  open->commit();
  open.reset();
  auto done = pending.get();
  EXPECT_TRUE(applied(done, v)) << error_of(done);
}

TEST_F(ExclusiveGateTest, ARunMadeActiveBeforeTheJobBecameExclusiveHoldsItBack) {
  job("free", std::nullopt);
  const RunId f = run_of("free");
  ASSERT_TRUE(applied(assign(f, std::nullopt), f));
  ASSERT_EQ(gate_of(f), "-") << "no job was exclusive: no gate";
  exclusive_job("vacuum");
  const RunId v = run_of("vacuum");
  auto refused = assign_exclusive(v);
  ASSERT_FALSE(refused);
  EXPECT_NE(error_of(refused).find("run " + std::to_string(v.value) +
                                   " of exclusive job vacuum cannot become ASSIGNED "
                                   "while run " +
                                   std::to_string(f.value) + " is active (exclusive_execution)"),
            std::string::npos)
      << error_of(refused);
  end(f);
  EXPECT_TRUE(applied(assign_exclusive(v), v));
}

TEST_F(ExclusiveGateTest, AJobBecomesExclusiveOnlyOnceTheRunTablesWritesUnderWayHaveCommitted) {
  job("later", std::nullopt);
  // A write of the run table under way: an open transaction holding the
  // lock every UPDATE of job_runs takes.
  pqxx::connection writer(url);
  pqxx::work open(writer);
  open.exec("LOCK TABLE job_runs IN ROW EXCLUSIVE MODE");
  // Making a job exclusive waits for it (here: gives up after 300 ms).
  pqxx::connection apply(url);
  try {
    pqxx::work tx(apply);
    tx.exec("SET LOCAL lock_timeout = '300ms'");
    tx.exec("UPDATE job_definitions SET exclusive_execution = true WHERE name = 'later'");
    tx.commit();
    ADD_FAILURE() << "the job became exclusive while a write of job_runs was under way";
  } catch (const pqxx::sql_error& e) {
    EXPECT_NE(std::string(e.what()).find("lock timeout"), std::string::npos) << e.what();
  }
  open.commit();
  // ... and goes through once it has committed; the API's write does the same.
  pqxx::work tx(apply);
  tx.exec("UPDATE job_definitions SET exclusive_execution = true WHERE name = 'later'");
  tx.commit();
  EXPECT_EQ(text("SELECT count(*) FROM job_definitions WHERE exclusive_execution"), "1");
}

// Issue 64, decision 1: an exclusive run drains the cluster only while an
// attached worker taking runs matches its selector. Until one does, the
// others are read as before (the leader records no_worker_matches for it);
// when one attaches, the drain begins.
TEST_F(ExclusiveGateTest, AnExclusiveRunThatNoAttachedWorkerMatchesDrainsNothing) {
  job("free", std::nullopt);
  const RunId f1 = run_of("free");
  exclusive_job("vacuum");
  {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec(R"(UPDATE job_definitions SET worker_selector = '{"pool": "maint"}' WHERE name = 'vacuum')");
    tx.commit();
  }
  const RunId v = run_of("vacuum");
  const std::map<std::string, std::string> plain, maint{{"pool", "maint"}};
  auto due = leader.due_runs(10, plain, Millis{0}, {plain});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u) << "no worker that takes runs matches the exclusive job: the others are read";
  EXPECT_EQ(due->front().id, f1);
  due = leader.due_runs(10, plain, Millis{0}, {plain, maint});
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty()) << "a maint worker is attached: the plain workers drain";
  due = leader.due_runs(10, maint, Millis{0}, {plain, maint});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u) << "and the maint worker reads the exclusive run alone";
  EXPECT_EQ(due->front().id, v);
}

TEST_F(ExclusiveGateTest, WhileAnExclusiveRunIsDueOrActiveOnlyItIsReadForDispatch) {
  job("free", std::nullopt);
  const RunId f1 = run_of("free");
  exclusive_job("vacuum");
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u) << "no exclusive run is due: the others are read";
  const RunId v = run_of("vacuum");
  due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u) << "an exclusive run is due: it alone, so it is not starved";
  EXPECT_EQ(due->front().id, v);
  EXPECT_TRUE(due->front().exclusive_execution);
  ASSERT_TRUE(applied(assign_exclusive(v), v));
  run_of("vacuum");
  due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty()) << "one is active: nothing else is read";
  auto active = leader.active_runs(Millis{0});
  ASSERT_TRUE(active);
  ASSERT_EQ(active->size(), 1u);
  EXPECT_TRUE(active->front().exclusive_gate);
  // A triggered run does not come back for an assignment at once.
  auto t = admin.trigger(Actor{"test", epoch}, "free", std::nullopt, std::nullopt);
  ASSERT_TRUE(t && t->outcome == WriteOutcome::applied);
  EXPECT_FALSE(t->due.has_value()) << "it waits for the dispatcher's read";
  (void)f1;
}

}  // namespace
