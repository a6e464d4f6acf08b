#pragma once
// The leader's control loop: the shell around leader_core::RunBook for one
// epoch (a new epoch gets a new loop, on its own thread). It makes no
// lifecycle decision. It takes events from worker sessions through a bounded
// inbox, feeds them to the book, and carries out the book's effects: messages
// through WorkerLink::send (never blocking a socket), reads and fenced writes
// through the stores on their lanes, log lines and metrics. Every result goes
// back to the book, which decides the next step.
//
// A Fenced answer from any write fences the book: the loop executes no
// further message or write and stops.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>

#include "baton/archive/archive_writer.h"
#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/journal/book_recorder.h"
#include "baton/leader/journal_ring.h"
#include "baton/leader/statement_lane.h"
#include "baton/leader/worker_link.h"
#include "baton/leader_core/run_book.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/protocol/messages.h"
#include "baton/service/node_metrics.h"
#include "baton/store/leader_store.h"
#include "baton/store/run_store.h"
#include "baton/store_calls/store_call.h"

namespace baton::leader {

using leader_core::RuntimeConfig;

struct WorkerAttached {
  std::shared_ptr<WorkerLink> link;
  protocol::Hello hello;
};
struct WorkerDetached {
  std::uint64_t link_id = 0;
  std::string worker_id;
};
struct WorkerMessage {
  std::uint64_t link_id = 0;
  std::string worker_id;
  protocol::Message message;
};
struct CancelRun {
  RunId run{0};
  std::string reason;
};
/// Runs were just created (API trigger): dispatch now instead of at the next
/// dispatch period, so trigger-to-start latency is not the period. `due`:
/// those the insert returned as assignable now (RunBook::created).
struct DispatchNow {
  std::vector<store::DueRun> due;
};
/// The production checker's sweep found these runs without an owner in
/// the table (RunBook::recheck): re-read them and repair what the reaper
/// would.
struct RecheckRuns {
  std::vector<RunId> runs;
  std::string invariant;
};
/// A lane's statement returned: `deliver` feeds its result to the book (on
/// the loop's thread, like every input).
struct LaneDone {
  std::function<void()> deliver;
};
/// A submission or an event was committed (the inbox channel's NOTIFY):
/// take the inbox now instead of at the cron period.
struct InboxNoticed {};
using LoopEvent = std::variant<WorkerAttached, WorkerDetached, WorkerMessage, CancelRun, RecheckRuns, DispatchNow,
                               LaneDone, InboxNoticed>;

/// Worker messages the inbox holds at most. Beyond it, the connection whose
/// message did not fit is closed (the worker reconnects and sends again:
/// every message it sends is idempotent or kept in its outbox), so a flood
/// from the fleet costs connections, never the leader's memory.
inline constexpr std::size_t loop_inbox_max = 65536;
static_assert(loop_inbox_max > 0);

/// The run stores a loop writes through: `main` for the rare single-run
/// writes and reads, on the loop's own thread; the batched assignments, the
/// batched starts and the batched finishes each on a lane: a thread and a
/// connection of their own, so a start waits for the start statement before
/// it, not for a pass of the loop (RunBook's lanes: group commit, one batch
/// in flight per lane), and the loop goes on taking starts and finishes in
/// while an assignment is being written (at idle, when nothing waits to be
/// taken in, the loop writes an assignment itself: no thread hand-over).
struct RunLanes {
  store::RunStore& main;
  store::RunStore& assigns;
  store::RunStore& starts;
  store::RunStore& finishes;
};

class ControlLoop {
 public:
  /// `store` serves the loop's own reads and writes (its thread); `reads`,
  /// a connection of its own, the periodic reads on the read lane (due
  /// runs, controls, scheduled jobs, unmatched and waiting runs), so a slow
  /// read never holds the loop: a cron slot's held starts, a trigger's
  /// assignment and every worker message go on while it runs.
  ControlLoop(Epoch epoch, NodeIdentity me, RuntimeConfig cfg, RunLanes runs, store::LeaderStore& store,
              store::LeaderStore& reads, const Clock& clock, service::NodeMetrics& metrics);
  ~ControlLoop();

  /// Thread-safe; wakes the loop. A worker message that does not fit in the
  /// inbox is dropped and its connection closed by the loop.
  void post(LoopEvent e);
  /// Runs until `stop` is set or a write comes back Fenced. Closes every
  /// worker link it holds on the way out.
  void run(const std::atomic<bool>& stop);
  bool fenced() const { return fenced_.load(); }
  /// After run() returned: waits until the write lanes' statements in
  /// flight and queued have run (a planned handover, before the release).
  void wait_writes_landed() {
    assign_lane_.wait_idle();
    start_lane_.wait_idle();
    finish_lane_.wait_idle();
  }
  /// Streamed output also goes to the log archive through this writer
  /// (null: the database only). Before run().
  void set_archive_writer(archive::ArchiveWriter* writer) { archive_ = writer; }
  /// The book's inputs and effects go to this incident journal (null:
  /// none), from its first input. Before run().
  void set_journal(JournalRing* ring) { journal_ring_ = ring; }
  Epoch epoch() const { return epoch_; }

 private:
  void feed(const LoopEvent& e);
  /// Carries out the book's effects, feeding each result back, until the
  /// book has none left.
  void drain();
  /// Carries out `e`: a store effect through store_calls (one
  /// interpreter with the simulator), the rest here.
  void execute(leader_core::Effect& e);
  /// Runs a store call where its lane says, timed (a statement that held the
  /// loop or a lane long is logged), and feeds its result to the book: at
  /// once on the loop's thread, through the inbox from a lane.
  void run_call(store_calls::Call call);
  void deliver(const store_calls::Returned& r, Millis waited);
  /// Events are queued that the loop has not fed to the book yet.
  bool inputs_waiting();
  /// Logs a lane's statement that took long.
  void lane_took(const char* statement, std::size_t rows, std::chrono::nanoseconds took) const;
  /// Writes the output gathered since the last call: one statement, and the
  /// archive. Best effort: output is not run state.
  void flush_output();

  const Epoch epoch_;
  const NodeIdentity me_;
  const RuntimeConfig cfg_;
  RunLanes lanes_;
  store::LeaderStore& store_;
  store::LeaderStore& reads_;  ///< read lane only
  const store_calls::Stores stores_;
  const Clock& clock_;
  service::NodeMetrics& metrics_;
  const journal::BookHeader made_;  ///< what book_ is made with, as its journal's header says
  leader_core::RunBook book_;
  JournalRing* journal_ring_ = nullptr;
  std::unique_ptr<journal::LineSink> journal_sink_;  ///< this book's lines in the ring
  std::unique_ptr<journal::BookRecorder> journal_;
  std::map<leader_core::LinkId, std::shared_ptr<WorkerLink>> links_;  ///< loop thread only
  archive::ArchiveWriter* archive_ = nullptr;
  std::vector<store::OutputChunk> output_;  ///< loop thread only
  std::size_t batch_left_ = 0;              ///< loop thread only: events of the current batch not yet fed

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<LoopEvent> inbox_;
  std::size_t inbox_messages_ = 0;
  std::map<std::uint64_t, std::string> overflowed_;  ///< link -> worker whose message did not fit

  std::atomic<bool> fenced_{false};
  // Last: destroyed (joined) first, while everything a job touches lives.
  StatementLane assign_lane_{write_lane_queued_max}, start_lane_{write_lane_queued_max},
      finish_lane_{write_lane_queued_max}, read_lane_{read_lane_queued_max};
};

}  // namespace baton::leader
