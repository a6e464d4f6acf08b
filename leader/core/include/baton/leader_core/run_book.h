#pragma once
// RunBook: the leader's side of the run lifecycle for one epoch, as a state
// machine without I/O (etcd raft's Ready/Advance shape). Inputs are what the
// leader learns -- a worker attached or detached, a protocol message, an
// operator's cancel, the result of a read or a write, a tick with the
// monotonic time -- and the output is a queue of effects: messages to send,
// connections to close, reads and fenced writes to perform, log lines and
// counters. The shell (leader/src/control_loop.cpp) carries out each effect
// in order and feeds the result of every read and write back, tagged with the
// effect's OpId; the book then decides the next step. It reads no clock,
// starts no thread and performs no I/O, so every rule below is tested by
// feeding inputs and looking at effects (leader/core/tests/run_book_test.cpp)
// and simulated with a fake store (sim/).
//
// The rules it keeps (docs/fencing.md, docs/protocol.md):
//   - a StartGranted is sent only after the start write applied ("no start
//     right, no process"); a start already written is granted again;
//   - a finish of an attempt that is no longer current is acknowledged
//     without a write; a finish of another epoch's attempt is adopted first;
//   - an attempt a worker runs that is no longer its attempt is cancelled,
//     judged only on a successful read (a failed read proves nothing);
//   - a RUNNING attempt whose worker left goes CONFIRMING, and is given up
//     only when the database's deadline and this leader's own monotonic one
//     have both passed; a new leader waits one heartbeat interval for the
//     fleet to reattach before judging anything;
//   - a run orphaned max_unstarted_assignments times without starting fails;
//   - once any write comes back Fenced, nothing is sent and nothing written,
//     ever again (fenced(); checked after every input).
//
// Reads of the active runs are coalesced: every decision that needs a fresh
// view waits for the one outstanding ReadActive, and a view stays fresh until
// a write's outcome contradicts it or the pass ends (tick's work is done).
//
// Starts and finishes are written on two lanes of their own (group commit):
// at every tick, each free lane gets one batch of everything queued on it
// since; a busy lane's queue goes out the moment its batch's result comes
// back, without waiting for a pass. A shell may carry out WriteStarts and
// WriteFinishes beside everything else and feed their results back whenever
// they arrive (at most one of each is outstanding, in any order with other
// inputs); the pass does not wait for them, and while a run's start or
// finish is queued or being written the reaper leaves that run alone (the
// write's outcome decides).
//
// The batched assignment (WriteAssigns) may also be carried out on another
// thread and its result fed back later, after other inputs (ControlLoop's
// assign lane; the simulator does the same): the pass waits for it before
// its next step, a tick meanwhile only flushes the start and finish lanes,
// and the next pass begins after it.
//
// Reads. The pass's periodic reads (ReadDue, ReadUnmatched, ReadWaiting,
// ReadScheduledJobs, ReadControls) may be answered the same way, later and
// after other inputs (ControlLoop's read lane): their rows are judged when
// they arrive, against the workers and runs known then, and every write
// they lead to carries the row's version. ReadActive may not: its rows
// replace the book's view of the active runs wholesale,
// so its result must be fed before the result of any lane write that
// committed after its snapshot (a shell that reads on the thread that feeds
// the book gets this for free: such a result is still in its inbox).
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/base/run_state.h"
#include "baton/leader_core/assignment_plan.h"
#include "baton/leader_core/batch_lane.h"
#include "baton/leader_core/cron_creator.h"
#include "baton/leader_core/dispatch.h"
#include "baton/leader_core/heartbeat_cadence.h"
#include "baton/leader_core/live_settings.h"
#include "baton/leader_core/overlap.h"
#include "baton/leader_core/run_book_resume.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/leader_core/token_bucket.h"
#include "baton/protocol/messages.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_rows.h"

