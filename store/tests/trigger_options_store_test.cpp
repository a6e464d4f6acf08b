// What a trigger may say beyond its parameters (schemas/0036, 0037) against
// real PostgreSQL: a run's own priority and timeout within what its job
// allows, through the API's trigger, its batch and baton.trigger alike; the
// batch inserts every run in one statement, or none.
#include <gtest/gtest.h>

#include "baton/store_pg/migrate.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class TriggerOptionsTest : public ElectedStoreTest {
 protected:
  TriggerOptionsTest() : ElectedStoreTest("trigopts") {
    JobDefinition j;
    j.name = "report";
    j.priority = 5;
    j.timeout_ms = 60000;
    j.parameter_rules_json = R"({"customer": {}})";
    EXPECT_TRUE(admin.create_job(Actor{"test", epoch}, j));
    j.name = "unbounded";
    j.priority = 0;
    j.timeout_ms = 0;
    EXPECT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }

  TriggerItem item(const std::string& job, std::optional<std::string> key, TriggerOptions o = {}) {
    return TriggerItem{job, std::move(key), std::nullopt, o};
  }
  std::string runs() { return text("SELECT count(*) FROM job_runs"); }
};

}  // namespace

TEST_F(TriggerOptionsTest, ARunsOwnPriorityAndTimeoutReachTheDispatcher) {
  auto t = admin.trigger(Actor{"test", epoch}, "report", std::nullopt, std::nullopt,
                         TriggerOptions{std::nullopt, -20, 15000});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->outcome, WriteOutcome::applied) << t->parameters_refused.value_or("");
  auto plain = admin.trigger(Actor{"test", epoch}, "report", std::nullopt, std::nullopt);
  auto due = leader.due_runs(10, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 2u);
  // Dispatch order: the job's priority first, the lowered run after it.
  EXPECT_EQ((*due)[0].id, plain->run);
  EXPECT_EQ((*due)[0].priority, 5);
  EXPECT_EQ((*due)[0].timeout_ms, 60000);
  EXPECT_EQ((*due)[1].id, t->run);
  EXPECT_EQ((*due)[1].priority, -20);
  EXPECT_EQ((*due)[1].timeout_ms, 15000);
}

TEST_F(TriggerOptionsTest, AnOptionBeyondWhatTheJobAllowsIsRefusedAndNothingInserted) {
  auto higher = admin.trigger(Actor{"test", epoch}, "report", std::nullopt, std::nullopt,
                              TriggerOptions{std::nullopt, 6, std::nullopt});
  ASSERT_TRUE(higher);
  EXPECT_EQ(higher->parameters_refused.value_or(""),
            "priority 6 is outside what the job allows: from -1000 up to the job's own priority, 5");
  auto longer = admin.trigger(Actor{"test", epoch}, "report", std::nullopt, std::nullopt,
                              TriggerOptions{std::nullopt, std::nullopt, 60001});
  ASSERT_TRUE(longer);
  EXPECT_EQ(longer->parameters_refused.value_or(""),
            "timeout 60001 ms is longer than the job allows (its own timeout, 60000 ms)");
  EXPECT_EQ(runs(), "0");
  // A job without a timeout takes any.
  auto any = admin.trigger(Actor{"test", epoch}, "unbounded", std::nullopt, std::nullopt,
                           TriggerOptions{std::nullopt, std::nullopt, 86400000});
  ASSERT_TRUE(any);
  EXPECT_EQ(any->outcome, WriteOutcome::applied);
}

TEST_F(TriggerOptionsTest, ABatchInsertsEveryRunInOneStatementAndARepeatGivesTheSameRuns) {
  std::vector<TriggerItem> batch{item("report", "b-1", TriggerOptions{std::nullopt, 1, 1000}), item("unbounded", "b-2"),
                                 item("report", std::nullopt)};
  batch[0].payload_json = R"({"parameters": {"customer": "acme"}})";
  auto first = admin.trigger_batch(Actor{"test", epoch}, batch);
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->applied);
  ASSERT_EQ(first->items.size(), 3u);
  for (const auto& i : first->items) EXPECT_TRUE(i.created.has_value());
  EXPECT_EQ(runs(), "3");
  EXPECT_EQ(text("SELECT priority || ' ' || timeout_ms || ' ' || (payload->'parameters'->>'customer') FROM job_runs"
                 " WHERE id = " +
                 std::to_string(first->items[0].created->value)),
            "1 1000 acme");
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'job.trigger' AND details->>'batch' = 'true'"), "3");

  // The same batch again (a client that lost the answer): the keyed runs
  // are given back, the unkeyed one is new.
  auto again = admin.trigger_batch(Actor{"test", epoch}, batch);
  ASSERT_TRUE(again);
  ASSERT_TRUE(again->applied);
  EXPECT_EQ(again->items[0].existing, first->items[0].created);
  EXPECT_EQ(again->items[1].existing, first->items[1].created);
  EXPECT_TRUE(again->items[2].created.has_value());
  EXPECT_EQ(runs(), "4");

  // One key twice in a batch: one run, named by both.
  auto twice = admin.trigger_batch(Actor{"test", epoch}, {item("report", "b-3"), item("report", "b-3")});
  ASSERT_TRUE(twice);
  ASSERT_TRUE(twice->items[0].created.has_value());
  EXPECT_EQ(twice->items[1].existing, twice->items[0].created);
  EXPECT_EQ(runs(), "5");
}

