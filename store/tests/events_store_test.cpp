// Events and run-after dependencies against real PostgreSQL: one run per
// subscribed job and event, the event marked processed in the same fenced
// statement; a dedupe key records an event once; a success of a job others
// run after becomes an event carrying the run's id.
#include <gtest/gtest.h>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class EventsStoreTest : public ElectedStoreTest {
 protected:
  EventsStoreTest() : ElectedStoreTest("events") {}

  void job(const std::string& name, std::vector<std::string> on_events, std::vector<std::string> run_after = {}) {
    JobDefinition j;
    j.name = name;
    j.on_events = std::move(on_events);
    j.run_after = std::move(run_after);
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
};

}  // namespace

TEST_F(EventsStoreTest, EachSubscriberGetsOneRunPerEventAndADedupeKeyRecordsOnce) {
  job("deployer", {"deploy"});
  job("notifier", {"deploy", "alert"});
  job("bystander", {"other"});
  auto first = admin.post_event(Actor{"test", epoch}, "deploy", R"({"version":"1.2"})", std::string("d-1"));
  ASSERT_TRUE(first);
  EXPECT_NE(first->json.find("\"created\":true"), std::string::npos) << first->json;
  auto again = admin.post_event(Actor{"test", epoch}, "deploy", R"({"version":"1.2"})", std::string("d-1"));
  ASSERT_TRUE(again);
  EXPECT_NE(again->json.find("\"created\":false"), std::string::npos) << again->json;
  EXPECT_EQ(text("SELECT count(*) FROM events"), "1");

  auto p = leader.process_events(epoch, 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->events, 1);
  EXPECT_EQ(p->runs, 2);
  EXPECT_EQ(text("SELECT string_agg(j.name, ',' ORDER BY j.name) FROM job_runs r JOIN job_definitions j"
                 " ON j.id = r.job_definition_id WHERE r.trigger_kind = 'event'"),
            "deployer,notifier");
  EXPECT_EQ(text("SELECT payload->'event'->'payload'->>'version' FROM job_runs LIMIT 1"), "1.2");
  EXPECT_EQ(text("SELECT count(*) FROM decision_ledger WHERE reason = 'event'"), "2");
  // Processed once: nothing more, however often it is asked.
  EXPECT_EQ(leader.process_events(epoch, 100)->events, 0);
  EXPECT_EQ(text("SELECT count(*) FROM job_runs"), "2");
}

TEST_F(EventsStoreTest, AStaleLeaderProcessesNothing) {
  job("deployer", {"deploy"});
  ASSERT_TRUE(admin.post_event(Actor{"test", epoch}, "deploy", "{}", std::nullopt));
  const Epoch newer = force_election(url, "n2");
  auto p = leader.process_events(epoch, 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->current_epoch, newer);
  EXPECT_EQ(p->events, 0);
  EXPECT_EQ(text("SELECT count(*) FROM events WHERE processed_at IS NULL"), "1");
  EXPECT_EQ(leader.process_events(newer, 100)->runs, 1) << "the new leader delivers it";
}

TEST_F(EventsStoreTest, ASuccessOfAnUpstreamJobRunsItsDependentsWithTheRunsId) {
  job("extract", {});
  job("load", {}, {"extract"});
  job("unrelated", {});
  auto run_of = [&](const std::string& name) {
    return admin.trigger(Actor{"test", epoch}, name, std::nullopt, std::nullopt)->run;
  };
  auto succeed = [&](RunId id) {
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    AttemptFence f{"w1", a->attempt, a->lease_token};
    auto s = runs.start({id, a->new_version, epoch}, f, Millis{1000});
    Finish fin;
    fin.final_state = RunState::succeeded;
    ASSERT_EQ(runs.finish({id, s->new_version, epoch}, f, fin)->outcome, WriteOutcome::applied);
  };
  const RunId upstream = run_of("extract");
  succeed(upstream);
  succeed(run_of("unrelated"));
  EXPECT_EQ(text("SELECT string_agg(kind, ',') FROM events"), "job.succeeded:extract")
      << "only successes something runs after are events";
  auto p = leader.process_events(epoch, 100);
  ASSERT_EQ(p->runs, 1);
  EXPECT_EQ(text("SELECT payload->>'upstream_run_id' FROM job_runs WHERE trigger_kind = 'event'"),
            std::to_string(upstream.value));
  EXPECT_EQ(text("SELECT payload->>'upstream_job' FROM job_runs WHERE trigger_kind = 'event'"), "extract");
}

// Several successes in one batched finish: each success of a job something
// runs after is one event (deduplicated by run); a self-destructing job is
// retired once, by its first success, with one audit record; a failure
// retires nothing.
TEST_F(EventsStoreTest, SuccessesInOneBatchMakeOneEventEachAndRetireASelfDestructingJobOnce) {
  job("extract", {});
  job("load", {}, {"extract"});
  JobDefinition once;
  once.name = "once";
  once.self_destruct = true;
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, once));
  JobDefinition also_once = once;
  also_once.name = "also-once";
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, also_once));
  std::vector<FinishRow> rows;
  auto running = [&](const std::string& name, RunState outcome) {
    const RunId id = admin.trigger(Actor{"test", epoch}, name, std::nullopt, std::nullopt)->run;
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    AttemptFence f{"w1", a->attempt, a->lease_token};
    auto st = runs.start({id, a->new_version, epoch}, f, Millis{1000});
    FinishRow row;
    row.run = id;
    row.expected_version = st->new_version;
    row.attempt = f;
    row.finish.final_state = outcome;
    if (outcome != RunState::succeeded) row.finish.error_code = "failed";
    rows.push_back(row);
    return id;
  };
  const RunId e1 = running("extract", RunState::succeeded);
  const RunId e2 = running("extract", RunState::succeeded);
  running("once", RunState::succeeded);
  running("once", RunState::succeeded);
  running("also-once", RunState::failed);
  auto done = runs.finish_batch(epoch, rows);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->applied.size(), rows.size());
  EXPECT_EQ(text("SELECT string_agg(dedupe_key, ',' ORDER BY id) FROM events"),
            "run-succeeded:" + std::to_string(e1.value) + ",run-succeeded:" + std::to_string(e2.value));
  EXPECT_EQ(text("SELECT string_agg(name, ',' ORDER BY name) FROM job_definitions WHERE deleted_at IS NOT NULL"),
            "once");
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE action = 'job.self_destruct'"), "1");
  EXPECT_EQ(text("SELECT subject FROM audit_log WHERE action = 'job.self_destruct'"), "job:once");
}

TEST_F(EventsStoreTest, APausedSubscriberGetsNoRun) {
  job("deployer", {"deploy"});
  ASSERT_TRUE(admin.set_job_paused(Actor{"test", epoch}, "deployer", true));
  ASSERT_TRUE(admin.post_event(Actor{"test", epoch}, "deploy", "{}", std::nullopt));
  auto p = leader.process_events(epoch, 100);
  EXPECT_EQ(p->events, 1);
  EXPECT_EQ(p->runs, 0);
}