namespace baton::leader_core {

enum class LogLevel { debug, info, warn, error };
enum class Counter {
  fenced_writes,
  conflict_writes,
  runs_assigned,
  runs_started,
  runs_finished,
  runs_orphaned,
  runs_requeued,  ///< taken back from a worker's prefetch queue
  runs_created_by_cron,
  cron_slots_skipped,  ///< skipped ranges recorded in the decision ledger
  protocol_errors
};

// --- effects ----------------------------------------------------------------
struct Send {
  LinkId link = 0;
  protocol::Message message;
};
struct Close {
  LinkId link = 0;
  std::string reason;
};
struct Log {
  LogLevel level = LogLevel::info;
  std::string text;  ///< "event key=value ..."; anything a worker supplied is quoted
};
struct Count {
  Counter counter = Counter::conflict_writes;
  std::int64_t n = 1;
};
/// A finish was written: per-job counters and durations (GET /metrics).
struct ObserveRunFinished {
  std::string job;      ///< "" for a run without a job
  std::string outcome;  ///< the attempt's: SUCCEEDED, FAILED, TIMED_OUT, CANCELED
  std::int64_t duration_ms = 0;
};
struct ObserveDispatchLatency {
  std::int64_t us = 0;
};
/// A cron slot's run was created `ms` after the slot's time (0: on time or
/// ahead of it): baton_cron_slot_delay_seconds.
struct ObserveCronSlotDelay {
  std::int64_t ms = 0;
};
/// The workers registry (not run state): no result is fed back.
struct RecordWorker {
  std::string worker_id;
  bool attached = false;
  std::string labels_json;
  int capacity = 0;
};
/// Workers heard from since the last one of these: their last heartbeat
/// (GET /api/v1/workers) is brought up to now.
struct RecordWorkersSeen {
  std::vector<std::string> worker_ids;
};
struct AppendRunLog {
  RunId run{0};
  int attempt = 0;
  std::string stream;
  std::string chunk;
};
/// Streamed output of an attempt held by the worker that sent it (not run
/// state: best effort, into the run's log and the log archive).
struct AppendRunOutput {
  store::OutputChunk chunk;
};
struct ReadActive {
  OpId op = 0;
  Millis continuation_margin{0};
};
struct ReadRun {
  OpId op = 0;
  RunId run{0};
};
struct ReadDue {
  OpId op = 0;
  int limit = 0;
  std::map<std::string, std::string> labels;
  Millis ahead{0};  ///< PENDING runs due within this long too (RuntimeConfig::assign_ahead)
  /// The label sets of the attached workers that take runs, busy or not:
  /// an exclusive run drains the cluster only while one of them matches it.
  std::vector<std::map<std::string, std::string>> taking;
};
struct ReadScheduledJobs {
  OpId op = 0;
};
/// What operators set (store::Controls): read every `controls_every`.
struct ReadControls {
  OpId op = 0;
};
enum class RunWriteKind {
  adopt,
  orphan,
  requeue,
  begin_confirming,
  finish,
  retry_later,
  cancel,          ///< a run no attempt runs: PENDING, ASSIGNED, ORPHANED, RETRY_WAITING
  cancel_attempt,  ///< RUNNING: the attempt's end, under its predicates
  request_cancel,
  fail_unrunnable,
  late_success,
  record_late_report  ///< a superseded attempt's report, kept (the run unchanged)
};
/// One fenced single-run transition of store::RunStore; which fields it
/// uses depends on `kind` (the shell's switch is the reference).
struct WriteRun {
  OpId op = 0;
  RunWriteKind kind = RunWriteKind::adopt;
  store::RunFence fence;
  store::AttemptFence attempt;
  store::Finish finish;
  RunState from = RunState::pending;  ///< cancel, fail_unrunnable
  Millis delay{0};                    ///< retry_later; begin_confirming: the deadline
  std::string reason;                 ///< cancel, cancel_attempt, request_cancel, fail_unrunnable
  std::string error_code;             ///< fail_unrunnable
};
struct WriteAssigns {
  OpId op = 0;
  std::vector<store::AssignRow> rows;
};
struct WriteStarts {
  OpId op = 0;
  std::vector<store::StartRow> rows;
  Millis stale_after{0};
};
struct WriteFinishes {
  OpId op = 0;
  std::vector<store::FinishRow> rows;
};
struct WriteHeartbeats {
  OpId op = 0;
  std::vector<store::HeartbeatRow> rows;
  Millis stale_after{0};
};
/// store::LeaderStore::create_cron_run: the run, the cursor, the ledger.
struct CreateCronRun {
  OpId op = 0;
  std::string job;
  std::int64_t slot_unix = 0;
  bool caught_up = false;      ///< created late, after a gap
  std::int64_t jitter_ms = 0;  ///< its run starts this long after the slot
};
/// store::LeaderStore::prune: retention.
struct Prune {
  OpId op = 0;
  int batch = 500;
};
/// store::LeaderStore::process_events: events into runs.
struct ProcessEvents {
  OpId op = 0;
  int limit = 100;
};
/// store::LeaderStore::process_submissions: SQL submissions (baton.trigger)
/// into runs, judged by the node's payload denylist.
struct ProcessSubmissions {
  OpId op = 0;
  int limit = 100;
  std::vector<std::string> payload_denylist;
};
/// store::LeaderStore::unmatched_runs: runs no attached worker can take.
struct ReadUnmatched {
  OpId op = 0;
  std::vector<std::map<std::string, std::string>> label_sets;
  int limit = 100;
};
/// store::LeaderStore::waiting_runs: runs due now whatever their selector
/// (read while an operator has disabled dispatch, to record why they wait).
struct ReadWaiting {
  OpId op = 0;
  int limit = 100;
  /// Set: store::LeaderStore::key_waiting_runs instead, the runs that wait
  /// for their key or their rate permits (schemas/0035).
  bool for_keys = false;
};
/// store::LeaderStore::record_decision: a decision about one run.
struct RecordDecision {
  OpId op = 0;
  RunId run{0};
  std::string decision;  ///< held_back | no_worker_matches | cancel_not_applied
  std::string reason;    ///< max_instances | mutually_exclusive | exclusive_execution | selector | already_<STATE> |
                         ///< conflicts | ...
  std::string details_json = "{}";
};
/// store::LeaderStore::skip_cron_slots: slots the plan gives up, recorded
/// before any slot after them is created.
struct SkipCronSlots {
  OpId op = 0;
  std::string job;
  std::vector<store::SkippedCronSlots> ranges;
  std::string details_json;  ///< {"policy": ..., "gap_cause": ...}
};
using Effect = std::variant<Send, Close, Log, Count, ObserveDispatchLatency, RecordWorker, AppendRunLog, ReadActive,
                            ReadRun, ReadDue, ReadScheduledJobs, WriteRun, WriteAssigns, WriteStarts, WriteFinishes,
                            WriteHeartbeats, CreateCronRun, SkipCronSlots, RecordDecision, ReadUnmatched, ProcessEvents,
                            ProcessSubmissions, Prune, ReadControls, RecordWorkersSeen, ObserveRunFinished,
                            AppendRunOutput, ReadWaiting, ObserveCronSlotDelay>;

/// True for the effects that change the world outside the leader (messages
/// and writes): none may follow a Fenced answer.
bool is_external(const Effect& e);

class InputJournal;  // input_journal.h

class RunBook {
 public:
  /// `started` is when the epoch began on this leader's clock (the reattach
  /// window counts from it); `seed` makes the retry jitter reproducible.
  RunBook(Epoch epoch, std::string node_id, RuntimeConfig cfg, std::uint64_t seed, MonoTime started);

