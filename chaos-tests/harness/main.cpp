// baton-chaos: a Jepsen-style run against a real Baton cluster on loopback.
//
//   baton-chaos run --seed 7 --duration 120s --nodes 3 --workers 4 --faults all --out DIR
//   baton-chaos check DIR            re-run the checker on a recorded history
//
// It starts a private PostgreSQL (with --pg-ha a primary and two standbys
// under a real failover manager, scripts/pg-ha, with a proxy on each link
// between its members), fault-injecting proxies (node <-> database,
// workers <-> node), the nodes (one with its clock skewed by libfaketime) and
// the workers; drives a workload (a cron job every second, API triggers with
// idempotency keys, PROGRAM tasks of varied length, failing and cancelled
// runs); injects faults on a schedule derived from the seed; heals; waits for
// quiescence; exports the history and runs the independent checker. Exit
// code 0 only if every invariant holds.
#include <csignal>
#include <iostream>
#include <iterator>
#include <sstream>

#include "harness.h"

namespace baton::chaos::harness {

/// Usage to `out`: stderr and exit 2 on a usage error, stdout for --help.
int usage(std::ostream& out = std::cerr) {
  out << "usage: baton-chaos run [--seed N] [--duration 120s] [--quiesce-for 120s] [--nodes 3] [--workers 3]\n"
         "                        [--faults all|kind,kind,...] [--out DIR] [--binary PATH]\n"
         "                        [--pg-replication sync|async] [--pg-ha]\n"
         "       baton-chaos check DIR\n"
         "fault kinds: ";
  for (const auto& f : all_faults) out << f << ' ';
  out << "\n";
  return 2;
}

}  // namespace baton::chaos::harness

using namespace baton::chaos::harness;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  if (args[0] == "--help" || args[0] == "-h") return usage(std::cout), 0;
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
      } else if (args[i] == "--quiesce-for") {
        std::string why, v = value();
        auto d = baton::parse_duration(v, &why);
        if (!d) throw std::runtime_error("--quiesce-for: " + why);
        o.quiesce_for = *d;
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
      } else if (args[i] == "--pg-ha")
        o.pg_ha = true;
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
  // The database's own faults are of one kind of database or the other:
  // `all` takes the kind the run has.
  const auto& not_here = o.pg_ha ? baton::checker::pg_private_faults : baton::checker::pg_ha_faults;
  auto absent = [&](const std::string& f) { return std::find(not_here.begin(), not_here.end(), f) == not_here.end(); };
  if (faults == "all")
    std::copy_if(all_faults.begin(), all_faults.end(), std::inserter(o.faults, o.faults.end()), absent);
  else if (faults != "none") {
    std::stringstream s(faults);
    std::string f;
    while (std::getline(s, f, ',')) {
      if (std::find(all_faults.begin(), all_faults.end(), f) == all_faults.end()) {
        std::cerr << "baton-chaos: unknown fault '" << f << "'\n";
        return usage();
      }
      if (!absent(f)) {
        std::cerr << "baton-chaos: the fault '" << f << "' needs "
                  << (o.pg_ha ? "the database without --pg-ha (scripts/pg-private)"
                              : "--pg-ha (the database under a failover manager)")
                  << "\n";
        return 2;
      }
      o.faults.insert(f);
    }
  }
  // --pg-ha --pg-replication async: the formation as Patroni runs it out of
  // the box (no synchronous standby), the negative control of the manager's
  // faults: pg_ha_lose_primary then loses an election the cluster committed.
  ::signal(SIGPIPE, SIG_IGN);
  return Harness(o).run();
}
