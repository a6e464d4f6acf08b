// The audit log is append-only (schemas/0028): an entry, once written, can
// be neither changed nor removed through SQL, not even by a superuser's
// session (the tests connect as one), short of dropping the trigger.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "baton/store_pg/migrate.h"
#include "baton/store_testing/pg_instance.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

namespace {

class AuditLogTest : public ElectedStoreTest {
 protected:
  AuditLogTest() : ElectedStoreTest("audit") {}

  /// The error `sql` fails with, or "" when it succeeds.
  std::string refusal(const std::string& sql) { return refusal_as(url, sql); }
};

TEST_F(AuditLogTest, AnEntryCanBeNeitherChangedNorRemoved) {
  JobDefinition j;
  j.name = "audited";
  ASSERT_TRUE(admin.create_job(Actor{"alice", epoch}, j));
  const std::string entries = text("SELECT count(*) FROM audit_log");
  ASSERT_NE(entries, "0");
  EXPECT_NE(refusal("UPDATE audit_log SET actor = 'mallory'").find("audit_log is append-only: UPDATE refused"),
            std::string::npos);
  EXPECT_NE(refusal("DELETE FROM audit_log").find("audit_log is append-only: DELETE refused"), std::string::npos);
  EXPECT_NE(refusal("TRUNCATE audit_log").find("audit_log is append-only: TRUNCATE refused"), std::string::npos);
  EXPECT_EQ(text("SELECT count(*) FROM audit_log"), entries);
  EXPECT_EQ(text("SELECT count(*) FROM audit_log WHERE actor = 'mallory'"), "0");
  // Appending goes on as before.
  ASSERT_TRUE(admin.set_job_paused(Actor{"alice", epoch}, "audited", true));
  EXPECT_EQ(text("SELECT count(*) > " + entries + " FROM audit_log"), "t");
}

// A cancel records itself in the audit log in the transaction of the change
// (the entry and the run's new row have the same xmin), and a cancel that
// did not apply leaves no such entry.
TEST_F(AuditLogTest, ACancelIsAuditedInTheTransactionThatMakesIt) {
  auto canceled = [&](RunId id) {
    return text("SELECT count(*) FROM audit_log WHERE subject = 'run:" + std::to_string(id.value) +
                "' AND action = 'run.canceled'");
  };
  auto same_transaction = [&](RunId id, const std::string& action) {
    return text("SELECT (SELECT xmin FROM audit_log WHERE subject = 'run:" + std::to_string(id.value) +
                "' AND action = '" + action + "') = (SELECT xmin FROM job_runs WHERE id = " + std::to_string(id.value) +
                ")");
  };
  const RunId pending = runs.create_run(epoch, NewRun{})->run;
  EXPECT_EQ(runs.cancel({pending, Version{1}, epoch}, RunState::assigned, "wrong state")->outcome,
            WriteOutcome::conflict);
  EXPECT_EQ(canceled(pending), "0") << "not applied: not audited as done";
  ASSERT_EQ(runs.cancel({pending, Version{1}, epoch}, RunState::pending, "canceled by alice")->outcome,
            WriteOutcome::applied);
  EXPECT_EQ(canceled(pending), "1");
  EXPECT_EQ(same_transaction(pending, "run.canceled"), "t");
  EXPECT_EQ(text("SELECT details->>'reason' || ' ' || (details->>'from') FROM audit_log WHERE subject = 'run:" +
                 std::to_string(pending.value) + "'"),
            "canceled by alice PENDING");

  const RunId running = runs.create_run(epoch, NewRun{})->run;
  auto a = runs.assign({running, Version{1}, epoch}, "w1");
  AttemptFence att{"w1", a->attempt, a->lease_token};
  auto s = runs.start({running, a->new_version, epoch}, att, Millis{1000});
  auto req = runs.request_cancel({running, s->new_version, epoch}, "canceled by bob");
  ASSERT_EQ(req->outcome, WriteOutcome::applied);
  EXPECT_EQ(same_transaction(running, "run.cancel_requested"), "t");
  ASSERT_EQ(runs.cancel_attempt({running, req->new_version, epoch}, att, Finish{}, "canceled by bob")->outcome,
            WriteOutcome::applied);
  EXPECT_EQ(canceled(running), "1");
  EXPECT_EQ(same_transaction(running, "run.canceled"), "t");
  EXPECT_EQ(text("SELECT outcome FROM job_run_attempts WHERE run_id = " + std::to_string(running.value)), "CANCELED");
}

// The nodes' runtime role (docs/operations.md, "A runtime role apart from
// the owner") writes rows and appends to the audit log, and can neither
// change an entry, nor drop or disable the log's trigger, nor alter or
// drop a table, nor record a migration.
TEST(RuntimeRole, WritesRowsAndAppendsButCannotChangeTheAuditLogOrTheSchema) {
  const auto db = baton::testing::PgInstance::shared().separate_roles_database("roles");
  const std::string& as = db.runtime_url;
  EXPECT_EQ(refusal_as(as, "INSERT INTO audit_log (actor, action) VALUES ('n1', 'test')"), "");
  EXPECT_EQ(refusal_as(as, "SELECT count(*) FROM audit_log"), "");
  // Rights are checked when a statement is planned, rows or none.
  EXPECT_EQ(refusal_as(as, "UPDATE job_runs SET version = version WHERE false"), "") << "row rights on the tables";
  EXPECT_EQ(refusal_as(as, "DELETE FROM job_runs WHERE false"), "");
  EXPECT_EQ(refusal_as(as, "SELECT nextval('job_runs_id_seq')"), "");
  for (const char* sql : {"UPDATE audit_log SET actor = 'mallory'", "DELETE FROM audit_log", "TRUNCATE audit_log",
                          "TRUNCATE job_runs", "INSERT INTO schema_migrations VALUES (999, 'x', now(), 'x')"})
    EXPECT_NE(refusal_as(as, sql).find("permission denied"), std::string::npos) << sql;
  for (const char* sql : {"ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only",
                          "DROP TRIGGER audit_log_append_only ON audit_log", "DROP TABLE job_runs CASCADE",
                          "ALTER TABLE job_runs ADD COLUMN x int"})
    EXPECT_NE(refusal_as(as, sql).find("must be owner"), std::string::npos) << sql;
  EXPECT_NE(refusal_as(as, "CREATE TABLE mine (x int)").find("permission denied for schema"), std::string::npos);
  // A node started as it finds the schema current: migrate only reads.
  auto m = migrate(as, "runtime");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->applied.empty());
  // Granting again is exact and idempotent.
  auto again = grant_runtime_role(db.owner_url, db.runtime_role);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_GT(again->relations, 10);
  EXPECT_GE(again->sequences, 1);
  EXPECT_NE(refusal_as(as, "DELETE FROM audit_log").find("permission denied"), std::string::npos);
}

