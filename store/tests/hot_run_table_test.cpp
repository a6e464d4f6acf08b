// The run table of schemas/0021 (SPEC section 2, amended 2026-11-26): no
// index contains a column that an assignment, a start or a heartbeat
// writes, so those updates are HOT; and a database populated under the
// schema before it keeps every run, attempt and transition across the
// upgrade.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <set>

#include "baton/store_pg/migrate.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

// Every column an assignment (single or batched, from PENDING, ORPHANED or
// RETRY_WAITING), a start or a heartbeat writes (store/pg/run_transitions.cpp).
const std::set<std::string> hot_columns = {"state",
                                           "version",
                                           "attempt",
                                           "leader_epoch",
                                           "assigned_worker_id",
                                           "lease_token",
                                           "assigned_at",
                                           "started_at",
                                           "heartbeat_at",
                                           "stale_after",
                                           "updated_at",
                                           "worker_instance",
                                           "continuation_state",
                                           "continuation_deadline_at",
                                           "continuation_timeout_ms"};

// The columns each index of job_runs depends on: its key columns, and every
// column named in its expressions or its predicate; a generated column
// counts as the columns it is computed from.
std::map<std::string, std::set<std::string>> index_columns(const std::string& url) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  std::map<std::string, std::set<std::string>> out;
  auto rows = tx.exec(
      "SELECT ic.relname, a.attname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
      " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attisdropped"
      " WHERE i.indrelid = 'job_runs'::regclass"
      " AND (a.attnum = ANY (i.indkey)"
      "  OR coalesce(pg_get_expr(i.indexprs, i.indrelid), '') ~ ('\\m' || a.attname || '\\M')"
      "  OR coalesce(pg_get_expr(i.indpred, i.indrelid), '') ~ ('\\m' || a.attname || '\\M'))");
  for (const auto& r : rows) out[r[0].as<std::string>()].insert(r[1].as<std::string>());
  // Generated columns: what they are computed from.
  std::map<std::string, std::set<std::string>> generated;
  for (const auto& r : tx.exec("SELECT g.attname, a.attname FROM pg_attribute g"
                               " JOIN pg_attrdef d ON d.adrelid = g.attrelid AND d.adnum = g.attnum"
                               " JOIN pg_attribute a ON a.attrelid = g.attrelid AND a.attnum > 0"
                               " WHERE g.attrelid = 'job_runs'::regclass AND g.attgenerated = 's'"
                               " AND pg_get_expr(d.adbin, d.adrelid) ~ ('\\m' || a.attname || '\\M')"))
    generated[r[0].as<std::string>()].insert(r[1].as<std::string>());
  for (auto& [index, cols] : out) {
    std::set<std::string> more;
    for (const auto& col : cols)
      if (auto g = generated.find(col); g != generated.end()) more.insert(g->second.begin(), g->second.end());
    cols.insert(more.begin(), more.end());
  }
  return out;
}

class HotRunTable : public ElectedStoreTest {
 protected:
  HotRunTable() : ElectedStoreTest("hot_run_table") {}
};

}  // namespace

TEST_F(HotRunTable, NoIndexContainsAColumnThatAnAssignmentAStartOrAHeartbeatWrites) {
  const auto indexes = index_columns(url);
  ASSERT_GE(indexes.size(), 5u);
  for (const auto& [index, cols] : indexes) {
    // Overlap control's two indexes are the documented exception: only an
    // assignment of a run of a limited or exclusive job writes their columns
    // (docs/performance.md, "A HOT run table").
    if (index == "job_runs_instance_idx" || index == "job_runs_exclusive_idx") continue;
    for (const auto& col : cols) EXPECT_EQ(hot_columns.count(col), 0u) << index << " contains " << col;
  }
  // What must stay findable (SPEC section 2): unfinished runs in dispatch
  // order, finished runs by time, the slot key, idempotency.
  EXPECT_TRUE(indexes.count("job_runs_open_idx"));
  EXPECT_TRUE(indexes.count("job_runs_finished_idx"));
  EXPECT_TRUE(indexes.count("job_runs_slot_idx"));
  EXPECT_TRUE(indexes.count("job_runs_idempotency_active_idx"));
}

