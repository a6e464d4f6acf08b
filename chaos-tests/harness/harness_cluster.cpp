#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>
#include "harness.h"

namespace baton::chaos::harness {

int Harness::run() {
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
  stop_everything_if_it_dies();
  const std::string& pg_parent = pg_parent_;
  fs::permissions(pg_parent, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  pg_dir_ = pg_parent + "/pg";
  io_thread_ = std::thread([this] {
    auto guard = boost::asio::make_work_guard(ioc_);
    ioc_.run();
  });
  if (o_.pg_ha) {
    // postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/baton?...
    url_ = start_pg_ha();
    if (url_.rfind("postgresql://", 0) != 0) return fail("cannot start the HA formation (scripts/pg-ha): " + url_);
    const std::string hosts = url_.substr(url_.find('@') + 1, url_.find('/', url_.find('@')) - url_.find('@') - 1);
    std::stringstream list(hosts);
    for (std::string h; std::getline(list, h, ',');) pg_ports_.push_back(std::stoi(h.substr(h.rfind(':') + 1)));
    if (pg_ports_.size() != 3)
      return fail("the HA formation's URL names " + std::to_string(pg_ports_.size()) + " hosts");
    log("postgres (HA formation, primary " + pg_ha("primary") + ") " + url_);
  } else {
    url_ = run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private start " + pg_dir_ + " baton");
    if (url_.rfind("postgresql://", 0) != 0) return fail("cannot start PostgreSQL");
    pg_port_ = std::stoi(url_.substr(url_.rfind(':') + 1, url_.rfind('/') - url_.rfind(':') - 1));
    pg_ports_ = {pg_port_};
    log("postgres " + url_);
  }
  // pg_failover: a synchronous streaming standby (docs/operations.md,
  // "PostgreSQL high availability": every acknowledged commit is on it),
  // or an asynchronous one for the negative control.
  if (o_.faults.count("pg_failover") && !make_standby()) return fail("cannot start a standby");

  write_jobs();
  for (int i = 1; i <= o_.nodes; ++i) {
    std::string id = "n" + std::to_string(i);
    node_port_[id] = baton::testing::free_loopback_port();
    db_proxy_[id] = std::make_unique<DbLinks>(ioc_, pg_ports_);
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
        {binary(), "ctl", "--addr", "127.0.0.1:" + std::to_string(node_port_["n1"]), "--ca", ThrowawayCa::shared().ca(),
         "--token-file", std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/admin.token", "apply", "-f",
         work_ + "/jobs"},
        work_ + "/apply.log");
    if (apply.wait_for_exit(30s) != 0) return fail("baton ctl apply failed: " + apply.log());
  }
  if (skewed_node_.size()) {
    // The skewed node runs under libfaketime: its environment says so.
    std::ifstream env("/proc/" + std::to_string(procs_.at(skewed_node_)->pid()) + "/environ");
    std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    if (all.find("FAKETIME=+3m") != std::string::npos) event("effect", "clock_skew", skewed_node_, "faketime");
  }

  // chaos_harness_teardown: a harness that aborts with its cluster up.
  if (const char* a = std::getenv("BATON_CHAOS_ABORT_FOR_TEST"); a && std::string(a) == "1") std::abort();
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
  std::ofstream(o_.out + "/window.txt") << "start_us=" << start << " end_us=" << end << " start_mono_ns=" << start_mono
                                        << " end_mono_ns=" << end_mono << " cron_job=chaos-cron faults=" << requested
                                        << " continuation_ms=" << continuation.count()
                                        << " continuation_margin_ms=" << continuation_margin.count()
                                        << " lease_ms=" << lease.count() << " poll_ms=" << poll_every.count() << "\n";
  log("window closed; waiting for quiescence");
  bool quiet = false;
  const auto quiesce_until = std::chrono::steady_clock::now() + o_.quiesce_for;
  for (;;) {
    quiet = run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh pending '" + url_ + "' " +
                    std::to_string(end)) == "0";
    if (quiet || std::chrono::steady_clock::now() >= quiesce_until) break;
    std::this_thread::sleep_for(1s);
  }
  log(quiet ? "quiescent"
            : "not quiescent after " + std::to_string(o_.quiesce_for.count() / 1000) +
                  " s (the checker will say what is left)");
  if (!quiet)
    run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh activity '" + url_ + "' " + o_.out +
            "/db/activity_at_timeout.csv");
  stop_all();
  run_cmd(std::string(BATON_SOURCE_DIR) + "/chaos-tests/export-history.sh export '" + url_ + "' " + o_.out + "/db");
  // The production checker over the whole history, as an operator runs it.
  run_cmd(binary() + " verify --json --database-url '" + url_ + "' > " + o_.out + "/verify.json");
  run_cmd(binary() + " verify --receipts --json --database-url '" + url_ + "' > " + o_.out + "/receipts.json");
  replay_journals();
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
  stop_postgres();
  for (auto& [k, p] : db_proxy_) p->stop();
  for (auto& [k, p] : worker_proxy_) p->stop();
  for (auto& [k, links] : member_links_) links.stop();
  finished_cleanly();
  ioc_.stop();
  io_thread_.join();
  for (auto* f : {&nemesis_, &submissions_, &probes_}) f->close();
  return check(o_.out);
}

