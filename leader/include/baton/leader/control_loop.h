#pragma once
// The leader's control loop: the only place that decides about runs. It runs
// on its own thread for exactly one epoch (a new epoch gets a new loop), takes
// events from worker sessions through a queue, makes its decisions with the
// pure functions of leader_core, and performs them as fenced store writes.
// It never blocks a socket: messages out go through WorkerLink::send.
//
// A Fenced answer from any write means a newer leader exists: the loop stops
// at once and sends nothing more.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>

#include "baton/core/clock.h"
#include "baton/core/ids.h"
#include "baton/leader/metrics.h"
#include "baton/leader/worker_link.h"
#include "baton/leader_core/cron.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/protocol/messages.h"
#include "baton/store/leader_store.h"
#include "baton/store/run_store.h"

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
/// A run was just created (API trigger): dispatch now instead of at the next
/// dispatch period, so trigger-to-start latency is not the period.
struct DispatchNow {};
using LoopEvent = std::variant<WorkerAttached, WorkerDetached, WorkerMessage, CancelRun, DispatchNow>;

/// The run stores a loop writes through: `main` for dispatch and the rare
/// single-run writes; the batched finishes and starts of one pass go through
/// their own stores (own connections) at the same time, so a pass costs the
/// slower of the two statements rather than their sum.
struct RunLanes {
  store::RunStore& main;
  store::RunStore& starts;
  store::RunStore& finishes;
};

class ControlLoop {
 public:
  ControlLoop(Epoch epoch, NodeIdentity me, RuntimeConfig cfg, RunLanes runs, store::LeaderStore& store,
              const Clock& clock, Metrics& metrics);

  /// Thread-safe; wakes the loop.
  void post(LoopEvent e);
  /// Runs until `stop` is set or a write comes back Fenced. Closes every
  /// worker link it holds on the way out.
  void run(const std::atomic<bool>& stop);
  bool fenced() const { return fenced_.load(); }
  Epoch epoch() const { return epoch_; }

 private:
  struct Attached {
    std::shared_ptr<WorkerLink> link;
    int capacity = 0;
    std::map<std::string, std::string> labels;
    MonoTime last_seen{};
    bool draining = false;
    std::uint64_t heartbeats = 0;  ///< heartbeats processed on this connection
    std::string instance;          ///< the worker process on this connection (hello)
    std::string succeeds;          ///< the process before it on the same spool (hello)
  };
  struct Tracked {  // an ASSIGNED or RUNNING run as this leader last wrote or read it
    store::ActiveRun row;
    std::vector<protocol::Task> tasks;
    /// Positive evidence of a lost attempt is counted in heartbeats, not in
    /// time (a slow pass of this loop must never look like a silent
    /// worker): `listed_at` is the worker connection `link`'s heartbeat
    /// count when it last listed this attempt (or the attempt started, or
    /// this loop first saw it).
    std::uint64_t link = 0;
    std::uint64_t listed_at = 0;
    /// CONFIRMING: when this leader may give the attempt up, on its own
    /// monotonic clock (continuation timeout + margin after it began
    /// confirming, or the remaining deadline + margin when it first read it).
    std::optional<MonoTime> confirm_until;
    /// The worker process last seen holding the attempt (assigned to it, or
    /// listed by it); empty when unknown (inherited from another epoch and
    /// not listed since). Only that process, or its successor on the same
    /// spool, can say the attempt is gone.
    std::string holder;
  };

  void handle(const LoopEvent& e);
  void on_attached(const WorkerAttached& e);
  void on_detached(const std::string& worker_id, std::uint64_t link_id, const char* why);
  void on_message(const WorkerMessage& e);
  void on_start(const std::string& worker, const protocol::Start& m);
  void on_heartbeat(const std::string& worker, const protocol::Heartbeat& m);
  void on_finish(const std::string& worker, const protocol::Finish& m);
  /// A SUCCEEDED finish of an attempt that was ended as lost while the run
  /// still waits to retry that very attempt: recorded SUCCEEDED. True if
  /// handled (written and acknowledged, or left unacknowledged after an
  /// error); false if the run has moved on.
  bool late_success(const std::string& worker, const protocol::Finish& m);
  /// Marks `t` as listed by its worker now (on the worker's current connection).
  void mark_listed(Tracked& t);
  /// Heartbeats of the holding worker's connection since it last listed `t`.
  std::int64_t unlisted_heartbeats(Tracked& t);
  /// Marks `t` as held by the process on its worker's current connection.
  void note_holder(Tracked& t);
  /// True if the process on the worker's current connection speaks for `t`:
  /// it holds (or held) it, or succeeded the process that did. A second
  /// process using the same worker id does not.
  bool speaks_for(const Tracked& t) const;
  void deny_start(const std::string& worker, const protocol::AttemptRef& ref, const std::string& why);
  void regrant_start(Tracked& t, const std::string& worker, const protocol::AttemptRef& ref);
  /// Writes the starts / finishes queued during one pass of the loop as one
  /// statement each, then sends the grants / acks of the rows it applied.
  void flush_starts_and_finishes();
  void apply_starts(const std::vector<store::StartRow>& rows, const Result<store::BatchWriteResult>& res);
  void apply_finishes(const std::vector<store::FinishRow>& rows, const Result<store::BatchWriteResult>& res);
  /// True (and the loop stops) when a batched write came back Fenced.
  bool batch_fenced(const char* op, std::size_t rows, const Result<store::BatchWriteResult>& r);
  void on_cancel(const CancelRun& c);
  void dispatch();
  void reap();
  void flush_heartbeats();
  void materialize_cron();
  /// Re-reads every ASSIGNED/RUNNING run; false (tracked_ unchanged) on a
  /// database error.
  bool refresh_runs();
  bool adopt_if_needed(store::ActiveRun& r);
  /// Records the outcome of a write; false if the loop must stop (fenced) or
  /// the write failed.
  bool note(const char* op, std::int64_t run, const Result<store::WriteResult>& r);
  void send(const std::string& worker, const protocol::Message& m);
  std::chrono::milliseconds jitter();

  const Epoch epoch_;
  const NodeIdentity me_;
  const RuntimeConfig cfg_;
  store::RunStore& runs_;
  RunLanes lanes_;
  store::LeaderStore& store_;
  const Clock& clock_;
  Metrics& metrics_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<LoopEvent> inbox_;

  std::atomic<bool> fenced_{false};
  std::map<std::string, Attached> workers_;
  std::map<std::int64_t, Tracked> tracked_;
  std::map<std::int64_t, MonoTime> due_since_;
  std::set<std::int64_t> heartbeat_due_;
  /// Running runs an operator cancelled: run -> reason. Written CANCELED
  /// when the worker reports the kill (or the attempt is lost).
  std::map<std::int64_t, std::string> cancel_requested_;
  std::set<MonoTime> cron_wakeups_;  ///< when cron runs created ahead of their slot become due
  std::vector<store::StartRow> pending_starts_;
  std::set<std::int64_t> pending_start_ids_;
  std::vector<store::FinishRow> pending_finishes_;
  std::set<std::int64_t> pending_finish_ids_;
  std::map<std::string, std::optional<leader_core::CronSchedule>> cron_cache_;
  std::mt19937_64 rng_;
  MonoTime started_at_{}, last_dispatch_{}, last_reap_{}, last_heartbeat_flush_{}, last_cron_{};
  bool dispatch_requested_ = false;
  bool refreshed_in_pass_ = false;  ///< refresh_runs() read the database in this pass
};

}  // namespace baton::leader
