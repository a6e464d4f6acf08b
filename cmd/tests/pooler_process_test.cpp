// Real `baton node` processes behind a real pgbouncer (docs/operations.md,
// "Behind a connection pooler"): in session mode a node leads and its runs
// finish; in transaction mode it refuses to start and says what to change,
// rather than lead without ever hearing a notification.
#include <gtest/gtest.h>

#include "baton/store_testing/pgbouncer.h"
#include "cluster.h"

using namespace baton::testing;

namespace {
const char* jobs = "jobs:\n  - name: tick\n    tasks:\n      - {kind: PROGRAM, command: [/bin/true]}\n";
}

TEST(Pooler, ANodeBehindSessionPoolingRunsJobsAndOneBehindTransactionPoolingRefusesToStart) {
  Cluster c("pooler", jobs);
  PgBouncer session(c.runtime_url(), "session");
  ASSERT_FALSE(session.url().empty()) << session.error();
  c.set_node_database_url(session.url());
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  const auto run = c.trigger("n1", "tick");
  ASSERT_GT(run, 0);
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 20s)) << c.db().run(run)->state;

  PgBouncer transaction(c.runtime_url(), "transaction");
  ASSERT_FALSE(transaction.url().empty()) << transaction.error();
  c.set_node_database_url(transaction.url());
  auto& n2 = c.start_node("n2");
  const auto rc = n2.wait_for_exit(60s);
  ASSERT_TRUE(rc) << "a node behind transaction pooling did not refuse to start:\n" << n2.log();
  EXPECT_EQ(*rc, 2) << n2.log();
  EXPECT_NE(n2.log().find("node n2: cannot start: database 127.0.0.1:"), std::string::npos) << n2.log();
  EXPECT_NE(n2.log().find("does not keep a session per connection"), std::string::npos) << n2.log();
  EXPECT_NE(n2.log().find("set pool_mode = session"), std::string::npos) << n2.log();
  // n1 leads on, untouched.
  EXPECT_EQ(c.wait_for_leader(), "n1");
}
