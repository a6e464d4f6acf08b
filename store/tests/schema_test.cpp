// The database itself rejects what SPEC section 3 forbids, even from raw SQL.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "baton/base/run_state.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store::pg::test;

namespace {

// A legal path from PENDING to each state, to set up the "from" side.
std::vector<RunState> path_to(RunState s) {
  using S = RunState;
  switch (s) {
    case S::pending: return {};
    case S::assigned: return {S::assigned};
    case S::running: return {S::assigned, S::running};
    case S::retry_waiting: return {S::assigned, S::running, S::retry_waiting};
    case S::orphaned: return {S::assigned, S::orphaned};
    case S::succeeded: return {S::assigned, S::running, S::succeeded};
    case S::failed: return {S::assigned, S::running, S::failed};
    case S::timed_out: return {S::assigned, S::running, S::timed_out};
    case S::canceled: return {S::canceled};
  }
  return {};
}

// Raw UPDATE that satisfies every CHECK constraint (a final run has its
// finished_at, no other has one) and records itself in the run's history,
// so only the transition rule can refuse it.
bool raw_move(pqxx::connection& c, std::int64_t id, RunState to) {
  try {
    pqxx::work tx(c);
    tx.exec_params(
        "UPDATE job_runs SET state = $2, version = version + 1, assigned_worker_id = 'w1',"
        " lease_token = gen_random_uuid(), next_attempt_at = now(), " +
            history_set("$2") +
            ","
            " finished_at = CASE WHEN $2 IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED') THEN now() END WHERE id = "
            "$1",
        id, std::string(to_string(to)));
    tx.commit();
    return true;
  } catch (const pqxx::sql_error& e) {
    EXPECT_NE(std::string(e.what()).find("job_runs"), std::string::npos) << e.what();
    return false;
  }
}

// Whether the database refuses `sql` (its $1 the run's id).
bool refused(pqxx::connection& c, const std::string& sql, std::int64_t id) {
  try {
    pqxx::work tx(c);
    tx.exec_params(sql, id);
    tx.commit();
    return false;
  } catch (const pqxx::sql_error&) {
    return true;
  }
}

class Schema : public ::testing::Test {
 protected:
  std::string url = baton::testing::PgInstance::shared().fresh_database("schema");
};

}  // namespace

TEST_F(Schema, DatabaseRejectsEveryIllegalTransitionPair) {
  pqxx::connection c(url);
  int accepted = 0, rejected = 0;
  for (RunState from : all_run_states) {
    for (RunState to : all_run_states) {
      if (from == to) continue;
      std::int64_t id = insert_pending_runs(url, 1);
      for (RunState step : path_to(from)) ASSERT_TRUE(raw_move(c, id, step)) << "setting up " << to_string(from);
      bool ok = raw_move(c, id, to);
      EXPECT_EQ(ok, legal_transition(from, to)) << to_string(from) << " -> " << to_string(to);
      (ok ? accepted : rejected)++;
    }
  }
  EXPECT_EQ(accepted, 18);  // SPEC section 3 plus the documented additions (docs/fencing.md)
  EXPECT_EQ(rejected, 9 * 8 - 18);
}