TEST(RuntimeRole, AGrantToTheOwnerASuperuserOrAnUnknownRoleIsRefusedWithTheReason) {
  const auto db = baton::testing::PgInstance::shared().separate_roles_database("roles_refused");
  const std::string owner = db.owner_url.substr(13, db.owner_url.find('@') - 13);  // postgresql://<role>@
  auto self = grant_runtime_role(db.owner_url, owner);
  ASSERT_FALSE(self);
  EXPECT_NE(self.error().message.find("is the one migrating"), std::string::npos) << self.error().message;
  auto super = grant_runtime_role(db.owner_url, "postgres");
  ASSERT_FALSE(super);
  EXPECT_NE(super.error().message.find("is a superuser"), std::string::npos) << super.error().message;
  auto unknown = grant_runtime_role(db.owner_url, "nobody_here");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'nobody_here' does not exist"), std::string::npos);
}

// A write that waits longer than its session's call deadline (here on a
// lock on the audit log) is cut, and its error says that, not the driver's
// "not connected"; the next call reconnects and is written.
TEST_F(AuditLogTest, AWriteCutAtItsDeadlineSaysSoAndTheNextOneIsWritten) {
  PgAdminStore slow{url, "test-admin-deadline"};
  slow.set_call_deadline(std::chrono::milliseconds(300));
  ASSERT_TRUE(slow.post_event(Actor{"alice", epoch}, "before", "{}", std::nullopt));
  {
    baton::testing::TableLock lock(url, "audit_log");
    auto cut = slow.post_event(Actor{"alice", epoch}, "held", "{}", std::nullopt);
    ASSERT_FALSE(cut);
    EXPECT_EQ(cut.error().code, Errc::db_unavailable);
    EXPECT_NE(cut.error().message.find("no answer from the database within this call's deadline of 300 ms"),
              std::string::npos)
        << cut.error().message;
  }
  auto after = slow.post_event(Actor{"alice", epoch}, "after", "{}", std::nullopt);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(text("SELECT count(*) FROM events WHERE kind = 'held'"), "0");
  EXPECT_EQ(text("SELECT count(*) FROM events WHERE kind = 'after'"), "1");
}

}  // namespace
