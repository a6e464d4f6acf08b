// `baton doctor --config FILE` and `baton --version` as an operator runs
// them: real configs, a real PostgreSQL, a real node to dial.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "baton/store_pg/migrate.h"
#include "cluster.h"

using namespace baton::testing;
namespace fs = std::filesystem;

namespace {

struct Doctor {
  int exit_code = -1;
  std::string out;
};

Doctor doctor(const std::string& dir, const std::string& config) {
  ChildProcess p({BATON_BINARY, "doctor", "--config", config}, dir + "/doctor.log");
  Doctor d;
  d.exit_code = p.wait_for_exit(60s).value_or(-1);
  d.out = p.log();
  return d;
}

bool has(const Doctor& d, const std::string& needle) { return d.out.find(needle) != std::string::npos; }

/// A private copy of the example tokens (mode 0600 unless told).
std::string token_copy(const std::string& dir, const std::string& name, unsigned mode = 0600) {
  const std::string path = dir + "/" + name + ".token";
  fs::copy_file(std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/" + name + ".token", path,
                fs::copy_options::overwrite_existing);
  ::chmod(path.c_str(), mode);
  return path;
}

const char* jobs = "jobs:\n  - name: tick\n    tasks:\n      - {kind: BUILTIN, builtin: NOOP}\n";

}  // namespace

TEST(Doctor, AHealthyNodeConfigPassesAndSaysWhatItChecked) {
  Cluster c("doctor_node", jobs);
  const auto& ca = ThrowawayCa::shared();
  const std::string cfg = c.dir() + "/good.yaml";
  // The roles docs/operations.md describes: an owner that owns its
  // database and nothing more migrates (so the schema needs no more than
  // that), and the node runs as a role granted row rights only.
  const std::string url = PgInstance::shared().separate_roles_database("doctor_role").runtime_url;
  std::ofstream(cfg) << "node_id: n9\nlisten: 127.0.0.1:7999\nworker_token_file: " << token_copy(c.dir(), "worker")
                     << "\nadmin_token_file: " << token_copy(c.dir(), "admin") << "\ndatabase: {url: '" << url
                     << "'}\ntls: {cert_file: " << ca.node_cert() << ", key_file: " << ca.node_key() << "}\n";
  ::chmod(ca.node_key().c_str(), 0600);
  auto d = doctor(c.dir(), cfg);
  EXPECT_EQ(d.exit_code, 0) << d.out;
  EXPECT_TRUE(has(d, "ok    config      " + cfg + " loads (node n9)")) << d.out;
  EXPECT_TRUE(has(d, "worker_token_file " + c.dir() + "/worker.token is private (mode 0600)")) << d.out;
  EXPECT_TRUE(has(d, "ok    tls         the certificate and key load and match")) << d.out;
  EXPECT_TRUE(has(d, "(CN = baton node; IP:127.0.0.1, IP:::1, DNS:localhost) is valid")) << d.out;
  EXPECT_TRUE(has(d, "ok    database    ")) << d.out;
  EXPECT_TRUE(has(d, "is a primary (PostgreSQL 15")) << d.out;
  EXPECT_TRUE(has(d, "ok    database    one session per connection (a NOTIFY reached the connection that LISTENed"))
      << d.out;
  EXPECT_TRUE(has(d, "ok    database    the role doctor_role_")) << d.out;
  EXPECT_TRUE(has(d, " is not a superuser and has no server-program rights")) << d.out;
  EXPECT_TRUE(has(d, "_runtime_")) << d.out;
  EXPECT_TRUE(has(d, " does not own Baton's tables (the audit log is append-only against it)")) << d.out;
  EXPECT_FALSE(has(d, "owns Baton's tables")) << d.out;
  EXPECT_TRUE(has(d, "ok    database    no role but the owner may create objects in schema public")) << d.out;
  // The tests' PostgreSQL has no standby: said, with the reason it matters.
  EXPECT_TRUE(has(d, "warn  replication no synchronous standby")) << d.out;
  EXPECT_TRUE(has(d, "fix: an asynchronous failover can lose an epoch bump")) << d.out;
  EXPECT_TRUE(has(d, "ok    clock       this host's clock is")) << d.out;
  EXPECT_TRUE(has(d, " 0 failures")) << d.out;
}

