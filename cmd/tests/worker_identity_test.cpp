// Per-worker identity at the process level (docs/security.md, "Worker
// identity"): nodes without a shared worker token; an operator grants a
// worker id labels and capacity with `baton ctl workers enroll`, the worker
// trades the bootstrap token for a credential of its own, and from then on
// only that credential attaches that id, with no more than the grant. A
// bootstrap token is single use and expires; credentials are rotated and
// revoked with `baton ctl`, and a revoked worker's session is closed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "cluster.h"

using namespace baton::testing;
namespace fs = std::filesystem;

namespace {

const char* jobs = R"(jobs:
  - name: tick
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";

ClusterOptions credentials_only() {
  ClusterOptions o;
  o.shared_worker_token = false;
  return o;
}

struct CtlResult {
  int exit_code = -1;
  std::string out;
};

CtlResult ctl(Cluster& c, const std::string& node, std::vector<std::string> args) {
  std::vector<std::string> argv{BATON_BINARY, "ctl",      "--addr", "127.0.0.1:" + std::to_string(c.port(node)),
                                "--token",    admin_token};
  argv.insert(argv.end(), args.begin(), args.end());
  static int n = 0;
  ChildProcess p(argv, c.dir() + "/ctl-" + std::to_string(++n) + ".log");
  auto rc = p.wait_for_exit(30s);
  return {rc ? *rc : -1, p.log()};
}

/// `baton ctl ... workers enroll|rotate` with --output json: the bootstrap token.
std::string bootstrap_token(const CtlResult& r) {
  std::smatch m;
  static const std::regex re("\"token\":\"(baton_[0-9a-f]{64})\"");
  if (!std::regex_search(r.out, m, re)) return "";
  return m[1];
}

int attached_workers(Cluster& c, const std::string& node) {
  auto r = c.http(c.port(node), "GET", "/status");
  auto at = r.body.find("\"attached_workers\":");
  return at == std::string::npos ? -1 : std::atoi(r.body.c_str() + at + 19);
}

bool log_has(ChildProcess& p, const std::string& needle) { return p.log().find(needle) != std::string::npos; }

/// Writes a bootstrap token where a worker's config points, and the config
/// lines that point there.
std::string enrollment_lines(Cluster& c, const std::string& process, const std::string& token) {
  const std::string file = c.dir() + "/bootstrap-" + process;
  std::ofstream(file) << token << "\n";
  return "enrollment_token_file: " + file + "\n";
}

}  // namespace

