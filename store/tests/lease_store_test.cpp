// PgLeaseStore against real PostgreSQL: one winner per epoch under
// concurrent campaigns, renewal and release predicates, NOTIFY on release,
// and refusal to use a standby.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "store_test_support.h"

using namespace baton;
using namespace baton::store;
using namespace baton::store::pg;
using namespace baton::store::pg::test;

TEST(LeaseStore, ConcurrentCampaignsElectExactlyOneWinnerPerEpochFor1000Rounds) {
  std::string url = baton::testing::PgInstance::shared().fresh_database("campaign");
  const int rounds = 1000, nodes = 3;
  std::vector<std::vector<std::int64_t>> won(nodes);
  std::barrier sync(nodes);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int n = 0; n < nodes; ++n) {
    threads.emplace_back([&, n] {
      PgLeaseStore lease(url, "campaign-" + std::to_string(n));
      NodeIdentity me = node("n" + std::to_string(n));
      for (int round = 0; round < rounds; ++round) {
        sync.arrive_and_wait();  // everyone campaigns at once
        auto r = lease.campaign(me, Millis{60000});
        if (!r) errors++;
        sync.arrive_and_wait();  // everyone has tried
        if (r && r->won) {
          won[n].push_back(r->lease.epoch.value);
          if (!lease.release(r->lease.epoch, me)) errors++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  std::map<std::int64_t, int> winner_of;
  for (int n = 0; n < nodes; ++n)
    for (auto e : won[n]) {
      EXPECT_EQ(winner_of.count(e), 0u) << "two winners for epoch " << e;
      winner_of[e] = n;
    }
  ASSERT_EQ(winner_of.size(), static_cast<std::size_t>(rounds)) << "exactly one winner in every round";
  EXPECT_EQ(winner_of.begin()->first, 1);
  EXPECT_EQ(winner_of.rbegin()->first, rounds);  // strictly increasing by one
  auto history = baton::testing::DbInspector(url).epoch_history();
  ASSERT_EQ(history.size(), static_cast<std::size_t>(rounds));
  for (const auto& h : history) {
    EXPECT_EQ(h.leader_id, "n" + std::to_string(winner_of[h.epoch])) << "epoch " << h.epoch;
    EXPECT_EQ(h.end_reason.value_or(""), "released");
  }
  std::printf("rounds=%d winners: n0=%zu n1=%zu n2=%zu\n", rounds, won[0].size(), won[1].size(), won[2].size());
}

TEST(LeaseStore, RenewReleaseAndCampaignPredicates) {
  std::string url = baton::testing::PgInstance::shared().fresh_database("lease");
  PgLeaseStore a(url, "lease-a"), b(url, "lease-b");
  NodeIdentity n1 = node("n1"), n1_again{"n1", "other-incarnation", "x"}, n2 = node("n2");
  auto won = a.campaign(n1, Millis{60000});
  ASSERT_TRUE(won && won->won);
  const Epoch e = won->lease.epoch;
  EXPECT_FALSE(b.campaign(n2, Millis{60000})->won) << "lease is held and unexpired";
  EXPECT_EQ(*a.renew(e, n1, Millis{60000}), WriteOutcome::applied);
  EXPECT_EQ(*b.renew(e, n1_again, Millis{60000}), WriteOutcome::fenced) << "same node_id, other incarnation";
  EXPECT_EQ(*b.release(e, n2), WriteOutcome::fenced);
  // Let it expire by the database clock: renewal is refused, a campaign wins.
  ASSERT_EQ(*a.renew(e, n1, Millis{100}), WriteOutcome::applied);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(*a.renew(e, n1, Millis{60000}), WriteOutcome::fenced) << "expired leases are not renewed";
  auto taken = b.campaign(n2, Millis{60000});
  ASSERT_TRUE(taken && taken->won);
  EXPECT_EQ(taken->lease.epoch.value, e.value + 1);
  auto history = baton::testing::DbInspector(url).epoch_history();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].end_reason.value_or(""), "expired");
}

TEST(LeaseStore, ReleaseNotifiesFollowersAtOnce) {
  std::string url = baton::testing::PgInstance::shared().fresh_database("notify");
  PgLeaseStore leader(url, "notify-leader"), follower(url, "notify-follower");
  auto won = leader.campaign(node("n1"), Millis{60000});
  ASSERT_TRUE(won && won->won);
  ASSERT_TRUE(follower.observe());  // connects and LISTENs
  EXPECT_FALSE(*follower.wait_for_change(Millis{50}));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)leader.release(won->lease.epoch, node("n1"));
  });
  auto t0 = std::chrono::steady_clock::now();
  auto got = follower.wait_for_change(Millis{5000});
  auto waited = std::chrono::steady_clock::now() - t0;
  releaser.join();
  ASSERT_TRUE(got);
  EXPECT_TRUE(*got);
  EXPECT_LT(waited, std::chrono::milliseconds(2000));
  EXPECT_TRUE(follower.observe()->released);
}

TEST(LeaseStore, RefusesAStandby) {
  auto& pg = baton::testing::PgInstance::shared();
  std::string primary_url = pg.fresh_database("standby_src");
  std::string standby_dir = pg.dir() + "/standby";
  std::string cmd = std::string(BATON_SOURCE_DIR) + "/scripts/pg-private standby " + pg.dir() + "/pg " + standby_dir +
                    " > " + pg.dir() + "/standby.url";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(pg.dir() + "/standby.url");
  std::string standby_url;
  std::getline(in, standby_url);
  // The replica carries every database; this one has the migrated schema.
  standby_url = standby_url.substr(0, standby_url.rfind('/')) + primary_url.substr(primary_url.rfind('/'));
  PgLeaseStore lease(standby_url, "standby-check");
  auto r = lease.campaign(node("n1"), Millis{60000});
  std::system((std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + standby_dir).c_str());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::db_is_standby) << r.error().message;
  EXPECT_NE(r.error().message.find("standby"), std::string::npos);
}
