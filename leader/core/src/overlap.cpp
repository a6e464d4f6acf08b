#include "baton/leader_core/overlap.h"

#include <set>

#include "baton/base/weaken.h"

namespace baton::leader_core {

OverlapAdmission admit_overlapping(const std::vector<OverlapCandidate>& candidates,
                                   const std::vector<ActiveHold>& active) {
  std::map<std::string, std::set<int>> taken;  // instance numbers held or granted, per job
  bool exclusive_taken = false;
  bool gate_closed = false;  // an exclusive run is active, or admitted
  for (const auto& a : active) {
    if (a.instance_no) taken[a.job].insert(*a.instance_no);
    exclusive_taken = exclusive_taken || a.exclusive_lock;
    gate_closed = gate_closed || a.exclusive_gate;
  }
  bool busy = !active.empty();  // some run is active, or admitted
  OverlapAdmission out;
  for (const auto& c : candidates) {
    OverlapGrant grant;
    if (weakened("exclusive_gate")) gate_closed = busy = false;  // weakened chaos builds only
    if (gate_closed || (c.exclusive_execution && busy)) {
      out.held.push_back({c.run_id, "exclusive_execution"});
      continue;
    }
    if (c.mutually_exclusive && exclusive_taken) {
      out.held.push_back({c.run_id, "mutually_exclusive"});
      continue;
    }
    if (c.instance_limit) {
      const auto& used = taken[c.job];
      int n = 1;
      while (n <= *c.instance_limit && used.count(n)) ++n;
      if (n > *c.instance_limit) {
        out.held.push_back({c.run_id, "max_instances"});
        continue;
      }
      grant.instance_no = n;
      taken[c.job].insert(n);
    }
    if (c.mutually_exclusive) {
      grant.exclusive_lock = true;
      exclusive_taken = true;
    }
    gate_closed = c.exclusive_execution;
    busy = true;
    out.admitted[c.run_id] = grant;
  }
  return out;
}

}  // namespace baton::leader_core
