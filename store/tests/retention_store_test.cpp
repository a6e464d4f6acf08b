// Retention against real PostgreSQL: prune removes finished runs (with their
// attempts, transitions and logs), ledger entries, processed events and
// triaged dead letters older than retention_days, in bounded batches, fenced;
// untriaged dead letters and unfinished runs stay; a job with runs can be
// hard-deleted (its runs are detached, not rewritten).
#include <gtest/gtest.h>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class RetentionStoreTest : public ElectedStoreTest {
 protected:
  RetentionStoreTest() : ElectedStoreTest("retention") {}

  RunId finished_run(const std::string& job, RunState final_state) {
    auto id = admin.trigger(Actor{"test", epoch}, job, std::nullopt, std::nullopt)->run;
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    AttemptFence f{"w1", a->attempt, a->lease_token};
    auto s = runs.start({id, a->new_version, epoch}, f, Millis{1000});
    Finish fin;
    fin.final_state = final_state;
    EXPECT_EQ(runs.finish({id, s->new_version, epoch}, f, fin)->outcome, WriteOutcome::applied);
    EXPECT_TRUE(leader.append_run_log(id, 1, "stdout", "output"));
    return id;
  }
};

}  // namespace

TEST_F(RetentionStoreTest, PrunesWhatIsOlderThanTheRetentionAndKeepsWhatMustStay) {
  JobDefinition j;
  j.name = "old";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  const RunId old_ok = finished_run("old", RunState::succeeded);
  const RunId old_failed = finished_run("old", RunState::failed);  // its dead letter stays untriaged
  const RunId recent = finished_run("old", RunState::succeeded);
  const RunId pending = admin.trigger(Actor{"test", epoch}, "old", std::nullopt, std::nullopt)->run;
  ASSERT_TRUE(admin.post_event(Actor{"test", epoch}, "k", "{}", std::nullopt));
  ASSERT_EQ(leader.process_events(epoch, 10)->events, 1);
  age("UPDATE job_runs SET finished_at = now() - interval '40 days' WHERE id IN (" + std::to_string(old_ok.value) +
      "," + std::to_string(old_failed.value) + ")");
  age("UPDATE job_runs SET created_at = now() - interval '40 days' WHERE id = " + std::to_string(pending.value));
  age("UPDATE events SET processed_at = now() - interval '40 days'");
  age("INSERT INTO decision_ledger (epoch, decision, at) VALUES (1, 'created', now() - interval '40 days')");
  age("INSERT INTO dead_letters (run_id, final_state, attempts, run_snapshot, triage_status, updated_at)"
      " VALUES (999999, 'FAILED', 1, '{}', 'closed', now() - interval '40 days')");
  // Rate permits (schemas/0035): one expired two days ago, one expired a
  // minute ago, one still taken.
  for (const char* until : {"now() - interval '2 days'", "now() - interval '1 minute'", "now() + interval '1 hour'"})
    age(std::string("INSERT INTO rate_permits (job_definition_id, rate_key, slot, taken_at, until, run_id, attempt,"
                    " epoch) SELECT id, '', (SELECT count(*) + 1 FROM rate_permits), now() - interval '3 days', ") +
        until + ", 1, 1, 1 FROM job_definitions WHERE name = 'old'");

  auto p = leader.prune(epoch, 500);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->runs, 2);
  EXPECT_EQ(p->ledger, 1);
  EXPECT_EQ(p->events, 1);
  EXPECT_EQ(p->dead_letters, 1);
  const std::string gone = std::to_string(old_ok.value) + "," + std::to_string(old_failed.value);
  for (const char* table : {"job_runs WHERE id", "job_run_attempts WHERE run_id", "job_run_transitions WHERE run_id",
                            "run_logs WHERE run_id"})
    EXPECT_EQ(text(std::string("SELECT count(*) FROM ") + table + " IN (" + gone + ")"), "0") << table;
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE id IN (" + std::to_string(recent.value) + "," +
                 std::to_string(pending.value) + ")"),
            "2")
      << "recent and unfinished runs stay";
  EXPECT_EQ(text("SELECT count(*) FROM dead_letters WHERE run_id = " + std::to_string(old_failed.value)), "1")
      << "an untriaged dead letter stays";
  EXPECT_EQ(text("SELECT count(*) FROM rate_permits"), "2") << "only the permit expired a day ago goes";
  EXPECT_EQ(leader.prune(epoch, 500)->runs, 0);

  // A live setting: 1 day keeps nothing older than a day.
  age("UPDATE job_runs SET finished_at = now() - interval '2 days' WHERE id = " + std::to_string(recent.value));
  ASSERT_TRUE(admin.set_setting(Actor{"test", epoch}, "retention_days", "1"));
  EXPECT_EQ(leader.prune(epoch, 500)->runs, 1);
}

TEST_F(RetentionStoreTest, AStaleLeaderPrunesNothingAndBatchesAreBounded) {
  JobDefinition j;
  j.name = "many";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  for (int i = 0; i < 5; ++i) finished_run("many", RunState::succeeded);
  age("UPDATE job_runs SET finished_at = now() - interval '40 days'");
  const Epoch newer = force_election(url, "n2");
  EXPECT_EQ(leader.prune(epoch, 500)->runs, 0);
  EXPECT_EQ(leader.prune(newer, 2)->runs, 2);
  EXPECT_EQ(leader.prune(newer, 2)->runs, 2);
  EXPECT_EQ(leader.prune(newer, 2)->runs, 1);
}

TEST_F(RetentionStoreTest, AJobWithRunsCanBeHardDeleted) {
  JobDefinition j;
  j.name = "doomed";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  const RunId id = finished_run("doomed", RunState::succeeded);
  const std::string transitions = text("SELECT count(*) FROM job_run_transitions");
  {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec("DELETE FROM job_definitions WHERE name = 'doomed'");
    tx.commit();
  }
  EXPECT_EQ(text("SELECT job_definition_id FROM job_runs WHERE id = " + std::to_string(id.value)), "NULL");
  EXPECT_EQ(text("SELECT count(*) FROM job_run_transitions"), transitions) << "a detach is not a write of the run";
}
