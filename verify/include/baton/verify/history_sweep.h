#pragma once
// The sweeps of the history checker over a live database, through the
// VerifyStore port: the leader's periodic one (judged and recorded, from
// the recorded cursor) and `baton verify`'s pass (judged only, from any
// cursor to the end). Both read in slices and judge each with judge_slice:
// the same code, whoever runs it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/store/verify_store.h"
#include "baton/verify/slice_verdict.h"
#include "baton/verify/verify_tally.h"

namespace baton::verify {

struct SweepSettings {
  Millis settle{10000};
  int slice_runs = 2000;
  int slices_max = 100;
  CheckSettings check;
  /// Asked before each slice after the first: false ends the sweep there
  /// (the node stops, or no longer leads).
  std::function<bool()> keep_going;
};

struct SweepOutcome {
  std::int64_t slices = 0;
  std::int64_t new_violations = 0;
  /// The violations recorded by this sweep for the first time: the ones a
  /// node tells in its log (tally.violations also holds those found again).
  std::vector<store::InvariantViolation> new_findings;
  /// The runs this sweep found without an owner (running_has_owner,
  /// assigned_has_owner), by invariant, new findings or not: the leader's
  /// book is asked to re-read each and its reaper to repair it through
  /// its fenced writes (repairable_by_leader). A run found again was not
  /// repaired since, and is asked for again.
  std::map<std::string, std::vector<std::int64_t>> to_repair;
  /// A slice another node recorded first (a leader change mid-sweep): the
  /// sweep stopped there, and its runs are that node's.
  bool refused = false;
  /// The receipts' heads that had moved, logged once the slices were
  /// recorded (VerifyStore::mark_receipt_heads).
  std::int64_t heads_marked = 0;
  /// The time the sweep spent waiting for the database (reads and records).
  std::chrono::nanoseconds database{0};
  VerifyTally tally;
};

/// Findings of this invariant are runs the leader's reaper can repair
/// once its book has re-read them: a run RUNNING or ASSIGNED on a worker
/// gone longer than the grace, or CONFIRMING long past its deadline. The
/// others (a run executed twice, a gap in a history) are facts to report;
/// nothing the leader writes now undoes them.
bool repairable_by_leader(const std::string& invariant);

/// One sweep from the recorded cursor: up to `slices_max` slices, each
/// judged and recorded with the cursor moved past it. Stops early at a
/// slice that is not full (caught up) or refused. Then, unless refused,
/// the receipts' heads that moved are marked.
Result<SweepOutcome> sweep_once(store::VerifyStore& store, const SweepSettings& settings, const std::string& node,
                                std::int64_t epoch, const Clock& clock);

/// `baton verify`: every run that finished after `from` (0: all), judged,
/// nothing recorded; `progress` is called after each slice.
Result<VerifyTally> verify_all(store::VerifyStore& store, const store::VerifyCursor& from, int slice_runs,
                               const CheckSettings& check,
                               const std::function<void(const VerifyTally&)>& progress = nullptr);

}  // namespace baton::verify