  /// Tells `journal` (not owned; nullptr: none) every input from now on and
  /// every batch of effects taken: set before start() for a journal that
  /// replays (leader_core/input_journal.h).
  void set_journal(InputJournal* journal) { journal_ = journal; }

  // --- inputs ---------------------------------------------------------------
  /// Call once at the start: the first read of the active runs.
  void start(MonoTime now);
  void attached(LinkId link, const protocol::Hello& hello, MonoTime now);
  /// The connection closed (or the shell gave up on it); `why` is logged.
  void detached(LinkId link, const std::string& worker, const std::string& why, MonoTime now);
  void message(LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now);
  void cancel(RunId run, const std::string& reason, MonoTime now);
  /// The production checker's sweep found `runs` without an owner
  /// (`invariant`: running_has_owner, assigned_has_owner) in the table: the
  /// book's copy may have lost them. The next pass reads the active runs
  /// and reaps at once; what the reaper writes for them (orphan, confirm,
  /// give up) goes through the same fenced writes as ever, and each that
  /// applies is logged `invariant_repaired`; a run the reaper leaves alone
  /// is logged `invariant_recheck_unrepaired` with what the book saw.
  void recheck(const std::vector<RunId>& runs, const std::string& invariant, MonoTime now);
  /// A run was just created: dispatch in this pass instead of at the period.
  void dispatch_now();
  /// A submission or an event was committed (the inbox channel's NOTIFY):
  /// the inbox is taken in the next pass instead of at the cron period.
  void inbox_noticed();
  /// Runs just created, as their insert returned them (store::DueRun): they
  /// are placed at once, without a read and without waiting for a pass,
  /// when nothing else is being decided (no read or write of a pass
  /// outstanding: the book's view of the fleet's room is whole) and dispatch
  /// is enabled; otherwise as dispatch_now. A row may be stale by now; the
  /// assignment's version predicate decides, as for any read.
  void created(const std::vector<store::DueRun>& runs, MonoTime now);
  /// The end of a pass over the inbox: the lanes' batched writes, then, unless
  /// the pass before is still waiting for a result, a new pass: silent
  /// workers and the periodic work that is due (reap, heartbeats, cron,
  /// dispatch).
  void tick(MonoTime now);

