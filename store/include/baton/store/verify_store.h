#pragma once
// Port for the history checker in production (schemas/0040,
// docs/assurance.md): the database's records of the runs that finished
// since a cursor, read as the chaos checker's History, and the record of a
// sweep (its findings, each told in the audit log and to webhooks, and the
// cursor moved) in one transaction.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/checker/history.h"
#include "baton/store/receipt_anchor.h"

namespace baton::store {

/// Where a sweep has got to: runs are taken in (finished_at, id) order.
struct VerifyCursor {
  std::int64_t finished_us = 0;  ///< 0: from the first run that finished
  std::int64_t run = 0;
  bool operator==(const VerifyCursor&) const = default;
};

/// The runs that finished after a cursor, with what the checks need.
struct RecordedSlice {
  /// Every run of the slice in full (row, writes, attempts, dead letter,
  /// ledger entries, event); beside them, as context only
  /// (History::context_runs: their rows and attempts, not judged
  /// themselves), the runs that share a slot, key or event with one of
  /// them, the runs of their jobs that ended while one of them ran, and
  /// (running_now) the runs RUNNING or ASSIGNED now. Epochs, jobs and workers
  /// whole.
  checker::History history;
  std::int64_t runs = 0;  ///< runs of the slice (those the cursor passes)
  VerifyCursor next;      ///< after the last of them; the cursor given when none
  bool full = false;      ///< the limit was reached: more may be waiting
  /// track_commit_timestamp is on: each write's commit time is known.
  /// Off: a write's own clock reading stands in, and no_stale_epoch_writes
  /// cannot be judged.
  bool commit_timestamps = true;
  std::int64_t context_truncated = 0;  ///< context runs left out at the bound
};

/// One violation, as recorded: `finding` is what it is about (recorded
/// once however often it is found again).
struct InvariantViolation {
  std::string invariant, finding, evidence;
  std::vector<std::int64_t> runs;
};

/// What a sweep examined and found, to be recorded.
struct SweepRecord {
  std::string node;
  std::int64_t epoch = 0;
  VerifyCursor from, to;  ///< the cursor it started from, and where it got to
  std::int64_t runs = 0;
  std::int64_t database_us = 0;                                               ///< time spent in the database reading
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_invariant;  ///< examined, violations
  std::vector<std::string> not_examinable;
  std::vector<InvariantViolation> violations;
};

/// Recorded: how many of the violations were new; or not, because the
/// cursor was no longer where the sweep started (another node recorded
/// these runs first).
struct SweepRecorded {
  bool recorded = false;
  std::int64_t new_violations = 0;
  /// The (invariant, finding) of each violation recorded now for the first
  /// time: the ones to tell (a finding seen again is recorded once).
  std::set<std::pair<std::string, std::string>> new_findings{};
};

/// One link of the receipts' chains that does not hold (schemas/0042): in
/// chain `lane` of `epoch` ("runs": the run ends; "audit": the audit log's
/// entries), at link `seq` (0 when the problem is a row with no receipt).
struct ReceiptProblem {
  std::string kind;
  std::int64_t epoch = 0;
  std::string lane;
  std::int64_t seq = 0;
  std::string problem;
};

/// What `baton verify --receipts` examined and found, in chain order.
struct ReceiptsReport {
  std::int64_t links = 0, ends = 0, audit_entries = 0, checkpoints = 0;
  std::vector<ReceiptProblem> problems;  ///< at most the limit asked for
  std::int64_t problems_total = 0;
};

/// What `baton verify --receipts --anchors FILE` found: each kept anchor
/// against the chains (PgVerifyStore::check_anchors).
struct AnchorsReport {
  std::int64_t checked = 0;              ///< anchors compared
  std::vector<ReceiptProblem> problems;  ///< at most the limit asked for, in the file's order
  std::int64_t problems_total = 0;
};

class VerifyStore {
 public:
  virtual ~VerifyStore() = default;
  virtual Result<VerifyCursor> verify_cursor() = 0;
  /// About `limit` runs that finished after `after` and at least `settle`
  /// ago (a finish whose transaction is still open is not skipped: it
  /// commits within `settle` of its finished_at); the runs that finished in
  /// one statement are never split, so a slice may hold a few more.
  /// `running_now`: also the runs RUNNING or ASSIGNED now, as context
  /// (running_has_owner, assigned_has_owner); the sweep asks for them once,
  /// with its first slice.
  virtual Result<RecordedSlice> recorded_slice(const VerifyCursor& after, Millis settle, int limit,
                                               bool running_now) = 0;
  virtual Result<SweepRecorded> record_sweep(const SweepRecord& sweep) = 0;
  /// The heads of the receipts' chains that moved since the last call
  /// (this epoch's chains of run ends, the audit log's chains written
  /// lately), each logged as a `receipts_head` line: a copy kept outside
  /// the database pins its chain up to there (docs/assurance.md,
  /// "Anchors"). Once per sweep: the current epoch is checkpointed every
  /// `verify.every`, not only when the next leader is elected.
  virtual Result<std::vector<ReceiptAnchor>> mark_receipt_heads() = 0;
};

}  // namespace baton::store
