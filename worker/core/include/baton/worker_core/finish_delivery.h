#pragma once
// The worker's side of a finish's way to the leader, as a state machine
// with no I/O, no threads and no clock reads: it takes what happens (an
// attempt's process ended, a group of finishes is on disk or could not be
// written, a leader acknowledged one, a welcome, a lost connection, a tick
// with the monotonic time) and returns effects (write these finishes to the
// outbox, send this finish, forget this one) that the Agent, and the
// simulator's workers, carry out. Every input ends with check_invariants().
//
// One explicit state per finish, from its attempt's end to its ack:
//
//   ended --> writing --(written)--> durable --(finish_ack)--> gone
//                     --(not written)--> undurable --(written)--> durable
//   undurable --(finish_ack)--> gone
//
// The rules it keeps:
//   - durable before sent: a finish is sent only once the outbox has it
//     (a crash from then on still delivers it), or once writing it failed
//     (then it is sent anyway and written again every outbox_retry_after);
//   - every finish not acknowledged is listed (hello and heartbeat
//     `finished`) whatever its state, so no leader takes its run for lost;
//   - a welcome sends every durable finish again (a leader that died may
//     not have recorded it); while attached, a durable finish unacknowledged
//     for finish_resend_after is sent again, and so is every undurable one
//     (the leader answers an uncertain finish write with silence);
//   - an ack forgets the finish, in the outbox too; an ack or a write's
//     result for a finish no longer held changes nothing;
//   - delivered() (what a drain waits for) only when nothing is held.
#include <chrono>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include "baton/base/clock.h"
#include "baton/protocol/messages.h"

namespace baton::worker_core {

/// A finish not acknowledged for this long is sent again (while attached);
/// the leader answers an uncertain finish write with silence.
inline constexpr auto finish_resend_after = std::chrono::seconds(3);
/// A finish that could not be made durable is written again after this.
inline constexpr auto outbox_retry_after = std::chrono::seconds(1);

/// Append these finishes to the outbox, durably, as one group; report the
/// result with FinishDelivery::written.
struct WriteFinishes {
  std::vector<protocol::Finish> group;
};
/// Send this finish to the leader (only emitted while attached).
struct SendFinish {
  protocol::Finish finish;
};
/// The leader recorded it: forget it in the outbox too.
struct ForgetFinish {
  protocol::AttemptRef ref;
};
using DeliveryEffect = std::variant<WriteFinishes, SendFinish, ForgetFinish>;

enum class FinishState { writing, durable, undurable };
const char* to_string(FinishState s);

class FinishDelivery {
 public:
  /// Finishes a previous incarnation left in the outbox (durable, not
  /// acknowledged): held and listed until acknowledged.
  void loaded(const std::vector<protocol::Finish>& durable, MonoTime now);
  /// An attempt's process ended with this finish: written first.
  void ended(protocol::Finish finish);
  /// The outbox wrote `group` (durable) or could not (not durable).
  void written(const std::vector<protocol::Finish>& group, bool durable, MonoTime now);
  /// A leader acknowledged the finish of `ref`.
  void acked(const protocol::AttemptRef& ref);
  /// A leader welcomed this worker: durable finishes are sent again.
  void attached();
  void detached();
  /// Resends and outbox retries that are due.
  void tick(MonoTime now);

  /// Every finish not acknowledged, in attempt order (hello and heartbeat
  /// `finished`).
  std::vector<protocol::AttemptRef> unacknowledged() const;
  /// The finishes the outbox holds now (what a crash leaves on disk).
  std::vector<protocol::Finish> durable() const;
  std::optional<FinishState> state(const protocol::AttemptRef& ref) const;
  std::size_t size() const { return finishes_.size(); }
  /// Nothing held: every finish acknowledged.
  bool delivered() const { return finishes_.empty(); }
  bool is_attached() const { return attached_; }

  std::vector<DeliveryEffect> take_effects();
  /// Aborts (BATON_ASSERT) if a rule above is broken.
  void check_invariants() const;

 private:
  struct Held {
    protocol::Finish finish;
    FinishState state = FinishState::writing;
    MonoTime durable_since{};  ///< when it was last found durable (resends count from it)
    bool sent = false;         ///< sent since it was last written or found undurable
  };
  void send(Held& h);

  std::map<protocol::AttemptRef, Held> finishes_;
  bool attached_ = false;
  MonoTime last_resend_{}, last_retry_{};
  std::vector<DeliveryEffect> effects_;
};

}  // namespace baton::worker_core