  // Results, each for the effect whose op it names.
  void result(OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now);
  void result(OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now);
  void result(OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now);
  void result(OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now);
  void result(OpId op, const Result<store::WriteResult>& r, MonoTime now);
  void result(OpId op, const Result<store::BatchWriteResult>& r, MonoTime now);
  void result(OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now);
  void result(OpId op, const Result<store::CreateResult>& r, MonoTime now);
  void result(OpId op, const Result<store::Controls>& r, MonoTime now);
  void result(OpId op, const Result<store::EventsProcessed>& r, MonoTime now);
  void result(OpId op, const Result<store::SubmissionsProcessed>& r, MonoTime now);
  void result(OpId op, const Result<store::Pruned>& r, MonoTime now);

  // --- outputs --------------------------------------------------------------
  std::vector<Effect> take_effects();
  bool has_effects() const { return !effects_.empty(); }
  /// A write came back Fenced: a newer leader exists. Nothing is sent or
  /// written after it.
  bool fenced() const { return fencing_.fenced; }
  /// What this book meant to write when the database refused it for a newer
  /// epoch (writes already in flight may be refused after the first): for
  /// the decision ledger (store::LeaderStore::record_fenced_out).
  const std::vector<store::FencedOut>& fenced_out() const { return fencing_.refused; }
  static constexpr std::size_t fenced_out_max = 100;
  /// Reads and writes emitted whose results have not come back (lane
  /// writes included).
  std::size_t outstanding() const;
  /// The earliest time the book must act at without an input: a cron run
  /// created ahead of its slot becomes due, or the start of a run assigned
  /// ahead of its time may be written. The shell ticks then.
  std::optional<MonoTime> next_wakeup() const;
  /// The connections of attached workers (the shell closes them on the way out).
  std::vector<LinkId> links() const;
  std::size_t attached_workers() const { return workers_.size(); }
  Epoch epoch() const { return epoch_; }

  /// Aborts on a broken invariant; run after every input (its walk over the
  /// tracked runs and workers at every 64th input once there are more than
  /// 64 of them).
  void check_invariants() const;

  /// Between elections the book is authoritative for the runs it wrote;
  /// a full read of the active runs still comes at least this many reaps
  /// apart, whatever happened (a backstop, not a rule anything relies on).
  static constexpr int full_read_every_reaps = 10;

 private:
  struct Attached {
    LinkId link = 0;
    int capacity = 0;
    std::map<std::string, std::string> labels;
    MonoTime last_seen{};
    bool draining = false;
    bool welcomed = false;         ///< the welcome was sent (adoption writes come first)
    std::uint64_t heartbeats = 0;  ///< heartbeats processed on this connection
    std::string instance;          ///< the worker process on this connection (hello)
    std::string succeeds;          ///< the process before it on the same spool (hello)
    int prefetch = 0;              ///< runs it holds queued beyond its capacity (hello)
    /// The protocol version of its connection (hello's range against this
    /// binary's): from protocol::start_grant_version_min its assignments to
    /// free slots carry the start.
    int protocol = protocol::protocol_version_min;
    /// The interval and timeout its welcome gave it, by the fleet's size
    /// then (heartbeat_cadence.h): it is detached after `cadence.timeout`.
    HeartbeatCadence cadence{};
    /// When its last heartbeat was last written to the registry (attach
    /// writes it too).
    MonoTime recorded{};
  };
  struct Tracked {  // an ASSIGNED or RUNNING run as this leader last wrote or read it
    store::ActiveRun row;
    std::vector<protocol::Task> tasks;
    /// Positive evidence of a lost attempt is counted in heartbeats, not in
    /// time (a slow pass must never look like a silent worker): `listed_at`
    /// is the heartbeat count of connection `link` when it last listed this
    /// attempt (or the attempt started, or this leader first saw it).
    LinkId link = 0;
    std::uint64_t listed_at = 0;
    /// CONFIRMING: when this leader may give the attempt up, on its own
    /// monotonic clock.
    std::optional<MonoTime> confirm_until;
    /// The worker process last seen holding the attempt; empty when unknown.
    /// Only that process, or its successor on the same spool, can say the
    /// attempt is gone.
    std::string holder;
    /// Assigned ahead of its time (RuntimeConfig::assign_ahead): its start
    /// is not written before this, on this leader's monotonic clock.
    std::optional<MonoTime> start_not_before{};
    /// Started with its assignment (protocol 4) and not yet listed by its
    /// worker: the connection that carries the assign frame. While that
    /// connection lives, the frame may still be on its way (a one-way delay
    /// holds it while the worker's heartbeats keep coming), so heartbeats
    /// that leave the attempt out prove nothing; once the worker lists the
    /// attempt, or that connection is gone, they count again.
    std::optional<LinkId> grant_in_flight{};
    /// When the run was assigned and, once RUNNING, started, on this
    /// leader's monotonic clock: from its own applied write, or from the
    /// database's ages when it read the run. The reaper counts ages from
    /// them, so that it needs no read of the active runs to age them.
    std::optional<MonoTime> assigned_at{};
    std::optional<MonoTime> started_at{};
    /// What its task last reported of its progress (heartbeat, protocol 5)
    /// and not yet written: it goes with the run's next heartbeat write.
    std::optional<std::string> progress_unwritten{};
  };

