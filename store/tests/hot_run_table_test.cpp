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
const std::set<std::string> hot_columns = {
    "state", "version", "attempt", "leader_epoch", "assigned_worker_id", "lease_token", "assigned_at", "started_at",
    "heartbeat_at", "stale_after", "updated_at", "worker_instance", "continuation_state", "continuation_deadline_at",
    "continuation_timeout_ms", "progress", "progress_at",
    // written by the assignment of a run whose job has
    // an overlap rule, unchanged (NULL) for any other
    "instance_no", "exclusive_lock", "gate", "concurrency_key", "key_slot"};

// Overlap control's holds (SPEC section 2 as amended 2026-12-03): columns
// that only a run of a job with max_instances, mutual exclusion,
// exclusive_execution or a concurrency key writes. An index may contain
// them, and no other written column, because a run of a job without such a
// rule leaves them NULL (BatchedAssignmentsStartsAndHeartbeatsStayHotBeside
// JobsWithHolds shows it); every such index is named here, so a new one is
// a deliberate edit.
const std::set<std::string> hold_columns = {"instance_no", "exclusive_lock", "gate", "concurrency_key", "key_slot"};
const std::set<std::string> hold_indexes = {"job_runs_instance_idx", "job_runs_exclusive_idx",
                                            "job_runs_gate_exclusive", "job_runs_key_slot_idx"};

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
    const bool holds = hold_indexes.count(index) > 0;
    for (const auto& col : cols) {
      if (holds && hold_columns.count(col)) continue;
      EXPECT_EQ(hot_columns.count(col), 0u) << index << " contains " << col;
    }
  }
  for (const auto& index : hold_indexes) EXPECT_TRUE(indexes.count(index)) << index << " is gone: update the list";
  // What must stay findable (SPEC section 2): unfinished runs in dispatch
  // order, finished runs by time, the slot key, idempotency.
  EXPECT_TRUE(indexes.count("job_runs_open_idx"));
  EXPECT_TRUE(indexes.count("job_runs_finished_idx"));
  EXPECT_TRUE(indexes.count("job_runs_slot_idx"));
  EXPECT_TRUE(indexes.count("job_runs_idempotency_active_idx"));
}

namespace {

// Assigns, starts and heartbeats `n` runs of no job (a NOOP's shape: no
// overlap rule) in batches, as the leader's lanes do, and returns how many
// of the 3n updates were not HOT (each added a primary-key entry).
int non_hot_updates(const std::string& url, const Epoch epoch, PgRunStore& runs, PgLeaderStore& leader, int n);

}  // namespace

TEST_F(HotRunTable, BatchedAssignmentsStartsAndHeartbeatsAreHotUpdates) {
  const int n = 40;
  // A few of the heartbeats find no room on their row's page (the history
  // grows by an entry per write); with an index on a written column none of
  // the 3n would be HOT.
  EXPECT_LE(non_hot_updates(url, epoch, runs, leader, n), 3 * n / 10) << "updates that were not HOT, of " << 3 * n;
}

// SPEC section 2 as amended 2026-12-03: with an exclusive job and a keyed
// job defined (idle), the other runs' updates are as HOT as without them
// (schemas/0046: before it, every run made active took a gate, a column of
// the exclusion constraint's index, while some job was exclusive).
TEST_F(HotRunTable, BatchedAssignmentsStartsAndHeartbeatsStayHotBesideJobsWithHolds) {
  JobDefinition exclusive;
  exclusive.name = "vacuum";
  exclusive.exclusive_execution = true;
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, exclusive));
  JobDefinition keyed;
  keyed.name = "per-customer";
  keyed.concurrency_key = "{{param.customer}}";
  keyed.concurrency_limit = 1;
  ASSERT_TRUE(admin.create_job(Actor{"test", epoch}, keyed));
  const int n = 40;
  EXPECT_LE(non_hot_updates(url, epoch, runs, leader, n), 3 * n / 10) << "updates that were not HOT, of " << 3 * n;
  EXPECT_EQ(text("SELECT count(*) FROM job_runs WHERE gate IS NOT NULL OR key_slot IS NOT NULL"
                 " OR concurrency_key IS NOT NULL OR instance_no IS NOT NULL OR exclusive_lock IS NOT NULL"),
            "0")
      << "a run without an overlap rule holds nothing";
}

