#include "baton/leader_core/leadership_view.h"

#include <gtest/gtest.h>

namespace baton::leader_core {
namespace {

const NodeIdentity viewer{"n2", "inc-n2", "n2:7000"};
const ReceptionLimits view_limits{Millis{1000}, Millis{2000}, Millis{1000}};
constexpr Millis lease{10000};
constexpr Millis renew{500};

LeaseSighting held_by(const char* id, Millis remaining, Millis age, bool released = false) {
  store::LeaseView v;
  v.epoch = Epoch{7};
  v.leader_id = id;
  v.leader_incarnation = std::string("inc-") + id;
  v.leader_endpoint = std::string(id) + ":7000";
  v.released = released;
  v.remaining = remaining;
  return LeaseSighting{v, age};
}

TEST(LeadershipView, AHolderThatRenewsLeads) {
  // Renewed 400 ms before the read, read 300 ms ago: 700 ms since.
  const auto v = view_leadership(held_by("n1", Millis{9600}, Millis{300}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(v.state, LeadershipView::State::leading);
  EXPECT_EQ(v.leader_id, "n1");
  EXPECT_EQ(v.last_leader_id, "n1");
  EXPECT_FALSE(v.lease_left);
}

TEST(LeadershipView, AKilledLeadersLeaseIsNoLeaderUntilItRunsOut) {
  // 3 s without a renewal (every 500 ms): the lease names n1, n1 leads nothing.
  const auto v = view_leadership(held_by("n1", Millis{7200}, Millis{200}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(v.state, LeadershipView::State::not_renewing);
  EXPECT_EQ(v.leader_id, "") << "a dead node is never shown leading";
  EXPECT_EQ(v.last_leader_id, "n1");
  EXPECT_EQ(v.last_epoch, Epoch{7});
  ASSERT_TRUE(v.lease_left);
  EXPECT_EQ(v.lease_left->count(), 7000);
}

TEST(LeadershipView, OneLateRenewalIsStillLeading) {
  // 1,100 ms since the last renewal: two periods and a tenth, not more.
  const auto v = view_leadership(held_by("n1", Millis{9000}, Millis{100}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(v.state, LeadershipView::State::leading);
  const auto late = view_leadership(held_by("n1", Millis{8999}, Millis{100}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(late.state, LeadershipView::State::not_renewing);
}

TEST(LeadershipView, ALeaseThatRanOutOrWasReleasedNamesOnlyTheLastLeader) {
  for (const auto& s : {held_by("n1", Millis{500}, Millis{600}), held_by("n1", Millis{9000}, Millis{100}, true)}) {
    const auto v = view_leadership(s, viewer, false, lease, renew, view_limits);
    EXPECT_EQ(v.state, LeadershipView::State::none);
    EXPECT_EQ(v.leader_id, "");
    EXPECT_EQ(v.last_leader_id, "n1");
    EXPECT_FALSE(v.lease_left);
  }
}

TEST(LeadershipView, ANodeThatCannotReadTheLeaseDoesNotGuess) {
  const auto v = view_leadership(held_by("n1", Millis{9900}, Millis{1001}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(v.state, LeadershipView::State::none);
  EXPECT_EQ(v.last_leader_id, "n1");
  EXPECT_EQ(view_leadership(LeaseSighting{}, viewer, false, lease, renew, view_limits).last_leader_id, "");
}

TEST(LeadershipView, ThisNodeLeadsOrStepsDown) {
  const auto leads = view_leadership(held_by("n2", Millis{9900}, Millis{0}), viewer, true, lease, renew, view_limits);
  EXPECT_EQ(leads.state, LeadershipView::State::leading);
  EXPECT_EQ(leads.leader_id, "n2");
  // Its lease, freshly renewed, while its elector no longer leads.
  const auto down = view_leadership(held_by("n2", Millis{9900}, Millis{0}), viewer, false, lease, renew, view_limits);
  EXPECT_EQ(down.state, LeadershipView::State::not_renewing);
  EXPECT_STREQ(to_string(down.state), "not_renewing");
}

}  // namespace
}  // namespace baton::leader_core
