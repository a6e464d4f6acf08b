// Health and statistics in SQL (schemas/0029): the views an operator queries
// without Prometheus, against real PostgreSQL: workers by freshness, the
// backlog per job with its oldest waiting age, dead letters by triage
// status, and per-job statistics over the last hour and day (also read by
// PgAdminStore::job_stats for the API and ctl).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class HealthViewsTest : public ElectedStoreTest {
 protected:
  HealthViewsTest() : ElectedStoreTest("health_views") {}

  void define(const std::string& name, int max_attempts = 1) {
    JobDefinition j;
    j.name = name;
    j.max_attempts = max_attempts;
    ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, j));
  }
  RunId trigger(const std::string& job) {
    return admin.trigger(Actor{"test", epoch}, job, std::nullopt, std::nullopt)->run;
  }
  /// A run of `job` taken to `final_state`, its attempt lasting `ms`.
  RunId finished(const std::string& job, RunState final_state, int ms) {
    const RunId id = trigger(job);
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    AttemptFence f{"w1", a->attempt, a->lease_token};
    auto s = runs.start({id, a->new_version, epoch}, f, Millis{1000});
    Finish fin;
    fin.final_state = final_state;
    EXPECT_EQ(runs.finish({id, s->new_version, epoch}, f, fin)->outcome, WriteOutcome::applied);
    age("UPDATE job_runs SET started_at = finished_at - " + std::to_string(ms) +
        " * interval '1 millisecond' WHERE id = " + std::to_string(id.value));
    return id;
  }
  std::string row(const std::string& sql) { return text(sql); }
};

}  // namespace

TEST_F(HealthViewsTest, WorkersAreClassedByTheAgeOfTheirLastRecordedHeartbeat) {
  age("INSERT INTO workers (worker_id, state, last_heartbeat_at) VALUES"
      " ('w-fresh', 'ATTACHED', now() - interval '2 seconds'),"
      " ('w-warning', 'ATTACHED', now() - interval '30 seconds'),"
      " ('w-stale', 'ATTACHED', now() - interval '10 minutes'),"
      " ('w-never', 'ATTACHED', NULL),"
      " ('w-gone', 'DETACHED', now() - interval '10 minutes')");
  EXPECT_EQ(row("SELECT string_agg(worker_id || '=' || freshness, ' ' ORDER BY worker_id) FROM baton_worker_health"),
            "w-fresh=fresh w-gone=detached w-never=stale w-stale=stale w-warning=warning");
  // The registry's cadence at this size: every 5 s.
  EXPECT_EQ(row("SELECT DISTINCT recorded_every_s::text FROM baton_worker_health"), "5.0");
}

TEST_F(HealthViewsTest, TheBacklogCountsUnfinishedRunsPerJobAndAgesTheOldestThatCouldStart) {
  define("reports");
  define("quiet");
  const RunId old = trigger("reports");
  trigger("reports");
  const RunId held = trigger("reports");
  runs.assign({held, Version{1}, epoch}, "w1");
  finished("quiet", RunState::succeeded, 10);
  age("UPDATE job_runs SET created_at = now() - interval '90 seconds' WHERE id = " + std::to_string(old.value));
  EXPECT_EQ(row("SELECT pending || ' ' || assigned || ' ' || running || ' ' || (oldest_waiting_s >= 90"
                " AND oldest_waiting_s < 120) FROM baton_job_backlog WHERE job = 'reports'"),
            "2 1 0 true");
  // A job whose runs all finished has no backlog row.
  EXPECT_EQ(row("SELECT count(*) FROM baton_job_backlog WHERE job = 'quiet'"), "0");
}

TEST_F(HealthViewsTest, DeadLettersAreSummedByJobAndTriageStatus) {
  define("flaky");
  finished("flaky", RunState::failed, 5);
  finished("flaky", RunState::timed_out, 5);
  age("UPDATE dead_letters SET triage_status = 'acknowledged' WHERE id = (SELECT min(id) FROM dead_letters)");
  EXPECT_EQ(row("SELECT string_agg(triage_status || '=' || letters, ' ' ORDER BY triage_status)"
                " FROM baton_dead_letter_summary WHERE job = 'flaky'"),
            "acknowledged=1 pending=1");
}

