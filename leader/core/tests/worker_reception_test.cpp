#include "baton/leader_core/worker_reception.h"

#include <gtest/gtest.h>

namespace baton::leader_core {
namespace {

const NodeIdentity me{"n2", "inc-n2", "n2:7000"};
const ReceptionLimits limits{Millis{1000}, Millis{2000}, Millis{1000}};

LeaseSighting led_by_n1(Epoch epoch, Millis remaining, Millis age) {
  store::LeaseView v;
  v.epoch = epoch;
  v.leader_id = "n1";
  v.leader_incarnation = "inc-n1";
  v.leader_endpoint = "n1:7000";
  v.released = false;
  v.remaining = remaining;
  return LeaseSighting{v, age};
}

TEST(WorkerReception, AFreshSightingOfAnotherLeaderRedirectsToIt) {
  auto r = receive_hello(led_by_n1(Epoch{4}, Millis{2000}, Millis{100}), me, "", false, limits);
  EXPECT_EQ(r.kind, Reception::Kind::redirect);
  EXPECT_EQ(r.endpoint, "n1:7000");
  EXPECT_EQ(r.epoch, Epoch{4});
}

TEST(WorkerReception, ALeaseThatRanOutSinceTheReadIsNoLeader) {
  // 900 ms left when read, read 950 ms ago: expired by now, an election is under way.
  auto r = receive_hello(led_by_n1(Epoch{4}, Millis{900}, Millis{950}), me, "", false, limits);
  EXPECT_TRUE(r.parked());
}

TEST(WorkerReception, ANodeThatCannotReadTheLeaseHoldsNoOne) {
  // The node's last read is older than stale_after (its database calls fail
  // or hang): it cannot learn of the next leader, so it sends the worker on
  // at once, even if the lease it last saw was long.
  auto r = receive_hello(led_by_n1(Epoch{4}, Millis{30000}, Millis{1001}), me, "", false, limits);
  EXPECT_EQ(r.kind, Reception::Kind::redirect);
  EXPECT_EQ(r.endpoint, "");
  EXPECT_STREQ(r.reason, "lease not seen lately");
  auto never_read = receive_hello(LeaseSighting{}, me, "", false, limits);
  EXPECT_EQ(never_read.kind, Reception::Kind::redirect);
  EXPECT_EQ(never_read.endpoint, "");
}

TEST(WorkerReception, AParkedHelloGoesOnOnceTheSightingGoesStale) {
  auto fresh = led_by_n1(Epoch{4}, Millis{0}, Millis{200});
  ASSERT_TRUE(receive_hello(fresh, me, "", false, limits).parked());
  EXPECT_TRUE(release(fresh, me, Millis{300}, Epoch{0}, limits).parked());
  auto later = led_by_n1(Epoch{4}, Millis{0}, Millis{1200});  // no read has come back since
  auto r = release(later, me, Millis{1300}, Epoch{0}, limits);
  EXPECT_EQ(r.kind, Reception::Kind::redirect);
  EXPECT_EQ(r.endpoint, "");
}

TEST(WorkerReception, TheLeaderTheWorkerCouldNotReachIsSkippedForAWhile) {
  auto s = led_by_n1(Epoch{4}, Millis{2000}, Millis{100});
  auto r = receive_hello(s, me, "n1:7000", false, limits);
  ASSERT_TRUE(r.parked());
  EXPECT_EQ(r.epoch, Epoch{4});
  EXPECT_TRUE(release(s, me, Millis{500}, r.epoch, limits).parked());
  auto back = release(s, me, Millis{1001}, r.epoch, limits);  // unreachable_hold passed
  EXPECT_EQ(back.endpoint, "n1:7000");
  auto newer = release(led_by_n1(Epoch{5}, Millis{2000}, Millis{0}), me, Millis{10}, r.epoch, limits);
  EXPECT_EQ(newer.kind, Reception::Kind::redirect);
  EXPECT_EQ(newer.epoch, Epoch{5});
}

TEST(WorkerReception, AParkIsBoundedByParkMax) {
  auto none = led_by_n1(Epoch{4}, Millis{0}, Millis{100});
  EXPECT_TRUE(release(none, me, Millis{2000}, Epoch{0}, limits).parked());
  auto r = release(none, me, Millis{2001}, Epoch{0}, limits);
  EXPECT_EQ(r.kind, Reception::Kind::redirect);
  EXPECT_STREQ(r.reason, "no leader elected yet");
}

TEST(WorkerReception, ALeaseNamingThisNodeIsNoLeaderToSendTo) {
  // This node just stepped down; its last read still names itself.
  auto s = led_by_n1(Epoch{4}, Millis{2000}, Millis{100});
  s.lease->leader_id = me.node_id;
  s.lease->leader_incarnation = me.incarnation;
  EXPECT_TRUE(receive_hello(s, me, "", false, limits).parked());
}

TEST(WorkerReception, AStoppingNodeHoldsNoOne) {
  auto r = receive_hello(led_by_n1(Epoch{4}, Millis{0}, Millis{100}), me, "", true, limits);
  EXPECT_EQ(r.kind, Reception::Kind::redirect);
  EXPECT_EQ(r.endpoint, "");
}

TEST(WorkerReception, LimitsKeepAParkWellInsideTheContinuationWindow) {
  auto chaos = reception_limits(Millis{300}, Millis{4000}, Millis{2000});
  EXPECT_EQ(chaos.park_max, Millis{2000});
  EXPECT_EQ(chaos.stale_after, Millis{1000});
  auto defaults = reception_limits(Millis{500}, Millis{30000}, Millis{10000});
  EXPECT_EQ(defaults.park_max, Millis{5000});
  EXPECT_EQ(reception_limits(Millis{2000}, Millis{30000}, Millis{10000}).stale_after, Millis{4000});
}

}  // namespace
}  // namespace baton::leader_core