TEST_F(TriggerOptionsTest, ABatchWithOneRefusedRunInsertsNone) {
  auto r = admin.trigger_batch(Actor{"test", epoch},
                               {item("report", "c-1"), item("nope", "c-2"),
                                item("report", "c-3", TriggerOptions{std::nullopt, 99, std::nullopt})});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->applied);
  EXPECT_FALSE(r->items[0].refused.has_value());
  EXPECT_FALSE(r->items[0].created.has_value());
  EXPECT_EQ(r->items[1].refused.value_or(""), "unknown job 'nope'");
  EXPECT_NE(r->items[2].refused.value_or("").find("priority 99 is outside"), std::string::npos);
  std::vector<TriggerItem> bad_parameters{item("report", "c-4")};
  bad_parameters[0].payload_json = R"({"parameters": {"region": "eu"}})";
  auto p = admin.trigger_batch(Actor{"test", epoch}, bad_parameters);
  ASSERT_TRUE(p);
  EXPECT_NE(p->items[0].refused.value_or("").find("parameter 'region' is not declared"), std::string::npos);
  EXPECT_EQ(runs(), "0");
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'job.trigger'"), "0");
}

TEST_F(TriggerOptionsTest, AStaleNodesBatchInsertsNothing) {
  const Epoch newer = force_election(url, "n2");
  auto r = admin.trigger_batch(Actor{"test", epoch}, {item("report", "d-1")});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->current_epoch, newer);
  EXPECT_FALSE(r->applied);
  EXPECT_EQ(runs(), "0");
}

TEST_F(TriggerOptionsTest, TheSqlSubmissionTakesThemTooAndRefusesBeyondTheJob) {
  const std::string role = url.substr(url.rfind('/') + 1) + "_app";
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE ROLE " + c.quote_name(role) + " LOGIN");
  }
  ASSERT_TRUE(grant_submitter_role(url, role));
  const std::string app = "postgresql://" + role + "@" + url.substr(url.find('@') + 1);
  EXPECT_NE(scalar_text(app, "SELECT baton.trigger('report', NULL, NULL, NULL, -3, interval '20 seconds')"), "NULL");
  bool refused = false;
  try {
    scalar_text(app, "SELECT baton.trigger('report', NULL, NULL, NULL, NULL, interval '2 minutes')");
  } catch (const std::exception& e) {
    refused = std::string(e.what()).find("timeout 120000 ms is longer than the job allows") != std::string::npos;
  }
  EXPECT_TRUE(refused);
  auto p = leader.process_submissions(epoch, 10, {});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->runs, 1);
  EXPECT_EQ(text("SELECT priority || ' ' || timeout_ms FROM job_runs"), "-3 20000");
}

// SPEC 10.11: a batch that is a bulk load (100 runs or more, a fifth of
// the run table or more) analyzes the run table in its own transaction, so
// the planner counts its runs before the leader reads them; a smaller
// batch, or a batch into a table five times its size, does not.
// pg_class.reltuples is what ANALYZE sets (-1: never analyzed).
TEST_F(TriggerOptionsTest, ABulkLoadBatchAnalyzesTheRunTableAndASmallOneDoesNot) {
  auto batch_of = [&](int n) {
    std::vector<TriggerItem> batch;
    for (int i = 0; i < n; ++i) batch.push_back(item("unbounded", std::nullopt));
    auto r = admin.trigger_batch(Actor{"test", epoch}, batch);
    EXPECT_TRUE(r && r->applied);
  };
  const std::string counted = "SELECT reltuples::bigint FROM pg_class WHERE oid = 'job_runs'::regclass";
  batch_of(99);
  EXPECT_EQ(text(counted), "-1") << "99 runs: not a bulk load";
  batch_of(500);
  EXPECT_EQ(text(counted), "599") << "500 runs into 99: analyzed before the commit";
  batch_of(100);
  EXPECT_EQ(text(counted), "599") << "100 runs into 599: under a fifth, left to autovacuum";
  batch_of(150);
  EXPECT_EQ(text(counted), "849") << "150 runs into 699: a fifth or more";
}