  // Steps of a pass's periodic work, in order (tick sets them, pump runs them
  // one at a time, each after the previous one's reads and writes returned).
  // Dispatch comes before cron: cron creates runs ahead of their slots (up
  // to a hundred single inserts in one pass), and a slot's dispatch waiting
  // behind the next slot's creates was most of the cron start delay's tail.
  enum Step : unsigned {
    step_silent = 2,
    step_reap = 4,
    step_heartbeats = 8,
    step_controls = 16,
    step_dispatch = 32,
    step_cron = 64
  };

  /// Takes the state of `op` out of `waits` and hands it and the result to
  /// resumed() for its type.
  template <class Waits, class T>
  void resume(Waits& waits, OpId op, const Result<T>& r, MonoTime now);
  /// What the pass waits for: everything outstanding but the lane writes.
  std::size_t pass_outstanding() const;
  void after_input();
  void pump();
  void emit(Effect e);
  void log(LogLevel level, std::string text);
  void count(Counter c, std::int64_t n = 1);
  /// Counts a written finish under `job` (the run's, as known when the
  /// finish was decided: a read in between may have dropped the run).
  void finished(const std::string& job, const std::string& outcome, std::int64_t duration_ms);
  OpId next_op() { return ++last_op_; }

  /// Resumes `then` (viewed()) once tracked_ reflects a successful read made
  /// in this pass (fresh = true) or the read failed (fresh = false).
  void with_fresh_view(resume::AfterRead then);
  /// Something happened that this book's copy cannot explain (a write that
  /// conflicted or failed, a heartbeat that missed a run the book did not
  /// move): the next decision, and the next reap, read the active runs.
  void distrust();
  /// Whether the reaper must decide on a read of the active runs rather
  /// than on this book: after distrust(), when a CONFIRMING attempt's own
  /// deadline has passed (the database's half of it is known only by a
  /// read), and at least every full_read_every_reaps reaps.
  bool reap_needs_read() const;
  void write(WriteRun w, resume::WriteWait then);
  void read_run(RunId run, resume::RunReadWait then);
  void apply_active(const std::vector<store::ActiveRun>& rows);
  /// Records a single write's outcome; false if it did not apply (and the
  /// book is fenced when it was Fenced).
  bool note(const char* op, std::int64_t run, const Result<store::WriteResult>& r);
  bool batch_fenced(const char* op, const std::vector<RunId>& runs, const Result<store::BatchWriteResult>& r);
  /// The database refused a write because a newer epoch began: the book
  /// stops, and keeps what it meant to write (fenced_out()).
  void fence(const char* op, const std::string& subject, Epoch current, std::vector<RunId> runs = {});

