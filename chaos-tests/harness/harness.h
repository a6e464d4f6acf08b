#pragma once
// The chaos harness (main.cpp): the cluster it starts (harness_cluster.cpp),
// the workload and the probes (harness_workload.cpp), the nemesis
// (harness_nemesis.cpp). Internal to baton-chaos.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "baton/base/duration.h"
#include "baton/chaos/fault_proxy.h"
#include "baton/checker/checker.h"
#include "baton/checker/faults.h"
#include "baton/testing/child_process.h"

namespace baton::chaos::harness {

namespace fs = std::filesystem;

/// What the production checker found beside a run (production_checker.cpp):
/// the leader's sweep during it and `baton verify` after it.
checker::InvariantResult production_checker(const std::string& dir);
/// What `baton verify --receipts` found after a run (receipts_checker.cpp).
checker::InvariantResult receipts_checker(const std::string& dir);
/// What `baton-sim --replay` found of each node's incident journal
/// (incident_replay_checker.cpp).
checker::InvariantResult incident_replay_checker(const std::string& dir);
using namespace std::chrono_literals;
// The histories it records and the fault vocabulary are the checker's.
using namespace baton::checker;
using baton::chaos::FaultProxy;
using baton::chaos::ProxyMode;
using baton::testing::ChildProcess;
using baton::testing::http_request;
using baton::testing::ThrowawayCa;

// The fault vocabulary's rows the harness injects (baton/checker/faults.h).
const std::vector<std::string> all_faults = baton::checker::harness_fault_names();
// Set up when the cluster starts and kept for the whole run, not injected
// by the nemesis schedule.
const std::set<std::string> static_faults = {"clock_skew", "continuation_skew"};
inline const std::string admin_token = "suite-admin-token-not-for-production";
// The cluster's timing (written into every node config and into window.txt
// for the checker, which derives its bounds from them).
inline constexpr auto lease = 3000ms;
inline constexpr auto poll_every = 300ms;
inline constexpr auto continuation = 4000ms;
// continuation_skew: the first node's continuation timeout (the others use
// `continuation`). Runs it assigns carry it; every later leader must wait
// for it, not for its own.
inline constexpr auto continuation_skewed = 7000ms;
inline constexpr auto continuation_margin = 2000ms;
inline constexpr auto probe_every = 200ms;
// The workload's API calls: each is tried again at this interval, this many
// times (30 s: past any election the nemesis causes), before it is recorded
// as not accepted.
inline constexpr int api_tries = 150;
inline constexpr auto api_retry_every = 200ms;
// An operator's cancel of a long run every this often, tried this many times.
inline constexpr auto cancel_every = 3s;
inline constexpr int cancel_tries = 20;

inline std::int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The state letter of /proc/PID/stat (R, S, T for stopped, ...).
inline char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  return close == std::string::npos || close + 2 >= all.size() ? '?' : all[close + 2];
}

/// The pids whose parent is `parent` (from /proc/PID/stat).
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = all.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(all.substr(close + 2));
    std::string state;
    long ppid = 0;
    if (fields >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

inline std::string cmdline_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(all.begin(), all.end(), '\0', ' ');
  return all;
}

inline std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Runs `cmd` under /bin/sh and returns its stdout (trailing blanks cut).
/// Not popen: the child must not inherit the harness's descriptors. A
/// `pg_ctl restart` that inherited the fault proxies' sockets kept them
/// open in the new postmaster, so a proxied connection whose server had
/// gone never saw its end (every node then hung on a dead connection until
/// a client-side deadline cut it).
inline std::string run_cmd(const std::string& cmd) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return "";
  const pid_t pid = ::fork();
  if (pid < 0) return "";
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close_range(3, ~0U, 0);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

struct Options {
  std::uint64_t seed = 1;
  std::chrono::milliseconds duration = 120s;
  /// How long the window's runs are given to end once it closes. A
  /// weakened build that cannot end them would otherwise hold its test
  /// the whole default.
  std::chrono::milliseconds quiesce_for = 120s;
  int nodes = 3;
  int workers = 3;
  std::set<std::string> faults;
  std::string out = "chaos-out";
  std::string binary;
  /// pg_failover's standby: "sync" (what docs/operations.md requires) or
  /// "async", the negative control: a standby that falls behind and is
  /// promoted without the last elections and run writes.
  std::string pg_replication = "sync";
  /// The database is a primary and two standbys under a real failover
  /// manager (scripts/pg-ha), reached through a multi-host URL; its faults
  /// are pg_ha_faults.
  bool pg_ha = false;
};

