// The dispatcher's read (due_runs) as PostgreSQL plans it, under the
// settings it runs with: whatever jobs are defined, it never reads the run
// table from end to end. With a queue of one job's runs and an exclusive job
// defined, the look-up of "an exclusive job's run is due" was planned as a
// join over every unfinished run, on every pass: 35.6 ms a pass with 80,000
// runs queued, 1,637 runs/s against 6,400 (docs/performance.md, "An
// exclusive job read the whole queue"). A planner's choice, so asserted as
// the plan; what the read returns is asserted beside it.
#include <gtest/gtest.h>

#include "../pg/due_runs_read.h"
#include "overlap_fixture.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class DispatchReadPlanTest : public OverlapStoreTest {
 protected:
  /// `n` PENDING runs of job `name`, written at once, and fresh statistics:
  /// a queue as the benchmark's, as the planner sees it.
  void queue(const std::string& name, int n) {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec(
        "INSERT INTO job_runs (job_definition_id, max_attempts, leader_epoch, trigger_kind)"
        " SELECT (SELECT id FROM job_definitions WHERE name = " +
        tx.quote(name) + "), 1, " + std::to_string(epoch.value) + ", 'api' FROM generate_series(1, " +
        std::to_string(n) + ")");
    tx.commit();
    pqxx::nontransaction(c).exec("ANALYZE job_runs");
  }
  /// The read's plan, prepared and executed as PgLeaderStore does.
  std::string plan() {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec(due_runs_settings);
    tx.exec(due_runs_statement());
    std::string out;
    for (const auto& row : tx.exec("EXPLAIN EXECUTE due_runs(100, '{}', 0, '[{}]')"))
      out += row[0].as<std::string>() + "\n";
    return out;
  }
};

TEST_F(DispatchReadPlanTest, WithAnExclusiveJobDefinedTheReadStillNeverScansTheRunTable) {
  plain_jobs({"bulk"});
  job("vacuum", std::nullopt, "allow", false, std::nullopt, true);  // exclusive_execution
  queue("bulk", 5000);
  const std::string p = plan();
  EXPECT_EQ(p.find("Seq Scan on job_runs"), std::string::npos) << p;
  // Without sequential scans the plan's cost carries the planner's penalty
  // for the one it cannot avoid (job_definitions), far above JIT's
  // thresholds: compiled on every call, 1.1 s a read (as measured).
  EXPECT_EQ(p.find("JIT:"), std::string::npos) << p;
  EXPECT_NE(p.find("Index Cond: (job_definition_id = e.id)"), std::string::npos)
      << "the exclusive job's due run is looked up among its own unfinished runs, not merged with all of them\n"
      << p;
  // And the read does what it did: no exclusive run due, the queue is read.
  auto due = leader.due_runs(100, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  EXPECT_EQ(due->size(), 100u);
  const RunId v = run_of("vacuum");
  due = leader.due_runs(100, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u) << "an exclusive run is due: it alone";
  EXPECT_EQ(due->front().id, v);
}

}  // namespace