namespace {

int non_hot_updates(const std::string& url, const Epoch epoch, PgRunStore& runs, PgLeaderStore& leader, int n) {
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE EXTENSION IF NOT EXISTS pageinspect");
  }
  const std::int64_t first = insert_pending_runs(url, n, 1);
  std::vector<AssignRow> assigns;
  for (int i = 0; i < n; ++i) assigns.push_back(AssignRow{RunId{first + i}, Version{1}, RunState::pending, "w1"});
  auto a = runs.assign_batch(epoch, assigns);
  if (!a || a->applied.size() != static_cast<std::size_t>(n)) {
    ADD_FAILURE() << "assignments: " << (a ? std::to_string(a->applied.size()) + " applied" : a.error().message);
    return 3 * n;
  }
  std::vector<StartRow> starts;
  for (const auto& [id, w] : a->applied)
    starts.push_back(StartRow{RunId{id}, w.new_version, AttemptFence{"w1", w.attempt, w.lease_token}, "i1"});
  // Dead versions are reclaimed when a statement reads their page (HOT
  // pruning); an UPDATE right after the one that left them did not always
  // reclaim them here (seen with pageinspect), the leader's reads between
  // its writes do (its read of the active runs, the dispatcher's scan of
  // the unfinished runs). With fillfactor 30 a page holds its rows' next
  // version without pruning, not two (each write adds to the history).
  EXPECT_TRUE(leader.active_runs(Millis{0}));
  auto s = runs.start_batch(epoch, starts, Millis{30000});
  if (!s || s->applied.size() != static_cast<std::size_t>(n)) {
    ADD_FAILURE() << "starts: " << (s ? std::to_string(s->applied.size()) + " applied" : s.error().message);
    return 3 * n;
  }
  EXPECT_TRUE(leader.active_runs(Millis{0}));
  std::vector<HeartbeatRow> beats;
  for (const auto& st : starts)
    beats.push_back(HeartbeatRow{st.run, s->applied.at(st.run.value).new_version, st.attempt});
  auto h = leader.heartbeat_batch(epoch, beats, Millis{30000});
  EXPECT_TRUE(h);
  EXPECT_EQ(h ? h->applied.size() : 0u, static_cast<std::size_t>(n));

  // A HOT update adds no index entry: the primary key (one leaf page for
  // 40 runs, where nothing is ever deleted without a vacuum) holds one entry
  // per run; each update that was not HOT added one more. An update whose
  // new version finds no room on its row's page is not HOT either.
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  const int pkey_entries = tx.exec1("SELECT count(*) FROM bt_page_items('job_runs_pkey', 1)")[0].as<int>();
  EXPECT_GE(pkey_entries, n);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM bt_page_items('job_runs_open_idx', 1)")[0].as<int>(), pkey_entries);
  return pkey_entries - n;
}

}  // namespace

