// The pure election functions, one rule at a time.
#include "baton/consensus/election.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::consensus;
using namespace std::chrono_literals;

namespace {

ElectionConfig cfg() {
  ElectionConfig c;
  c.lease = 3000ms;
  c.renew_every = 500ms;
  c.safety_margin = 1000ms;
  c.poll_every = 400ms;
  return c;
}

ElectorState leading(Epoch e, MonoTime confirmed) {
  ElectorState s;
  s.role = Role::leader;
  s.epoch = e;
  s.highest_epoch_seen = e;
  s.confirmed_at = confirmed;
  return s;
}

const NodeIdentity me{"n1", "inc-1", "127.0.0.1:1"};

}  // namespace

TEST(Election, ValidateNamesEveryBadKey) {
  ElectionConfig c = cfg();
  EXPECT_TRUE(validate(c).empty());
  c.renew_every = 2500ms;  // >= lease - margin
  c.safety_margin = 3000ms;
  auto errs = validate(c);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].rfind("election.safety_margin:", 0), 0u);
  EXPECT_EQ(errs[1].rfind("election.renew_every:", 0), 0u);
}

TEST(Election, LeaderStepsDownExactlyAtLeaseMinusMargin) {
  const MonoTime t0{10s};
  ElectorState s = leading(Epoch{4}, t0);
  auto before = enforce_deadline(s, t0 + 1999ms, cfg());
  EXPECT_FALSE(before.change.has_value());
  EXPECT_EQ(before.next.role, Role::leader);
  auto at = enforce_deadline(s, t0 + 2000ms, cfg());
  ASSERT_TRUE(at.change.has_value());
  EXPECT_EQ(at.change->reason, "renew_unconfirmed");
  EXPECT_EQ(at.next.role, Role::follower);
  EXPECT_EQ(at.next.must_release, Epoch{4});  // never resume this epoch
}

TEST(Election, RenewIsDueEveryRenewEvery) {
  const MonoTime t0{10s};
  ElectorState s = leading(Epoch{1}, t0);
  auto a = next_action(s, t0 + 100ms, cfg());
  EXPECT_EQ(a.kind, ActionKind::wait);
  EXPECT_EQ(a.wait, 400ms);
  EXPECT_EQ(next_action(s, t0 + 500ms, cfg()).kind, ActionKind::renew);
}

TEST(Election, ConfirmationCountsFromSendTimeNotReplyTime) {
  const MonoTime t0{10s};
  ElectorState s = leading(Epoch{1}, t0);
  // A renewal sent at t0+500ms whose reply arrives 1.4 s later confirms only
  // up to its send time.
  auto t = on_renew(s, store::WriteOutcome::applied, t0 + 500ms);
  EXPECT_EQ(t.next.confirmed_at, t0 + 500ms);
  EXPECT_TRUE(enforce_deadline(t.next, t0 + 2500ms, cfg()).change.has_value());
}

TEST(Election, FencedRenewalStepsDownWithoutRelease) {
  ElectorState s = leading(Epoch{3}, MonoTime{1s});
  auto t = on_renew(s, store::WriteOutcome::fenced, MonoTime{2s});
  ASSERT_TRUE(t.change.has_value());
  EXPECT_EQ(t.change->reason, "lease_lost");
  EXPECT_FALSE(t.next.must_release.has_value());
}

TEST(Election, CampaignWinMakesLeaderAtNewEpoch) {
  ElectorState s;
  s.highest_epoch_seen = Epoch{6};
  store::CampaignResult r{true, {Epoch{7}, "n1", "inc-1", "", false, 3000ms}};
  auto t = on_campaign(s, r, MonoTime{5s}, me);
  ASSERT_TRUE(t.change.has_value());
  EXPECT_EQ(t.next.role, Role::leader);
  EXPECT_EQ(t.next.epoch, Epoch{7});
  EXPECT_EQ(t.next.confirmed_at, MonoTime{5s});
}

TEST(Election, FollowerCampaignsOnlyOnExpiredOrReleasedLease) {
  store::LeaseView v{Epoch{2}, "n2", "x", "", false, 1200ms};
  ElectorState s;
  EXPECT_FALSE(should_campaign(s, v));
  EXPECT_EQ(follower_wait(v, cfg()), 400ms);  // poll_every bounds the wait
  v.remaining = 100ms;
  EXPECT_EQ(follower_wait(v, cfg()), 110ms);  // wake just after expiry
  v.remaining = 0ms;
  EXPECT_TRUE(should_campaign(s, v));
  v.remaining = 5000ms;
  v.released = true;
  EXPECT_TRUE(should_campaign(s, v));
}

TEST(Election, ALeaseEpochBelowOneSeenMeansTheDatabaseWentBackAndThisNodeNeverLeadsAgain) {
  ElectorState s;
  s.highest_epoch_seen = Epoch{9};
  store::LeaseView expired{Epoch{7}, "n2", "x", "", true, 0ms};
  auto t = on_observed(s, expired);
  ASSERT_TRUE(t.next.regressed_to.has_value());
  EXPECT_EQ(*t.next.regressed_to, Epoch{7});
  EXPECT_EQ(t.next.highest_epoch_seen, Epoch{9});
  EXPECT_FALSE(should_campaign(t.next, expired)) << "an expired lease, and still no campaign";
  // Epochs climbing again later do not clear it.
  store::LeaseView later{Epoch{12}, "n3", "y", "", true, 0ms};
  t = on_observed(t.next, later);
  EXPECT_FALSE(should_campaign(t.next, later));
}

TEST(Election, ACampaignWonAtAnEpochAlreadySeenIsReleasedNotLed) {
  ElectorState s;
  s.highest_epoch_seen = Epoch{7};
  store::CampaignResult r{true, {Epoch{7}, "n1", "inc-1", "", false, 3000ms}};
  auto t = on_campaign(s, r, MonoTime{5s}, me);
  EXPECT_FALSE(t.change.has_value());
  EXPECT_EQ(t.next.role, Role::follower);
  ASSERT_TRUE(t.next.must_release.has_value());
  EXPECT_EQ(*t.next.must_release, Epoch{7});
  EXPECT_TRUE(t.next.regressed_to.has_value());
  EXPECT_EQ(next_action(t.next, MonoTime{5s}, cfg()).kind, ActionKind::release);
}

TEST(Election, PendingReleaseComesFirst) {
  ElectorState s;
  s.must_release = Epoch{9};
  s.highest_epoch_seen = Epoch{9};
  EXPECT_EQ(next_action(s, MonoTime{1s}, cfg()).kind, ActionKind::release);
  EXPECT_FALSE(on_released(s).next.must_release.has_value());
}
