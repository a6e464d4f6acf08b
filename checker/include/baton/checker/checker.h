#pragma once
// The chaos history checker. It reads only files (history.h: the tasks' own
// evidence, the harness's nemesis, probe and submission logs, outbox
// snapshots, and JSON-lines exports of the database's own records), never a
// coordinator log, and shares no code path with the coordinator: it has its
// own copy of the transition table. Each invariant reports how many cases it
// examined, every violation with evidence, and the cases the design
// excuses (the documented at-least-once window) listed apart.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "baton/checker/history.h"

namespace baton::checker {

struct InvariantResult {
  std::string name;
  std::string description;
  std::int64_t examined = 0;
  std::int64_t violations = 0;
  std::vector<std::string> evidence;  ///< at most a few dozen lines
  std::int64_t excused = 0;           ///< cases the design allows, not violations
  std::vector<std::string> excuses;   ///< what each excused case was, and why
};

struct Report {
  std::vector<InvariantResult> invariants;
  std::map<std::string, int> faults;            ///< fault kind -> injections
  std::map<std::string, int> faults_effective;  ///< fault kind -> injections seen to take effect
  std::map<std::string, std::int64_t> totals;
  /// Invariants this report could not judge, each with why (a history read
  /// from the database alone has no task evidence and no harness logs).
  std::map<std::string, std::string> not_examinable;
  bool ok() const;
  std::string markdown() const;
  std::string json() const;
};

/// Checks every invariant of SPEC section 9 on a history: the one function
/// both the real chaos harness (through the directory overload) and the
/// simulator (sim/, which builds the History in memory) call.
Report check_history(const History& h);
/// Reads the history directory written by `baton-chaos run` (layout in
/// docs/chaos.md) and checks it.
Report check_history(const std::string& dir);

/// Checks the invariants that the database's records alone support, on a
/// history read from a live database (`baton verify`, the leader's sweep):
/// the same functions check_history runs, over executions made from the
/// recorded attempts (executions_from_attempts). The others are listed in
/// Report::not_examinable with the evidence they would need. A check that
/// examined nothing is not failed here: a sweep may find nothing new.
Report check_recorded_history(const History& h);

}  // namespace baton::checker