/// A node's links to the database: one fault proxy per database host (the
/// one server, or the HA formation's three, which the node's URL names in
/// turn). A fault on the links is on every one of them.
class DbLinks {
 public:
  DbLinks(boost::asio::io_context& ioc, const std::vector<int>& upstreams) {
    for (int port : upstreams) proxies_.push_back(std::make_unique<FaultProxy>(ioc, 0, port));
  }
  /// "127.0.0.1:P1,127.0.0.1:P2,...": the hosts of a node's database URL.
  std::string hosts() const {
    std::string out;
    for (const auto& p : proxies_)
      out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p->port());
    return out;
  }
  /// The one server's proxy now leads to `port` (pg_failover's promotion).
  void set_upstream(int port) { proxies_.front()->set_upstream(port); }
  void set_mode(ProxyMode mode, std::chrono::milliseconds latency = std::chrono::milliseconds(0)) {
    for (auto& p : proxies_) p->set_mode(mode, latency);
  }
  void heal() { set_mode(ProxyMode::pass); }
  void strand_existing() {
    for (auto& p : proxies_) p->strand_existing();
  }
  std::uint64_t faults_applied() const {
    std::uint64_t n = 0;
    for (const auto& p : proxies_) n += p->faults_applied();
    return n;
  }
  void stop() {
    for (auto& p : proxies_) p->stop();
  }

 private:
  std::vector<std::unique_ptr<FaultProxy>> proxies_;
};

/// --pg-ha: one database member's links within the formation, each a fault
/// proxy (scripts/pg-ha's links.env): the address its peers replicate and
/// rewind from, its REST address for them, and its own way to etcd. Cut,
/// the three partition the member from its standbys and the manager, while
/// the nodes still reach it through their DbLinks.
struct MemberLinks {
  std::unique_ptr<FaultProxy> pg, api, etcd;
  void set_mode(ProxyMode mode) {
    for (auto* p : {pg.get(), api.get(), etcd.get()}) p->set_mode(mode);
  }
  std::uint64_t faults_applied() const { return pg->faults_applied() + api->faults_applied() + etcd->faults_applied(); }
  void stop() {
    for (auto* p : {pg.get(), api.get(), etcd.get()}) p->stop();
  }
};

class Harness {
 public:
  explicit Harness(Options o) : o_(std::move(o)), rng_(o_.seed) {}

  int run();
  static int check(const std::string& dir);
  /// harness_teardown.cpp: from now on an abort, a crash or a fatal signal
  /// first kills the children and stops the database (emergency_stop);
  /// finished_cleanly() when they are stopped the normal way.
  void stop_everything_if_it_dies();
  void emergency_stop() noexcept;
  void finished_cleanly();
  /// Replays each node's incident journal after the run (harness_cluster.cpp).
  void replay_journals();

 private:
  int fail(const std::string& why);
  /// Stops the database and its standby, and removes their directory.
  void stop_postgres();
  void log(const std::string& s) { std::cerr << "[chaos +" << (wall_us() - t0_) / 1000 << "ms] " << s << "\n"; }
  void event(const std::string& phase, const std::string& fault, const std::string& target,
             const std::string& detail = "");

  /// Every job runs baton-chaos-task, which writes its own evidence.
  std::string task(const std::string& args) const;
  void write_jobs();
  void start_node(const std::string& id);

  /// Starts worker `id`; `process` names the process when it is not the
  /// worker's own (a duplicate using the same worker id: own spool, own
  /// log, own name in the task evidence).
  void start_worker(const std::string& id, const std::string& process = "");
  std::string clock_ctl(const std::string& process) const { return work_ + "/clock-" + process; }
  std::uintmax_t clock_hits(const std::string& process) const;
  std::string disk_ctl(const std::string& worker) const { return work_ + "/disk-" + worker; }
  std::uintmax_t disk_hits(const std::string& worker) const;
  void spawn(const std::string& id, const std::vector<std::string>& argv);
  /// The baton binary: --binary, or the one of this build tree.
  std::string binary() const;

  /// The node whose /status says it leads (asked of every node).
  std::string leader();
  std::string wait_leader(std::chrono::milliseconds max);

  // ---- workload --------------------------------------------------------------
  void drive(const std::atomic<bool>& stop);

