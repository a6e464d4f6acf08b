// baton-chaos: a Jepsen-style run against a real Baton cluster on loopback.
//
//   baton-chaos run --seed 7 --duration 120s --nodes 3 --workers 4 --faults all --out DIR
//   baton-chaos check DIR            re-run the checker on a recorded history
//
// It starts a private PostgreSQL, fault-injecting proxies (node <-> database,
// workers <-> node), the nodes (one with its clock skewed by libfaketime) and
// the workers; drives a workload (a cron job every second, API triggers with
// idempotency keys, PROGRAM tasks of varied length, failing and cancelled
// runs); injects faults on a schedule derived from the seed; heals; waits for
// quiescence; exports the history and runs the independent checker. Exit
// code 0 only if every invariant holds.
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

#include "baton/chaos/checker.h"
#include "baton/chaos/fault_proxy.h"
#include "baton/chaos/faults.h"
#include "baton/core/duration.h"
#include "baton/testing/child_process.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using baton::chaos::FaultProxy;
using baton::chaos::ProxyMode;
using baton::testing::ChildProcess;
using baton::testing::http_request;
using baton::testing::ThrowawayCa;

namespace {

// The fault vocabulary's rows the harness injects (baton/chaos/faults.h).
const std::vector<std::string> all_faults = baton::chaos::harness_fault_names();
// Set up when the cluster starts and kept for the whole run, not injected
// by the nemesis schedule.
const std::set<std::string> static_faults = {"clock_skew", "continuation_skew"};
const std::string admin_token = "suite-admin-token-not-for-production";
// The cluster's timing (written into every node config and into window.txt
// for the checker, which derives its bounds from them).
constexpr auto lease = 3000ms;
constexpr auto poll_every = 300ms;
constexpr auto continuation = 4000ms;
// continuation_skew: the first node's continuation timeout (the others use
// `continuation`). Runs it assigns carry it; every later leader must wait
// for it, not for its own.
constexpr auto continuation_skewed = 7000ms;
constexpr auto continuation_margin = 2000ms;
constexpr auto probe_every = 200ms;

std::int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The state letter of /proc/PID/stat (R, S, T for stopped, ...).
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  return close == std::string::npos || close + 2 >= all.size() ? '?' : all[close + 2];
}

/// The pids whose parent is `parent` (from /proc/PID/stat).
std::vector<pid_t> children_of(pid_t parent) {
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

std::string cmdline_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(all.begin(), all.end(), '\0', ' ');
  return all;
}

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Runs `cmd` under /bin/sh and returns its stdout (trailing blanks cut).
/// Not popen: the child must not inherit the harness's descriptors. A
/// `pg_ctl restart` that inherited the fault proxies' sockets kept them
/// open in the new postmaster, so a proxied connection whose server had
/// gone never saw its end (every node then hung on a dead connection until
/// a client-side deadline cut it).
std::string run_cmd(const std::string& cmd) {
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
  int nodes = 3;
  int workers = 3;
  std::set<std::string> faults;
  std::string out = "chaos-out";
  std::string binary;
  /// pg_failover's standby: "sync" (what docs/operations.md requires) or
  /// "async", the negative control: a standby that falls behind and is
  /// promoted without the last elections and run writes.
  std::string pg_replication = "sync";
};

class Harness {
 public:
  explicit Harness(Options o) : o_(std::move(o)), rng_(o_.seed) {}

