#include "baton/leader_core/overlap.h"

#include <algorithm>
#include <set>
#include <utility>

#include "baton/base/weaken.h"

namespace baton::leader_core {

namespace {

std::string key_wait_text(const store::KeyedLimits& k) {
  return "waiting: key " + k.concurrency_key.value_or("") + " at its limit of " +
         std::to_string(k.key_limit.value_or(0));
}

std::string rate_wait_text(const std::string& job, const store::KeyedLimits& k) {
  return "waiting: " + (k.rate_key.empty() ? "job " + job : "key " + k.rate_key) + " at its rate limit of " +
         std::to_string(k.rate_limit.value_or(0)) + " per " + std::to_string(k.rate_per_ms) + " ms";
}

// The smallest of 1..limit neither found taken by the read nor granted
// since.
std::optional<int> first_free(int limit, const std::vector<int>& read, const std::set<int>& granted = {}) {
  for (int n = 1; n <= limit; ++n)
    if (!granted.count(n) && std::find(read.begin(), read.end(), n) == read.end()) return n;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> key_wait(const store::KeyedLimits& k) {
  if (!k.concurrency_key || !k.key_limit || first_free(*k.key_limit, k.key_slots_held)) return std::nullopt;
  return key_wait_text(k);
}

std::optional<std::string> rate_wait(const std::string& job, const store::KeyedLimits& k) {
  if (!k.rate_limit || first_free(*k.rate_limit, k.rate_slots_busy)) return std::nullopt;
  return rate_wait_text(job, k);
}

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
  // Key slots and rate permits granted in this admission, per job and key
  // (held and taken ones come with each candidate, as its read found them).
  std::map<std::pair<std::string, std::string>, std::set<int>> key_granted, rate_granted;
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
    }
    const store::KeyedLimits& k = c.keyed;
    const std::pair<std::string, std::string> key{c.job, k.concurrency_key.value_or("")};
    if (k.concurrency_key && k.key_limit && !weakened("key_slot")) {  // weakened chaos builds only
      grant.key_slot = first_free(*k.key_limit, k.key_slots_held, key_granted[key]);
      if (!grant.key_slot) {
        out.held.push_back({c.run_id, "concurrency_key", key_wait_text(k)});
        continue;
      }
    }
    const std::pair<std::string, std::string> rate_key{c.job, k.rate_key};
    if (k.rate_limit) {
      grant.rate_slot = first_free(*k.rate_limit, k.rate_slots_busy, rate_granted[rate_key]);
      if (!grant.rate_slot) {
        out.held.push_back({c.run_id, "rate_limit", rate_wait_text(c.job, k)});
        continue;
      }
    }
    // Admitted: what it takes is taken (nothing was, had it been held).
    if (grant.instance_no) taken[c.job].insert(*grant.instance_no);
    if (grant.key_slot) key_granted[key].insert(*grant.key_slot);
    if (grant.rate_slot) rate_granted[rate_key].insert(*grant.rate_slot);
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
