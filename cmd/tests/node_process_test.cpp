// Real `baton node` processes against a private PostgreSQL: start-up
// migrations, failover after kill -9 and SIGTERM, a leader whose database
// stops answering, duplicate node ids, restarts, and bad configuration.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "baton/store_pg/migrate.h"
#include "baton/store_testing/pg_instance.h"
#include "baton/testing/child_process.h"

using namespace std::chrono_literals;
using baton::testing::ChildProcess;
using baton::testing::DbInspector;
using baton::testing::PgInstance;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto lease = 3000ms;
constexpr auto renew_every = 500ms;
constexpr auto safety_margin = 1000ms;

class NodeProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/baton-node-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    nodes_.clear();  // SIGKILL + reap anything still running
    for (int pid : stopped_backends_) ::kill(pid, SIGCONT);
    if (!HasFailure())
      std::filesystem::remove_all(dir_);
    else
      std::printf("logs kept in %s\n", dir_.c_str());
  }

  std::string write_config(const std::string& name, const std::string& node_id, const std::string& url,
                           const std::string& extra = "") {
    std::string path = dir_ + "/" + name + ".yaml";
    configs_++;
    std::ofstream(path) << "node_id: " << node_id << "\nlisten: 127.0.0.1:" << baton::testing::free_loopback_port()
                        << "\nworker_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/worker.token"
                        << "\nadmin_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/admin.token"
                        << "\ndatabase:\n  url: " << url
                        << "\n  start_timeout: 1s\nelection:\n  lease: " << lease.count()
                        << "ms\n  renew_every: " << renew_every.count()
                        << "ms\n  safety_margin: " << safety_margin.count() << "ms\n  poll_every: 500ms\n"
                        << "tls: {cert_file: " << baton::testing::ThrowawayCa::shared().node_cert()
                        << ", key_file: " << baton::testing::ThrowawayCa::shared().node_key() << "}\n"
                        << extra;
    return path;
  }

  ChildProcess& start(const std::string& name, const std::string& config) {
    nodes_.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{BATON_BINARY, "node", "--config", config},
                                                    dir_ + "/" + name + ".log"));
    return *nodes_.back();
  }

  static bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds max) {
    for (auto end = Clock::now() + max; Clock::now() < end; std::this_thread::sleep_for(10ms))
      if (cond()) return true;
    return cond();
  }

  /// Epochs this process logged becoming leader at.
  static std::vector<long> led_epochs(const ChildProcess& p) {
    std::vector<long> out;
    static const std::regex re("to=leader epoch=(\\d+)");
    std::string log = p.log();
    for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) out.push_back(std::stol((*it)[1]));
    return out;
  }

  /// Waits until the lease names a leader with an epoch above `above`.
  baton::testing::LeaseRow wait_for_leader(const DbInspector& db, long above, std::chrono::milliseconds max) {
    baton::testing::LeaseRow row{};
    wait_for(
        [&] {
          try {
            row = db.lease();
          } catch (const std::exception&) {
            return false;  // schema not migrated yet
          }
          return row.epoch > above && !row.released;
        },
        max);
    return row;
  }

  std::string dir_;
  int configs_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
  std::vector<int> stopped_backends_;
};

}  // namespace

TEST_F(NodeProcess, ThreeNodesStartedAtOnceApplyEachMigrationOnceAndElectOneLeader) {
  auto url = PgInstance::shared().fresh_database("start3", /*migrated=*/false);
  std::vector<ChildProcess*> procs;
  for (int i = 1; i <= 3; ++i) {
    std::string id = "n" + std::to_string(i);
    procs.push_back(&start(id, write_config(id, id, url)));
  }
  DbInspector db(url);
  auto leader = wait_for_leader(db, 0, 10s);
  ASSERT_EQ(leader.epoch, 1);
  std::this_thread::sleep_for(2 * renew_every);
  int applied_lines = 0, leaders = 0;
  for (auto* p : procs) {
    std::string log = p->log();
    for (auto pos = log.find("migration_applied"); pos != std::string::npos;
         pos = log.find("migration_applied", pos + 1))
      ++applied_lines;
    leaders += static_cast<int>(!led_epochs(*p).empty());
  }
  auto migrations = db.applied_migrations();
  EXPECT_EQ(std::set<int>(migrations.begin(), migrations.end()).size(), migrations.size());
  EXPECT_EQ(applied_lines, static_cast<int>(migrations.size())) << "each migration applied by exactly one node";
  EXPECT_EQ(leaders, 1);
  EXPECT_EQ(db.epoch_history().size(), 1u);
}