  int run() {
    fs::remove_all(o_.out);
    fs::create_directories(o_.out + "/journals");
    fs::create_directories(o_.out + "/logs");
    fs::create_directories(o_.out + "/db");
    fs::create_directories(o_.out + "/evidence");
    fs::create_directories(o_.out + "/outbox");
    evidence_ = fs::absolute(o_.out).string() + "/evidence/tasks.jsonl";
    work_ = fs::absolute(o_.out).string() + "/work";
    fs::create_directories(work_ + "/jobs");
    nemesis_.open(o_.out + "/nemesis.log");
    probes_.open(o_.out + "/probes.log");
    submissions_.open(o_.out + "/submissions.log");

    char tmpl[] = "/tmp/baton-chaos-pg-XXXXXX";
    pg_parent_ = ::mkdtemp(tmpl);
    const std::string& pg_parent = pg_parent_;
    fs::permissions(pg_parent, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    pg_dir_ = pg_parent + "/pg";
    url_ = run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private start " + pg_dir_ + " baton");
    if (url_.rfind("postgresql://", 0) != 0) return fail("cannot start PostgreSQL");
    pg_port_ = std::stoi(url_.substr(url_.rfind(':') + 1, url_.rfind('/') - url_.rfind(':') - 1));
    log("postgres " + url_);
    // pg_failover: a synchronous streaming standby (docs/operations.md,
    // "PostgreSQL high availability": every acknowledged commit is on it),
    // or an asynchronous one for the negative control.
    if (o_.faults.count("pg_failover") && !make_standby()) return fail("cannot start a standby");

    io_thread_ = std::thread([this] {
      auto guard = boost::asio::make_work_guard(ioc_);
      ioc_.run();
    });
    write_jobs();
    for (int i = 1; i <= o_.nodes; ++i) {
      std::string id = "n" + std::to_string(i);
      node_port_[id] = baton::testing::free_loopback_port();
      db_proxy_[id] = std::make_unique<FaultProxy>(ioc_, 0, pg_port_);
      for (int w = 1; w <= o_.workers; ++w)
        worker_proxy_["w" + std::to_string(w) + ">" + id] = std::make_unique<FaultProxy>(ioc_, 0, node_port_[id]);
      start_node(id);
      // continuation_skew is n1's configuration, so it takes effect only
      // through runs n1 assigns: n1 is started alone and leads the first
      // epoch (the workload runs under it until the first leader fault).
      // Started together, another node could win every election n1 took
      // part in (seen once: n1 led for 88 ms, killed by kill9_leader).
      if (id == "n1" && o_.faults.count("continuation_skew")) wait_leader(20s);
    }
    std::this_thread::sleep_for(1500ms);
    for (int i = 1; i <= o_.workers; ++i) start_worker("w" + std::to_string(i));
    if (!wait_leader(20s).size()) return fail("no leader elected");
    // Every node must be up before the window opens: a node that could not
    // start (its port taken meanwhile, seen once) would leave a run with a
    // node fewer that still passes, and proves less.
    for (const auto& [id, port] : node_port_) {
      bool up = false;
      for (auto end = std::chrono::steady_clock::now() + 20s; !up && std::chrono::steady_clock::now() < end;) {
        up = http_request(port, "GET", "/status").status == 200;
        if (!up) std::this_thread::sleep_for(100ms);
      }
      if (!up) return fail("node " + id + " did not start (its log: " + work_ + "/" + id + ".*.log)");
    }
    // Job definitions are data: loaded through the API, as an operator does.
    {
      ChildProcess apply(
          {binary(), "ctl", "--addr", "127.0.0.1:" + std::to_string(node_port_["n1"]), "--ca",
           ThrowawayCa::shared().ca(), "--token-file", std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/admin.token",
           "apply", "-f", work_ + "/jobs"},
          work_ + "/apply.log");
      if (apply.wait_for_exit(30s) != 0) return fail("baton ctl apply failed: " + apply.log());
    }
    if (skewed_node_.size()) {
      // The skewed node runs under libfaketime: its environment says so.
      std::ifstream env("/proc/" + std::to_string(procs_.at(skewed_node_)->pid()) + "/environ");
      std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
      if (all.find("FAKETIME=+3m") != std::string::npos) event("effect", "clock_skew", skewed_node_, "faketime");
    }

    const std::int64_t start = wall_us(), start_mono = mono_ns();
    std::atomic<bool> stop_workload{false};
    std::thread workload([&] { drive(stop_workload); });
    std::vector<std::thread> probers;
    for (auto& [id, port] : node_port_)
      probers.emplace_back([&, id = id, port = port] { probe(id, port, stop_workload); });
    nemesis(start);
    const std::int64_t end = wall_us(), end_mono = mono_ns();
    heal_all();
    stop_workload = true;
    workload.join();
    for (auto& t : probers) t.join();
    std::string requested;
    for (const auto& f : o_.faults) requested += (requested.empty() ? "" : ",") + f;
    std::ofstream(o_.out + "/window.txt")
        << "start_us=" << start << " end_us=" << end << " start_mono_ns=" << start_mono << " end_mono_ns=" << end_mono
        << " cron_job=chaos-cron faults=" << requested << " continuation_ms=" << continuation.count()
        << " continuation_margin_ms=" << continuation_margin.count() << " lease_ms=" << lease.count()
        << " poll_ms=" << poll_every.count() << "\n";
    log("window closed; waiting for quiescence");
    bool quiet = false;
    for (int i = 0; i < 120 && !quiet; ++i) {
      quiet = run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh pending '" + url_ + "' " +
                      std::to_string(end)) == "0";
      if (!quiet) std::this_thread::sleep_for(1s);
    }
    log(quiet ? "quiescent" : "not quiescent after 120 s (the checker will say what is left)");
    if (!quiet)
      run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh activity '" + url_ + "' " + o_.out +
              "/db/activity_at_timeout.csv");
    stop_all();
    run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh export '" + url_ + "' " + o_.out + "/db");
    if (continuation_skew_logged_) {
      // Took effect if runs carry the skewed node's timeout.
      std::ifstream in(o_.out + "/db/transitions.jsonl");
      std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::string mark = "\"continuation_ms\" : " + std::to_string(continuation_skewed.count());
      const std::string mark2 = "\"continuation_ms\":" + std::to_string(continuation_skewed.count());
      if (all.find(mark) != std::string::npos || all.find(mark2) != std::string::npos)
        event("effect", "continuation_skew", "n1", "runs carry it");
    }
    collect_files();
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + pg_dir_);
    if (!standby_dir_.empty()) run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + standby_dir_);
    for (auto& [k, p] : db_proxy_) p->stop();
    for (auto& [k, p] : worker_proxy_) p->stop();
    ioc_.stop();
    io_thread_.join();
    for (auto* f : {&nemesis_, &submissions_, &probes_}) f->close();
    return check(o_.out);
  }

  static int check(const std::string& dir) {
    auto report = baton::chaos::check_history(dir);
    std::ofstream(dir + "/report.md") << report.markdown();
    std::ofstream(dir + "/report.json") << report.json();
    std::cout << report.markdown();
    return report.ok() ? 0 : 1;
  }

 private:
  int fail(const std::string& why) {
    std::cerr << "baton-chaos: " << why << "\n";
    procs_.clear();
    if (!pg_dir_.empty()) run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + pg_dir_);
    if (!standby_dir_.empty()) run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + standby_dir_);
    if (io_thread_.joinable()) {
      ioc_.stop();
      io_thread_.join();
    }
    return 2;
  }
  void log(const std::string& s) { std::cerr << "[chaos +" << (wall_us() - t0_) / 1000 << "ms] " << s << "\n"; }
  void event(const std::string& phase, const std::string& fault, const std::string& target,
             const std::string& detail = "") {
    std::lock_guard lock(mutex_);
    nemesis_ << "t_us=" << wall_us() << " mono_ns=" << mono_ns() << " phase=" << phase << " fault=" << fault
             << " target=" << target << (detail.empty() ? "" : " detail=" + detail) << "\n";
    nemesis_.flush();
    log(phase + " " + fault + " " + target + " " + detail);
  }

  /// Every job runs baton-chaos-task, which writes its own evidence.
  std::string task(const std::string& args) const {
    return "[" + std::string(BATON_CHAOS_TASK) + ", --evidence, " + evidence_ + ", " + args + "]";
  }

  void write_jobs() {
    std::ofstream(work_ + "/jobs/chaos.yaml") << "jobs:\n"
                                                 "  - name: chaos-cron\n"
                                                 "    schedule: '* * * * * *'\n"
                                                 "    misfire_policy: run_all\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '50'")
                                              << "}\n"
                                                 "  - name: chaos-short\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '1000'")
                                              << "}\n"
                                                 // Forks a detached grandchild that outlives nothing if contained.
                                                 "  - name: chaos-medium\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '2000', --grandchild, '2000'")
                                              << "}\n"
                                                 "  - name: chaos-fail\n"
                                                 "    max_attempts: 2\n"
                                                 "    retry: {base: 200ms, cap: 1s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '300', --exit, '7'")
                                              << "}\n"
                                                 // Longer than a partition, with a grandchild: a partitioned or
                                                 // paused worker is busy, and its whole tree must die with it.
                                                 "  - name: chaos-slow\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '8000', --grandchild, '8000'")
                                              << "}\n"
                                                 // Invalid UTF-8 and a multi-byte tail cut mid-character.
                                                 "  - name: chaos-garbage\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '200', --garbage")
                                              << "}\n"
                                                 // One run per event, exactly once across failovers.
                                                 "  - name: chaos-event\n"
                                                 "    on_events: [chaos.tick]\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '100'")
                                              << "}\n"
                                                 // Overlap control: two at a time, and two exclusive jobs.
                                                 "  - name: chaos-pair\n"
                                                 "    max_instances: 2\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '1000'")
                                              << "}\n"
                                                 "  - name: chaos-excl-a\n"
                                                 "    exclusive_execution: true\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '300'")
                                              << "}\n"
                                                 "  - name: chaos-excl-b\n"
                                                 "    exclusive_execution: true\n"
                                                 "    max_attempts: 3\n"
                                                 "    retry: {base: 200ms, cap: 2s}\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '300'")
                                              << "}\n"
                                                 "  - name: chaos-long\n"
                                                 "    max_attempts: 3\n"
                                                 "    tasks:\n"
                                                 "      - {kind: PROGRAM, command: "
                                              << task("--sleep, '4000'") << "}\n";
  }

  void start_node(const std::string& id) {
    std::string cfg = work_ + "/" + id + ".yaml";
    const bool long_continuation = o_.faults.count("continuation_skew") && id == "n1";
    if (long_continuation && !continuation_skew_logged_) {
      event("inject", "continuation_skew", id,
            "continuation_timeout_ms=" + std::to_string(continuation_skewed.count()));
      continuation_skew_logged_ = true;
    }
    std::ofstream(cfg) << "node_id: " << id << "\nlisten: 127.0.0.1:" << node_port_[id]
                       << "\nworker_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/worker.token"
                       << "\nadmin_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/admin.token"
                       << "\ndatabase: {url: 'postgresql://postgres@127.0.0.1:" << db_proxy_[id]->port()
                       << "/baton', start_timeout: 20s}\n"
                       << "election: {lease: " << lease.count()
                       << "ms, renew_every: 500ms, safety_margin: 1s, poll_every: " << poll_every.count() << "ms}\n"
                       << "runtime: {heartbeat_interval: 300ms, heartbeat_timeout: 1500ms, reassign_after: 3s, "
                          "continuation_timeout: "
                       << (long_continuation ? continuation_skewed : continuation).count()
                       << "ms, continuation_margin: " << continuation_margin.count()
                       << "ms, timeout_grace: 2s, assign_with_start: true}\n"
                       // TLS as in production: the checker's evidence comes
                       // through the same verified links an operator's does.
                       << "tls: {cert_file: " << ThrowawayCa::shared().node_cert()
                       << ", key_file: " << ThrowawayCa::shared().node_key() << "}\n";
    // The clock-rate shim (clock_rate) is loaded into every node; it does
    // nothing until the harness writes a rate into its control file.
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "LD_PRELOAD=" + std::string(BATON_CHAOS_CLOCK),
                                     "BATON_CHAOS_CLOCK_CTL=" + clock_ctl(id),
                                     binary(),
                                     "node",
                                     "--config",
                                     cfg};
    // One node lives minutes in the future: nothing may depend on synchronised clocks.
    const bool skewed = o_.faults.count("clock_skew") && id == "n" + std::to_string(o_.nodes);
    if (skewed) {
      argv = {"/usr/bin/env",
              "LD_PRELOAD=" + std::string(BATON_CHAOS_CLOCK) + ":/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
              "BATON_CHAOS_CLOCK_CTL=" + clock_ctl(id),
              "FAKETIME=+3m",
              "FAKETIME_DONT_FAKE_MONOTONIC=1",
              "FAKETIME_NO_CACHE=1",
              binary(),
              "node",
              "--config",
              cfg};
      if (!skew_logged_) {
        event("inject", "clock_skew", id, "+3m");
        skew_logged_ = true;
        skewed_node_ = id;
      }
    }
    spawn(id, argv);
  }

  /// Starts worker `id`; `process` names the process when it is not the
  /// worker's own (a duplicate using the same worker id: own spool, own
  /// log, own name in the task evidence).
  void start_worker(const std::string& id, const std::string& process = "") {
    const std::string name = process.empty() ? id : process;
    std::string cfg = work_ + "/" + name + ".yaml";
    std::ofstream out(cfg);
    // Each worker reaches each node through a proxy of its own, so one
    // worker can be cut off from the leader alone; redirects to a node's
    // real address are mapped onto that worker's proxy.
    out << "worker_id: " << id << "\ncoordinators: [";
    bool first = true;
    for (auto& [n, port] : node_port_) {
      out << (first ? "" : ", ") << "127.0.0.1:" << worker_proxy_[id + ">" + n]->port();
      first = false;
    }
    out << "]\nendpoint_map: {";
    first = true;
    for (auto& [n, port] : node_port_) {
      out << (first ? "" : ", ") << "'127.0.0.1:" << port << "': '127.0.0.1:" << worker_proxy_[id + ">" + n]->port()
          << "'";
      first = false;
    }
    out << "}\ntoken_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/worker.token\ncapacity: 6\nspool_dir: " << work_
        << "/spool-" << name
        << "\nreconnect: {base: 50ms, max: 1s}\n"
        // The run's end stops workers with SIGTERM and waits 10 s: they stop
        // at once, as they always have here (no drain).
        << "drain_timeout: 0s\n"
        // Tasks put BATON_CHAOS_WORKER in their evidence: allowed through,
        // as an operator would allow a variable their jobs need.
        << "task_env_allowlist: [PATH, HOME, LANG, 'LC_*', TZ, USER, LOGNAME, TMPDIR, BATON_CHAOS_WORKER]\n"
        << "tls: {ca_file: " << ThrowawayCa::shared().ca() << "}\n";
    out.close();
    // BATON_CHAOS_WORKER reaches the tasks (task_env_allowlist above).
    // The disk-fault shim (outbox_disk) and the clock-rate shim (clock_rate)
    // are loaded into every worker; they do nothing until the harness writes
    // into their control files.
    spawn(name, {"/usr/bin/env", "BATON_CHAOS_WORKER=" + name,
                 "LD_PRELOAD=" + std::string(BATON_CHAOS_DISK) + ":" + std::string(BATON_CHAOS_CLOCK),
                 "BATON_CHAOS_DISK_CTL=" + disk_ctl(name), "BATON_CHAOS_CLOCK_CTL=" + clock_ctl(name), binary(),
                 "worker", "--config", cfg});
  }
  std::string clock_ctl(const std::string& process) const { return work_ + "/clock-" + process; }
  std::uintmax_t clock_hits(const std::string& process) const {
    std::error_code ec;
    auto n = fs::file_size(clock_ctl(process) + ".hits", ec);
    return ec ? 0 : n;
  }
  std::string disk_ctl(const std::string& worker) const { return work_ + "/disk-" + worker; }
  std::uintmax_t disk_hits(const std::string& worker) const {
    std::error_code ec;
    auto n = fs::file_size(disk_ctl(worker) + ".hits", ec);
    return ec ? 0 : n;
  }

  void spawn(const std::string& id, const std::vector<std::string>& argv) {
    std::lock_guard lock(mutex_);
    procs_.erase(id);
    procs_[id] = std::make_unique<ChildProcess>(argv, work_ + "/" + id + "." + std::to_string(++spawns_) + ".log");
  }

  std::string binary() const { return o_.binary.empty() ? std::string(BATON_BINARY) : o_.binary; }

  /// The node whose /status says it leads (asked of every node).
  std::string leader() {
    for (auto& [id, port] : node_port_) {
      auto r = http_request(port, "GET", "/status");
      if (r.body.find("\"role\":\"leader\"") != std::string::npos) return id;
    }
    return "";
  }
  std::string wait_leader(std::chrono::milliseconds max) {
    for (auto end = std::chrono::steady_clock::now() + max; std::chrono::steady_clock::now() < end;) {
      auto l = leader();
      if (!l.empty()) return l;
      std::this_thread::sleep_for(100ms);
    }
    return "";
  }

  // ---- workload --------------------------------------------------------------
  void drive(const std::atomic<bool>& stop) {
    std::mt19937_64 rng(o_.seed * 31 + 7);
    int n = 0;
    const std::vector<std::string> jobs = {"chaos-short",   "chaos-short", "chaos-medium", "chaos-fail",  "chaos-slow",
                                           "chaos-garbage", "chaos-pair",  "chaos-excl-a", "chaos-excl-b"};
    auto next_cancel = std::chrono::steady_clock::now() + 3s;
    while (!stop.load()) {
      const std::string key = "s" + std::to_string(o_.seed) + "-" + std::to_string(++n);
      const bool cancel = std::chrono::steady_clock::now() >= next_cancel;
      const std::string job = cancel ? "chaos-long" : jobs[rng() % jobs.size()];
      if (cancel) next_cancel = std::chrono::steady_clock::now() + 3s;
      auto run = submit(job, key, stop);
      // Every fourth round an event, and every tenth event posted twice (the
      // second post must record nothing).
      if (n % 4 == 0) {
        const std::string event = "e" + std::to_string(o_.seed) + "-" + std::to_string(n);
        post_event(event, stop);
        if (n % 40 == 0) post_event(event, stop);
      }
      if (cancel && run > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
        for (int tries = 0; tries < 20; ++tries) {
          auto l = leader();
          if (!l.empty() && http_request(node_port_[l], "POST", "/api/v1/runs/" + std::to_string(run) + "/cancel",
                                         {{"Authorization", "Bearer " + admin_token}})
                                    .status == 202)
            break;
          std::this_thread::sleep_for(200ms);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 200));
    }
  }

  /// Triggers `job` with `key` until some node accepts it (following 307s,
  /// retrying the same key through failovers). Returns the run id or 0.
  std::int64_t submit(const std::string& job, const std::string& key, const std::atomic<bool>& stop) {
    static const std::regex run_re("\"run_id\":(\\d+)");
    for (int attempt = 0; attempt < 150 && !stop.load(); ++attempt) {
      std::string target = leader();
      if (target.empty()) target = node_port_.begin()->first;
      auto r = http_request(node_port_[target], "POST", "/api/v1/jobs/" + job + "/trigger",
                            {{"Authorization", "Bearer " + admin_token}, {"Idempotency-Key", key}});
      std::smatch m;
      if (r.status == 201 && std::regex_search(r.body, m, run_re)) {
        std::lock_guard lock(mutex_);
        submissions_ << "key=" << key << " job=" << job << " accepted=1 status=201 run=" << m[1] << "\n";
        submissions_.flush();
        return std::stoll(m[1]);
      }
      if (r.status == 200) {  // an earlier try of this key created it (its answer was lost)
        const std::string run = std::regex_search(r.body, m, run_re) ? m[1].str() : "0";
        std::lock_guard lock(mutex_);
        submissions_ << "key=" << key << " job=" << job << " accepted=1 status=200 run=" << run << "\n";
        submissions_.flush();
        return std::stoll(run);
      }
      std::this_thread::sleep_for(200ms);
    }
    std::lock_guard lock(mutex_);
    submissions_ << "key=" << key << " job=" << job << " accepted=0\n";
    return 0;
  }

  /// Posts the event `chaos.tick` with dedupe key `key` until some node
  /// accepts it (any node may; retried through failovers with the same key).
  void post_event(const std::string& key, const std::atomic<bool>& stop) {
    const std::string body = R"({"kind":"chaos.tick","payload":{"key":")" + key + R"("},"dedupe_key":")" + key + "\"}";
    for (int attempt = 0; attempt < 150 && !stop.load(); ++attempt) {
      std::string target = leader();
      if (target.empty()) target = node_port_.begin()->first;
      auto r = http_request(node_port_[target], "POST", "/api/v1/events", {{"Authorization", "Bearer " + admin_token}},
                            body);
      if (r.status == 201 || r.status == 200) {
        std::lock_guard lock(mutex_);
        submissions_ << "event=" << key << " accepted=1 status=" << r.status << "\n";
        submissions_.flush();
        return;
      }
      std::this_thread::sleep_for(200ms);
    }
    std::lock_guard lock(mutex_);
    submissions_ << "event=" << key << " accepted=0\n";
  }

  // ---- probes: what each node says about leadership ---------------------------
  /// Asks one node's /status every probe_every until `stop`; one line per
  /// answer (or non-answer) in probes.log. The checker derives liveness from
  /// these, never from a node's own log.
  void probe(const std::string& node, int port, const std::atomic<bool>& stop) {
    static const std::regex role_re("\"role\":\"(\\w+)\""), epoch_re("\"epoch\":(\\d+)"),
        leader_re("\"leader_id\":\"([^\"]*)\"");
    while (!stop.load()) {
      const std::int64_t at = mono_ns(), at_us = wall_us();
      auto r = http_request(port, "GET", "/status", {}, "", 1000ms);
      std::smatch role, epoch, leader;
      const bool up = r.status == 200 && std::regex_search(r.body, role, role_re) &&
                      std::regex_search(r.body, epoch, epoch_re) && std::regex_search(r.body, leader, leader_re);
      {
        std::lock_guard lock(mutex_);
        probes_ << "mono_ns=" << at << " t_us=" << at_us << " node=" << node << " up=" << (up ? 1 : 0)
                << " role=" << (up ? role[1].str() : "") << " epoch=" << (up ? epoch[1].str() : "0")
                << " leader=" << (up ? leader[1].str() : "") << "\n";
      }
      std::this_thread::sleep_for(probe_every);
    }
  }

  // ---- nemesis ---------------------------------------------------------------
  void nemesis(std::int64_t start) {
    std::vector<std::string> kinds;
    for (const auto& f : all_faults)
      if (o_.faults.count(f) && !static_faults.count(f)) kinds.push_back(f);
    std::shuffle(kinds.begin(), kinds.end(), rng_);
    const auto end = std::chrono::steady_clock::now() + o_.duration;
    std::size_t i = 0;
    std::this_thread::sleep_for(2s);
    while (std::chrono::steady_clock::now() + 8s < end && !kinds.empty()) {
      const std::string fault = kinds[i++ % kinds.size()];
      if (i % kinds.size() == 0) std::shuffle(kinds.begin(), kinds.end(), rng_);
      inject(fault);
      // Let the cluster settle between faults.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng_() % 2000));
    }
    while (std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(100ms);
    (void)start;
  }

  /// A proxy fault took effect if the proxy held, delayed or reset
  /// something while it was on.
  void proxy_effect(const std::string& fault, const std::string& target, const FaultProxy& p, std::uint64_t before) {
    if (p.faults_applied() > before)
      event("effect", fault, target, "applied=" + std::to_string(p.faults_applied() - before));
  }
  void kill_effect(const std::string& fault, const std::string& target) {
    if (auto code = procs_.at(target)->wait_for_exit(3s))
      event("effect", fault, target, "exit=" + std::to_string(*code));
  }
  void stop_effect(const std::string& fault, const std::string& target) {
    for (int i = 0; i < 50; ++i) {
      if (process_state(procs_.at(target)->pid()) == 'T') return event("effect", fault, target, "state=T");
      std::this_thread::sleep_for(10ms);
    }
  }
  /// A streaming standby of the current primary, which then waits at every
  /// commit until the standby has it (unless --pg-replication async).
  bool make_standby() {
    standby_dir_ = pg_parent_ + "/standby-" + std::to_string(++standbys_);
    const std::string url =
        run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private standby " + pg_dir_ + " " + standby_dir_);
    if (url.rfind("postgresql://", 0) != 0) return false;
    standby_port_ = std::stoi(url.substr(url.rfind(':') + 1, url.rfind('/') - url.rfind(':') - 1));
    if (o_.pg_replication == "async") {
      log("asynchronous standby on port " + std::to_string(standby_port_));
      return true;
    }
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private sync " + pg_dir_);
    log("synchronous standby on port " + std::to_string(standby_port_));
    return true;
  }

  std::string postmaster_pid() {
    std::ifstream in(pg_dir_ + "/data/postmaster.pid");
    std::string pid;
    std::getline(in, pid);
    return pid;
  }
  /// The asynchronous standby falls behind (cut off from its primary), and
  /// meanwhile the cluster commits what it will not have: run writes, and an
  /// election, made by killing the leader `l` and waiting until the nodes
  /// report its successor. Returns the killed node, restarted after the
  /// failover (it then remembers no epoch, so nothing stops it campaigning
  /// on the promoted standby and winning the lost epoch's number again).
  std::string fall_behind(const std::string& fault, const std::string& l) {
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private detach " + standby_dir_);
    event("effect", fault, "postgres", "standby detached");
    if (l.empty()) {
      std::this_thread::sleep_for(2s);
      return "";
    }
    procs_.at(l)->signal(SIGKILL);
    kill_effect(fault, l);
    for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;) {
      const auto next = leader();
      if (!next.empty() && next != l) {
        event("effect", fault, "postgres", "leader " + l + " killed, " + next + " elected while the standby is behind");
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    std::this_thread::sleep_for(2s);  // the probes see it; run writes go on
    return l;
  }

  /// What a killed worker's outbox held while it was down: the checker
  /// tells a finish that was durable from one that was not.
  void snapshot_outbox(const std::string& worker) {
    std::error_code ec;
    const std::string to = o_.out + "/outbox/" + worker + "-" + std::to_string(++snapshots_);
    fs::create_directories(to, ec);
    fs::copy(work_ + "/spool-" + worker + "/outbox", to, fs::copy_options::recursive, ec);
  }

  void inject(const std::string& fault) {
    const std::string l = wait_leader(10s);
    std::vector<std::string> followers, workers;
    for (auto& [id, p] : node_port_)
      if (id != l) followers.push_back(id);
    for (int w = 1; w <= o_.workers; ++w) workers.push_back("w" + std::to_string(w));
    auto pick = [&](const std::vector<std::string>& v) { return v[rng_() % v.size()]; };
    if (fault == "kill9_leader" && !l.empty()) {
      event("inject", fault, l);
      procs_.at(l)->signal(SIGKILL);
      kill_effect(fault, l);
      std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng_() % 2000));
      start_node(l);
      event("heal", fault, l, "restarted");
    } else if (fault == "kill9_follower" && !followers.empty()) {
      auto f = pick(followers);
      event("inject", fault, f);
      procs_.at(f)->signal(SIGKILL);
      kill_effect(fault, f);
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng_() % 2000));
      start_node(f);
      event("heal", fault, f, "restarted");
    } else if (fault == "kill9_worker") {
      auto w = pick(workers);
      event("inject", fault, w);
      procs_.at(w)->signal(SIGKILL);
      kill_effect(fault, w);
      snapshot_outbox(w);
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng_() % 2500));
      start_worker(w);
      event("heal", fault, w, "restarted");
    } else if (fault == "pause_leader" && !l.empty()) {
      event("inject", fault, l, "SIGSTOP");
      procs_.at(l)->signal(SIGSTOP);
      stop_effect(fault, l);
      std::this_thread::sleep_for(lease + std::chrono::milliseconds(1500 + rng_() % 1500));
      procs_.at(l)->signal(SIGCONT);
      event("heal", fault, l, "SIGCONT");
    } else if (fault == "pause_worker") {
      // Past the heartbeat timeout, sometimes past continuation + margin:
      // a paused worker cannot kill anything, so its task trees must die by
      // themselves before the leader retries their runs.
      auto w = pick(workers);
      auto len = std::chrono::milliseconds(2000 + rng_() % 7000);
      event("inject", fault, w, "SIGSTOP pause_ms=" + std::to_string(len.count()));
      procs_.at(w)->signal(SIGSTOP);
      stop_effect(fault, w);
      std::this_thread::sleep_for(len);
      procs_.at(w)->signal(SIGCONT);
      event("heal", fault, w, "SIGCONT");
    } else if (fault == "partition_leader_db" && !l.empty()) {
      event("inject", fault, l, "blackhole");
      const auto before = db_proxy_[l]->faults_applied();
      db_proxy_[l]->set_mode(ProxyMode::blackhole);
      std::this_thread::sleep_for(lease + std::chrono::milliseconds(1000 + rng_() % 2000));
      proxy_effect(fault, l, *db_proxy_[l], before);
      db_proxy_[l]->heal();
      event("heal", fault, l);
    } else if (fault == "partition_workers" && !l.empty()) {
      // One worker cut off from the leader, sometimes shorter and sometimes
      // longer than the continuation timeout (4 s).
      auto w = pick(workers);
      auto len = std::chrono::milliseconds(2000 + rng_() % 5000);
      event("inject", fault, w, "from=" + l + " blackhole_ms=" + std::to_string(len.count()));
      auto& proxy = *worker_proxy_[w + ">" + l];
      const auto before = proxy.faults_applied();
      proxy.set_mode(ProxyMode::blackhole);
      std::this_thread::sleep_for(len);
      proxy_effect(fault, w, proxy, before);
      proxy.heal();
      event("heal", fault, w);
    } else if (fault == "proxy_latency" && !l.empty()) {
      event("inject", fault, l, "db_latency_ms=150");
      const auto before = db_proxy_[l]->faults_applied();
      db_proxy_[l]->set_mode(ProxyMode::latency, 150ms);
      std::this_thread::sleep_for(4s);
      proxy_effect(fault, l, *db_proxy_[l], before);
      db_proxy_[l]->heal();
      event("heal", fault, l);
    } else if (fault == "proxy_reset") {
      auto n = pick(std::vector<std::string>{l.empty() ? "n1" : l,
                                             pick(followers.empty() ? std::vector<std::string>{"n1"} : followers)});
      event("inject", fault, n, "db_reset");
      const auto before = db_proxy_[n]->faults_applied();
      db_proxy_[n]->set_mode(ProxyMode::reset);
      std::this_thread::sleep_for(500ms);
      proxy_effect(fault, n, *db_proxy_[n], before);
      db_proxy_[n]->heal();
      event("heal", fault, n);
    } else if (fault == "db_stale_connections") {
      // Every open database connection of one node goes silent for good
      // (no FIN, no RST); only its client-side deadlines get it out.
      auto n = l.empty() ? pick(followers) : l;
      event("inject", fault, n, "stranded");
      const auto before = db_proxy_[n]->faults_applied();
      db_proxy_[n]->strand_existing();
      std::this_thread::sleep_for(200ms);
      proxy_effect(fault, n, *db_proxy_[n], before);
      event("heal", fault, n, "new connections pass");
    } else if (fault == "duplicate_worker") {
      // A second process with the same worker id (a copied config) joins
      // for a few seconds: the leader must refuse it while the first is
      // alive, and nothing of either may run twice.
      auto w = pick(workers);
      const std::string dup = w + "-dup";
      event("inject", fault, w, "process=" + dup);
      start_worker(w, dup);
      std::this_thread::sleep_for(std::chrono::milliseconds(3000 + rng_() % 2000));
      std::string log_text;
      {
        std::ifstream in(procs_.at(dup)->log_path());
        log_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      if (log_text.find("duplicate_worker_id") != std::string::npos)
        event("effect", fault, w, "refused");
      else if (log_text.find("worker_attached") != std::string::npos)
        event("effect", fault, w, "attached");
      procs_.at(dup)->signal(SIGTERM);
      procs_.at(dup)->wait_for_exit(10s);
      {
        std::lock_guard lock(mutex_);
        procs_.erase(dup);  // never restarted by heal_all
      }
      event("heal", fault, w, "stopped " + dup);
    } else if (fault == "outbox_disk") {
      // One worker's spool disk stalls (fsync blocks) or is full (fsync
      // fails): finishes cannot be made durable for a while.
      auto w = pick(workers);
      const std::string mode = (++disk_faults_ % 2) ? "stall" : "full";
      auto len = std::chrono::milliseconds(2000 + rng_() % 3000);
      event("inject", fault, w, "mode=" + mode + " ms=" + std::to_string(len.count()));
      const auto before = disk_hits(w);
      std::ofstream(disk_ctl(w)) << mode << "\n";
      std::this_thread::sleep_for(len);
      std::ofstream(disk_ctl(w)) << "ok\n";
      if (disk_hits(w) > before) event("effect", fault, w, "mode=" + mode);
      event("heal", fault, w);
    } else if (fault == "kill_supervisor") {
      // kill -9 of one task supervisor (the OOM killer's choice, an
      // operator's mistake): the task's detached grandchildren must still
      // die before the run's next attempt starts. A supervisor whose task
      // has a grandchild is preferred; waits up to 3 s for one to exist.
      auto w = pick(workers);
      event("inject", fault, w);
      pid_t victim = 0;
      for (int i = 0; i < 30 && victim == 0; ++i) {
        pid_t any = 0;
        for (pid_t sup : children_of(procs_.at(w)->pid()))
          for (pid_t task : children_of(sup)) {
            if (cmdline_of(task).find("--grandchild") != std::string::npos) victim = sup;
            any = sup;
          }
        if (victim == 0 && i >= 20) victim = any;
        if (victim == 0) std::this_thread::sleep_for(100ms);
      }
      if (victim > 0 && ::kill(victim, SIGKILL) == 0) event("effect", fault, w, "supervisor=" + std::to_string(victim));
      std::this_thread::sleep_for(500ms);
      event("heal", fault, w);
    } else if (fault == "clock_rate") {
      // One process's monotonic clock (and every wait it makes) runs fast
      // or slow for 6-10 s, then at real speed again. The rates stay inside
      // what the design tolerates (docs/protocol.md, clock rates): a node
      // 0.8x or 1.25x, a worker 0.9x or 1.1x (a worker slower than 5/6 could
      // keep a tree alive past the leader's continuation deadline + margin).
      const bool on_node = rng_() % 2 == 0;
      const std::string target =
          on_node ? (l.empty() || rng_() % 2 ? pick(followers.empty() ? std::vector<std::string>{"n1"} : followers) : l)
                  : pick(workers);
      const bool fast = rng_() % 2 == 0;
      const std::string rate = on_node ? (fast ? "1.25" : "0.8") : (fast ? "1.1" : "0.9");
      auto len = std::chrono::milliseconds(6000 + rng_() % 4000);
      event("inject", fault, target, "rate=" + rate + " ms=" + std::to_string(len.count()));
      const auto before = clock_hits(target);
      std::ofstream(clock_ctl(target)) << rate << "\n";
      std::this_thread::sleep_for(len);
      std::ofstream(clock_ctl(target)) << "1\n";
      if (clock_hits(target) > before) event("effect", fault, target, "rate=" + rate);
      event("heal", fault, target);
    } else if (fault == "pg_failover" && !standby_dir_.empty()) {
      // The primary crashes; its synchronous standby is promoted and the
      // address every node uses leads to it (as a virtual IP or a
      // multi-host URL does). Then a new standby, for the next one.
      event("inject", fault, "postgres",
            "primary port " + std::to_string(pg_port_) + " replication=" + o_.pg_replication);
      std::string killed;
      if (o_.pg_replication == "async") killed = fall_behind(fault, l);
      run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private crash " + pg_dir_);
      run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private promote " + standby_dir_);
      for (auto& [k, p] : db_proxy_) p->set_upstream(standby_port_);
      run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + pg_dir_);  // gone for good
      pg_dir_ = standby_dir_;
      pg_port_ = standby_port_;
      url_ = run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private url " + pg_dir_ + " baton");
      standby_dir_.clear();
      const std::string recovery = run_cmd("psql -X -q -t -A '" + url_ + "' -c 'SELECT pg_is_in_recovery()'");
      if (recovery == "f") event("effect", fault, "postgres", "promoted port " + std::to_string(pg_port_));
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng_() % 2000));
      if (!make_standby()) log("pg_failover: no new standby; later failovers are skipped");
      if (!killed.empty()) start_node(killed);
      event("heal", fault, "postgres", "new primary port " + std::to_string(pg_port_));
    } else if (fault == "pg_restart") {
      const std::string before = postmaster_pid();
      event("inject", fault, "postgres");
      run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private restart " + pg_dir_);
      const std::string after = postmaster_pid();
      if (!after.empty() && after != before) event("effect", fault, "postgres", "postmaster " + before + "->" + after);
      event("heal", fault, "postgres", "restarted");
    }
  }

  void heal_all() {
    for (auto& [k, p] : db_proxy_) p->heal();
    for (auto& [k, p] : worker_proxy_) p->heal();
    std::vector<std::string> dead;
    {
      std::lock_guard lock(mutex_);
      for (auto& [id, p] : procs_) {
        p->signal(SIGCONT);
        if (!p->running()) dead.push_back(id);
      }
    }
    for (const auto& id : dead) id[0] == 'n' ? start_node(id) : start_worker(id);
  }

  void stop_all() {
    std::lock_guard lock(mutex_);
    for (auto& [id, p] : procs_)
      if (id[0] == 'w') p->signal(SIGTERM);
    for (auto& [id, p] : procs_)
      if (id[0] == 'w') p->wait_for_exit(10s);
    for (auto& [id, p] : procs_)
      if (id[0] == 'n') p->signal(SIGTERM);
    for (auto& [id, p] : procs_) p->wait_for_exit(10s);
    procs_.clear();
  }

  void collect_files() {
    std::error_code ec;
    for (int w = 1; w <= o_.workers; ++w) {
      std::string id = "w" + std::to_string(w);
      fs::copy_file(work_ + "/spool-" + id + "/journal.log", o_.out + "/journals/" + id + ".log",
                    fs::copy_options::overwrite_existing, ec);
    }
    for (const auto& e : fs::directory_iterator(work_, ec))
      if (e.path().extension() == ".log")
        fs::copy_file(e.path(), o_.out + "/logs/" + e.path().filename().string(), fs::copy_options::overwrite_existing,
                      ec);
  }

  Options o_;
  std::mt19937_64 rng_;
  std::string work_, pg_dir_, url_;
  int pg_port_ = 0;
  std::string pg_parent_, standby_dir_;  ///< pg_failover: the synchronous standby, if any
  int standby_port_ = 0, standbys_ = 0;
  boost::asio::io_context ioc_;
  std::thread io_thread_;
  std::map<std::string, int> node_port_;
  std::map<std::string, std::unique_ptr<FaultProxy>> db_proxy_, worker_proxy_;
  std::map<std::string, std::unique_ptr<ChildProcess>> procs_;
  std::mutex mutex_;
  std::ofstream nemesis_, submissions_, probes_;
  std::string evidence_, skewed_node_;
  int spawns_ = 0, snapshots_ = 0, disk_faults_ = 0;
  bool skew_logged_ = false, continuation_skew_logged_ = false;
  const std::int64_t t0_ = wall_us();
};