// Each node's incident journal (docs/assurance.md, "Incident replay"): its
// files by epoch and in order, each cut to its whole lines (a node killed mid-write
// leaves half of one), as one journal of every epoch it led, replayed by
// `baton-sim --replay` into the leader core; its summary goes to
// replay-<node>.txt for incident_replay_checker.
void Harness::replay_journals() {
  for (const auto& [id, port] : node_port_) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(work_ + "/journal-" + id, ec))
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    // By epoch, then in order ("<seq>-e<epoch>.jsonl"): a retiring loop's
    // last file may come after the next epoch's first.
    auto key = [](const std::filesystem::path& p) {
      const std::string n = p.filename().string();
      return std::make_pair(std::atoll(n.c_str() + n.find("-e") + 2), n);
    };
    std::sort(files.begin(), files.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    const std::string joined = o_.out + "/journal-" + id + ".jsonl";
    {
      std::ofstream out(joined);
      for (const auto& f : files) {
        std::ifstream in(f);
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto end = all.rfind('\n');
        if (end != std::string::npos) out.write(all.data(), static_cast<std::streamsize>(end + 1));
      }
    }
    run_cmd(std::string(BATON_SIM_BINARY) + " --replay " + joined + " > " + o_.out + "/replay-" + id +
            ".log 2>&1; echo exit=$? >> " + o_.out + "/replay-" + id + ".log; grep -E '^(replay|exit)' " + o_.out +
            "/replay-" + id + ".log > " + o_.out + "/replay-" + id + ".txt");
  }
}

int Harness::check(const std::string& dir) {
  auto report = baton::checker::check_history(dir);
  report.invariants.push_back(production_checker(dir));
  report.invariants.push_back(receipts_checker(dir));
  report.invariants.push_back(incident_replay_checker(dir));
  std::ofstream(dir + "/report.md") << report.markdown();
  std::ofstream(dir + "/report.json") << report.json();
  std::cout << report.markdown();
  return report.ok() ? 0 : 1;
}

void Harness::stop_postgres() {
  if (!pg_dir_.empty() && o_.pg_ha) {
    // What the manager did, kept with the run (its directory goes).
    std::error_code ec;
    for (const std::string m : {"pg1", "pg2", "pg3"})
      fs::copy_file(pg_dir_ + "/" + m + "/patroni.log", o_.out + "/logs/patroni-" + m + ".log",
                    fs::copy_options::overwrite_existing, ec);
    fs::copy_file(pg_parent_ + "/pg-ha.log", o_.out + "/logs/pg-ha.log", fs::copy_options::overwrite_existing, ec);
    pg_ha("stop");
  }
  if (!pg_dir_.empty() && !o_.pg_ha) run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + pg_dir_);
  if (!standby_dir_.empty()) run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private stop " + standby_dir_);
  // The parent mkdtemp made, now empty (pg-private stop removes each
  // cluster's directory): a run leaves nothing in /tmp.
  std::error_code ignored;
  if (!pg_parent_.empty()) fs::remove_all(pg_parent_, ignored);
  pg_dir_.clear();
  standby_dir_.clear();
}

int Harness::fail(const std::string& why) {
  std::cerr << "baton-chaos: " << why << "\n";
  procs_.clear();
  stop_postgres();
  finished_cleanly();
  if (io_thread_.joinable()) {
    ioc_.stop();
    io_thread_.join();
  }
  return 2;
}

void Harness::event(const std::string& phase, const std::string& fault, const std::string& target,
                    const std::string& detail) {
  std::lock_guard lock(mutex_);
  nemesis_ << "t_us=" << wall_us() << " mono_ns=" << mono_ns() << " phase=" << phase << " fault=" << fault
           << " target=" << target << (detail.empty() ? "" : " detail=" + detail) << "\n";
  nemesis_.flush();
  log(phase + " " + fault + " " + target + " " + detail);
}

std::string Harness::task(const std::string& args) const {
  return "[" + std::string(BATON_CHAOS_TASK) + ", --evidence, " + evidence_ + ", " + args + "]";
}