// A database populated under schemas/0020 (runs in every state, with the
// attempts and transitions that schema kept in their own tables) is
// migrated to the latest schema (0021: the HOT table; 0022: the history in
// the run's row), and every row reads back as it was; the runs are then
// found by the new reads and carried on by the new writes, their history
// continuing where the old log left it. The rows are written with SQL as
// 0020's statements wrote them (the store's statements are the new ones).
TEST(RunTableMigration, EveryRunAttemptAndTransitionSurvivesTheUpgrade) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("run_table_migration", false);
  auto before = migrate(url, "test", 20);
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->current_version, 20);
  // Elected as a node of that schema's time would be: today's campaign also
  // checkpoints receipts (schemas/0042), which this schema has not.
  const Epoch epoch{std::stoll(scalar_text(
      url,
      "WITH l AS (UPDATE leader_lease SET epoch = epoch + 1, leader_id = 'n1', leader_incarnation = 'n1-i',"
      " lease_expires_at = now() + interval '1 minute', elected_at = now(), renewed_at = now(), released = false"
      " WHERE id = 1 RETURNING epoch), h AS (INSERT INTO epoch_history (epoch, leader_id, leader_incarnation)"
      " SELECT epoch, 'n1', 'n1-i' FROM l) SELECT epoch FROM l"))};
  const std::string e = std::to_string(epoch.value);
  pqxx::connection c(url);
  auto sql = [&](const std::string& q) {
    pqxx::nontransaction tx(c);
    auto r = tx.exec(q);
    return r.empty() || r[0][0].is_null() ? std::int64_t{0} : r[0][0].as<std::int64_t>();
  };
  sql("INSERT INTO job_definitions (name) VALUES ('j')");
  auto create = [&](int max_attempts) {
    return sql("INSERT INTO job_runs (job_definition_id, max_attempts, leader_epoch) VALUES (1, " +
               std::to_string(max_attempts) + ", " + e + ") RETURNING id");
  };
  auto move = [&](std::int64_t id, const std::string& set) {
    sql("UPDATE job_runs SET version = version + 1, leader_epoch = " + e + ", " + set +
        " WHERE id = " + std::to_string(id));
  };
  const std::string assign =
      "state = 'ASSIGNED', assigned_worker_id = 'w1', lease_token = gen_random_uuid(),"
      " assigned_at = now(), next_attempt_at = NULL";
  const std::string start = "state = 'RUNNING', started_at = now(), heartbeat_at = now(), stale_after = now()";
  auto attempt_row = [&](std::int64_t id, const std::string& outcome) {
    sql("INSERT INTO job_run_attempts (run_id, attempt, worker_id, leader_epoch, lease_token, started_at, finished_at,"
        " outcome, exit_code, duration_ms) SELECT id, attempt, assigned_worker_id, leader_epoch, lease_token,"
        " started_at, now(), '" +
        outcome + "', 0, 1 FROM job_runs WHERE id = " + std::to_string(id));
  };

  const std::int64_t pending = create(1);
  const std::int64_t assigned = create(1);
  move(assigned, assign);
  const std::int64_t running = create(1);
  move(running, assign);
  move(running, start);
  const std::int64_t succeeded = create(1);
  move(succeeded, assign);
  move(succeeded, start);
  attempt_row(succeeded, "SUCCEEDED");
  move(succeeded, "state = 'SUCCEEDED', finished_at = now()");
  const std::int64_t retry = create(3);
  move(retry, assign);
  move(retry, start);
  attempt_row(retry, "FAILED");
  move(retry, "state = 'RETRY_WAITING', next_attempt_at = now()");
  const std::int64_t again = create(3);
  move(again, assign);
  move(again, start);
  attempt_row(again, "FAILED");
  move(again, "state = 'RETRY_WAITING', next_attempt_at = now()");
  move(again, assign + ", attempt = attempt + 1");
  const std::int64_t orphan = create(1);
  move(orphan, assign);
  move(orphan, "state = 'ORPHANED'");
  const std::int64_t canceled = create(1);
  move(canceled, "state = 'CANCELED', finished_at = now()");
  const std::int64_t confirming = create(1);
  move(confirming, assign);
  move(confirming, start);
  move(confirming, "continuation_state = 'CONFIRMING', continuation_deadline_at = now() + interval '1 hour'");

  // Every column 0020 had (the later ones are new: the history, the final
  // attempt's outcome, progress, the gate, the key, the submission, the
  // run's own timeout, the key's caller), every attempt, every transition.
  const std::string runs_sql =
      "SELECT json_agg(to_jsonb(r) - 'due_at' - 'history' - 'outcome' - 'exit_code' - 'progress' - 'progress_at' - "
      "'gate' - 'concurrency_key' - 'key_slot' - 'submission_id' - 'timeout_ms' - 'idempotency_owner'"
      " ORDER BY r.id)::text FROM job_runs r";
  // (schemas/0041 adds why an attempt ended and its late report: new.)
  const std::string attempts_sql =
      "SELECT json_agg(to_jsonb(a) - 'error_code' - 'late_outcome' - 'late_exit_code' - 'late_reported_at'"
      " ORDER BY a.run_id, a.attempt)::text FROM job_run_attempts a";
  const std::string transitions_sql =
      "SELECT json_agg(to_jsonb(t) ORDER BY t.run_id, t.to_version)::text FROM job_run_transitions t";
  const std::string runs_before = scalar_text(url, runs_sql);
  const std::string attempts_before = scalar_text(url, attempts_sql);
  const std::string transitions_before = scalar_text(url, transitions_sql);
  ASSERT_EQ(sql("SELECT count(*) FROM job_run_attempts"), 3);
  ASSERT_EQ(sql("SELECT count(*) FROM job_run_transitions"), 28);

  auto after = migrate(url, "test");
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_GE(after->current_version, 22);
  EXPECT_EQ(scalar_text(url, runs_sql), runs_before);
  EXPECT_EQ(scalar_text(url, attempts_sql), attempts_before);
  EXPECT_EQ(scalar_text(url, transitions_sql), transitions_before);

  // The new reads find them: the due ones in dispatch order, the active ones.
  PgLeaderStore leader{url, "test-leader"};
  auto due = leader.due_runs(100, {}, Millis{0}, {{}});
  ASSERT_TRUE(due) << due.error().message;
  std::set<std::int64_t> due_ids;
  for (const auto& d : *due) due_ids.insert(d.id.value);
  EXPECT_EQ(due_ids, (std::set<std::int64_t>{pending, retry, orphan}));
  auto active = leader.active_runs(Millis{0});
  ASSERT_TRUE(active) << active.error().message;
  std::map<std::int64_t, ActiveRun> by_id;
  for (const auto& r : *active) by_id.emplace(r.id.value, r);
  EXPECT_EQ(by_id.size(), 4u);
  for (auto id : {assigned, running, again, confirming}) EXPECT_TRUE(by_id.count(id)) << id;

  // And the new writes carry them on. A run that was RUNNING at the upgrade:
  // its history goes on from the old log's last row.
  PgRunStore runs{url, "test-runs"};
  const ActiveRun& r = by_id.at(running);
  auto hb =
      runs.heartbeat(RunFence{RunId{running}, r.version, epoch}, AttemptFence{"w1", 1, r.lease_token}, Millis{30000});
  ASSERT_TRUE(hb && hb->outcome == WriteOutcome::applied);
  EXPECT_EQ(scalar_text(url,
                        "SELECT string_agg(coalesce(from_state, '-') || '>' || to_state || '@' ||"
                        " coalesce(from_version::text, '-') || '>' || to_version, ' ' ORDER BY to_version)"
                        " FROM job_run_transitions WHERE run_id = " +
                            std::to_string(running)),
            "->PENDING@->1 PENDING>ASSIGNED@1>2 ASSIGNED>RUNNING@2>3 RUNNING>RUNNING@3>4");
  auto fin =
      runs.finish(RunFence{RunId{running}, hb->new_version, epoch}, AttemptFence{"w1", 1, r.lease_token}, Finish{});
  ASSERT_TRUE(fin && fin->outcome == WriteOutcome::applied);
  EXPECT_EQ(scalar_text(url, "SELECT outcome FROM job_run_attempts WHERE run_id = " + std::to_string(running)),
            "SUCCEEDED");
  // A run created before the upgrade, carried to its end after it.
  auto a = runs.assign(RunFence{RunId{pending}, Version{1}, epoch}, "w1");
  ASSERT_TRUE(a && a->outcome == WriteOutcome::applied);
  EXPECT_EQ(sql("SELECT count(*) FROM job_runs WHERE finished_at IS NULL"), 6);
}

