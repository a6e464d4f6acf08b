#pragma once
// A real Baton cluster for integration tests: a database in the executable's
// private PostgreSQL, `baton node` and `baton worker` child processes on
// free loopback ports, and helpers to read worker journals and call the API.
// Every process is killed and reaped when the Cluster goes away.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "baton/store_testing/pg_instance.h"
#include "baton/testing/child_process.h"

namespace baton::testing {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

inline const std::string admin_token = "suite-admin-token-not-for-production";

struct JournalEntry {
  std::string event;  // start | exit
  std::int64_t run = 0;
  int attempt = 0;
  std::string token;
  int pid = 0;
  std::int64_t wall_us = 0;
};

/// How many times a journal shows `run` starting (any attempt).
inline std::size_t starts_of(const std::vector<JournalEntry>& journal, std::int64_t run) {
  std::size_t n = 0;
  for (const auto& e : journal) n += e.event == "start" && e.run == run;
  return n;
}

inline bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds max) {
  for (auto end = SteadyClock::now() + max; SteadyClock::now() < end; std::this_thread::sleep_for(20ms)) {
    try {
      if (cond()) return true;
    } catch (const std::exception&) {
    }
  }
  try {
    return cond();
  } catch (const std::exception&) {
    return false;
  }
}

struct ClusterOptions {
  std::string lease = "3s", renew_every = "500ms", safety_margin = "1s";
  std::string heartbeat_interval = "300ms", heartbeat_timeout = "1500ms", reassign_after = "3s";
  std::string continuation_timeout = "4s", continuation_margin = "2s";
  bool log_archive = false;   ///< every node gets log_archive_dir: <cluster dir>/archive (shared)
  std::string runtime_extra;  ///< more keys of the runtime map, e.g. ", prune_every: 1s"
  std::string node_extra;     ///< more top-level lines of every node's config
  /// TLS with the shared throwaway CA (ThrowawayCa::shared()); false: every
  /// node and worker runs with `insecure: true` (reach them with
  /// http_request_plain).
  bool tls = true;
  /// Mutual TLS: the nodes' tls.worker_certificates (off | optional |
  /// required); workers then present the CA's certificate for their id.
  std::string worker_certificates = "off";
  /// Nodes accept the shared worker token (worker_token_file); false: only
  /// credentials from enrollment (see worker_auth_override).
  bool shared_worker_token = true;
  /// The nodes' admin_token_file ("": cmd/tests/tokens/admin.token).
  std::string admin_token_file;
};

class Cluster {
 public:
  using Options = ClusterOptions;

  explicit Cluster(const std::string& name, const std::string& jobs_yaml, ClusterOptions o = ClusterOptions())
      : opt_(o) {
    char tmpl[] = "/tmp/baton-cluster-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    url_ = PgInstance::shared().fresh_database(name);
    std::filesystem::create_directories(dir_ + "/jobs");
    std::ofstream(dir_ + "/jobs/jobs.yaml") << jobs_yaml;
    // `baton ctl` processes a test starts trust the cluster's CA.
    ::setenv("BATON_CA_FILE", ThrowawayCa::shared().ca().c_str(), 1);
  }

  /// What HTTP to this cluster's nodes takes (TLS or not, per the options).
  HttpReply http(int port, const std::string& method, const std::string& target,
                 const std::vector<std::pair<std::string, std::string>>& headers = {}, const std::string& body = "") {
    return opt_.tls ? http_request(port, method, target, headers, body)
                    : http_request_plain(port, method, target, headers, body);
  }

  /// The `tls` (or `insecure`) lines of a node's config.
  std::string node_tls_config() const {
    if (!opt_.tls) return "insecure: true\n";
    const auto& ca = ThrowawayCa::shared();
    std::string out = "tls: {cert_file: " + ca.node_cert() + ", key_file: " + ca.node_key();
    if (opt_.worker_certificates != "off")
      out += ", client_ca_file: " + ca.ca() + ", worker_certificates: " + opt_.worker_certificates;
    return out + "}\n";
  }
  ~Cluster() {
    procs_.clear();
    // BATON_KEEP_CLUSTER=1 keeps a passing test's files too (logs to compare).
    if (!::testing::Test::HasFailure() && !std::getenv("BATON_KEEP_CLUSTER"))
      std::filesystem::remove_all(dir_);
    else
      std::printf("cluster files kept in %s\n", dir_.c_str());
  }

