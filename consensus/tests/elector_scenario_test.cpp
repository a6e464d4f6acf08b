// Scripted stories we already know, with production Electors over the fake
// lease database and one fake clock (STYLE practice 12).
#include <gtest/gtest.h>

#include "sim_cluster.h"

using namespace baton;
using namespace baton::consensus;
using namespace baton::consensus::sim;

namespace {

// n1 elected first, then the followers named added and settled.
void n1_leads_with(SimCluster& c, std::initializer_list<const char*> followers) {
  c.add("n1");
  c.run_for(50ms);
  for (const char* f : followers) c.add(f);
  c.run_for(200ms);
  ASSERT_EQ(c.leader(), 0);
}

}  // namespace

TEST(ElectorScenario, OneOfThreeIsElectedAndKeepsItsEpoch) {
  SimCluster c;
  c.add("n1");
  c.add("n2");
  c.add("n3");
  c.run_for(100ms);
  int l = c.leader();
  ASSERT_GE(l, 0);
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  c.run_for(30s);  // renewals keep the same leader and epoch
  EXPECT_EQ(c.leader(), l);
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  EXPECT_EQ(c.db().history().size(), 1u);
}

TEST(ElectorScenario, PausedLeaderIsFencedOnResume) {
  SimCluster c;
  c.add("n1");
  c.run_for(50ms);
  ASSERT_EQ(c.leader(), 0);
  c.add("n2");
  c.node(0).paused = true;  // SIGSTOP
  c.run_for(c.cfg().lease + 1s);
  ASSERT_EQ(c.leader(), 1);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
  c.node(0).paused = false;  // SIGCONT: the watchdog runs before anything else
  c.tick();
  EXPECT_EQ(c.leader(), 1);
  ASSERT_FALSE(c.node(0).changes.empty());
  EXPECT_EQ(c.node(0).changes.back().reason, "renew_unconfirmed");
  EXPECT_FALSE(c.node(0).elector->is_leader());
  // Its pending release of epoch 1 is refused (not its lease any more).
  c.run_for(1s);
  EXPECT_EQ(c.leader(), 1);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

TEST(ElectorScenario, LeaderWhoseDatabaseHangsStopsBeforeItsLeaseCanExpire) {
  SimCluster c;
  SimNode& n1 = c.add("n1");
  c.run_for(50ms);
  ASSERT_TRUE(n1.elector->is_leader());
  // From now on every call of n1 hangs; time passes inside the call while the
  // watchdog (enforce_deadline) keeps running, as the node's main thread does.
  MonoTime stepped_down{};
  n1.store.during_call = [&] {
    for (int i = 0; i < 1000 && n1.elector->is_leader(); ++i) {
      c.clock().advance(10ms);
      n1.elector->enforce_deadline();
      if (!n1.elector->is_leader()) stepped_down = c.clock().mono();
    }
    n1.store.unavailable = true;
  };
  const MonoTime lease_expiry = c.db().expires_at();
  c.run_for(10s);
  ASSERT_FALSE(n1.elector->is_leader());
  ASSERT_NE(stepped_down, MonoTime{});
  EXPECT_LT(stepped_down, lease_expiry) << "stepped down after the lease could have expired";
  EXPECT_GE(lease_expiry - stepped_down, c.cfg().safety_margin - 20ms);
}

TEST(ElectorScenario, GracefulShutdownLetsAFollowerTakeOverAtOnce) {
  SimCluster c;
  n1_leads_with(c, {"n2"});
  c.node(0).elector->shutdown(c.node(0).shutdown_store);
  c.node(0).stopped = true;
  c.tick();  // one step: n2 observes the released lease and campaigns
  EXPECT_EQ(c.leader(), 1);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

// A planned handover (docs/operations.md, "Handing leadership over"): the
// lease is released for the node named, which takes it at its next step;
// the other follower does not campaign while it is kept, nor does the old
// leader, and once it is not taken any node may lead again.
TEST(ElectorScenario, AHandoverGoesToTheNodeNamedAndNoOtherWhileItIsKept) {
  SimCluster c;
  n1_leads_with(c, {"n2", "n3"});
  auto handed = c.node(0).elector->hand_over(c.node(0).shutdown_store, "n3", c.cfg().lease * 2, "ops");
  ASSERT_TRUE(handed) << handed.error().message;
  EXPECT_EQ(*handed, Epoch{1});
  EXPECT_EQ(c.node(0).changes.back().reason, "handover");
  c.run_for(300ms);
  EXPECT_EQ(c.leader(), 2) << "n3, named, leads";
  EXPECT_EQ(c.db().epoch(), Epoch{2});
  EXPECT_EQ(c.db().history().back().leader_id, "n3");
  // Not leading, a node cannot hand over.
  EXPECT_FALSE(c.node(1).elector->hand_over(c.node(1).shutdown_store, "", c.cfg().lease * 2, "ops"));
}

TEST(ElectorScenario, AHandoverToANodeThatDoesNotTakeItLeavesTheLeaseKeptThenAnyNodeLeads) {
  SimCluster c;
  n1_leads_with(c, {"n2"});
  ASSERT_TRUE(c.node(0).elector->hand_over(c.node(0).shutdown_store, "n9", c.cfg().lease * 2, "ops"));
  c.run_for(c.cfg().lease * 2 - 100ms);
  EXPECT_EQ(c.leader(), -1) << "kept for n9: neither n1 nor n2 campaigns";
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  c.run_for(1s);
  EXPECT_GE(c.leader(), 0) << "the reservation over, a node leads";
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

// A node that handed over holds back, but not from a handover that names
// it: handed straight back, it leads at once (the bench's round of
// handovers waited out the rest of its pause, 2.7 s, before this).
TEST(ElectorScenario, ANodeThatHandedOverTakesAHandoverBackAtOnce) {
  SimCluster c;
  n1_leads_with(c, {"n2"});
  ASSERT_TRUE(c.node(0).elector->hand_over(c.node(0).shutdown_store, "n2", c.cfg().lease * 2, "ops"));
  c.run_for(100ms);
  ASSERT_EQ(c.leader(), 1);
  ASSERT_TRUE(c.node(1).elector->hand_over(c.node(1).shutdown_store, "n1", c.cfg().lease * 2, "ops"));
  c.run_for(100ms);
  EXPECT_EQ(c.leader(), 0) << "n1, named, leads within a step or two";
}

TEST(ElectorScenario, AHandoverToNoOneInParticularGoesToAnotherNode) {
  SimCluster c;
  n1_leads_with(c, {"n2"});
  ASSERT_TRUE(c.node(0).elector->hand_over(c.node(0).shutdown_store, "", c.cfg().lease * 2, "ops"));
  c.run_for(300ms);
  EXPECT_EQ(c.leader(), 1) << "the old leader holds back";
}

// The election thread releases an epoch it stepped down from while
// hand_over() or shutdown() releases the same one through their own
// connection: whichever lands second finds nothing left to release, and
// neither trips over the other (a real node asserted here, found by the
// handover's process test).
TEST(ElectorScenario, TwoReleasesOfOneEpochFromTwoThreadsAreHarmless) {
  SimCluster c;
  SimNode& n1 = c.add("n1");
  c.run_for(50ms);
  ASSERT_TRUE(n1.elector->is_leader());
  n1.store.unavailable = true;  // renewals fail: the watchdog steps it down, a release owed
  c.run_for(c.cfg().lease);
  ASSERT_FALSE(n1.elector->is_leader());
  ASSERT_TRUE(n1.elector->snapshot().must_release.has_value());
  n1.store.unavailable = false;
  bool raced = false;
  n1.store.during_call = [&] {
    if (raced) return;
    raced = true;  // inside the election thread's release: the shutdown's lands first
    n1.elector->shutdown(n1.shutdown_store);
  };
  n1.elector->step();
  EXPECT_TRUE(raced);
  EXPECT_FALSE(n1.elector->snapshot().must_release.has_value());
  EXPECT_TRUE(c.db().view().released);
}

TEST(ElectorScenario, RestartedNodeNeverResumesItsPreviousEpoch) {
  SimCluster c;
  c.add("n1");
  c.run_for(50ms);
  ASSERT_EQ(c.db().epoch(), Epoch{1});
  c.restart(0);  // kill -9 and start again with the same node_id
  c.run_for(c.cfg().lease / 2);
  EXPECT_EQ(c.leader(), -1) << "new incarnation must not inherit the old lease";
  c.run_for(c.cfg().lease);
  ASSERT_EQ(c.leader(), 0);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

TEST(ElectorScenario, TwoProcessesWithOneNodeIdNeverBothLead) {
  SimCluster c;
  c.add("same");
  c.add("same");
  c.run_for(5s);  // check_safety runs on every tick
  EXPECT_GE(c.leader(), 0);
  EXPECT_EQ(c.db().epoch(), Epoch{1});
}

TEST(ElectorScenario, LostCampaignReplyIsReleasedAndWonAgainAtANewEpoch) {
  SimCluster c;
  SimNode& n1 = c.add("n1");
  n1.store.lose_next_reply = true;  // the election commits, its reply is lost
  c.tick();
  EXPECT_FALSE(n1.elector->is_leader());
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  c.run_for(100ms);  // observes its own lease, releases it, campaigns again
  EXPECT_TRUE(n1.elector->is_leader());
  EXPECT_EQ(n1.elector->leader_epoch(), Epoch{2});
}

TEST(ElectorScenario, PartitionedLeaderStepsDownAndAnotherLeads) {
  SimCluster c;
  c.add("n1");
  c.run_for(50ms);
  c.add("n2");
  c.node(0).store.unavailable = true;
  c.run_for(c.cfg().lease + 1s);
  EXPECT_EQ(c.leader(), 1);
  c.node(0).store.unavailable = false;
  c.run_for(2s);
  EXPECT_EQ(c.leader(), 1);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

TEST(ElectorScenario, NodesThatSawTheDatabaseGoBackNeverLeadAgain) {
  // An asynchronous failover loses the bump to epoch 2: the database grants
  // epoch 2 again. The nodes that knew epoch 2 refuse to lead (one of them
  // may still act on it); a process started afterwards knows nothing older
  // and leads.
  SimCluster c;
  c.add("n1");
  c.run_for(50ms);
  c.add("n2");
  c.node(0).paused = true;
  c.run_for(c.cfg().lease + 1s);
  ASSERT_EQ(c.leader(), 1);
  ASSERT_EQ(c.db().epoch(), Epoch{2});
  c.node(0).paused = false;
  c.run_for(1s);
  // The failover happens while n2 is paused: a leader that has not noticed
  // yet leads an epoch the database no longer has.
  c.node(1).paused = true;
  c.db().lose_writes_after(Epoch{1});
  c.run_for(5s);
  EXPECT_EQ(c.leader(), -1) << "n1 saw epoch 2";
  c.node(1).paused = false;  // its watchdog steps it down first
  c.run_for(5s);
  EXPECT_EQ(c.leader(), -1) << "n1 and n2 both saw epoch 2";
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(c.node(i).elector->snapshot().regressed_to.has_value());
  c.add("n3");
  c.run_for(1s);
  EXPECT_EQ(c.leader(), 2);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}

TEST(ElectorScenario, ANodeNotAllowedToCampaignLeadsOnButNeverTakesALeaseOver) {
  // Partitioned leadership's balance (docs/scaling.md) gates campaigns only:
  // a gated leader keeps its lease, a gated follower watches the lease
  // expire and stays a follower until it is allowed again.
  SimCluster c;
  SimNode& n1 = c.add("n1");
  c.run_for(50ms);
  ASSERT_TRUE(n1.elector->is_leader());
  n1.elector->allow_campaigns(false);
  c.run_for(10s);
  EXPECT_TRUE(n1.elector->is_leader());
  EXPECT_EQ(c.db().epoch(), Epoch{1});

  SimNode& n2 = c.add("n2");
  n2.elector->allow_campaigns(false);
  n1.stopped = true;  // kill -9: its lease runs out
  c.run_for(c.cfg().lease * 3);
  EXPECT_EQ(c.leader(), -1);
  EXPECT_EQ(c.db().epoch(), Epoch{1});
  ASSERT_TRUE(n2.elector->last_seen_lease());
  EXPECT_TRUE(n2.elector->last_seen_lease()->expired()) << "a gated follower still observes the lease";

  n2.elector->allow_campaigns(true);
  c.run_for(c.cfg().poll_every + 100ms);
  EXPECT_EQ(c.leader(), 1);
  EXPECT_EQ(c.db().epoch(), Epoch{2});
}
