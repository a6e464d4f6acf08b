#include "harness.h"

namespace baton::chaos::harness {

void Harness::nemesis(std::int64_t start) {
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

void Harness::proxy_effect(const std::string& fault, const std::string& target, const FaultProxy& p,
                           std::uint64_t before) {
  if (p.faults_applied() > before)
    event("effect", fault, target, "applied=" + std::to_string(p.faults_applied() - before));
}

void Harness::proxy_effect(const std::string& fault, const std::string& target, const DbLinks& p,
                           std::uint64_t before) {
  if (p.faults_applied() > before)
    event("effect", fault, target, "applied=" + std::to_string(p.faults_applied() - before));
}

void Harness::kill_effect(const std::string& fault, const std::string& target) {
  if (auto code = procs_.at(target)->wait_for_exit(3s)) event("effect", fault, target, "exit=" + std::to_string(*code));
}

void Harness::stop_effect(const std::string& fault, const std::string& target) {
  for (int i = 0; i < 50; ++i) {
    if (process_state(procs_.at(target)->pid()) == 'T') return event("effect", fault, target, "state=T");
    std::this_thread::sleep_for(10ms);
  }
}

bool Harness::make_standby() {
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

std::string Harness::postmaster_pid() {
  std::ifstream in(pg_dir_ + "/data/postmaster.pid");
  std::string pid;
  std::getline(in, pid);
  return pid;
}

std::string Harness::fall_behind(const std::string& fault, const std::string& l) {
  if (o_.pg_ha) {
    // Every standby of the formation: the primary's replication link cut.
    const std::string primary = pg_ha("primary");
    if (!member_links_.count(primary)) return "";
    member_links_.at(primary).pg->set_mode(ProxyMode::blackhole);
    event("effect", fault, "postgres", "standbys cut off from " + primary);
  } else {
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private detach " + standby_dir_);
    event("effect", fault, "postgres", "standby detached");
  }
  const int created_before = created_.load();
  // The window the standbys miss must hold something the checker can see
  // lost: runs created for idempotency keys (idempotency_keys_once) at the
  // least. A fixed 2 s was not always enough: on a slow machine the new
  // leader took writes late, the window held nothing, and the control
  // caught nothing although a standby that was behind was promoted (CI,
  // seed 29 of chaos_pg_ha_async_failover).
  // Waiting longer helps only while a leader takes writes: with none (the
  // nodes refuse to lead a history that went backwards, as after the
  // private standby's first failover) nothing can be created.
  auto hold_writes = [&](bool led) {
    std::this_thread::sleep_for(2s);  // the probes see it; run writes go on
    const auto created = [&] { return created_.load() - created_before; };
    for (auto end = std::chrono::steady_clock::now() + 30s;
         led && created() < 3 && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(100ms);
    event("effect", fault, "postgres", std::to_string(created()) + " runs created while the standbys are behind");
  };
  if (l.empty()) {
    hold_writes(false);
    return "";
  }
  procs_.at(l)->signal(SIGKILL);
  kill_effect(fault, l);
  bool elected = false;
  for (auto end = std::chrono::steady_clock::now() + 10s; !elected && std::chrono::steady_clock::now() < end;) {
    const auto next = leader();
    elected = !next.empty() && next != l;
    if (elected)
      event("effect", fault, "postgres", "leader " + l + " killed, " + next + " elected while the standby is behind");
    else
      std::this_thread::sleep_for(100ms);
  }
  hold_writes(elected);
  return l;
}

void Harness::snapshot_outbox(const std::string& worker) {
  std::error_code ec;
  const std::string to = o_.out + "/outbox/" + worker + "-" + std::to_string(++snapshots_);
  fs::create_directories(to, ec);
  fs::copy(work_ + "/spool-" + worker + "/outbox", to, fs::copy_options::recursive, ec);
}

void Harness::inject(const std::string& fault) {
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
    // A worker with nothing to make durable meanwhile (idle, or between
    // leaders) has not touched its disk: the fault stays until it does, for
    // up to 5 s more, rather than pass unseen (fault_coverage failed a CI
    // run for that: 4.9 s of stall, no write to stall).
    for (int i = 0; i < 50 && disk_hits(w) <= before; ++i) std::this_thread::sleep_for(100ms);
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
  } else if (o_.pg_ha && fault.rfind("pg_ha_", 0) == 0) {
    inject_pg_ha(fault, l);
  } else if (fault == "pg_restart") {
    const std::string before = postmaster_pid();
    event("inject", fault, "postgres");
    run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-private restart " + pg_dir_);
    const std::string after = postmaster_pid();
    if (!after.empty() && after != before) event("effect", fault, "postgres", "postmaster " + before + "->" + after);
    event("heal", fault, "postgres", "restarted");
  }
}

void Harness::heal_all() {
  for (auto& [k, p] : db_proxy_) p->heal();
  for (auto& [k, links] : member_links_) links.set_mode(ProxyMode::pass);
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

void Harness::stop_all() {
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

void Harness::collect_files() {
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

}  // namespace baton::chaos::harness