TEST_F(NodeProcess, KillNineOfLeaderThenSigtermOfNextLeaderFailOver) {
  auto url = PgInstance::shared().fresh_database("failover");
  std::map<std::string, ChildProcess*> by_id;
  for (int i = 1; i <= 3; ++i) {
    std::string id = "n" + std::to_string(i);
    by_id[id] = &start(id, write_config(id, id, url));
  }
  DbInspector db(url);
  auto first = wait_for_leader(db, 0, 10s);
  ASSERT_EQ(first.epoch, 1);
  std::this_thread::sleep_for(renew_every * 2);

  // kill -9: nobody releases; a follower takes over once the lease expires.
  auto t0 = Clock::now();
  by_id[first.leader_id]->signal(SIGKILL);
  auto second = wait_for_leader(db, first.epoch, lease + 5s);
  auto kill9_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_EQ(second.epoch, first.epoch + 1);
  ASSERT_NE(second.leader_id, first.leader_id);
  std::printf("failover after kill -9 of %s: %s leads epoch %ld after %lld ms (lease %lld ms + renew %lld ms)\n",
              first.leader_id.c_str(), second.leader_id.c_str(), static_cast<long>(second.epoch),
              static_cast<long long>(kill9_ms), static_cast<long long>(lease.count()),
              static_cast<long long>(renew_every.count()));
  EXPECT_LE(kill9_ms, (lease + renew_every).count());
  std::this_thread::sleep_for(renew_every * 2);

  // SIGTERM: the leader releases with NOTIFY and the last follower takes over at once.
  t0 = Clock::now();
  ChildProcess* leaving = by_id[second.leader_id];
  leaving->signal(SIGTERM);
  auto third = wait_for_leader(db, second.epoch, lease + 5s);
  auto term_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_EQ(third.epoch, second.epoch + 1);
  std::printf("failover after SIGTERM of %s: %s leads epoch %ld after %lld ms\n", second.leader_id.c_str(),
              third.leader_id.c_str(), static_cast<long>(third.epoch), static_cast<long long>(term_ms));
  EXPECT_LT(term_ms, lease.count() / 3) << "graceful hand-over should not wait for the lease";
  EXPECT_EQ(leaving->wait_for_exit(5s), 0);
  EXPECT_NE(leaving->log().find("reason=shutdown"), std::string::npos);
  auto history = db.epoch_history();
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].end_reason.value_or(""), "expired");
  EXPECT_EQ(history[1].end_reason.value_or(""), "released");
}

TEST_F(NodeProcess, LeaderWhoseDatabaseStopsAnsweringStepsDownBeforeAnotherIsElected) {
  auto url = PgInstance::shared().fresh_database("hang");
  auto& n1 = start("n1", write_config("n1", "n1", url));
  DbInspector db(url);
  ASSERT_EQ(wait_for_leader(db, 0, 10s).leader_id, "n1");
  auto& n2 = start("n2", write_config("n2", "n2", url));
  std::this_thread::sleep_for(1s);
  ASSERT_EQ(db.lease().leader_id, "n1");

  // Freeze every server process that serves n1: its statements never return.
  auto pids = db.backend_pids("baton-node-n1");
  ASSERT_FALSE(pids.empty());
  for (int pid : pids) {
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    stopped_backends_.push_back(pid);
  }
  auto t0 = Clock::now();
  Clock::time_point stepped_down{}, elected{};
  wait_for(
      [&] {
        if (stepped_down == Clock::time_point{} && n1.log().find("reason=renew_unconfirmed") != std::string::npos)
          stepped_down = Clock::now();
        if (elected == Clock::time_point{} && db.lease().epoch > 1) elected = Clock::now();
        return stepped_down != Clock::time_point{} && elected != Clock::time_point{};
      },
      lease + 10s);
  ASSERT_NE(stepped_down, Clock::time_point{}) << "n1 never stepped down";
  ASSERT_NE(elected, Clock::time_point{}) << "nobody took over";
  auto ms = [&](Clock::time_point t) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(t - t0).count());
  };
  std::printf("database of n1 frozen: n1 stepped down after %lld ms, %s elected after %lld ms\n", ms(stepped_down),
              db.lease().leader_id.c_str(), ms(elected));
  EXPECT_LT(stepped_down, elected) << "the old leader must stop before anyone else can lead";
  EXPECT_LE(ms(stepped_down), (lease - safety_margin + 200ms).count());
  EXPECT_EQ(db.lease().leader_id, "n2");
  EXPECT_EQ(led_epochs(n2), std::vector<long>{2});

  for (int pid : pids) ::kill(pid, SIGCONT);
  stopped_backends_.clear();
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(n1.running());
  EXPECT_EQ(led_epochs(n1), std::vector<long>{1}) << "n1 must not lead again while n2 holds the lease";
}