TEST(WorkerIdentity, OnlyAWorkersOwnCredentialAttachesItsIdWithinItsGrant) {
  Cluster c("identity_grant", jobs, credentials_only());
  c.start_node("n1");
  const std::string leader = c.wait_for_leader(10s);
  ASSERT_EQ(leader, "n1");

  auto w1 = ctl(c, "n1", {"--output", "json", "workers", "enroll", "w1", "--capacity", "2", "--labels", "zone=a"});
  ASSERT_EQ(w1.exit_code, 0) << w1.out;
  auto w2 = ctl(c, "n1", {"--output", "json", "workers", "enroll", "w2", "--capacity", "1"});
  ASSERT_EQ(w2.exit_code, 0) << w2.out;
  const std::string w1_bootstrap = bootstrap_token(w1), w2_bootstrap = bootstrap_token(w2);
  ASSERT_FALSE(w1_bootstrap.empty()) << w1.out;
  // Only hashes are stored.
  EXPECT_EQ(c.db().scalar("SELECT count(*) FROM worker_enrollments WHERE token_sha256 LIKE '%" +
                          w1_bootstrap.substr(6, 16) + "%'"),
            "0");

  c.worker_auth_override["w1"] = enrollment_lines(c, "w1", w1_bootstrap);
  c.worker_auth_override["w2"] = enrollment_lines(c, "w2", w2_bootstrap);
  auto& worker1 = c.start_worker("w1", 2, {}, "", "{zone: a}");
  c.start_worker("w2", 1);
  ASSERT_TRUE(c.wait_for_workers("n1", 2, 15s)) << worker1.log();
  EXPECT_TRUE(log_has(worker1, "worker_enrolled worker=\"w1\""));
  struct stat st {};
  ASSERT_EQ(::stat((c.dir() + "/spool-w1/credential").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto run = c.trigger("n1", "tick");
  ASSERT_GT(run, 0);
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 15s));

  // A bootstrap token is single use: replayed, it is refused.
  auto replay = c.http(c.port("n1"), "POST", "/api/v1/enroll", {{"Authorization", "Bearer " + w1_bootstrap}},
                       "{\"worker_id\":\"w1\"}");
  EXPECT_EQ(replay.status, 401) << replay.body;
  EXPECT_NE(replay.body.find("already used"), std::string::npos) << replay.body;

  // Impostors, each a real worker process next to the real w1:
  // - a second process claiming w1 with the cluster's example shared token
  //   (the nodes accept none);
  c.worker_auth_override["w1-shared"] =
      std::string("token_file: ") + BATON_SOURCE_DIR + "/cmd/tests/tokens/worker.token\n";
  auto& shared = c.start_worker("w1", 2, {}, "w1-shared", "{zone: a}");
  // - a process claiming w1 with w2's credential (a worker that took over
  //   another's id);
  fs::create_directories(c.dir() + "/spool-w1-stolen");
  fs::copy_file(c.dir() + "/spool-w2/credential", c.dir() + "/spool-w1-stolen/credential");
  c.worker_auth_override["w1-stolen"] = "enrollment_token_file: " + c.dir() + "/no-such-bootstrap\n";
  auto& stolen = c.start_worker("w1", 2, {}, "w1-stolen", "{zone: a}");
  // - w2 itself claiming a label and capacity it was not granted.
  fs::create_directories(c.dir() + "/spool-w2-spoof");
  fs::copy_file(c.dir() + "/spool-w2/credential", c.dir() + "/spool-w2-spoof/credential");
  c.worker_auth_override["w2-spoof"] = "enrollment_token_file: " + c.dir() + "/no-such-bootstrap\n";
  auto& spoof = c.start_worker("w2", 1, {}, "w2-spoof", "{gpu: 'true'}");
  c.worker_auth_override["w2-greedy"] = "enrollment_token_file: " + c.dir() + "/no-such-bootstrap\n";
  fs::create_directories(c.dir() + "/spool-w2-greedy");
  fs::copy_file(c.dir() + "/spool-w2/credential", c.dir() + "/spool-w2-greedy/credential");
  auto& greedy = c.start_worker("w2", 8, {}, "w2-greedy");

  ASSERT_TRUE(wait_until(
      [&] {
        return log_has(shared, "bad worker token") && log_has(stolen, "belongs to worker") &&
               log_has(spoof, "is not granted to worker") && log_has(greedy, "capacity 8 is more than the 1");
      },
      20s))
      << "shared:\n"
      << shared.log() << "\nstolen:\n"
      << stolen.log() << "\nspoof:\n"
      << spoof.log() << "\ngreedy:\n"
      << greedy.log();
  // None of them ever attached; the real w1 and w2 still are, and work runs.
  for (auto* p : {&shared, &stolen, &spoof, &greedy}) EXPECT_FALSE(log_has(*p, "worker_attached")) << p->log();
  EXPECT_EQ(attached_workers(c, "n1"), 2);
  EXPECT_EQ(c.db().scalar("SELECT capacity || ' ' || labels::text FROM workers WHERE worker_id = 'w2'"), "1 {}");
  auto again = c.trigger("n1", "tick");
  EXPECT_TRUE(c.wait_for_state(again, "SUCCEEDED", 15s));
  EXPECT_TRUE(log_has(c.proc("n1"), "worker=\"w1\" code=forbidden message=")) << c.proc("n1").log();
  // A refused worker is asked to wait (error.retry_after_ms, protocol 2)
  // and does: one refusal in this time, not one per reconnect backoff
  // (50-500 ms in these workers' configs).
  EXPECT_TRUE(log_has(shared, "retry_after_ms=30000")) << shared.log();
  std::this_thread::sleep_for(2s);
  const std::string s = shared.log();
  std::size_t refusals = 0;
  for (auto at = s.find("bad worker token"); at != std::string::npos; at = s.find("bad worker token", at + 1))
    ++refusals;
  EXPECT_EQ(refusals, 1u) << s;
}

