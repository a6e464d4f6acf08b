#pragma once
// Helpers shared by the PostgreSQL-backed store tests. Raw SQL here is test
// scaffolding (setting up rows and reading them back), never a run-state
// write path of the product.
#include <gtest/gtest.h>

#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_leader_store.h"
#include "baton/store_pg/pg_lease_store.h"
#include "baton/store_pg/pg_run_store.h"
#include "baton/store_testing/pg_instance.h"

namespace baton::store::pg::test {

inline NodeIdentity node(const std::string& name) { return NodeIdentity{name, name + "-incarnation", name + ":1"}; }

/// Makes `who` leader at a new epoch whatever the lease says (releases the
/// current holder first, as if its lease had expired). Returns the epoch.
inline Epoch force_election(const std::string& url, const std::string& who) {
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("UPDATE leader_lease SET released = true");
  }
  PgLeaseStore lease(url, "test-elect");
  auto r = lease.campaign(node(who), Millis{60000});
  EXPECT_TRUE(r && r->won);
  return r ? r->lease.epoch : Epoch{0};
}

/// The error `sql` fails with as the role of `url`, or "" when it succeeds.
inline std::string refusal_as(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec(sql);
    return "";
  } catch (const pqxx::sql_error& e) {
    return e.what();
  }
}

/// The first column of the first row of `sql`, as text ("NULL" for null).
inline std::string scalar_text(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  auto r = tx.exec1(sql);
  return r[0].is_null() ? "NULL" : r[0].as<std::string>();
}

/// A fresh database in which this test is the elected leader, with the
/// stores the leader and the admin API use.
class ElectedStoreTest : public ::testing::Test {
 protected:
  explicit ElectedStoreTest(const std::string& database)
      : url(baton::testing::PgInstance::shared().fresh_database(database)), epoch(force_election(url, "n1")) {}

  std::string text(const std::string& sql) { return scalar_text(url, sql); }
  /// Rewrites history (timestamps in the past), bypassing the write guards
  /// as only a test may.
  void age(const std::string& sql) {
    pqxx::connection c(url);
    pqxx::work tx(c);
    tx.exec("SET LOCAL session_replication_role = replica");
    tx.exec(sql);
    tx.commit();
  }

  std::string url;
  Epoch epoch;
  PgRunStore runs{url, "test-runs"};
  PgLeaderStore leader{url, "test-leader"};
  PgAdminStore admin{url, "test-admin"};
};

/// The SET item a raw UPDATE of job_runs needs beside `version = version + 1`:
/// the history entry of the write (schemas/0022), the write guard refusing a
/// write without it. Each argument is SQL for the row's new value, over its
/// old values (what a SET clause reads).
inline std::string history_set(const std::string& state = "state", const std::string& epoch = "leader_epoch",
                               const std::string& attempt = "attempt",
                               const std::string& continuation = "continuation_state") {
  return "history = history || baton_run_history_entry(version, " + state + ", " + continuation + ", " + attempt +
         ", " + epoch + ", continuation_timeout_ms)";
}

/// Inserts `n` PENDING runs with raw SQL and returns the first id.
inline std::int64_t insert_pending_runs(const std::string& url, int n, int max_attempts = 3) {
  pqxx::connection c(url);
  pqxx::work tx(c);
  auto r = tx.exec_params1(
      "WITH ins AS (INSERT INTO job_runs (leader_epoch, max_attempts) SELECT 0, $2 FROM generate_series(1, $1)"
      " RETURNING id) SELECT min(id) FROM ins",
      n, max_attempts);
  tx.commit();
  return r[0].as<std::int64_t>();
}

/// Waits until the backend with this application_name is blocked on a lock.
inline bool wait_until_blocked(const std::string& url, const std::string& app,
                               std::chrono::milliseconds max = std::chrono::milliseconds(3000)) {
  pqxx::connection c(url);
  auto deadline = std::chrono::steady_clock::now() + max;
  while (std::chrono::steady_clock::now() < deadline) {
    pqxx::nontransaction tx(c);
    auto r = tx.exec_params1(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", app);
    if (r[0].as<int>() > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

/// Commit timestamp of a transaction recorded with txid_current().
inline std::string commit_ts_sql(const std::string& xid_expr) {
  return "pg_xact_commit_timestamp(((" + xid_expr + ") % 4294967296)::text::xid)";
}

}  // namespace baton::store::pg::test
