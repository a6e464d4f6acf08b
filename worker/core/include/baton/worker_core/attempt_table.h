#pragma once
// The worker's side of the run lifecycle, as a state machine with no I/O,
// no threads and no clock reads: it takes what happens (a welcome, a lost
// connection, a protocol message, a process that ended, a tick with the
// monotonic time) and returns effects (send a message, spawn an attempt's
// process tree, kill one, renew one's dead-man's switch) that the Agent
// carries out. Every input ends with check_invariants().
//
// One explicit state per attempt:
//
//   assign --> assigned --(attached, a free slot, no other attempt of the run alive)--> start_requested
//   assign carrying the start (protocol 4) --(no other attempt of the run alive)--> running
//   start_requested --start_granted--> running --(cancel | continuation deadline)--> stopping
//   assigned/start_requested --(start_denied | cancel)--> gone
//   running/stopping --(process ended)--> gone (its finish goes to the outbox)
//
// The rules it keeps:
//   - no process without a grant: Spawn only on start_granted or on an
//     assign that carries the start (the leader committed it first), once;
//   - never two live attempts (running or stopping) of one run here: a
//     start is not asked for, nor a grant acted on, while another attempt
//     of the same run is alive;
//   - at most `capacity` starts asked for or granted at once: an attempt
//     assigned beyond the free slots (the worker's prefetch) waits, and the
//     oldest waiting one is asked for the moment a slot frees;
//   - the continuation deadline: an attempt that no leader adopted for its
//     continuation timeout since the worker lost its leader is killed, as a
//     failure; while attached it is never killed for that, and its switch is
//     renewed (docs/protocol.md, continuation);
//   - only an adoption (a welcome listing the attempt) restarts that clock;
//   - a start not answered for start_resend_after is asked again (the
//     leader answers an uncertain write with silence, not a denial).
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "baton/base/clock.h"
#include "baton/protocol/messages.h"

namespace baton::worker_core {

enum class AttemptState { assigned, start_requested, running, stopping };
const char* to_string(AttemptState s);

/// Send a message to the leader (only emitted while attached).
struct Send {
  protocol::Message message;
};
/// Start the attempt's process tree (the leader granted the start).
struct Spawn {
  protocol::Assign assign;
};
/// Why an attempt is killed.
enum class KillCause {
  cancel,        ///< a leader asked (operator cancel, stale attempt, lost, timeout)
  continuation,  ///< detached from every leader past its continuation timeout
  stopping,      ///< this worker is shutting down
};
/// Kill the attempt's process tree; its finish reports CANCELED when a
/// leader asked, FAILED with `reason` otherwise (the attempt did not end
/// by anyone's wish: it must not look cancelled).
struct Kill {
  protocol::AttemptRef ref;
  std::string reason;
  KillCause cause = KillCause::cancel;
  bool as_failure() const { return cause != KillCause::cancel; }
};
/// Renew the attempt's dead-man's switch: it may go on.
struct Renew {
  protocol::AttemptRef ref;
};
using Effect = std::variant<Send, Spawn, Kill, Renew>;

inline constexpr auto start_resend_after = std::chrono::seconds(2);

class AttemptTable {
 public:
  /// `capacity`: how many attempts may be asked to start or run at once
  /// (the hello's capacity). Unlimited by default: the leader's placement
  /// bounds what arrives when the worker holds no prefetch.
  explicit AttemptTable(int capacity = std::numeric_limits<int>::max()) : capacity_(capacity) {}
  /// A leader welcomed this worker: the attempts it adopted restart their
  /// continuation clock, and starts not yet granted are asked again (one
  /// sent on a connection that died may never have arrived).
  void welcome(const protocol::Welcome& w, MonoTime now);
  /// The connection to the leader is gone: live attempts start counting
  /// their continuation deadline (if they were not already).
  void detached(MonoTime now);
  void assign(const protocol::Assign& a, MonoTime now);
  void start_granted(const protocol::AttemptRef& ref);
  void start_denied(const protocol::AttemptRef& ref, MonoTime now);
  void cancel(const protocol::Cancel& c, MonoTime now);
  /// The attempt's process tree has ended (its finish is on its way).
  void finished(const protocol::AttemptRef& ref, MonoTime now);
  /// Renewals, the continuation deadline, unanswered starts.
  void tick(MonoTime now);
  /// The worker is stopping: every live attempt is killed as a failure.
  void stop_all(const std::string& reason);
  /// The worker is draining (SIGTERM): running attempts go on, no start is
  /// asked for any more, and attempts assigned but not started are dropped,
  /// now and as they arrive (no grant, so no process: the leader, told
  /// `drain` and missing them from heartbeats, takes them back). A start
  /// already asked for is still honoured when granted.
  void drain();
  bool draining() const { return draining_; }
  /// No attempt is held in any state.
  bool idle() const { return attempts_.empty(); }

  /// Attempts whose process tree is alive (hello and heartbeat `running`).
  std::vector<protocol::AttemptRef> running() const;
  /// Attempts assigned and not started (heartbeat `assigned`).
  std::vector<protocol::AttemptRef> assigned() const;
  std::optional<AttemptState> state(const protocol::AttemptRef& ref) const;
  bool attached() const { return attached_; }

  std::vector<Effect> take_effects();
  /// Aborts (BATON_ASSERT) if a rule above is broken. Run after every input
  /// while the table holds at most 64 attempts, after every 64th beyond.
  void check_invariants() const;

 private:
  struct Attempt {
    protocol::Assign assign;
    AttemptState state = AttemptState::assigned;
    std::uint64_t arrival = 0;  ///< assignment order: the oldest waiting one starts first
    MonoTime start_requested_at{};
    /// Set when the worker lost its leader while this attempt was alive;
    /// cleared only by an adoption.
    std::optional<MonoTime> detached_since;
  };
  bool other_alive(const protocol::AttemptRef& key, std::int64_t run) const;
  void request_starts(MonoTime now);
  Millis continuation_limit(const Attempt& a) const;

  // By attempt: found by the reference a frame carries, without building a
  // key (a string key of run, attempt and token cost a worker an allocation
  // per lookup and string comparisons all the way down the tree).
  std::map<protocol::AttemptRef, Attempt> attempts_;
  void drop_unstarted();

  int capacity_;
  std::uint64_t arrivals_ = 0;
  static constexpr std::size_t invariant_check_every_input_up_to = 64;
  mutable std::uint64_t checks_skipped_ = 0;

  bool attached_ = false;
  bool draining_ = false;
  std::int64_t continuation_timeout_ms_ = 30000;  ///< the last welcome's, for attempts that carry none
  std::vector<Effect> effects_;
  // request_starts' working space, kept so that a call allocates nothing.
  std::vector<std::int64_t> live_runs_;
  std::vector<std::pair<std::uint64_t, Attempt*>> waiting_;
};

}  // namespace baton::worker_core
