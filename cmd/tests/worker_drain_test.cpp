// A worker's SIGTERM drains it (docs/operations.md, `drain_timeout`): the
// leader assigns it nothing more, what runs finishes and is acknowledged,
// then it exits; past the bound, what still runs is killed and retried.
#include <gtest/gtest.h>

#include <csignal>

#include "cluster.h"

using namespace baton::testing;

namespace {

const char* jobs = R"(jobs:
  - name: three-seconds
    max_attempts: 3
    retry: {base: 100ms}
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, "3"]}
  - name: long
    max_attempts: 3
    retry: {base: 100ms}
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, "30"]}
)";

bool log_has(ChildProcess& p, const std::string& needle) { return p.log().find(needle) != std::string::npos; }

}  // namespace

TEST(WorkerDrain, SigtermFinishesWhatRunsTakesNothingNewAndExits) {
  Cluster c("drain", jobs);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  auto& w1 = c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  auto first = c.trigger("n1", "three-seconds");
  ASSERT_TRUE(c.wait_for_state(first, "RUNNING", 10s));
  // RUNNING is written before the assign frame leaves the leader.
  ASSERT_TRUE(wait_until([&] { return starts_of(c.journal("w1"), first) == 1; }, 5s));

  w1.signal(SIGTERM);
  ASSERT_TRUE(wait_until([&] { return log_has(w1, "worker_draining"); }, 5s)) << w1.log();
  // A run triggered now waits for another worker, though w1 has a free slot.
  auto second = c.trigger("n1", "three-seconds");
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(c.db().run(second)->state, "PENDING");
  c.start_worker("w2", 2);

  // The drained worker's run succeeded on its first attempt, then it exited.
  ASSERT_TRUE(c.wait_for_state(first, "SUCCEEDED", 15s)) << c.db().run(first)->state;
  EXPECT_EQ(c.db().run(first)->attempt, 1);
  auto rc = w1.wait_for_exit(10s);
  ASSERT_TRUE(rc) << w1.log();
  EXPECT_EQ(*rc, 0);
  EXPECT_TRUE(log_has(w1, "worker_drained worker=\"w1\" complete=true")) << w1.log();
  ASSERT_TRUE(c.wait_for_state(second, "SUCCEEDED", 20s)) << c.db().run(second)->state;
  EXPECT_EQ(c.db().run(second)->worker_id, "w2");
  EXPECT_EQ(starts_of(c.journal("w1"), second), 0u);
}

TEST(WorkerDrain, PastItsBoundWhatStillRunsIsKilledAndRetriedElsewhere) {
  Cluster c("drain_bound", jobs);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.worker_auth_override["w1"] =
      std::string("token_file: ") + BATON_SOURCE_DIR + "/cmd/tests/tokens/worker.token\ndrain_timeout: 1s\n";
  auto& w1 = c.start_worker("w1", 1);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  auto run = c.trigger("n1", "long");
  ASSERT_TRUE(c.wait_for_state(run, "RUNNING", 10s));
  ASSERT_TRUE(wait_until([&] { return starts_of(c.journal("w1"), run) == 1; }, 5s));
  w1.signal(SIGTERM);
  auto rc = w1.wait_for_exit(10s);
  ASSERT_TRUE(rc) << w1.log();
  EXPECT_TRUE(log_has(w1, "worker_drained worker=\"w1\" complete=false")) << w1.log();
  // The killed attempt is reported (failed, from the outbox when the next
  // incarnation attaches) and the run goes on with another attempt.
  c.start_worker("w2", 1);
  c.start_worker("w1", 1);
  ASSERT_TRUE(wait_until([&] { return c.db().run(run)->attempt >= 2; }, 30s)) << c.db().run(run)->state;
}
