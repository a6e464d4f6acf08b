// SPEC 2.66: every query of the run path is served by an index. The run
// table is populated as a cluster's is (mostly finished runs, a few open
// ones) and analyzed; then every statement the product prepares (the run
// store's fenced writes, the triggers, the dispatcher's due read) is
// EXPLAINed with the generic plan the product runs, and none may read
// job_runs with a sequential scan.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "../pg/due_runs_read.h"
#include "../pg/run_transitions_sql.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class QueryPlans : public ElectedStoreTest {
 protected:
  QueryPlans() : ElectedStoreTest("query_plans") {}

  // `n` runs of one job, one in twenty still PENDING, the rest finished
  // over the last hours; written past the write guards, as only a test may.
  void populate(int n) {
    JobDefinition j;
    j.name = "planned";
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
    age("INSERT INTO job_runs (job_definition_id, state, leader_epoch, created_at, started_at, finished_at)"
        " SELECT (SELECT id FROM job_definitions WHERE name = 'planned'),"
        " CASE WHEN g % 20 = 0 THEN 'PENDING' ELSE 'SUCCEEDED' END, " +
        std::to_string(epoch.value) +
        ", now() - g * interval '1 second',"
        " CASE WHEN g % 20 = 0 THEN NULL ELSE now() - g * interval '1 second' END,"
        " CASE WHEN g % 20 = 0 THEN NULL ELSE now() - g * interval '1 second' + interval '50 milliseconds' END"
        " FROM generate_series(1, " +
        std::to_string(n) + ") g");
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("ANALYZE job_runs");
  }

  // The generic plan of prepared statement `name` (with `params`
  // parameters), as the product's connections run it.
  static std::string plan_of(pqxx::nontransaction& tx, const std::string& name, int params) {
    std::string args;
    for (int i = 0; i < params; ++i) args += (i ? ", NULL" : "NULL");
    std::string plan;
    for (const auto& r : tx.exec("EXPLAIN EXECUTE " + name + (params ? "(" + args + ")" : "")))
      plan += r[0].as<std::string>() + "\n";
    return plan;
  }
};

}  // namespace

TEST_F(QueryPlans, NoStatementTheProductPreparesScansTheRunTable) {
  populate(20000);
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  for (const auto& s : statements()) tx.exec("PREPARE " + std::string(s.name) + " AS " + s.sql);
  tx.exec("PREPARE trigger_run AS " + trigger_run_sql());
  tx.exec("PREPARE trigger_batch AS " + trigger_batch_sql());
  tx.exec(due_runs_statement());
  // A control: a read by a column no index holds must be caught.
  tx.exec("PREPARE control_unindexed AS SELECT id FROM job_runs WHERE payload ->> 'customer' = $1");
  tx.exec("SET plan_cache_mode = force_generic_plan");

  std::vector<std::string> scanning;
  int examined = 0;
  for (const auto& r : tx.exec("SELECT name, cardinality(parameter_types) FROM pg_prepared_statements ORDER BY name")) {
    const std::string name = r[0].as<std::string>();
    // The due read runs with its own settings (due_runs_settings), in the
    // same simple query as its EXECUTE.
    if (name == "due_runs") tx.exec("SET enable_seqscan = off");
    const std::string plan = plan_of(tx, name, r[1].as<int>());
    if (name == "due_runs") tx.exec("RESET enable_seqscan");
    ++examined;
    if (plan.find("Seq Scan on job_runs") != std::string::npos) scanning.push_back(name + ":\n" + plan);
  }
  ASSERT_FALSE(scanning.empty()) << "the control was not caught";
  EXPECT_EQ(scanning.front().substr(0, scanning.front().find(':')), "control_unindexed");
  scanning.erase(scanning.begin());
  EXPECT_GE(examined, 25) << "every statement of the run store, the triggers and the due read";
  for (const auto& s : scanning) ADD_FAILURE() << "a sequential scan of job_runs in " << s;
}
