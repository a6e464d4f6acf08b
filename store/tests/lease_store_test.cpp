// PgLeaseStore against real PostgreSQL: one winner per epoch under
// concurrent campaigns, renewal and release predicates, NOTIFY on release,
// and refusal to use a standby.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "baton/store_pg/pg_session.h"
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
  // SPEC 2.65: every election is in audit_log, written by the campaign's own
  // transaction (a lost campaign writes none): who won which epoch, from whom.
  EXPECT_EQ(
      baton::testing::DbInspector(url).scalar(
          "SELECT string_agg(actor || ':' || epoch || ':' || (details->>'previous_leader') || ':' ||"
          " (details->>'incarnation'), ',' ORDER BY epoch) FROM audit_log WHERE action = 'election'"
          " AND subject = 'leader_lease'"),
      "n1:" + std::to_string(e.value) + "::n1-incarnation,n2:" + std::to_string(e.value + 1) + ":n1:n2-incarnation");
}

// A planned handover (schemas/0043): the lease is released, kept for the
// node named for a while (the database refuses every other campaign,
// whatever the caller judged), taken by that node, and the reservation
// gone with its campaign.
TEST(LeaseStore, AHandoverKeepsTheLeaseForTheNodeNamedUntilItCampaigns) {
  std::string url = baton::testing::PgInstance::shared().fresh_database("lease");
  PgLeaseStore a(url, "lease-a"), b(url, "lease-b");
  NodeIdentity n1 = node("n1"), n2 = node("n2"), n3 = node("n3");
  auto won = a.campaign(n1, Millis{60000});
  ASSERT_TRUE(won && won->won);
  const Epoch e = won->lease.epoch;
  baton::testing::DbInspector db(url);
  const std::string audited =
      "SELECT string_agg(actor || ' ' || epoch || ' ' || (details ->> 'from') || '>' || (details ->> 'to'), ',')"
      " FROM audit_log WHERE action = 'leader.handover'";
  EXPECT_EQ(*b.hand_over(e, n2, "n3", Millis{60000}, "ops"), WriteOutcome::fenced) << "not n2's lease";
  EXPECT_EQ(db.scalar(audited), "") << "a refused handover is not recorded";
  ASSERT_EQ(*a.hand_over(e, n1, "n3", Millis{60000}, "ops"), WriteOutcome::applied);
  // Audited by the release's own transaction (SPEC 2.64): who asked, the
  // epoch handed over, from whom to whom.
  EXPECT_EQ(db.scalar(audited), "ops " + std::to_string(e.value) + " n1>n3");
  auto seen = b.observe();
  ASSERT_TRUE(seen);
  EXPECT_TRUE(seen->expired());
  EXPECT_EQ(seen->handover_to, "n3");
  EXPECT_GT(seen->handover_left.count(), 50000);
  EXPECT_TRUE(seen->reserved_for_other(n2));
  EXPECT_FALSE(seen->reserved_for_other(n3));
  EXPECT_FALSE(b.campaign(n2, Millis{60000})->won) << "kept for n3";
  EXPECT_FALSE(a.campaign(n1, Millis{60000})->won) << "kept for n3, its old holder included";
  auto taken = b.campaign(n3, Millis{60000});
  ASSERT_TRUE(taken && taken->won);
  EXPECT_EQ(taken->lease.epoch.value, e.value + 1);
  EXPECT_EQ(taken->lease.handover_to, "");
  // A reservation that ran out keeps no one out.
  ASSERT_EQ(*b.hand_over(taken->lease.epoch, n3, "n9", Millis{1}, ""), WriteOutcome::applied);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(a.campaign(n1, Millis{60000})->won);
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

namespace {
/// A streaming standby of the shared test cluster (scripts/pg-private); the
/// test stops it.
struct Standby {
  std::string dir = baton::testing::PgInstance::shared().dir() + "/standby";
  std::string url;  ///< its postgres database
  Standby() {
    auto& pg = baton::testing::PgInstance::shared();
    const std::string cmd = std::string(BATON_SOURCE_DIR) + "/scripts/pg-private standby " + pg.dir() + "/pg " + dir +
                            " > " + pg.dir() + "/standby.url";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(pg.dir() + "/standby.url");
    std::getline(in, url);
  }
  ~Standby() { (void)!std::system((std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + dir).c_str()); }
  /// The URL of database `db` on the standby (it replicates every database).
  std::string of(const std::string& primary_url) const {
    return url.substr(0, url.rfind('/')) + primary_url.substr(primary_url.rfind('/'));
  }
};
/// "host:port" of a postgresql:// URL.
std::string host_port(const std::string& url) {
  const auto at = url.find('@');
  return url.substr(at + 1, url.find('/', at) - at - 1);
}
}  // namespace

TEST(LeaseStore, RefusesAStandbyAndFindsThePrimaryAmongSeveralHosts) {
  auto& pg = baton::testing::PgInstance::shared();
  std::string primary_url = pg.fresh_database("standby_src");
  Standby standby;
  const std::string standby_url = standby.of(primary_url);
  {
    PgLeaseStore lease(standby_url, "standby-check");
    auto r = lease.campaign(node("n1"), Millis{60000});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::db_is_standby) << r.error().message;
    EXPECT_NE(r.error().message.find("standby"), std::string::npos);
  }
  // Both hosts in one URL, the standby first: the primary is the one used.
  const auto at = primary_url.find('@');
  const std::string both = primary_url.substr(0, at + 1) + host_port(standby_url) + "," + host_port(primary_url) +
                           primary_url.substr(primary_url.find('/', at));
  PgLeaseStore lease(both, "multi-host");
  auto r = lease.campaign(node("n1"), Millis{60000});
  ASSERT_TRUE(r) << both << ": " << r.error().message;
  EXPECT_TRUE(r->won);
}