TEST_F(HotRunTable, BatchedAssignmentsStartsAndHeartbeatsAreHotUpdates) {
  const int n = 40;
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE EXTENSION IF NOT EXISTS pageinspect");
  }
  const std::int64_t first = insert_pending_runs(url, n, 1);
  std::vector<AssignRow> assigns;
  for (int i = 0; i < n; ++i) assigns.push_back(AssignRow{RunId{first + i}, Version{1}, RunState::pending, "w1"});
  auto a = runs.assign_batch(epoch, assigns);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->applied.size(), static_cast<std::size_t>(n));
  std::vector<StartRow> starts;
  for (const auto& [id, w] : a->applied)
    starts.push_back(StartRow{RunId{id}, w.new_version, AttemptFence{"w1", w.attempt, w.lease_token}, "i1"});
  auto s = runs.start_batch(epoch, starts, Millis{30000});
  ASSERT_TRUE(s);
  ASSERT_EQ(s->applied.size(), static_cast<std::size_t>(n));
  // Dead versions are reclaimed when a statement reads their page (HOT
  // pruning); an UPDATE right after the one that left them did not reclaim
  // them here (seen with pageinspect), the leader's periodic read of the
  // active runs does. With fillfactor 30 a page holds its rows' next two
  // versions without pruning, not three.
  ASSERT_TRUE(leader.active_runs(Millis{0}));
  std::vector<HeartbeatRow> beats;
  for (const auto& st : starts)
    beats.push_back(HeartbeatRow{st.run, s->applied.at(st.run.value).new_version, st.attempt});
  auto h = leader.heartbeat_batch(epoch, beats, Millis{30000});
  ASSERT_TRUE(h);
  ASSERT_EQ(h->applied.size(), static_cast<std::size_t>(n));

  // A HOT update adds no index entry: the primary key (one leaf page for
  // 40 runs, where nothing is ever deleted without a vacuum) holds one entry
  // per run; each update that was not HOT would have added one more.
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM bt_page_items('job_runs_pkey', 1)")[0].as<int>(), n);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM bt_page_items('job_runs_open_idx', 1)")[0].as<int>(), n);
}

