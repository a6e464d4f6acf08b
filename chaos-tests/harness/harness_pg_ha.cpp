// The database's faults under a real failover manager (`--pg-ha`): the
// manager, not the harness, decides whether and which standby is promoted.
// The harness kills, asks for a switchover or brings a machine back, and
// waits for what the manager does; each fault heals when a primary takes
// writes again (the checker's leaderless bound runs from then), and the
// formation is whole again (a primary and two standbys) before the next.
#include "harness.h"

namespace baton::chaos::harness {

std::string Harness::pg_ha(const std::string& verb, const std::string& args) {
  return run_cmd(std::string(BATON_SOURCE_DIR) + "/scripts/pg-ha " + verb + " " + pg_dir_ +
                 (args.empty() ? "" : " " + args) + " 2>>" + pg_parent_ + "/pg-ha.log");
}

namespace {
/// "node2 after 5.41 s" -> "node2".
std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }
}  // namespace

void Harness::inject_pg_ha(const std::string& fault) {
  const std::string before = pg_ha("primary");
  if (before.empty()) {
    log(fault + ": no single primary now; skipped");
    return;
  }
  // What the promotion took, as the manager's script measured it.
  auto writable_again = [&](const std::string& after) {
    if (after.empty()) {
      log(fault + ": no primary within 90 s (" + pg_parent_ + "/pg-ha.log)");
      return false;
    }
    event("effect", fault, "postgres", "primary " + before + " -> " + after);
    return true;
  };
  if (fault == "pg_ha_kill_primary") {
    event("inject", fault, "postgres", "kill -9 of " + before + "'s postmaster");
    pg_ha("kill-primary");
    const std::string after = pg_ha("wait-primary", "90");
    writable_again(after);
    event("heal", fault, "postgres", after.empty() ? "no primary" : "writable on " + first_word(after));
  } else if (fault == "pg_ha_switchover") {
    event("inject", fault, "postgres", "switchover from " + before);
    const std::string after = pg_ha("switchover");
    if (!after.empty() && first_word(after) != before) writable_again(after);
    event("heal", fault, "postgres", after.empty() ? "no primary" : "writable on " + first_word(after));
  } else if (fault == "pg_ha_lose_primary") {
    // A lost machine: nothing of it reports to the manager until it is back.
    event("inject", fault, "postgres", before + " lost (agent and postmaster killed)");
    pg_ha("kill-primary", "--with-manager");
    const std::string after = pg_ha("wait-primary", "90");
    const bool failed_over = !after.empty() && first_word(after) != before;
    if (failed_over) writable_again(after);
    event("heal", fault, "postgres", after.empty() ? "no primary" : "writable on " + first_word(after));
    std::this_thread::sleep_for(std::chrono::milliseconds(2000 + rng_() % 3000));
    // Back: the manager rewinds it and it follows the new primary; it must
    // never serve writes again on its own history.
    pg_ha("revive", before);
    if (!pg_ha("wait-healthy", "120").empty()) {
      const std::string port_file = pg_dir_ + "/" + before + "/port";
      std::ifstream in(port_file);
      std::string port;
      std::getline(in, port);
      const std::string recovery = run_cmd("psql -X -q -t -A 'postgresql://postgres@127.0.0.1:" + port +
                                           "/postgres' -c 'SELECT pg_is_in_recovery()' 2>/dev/null");
      log(fault + ": " + before + " is back, in recovery: " + recovery);
      if (failed_over && recovery == "t") event("effect", fault, "postgres", before + " rejoined as a standby");
    }
  }
  // The formation whole again before the next fault (a second loss before
  // the standbys caught up is two faults at once, which no manager
  // promises to survive).
  const std::string healthy = pg_ha("wait-healthy", "120");
  log(fault + ": " + (healthy.empty() ? "the formation is not whole after 120 s" : healthy));
}

}  // namespace baton::chaos::harness