// The history in the run's row (schemas/0022): each write one entry, read
// through job_run_transitions as the log table was; consecutive heartbeats
// of an attempt one entry whose versions span them all; the attempt that
// ends a run in the run's row, a retried one in a row of its own, both read
// through job_run_attempts.
TEST_F(HotRunTable, TheHistoryInTheRowReadsAsTheLogAndAttemptTablesDid) {
  const RunId id{insert_pending_runs(url, 1, 2)};
  auto assign = [&](Version v, RunState from) {
    auto a = runs.assign_batch(epoch, {{id, v, from, "w1"}});
    EXPECT_TRUE(a && a->applied.count(id.value));
    return a->applied.at(id.value);
  };
  auto a1 = assign(Version{1}, RunState::pending);
  const AttemptFence f1{"w1", a1.attempt, a1.lease_token};
  auto s1 = runs.start_batch(epoch, {{id, a1.new_version, f1, "i1"}}, Millis{30000});
  ASSERT_TRUE(s1 && s1->applied.count(id.value));
  Version v = s1->applied.at(id.value).new_version;
  for (int i = 0; i < 3; ++i) {
    auto h = leader.heartbeat_batch(epoch, {{id, v, f1}}, Millis{30000});
    ASSERT_TRUE(h && h->applied.count(id.value));
    v = h->applied.at(id.value);
  }
  Finish failed;
  failed.final_state = RunState::failed;
  failed.exit_code = 2;
  auto r = runs.finish_batch(epoch, {{id, v, f1, failed, Millis{0}}});  // retried
  ASSERT_TRUE(r && r->applied.count(id.value));
  auto a2 = assign(r->applied.at(id.value).new_version, RunState::retry_waiting);
  const AttemptFence f2{"w1", a2.attempt, a2.lease_token};
  auto s2 = runs.start_batch(epoch, {{id, a2.new_version, f2, "i1"}}, Millis{30000});
  ASSERT_TRUE(s2 && s2->applied.count(id.value));
  auto done = runs.finish_batch(epoch, {{id, s2->applied.at(id.value).new_version, f2, Finish{}, std::nullopt}});
  ASSERT_TRUE(done && done->applied.count(id.value));

  const std::string run = std::to_string(id.value);
  EXPECT_EQ(text("SELECT string_agg(coalesce(from_state, '-') || '>' || to_state || ' ' || coalesce(from_version::text,"
                 " '-') || '>' || to_version || ' a' || attempt, ', ' ORDER BY to_version)"
                 " FROM job_run_transitions WHERE run_id = " +
                 run),
            "->PENDING ->1 a1, PENDING>ASSIGNED 1>2 a1, ASSIGNED>RUNNING 2>3 a1, RUNNING>RUNNING 3>6 a1,"
            " RUNNING>RETRY_WAITING 6>7 a1, RETRY_WAITING>ASSIGNED 7>8 a2, ASSIGNED>RUNNING 8>9 a2,"
            " RUNNING>SUCCEEDED 9>10 a2");
  // Each entry its own transaction and time; every write after the raw
  // insert (epoch 0) under this leader's epoch.
  EXPECT_EQ(text("SELECT count(DISTINCT xid) || ' ' || count(at) || ' ' || count(*) FILTER (WHERE leader_epoch = " +
                 std::to_string(epoch.value) + ") FROM job_run_transitions WHERE run_id = " + run),
            "8 8 7");
  EXPECT_EQ(text("SELECT string_agg(attempt || ' ' || outcome || ' ' || coalesce(exit_code::text, '-') || ' '"
                 " || worker_id, ', ' ORDER BY attempt) FROM job_run_attempts WHERE run_id = " +
                 run),
            "1 FAILED 2 w1, 2 SUCCEEDED - w1");
  // Only the retried attempt is a row of its own; the transitions are none.
  EXPECT_EQ(text("SELECT count(*) FROM job_run_attempt_rows WHERE run_id = " + run), "1");
  EXPECT_EQ(text("SELECT count(*) FROM job_run_transitions_log WHERE run_id = " + run), "0");
  EXPECT_EQ(text("SELECT cardinality(history) FROM job_runs WHERE id = " + run), std::to_string(8 * 7));
}