TEST(RotateHosts, TheNextAttemptStartsAtTheNextHost) {
  const std::string url = "postgresql://baton@a:1,b:2,c:3/baton?target_session_attrs=primary";
  EXPECT_EQ(rotate_hosts(url, 0), url);
  EXPECT_EQ(rotate_hosts(url, 1), "postgresql://baton@b:2,c:3,a:1/baton?target_session_attrs=primary");
  EXPECT_EQ(rotate_hosts(url, 2), "postgresql://baton@c:3,a:1,b:2/baton?target_session_attrs=primary");
  EXPECT_EQ(rotate_hosts(url, 3), url);
  EXPECT_EQ(rotate_hosts("postgresql://a:1,b:2/baton", 1), "postgresql://b:2,a:1/baton");
  EXPECT_EQ(rotate_hosts("postgresql://u:p@a:1,b:2", 1), "postgresql://u:p@b:2,a:1");
  EXPECT_EQ(rotate_hosts("postgresql://u@one:5432/baton", 1), "postgresql://u@one:5432/baton");
}

// libpq tries the next host of a URL only when one refuses or times out: a
// host that accepts and then closes (a TCP proxy or load balancer in front
// of a dead server; the chaos harness's proxies found it) ended every
// attempt, and the node could not reach the primary behind the next host
// until the dead one came back. A failed attempt now makes the next start
// at the next host.
TEST(LeaseStore, AHostThatAcceptsAndClosesDoesNotHideThePrimaryBehindIt) {
  auto url = baton::testing::PgInstance::shared().fresh_database("accepts_and_closes");
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int dead_port = ntohs(addr.sin_port);
  std::atomic<bool> stop{false};
  std::thread closer([&] {
    while (!stop.load()) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) ::close(::accept(listener, nullptr, nullptr));
    }
  });
  const auto at = url.find('@');
  const std::string both = url.substr(0, at + 1) + "127.0.0.1:" + std::to_string(dead_port) + "," + host_port(url) +
                           url.substr(url.find('/', at));
  PgLeaseStore lease(both, "accepts-and-closes");
  auto first = lease.campaign(node("n1"), Millis{60000});
  auto second = first ? first : lease.campaign(node("n1"), Millis{60000});
  stop = true;
  closer.join();
  ::close(listener);
  ASSERT_TRUE(second) << both << ": " << second.error().message;
  EXPECT_TRUE(second->won);
}

TEST(LeaseStore, AConnectionThatTurnsReadOnlyIsDroppedAtItsNextStatement) {
  auto url = baton::testing::PgInstance::shared().fresh_database("read_only");
  PgSession session(url, "turns-read-only");
  // As a demoted primary answers: every write fails with sqlstate 25006.
  ASSERT_TRUE(session.with<void>([](pqxx::connection& c) -> Result<void> {
    pqxx::nontransaction tx(c);
    tx.exec("SET default_transaction_read_only = on");
    return {};
  }));
  auto write = [](pqxx::connection& c) -> Result<void> {
    pqxx::nontransaction tx(c);
    tx.exec("CREATE TEMPORARY TABLE probe (x int)");
    return {};
  };
  auto refused = session.with<void>(write);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::db_is_standby) << refused.error().message;
  // The next call connects again (a fresh session, not read-only).
  EXPECT_TRUE(session.with<void>(write));
}