  /// Starts node `id` (a fresh process each call).
  /// `extra`: more top-level lines of this node's config; `tls`: its tls
  /// (or insecure) lines instead of the cluster's.
  ChildProcess& start_node(const std::string& id, const std::string& extra = "", const std::string& tls = "") {
    if (!node_ports_.count(id)) node_ports_[id] = free_loopback_port();
    std::string cfg = dir_ + "/" + id + ".yaml";
    std::ofstream(cfg) << "node_id: " << id << "\nlisten: 127.0.0.1:" << node_ports_[id]
                       << (opt_.shared_worker_token ? "\nworker_token_file: " + std::string(BATON_SOURCE_DIR) +
                                                          "/cmd/tests/tokens/worker.token"
                                                    : std::string())
                       << "\nadmin_token_file: "
                       << (opt_.admin_token_file.empty()
                               ? std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/admin.token"
                               : opt_.admin_token_file)
                       << "\ndatabase: {url: '"
                       << (node_database_url_.empty() ? PgInstance::shared().runtime_url(url_) : node_database_url_)
                       << "'}\n"
                       << "election: {lease: " << opt_.lease << ", renew_every: " << opt_.renew_every
                       << ", safety_margin: " << opt_.safety_margin << ", poll_every: 300ms}\n"
                       << "runtime: {heartbeat_interval: " << opt_.heartbeat_interval
                       << ", heartbeat_timeout: " << opt_.heartbeat_timeout
                       << ", reassign_after: " << opt_.reassign_after
                       << ", continuation_timeout: " << opt_.continuation_timeout
                       << ", continuation_margin: " << opt_.continuation_margin
                       << ", timeout_grace: 2s, assign_with_start: true" << opt_.runtime_extra << "}\n"
                       << (opt_.log_archive ? "log_archive_dir: " + dir_ + "/archive\n" : "")
                       << "incident_journal_dir: " << dir_ << "/journal-" << id << "\n"
                       << (tls.empty() ? node_tls_config() : tls) << opt_.node_extra << extra;
    auto& node = spawn(id, {BATON_BINARY, "node", "--config", cfg});
    if (!jobs_applied_) apply_jobs(id);
    return node;
  }

  /// Loads the cluster's job file through `baton ctl apply`, the way an
  /// operator does (nodes read no job files), once `node` answers.
  void apply_jobs(const std::string& node) {
    wait_until([&] { return http(port(node), "GET", "/healthz").status == 200; }, 20s);
    const std::string token_file = opt_.admin_token_file.empty()
                                       ? std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/admin.token"
                                       : opt_.admin_token_file;
    std::vector<std::string> argv{BATON_BINARY,   "ctl",     "--addr", "127.0.0.1:" + std::to_string(port(node)),
                                  "--token-file", token_file};
    if (!opt_.tls) argv.push_back("--insecure");
    for (const char* a : {"apply", "-f"}) argv.push_back(a);
    argv.push_back(dir_ + "/jobs");
    ChildProcess apply(argv, dir_ + "/apply.log");
    auto rc = apply.wait_for_exit(30s);
    if (rc != 0) throw std::runtime_error("baton ctl apply failed: " + apply.log());
    jobs_applied_ = true;
  }

  /// Starts worker `id`, pointed at every node started so far (in order).
  /// `process` names a second process using the same worker id (own spool
  /// and log); `labels` is a YAML map.
  ChildProcess& start_worker(const std::string& id, int capacity = 4, std::vector<std::string> only_nodes = {},
                             const std::string& process = "", const std::string& labels = "{}") {
    const std::string name = process.empty() ? id : process;
    std::string cfg = dir_ + "/" + name + ".yaml";
    std::ofstream out(cfg);
    out << "worker_id: " << id << "\nlabels: " << labels << "\ncoordinators: [";
    bool first = true;
    for (const auto& [n, port] : node_ports_) {
      if (!only_nodes.empty() && std::find(only_nodes.begin(), only_nodes.end(), n) == only_nodes.end()) continue;
      out << (first ? "" : ", ") << "127.0.0.1:" << port;
      first = false;
    }
    out << "]\n";
    if (auto a = worker_auth_override.find(name); a != worker_auth_override.end())
      out << a->second;
    else
      out << "token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/worker.token\n";
    out << "capacity: " << capacity << "\nspool_dir: " << dir_ << "/spool-" << name << "\nsql_connections: {local: '"
        << url_ << "'}\n"
        << "reconnect: {base: 50ms, max: 500ms}\n";
    if (auto o = worker_tls_override.find(name); o != worker_tls_override.end()) {
      out << o->second;
    } else if (!opt_.tls) {
      out << "insecure: true\n";
    } else {
      auto& ca = ThrowawayCa::shared();
      out << "tls: {ca_file: " << ca.ca();
      if (opt_.worker_certificates != "off") {
        ca.add_workers({id});
        out << ", cert_file: " << ca.cert(id) << ", key_file: " << ca.key(id);
      }
      out << "}\n";
    }
    out.close();
    return spawn(name, {BATON_BINARY, "worker", "--config", cfg});
  }

