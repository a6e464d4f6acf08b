// Run statistics over time (schemas/0039), against real PostgreSQL: the
// series the dashboard's charts draw (runs by outcome per bucket, live and
// rolled up alike, the backlog sampled, the epochs that led in the window),
// and the roll-up any node takes once a minute, one node at a time.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "overlap_fixture.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

namespace json = boost::json;

class RunStatsStoreTest : public OverlapStoreTest {
 protected:
  void SetUp() override { plain_jobs({"etl", "other"}); }
  json::object series(std::optional<std::string> job = std::nullopt, const std::string& window = "1h") {
    SeriesQuery q{window, window == "1h" ? 3600 : 86400, window == "1h" ? 60 : 900, job};
    auto r = admin.run_series(q);
    EXPECT_TRUE(r && *r) << (r ? "no series" : r.error().message);
    return r && *r ? json::parse(**r).as_object() : json::object{};
  }
  /// Sums of a field over every bucket.
  std::int64_t total(const json::object& s, const char* field) {
    std::int64_t n = 0;
    for (const auto& b : s.at("buckets").as_array())
      if (b.at(field).is_int64()) n += b.at(field).as_int64();
    return n;
  }
  int roll_up() {
    auto r = admin.roll_up_run_stats(20000);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : -1;
  }
};

TEST_F(RunStatsStoreTest, ASeriesCountsFinishedRunsByOutcomeInItsWindowPerJob) {
  end({run_of("etl"), run_of("etl")}, true);
  end(run_of("etl"), false);
  end(run_of("other"), true);
  auto all = series();
  EXPECT_EQ(all.at("window").as_string(), "1h");
  EXPECT_EQ(all.at("bucket_seconds").as_int64(), 60);
  EXPECT_EQ(all.at("buckets").as_array().size(), 60u);
  EXPECT_EQ(total(all, "succeeded"), 3);
  EXPECT_EQ(total(all, "failed"), 1);
  const auto& last = all.at("buckets").as_array().back().as_object();
  EXPECT_EQ(last.at("succeeded").as_int64() + last.at("failed").as_int64(), 4) << "the runs just finished";
  EXPECT_FALSE(last.at("duration_p50_ms").is_null());
  EXPECT_FALSE(last.at("start_latency_p95_ms").is_null());
  auto etl = series("etl");
  EXPECT_EQ(total(etl, "succeeded"), 2);
  EXPECT_EQ(total(etl, "failed"), 1);
  EXPECT_EQ(etl.at("job").as_string(), "etl");
  auto missing = admin.run_series(SeriesQuery{"1h", 3600, 60, std::string("nope")});
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing) << "an unknown job has no series";
}

TEST_F(RunStatsStoreTest, RolledUpMinutesOutliveTheirRunsAndAMinuteIsRolledOnce) {
  end({run_of("etl"), run_of("etl")}, true);
  end(run_of("etl"), false);
  // Ten minutes ago: whole minutes the roll-up takes.
  age("UPDATE job_runs SET created_at = created_at - interval '10 minutes', started_at = started_at -"
      " interval '10 minutes', finished_at = finished_at - interval '10 minutes'");
  EXPECT_EQ(roll_up(), 0) << "caught up in one step";
  EXPECT_EQ(text("SELECT sum(succeeded) || '/' || sum(failed) FROM run_stats_minutes"), "2/1");
  // The runs gone (retention): the chart still shows them.
  age("DELETE FROM job_runs");
  auto s = series("etl");
  EXPECT_EQ(total(s, "succeeded"), 2);
  EXPECT_EQ(total(s, "failed"), 1);
  // The 24-hour window's buckets are 15 minutes.
  auto day = series(std::nullopt, "24h");
  EXPECT_EQ(day.at("bucket_seconds").as_int64(), 900);
  EXPECT_EQ(total(day, "succeeded"), 2);
  // A second step rolls nothing twice.
  EXPECT_EQ(roll_up(), 0);
  EXPECT_EQ(text("SELECT sum(succeeded) FROM run_stats_minutes"), "2");
}

TEST_F(RunStatsStoreTest, TheBacklogIsSampledClusterWideAndARollUpInProgressElsewhereIsANoOp) {
  run_of("etl");
  run_of("etl");
  run_of("other");
  {
    // Another node rolling up (it holds the lock): this one does nothing.
    pqxx::connection other(url);
    pqxx::work tx(other);
    tx.exec("SELECT pg_advisory_xact_lock(200926003900039)");
    EXPECT_EQ(roll_up(), 0);
    EXPECT_EQ(text("SELECT count(*) FROM run_backlog_samples"), "0");
  }
  roll_up();
  EXPECT_EQ(text("SELECT pending FROM run_backlog_samples"), "3");
  auto s = series();
  const auto& last = s.at("buckets").as_array().back().as_object();
  EXPECT_EQ(last.at("pending").as_int64(), 3);
  EXPECT_TRUE(series("etl").at("buckets").as_array().back().at("pending").is_null())
      << "the backlog is sampled for the cluster, not per job";
}

TEST_F(RunStatsStoreTest, TheEpochsThatLedInTheWindowComeWithTheSeries) {
  const Epoch second = force_election(url, "n2");
  auto s = series();
  const auto& epochs = s.at("epochs").as_array();
  ASSERT_GE(epochs.size(), 2u);
  EXPECT_EQ(epochs.back().at("epoch").as_int64(), second.value);
  EXPECT_EQ(epochs.back().at("leader_id").as_string(), "n2");
  EXPECT_EQ(epochs[epochs.size() - 2].at("leader_id").as_string(), "n1");
  // Elected long before the window: only the epoch leading at its start.
  age("UPDATE epoch_history SET elected_at = elected_at - interval '3 hours'");
  auto later = series();
  ASSERT_EQ(later.at("epochs").as_array().size(), 1u);
  EXPECT_EQ(later.at("epochs").as_array()[0].at("epoch").as_int64(), second.value);
}

}  // namespace
