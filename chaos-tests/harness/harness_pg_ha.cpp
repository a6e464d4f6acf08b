// The database's faults under a real failover manager (`--pg-ha`): the
// manager, not the harness, decides whether and which standby is promoted.
// The harness kills, cuts the primary off from its standbys and the manager
// (a proxy on each link between the members, MemberLinks), asks for a
// switchover or brings a machine back, and waits for what the manager
// does; each fault heals when a primary takes writes again (the checker's
// leaderless bound runs from then), and the formation is whole again (a
// primary and two standbys) before the next.
#include "harness.h"

namespace baton::chaos::harness {

std::string Harness::pg_ha(const std::string& verb, const std::string& args) {
  return run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-ha " + verb + " " + pg_dir_ +
                 (args.empty() ? "" : " " + args) + " 2>>" + pg_parent_ + "/pg-ha.log");
}

std::string Harness::start_pg_ha() {
  // The ports first, so the links can lead to them before anything starts.
  std::map<std::string, int> port;
  std::stringstream plan(pg_ha("plan"));
  for (std::string line; std::getline(plan, line);)
    if (auto eq = line.find('='); eq != std::string::npos) port[line.substr(0, eq)] = std::atoi(line.c_str() + eq + 1);
  if (!port.count("ETCD_PORT")) return "";
  std::ofstream links(pg_dir_ + "/links.env");
  for (const std::string m : {"pg1", "pg2", "pg3"}) {
    if (!port.count("PG_" + m) || !port.count("API_" + m)) return "";
    MemberLinks& l = member_links_[m];
    l.pg = std::make_unique<FaultProxy>(ioc_, 0, port["PG_" + m]);
    l.api = std::make_unique<FaultProxy>(ioc_, 0, port["API_" + m]);
    l.etcd = std::make_unique<FaultProxy>(ioc_, 0, port["ETCD_PORT"]);
    links << "LINK_PG_" << m << "=" << l.pg->port() << "\nLINK_API_" << m << "=" << l.api->port() << "\nLINK_ETCD_" << m
          << "=" << l.etcd->port() << "\n";
  }
  links.close();
  return run_cmd("PGHA_REPLICATION=" + o_.pg_replication + " " + std::string(BATON_SOURCE_DIR) +
                 "/scripts/pg-ha start " + pg_dir_ + " baton 2>>" + pg_parent_ + "/pg-ha.log");
}

bool Harness::in_recovery(const std::string& member) {
  std::ifstream in(pg_dir_ + "/" + member + "/port");
  std::string port;
  std::getline(in, port);
  return run_cmd("psql -X -q -t -A 'postgresql://postgres@127.0.0.1:" + port +
                 "/postgres' -c 'SELECT pg_is_in_recovery()' 2>/dev/null") == "t";
}

namespace {
/// "node2 after 5.41 s" -> "node2".
std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }
}  // namespace

void Harness::inject_pg_ha(const std::string& fault, const std::string& l) {
  const std::string before = pg_ha("primary");
  if (before.empty()) {
    log(fault + ": no single primary now; skipped");
    return;
  }
  // Records the primary that takes writes now ("pg2 after 5.41 s", as the
  // manager's script measured it; "" for none) and the heal; whether
  // another member than `before` was promoted.
  auto healed = [&](const std::string& after) {
    if (after.empty())
      log(fault + ": no primary (" + pg_parent_ + "/pg-ha.log)");
    else
      event("effect", fault, "postgres", "primary " + before + " -> " + after);
    event("heal", fault, "postgres", after.empty() ? "no primary" : "writable on " + first_word(after));
    return !after.empty() && first_word(after) != before;
  };
  auto heal_when_writable = [&] { return healed(pg_ha("wait-primary", "90")); };
  // The old primary, back: the manager rewinds it and it follows the new
  // primary; it must never serve writes again on its own history.
  auto back_as_standby = [&] {
    if (pg_ha("wait-healthy", "120").empty()) return;
    const bool standby = in_recovery(before);
    log(fault + ": " + before + " is back, in recovery: " + (standby ? "t" : "f"));
    if (standby) event("effect", fault, "postgres", before + " rejoined as a standby");
  };
  if (fault == "pg_ha_kill_primary") {
    event("inject", fault, "postgres", "kill -9 of " + before + "'s postmaster");
    pg_ha("kill-primary");
    heal_when_writable();
  } else if (fault == "pg_ha_switchover") {
    event("inject", fault, "postgres", "switchover from " + before);
    healed(pg_ha("switchover"));
  } else if (fault == "pg_ha_lose_primary") {
    // A lost machine: nothing of it reports to the manager until it is back.
    // Asynchronous (the negative control): its standbys fell behind first,
    // while the cluster committed an election they do not have.
    const std::string killed = o_.pg_replication == "async" ? fall_behind(fault, l) : "";
    event("inject", fault, "postgres", before + " lost (agent and postmaster killed)");
    pg_ha("kill-primary", "--with-manager");
    member_links_.at(before).set_mode(ProxyMode::pass);
    const bool failed_over = heal_when_writable();
    if (!killed.empty()) start_node(killed);
    std::this_thread::sleep_for(std::chrono::milliseconds(2000 + rng_() % 3000));
    pg_ha("revive", before);
    if (failed_over) back_as_standby();
  } else if (fault == "pg_ha_partition_primary") {
    // The primary's machine cut off from its standbys and from the manager
    // (etcd and the other agents), while the nodes still reach it: it can
    // commit nothing (no standby in sync), the manager demotes it once its
    // leader key cannot be kept, and a standby is promoted if the cut
    // outlasts the key's time to live. Shorter cuts heal with no failover.
    MemberLinks& links = member_links_.at(before);
    const auto len = std::chrono::milliseconds(3000 + rng_() % 17000);
    event("inject", fault, "postgres",
          before + " cut from its standbys and the manager for " + std::to_string(len.count()) + " ms");
    const auto applied = links.faults_applied();
    links.set_mode(ProxyMode::blackhole);
    std::this_thread::sleep_for(len);
    if (links.faults_applied() > applied)
      event("effect", fault, "postgres", "applied=" + std::to_string(links.faults_applied() - applied));
    links.set_mode(ProxyMode::pass);
    if (heal_when_writable()) back_as_standby();
  }
  // The formation whole again before the next fault (a second loss before
  // the standbys caught up is two faults at once, which no manager
  // promises to survive).
  const std::string healthy = pg_ha("wait-healthy", "120");
  log(fault + ": " + (healthy.empty() ? "the formation is not whole after 120 s" : healthy));
}

}  // namespace baton::chaos::harness