  void send(const std::string& worker, protocol::Message m);
  void send_link(LinkId link, protocol::Message m);
  void drop_worker(const std::string& worker, const char* why);
  void welcome(const std::string& worker, LinkId link, const protocol::Hello& hello, bool fresh);
  void on_start(const std::string& worker, const protocol::Start& m, bool read_done);
  void regrant_start(Tracked& t, const std::string& worker, const protocol::AttemptRef& ref);
  void deny_start(const std::string& worker, const protocol::AttemptRef& ref, const std::string& why);
  void on_heartbeat(const std::string& worker, const protocol::Heartbeat& m);
  void judge_running(const std::string& worker, const std::vector<protocol::AttemptRef>& running, bool fresh);
  void on_finish(const std::string& worker, const protocol::Finish& m, bool read_done);
  void on_output(const std::string& worker, const protocol::Output& m);
  /// The finish's tails into the run's log: placed by offset when the
  /// worker streamed (the stream's length is in the finish), else appended.
  void log_tails(const store::ActiveRun& r, const protocol::Finish& m);
  /// The log_ref a finish records (empty without a log archive or when the
  /// worker did not stream).
  std::string log_ref_of(const protocol::Finish& m) const;
  void finish_current(const std::string& worker, const protocol::Finish& m);
  void late_success(const std::string& worker, const protocol::Finish& m);
  void record_late_report(const std::string& worker, const protocol::Finish& m);
  void on_cancel(RunId run, const std::string& reason, int tries);
  /// Writes the adoption of `run` by this epoch when it is needed, then
  /// resumes `then` (adopted()) with true when the run is this epoch's
  /// (already, or now).
  void adopt_if_needed(std::int64_t run, resume::AfterAdopt then);
  /// Adopts a CONFIRMING attempt that its attached worker lists as ended.
  void adopt_ended(const std::string& worker, const protocol::AttemptRef& ref);

  /// Emits the queued starts (finishes) as one batch unless one is being
  /// written: at every tick and when the lane's result returns.
  void flush_starts();
  void flush_finishes();
  /// A start or finish of `run` is queued or being written.
  bool lane_busy_with(std::int64_t run) const;
  void apply_starts(const std::vector<store::StartRow>& rows, const Result<store::BatchWriteResult>& res);
  void apply_finishes(const std::vector<store::FinishRow>& rows, const std::map<std::int64_t, QueuedFinish>& messages,
                      const Result<store::BatchWriteResult>& res);
  void detach_silent();
  void drop_unacknowledged_grants();
  void reap(bool fresh);
  void end_attempt(std::int64_t run, bool lost);
  void flush_heartbeats();
  void record_workers_seen();
  void materialize_cron(const std::vector<store::ScheduledJob>& jobs);
  void find_unmatched();
  /// While dispatch is disabled: the runs that wait because of it, each
  /// recorded once (held_back, dispatch_disabled).
  void find_held_by_operator();
  void find_held_by_keys();
  /// Events (and successes other jobs run after) into runs: one fenced
  /// statement per batch, every cron period.
  void process_events();
  /// The inbox: events (unless an operator turned them off) and SQL
  /// submissions, each unless its statement is already in flight.
  void process_inbox();
  /// Retention: a bounded batch every prune_every, again while full.
  void prune();
  /// One decision-ledger entry per (run, decision) while this book lives.
  /// `detail`, when given, is recorded with it ({"detail": ...}): what the
  /// reason alone does not say ("waiting: key acme at its limit of 2").
  void record_once(RunId run, const std::string& decision, const std::string& reason, const std::string& detail = "");
  /// Creates the chain's slots one after another, as far as this pass may
  /// (CronCreator::next); the rest wait in its backlog.
  void create_cron_slots(CronChain chain);
  /// Creates what earlier passes left, as far as this pass may.
  void resume_cron_backlog();
  void apply_controls(const store::Controls& c);
  /// Takes no new runs: the worker said it is draining, or an operator holds it.
  bool takes_no_runs(const std::string& worker, const Attached& w) const;
  struct Room {
    int free = 0;   ///< free slots
    int queue = 0;  ///< room left in its prefetch queue
  };
  /// Free slots and prefetch room of a worker holding `holding` runs (none
  /// until it is welcomed).
  static Room room_in(const Attached& w, int holding);
  /// The same, with its id, labels and whether it takes runs, for the plan.
  WorkerCapacity room_of(const std::string& id, const Attached& w, int holding) const;
  bool is_evicted(const std::string& worker) const;
  void dispatch();
  void dispatch_due(const std::vector<store::DueRun>& due);

