// The audit log is append-only (schemas/0028): an entry, once written, can
// be neither changed nor removed through SQL, not even by a superuser's
// session (the tests connect as one), short of dropping the trigger.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

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
  std::string refusal(const std::string& sql) {
    try {
      pqxx::connection c(url);
      pqxx::nontransaction tx(c);
      tx.exec(sql);
      return "";
    } catch (const pqxx::sql_error& e) {
      return e.what();
    }
  }
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

}  // namespace
