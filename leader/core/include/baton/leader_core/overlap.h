#pragma once
// Overlap control at dispatch (docs/scheduling.md, "Overlap"): which due
// runs may become active now, and the instance number and exclusive lock
// each one takes; and exclusive execution (schemas/0033): an exclusive
// job's run becomes active alone, when no other run is, and no other run
// while it is. Pure: the leader's view of the active runs and the due
// runs in dispatch order in, grants and holds out. Keyed concurrency and
// rate limits (schemas/0035) likewise: a key's slot and a rate permit per
// admitted run, from what the due runs' read found held and taken.
//
// The database is what guarantees the limits (schemas/0010: unique instance
// numbers per job, one exclusive lock, and a trigger that refuses an
// assignment without them; schemas/0033: the gates' exclusion constraint); this function only keeps the leader from
// asking for what the database would refuse, so one run over a limit never
// fails the whole assignment batch.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/store/leader_rows.h"

namespace baton::leader_core {

struct OverlapCandidate {
  std::int64_t run_id = 0;
  std::string job;
  std::optional<int> instance_limit;  ///< nullopt: no limit
  bool mutually_exclusive = false;
  bool exclusive_execution = false;
  store::KeyedLimits keyed{};  ///< its key's slots and its rate permits, as read
};

struct ActiveHold {
  std::string job;
  std::optional<int> instance_no;
  bool exclusive_lock = false;
  bool exclusive_gate = false;  ///< an exclusive job's run
};

struct OverlapGrant {
  std::optional<int> instance_no;
  bool exclusive_lock = false;
  std::optional<int> key_slot;   ///< the smallest slot of its key free
  std::optional<int> rate_slot;  ///< the smallest permit free
};

struct OverlapHeld {
  std::int64_t run_id = 0;
  /// max_instances | mutually_exclusive | exclusive_execution |
  /// concurrency_key | rate_limit
  std::string reason;
  /// For a person, when the reason alone does not say it: "waiting: key
  /// acme at its limit of 2".
  std::string detail{};
};

struct OverlapAdmission {
  std::map<std::int64_t, OverlapGrant> admitted;
  std::vector<OverlapHeld> held;
};

/// What a run waits for when its key is at its limit, as the decision
/// ledger says it ("waiting: key acme at its limit of 2"); nullopt when the
/// read found a slot of its key free (or it has no key limit).
std::optional<std::string> key_wait(const store::KeyedLimits& k);
/// The same for its rate permits ("waiting: key acme at its rate limit of
/// 10 per 60000 ms"; "job NAME" for a per-job limit).
std::optional<std::string> rate_wait(const std::string& job, const store::KeyedLimits& k);

/// Candidates in dispatch order; the first ones get the free instance
/// numbers (smallest first) and the exclusive lock. While an exclusive run
/// is active every candidate is held; an exclusive candidate is admitted
/// only when no run is active and none was admitted before it, and then
/// alone.
OverlapAdmission admit_overlapping(const std::vector<OverlapCandidate>& candidates,
                                   const std::vector<ActiveHold>& active);

}  // namespace baton::leader_core