TEST(WorkerIdentity, AStolenBootstrapTokenIsRefusedAfterItExpires) {
  Cluster c("identity_expiry", jobs, credentials_only());
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(10s), "n1");
  auto w1 = ctl(c, "n1", {"--output", "json", "workers", "enroll", "w1", "--capacity", "1", "--ttl", "2m"});
  ASSERT_EQ(w1.exit_code, 0) << w1.out;
  const std::string token = bootstrap_token(w1);
  ASSERT_FALSE(token.empty());
  // Its expiry passes (moved into the past rather than waited for).
  c.db().scalar("UPDATE worker_enrollments SET expires_at = now() - interval '1 second' RETURNING id");

  // A thief holding the token, with a worker process of its own: refused,
  // never attached, and told why.
  c.worker_auth_override["w1"] = enrollment_lines(c, "w1", token);
  auto& thief = c.start_worker("w1", 1);
  ASSERT_TRUE(wait_until([&] { return log_has(thief, "worker_enrollment_failed"); }, 15s)) << thief.log();
  EXPECT_TRUE(log_has(thief, "the bootstrap token expired at")) << thief.log();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(attached_workers(c, "n1"), 0);
  EXPECT_FALSE(fs::exists(c.dir() + "/spool-w1/credential"));
  EXPECT_EQ(c.db().count_rows("worker_credentials"), 0);
  // The same over HTTP, and a token for another worker id is refused too.
  auto direct =
      c.http(c.port("n1"), "POST", "/api/v1/enroll", {{"Authorization", "Bearer " + token}}, "{\"worker_id\":\"w1\"}");
  EXPECT_EQ(direct.status, 401);
  auto w2 = ctl(c, "n1", {"--output", "json", "workers", "enroll", "w2", "--capacity", "1"});
  auto other = c.http(c.port("n1"), "POST", "/api/v1/enroll", {{"Authorization", "Bearer " + bootstrap_token(w2)}},
                      "{\"worker_id\":\"w1\"}");
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_NE(other.body.find("another worker id"), std::string::npos) << other.body;
}

TEST(WorkerIdentity, CredentialsAreListedRotatedWithoutRestartAndRevoked) {
  Cluster c("identity_rotate", jobs, credentials_only());
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(10s), "n1");
  auto w1 = ctl(c, "n1", {"--output", "json", "workers", "enroll", "w1", "--capacity", "2"});
  ASSERT_EQ(w1.exit_code, 0) << w1.out;
  c.worker_auth_override["w1"] = enrollment_lines(c, "w1", bootstrap_token(w1));
  auto& worker = c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1, 15s)) << worker.log();
  const std::string first = c.db().scalar("SELECT id FROM worker_credentials WHERE revoked_at IS NULL");

  // Rotation: a new bootstrap token into the worker's file; the running
  // worker enrolls again on its own, the old credential is revoked, and it
  // stays in service.
  auto rotated = ctl(c, "n1", {"--output", "json", "workers", "rotate", "w1"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.out;
  std::this_thread::sleep_for(50ms);  // a file stamp later than the credential's
  enrollment_lines(c, "w1", bootstrap_token(rotated));
  ASSERT_TRUE(wait_until(
      [&] {
        return c.db().scalar(
                   "SELECT count(*) FROM worker_credentials WHERE worker_id = 'w1' AND revoked_at IS NULL"
                   " AND id <> " +
                   first) == "1";
      },
      15s))
      << worker.log();
  EXPECT_EQ(c.db().scalar("SELECT revoked_at IS NOT NULL FROM worker_credentials WHERE id = " + first), "t");
  EXPECT_TRUE(log_has(worker, "worker_reenrolling"));
  ASSERT_TRUE(c.wait_for_workers("n1", 1, 15s));
  auto run = c.trigger("n1", "tick");
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 15s));

  // Listed, never with a token.
  auto listed = ctl(c, "n1", {"workers", "credentials"});
  EXPECT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_NE(listed.out.find("credential"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("baton_"), std::string::npos) << listed.out;

  // Revocation: the attached session is closed within seconds and the
  // worker is refused from then on.
  auto revoked = ctl(c, "n1", {"workers", "revoke", "w1"});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.out;
  EXPECT_TRUE(wait_until([&] { return attached_workers(c, "n1") == 0; }, 10s));
  EXPECT_TRUE(wait_until([&] { return log_has(worker, "bad worker token"); }, 10s)) << worker.log();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(attached_workers(c, "n1"), 0);
  EXPECT_TRUE(log_has(c.proc("n1"), "worker_sessions_closed node=n1 reason=credential_revoked count=1"))
      << c.proc("n1").log();
}