TEST_F(NodeProcess, SameNodeIdTwiceAndRestartsNeverShareOrResumeAnEpoch) {
  auto url = PgInstance::shared().fresh_database("twins");
  auto& a = start("twin-a", write_config("twin-a", "twin", url));
  auto& b = start("twin-b", write_config("twin-b", "twin", url));
  DbInspector db(url);
  auto first = wait_for_leader(db, 0, 10s);
  ASSERT_EQ(first.epoch, 1);
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(led_epochs(a).size() + led_epochs(b).size(), 1u) << "two processes named 'twin' both led";
  ChildProcess& leader = led_epochs(a).empty() ? b : a;
  ChildProcess& other = led_epochs(a).empty() ? a : b;

  // kill -9 the leading twin and restart it at once with the same config.
  leader.signal(SIGKILL);
  leader.wait_for_exit(5s);
  auto& restarted = start("twin-restarted", write_config("twin-r", "twin", url));
  auto second = wait_for_leader(db, 1, lease + 5s);
  ASSERT_EQ(second.epoch, 2);
  std::this_thread::sleep_for(1s);
  auto history = db.epoch_history();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_NE(history[0].leader_incarnation, history[1].leader_incarnation);
  for (long e : led_epochs(restarted)) EXPECT_GT(e, 1) << "restarted process resumed the old epoch";
  EXPECT_EQ(led_epochs(restarted).size() + led_epochs(other).size(), 1u);
}

TEST_F(NodeProcess, BadConfigurationExitsNonZeroNamingKeyAndFile) {
  struct Case {
    std::string name;
    std::string body;
    std::vector<std::string> expected;
  };
  const std::string db =
      "database:\n  url: postgresql://postgres@127.0.0.1:1/baton\n  start_timeout: 300ms\n"
      "worker_token_file: " +
      std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/worker.token\n"
      "admin_token_file: " +
      std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/admin.token\ninsecure: true\n";
  std::vector<Case> cases = {
      {"unknown-key", "node_id: n1\n" + db + "leese: 3s\n", {"unknown-key.yaml", "leese: unknown key"}},
      {"bad-duration",
       "node_id: n1\n" + db + "election:\n  lease: 3 secs\n",
       {"bad-duration.yaml", "election.lease", "'3 secs'"}},
      {"no-url", "node_id: n1\n", {"no-url.yaml", "database.url: is required"}},
      {"unreachable", "node_id: n1\n" + db, {"127.0.0.1:1/baton", "refused"}},
  };
  for (const auto& c : cases) {
    std::string path = dir_ + "/" + c.name + ".yaml";
    std::ofstream(path) << c.body;
    for (const char* command : {"node", "migrate"}) {
      ChildProcess p({BATON_BINARY, command, "--config", path}, dir_ + "/" + c.name + "-" + command + ".log");
      auto code = p.wait_for_exit(20s);
      ASSERT_TRUE(code.has_value()) << c.name << ": did not exit";
      EXPECT_EQ(*code, 2) << c.name << " " << command << ": " << p.log();
      for (const auto& e : c.expected) EXPECT_NE(p.log().find(e), std::string::npos) << c.name << ": " << p.log();
    }
  }
  ChildProcess missing({BATON_BINARY, "node", "--config", dir_ + "/absent.yaml"}, dir_ + "/absent.log");
  EXPECT_EQ(missing.wait_for_exit(5s), 2);
  EXPECT_NE(missing.log().find("absent.yaml: cannot open file"), std::string::npos) << missing.log();
  ChildProcess no_args({BATON_BINARY, "node"}, dir_ + "/noargs.log");
  EXPECT_EQ(no_args.wait_for_exit(5s), 2);
  EXPECT_NE(no_args.log().find("--config FILE is required"), std::string::npos) << no_args.log();
  ChildProcess unknown({BATON_BINARY, "nod"}, dir_ + "/unknown.log");
  EXPECT_EQ(unknown.wait_for_exit(5s), 2);
  EXPECT_NE(unknown.log().find("unknown command 'nod'"), std::string::npos) << unknown.log();
}