TEST(Doctor, EveryProblemOfANodeConfigIsNamedWithItsFix) {
  Cluster c("doctor_bad_node", jobs);
  const auto& ca = ThrowawayCa::shared();
  const std::string cfg = c.dir() + "/bad.yaml";
  std::ofstream(cfg) << "node_id: n9\nlisten: 127.0.0.1:7999\nadvertise: node7.example:7001\nworker_token_file: "
                     << token_copy(c.dir(), "worker", 0644) << "\nadmin_token_file: " << token_copy(c.dir(), "admin")
                     << "\ndatabase: {url: 'postgresql://postgres@127.0.0.1:1/baton'}\ntls: {cert_file: "
                     << ca.node_cert() << ", key_file: " << ca.node_key() << "}\n";
  auto d = doctor(c.dir(), cfg);
  EXPECT_EQ(d.exit_code, 1) << d.out;
  EXPECT_TRUE(has(d, "warn  files       worker_token_file " + c.dir() +
                         "/worker.token is open to group or others "
                         "(mode 0644)"))
      << d.out;
  EXPECT_TRUE(has(d, "fix: chmod 600 " + c.dir() + "/worker.token")) << d.out;
  EXPECT_TRUE(has(d, "FAIL  tls         the node's certificate does not name node7.example (it names: IP:127.0.0.1"))
      << d.out;
  EXPECT_TRUE(has(d, "fix: issue a certificate naming node7.example")) << d.out;
  EXPECT_TRUE(has(d, "FAIL  database    cannot connect to 127.0.0.1:1/baton")) << d.out;
  EXPECT_TRUE(has(d, "fix: check database.url")) << d.out;

  // A database on another host, reached without a verified certificate.
  const std::string remote = c.dir() + "/remote.yaml";
  std::ofstream(remote) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                        << "\ndatabase: {url: 'postgresql://postgres@192.0.2.1:5432/baton?connect_timeout=1'}\ntls: "
                           "{cert_file: "
                        << ca.node_cert() << ", key_file: " << ca.node_key() << "}\n";
  auto r = doctor(c.dir(), remote);
  EXPECT_TRUE(has(r, "warn  database    the link to 192.0.2.1 is not TLS-verified (sslmode=prefer)")) << r.out;
  EXPECT_TRUE(has(r, "fix: add sslmode=verify-full")) << r.out;
  EXPECT_FALSE(has(d, "is not TLS-verified")) << "127.0.0.1 is this host: " << d.out;

  // The tests' own role is PostgreSQL's superuser: refused, with the fix.
  const std::string superuser = c.dir() + "/superuser.yaml";
  std::ofstream(superuser) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                           << "\ndatabase: {url: '" << c.url() << "'}\ntls: {cert_file: " << ca.node_cert()
                           << ", key_file: " << ca.node_key() << "}\n";
  auto s = doctor(c.dir(), superuser);
  EXPECT_EQ(s.exit_code, 1) << s.out;
  EXPECT_TRUE(has(s, "FAIL  database    the role postgres is a superuser")) << s.out;
  EXPECT_TRUE(has(s, "\"A least-privilege database role\"")) << s.out;

  // A role that owns the tables (it migrated them) could drop the audit
  // log's trigger: said, with the split as the fix.
  const std::string owner = c.dir() + "/owner.yaml";
  std::ofstream(owner) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                       << "\ndatabase: {url: '" << PgInstance::shared().least_privilege_database("doctor_owner")
                       << "'}\ntls: {cert_file: " << ca.node_cert() << ", key_file: " << ca.node_key() << "}\n";
  auto o = doctor(c.dir(), owner);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(has(o, "warn  database    the role doctor_owner_")) << o.out;
  EXPECT_TRUE(has(o, " owns Baton's tables: whoever takes a node's host could drop the audit log's")) << o.out;
  EXPECT_TRUE(has(o, "--grant-to <that role>")) << o.out;

  // Anyone may create objects where Baton's SECURITY DEFINER functions
  // look names up (security review N-L9): a failure, with the REVOKE.
  const std::string open_schema = PgInstance::shared().least_privilege_database("doctor_create");
  // (Only store/ links PostgreSQL's client library: psql does it here.)
  ASSERT_EQ(std::system(("psql -q '" + open_schema + "' -c 'GRANT CREATE ON SCHEMA public TO PUBLIC'").c_str()), 0);
  const std::string creators = c.dir() + "/creators.yaml";
  std::ofstream(creators) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                          << "\ndatabase: {url: '" << open_schema << "'}\ntls: {cert_file: " << ca.node_cert()
                          << ", key_file: " << ca.node_key() << "}\n";
  auto k = doctor(c.dir(), creators);
  EXPECT_EQ(k.exit_code, 1) << k.out;
  EXPECT_TRUE(has(k,
                  "FAIL  database    the roles PUBLIC may create objects in schema public, where Baton's SECURITY "
                  "DEFINER functions"))
      << k.out;
  EXPECT_TRUE(has(k, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")) << k.out;

  // A schema behind this binary's, and a role that does not own it: the
  // node cannot migrate at start; the owner must, and grant it again.
  const int shipped = baton::store::pg::embedded_migrations().back().version;
  const auto behind = PgInstance::shared().separate_roles_database("doctor_behind", shipped - 1);
  const std::string late = c.dir() + "/late.yaml";
  std::ofstream(late) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                      << "\ndatabase: {url: '" << behind.runtime_url << "'}\ntls: {cert_file: " << ca.node_cert()
                      << ", key_file: " << ca.node_key() << "}\n";
  auto l = doctor(c.dir(), late);
  EXPECT_EQ(l.exit_code, 1) << l.out;
  EXPECT_TRUE(has(l, "FAIL  database    the schema is at version " + std::to_string(shipped - 1) +
                         ", this binary needs " + std::to_string(shipped) + ", and the role " + behind.runtime_role +
                         " does not own the tables, so the node cannot migrate them"))
      << l.out;
  EXPECT_TRUE(has(
      l, "fix: as the owner: `baton migrate --database-url <the owner's URL> --grant-to " + behind.runtime_role + "`"))
      << l.out;

  const std::string broken = c.dir() + "/broken.yaml";
  std::ofstream(broken) << "node_id: n9\ndatabase: {url: 'postgresql://h/d'}\n";
  auto b = doctor(c.dir(), broken);
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_TRUE(has(b, "FAIL  config      " + broken + ": admin_token_file: is required")) << b.out;
}

// Replication as a failover manager leaves it: standbys that all stream
// asynchronously fail (a failover would promote one of them and lose
// commits); once the primary waits for one, it is reported in sync with
// the standbys' lag. A private primary and standby (scripts/pg-private),
// the shared test PostgreSQL staying without one.
TEST(Doctor, AsynchronousStandbysOnlyFailAndASynchronousOneIsReportedWithItsLag) {
  Cluster c("doctor_replication", jobs);
  const auto& ca = ThrowawayCa::shared();
  char tmpl[] = "/tmp/baton-doctor-pg-XXXXXX";
  const std::string parent = ::mkdtemp(tmpl);
  ::chmod(parent.c_str(), 0755);  // postgres runs the clusters when the tests run as root
  const std::string scripts = std::string(BATON_SOURCE_DIR) + "/scripts/pg-private ";
  const auto sh = command_stdout;
  const std::string url = sh(scripts + "start " + parent + "/primary baton");
  ASSERT_EQ(url.rfind("postgresql://", 0), 0u) << url;
  ASSERT_EQ(sh(scripts + "standby " + parent + "/primary " + parent + "/standby >/dev/null; echo $?"), "0");
  DbInspector primary(url);
  auto standbys = [&](const std::string& where) {
    return primary.scalar("SELECT count(*) FROM pg_stat_replication WHERE " + where);
  };
  ASSERT_TRUE(wait_until([&] { return standbys("state = 'streaming'") == "1"; }, 30s));
  const std::string cfg = c.dir() + "/replicated.yaml";
  std::ofstream(cfg) << "node_id: n9\nlisten: 127.0.0.1:7999\nadmin_token_file: " << token_copy(c.dir(), "admin")
                     << "\ndatabase: {url: '" << url << "'}\ntls: {cert_file: " << ca.node_cert()
                     << ", key_file: " << ca.node_key() << "}\n";
  auto async_only = doctor(c.dir(), cfg);
  EXPECT_EQ(async_only.exit_code, 1) << async_only.out;
  EXPECT_TRUE(has(async_only, "FAIL  replication 1 standby streams and none is synchronous")) << async_only.out;
  EXPECT_TRUE(has(async_only, "number of synchronous standbys")) << async_only.out;

  sh(scripts + "sync " + parent + "/primary");
  ASSERT_TRUE(wait_until([&] { return standbys("sync_state = 'sync'") == "1"; }, 30s));
  auto in_sync = doctor(c.dir(), cfg);
  EXPECT_TRUE(has(in_sync, "ok    replication 1 of 1 standbys streaming in sync ('*'); replay lag ")) << in_sync.out;
  EXPECT_TRUE(has(in_sync, " bytes behind")) << in_sync.out;
  EXPECT_FALSE(has(in_sync, "FAIL  replication")) << in_sync.out;
  sh(scripts + "stop " + parent + "/standby");
  sh(scripts + "stop " + parent + "/primary");
  std::filesystem::remove(parent);
}

TEST(Doctor, AWorkerConfigIsCheckedAgainstTheCoordinatorsItWillDial) {
  Cluster c("doctor_worker", jobs);
  // The worker's systemd unit is looked for where SYSTEMD_UNIT_PATH says,
  // as systemd does: here a directory of the test's own, empty at first
  // (the .deb test may have installed the real one on this host).
  const std::string units = c.dir() + "/units";
  std::filesystem::create_directories(units);
  ::setenv("SYSTEMD_UNIT_PATH", units.c_str(), 1);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  auto& ca = ThrowawayCa::shared();
  ca.add_workers({"w1"});
  static ThrowawayCa other;
  const std::string ep = "127.0.0.1:" + std::to_string(c.port("n1"));
  auto write = [&](const std::string& name, const std::string& id, const std::string& tls) {
    const std::string path = c.dir() + "/" + name + ".yaml";
    std::ofstream(path) << "worker_id: " << id << "\ncoordinators: [" << ep
                        << "]\ntoken_file: " << token_copy(c.dir(), "worker") << "\nspool_dir: " << c.dir() << "/spool-"
                        << name << "\n"
                        << tls;
    return path;
  };
  auto good = doctor(c.dir(), write("good", "w1",
                                    "tls: {ca_file: " + ca.ca() + ", cert_file: " + ca.cert("w1") +
                                        ", key_file: " + ca.key("w1") + "}\n"));
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_TRUE(has(good, "ok    coordinator " + ep + " answers, its certificate verified")) << good.out;
  EXPECT_TRUE(has(good, "ok    files       spool_dir " + c.dir() + "/spool-good will be made at start")) << good.out;
  EXPECT_TRUE(has(good, "warn  task_user   task_user is not set: PROGRAM tasks run as the worker's own user"))
      << good.out;
  EXPECT_TRUE(has(good, "ok    capability  no baton-worker.service in " + units)) << good.out;

  auto wrong_ca = doctor(c.dir(), write("wrong-ca", "w1", "tls: {ca_file: " + other.ca() + "}\n"));
  EXPECT_EQ(wrong_ca.exit_code, 1) << wrong_ca.out;
  EXPECT_TRUE(has(
      wrong_ca, "FAIL  coordinator " + ep + ": tls: certificate verify failed: unable to get local issuer certificate"))
      << wrong_ca.out;
  EXPECT_TRUE(has(wrong_ca, "fix: tls.ca_file must hold the CA that issued " + ep + "'s certificate")) << wrong_ca.out;

  auto not_me = doctor(c.dir(), write("not-me", "w2",
                                      "tls: {ca_file: " + ca.ca() + ", cert_file: " + ca.cert("w1") +
                                          ", key_file: " + ca.key("w1") + "}\n"));
  EXPECT_EQ(not_me.exit_code, 1) << not_me.out;
  EXPECT_TRUE(has(not_me, "FAIL  tls         the worker's certificate does not name worker w2")) << not_me.out;

  auto plain = doctor(c.dir(), write("plain", "w1", "insecure: true\n"));
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  EXPECT_TRUE(has(plain, "warn  tls         insecure: true")) << plain.out;
  EXPECT_TRUE(has(plain, "fix: the node speaks TLS: set tls.ca_file instead of insecure: true")) << plain.out;

  // What contains a task's tree and enforces its resources here (issue
  // 61): no groups at all, and groups in a directory laid out as cgroupfs
  // whose hierarchy offers some of the controllers, then all three.
  const std::string trusted = "tls: {ca_file: " + ca.ca() + "}\n";
  // A SQL task's connection across the network without a verified
  // certificate is said, as the node's own is (security review M3).
  auto sql = doctor(c.dir(), write("sql", "w1",
                                   "sql_connections: {warehouse: 'postgresql://etl@db.example.internal/dw', local: "
                                   "'postgresql://etl@127.0.0.1/dw'}\n" +
                                       trusted));
  EXPECT_TRUE(has(sql,
                  "warn  sql         sql_connections.warehouse reaches db.example.internal without a "
                  "TLS-verified link (sslmode=prefer)"))
      << sql.out;
  EXPECT_FALSE(has(sql, "sql_connections.local")) << "a loopback link is not warned of: " << sql.out;
  auto off = doctor(c.dir(), write("cg-off", "w1", "task_cgroup: 'off'\n" + trusted));
  EXPECT_TRUE(has(off,
                  "warn  cgroup      no task groups (task_cgroup is off): a task's tree is contained by its "
                  "supervisor alone"))
      << off.out;
  const std::string tree = c.dir() + "/cgroupfs";
  std::filesystem::create_directories(tree + "/baton-tasks");
  std::ofstream(tree + "/baton-tasks/cgroup.procs") << "";
  std::ofstream(tree + "/baton-tasks/cgroup.controllers") << "cpu pids\n";
  auto some = doctor(c.dir(), write("cg-some", "w1", "task_cgroup: " + tree + "/baton-tasks\n" + trusted));
  EXPECT_TRUE(has(some, "warn  cgroup      task groups under " + tree +
                            "/baton-tasks, but the hierarchy does not offer memory there"))
      << some.out;
  std::ofstream(tree + "/baton-tasks/cgroup.controllers") << "cpuset cpu io memory pids\n";
  auto all = doctor(c.dir(), write("cg-all", "w1", "task_cgroup: " + tree + "/baton-tasks\n" + trusted));
  EXPECT_TRUE(has(
      all, "ok    cgroup      task groups under " + tree + "/baton-tasks, with the memory, pids and cpu controllers"))
      << all.out;

  // What the unit gives the worker (security review N1): the packaged unit
  // without a task user is a failure before the first start, with one it
  // is said; a drop-in that grants more is warned of.
  fs::copy_file(std::string(BATON_SOURCE_DIR) + "/packaging/systemd/baton-worker.service",
                units + "/baton-worker.service");
  auto bare = doctor(c.dir(), write("unit-bare", "w1", trusted));
  EXPECT_EQ(bare.exit_code, 1) << bare.out;
  EXPECT_TRUE(has(bare, "FAIL  capability  baton-worker.service (" + units +
                            "/baton-worker.service) runs the worker as baton-worker with ambient CAP_KILL CAP_SETGID "
                            "CAP_SETUID and task_user is not set: it will refuse to start"))
      << bare.out;
  auto user = doctor(c.dir(), write("unit-user", "w1", "task_user: nobody\n" + trusted));
  EXPECT_TRUE(has(user, "ok    capability  baton-worker.service (" + units +
                            "/baton-worker.service) runs the worker as baton-worker with ambient CAP_KILL CAP_SETGID "
                            "CAP_SETUID; its tasks drop every capability before exec"))
      << user.out;
  fs::create_directories(units + "/baton-worker.service.d");
  std::ofstream(units + "/baton-worker.service.d/override.conf") << "[Service]\nAmbientCapabilities=CAP_SYS_ADMIN\n";
  auto more = doctor(c.dir(), write("unit-more", "w1", "task_user: nobody\n" + trusted));
  EXPECT_TRUE(has(more, "CAP_SYS_ADMIN is more than a worker needs")) << more.out;
  ::unsetenv("SYSTEMD_UNIT_PATH");
}

TEST(Doctor, VersionNamesTheBinaryAndItsProtocol) {
  char tmpl[] = "/tmp/baton-version-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ChildProcess p({BATON_BINARY, "--version"}, dir + "/version.log");
  EXPECT_EQ(p.wait_for_exit(10s), 0);
  EXPECT_EQ(p.log(), "baton 0.14.0 (worker protocol 1-7)\n");
  fs::remove_all(dir);
}

// Every command answers --help with its own usage on stdout and exit 0
// (before: `baton doctor --help` was "unexpected argument", exit 2).
TEST(Doctor, EveryCommandAnswersHelpWithItsOwnUsage) {
  char tmpl[] = "/tmp/baton-help-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  for (const std::string command : {"node", "worker", "migrate", "doctor", "ctl", "cron"}) {
    for (const std::string flag : {"--help", "-h"}) {
      ChildProcess p({BATON_BINARY, command, flag}, dir + "/" + command + flag + ".log");
      EXPECT_EQ(p.wait_for_exit(10s), 0) << command << ' ' << flag << ": " << p.log();
      EXPECT_NE(p.log().find("usage: baton " + command), std::string::npos)
          << command << ' ' << flag << ": " << p.log();
    }
  }
  fs::remove_all(dir);
}