int usage() {
  std::cerr << "usage: baton-chaos run [--seed N] [--duration 120s] [--nodes 3] [--workers 3]\n"
               "                        [--faults all|kind,kind,...] [--out DIR] [--binary PATH]\n"
               "                        [--pg-replication sync|async]\n"
               "       baton-chaos check DIR\n"
               "fault kinds: ";
  for (const auto& f : all_faults) std::cerr << f << ' ';
  std::cerr << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  if (args[0] == "check" && args.size() == 2) return Harness::check(args[1]);
  if (args[0] != "run") return usage();
  Options o;
  std::string faults = "all";
  for (std::size_t i = 1; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::runtime_error(args[i] + " needs a value");
      return args[++i];
    };
    try {
      if (args[i] == "--seed")
        o.seed = std::stoull(value());
      else if (args[i] == "--duration") {
        std::string why, v = value();
        auto d = baton::parse_duration(v, &why);
        if (!d) throw std::runtime_error("--duration: " + why);
        o.duration = *d;
      } else if (args[i] == "--nodes")
        o.nodes = std::stoi(value());
      else if (args[i] == "--workers")
        o.workers = std::stoi(value());
      else if (args[i] == "--faults")
        faults = value();
      else if (args[i] == "--out")
        o.out = value();
      else if (args[i] == "--binary")
        o.binary = value();
      else if (args[i] == "--pg-replication") {
        o.pg_replication = value();
        if (o.pg_replication != "sync" && o.pg_replication != "async")
          throw std::runtime_error("--pg-replication: '" + o.pg_replication + "' is neither sync nor async");
      } else
        throw std::runtime_error("unknown option " + args[i]);
    } catch (const std::exception& e) {
      std::cerr << "baton-chaos: " << e.what() << "\n";
      return usage();
    }
  }
  if (o.nodes < 2 || o.nodes > 9 || o.workers < 1 || o.workers > 50) {
    std::cerr << "baton-chaos: --nodes must be 2-9 and --workers 1-50\n";
    return 2;
  }
  if (faults == "all")
    o.faults.insert(all_faults.begin(), all_faults.end());
  else if (faults != "none") {
    std::stringstream s(faults);
    std::string f;
    while (std::getline(s, f, ',')) {
      if (std::find(all_faults.begin(), all_faults.end(), f) == all_faults.end()) {
        std::cerr << "baton-chaos: unknown fault '" << f << "'\n";
        return usage();
      }
      o.faults.insert(f);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  return Harness(o).run();
}