TEST_F(NodeProcess, MigrateCommandAndAutoMigrateFalse) {
  auto url = PgInstance::shared().fresh_database("migratecmd", /*migrated=*/false);
  auto cfg = write_config("m", "m1", url, "auto_migrate: false\n");
  ChildProcess refused({BATON_BINARY, "node", "--config", cfg}, dir_ + "/refused.log");
  EXPECT_EQ(refused.wait_for_exit(10s), 2);
  EXPECT_NE(refused.log().find("run `baton migrate` first"), std::string::npos) << refused.log();

  ChildProcess m1({BATON_BINARY, "migrate", "--config", cfg}, dir_ + "/m1.log");
  EXPECT_EQ(m1.wait_for_exit(10s), 0) << m1.log();
  int shipped = 0;  // every schemas/*.sql is a migration
  for (const auto& f : std::filesystem::directory_iterator(std::string(BATON_SOURCE_DIR) + "/schemas"))
    shipped += f.path().extension() == ".sql";
  EXPECT_NE(m1.log().find("applied " + std::to_string(shipped) + " migrations"), std::string::npos) << m1.log();
  ChildProcess m2({BATON_BINARY, "migrate", "--config", cfg}, dir_ + "/m2.log");
  EXPECT_EQ(m2.wait_for_exit(10s), 0) << m2.log();
  EXPECT_NE(m2.log().find("applied 0 migrations"), std::string::npos) << m2.log();

  auto& node = start("m1node", cfg);
  DbInspector db(url);
  EXPECT_EQ(wait_for_leader(db, 0, 10s).leader_id, "m1");
  node.signal(SIGTERM);
  EXPECT_EQ(node.wait_for_exit(5s), 0);
  EXPECT_TRUE(db.lease().released);
}

// The owner migrates and grants; the nodes run as a role of their own
// (docs/operations.md, "A runtime role apart from the owner").
TEST_F(NodeProcess, MigrateGrantsTheNodesRoleAndANodeRunsAsIt) {
  const auto db = PgInstance::shared().separate_roles_database("grantcmd");
  ChildProcess grant({BATON_BINARY, "migrate", "--database-url", db.owner_url, "--grant-to", db.runtime_role},
                     dir_ + "/grant.log");
  EXPECT_EQ(grant.wait_for_exit(10s), 0) << grant.log();
  EXPECT_NE(grant.log().find("applied 0 migrations"), std::string::npos) << grant.log();
  EXPECT_NE(grant.log().find("granted " + db.runtime_role + " a node's rights on "), std::string::npos) << grant.log();
  ChildProcess super({BATON_BINARY, "migrate", "--database-url", db.owner_url, "--grant-to", "postgres"},
                     dir_ + "/super.log");
  EXPECT_EQ(super.wait_for_exit(10s), 2);
  EXPECT_NE(super.log().find("cannot grant the runtime role on"), std::string::npos) << super.log();
  EXPECT_NE(super.log().find("'postgres' is a superuser"), std::string::npos) << super.log();
  ChildProcess neither({BATON_BINARY, "migrate", "--grant-to", "x"}, dir_ + "/neither.log");
  EXPECT_EQ(neither.wait_for_exit(10s), 2);
  EXPECT_NE(neither.log().find("--config FILE or --database-url URL is required"), std::string::npos);

  // A node as a role nobody granted anything is refused at start, with
  // who can fix it and how.
  ChildProcess ungranted({BATON_BINARY, "node", "--config", write_config("u", "u1", db.ungranted_url)},
                         dir_ + "/ungranted.log");
  EXPECT_EQ(ungranted.wait_for_exit(10s), 2);
  EXPECT_NE(ungranted.log().find("permission denied"), std::string::npos) << ungranted.log();
  EXPECT_NE(ungranted.log().find("as the database's owner, run `baton migrate --database-url"), std::string::npos)
      << ungranted.log();
  // The runtime role of a database whose schema is behind this binary's:
  // it connects, but cannot migrate what it does not own.
  const int shipped = baton::store::pg::embedded_migrations().back().version;
  const auto behind = PgInstance::shared().separate_roles_database("grantlate", shipped - 1);
  ChildProcess late({BATON_BINARY, "node", "--config", write_config("l", "l1", behind.runtime_url)},
                    dir_ + "/late.log");
  EXPECT_EQ(late.wait_for_exit(10s), 2);
  EXPECT_NE(late.log().find("permission denied for schema public"), std::string::npos) << late.log();
  EXPECT_EQ(late.log().find("[sqlstate ]"), std::string::npos) << "no empty code: " << late.log();
  EXPECT_NE(late.log().find("as the database's owner, run `baton migrate --database-url"), std::string::npos)
      << late.log();

  // A node as the runtime role, auto_migrate left on: the schema is
  // current, so it only reads it, and it is elected.
  auto cfg = write_config("g", "g1", db.runtime_url);
  auto& node = start("g1node", cfg);
  DbInspector inspect(db.owner_url);
  EXPECT_EQ(wait_for_leader(inspect, 0, 10s).leader_id, "g1");
  node.signal(SIGTERM);
  EXPECT_EQ(node.wait_for_exit(5s), 0);
  EXPECT_TRUE(inspect.lease().released);
}
