#pragma once
// What a RunBook decision that waits for I/O resumes from: a named state
// kept with everything it needs, one struct per kind of wait. The book keeps
// each outstanding read or write's state under its op (RunBook::Awaiting);
// the result, found by its op and its type, goes to the handler for the
// state's type (RunBook::resumed). A decision that waits for the read of
// the active runs keeps an AfterRead (RunBook::viewed), one that waits for
// an adoption an AfterAdopt (RunBook::adopted).
//
// So what a result will do can be read off the state ("run 42: in the start
// batch of op 17"; "op 9: the cancel of run 42, second try"), and a reader
// follows a run from its input to its effects through named functions, not
// through stored closures.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "baton/base/ids.h"
#include "baton/base/run_state.h"
#include "baton/leader_core/assignment_plan.h"
#include "baton/leader_core/batch_lane.h"
#include "baton/leader_core/cron_creator.h"
#include "baton/protocol/messages.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_rows.h"

namespace baton::leader_core {

using LinkId = std::uint64_t;  ///< one worker connection, as the shell numbers them
using OpId = std::uint64_t;    ///< one read or write, to match its result to it

/// What is behind a queued finish row: a row that does not apply is judged
/// again from its message; one that does is counted under its job.
struct QueuedFinish {
  std::string worker;
  protocol::Finish message;
  std::string job;
};

namespace resume {

// --- after the read of the active runs (RunBook::with_fresh_view) ----------

/// The read alone: its result refreshes the book (start, a heartbeat batch
/// that missed a row the book did not move).
struct RefreshOnly {};
/// The reaper, on the read it asked for.
struct ReapAfterRead {};
/// A start whose run the book did not know: judged on the read.
struct StartAfterRead {
  std::string worker;
  protocol::Start start;
};
/// A heartbeat listing running attempts the book did not know.
struct RunningAfterRead {
  std::string worker;
  std::vector<protocol::AttemptRef> running;
};
/// A finish that is not the book's current attempt: judged on the read.
struct FinishAfterRead {
  std::string worker;
  protocol::Finish finish;
};
/// A worker's hello: welcomed once its runs are known.
struct WelcomeAfterRead {
  std::string worker;
  LinkId link = 0;
  protocol::Hello hello;
};
/// Rows of a start batch that did not apply: granted or denied on the read.
struct StartsAfterRead {
  std::vector<store::StartRow> lost;
};
/// Rows of a finish batch that did not apply: judged again on the read.
struct FinishesAfterRead {
  std::vector<QueuedFinish> lost;
};
using AfterRead = std::variant<RefreshOnly, ReapAfterRead, StartAfterRead, RunningAfterRead, FinishAfterRead,
                               WelcomeAfterRead, StartsAfterRead, FinishesAfterRead>;

// --- after an adoption (RunBook::adopt_if_needed) ---------------------------

/// Adopted for its own sake (an ended attempt its worker holds).
struct AdoptOnly {};
/// A running attempt its worker listed: its heartbeat is written once adopted.
struct HeartbeatAfterAdopt {
  std::int64_t run = 0;
};
/// A finish of the current attempt: queued on the finish lane once adopted.
struct FinishAfterAdopt {
  std::string worker;
  protocol::Finish finish;
};
/// An attempt the reaper ends (lost, or past its timeout) once adopted.
struct EndAttemptAfterAdopt {
  std::int64_t run = 0;
  bool lost = false;
};
/// A welcome waiting for the adoption of the attempts its worker runs.
struct PendingWelcome {
  std::string worker;
  LinkId link = 0;
  protocol::Welcome welcome;
  std::vector<protocol::AttemptRef> stale;  ///< cancelled once welcomed
  std::size_t waiting = 0;                  ///< adoptions still outstanding
  std::size_t running = 0;                  ///< the hello's counts, for the log
  std::size_t finished = 0;
  int capacity = 0;
};
/// One of those adoptions.
struct WelcomeAfterAdopt {
  std::shared_ptr<PendingWelcome> pending;
  protocol::AttemptRef ref;
};
using AfterAdopt =
    std::variant<AdoptOnly, HeartbeatAfterAdopt, FinishAfterAdopt, EndAttemptAfterAdopt, WelcomeAfterAdopt>;

// --- reads -----------------------------------------------------------------

/// The read of the active runs; what waits for it is the view's (AfterRead).
struct ActiveRead {};
/// An operator's cancel, reading the run first (`tries` conflicts so far).
struct CancelRead {
  RunId run;
  std::string reason;
  int tries = 0;
};
/// A success for an attempt that is no longer current: the run is read.
struct LateSuccessRead {
  std::string worker;
  protocol::Finish finish;
};
/// The due runs of every label set a dispatch asked for, gathered.
struct DueGather {
  std::vector<store::DueRun> due;
  std::set<std::int64_t> seen;
  std::size_t waiting = 0;  ///< reads still outstanding
  bool failed = false;
};
/// One label set's due read (at most `limit` runs).
struct DueSlice {
  std::shared_ptr<DueGather> gather;
  int limit = 0;
};
/// Runs no attached worker's labels satisfy.
struct UnmatchedRead {};
/// Runs held because an operator disabled dispatch.
struct HeldByOperatorRead {};
struct HeldByKeyRead {};
using DueWait = std::variant<DueSlice, UnmatchedRead, HeldByOperatorRead, HeldByKeyRead>;
/// The scheduled jobs, for cron.
struct ScheduledJobsRead {};
/// The operators' controls.
struct ControlsRead {};
using RunReadWait = std::variant<CancelRead, LateSuccessRead>;

// --- single fenced writes ---------------------------------------------------

/// A cancel's request written to a RUNNING run (its worker kills it).
struct CancelRequestWrite {
  store::RunRow run;
  std::string reason;
  int tries = 0;
};
/// A cancel written as the run's end.
struct CancelWrite {
  store::RunRow run;
  std::string reason;
  int tries = 0;
};
/// An orphan failed after too many unstarted assignments.
struct FailUnstartedWrite {
  std::int64_t run = 0;
  int assignments = 0;
};
/// A run failed because its job's tasks are invalid.
struct FailInvalidWrite {
  std::int64_t run = 0;
};
/// The finish of an attempt an operator cancelled: written CANCELED.
struct CanceledFinishWrite {
  std::string worker;
  protocol::Finish finish;
  std::string job;
};
/// A success kept for an attempt ended as lost while nothing ran since.
struct LateSuccessWrite {
  std::string worker;
  protocol::Finish finish;
  std::string job;
};
/// The report of an attempt no longer current, recorded if a leader had
/// given up on it; acknowledged once the database answered.
struct LateReportWrite {
  std::string worker;
  protocol::Finish finish;
};
/// ASSIGNED -> ORPHANED (reassign) or a requeue of a run held queued.
struct OrphanWrite {
  store::ActiveRun row;
  bool requeue = false;
};
/// RUNNING whose worker left: CONFIRMING.
struct ConfirmingWrite {
  std::int64_t run = 0;
  int attempt = 0;
};
/// An attempt lost or timed out, ended (finished, retried or cancelled).
struct AttemptEndWrite {
  store::ActiveRun row;
  bool lost = false;
  std::string reason;
  RunState next = RunState::failed;
};
/// An adoption by this epoch, and what waits for it.
struct AdoptWrite {
  std::int64_t run = 0;
  store::AttemptFence attempt;
  AfterAdopt then;
};
using WriteWait =
    std::variant<CancelRequestWrite, CancelWrite, FailUnstartedWrite, FailInvalidWrite, CanceledFinishWrite,
                 LateSuccessWrite, LateReportWrite, OrphanWrite, ConfirmingWrite, AttemptEndWrite, AdoptWrite>;
/// The heartbeats written in one batch.
struct HeartbeatBatch {
  std::vector<store::HeartbeatRow> rows;
};

// --- batched run writes (a store::BatchWriteResult) -------------------------

/// The start lane's batch (BatchLane): its rows.
struct StartBatch {
  BatchLane<store::StartRow>::Batch batch;
};
/// The finish lane's batch: its rows, and the message each came from.
struct FinishBatch {
  BatchLane<store::FinishRow, QueuedFinish>::Batch batch;
};
using LaneBatch = std::variant<StartBatch, FinishBatch>;
/// A dispatch pass's assignments: the rows written and what each run's
/// assign frame carries once its row applied.
struct AssignBatch {
  std::vector<store::AssignRow> rows;
  std::map<std::int64_t, PlacedRun> placed;
};

// --- creates (a store::CreateResult) ----------------------------------------

/// A cron chain's skipped slots being recorded; its creates follow.
struct CronSkip {
  CronChain chain;
};
/// One slot's run of a cron chain being created; the chain goes on after.
struct CronSlotCreate {
  CronChain chain;
  CronCreate slot;
};
/// A decision-ledger entry; forgotten on failure so the next pass records it.
struct DecisionRecord {
  RunId run;
  std::string key;
};
using CreateWait = std::variant<CronSkip, CronSlotCreate, DecisionRecord>;

/// Events turned into runs.
struct EventsProcessing {};
/// SQL submissions turned into runs.
struct SubmissionsProcessing {};
/// A retention batch.
struct Pruning {};

}  // namespace resume
}  // namespace baton::leader_core