// A database populated under schemas/0020 (runs in every state, with their
// attempts and transitions, written by the real statements) is migrated, and
// every row reads back as it was; the runs are then found by the new reads
// and carried on by the new writes.
TEST(HotRunTableMigration, EveryRunAttemptAndTransitionSurvivesTheUpgrade) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("hot_run_migration", false);
  auto before = migrate(url, "test", 20);
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->current_version, 20);
  const Epoch epoch = force_election(url, "n1");
  PgRunStore runs{url, "test-runs"};
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("INSERT INTO job_definitions (name) VALUES ('j')");
  }
  auto create = [&](int max_attempts) {
    NewRun n;
    n.job_definition_id = 1;
    n.max_attempts = max_attempts;
    auto r = runs.create_run(epoch, n);
    EXPECT_TRUE(r && r->outcome == WriteOutcome::applied);
    return r->run;
  };
  struct Live {
    RunId id;
    Version v;
    AttemptFence a;
  };
  auto assign = [&](RunId id) {
    auto w = runs.assign(RunFence{id, Version{1}, epoch}, "w1");
    EXPECT_TRUE(w && w->outcome == WriteOutcome::applied);
    return Live{id, w->new_version, AttemptFence{"w1", w->attempt, w->lease_token}};
  };
  auto start = [&](Live l) {
    auto w = runs.start(RunFence{l.id, l.v, epoch}, l.a, Millis{30000});
    EXPECT_TRUE(w && w->outcome == WriteOutcome::applied);
    l.v = w->new_version;
    return l;
  };
  auto applied = [](const Result<WriteResult>& w) { return w && w->outcome == WriteOutcome::applied; };

  const RunId pending = create(1);
  const Live assigned = assign(create(1));
  const Live running = start(assign(create(1)));
  Live succeeded = start(assign(create(1)));
  ASSERT_TRUE(applied(runs.finish(RunFence{succeeded.id, succeeded.v, epoch}, succeeded.a, Finish{})));
  Live failed = start(assign(create(1)));
  Finish fail;
  fail.final_state = RunState::failed;
  fail.exit_code = 3;
  fail.error_code = "exit";
  ASSERT_TRUE(applied(runs.finish(RunFence{failed.id, failed.v, epoch}, failed.a, fail)));
  Live retry = start(assign(create(3)));
  ASSERT_TRUE(applied(runs.retry_later(RunFence{retry.id, retry.v, epoch}, retry.a, fail, Millis{0})));
  // A run retried and assigned again (its next_attempt_at stays set).
  Live again = start(assign(create(3)));
  auto later = runs.retry_later(RunFence{again.id, again.v, epoch}, again.a, fail, Millis{0});
  ASSERT_TRUE(applied(later));
  ASSERT_TRUE(applied(runs.reassign(RunFence{again.id, later->new_version, epoch}, RunState::retry_waiting, "w2")));
  const Live orphan = assign(create(1));
  ASSERT_TRUE(applied(runs.orphan(RunFence{orphan.id, orphan.v, epoch})));
  const RunId canceled = create(1);
  ASSERT_TRUE(applied(runs.cancel(RunFence{canceled, Version{1}, epoch}, RunState::pending, "test")));
  Live confirming = start(assign(create(1)));
  ASSERT_TRUE(applied(runs.begin_confirming(RunFence{confirming.id, confirming.v, epoch}, Millis{60000})));

  // Every column 0020 had, every attempt, every transition.
  const std::string runs_sql = "SELECT json_agg(to_jsonb(r) - 'due_at' ORDER BY r.id)::text FROM job_runs r";
  const std::string attempts_sql =
      "SELECT json_agg(to_jsonb(a) ORDER BY a.run_id, a.attempt)::text FROM job_run_attempts a";
  const std::string transitions_sql =
      "SELECT json_agg(to_jsonb(t) ORDER BY t.run_id, t.id)::text FROM job_run_transitions t";
  const std::string runs_before = scalar_text(url, runs_sql);
  const std::string attempts_before = scalar_text(url, attempts_sql);
  const std::string transitions_before = scalar_text(url, transitions_sql);
  ASSERT_NE(attempts_before, "NULL");

  auto after = migrate(url, "test");
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_GE(after->current_version, 21);
  EXPECT_EQ(scalar_text(url, runs_sql), runs_before);
  EXPECT_EQ(scalar_text(url, attempts_sql), attempts_before);
  EXPECT_EQ(scalar_text(url, transitions_sql), transitions_before);

  // The new reads find them: the due ones in dispatch order, the active ones.
  PgLeaderStore leader{url, "test-leader"};
  auto due = leader.due_runs(100, {}, Millis{0});
  ASSERT_TRUE(due) << due.error().message;
  std::set<std::int64_t> due_ids;
  for (const auto& d : *due) due_ids.insert(d.id.value);
  EXPECT_EQ(due_ids, (std::set<std::int64_t>{pending.value, retry.id.value, orphan.id.value}));
  auto active = leader.active_runs(Millis{0});
  ASSERT_TRUE(active) << active.error().message;
  std::set<std::int64_t> active_ids;
  for (const auto& r : *active) active_ids.insert(r.id.value);
  EXPECT_EQ(active_ids,
            (std::set<std::int64_t>{assigned.id.value, running.id.value, again.id.value, confirming.id.value}));

  // And the new writes carry them on: the pending run to its end.
  Live next = start(assign(pending));
  EXPECT_TRUE(applied(runs.finish(RunFence{next.id, next.v, epoch}, next.a, Finish{})));
  EXPECT_EQ(scalar_text(url, "SELECT count(*) FROM job_runs WHERE finished_at IS NULL"), "6");
}
