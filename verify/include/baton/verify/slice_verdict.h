#pragma once
// One slice of a live database's records judged by the chaos checker's
// invariants (checker::check_recorded_history, the same functions the chaos
// harness and the simulator run), and what of it is to be recorded.
#include <cstdint>
#include <string>
#include <vector>

#include "baton/checker/checker.h"
#include "baton/store/verify_store.h"

namespace baton::verify {

/// What the checks need that the database does not hold: the leader's own
/// timings (the node's configuration).
struct CheckSettings {
  std::int64_t continuation_margin_ms = 0;
  /// How long a RUNNING run may stay on a detached worker, or CONFIRMING
  /// past its deadline and margin, before running_has_owner reports it.
  std::int64_t owner_grace_ms = 60'000;
};

struct SliceVerdict {
  checker::Report report;
  /// One per violation the report lists evidence for, named by what it is
  /// about (finding_of).
  std::vector<store::InvariantViolation> violations;
};

/// Judges a slice: its executions made from its recorded attempts, the
/// recorded invariants run on it. Without commit timestamps,
/// no_stale_epoch_writes is moved to the report's not_examinable.
SliceVerdict judge_slice(store::RecordedSlice slice, const CheckSettings& settings);

/// The runs a line of evidence names ("run 12", in order, once each).
std::vector<std::int64_t> runs_named(const std::string& evidence);

/// What a violation is about, the key it is recorded once under: the runs
/// its evidence names, or the evidence itself when it names none.
std::string finding_of(const std::string& evidence);

}  // namespace baton::verify