TEST_F(HealthViewsTest, StatisticsCoverTheLastHourAndDayAndOutliveTheLeaderThatWroteThem) {
  define("etl");
  for (int ms : {100, 200, 300, 400, 1000}) finished("etl", RunState::succeeded, ms);
  finished("etl", RunState::failed, 50);
  const RunId yesterday = finished("etl", RunState::succeeded, 5000);
  age("UPDATE job_runs SET finished_at = now() - interval '3 hours', started_at = now() - interval '3 hours'"
      " - interval '5 seconds' WHERE id = " +
      std::to_string(yesterday.value));
  EXPECT_EQ(row("SELECT runs || ' ' || succeeded || ' ' || failed || ' ' || duration_p50_ms"
                " FROM baton_job_stats WHERE job = 'etl' AND \"window\" = '1h'"),
            "6 5 1 250.0");
  EXPECT_EQ(row("SELECT runs || ' ' || succeeded FROM baton_job_stats WHERE job = 'etl' AND \"window\" = '24h'"),
            "7 6");
  // A new leader reads the same: the statistics are in the run table.
  const Epoch next = force_election(url, "n2");
  ASSERT_GT(next, epoch);
  PgAdminStore other{url, "test-admin-2"};
  auto stats = other.job_stats("etl");
  ASSERT_TRUE(stats && *stats);
  const auto o = boost::json::parse(**stats).as_object();
  const auto& hour = o.at("windows").at("1h").as_object();
  EXPECT_EQ(hour.at("runs").as_int64(), 6);
  EXPECT_EQ(hour.at("failed").as_int64(), 1);
  EXPECT_GT(hour.at("duration_p95_ms").to_number<double>(), 800.0);
  EXPECT_EQ(o.at("windows").at("24h").at("runs").as_int64(), 7);
  EXPECT_EQ(o.at("backlog").at("pending").as_int64(), 0);
  // No such job: nothing, not zeros.
  auto none = other.job_stats("no-such-job");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

// Seed 000: stale = RUNNING and stale_after < now(). A running run whose
// heartbeats are recorded is not stale; one whose stale_after passed is, with
// how long; a run in another state never is.
TEST_F(HealthViewsTest, StaleRunsAreRunningRunsWhoseStaleAfterHasPassed) {
  define("watched");
  auto running = [&] {
    const RunId id = trigger("watched");
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    AttemptFence f{"w1", a->attempt, a->lease_token};
    EXPECT_EQ(runs.start({id, a->new_version, epoch}, f, Millis{60000})->outcome, WriteOutcome::applied);
    return id;
  };
  const RunId fresh = running();
  const RunId silent = running();
  const RunId waiting = trigger("watched");
  age("UPDATE job_runs SET stale_after = now() - interval '40 seconds' WHERE id IN (" + std::to_string(silent.value) +
      ", " + std::to_string(waiting.value) + ")");
  EXPECT_EQ(row("SELECT string_agg(run_id::text, ',') FROM baton_stale_runs"), std::to_string(silent.value));
  EXPECT_EQ(row("SELECT stale_for_s >= 40 AND stale_for_s < 60 FROM baton_stale_runs"), "t");
  EXPECT_EQ(row("SELECT count(*) FROM baton_stale_runs WHERE run_id = " + std::to_string(fresh.value)), "0");
  // What psql's \d+ shows of it (schemas/0053): a leaderless gap lists
  // every RUNNING run, and the timeout is the worker's own.
  const std::string comment = row("SELECT obj_description('baton_stale_runs'::regclass, 'pg_class')");
  EXPECT_NE(comment.find("During a leaderless gap"), std::string::npos) << comment;
  EXPECT_NE(comment.find("every RUNNING run shows here"), std::string::npos) << comment;
  EXPECT_NE(comment.find("worker's own heartbeat timeout"), std::string::npos) << comment;
}