TEST_F(Schema, DatabaseRejectsWritesThatSkipTheVersionOrRewindEpochs) {
  pqxx::connection c(url);
  std::int64_t id = insert_pending_runs(url, 1);
  auto fails = [&](const std::string& sql) { return refused(c, sql, id); };
  // Each write below records itself in the history (the entry a correct
  // write would append), so that only the rule it breaks refuses it.
  const std::string h = ", " + history_set();
  EXPECT_TRUE(fails("UPDATE job_runs SET priority = 5" + h + " WHERE id = $1"));  // version not bumped
  EXPECT_TRUE(fails("UPDATE job_runs SET version = version + 2" + h + " WHERE id = $1"));
  EXPECT_FALSE(fails("UPDATE job_runs SET leader_epoch = 5, version = version + 1, " + history_set("state", "5") +
                     " WHERE id = $1"));
  EXPECT_TRUE(fails("UPDATE job_runs SET leader_epoch = 4, version = version + 1, " + history_set("state", "4") +
                    " WHERE id = $1"));
  EXPECT_TRUE(fails("UPDATE job_runs SET attempt = 2, version = version + 1, " +
                    history_set("state", "leader_epoch", "2") + " WHERE id = $1"));
  EXPECT_TRUE(fails("INSERT INTO job_runs (state, leader_epoch) VALUES ('RUNNING', 1) RETURNING $1::bigint"));
  EXPECT_TRUE(fails("UPDATE job_runs SET state = 'ASSIGNED', version = version + 1, " + history_set("'ASSIGNED'") +
                    " WHERE id = $1"))
      << "ASSIGNED without a worker and lease token";
  EXPECT_TRUE(fails("UPDATE job_runs SET id = id + 1000000, version = version + 1" + h + " WHERE id = $1"));
  // A write that does not record itself, or records something else, is refused.
  EXPECT_TRUE(fails("UPDATE job_runs SET version = version + 1 WHERE id = $1"));
  EXPECT_TRUE(fails("UPDATE job_runs SET version = version + 1, " + history_set("'RUNNING'") + " WHERE id = $1"));
  EXPECT_TRUE(fails("UPDATE job_runs SET version = version + 1, " + history_set("state", "leader_epoch + 1") +
                    " WHERE id = $1"));
  EXPECT_TRUE(
      fails("UPDATE job_runs SET version = version + 1, history = baton_run_history_entry(version, state,"
            " continuation_state, attempt, leader_epoch, NULL) WHERE id = $1"))
      << "the entries before it are kept";
  EXPECT_FALSE(fails("UPDATE job_runs SET version = version + 1" + h + " WHERE id = $1"));
  // A final run is never written again, not even in its own state.
  for (RunState step : path_to(RunState::succeeded)) ASSERT_TRUE(raw_move(c, id, step));
  EXPECT_TRUE(fails("UPDATE job_runs SET version = version + 1" + h + " WHERE id = $1"));
  EXPECT_TRUE(fails("UPDATE job_runs SET state = 'SUCCEEDED', version = version + 1, " + history_set("'SUCCEEDED'") +
                    " WHERE id = $1"));
  force_election(url, "n1");
  EXPECT_TRUE(fails("UPDATE leader_lease SET epoch = epoch - 1 WHERE $1 > 0"));
  EXPECT_TRUE(fails("DELETE FROM leader_lease WHERE $1 > 0"));
}

// A heartbeat after a heartbeat of the same attempt and epoch replaces that
// entry instead of adding one (schemas/0022); the guard accepts exactly that
// and refuses a replacement that rewrites anything else.
TEST_F(Schema, AHeartbeatReplacesOnlyTheLastHeartbeatsEntryAndRewritesNothingElse) {
  pqxx::connection c(url);
  std::int64_t id = insert_pending_runs(url, 1);
  for (RunState step : path_to(RunState::running)) ASSERT_TRUE(raw_move(c, id, step));
  auto fails = [&](const std::string& sql) { return refused(c, sql, id); };
  const std::string code = "(baton_run_history_code(state, continuation_state, attempt) + 32)";
  const std::string stamp = "txid_current(), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, 0";
  const std::string n = "cardinality(history)";
  // A heartbeat's entry appended, with its version from the row's.
  const std::string append =
      "UPDATE job_runs SET version = version + 1, history = history || ARRAY[version + 1,"
      " version, " +
      code + ", leader_epoch, " + stamp + "] WHERE id = $1";
  // The last entry replaced, keeping `from` as its from_version and the
  // entries before it as they are (`keep`).
  auto replace = [&](const std::string& keep, const std::string& from, const std::string& entry_code) {
    return "UPDATE job_runs SET version = version + 1, history = " + keep + " || ARRAY[version + 1, " + from + ", " +
           entry_code + ", leader_epoch, " + stamp + "] WHERE id = $1";
  };
  const std::string kept = "history[1 : " + n + " - 7]";
  const std::string from = "history[" + n + " - 5]";
  EXPECT_TRUE(fails(replace(kept, from, code))) << "the last entry is the start's, not a heartbeat's";
  ASSERT_FALSE(fails(append)) << "the first heartbeat appends";
  const std::string before =
      scalar_text(url, "SELECT cardinality(history) FROM job_runs WHERE id = " + std::to_string(id));
  EXPECT_TRUE(fails(replace(kept, "history[" + n + " - 6]", code))) << "its from_version kept";
  EXPECT_TRUE(fails(replace(kept, from, "(" + code + " + 256)"))) << "the same attempt";
  EXPECT_TRUE(fails(replace("history[1 : " + n + " - 8] || ARRAY[0::bigint]", from, code)))
      << "the entries before it kept";
  EXPECT_TRUE(fails(replace(kept, from, "baton_run_history_code(state, continuation_state, attempt)")))
      << "a heartbeat's entry replaced by one that is not";
  EXPECT_FALSE(fails(replace(kept, from, code))) << "the second heartbeat replaces the first's entry";
  EXPECT_EQ(scalar_text(url, "SELECT cardinality(history) FROM job_runs WHERE id = " + std::to_string(id)), before);
  EXPECT_TRUE(fails("UPDATE job_runs SET leader_epoch = leader_epoch + 1, version = version + 1, history = " + kept +
                    " || ARRAY[version + 1, " + from + ", " + code + ", leader_epoch + 1, " + stamp +
                    "] WHERE id = $1"))
      << "a new epoch's heartbeat appends its own entry";
}
