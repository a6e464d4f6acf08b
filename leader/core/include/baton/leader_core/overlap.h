#pragma once
// Overlap control at dispatch (docs/scheduling.md, "Overlap"): which due
// runs may become active now, and the instance number and exclusive lock
// each one takes; and exclusive execution (schemas/0033): an exclusive
// job's run becomes active alone, when no other run is, and no other run
// while it is. Pure: the leader's view of the active runs and the due
// runs in dispatch order in, grants and holds out.
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

namespace baton::leader_core {

struct OverlapCandidate {
  std::int64_t run_id = 0;
  std::string job;
  std::optional<int> instance_limit;  ///< nullopt: no limit
  bool mutually_exclusive = false;
  bool exclusive_execution = false;
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
};

struct OverlapHeld {
  std::int64_t run_id = 0;
  std::string reason;  ///< max_instances | mutually_exclusive | exclusive_execution
};

struct OverlapAdmission {
  std::map<std::int64_t, OverlapGrant> admitted;
  std::vector<OverlapHeld> held;
};

/// Candidates in dispatch order; the first ones get the free instance
/// numbers (smallest first) and the exclusive lock. While an exclusive run
/// is active every candidate is held; an exclusive candidate is admitted
/// only when no run is active and none was admitted before it, and then
/// alone.
OverlapAdmission admit_overlapping(const std::vector<OverlapCandidate>& candidates,
                                   const std::vector<ActiveHold>& active);

}  // namespace baton::leader_core