  /// Triggers `job` with `key` until some node accepts it (following 307s,
  /// retrying the same key through failovers). Returns the run id or 0.
  /// `body`: the trigger's request body ("" for none: the job's defaults).
  std::int64_t submit(const std::string& job, const std::string& key, const std::atomic<bool>& stop,
                      const std::string& body = "");

  /// Posts the event `chaos.tick` with dedupe key `key` until some node
  /// accepts it (any node may; retried through failovers with the same key).
  void post_event(const std::string& key, const std::atomic<bool>& stop);

  // ---- probes: what each node says about leadership ---------------------------
  /// Asks one node's /status every probe_every until `stop`; one line per
  /// answer (or non-answer) in probes.log. The checker derives liveness from
  /// these, never from a node's own log.
  void probe(const std::string& node, int port, const std::atomic<bool>& stop);

  // ---- nemesis ---------------------------------------------------------------
  void nemesis(std::int64_t start);

  /// A proxy fault took effect if the proxy held, delayed or reset
  /// something while it was on.
  void proxy_effect(const std::string& fault, const std::string& target, const FaultProxy& p, std::uint64_t before);
  void proxy_effect(const std::string& fault, const std::string& target, const DbLinks& p, std::uint64_t before);
  void kill_effect(const std::string& fault, const std::string& target);
  void stop_effect(const std::string& fault, const std::string& target);
  /// A streaming standby of the current primary, which then waits at every
  /// commit until the standby has it (unless --pg-replication async).
  bool make_standby();
  std::string postmaster_pid();
  /// pg_ha_faults (harness_pg_ha.cpp): what the failover manager does
  /// about each, waited for and recorded as the fault's effect.
  /// `l`: the leading node (an asynchronous formation's fall-behind kills it).
  void inject_pg_ha(const std::string& fault, const std::string& l);
  /// Plans the formation's ports, puts a MemberLinks between its members
  /// and starts it (scripts/pg-ha plan, links.env, start); its URL or "".
  std::string start_pg_ha();
  /// After a failover: whether `member`, the old primary, is back in
  /// recovery (it follows the new primary and takes no writes).
  bool in_recovery(const std::string& member);
  /// `scripts/pg-ha VERB pg_dir_ ARGS`, its output.
  std::string pg_ha(const std::string& verb, const std::string& args = "");
  /// The asynchronous standby falls behind (cut off from its primary), and
  /// meanwhile the cluster commits what it will not have: run writes, and an
  /// election, made by killing the leader `l` and waiting until the nodes
  /// report its successor. Returns the killed node, restarted after the
  /// failover (it then remembers no epoch, so nothing stops it campaigning
  /// on the promoted standby and winning the lost epoch's number again).
  /// It returns only once the cluster has created runs (for keyed
  /// submissions) since the cut, or no leader could create them: what the
  /// checker must then find lost.
  std::string fall_behind(const std::string& fault, const std::string& l);

  /// What a killed worker's outbox held while it was down: the checker
  /// tells a finish that was durable from one that was not.
  void snapshot_outbox(const std::string& worker);
  void inject(const std::string& fault);
  void heal_all();
  void stop_all();
  void collect_files();
  Options o_;
  std::mt19937_64 rng_;
  std::string work_, pg_dir_, url_;
  int pg_port_ = 0;
  std::string pg_parent_, standby_dir_;  ///< pg_failover: the synchronous standby, if any
  int standby_port_ = 0, standbys_ = 0;
  boost::asio::io_context ioc_;
  std::thread io_thread_;
  std::map<std::string, int> node_port_;
  std::vector<int> pg_ports_;  ///< --pg-ha: the formation's hosts, in the URL's order
  std::map<std::string, std::unique_ptr<DbLinks>> db_proxy_;
  std::map<std::string, MemberLinks> member_links_;  ///< --pg-ha: pg1..pg3
  std::map<std::string, std::unique_ptr<FaultProxy>> worker_proxy_;
  std::map<std::string, std::unique_ptr<ChildProcess>> procs_;
  std::mutex mutex_;
  /// Submissions the cluster created (201); fall_behind waits for some made
  /// while the standbys are cut off, so the control's lost window is never empty.
  std::atomic<int> created_{0};
  std::ofstream nemesis_, submissions_, probes_;
  std::string evidence_, skewed_node_;
  int spawns_ = 0, snapshots_ = 0, disk_faults_ = 0;
  bool skew_logged_ = false, continuation_skew_logged_ = false;
  const std::int64_t t0_ = wall_us();
};

}  // namespace baton::chaos::harness