  void mark_listed(Tracked& t);
  void note_holder(Tracked& t);
  bool speaks_for(const Tracked& t) const;
  std::int64_t unlisted_heartbeats(Tracked& t);
  Millis jitter();

  const Epoch epoch_;
  const std::string node_id_;
  /// The node config's `runtime:`; cfg_ is it with the live settings over it
  /// (live_settings.h), applied at each read of the controls.
  const RuntimeConfig base_cfg_;
  RuntimeConfig cfg_;
  const MonoTime started_;
  MonoTime now_{};

  std::vector<Effect> effects_;
  InputJournal* journal_ = nullptr;
  /// The runs a recheck asked about (recheck): the invariant the sweep
  /// found them breaking, and whether the reaper has written for them.
  /// Settled at the first reap after the recheck; a write asked for is
  /// forgotten when its answer comes (note).
  struct Repair {
    std::string invariant;
    bool asked = false;
  };
  std::map<std::int64_t, Repair> repairs_;
  /// After a reap: logs the rechecked runs it wrote nothing for.
  void settle_repairs();
  /// Once any write came back Fenced (a newer leader exists), nothing is
  /// sent or written again.
  struct Fencing {
    bool fenced = false;
    bool external_after = false;  ///< a message or write was emitted after it (check_invariants)
    /// The writes refused (at most fenced_out_max): the node records them
    /// in the decision ledger once it has stopped leading.
    std::vector<store::FencedOut> refused;
  };
  Fencing fencing_;
  mutable std::uint64_t checks_skipped_ = 0;  ///< see check_invariants
  OpId last_op_ = 0;

  // Every read and write in flight, as a named state (run_book_resume.h):
  // what its result resumes is resumed() for the state's type, found by its
  // op and the result's type, with everything it needs in the state.
  void resumed(resume::ActiveRead& s, const Result<std::vector<store::ActiveRun>>& r);
  void resumed(resume::CancelRead& s, const Result<std::optional<store::RunRow>>& r);
  void resumed(resume::LateSuccessRead& s, const Result<std::optional<store::RunRow>>& r);
  void resumed(resume::DueSlice& s, const Result<std::vector<store::DueRun>>& r);
  void resumed(resume::UnmatchedRead& s, const Result<std::vector<store::DueRun>>& r);
  void resumed(resume::HeldByOperatorRead& s, const Result<std::vector<store::DueRun>>& r);
  void resumed(resume::HeldByKeyRead& s, const Result<std::vector<store::DueRun>>& r);
  void resumed(resume::ScheduledJobsRead& s, const Result<std::vector<store::ScheduledJob>>& r);
  void resumed(resume::ControlsRead& s, const Result<store::Controls>& r);
  void resumed(resume::CancelRequestWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::CancelWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::FailUnstartedWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::FailInvalidWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::CanceledFinishWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::LateSuccessWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::LateReportWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::OrphanWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::ConfirmingWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::AttemptEndWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::AdoptWrite& s, const Result<store::WriteResult>& r);
  void resumed(resume::HeartbeatBatch& s, const Result<store::HeartbeatBatchResult>& r);
  void resumed(resume::StartBatch& s, const Result<store::BatchWriteResult>& r);
  void resumed(resume::FinishBatch& s, const Result<store::BatchWriteResult>& r);
  void resumed(resume::AssignBatch& s, const Result<store::BatchWriteResult>& r);
  void resumed(resume::CronSkip& s, const Result<store::CreateResult>& r);
  void resumed(resume::CronSlotCreate& s, const Result<store::CreateResult>& r);
  void resumed(resume::DecisionRecord& s, const Result<store::CreateResult>& r);
  void resumed(resume::EventsProcessing& s, const Result<store::EventsProcessed>& r);
  void resumed(resume::SubmissionsProcessing& s, const Result<store::SubmissionsProcessed>& r);
  void resumed(resume::Pruning& s, const Result<store::Pruned>& r);
  // What waits for the read of the active runs (fresh: it succeeded).
  void viewed(resume::RefreshOnly& s, bool fresh);
  void viewed(resume::ReapAfterRead& s, bool fresh);
  void viewed(resume::StartAfterRead& s, bool fresh);
  void viewed(resume::RunningAfterRead& s, bool fresh);
  void viewed(resume::FinishAfterRead& s, bool fresh);
  void viewed(resume::WelcomeAfterRead& s, bool fresh);
  void viewed(resume::StartsAfterRead& s, bool fresh);
  void viewed(resume::FinishesAfterRead& s, bool fresh);
  // What waits for an adoption (adopted: the run is this epoch's).
  void adopted(resume::AdoptOnly& s, bool adopted);
  void adopted(resume::HeartbeatAfterAdopt& s, bool adopted);
  void adopted(resume::FinishAfterAdopt& s, bool adopted);
  void adopted(resume::EndAttemptAfterAdopt& s, bool adopted);
  void adopted(resume::WelcomeAfterAdopt& s, bool adopted);
  /// Sends a welcome once every adoption it waited for came back.
  void send_welcome(resume::PendingWelcome& p);
  /// The states of the reads and writes in flight, by op, one map per
  /// result type (a result of another type for an op is a broken shell).
  struct Awaiting {
    std::map<OpId, resume::ActiveRead> active;
    std::map<OpId, resume::RunReadWait> run;
    std::map<OpId, resume::DueWait> due;
    std::map<OpId, resume::ScheduledJobsRead> jobs;
    std::map<OpId, resume::WriteWait> write;
    std::map<OpId, resume::HeartbeatBatch> heartbeats;
    std::map<OpId, resume::CreateWait> create;
    std::map<OpId, resume::EventsProcessing> events;
    std::map<OpId, resume::SubmissionsProcessing> submissions;
    std::map<OpId, resume::Pruning> prune;
    std::map<OpId, resume::ControlsRead> controls;
    std::map<OpId, resume::LaneBatch> lanes;  ///< at most one per lane
    std::map<OpId, resume::AssignBatch> assigns;
  };
  Awaiting awaiting_;
  CronCreator cron_;  ///< cron creation: plans, caches, the backlog of creates

