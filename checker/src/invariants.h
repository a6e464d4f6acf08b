#pragma once
// Internal to the checker: one function per invariant, each from a history
// (and the fault counts the report holds so far) to that invariant's result.
// check_history runs them in this order; the chaos harness and the simulator
// reach them only through it.
#include <map>
#include <span>
#include <string>

#include "baton/checker/checker.h"
#include "baton/checker/history.h"

namespace baton::checker {

using InvariantCheck = InvariantResult (*)(const History&, const Report&);

/// Every invariant, in the order the report lists them.
std::span<const InvariantCheck> invariant_checks();

/// The invariants the database's records alone support (check_recorded_history).
std::span<const InvariantCheck> recorded_invariant_checks();

/// Those that need more than the database's records, each with what it needs.
const std::map<std::string, std::string>& evidence_only_invariants();

/// The leadership invariants (leadership_invariants.cpp).
InvariantResult check_no_stale_epoch_writes(const History& h, const Report& so_far);
InvariantResult check_one_leader_per_epoch(const History& h, const Report& so_far);
InvariantResult check_elections_kept(const History& h, const Report& so_far);
InvariantResult check_paused_leader_superseded(const History& h, const Report& so_far);
InvariantResult check_leaderless_bounded(const History& h, const Report& so_far);
InvariantResult check_election_progress(const History& h, const Report& so_far);

/// A check that examined nothing proves nothing: each such result in
/// `report` becomes a violation, unless its event was not asked for (a pause
/// check without pauses, a confirm check without detaches).
void fail_unexamined(const History& h, Report& report);

}  // namespace baton::checker