void Harness::write_jobs() {
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
                                               // Overlap control: two at a time, two mutually exclusive
                                               // jobs, and one exclusive job (nothing else runs with it).
                                               "  - name: chaos-pair\n"
                                               "    max_instances: 2\n"
                                               "    max_attempts: 3\n"
                                               "    retry: {base: 200ms, cap: 2s}\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '1000'")
                                            << "}\n"
                                               "  - name: chaos-excl-a\n"
                                               "    mutually_exclusive: true\n"
                                               "    max_attempts: 3\n"
                                               "    retry: {base: 200ms, cap: 2s}\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '300'")
                                            << "}\n"
                                               "  - name: chaos-excl-b\n"
                                               "    mutually_exclusive: true\n"
                                               "    max_attempts: 3\n"
                                               "    retry: {base: 200ms, cap: 2s}\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '300'")
                                            << "}\n"
                                               "  - name: chaos-exclusive\n"
                                               "    exclusive_execution: true\n"
                                               "    max_attempts: 3\n"
                                               "    retry: {base: 200ms, cap: 2s}\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '300'")
                                            << "}\n"
                                               // Keyed concurrency: one run per tenant at a time,
                                               // the tenant a parameter of each trigger.
                                               "  - name: chaos-keyed\n"
                                               "    concurrency: {key: 'tenant-{{param.tenant}}', limit: 1}\n"
                                               "    parameters: {tenant: t0}\n"
                                               "    max_attempts: 3\n"
                                               "    retry: {base: 200ms, cap: 2s}\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '1000'")
                                            << "}\n"
                                               "  - name: chaos-long\n"
                                               "    max_attempts: 3\n"
                                               "    tasks:\n"
                                               "      - {kind: PROGRAM, command: "
                                            << task("--sleep, '4000'") << "}\n";
}

void Harness::start_node(const std::string& id) {
  std::string cfg = work_ + "/" + id + ".yaml";
  const bool long_continuation = o_.faults.count("continuation_skew") && id == "n1";
  if (long_continuation && !continuation_skew_logged_) {
    event("inject", "continuation_skew", id, "continuation_timeout_ms=" + std::to_string(continuation_skewed.count()));
    continuation_skew_logged_ = true;
  }
  std::ofstream(cfg) << "node_id: " << id << "\nlisten: 127.0.0.1:" << node_port_[id]
                     << "\nworker_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/worker.token"
                     << "\nadmin_token_file: " << BATON_SOURCE_DIR << "/cmd/tests/tokens/admin.token"
                     << "\nincident_journal_dir: " << work_ << "/journal-" << id
                     << "\ndatabase: {url: 'postgresql://postgres@" << db_proxy_[id]->hosts()
                     << "/baton', start_timeout: 20s}\n"
                     << "election: {lease: " << lease.count()
                     << "ms, renew_every: 500ms, safety_margin: 1s, poll_every: " << poll_every.count() << "ms}\n"
                     << "runtime: {heartbeat_interval: 300ms, heartbeat_timeout: 1500ms, reassign_after: 3s, "
                        "continuation_timeout: "
                     << (long_continuation ? continuation_skewed : continuation).count()
                     << "ms, continuation_margin: " << continuation_margin.count()
                     << "ms, timeout_grace: 2s, assign_with_start: true}\n"
                     // The production checker sweeps beside the run
                     // (docs/assurance.md); the harness's report counts
                     // what it found.
                     << "verify: {every: 2s, settle: 2s}\n"
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

void Harness::start_worker(const std::string& id, const std::string& process) {
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
               "BATON_CHAOS_DISK_CTL=" + disk_ctl(name), "BATON_CHAOS_CLOCK_CTL=" + clock_ctl(name), binary(), "worker",
               "--config", cfg});
}

std::string Harness::binary() const { return o_.binary.empty() ? std::string(BATON_BINARY) : o_.binary; }

std::uintmax_t Harness::clock_hits(const std::string& process) const {
  std::error_code ec;
  auto n = fs::file_size(clock_ctl(process) + ".hits", ec);
  return ec ? 0 : n;
}

std::uintmax_t Harness::disk_hits(const std::string& worker) const {
  std::error_code ec;
  auto n = fs::file_size(disk_ctl(worker) + ".hits", ec);
  return ec ? 0 : n;
}

void Harness::spawn(const std::string& id, const std::vector<std::string>& argv) {
  std::lock_guard lock(mutex_);
  procs_.erase(id);
  procs_[id] = std::make_unique<ChildProcess>(argv, work_ + "/" + id + "." + std::to_string(++spawns_) + ".log");
}

std::string Harness::leader() {
  for (auto& [id, port] : node_port_) {
    auto r = http_request(port, "GET", "/status");
    if (r.body.find("\"role\":\"leader\"") != std::string::npos) return id;
  }
  return "";
}

std::string Harness::wait_leader(std::chrono::milliseconds max) {
  for (auto end = std::chrono::steady_clock::now() + max; std::chrono::steady_clock::now() < end;) {
    auto l = leader();
    if (!l.empty()) return l;
    std::this_thread::sleep_for(100ms);
  }
  return "";
}

}  // namespace baton::chaos::harness