  /// How far tracked_ can be trusted, and the read of the active runs that
  /// settles it.
  struct ActiveView {
    bool fresh = false;  ///< tracked_ is a successful read of this pass plus this book's applied writes
    /// tracked_ may disagree with the database in a way no read since has
    /// settled (distrust()); a successful read clears it.
    bool doubt = true;
    MonoTime last_read{};
    bool read_outstanding = false;
    std::vector<resume::AfterRead> waiters;  ///< with_fresh_view's, until the read returns
  };
  ActiveView view_;
  /// The pass under way (tick sets its steps, pump runs them in order).
  struct Pass {
    unsigned steps = 0;               ///< Step flags still to run in this pass
    bool under_way = false;           ///< tick's steps are under way; when they end, so does the view's freshness
    bool dispatch_requested = false;  ///< dispatch in this pass, not at its period
    bool inbox_requested = false;     ///< take the inbox in this pass, not at the cron period
  };
  Pass pass_;

  std::map<std::string, Attached> workers_;
  std::map<std::int64_t, Tracked> tracked_;
  std::map<std::int64_t, MonoTime> due_since_;
  std::set<std::int64_t> heartbeat_due_;
  /// Running runs an operator cancelled: run -> reason. Written CANCELED
  /// when the worker reports the kill (or the attempt is lost).
  std::map<std::int64_t, std::string> cancel_requested_;
  std::set<MonoTime> wakeups_;  ///< next_wakeup's times
  /// The write lanes (batch_lane.h): starts, and finishes with the message
  /// each row came from.
  struct Lanes {
    BatchLane<store::StartRow> start;
    BatchLane<store::FinishRow, QueuedFinish> finish;
    /// Starts asked for before their run's time: queued on `start` when it
    /// comes (flush_starts), by run id.
    std::map<std::int64_t, std::pair<MonoTime, store::StartRow>> early_starts;
  };
  Lanes lanes_;
  std::set<std::pair<std::int64_t, std::string>> recorded_;  ///< (run, "decision:reason") already in the ledger
  TokenBucket reassignments_;  ///< paces ORPHANED runs handed out again (RuntimeConfig::reassign_rate)
  std::mt19937_64 rng_;
  /// The operators' controls as last read; nothing is dispatched before the
  /// first read, so a leader never dispatches while dispatch is disabled.
  std::optional<store::Controls> controls_;
  LiveSettings live_;  ///< the gates of the last controls read (all open before it)
  /// When each periodic step last ran, on this book's clock.
  struct LastRan {
    MonoTime dispatch{}, reap{}, heartbeat_flush{}, cron{}, controls{}, prune{}, workers_seen{}, silent_check{};
  };
  LastRan last_;
};

}  // namespace baton::leader_core
