// The fake database's model of partitioned leadership (docs/scaling.md),
// which the simulator's partitioned histories rest on: a statement is fenced
// by its own partition's lease and sees only its partition's rows.
#include <gtest/gtest.h>

#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/testing/fake_clock.h"

namespace baton::store::fake {
namespace {

using namespace std::chrono_literals;

struct TwoPartitions : ::testing::Test {
  testing::FakeClock clock;
  FakeLeaseDb p0{clock}, p1{clock};
  FakeRunDb db{{&p0, &p1}, clock};
  FakeRunStore on0{db, 0}, on1{db, 1};

  TwoPartitions() {
    p0.campaign({"n1", "n1-i", "n1:1"}, 5000ms);  // partition 0: epoch 1
    p1.campaign({"n2", "n2-i", "n2:1"}, 5000ms);  // partition 1: epoch 1
  }
};

TEST_F(TwoPartitions, AStatementSeesOnlyItsOwnPartitionsRows) {
  auto made = on0.create_run(Epoch{1}, NewRun{});
  ASSERT_TRUE(made);
  ASSERT_EQ(made->outcome, WriteOutcome::applied);
  EXPECT_EQ(db.runs().at(made->run.value).partition, 0);
  // Partition 1's current leader, with a number equal to partition 0's
  // epoch, can neither read nor write partition 0's run.
  auto seen = on1.read_run(made->run);
  ASSERT_TRUE(seen);
  EXPECT_FALSE(*seen);
  auto w = on1.assign({made->run, Version{1}, Epoch{1}}, "w1");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->outcome, WriteOutcome::conflict);
  auto b = on1.assign_batch(Epoch{1}, {AssignRow{made->run, Version{1}, RunState::pending, "w1", 0ms}});
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->applied.empty());
  db.use_partition(1);
  EXPECT_TRUE(db.due_runs(10).empty());
  db.use_partition(0);
  EXPECT_EQ(db.due_runs(10).size(), 1u);
  // Its own leader can.
  w = on0.assign({made->run, Version{1}, Epoch{1}}, "w1");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->outcome, WriteOutcome::applied);
  EXPECT_EQ(db.transitions().back().partition, 0);
}

TEST_F(TwoPartitions, EachPartitionIsFencedByItsOwnLease) {
  auto r0 = on0.create_run(Epoch{1}, NewRun{});
  auto r1 = on1.create_run(Epoch{1}, NewRun{});
  ASSERT_TRUE(r0 && r1);
  // Partition 1 fails over to epoch 2; partition 0 stays at epoch 1.
  p1.release(Epoch{1}, {"n2", "n2-i", "n2:1"});
  p1.campaign({"n3", "n3-i", "n3:1"}, 5000ms);
  ASSERT_EQ(p1.epoch(), Epoch{2});
  auto stale = on1.assign({r1->run, Version{1}, Epoch{1}}, "w2");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->outcome, WriteOutcome::fenced);
  EXPECT_EQ(stale->current_epoch, Epoch{2});
  auto fresh = on1.assign({r1->run, Version{1}, Epoch{2}}, "w2");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->outcome, WriteOutcome::applied);
  // Partition 0's epoch 1 is still current for partition 0.
  auto other = on0.assign({r0->run, Version{1}, Epoch{1}}, "w1");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->outcome, WriteOutcome::applied);
  EXPECT_EQ(db.transitions().back().partition, 0);
}

}  // namespace
}  // namespace baton::store::fake
