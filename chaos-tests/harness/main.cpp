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
#include <signal.h>

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
#include <string>
#include <thread>
#include <vector>

#include "baton/chaos/checker.h"
#include "baton/chaos/fault_proxy.h"
#include "baton/core/duration.h"
#include "baton/testing/child_process.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using baton::chaos::FaultProxy;
using baton::chaos::ProxyMode;
using baton::testing::ChildProcess;
using baton::testing::http_request;

namespace {

const std::vector<std::string> all_faults = {
    "kill9_leader",      "kill9_follower", "kill9_worker", "pause_leader", "partition_leader_db",
    "partition_workers", "proxy_latency",  "proxy_reset",  "pg_restart",   "clock_skew"};
const std::string admin_token = "example-admin-token-change-me";
constexpr auto lease = 3000ms;

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string run_cmd(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

struct Options {
  std::uint64_t seed = 1;
  std::chrono::milliseconds duration = 120s;
  int nodes = 3;
  int workers = 3;
  std::set<std::string> faults;
  std::string out = "chaos-out";
  std::string binary;
};

class Harness {
 public:
  explicit Harness(Options o) : o_(std::move(o)), rng_(o_.seed) {}

  int run() {
    fs::remove_all(o_.out);
    fs::create_directories(o_.out + "/journals");
    fs::create_directories(o_.out + "/logs");
    fs::create_directories(o_.out + "/db");
    work_ = fs::absolute(o_.out).string() + "/work";
    fs::create_directories(work_ + "/jobs");
    nemesis_.open(o_.out + "/nemesis.log");
    submissions_.open(o_.out + "/submissions.log");

    char tmpl[] = "/tmp/baton-chaos-pg-XXXXXX";
    const std::string pg_parent = ::mkdtemp(tmpl);
    fs::permissions(pg_parent, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    pg_dir_ = pg_parent + "/pg";
    url_ = run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private start " + pg_dir_ + " baton");
    if (url_.rfind("postgresql://", 0) != 0) return fail("cannot start PostgreSQL");
    pg_port_ = std::stoi(url_.substr(url_.rfind(':') + 1, url_.rfind('/') - url_.rfind(':') - 1));
    log("postgres " + url_);

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
    }
    std::this_thread::sleep_for(1500ms);
    for (int i = 1; i <= o_.workers; ++i) start_worker("w" + std::to_string(i));
    if (!wait_leader(20s).size()) return fail("no leader elected");

    const std::int64_t start = wall_us();
    std::atomic<bool> stop_workload{false};
    std::thread workload([&] { drive(stop_workload); });
    nemesis(start);
    const std::int64_t end = wall_us();
    heal_all();
    stop_workload = true;
    workload.join();
    std::string requested;
    for (const auto& f : o_.faults) requested += (requested.empty() ? "" : ",") + f;
    std::ofstream(o_.out + "/window.txt")
        << "start_us=" << start << " end_us=" << end << " cron_job=chaos-cron faults=" << requested << "\n";
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
    collect_files();
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + pg_dir_);
    for (auto& [k, p] : db_proxy_) p->stop();
    for (auto& [k, p] : worker_proxy_) p->stop();
    ioc_.stop();
    io_thread_.join();
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
    nemesis_ << "t_us=" << wall_us() << " phase=" << phase << " fault=" << fault << " target=" << target
             << (detail.empty() ? "" : " detail=" + detail) << "\n";
    nemesis_.flush();
    log(phase + " " + fault + " " + target + " " + detail);
  }

  void write_jobs() {
    std::ofstream(work_ + "/jobs/chaos.yaml") << R"(jobs:
  - name: chaos-cron
    schedule: '* * * * * *'
    misfire_policy: run_all
    max_attempts: 3
    retry: {base: 200ms, cap: 2s}
    tasks:
      - {kind: PROGRAM, command: [/bin/true]}
  - name: chaos-short
    max_attempts: 3
    retry: {base: 200ms, cap: 2s}
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, '1']}
  - name: chaos-medium
    max_attempts: 3
    retry: {base: 200ms, cap: 2s}
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'sleep 2; echo done']}
  - name: chaos-fail
    max_attempts: 2
    retry: {base: 200ms, cap: 1s}
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'sleep 0.3; exit 7']}
  - name: chaos-slow
    max_attempts: 3
    retry: {base: 200ms, cap: 2s}
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, '8']}
  - name: chaos-long
    max_attempts: 3
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, '4']}
)";
  }

  void start_node(const std::string& id) {
    std::string cfg = work_ + "/" + id + ".yaml";
    std::ofstream(cfg) << "node_id: " << id << "\nlisten: 127.0.0.1:" << node_port_[id]
                       << "\nworker_token_file: " << BATON_SOURCE_DIR << "/configs/example-worker.token"
                       << "\nadmin_token_file: " << BATON_SOURCE_DIR << "/configs/example-admin.token"
                       << "\njobs_dir: " << work_
                       << "/jobs\ndatabase: {url: 'postgresql://postgres@127.0.0.1:" << db_proxy_[id]->port()
                       << "/baton', start_timeout: 20s}\n"
                       << "election: {lease: 3s, renew_every: 500ms, safety_margin: 1s, poll_every: 300ms}\n"
                       << "runtime: {heartbeat_interval: 300ms, heartbeat_timeout: 1500ms, reassign_after: 3s, "
                          "continuation_timeout: 4s, continuation_margin: 2s, timeout_grace: 2s}\n";
    std::vector<std::string> argv = {binary(), "node", "--config", cfg};
    // One node lives minutes in the future: nothing may depend on synchronised clocks.
    const bool skewed = o_.faults.count("clock_skew") && id == "n" + std::to_string(o_.nodes);
    if (skewed) {
      argv = {"/usr/bin/env",
              "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
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
      }
    }
    spawn(id, argv);
  }

  void start_worker(const std::string& id) {
    std::string cfg = work_ + "/" + id + ".yaml";
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
    out << "}\ntoken_file: " << BATON_SOURCE_DIR << "/configs/example-worker.token\ncapacity: 6\nspool_dir: " << work_
        << "/spool-" << id << "\nreconnect: {base: 50ms, max: 1s}\n";
    out.close();
    spawn(id, {binary(), "worker", "--config", cfg});
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
    const std::vector<std::string> jobs = {"chaos-short", "chaos-short", "chaos-medium", "chaos-fail", "chaos-slow"};
    auto next_cancel = std::chrono::steady_clock::now() + 3s;
    while (!stop.load()) {
      const std::string key = "s" + std::to_string(o_.seed) + "-" + std::to_string(++n);
      const bool cancel = std::chrono::steady_clock::now() >= next_cancel;
      const std::string job = cancel ? "chaos-long" : jobs[rng() % jobs.size()];
      if (cancel) next_cancel = std::chrono::steady_clock::now() + 3s;
      auto run = submit(job, key, stop);
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
        std::lock_guard lock(mutex_);
        submissions_ << "key=" << key << " job=" << job << " accepted=1 status=200 run=0\n";
        submissions_.flush();
        return 0;
      }
      std::this_thread::sleep_for(200ms);
    }
    std::lock_guard lock(mutex_);
    submissions_ << "key=" << key << " job=" << job << " accepted=0\n";
    return 0;
  }

  // ---- nemesis ---------------------------------------------------------------
  void nemesis(std::int64_t start) {
    std::vector<std::string> kinds;
    for (const auto& f : all_faults)
      if (o_.faults.count(f) && f != "clock_skew") kinds.push_back(f);
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
      std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng_() % 2000));
      start_node(l);
      event("heal", fault, l, "restarted");
    } else if (fault == "kill9_follower" && !followers.empty()) {
      auto f = pick(followers);
      event("inject", fault, f);
      procs_.at(f)->signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng_() % 2000));
      start_node(f);
      event("heal", fault, f, "restarted");
    } else if (fault == "kill9_worker") {
      auto w = pick(workers);
      event("inject", fault, w);
      procs_.at(w)->signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng_() % 2500));
      start_worker(w);
      event("heal", fault, w, "restarted");
    } else if (fault == "pause_leader" && !l.empty()) {
      event("inject", fault, l, "SIGSTOP");
      procs_.at(l)->signal(SIGSTOP);
      std::this_thread::sleep_for(lease + std::chrono::milliseconds(1500 + rng_() % 1500));
      procs_.at(l)->signal(SIGCONT);
      event("heal", fault, l, "SIGCONT");
    } else if (fault == "partition_leader_db" && !l.empty()) {
      event("inject", fault, l, "blackhole");
      db_proxy_[l]->set_mode(ProxyMode::blackhole);
      std::this_thread::sleep_for(lease + std::chrono::milliseconds(1000 + rng_() % 2000));
      db_proxy_[l]->heal();
      event("heal", fault, l);
    } else if (fault == "partition_workers" && !l.empty()) {
      // One worker cut off from the leader, sometimes shorter and sometimes
      // longer than the continuation timeout (4 s).
      auto w = pick(workers);
      auto len = std::chrono::milliseconds(2000 + rng_() % 5000);
      event("inject", fault, w, "from=" + l + " blackhole_ms=" + std::to_string(len.count()));
      worker_proxy_[w + ">" + l]->set_mode(ProxyMode::blackhole);
      std::this_thread::sleep_for(len);
      worker_proxy_[w + ">" + l]->heal();
      event("heal", fault, w);
    } else if (fault == "proxy_latency" && !l.empty()) {
      event("inject", fault, l, "db_latency_ms=150");
      db_proxy_[l]->set_mode(ProxyMode::latency, 150ms);
      std::this_thread::sleep_for(4s);
      db_proxy_[l]->heal();
      event("heal", fault, l);
    } else if (fault == "proxy_reset") {
      auto n = pick(std::vector<std::string>{l.empty() ? "n1" : l,
                                             pick(followers.empty() ? std::vector<std::string>{"n1"} : followers)});
      event("inject", fault, n, "db_reset");
      db_proxy_[n]->set_mode(ProxyMode::reset);
      std::this_thread::sleep_for(500ms);
      db_proxy_[n]->heal();
      event("heal", fault, n);
    } else if (fault == "pg_restart") {
      event("inject", fault, "postgres");
      run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private restart " + pg_dir_);
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
  boost::asio::io_context ioc_;
  std::thread io_thread_;
  std::map<std::string, int> node_port_;
  std::map<std::string, std::unique_ptr<FaultProxy>> db_proxy_, worker_proxy_;
  std::map<std::string, std::unique_ptr<ChildProcess>> procs_;
  std::mutex mutex_;
  std::ofstream nemesis_, submissions_;
  int spawns_ = 0;
  bool skew_logged_ = false;
  const std::int64_t t0_ = wall_us();
};

int usage() {
  std::cerr << "usage: baton-chaos run [--seed N] [--duration 120s] [--nodes 3] [--workers 3]\n"
               "                        [--faults all|kind,kind,...] [--out DIR] [--binary PATH]\n"
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
      else
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