  /// A worker process's tls (or insecure) lines instead of the cluster's,
  /// by process name.
  std::map<std::string, std::string> worker_tls_override;
  /// A worker process's authentication lines (enrollment_token_file, ...)
  /// instead of the shared token_file, by process name.
  std::map<std::string, std::string> worker_auth_override;

  ChildProcess& proc(const std::string& id) { return *procs_.at(id); }
  int port(const std::string& node) const { return node_ports_.at(node); }
  /// The database as its owner (the tests' superuser). The nodes reach it
  /// as `baton_runtime`, a role with row rights only (PgInstance::
  /// runtime_url): every cluster test is also a test of those grants.
  const std::string& url() const { return url_; }
  /// The URL of the runtime role (what nodes are given unless told).
  std::string runtime_url() const { return PgInstance::shared().runtime_url(url_); }
  /// Nodes started from now on reach the database through `url` (a pooler
  /// in front of it) instead of the runtime role's URL.
  void set_node_database_url(const std::string& url) { node_database_url_ = url; }
  const std::string& dir() const { return dir_; }
  DbInspector db() const { return DbInspector(url_); }

  /// The node the lease names, once there is a leader.
  std::string wait_for_leader(std::chrono::milliseconds max = 10s, std::int64_t above_epoch = 0) {
    std::string leader;
    wait_until(
        [&] {
          auto l = db().lease();
          if (l.released || l.epoch <= above_epoch) return false;
          leader = l.leader_id;
          return !leader.empty();
        },
        max);
    return leader;
  }

  /// Waits until `node` is ready (/readyz 200: its database answers and it
  /// knows a leader it can send calls to). A follower just started refuses
  /// connections, then answers a leader-only call with 503 `no_leader`,
  /// until it has read the lease: `ctl` exits 3 on either.
  bool wait_for_ready(const std::string& node, std::chrono::milliseconds max = 10s) {
    return wait_until([&] { return http(port(node), "GET", "/readyz").status == 200; }, max);
  }

  /// Waits until `n` workers are attached to the leader (its /status).
  bool wait_for_workers(const std::string& leader, int n, std::chrono::milliseconds max = 10s) {
    return wait_until(
        [&] {
          auto r = http(port(leader), "GET", "/status");
          return r.body.find("\"attached_workers\":" + std::to_string(n)) != std::string::npos;
        },
        max);
  }

  /// POST /api/v1/jobs/{job}/trigger on `node`; returns the new run id (0 if none).
  std::int64_t trigger(const std::string& node, const std::string& job, const std::string& key = "") {
    std::vector<std::pair<std::string, std::string>> h{{"Authorization", "Bearer " + admin_token}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    auto r = http(port(node), "POST", "/api/v1/jobs/" + job + "/trigger", h);
    std::smatch m;
    static const std::regex re("\"run_id\":(\\d+)");
    if (std::regex_search(r.body, m, re)) return std::stoll(m[1]);
    return 0;
  }

  bool wait_for_state(std::int64_t run, const std::string& state, std::chrono::milliseconds max) {
    return wait_until(
        [&] {
          auto r = db().run(run);
          return r && r->state == state;
        },
        max);
  }

  std::vector<JournalEntry> journal(const std::string& worker) const {
    std::vector<JournalEntry> out;
    std::ifstream in(dir_ + "/spool-" + worker + "/journal.log");
    std::string line;
    static const std::regex re(R"((\w+) run=(\d+) attempt=(\d+) token=(\S*) pid=(\d+) mono_ns=\d+ wall_us=(\d+))");
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, re))
        out.push_back({m[1], std::stoll(m[2]), std::stoi(m[3]), m[4], std::stoi(m[5]), std::stoll(m[6])});
    }
    return out;
  }
  /// Finishes in the worker's outbox not yet acknowledged, read from its
  /// log files (finish lines minus ack lines).
  std::size_t outbox_pending(const std::string& worker) const {
    std::size_t finishes = 0, acks = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/spool-" + worker + "/outbox", ec)) {
      std::ifstream in(e.path());
      for (std::string l; std::getline(in, l);) {
        finishes += l.find("\"type\":\"finish\"") != std::string::npos;
        acks += l.rfind("{\"ack\":", 0) == 0;
      }
    }
    return finishes > acks ? finishes - acks : 0;
  }

  static std::int64_t now_wall_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  bool jobs_applied_ = false;
  ChildProcess& spawn(const std::string& id, std::vector<std::string> argv) {
    procs_.erase(id);
    auto log = dir_ + "/" + id + "." + std::to_string(++spawns_) + ".log";
    procs_[id] = std::make_unique<ChildProcess>(argv, log);
    return *procs_[id];
  }

  Options opt_;
  std::string dir_, url_, node_database_url_;
  std::map<std::string, int> node_ports_;
  std::map<std::string, std::unique_ptr<ChildProcess>> procs_;
  int spawns_ = 0;
};

}  // namespace baton::testing
