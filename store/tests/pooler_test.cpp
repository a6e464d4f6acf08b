// A session's own settings and a pooler in front of the database: the
// timeouts every session needs are set by its first statement (a pooler
// refuses or drops the startup parameter `options`), and a pooler that does
// not keep a session per connection (pgbouncer in transaction mode) is told
// apart from one that does (session mode) and from PostgreSQL itself. Real
// PostgreSQL, real pgbouncer (scripts/pgbouncer-private).
#include <gtest/gtest.h>

#include "baton/store_pg/pg_session.h"
#include "baton/store_pg/session_check.h"
#include "baton/store_testing/pgbouncer.h"
#include "store_test_support.h"

using namespace baton;
using namespace baton::store::pg;
using namespace std::chrono_literals;

namespace {

/// SHOW name on a session of `url`.
std::string show(const std::string& url, const std::string& name) {
  PgSession s(url, "pooler-test");
  auto r = s.with<std::string>([&](pqxx::connection& c) -> Result<std::string> {
    pqxx::nontransaction tx{c};
    return tx.exec1("SHOW " + c.quote_name(name))[0].as<std::string>();
  });
  return r ? *r : "error: " + r.error().message;
}

}  // namespace

// A client that vanished mid-transaction must not hold the lease row's lock
// for long, and no statement runs for ever: set on every session without a
// startup option. A URL that brings its own `options` keeps what it says.
TEST(PgSessionSettings, TheTimeoutsAreSetByTheFirstStatementNotByAStartupOption) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("session_settings");
  EXPECT_EQ(show(url, "idle_in_transaction_session_timeout"), "5s");
  EXPECT_EQ(show(url, "statement_timeout"), "30s");
  EXPECT_EQ(with_default_timeouts(url).find("options="), std::string::npos) << with_default_timeouts(url);
  const std::string own =
      url + (url.find('?') == std::string::npos ? "?" : "&") + "options=-c%20statement_timeout%3D7000";
  EXPECT_EQ(show(own, "statement_timeout"), "7s");
  EXPECT_EQ(show(own, "idle_in_transaction_session_timeout"), "0");
}

// Session mode: one server session per client connection, so LISTEN/NOTIFY
// and the session's settings work through it as they do directly.
TEST(Pooler, ASessionModePoolerKeepsTheSessionAndItsTimeouts) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("pooler_session");
  auto direct = check_session_kept(url, "pooler-test", 3000ms);
  ASSERT_TRUE(direct) << direct.error().message;
  EXPECT_TRUE(direct->kept);

  baton::testing::PgBouncer pooler(url, "session");
  ASSERT_FALSE(pooler.url().empty()) << pooler.error();
  auto through = check_session_kept(pooler.url(), "pooler-test", 3000ms);
  ASSERT_TRUE(through) << through.error().message;
  EXPECT_TRUE(through->kept);
  EXPECT_LT(through->waited, 3000ms);
  EXPECT_EQ(show(pooler.url(), "idle_in_transaction_session_timeout"), "5s");
  EXPECT_EQ(show(pooler.url(), "statement_timeout"), "30s");
}

// Transaction mode: every query passes, but the connection that LISTENed
// is no server session's client once its transaction ended, so it never
// hears the NOTIFY. The check says so (twice, short waits here) instead of
// the node waiting on notifications that never come.
TEST(Pooler, ATransactionModePoolerIsToldApart) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("pooler_transaction");
  baton::testing::PgBouncer pooler(url, "transaction");
  ASSERT_FALSE(pooler.url().empty()) << pooler.error();
  EXPECT_EQ(show(pooler.url(), "server_version_num").substr(0, 2), "15");  // queries pass
  auto through = check_session_kept(pooler.url(), "pooler-test", 1000ms);
  ASSERT_TRUE(through) << through.error().message;
  EXPECT_FALSE(through->kept);
  EXPECT_GE(through->waited, 2000ms);
  const std::string finding = session_not_kept_finding("127.0.0.1:1/baton", 1000ms);
  EXPECT_NE(finding.find("does not keep a session per connection"), std::string::npos) << finding;
  EXPECT_NE(session_not_kept_fix().find("pool_mode = session"), std::string::npos);
}
